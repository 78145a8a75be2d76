/* test_wan_sim.c -- the download scheduler on the random WAN family, in simulated time:
 * tests/wan/sim_random.sh runs bench_sched_wan (lors_sched against a model of the testbed) on
 * seeds 1-20 of gen_scenario.sh and fails when the median or the worst seed falls below its
 * floor of the placement limit (docs/wan-testbed.md, "The scheduler simulator").  It needs no
 * root and takes seconds; the testbed's own runs (make bench-wan-random) are what issue 16's
 * targets are judged by. */
#include "lns_test.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static char script[PATH_MAX];

static void test_random_family(void)
{
    lns_test_script(script, "SKIP test_wan_sim: the simulator is not built");
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("wan_sim", NULL, NULL);
    if (lns_test_find_file("tests/wan/sim_random.sh", script, sizeof script) != 0)
        printf("test_wan_sim: tests/wan/sim_random.sh not found (run from the source tree)\n");
    CU_add_test(s, "random family, 20 seeds, to a file: median >= 0.90, worst >= 0.80 of the "
                   "placement limit", test_random_family);
}
