/* use_libibp.c -- built by test_install against the installed libibp (pkg-config libibp). */
#include <ibp.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    ibp_cap_t c;
    if (ibp_cap_parse("ibp://h:6714/0#abc/5/READ", &c) != IBP_OK || c.port != 6714)
        return 1;
    if (strcmp(ibp_errname(IBP_E_CAP_NOT_FOUND), "CAP_NOT_FOUND") != 0)
        return 2;
    ibp_client_t *cl = ibp_client_new(NULL);
    if (!cl)
        return 3;
    ibp_client_free(cl);
    puts("installed libibp works");
    return 0;
}
