/* test_lors.c -- real depots as liblors sees them, for the lors system tests. */
#include "test_lors.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lns_test.h"

int tl_start_depot(test_depot_t *d, const char *name, const char *hard)
{
    char extra[PATH_MAX + 128];
    snprintf(extra, sizeof extra, "--resource %s/%s,hard=%s,soft=64M,max-duration=3600",
             lns_test_tmpdir(), name, hard);
    return td_start(d, extra);
}

void tl_lors_depot(const test_depot_t *d, lors_depot_t *l)
{
    memset(l, 0, sizeof *l);
    snprintf(l->host, sizeof l->host, "127.0.0.1");
    l->port = d->port;
}

int tl_fleet_start(test_depot_t *dep, lors_depot_t *ldep, int n, ibp_client_t **cli)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "res%d", i);
        if (tl_start_depot(&dep[i], name, "256M") < 0)
            return -1;
        tl_lors_depot(&dep[i], &ldep[i]);
    }
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.io_timeout_ms = 20000;
    *cli = ibp_client_new(&o);
    return *cli ? 0 : -1;
}

int tl_fleet_stop(test_depot_t *dep, int n, ibp_client_t *cli)
{
    int clean = 1;
    for (int i = 0; i < n; i++) {
        clean &= td_log_clean(&dep[i]);
        td_stop(&dep[i]);
    }
    ibp_client_free(cli);
    return clean ? 0 : -1;
}
