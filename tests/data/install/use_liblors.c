/* use_liblors.c -- built by test_install against the installed liblors (pkg-config liblors):
 * the depot-list parser and the error words, which need no depot. */
#include <lors.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    lors_depot_t *d;
    size_t n;
    char err[256], buf[512];
    if (lors_depot_list_parse("a.example:6714, b.example:6715/r1", &d, &n, err, sizeof err) !=
            LORS_OK ||
        n != 2)
        return 1;
    lors_depot_format(&d[1], buf, sizeof buf);
    free(d);
    if (strcmp(buf, "b.example:6715/r1") != 0)
        return 2;
    if (lors_depot_parse("a.example:99999", &d[0]) == LORS_OK)
        return 3;
    if (!lors_strerror(LORS_E_DEPOT) || !*lors_strerror(LORS_E_DEPOT))
        return 4;
    puts("installed liblors works");
    return 0;
}
