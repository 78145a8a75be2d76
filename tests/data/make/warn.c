/* warn.c -- a source with one warning, for test_install's check that a quiet make still shows
 * the compiler's warnings. */
int lns_build_warn(void);

int lns_build_warn(void)
{
    int unused;
    return 0;
}
