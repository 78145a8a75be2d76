/* use_liblbone.c -- built by test_install against the installed liblbone (pkg-config
 * liblbone): a server name to its URL, and the error words; no L-Bone needed. */
#include <lbone.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    char url[256], err[256];
    if (lbone_server_url("lbone.example", url, sizeof url, err, sizeof err) != LBONE_OK)
        return 1;
    if (strcmp(url, "http://lbone.example:6767") != 0)
        return 2;
    if (lbone_server_url("", url, sizeof url, err, sizeof err) == LBONE_OK)
        return 3;
    if (!*lbone_strerror(LBONE_E_CONNECT))
        return 4;
    puts("installed liblbone works");
    return 0;
}
