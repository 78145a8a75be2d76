/* test_gui.c -- lns_gui inside `make test`: runs tests/gui/test_gui.sh on the build's programs.
 * The script starts its own Xvfb, replays the recorded event streams of tests/data/events,
 * drives a real lors_upload and lors_download against three local depots through the GUI's
 * --run, drives every task panel through --script (checking what the tools did with
 * lors_ls --json and cmp), opens the GUI from scripts/demo.sh, and checks what Tk drew
 * through the GUI's --selftest dump (see docs/gui.md).
 *
 * Without Xvfb or tclsh (wish's Tcl) nothing can be shown: the program registers no test and
 * prints a "SKIP" line, which tests/run.sh reports as skipped, never as a pass.  If they are
 * installed but the display still cannot start, that is a failure. */
#include "lns_test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char script[PATH_MAX];

static void test_gui_script(void)
{
    lns_test_script(script, "test_gui: Xvfb is installed but no display could be started");
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("gui", NULL, NULL);
    if (lns_test_find_file("tests/gui/test_gui.sh", script, sizeof script) != 0) {
        printf("test_gui: tests/gui/test_gui.sh not found (run from the source tree)\n");
        CU_add_test(s, "script present", test_gui_script); /* fails: nothing to run */
        return;
    }
    if (system("command -v Xvfb >/dev/null 2>&1 && command -v tclsh >/dev/null 2>&1") != 0) {
        printf("SKIP test_gui: Xvfb or tclsh not installed (scripts/install-deps.sh installs "
               "xvfb and tk8.6)\n");
        return;
    }
    CU_add_test(s, "lns_gui under Xvfb: replay, live runs, panels, demo", test_gui_script);
}
