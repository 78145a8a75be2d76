/* test_wan_short.c -- the WAN testbed's short run inside `make test`: tests/wan/short.sh on the
 * build's programs (two namespace hosts behind 40 Mbit/s caps, a depot SIGKILLed mid-stream,
 * exact bytes; zero underruns through lors_play --player paced once the players are built).
 *
 * The testbed needs root and network namespaces.  Where they are not permitted the program
 * registers no test and prints a "SKIP" line, which tests/run.sh reports as skipped (0 passed,
 * 0 failed), never as a pass.  The script's own output is shown either way. */
#include "lns_test.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char script_dir[PATH_MAX];

/* The directory of short.sh and testbed.sh. */
static int find_scripts(void)
{
    char sh[PATH_MAX];
    if (lns_test_find_file("tests/wan/short.sh", sh, sizeof sh) != 0)
        return -1;
    snprintf(script_dir, sizeof script_dir, "%.*s", (int)(strrchr(sh, '/') - sh), sh);
    return 0;
}

static void test_short_run(void)
{
    char sh[PATH_MAX + 16];
    snprintf(sh, sizeof sh, "%s/short.sh", script_dir);
    lns_test_script(sh, "SKIP test_wan_short: the testbed became unavailable mid-run");
}

void lns_test_register(void)
{
    if (find_scripts() != 0) {
        printf("test_wan_short: tests/wan/short.sh not found (run from the source tree)\n");
        CU_pSuite s = CU_add_suite("wan_short", NULL, NULL);
        CU_add_test(s, "scripts present", test_short_run); /* fails: nothing to run */
        return;
    }
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s/testbed.sh' check >/dev/null 2>&1", script_dir);
    int st = geteuid() == 0 ? system(cmd) : -1;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("SKIP test_wan_short: network namespaces, veth or tc not permitted here "
               "(needs root)\n");
        return;
    }
    CU_pSuite s = CU_add_suite("wan_short", NULL, NULL);
    CU_add_test(s, "2 hosts, 40 Mbit/s caps, depot killed mid-stream", test_short_run);
}
