/* test_demo.c -- `make demo` without a display: scripts/demo.sh on the build's programs must
 * run its ibp_tool and LoRS parts to the end (exit 0: every cmp in it passed) and, having no
 * display for the map GUI, print the command that opens it and how to keep the depots up.
 * The demo with a display (the GUI opened and closed by its --selftest) is part of
 * tests/gui/test_gui.sh, which has an X server. */
#include "lns_test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char script[PATH_MAX];

static void test_demo_headless(void)
{
    char cmd[4 * PATH_MAX];
    const char *out = lns_test_path("demo.out");
    snprintf(cmd, sizeof cmd, "env -u DISPLAY LNS_DEMO_KEEP=0 timeout 120 '%s' '%s' >'%s' 2>&1",
             script, lns_test_bindir(), out);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "tail -12 '%s'", out);
    lns_test_run_echo(cmd);
    CU_ASSERT_EQUAL(rc, 0);
    /* the LoRS part compared the downloaded bytes */
    snprintf(cmd, sizeof cmd, "grep -q '^identical: ' '%s' && grep -q 'lors_upload an' '%s'", out,
             out);
    CU_ASSERT_EQUAL(system(cmd), 0);
    /* the GUI hint: the exact command, and how to keep the depots it needs */
    snprintf(cmd, sizeof cmd, "grep -q '^  /.*/gui/lns_gui --depots /.* --events /' '%s' && "
             "grep -q 'LNS_DEMO_KEEP=1 make demo' '%s'", out, out);
    CU_ASSERT_EQUAL(system(cmd), 0);
    /* and no GUI was started */
    snprintf(cmd, sizeof cmd, "grep -q '== the map GUI: the upload' '%s'", out);
    CU_ASSERT_NOT_EQUAL(system(cmd), 0);
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("demo", NULL, NULL);
    if (lns_test_find_file("scripts/demo.sh", script, sizeof script) != 0)
        printf("test_demo: scripts/demo.sh not found (run from the source tree)\n");
    CU_add_test(s, "make demo without a display: runs through, prints the GUI hint",
                test_demo_headless);
}
