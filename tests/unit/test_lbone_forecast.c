/* test_lbone_forecast.c -- the L-Bone's NWS-style forecaster: which predictor it trusts on
 * which kind of series, and what it then forecasts.
 *
 * Each series is built so that one predictor is clearly right (a level shift: the last
 * value; isolated spikes: the median; noise around a level: a smoother), and the test checks
 * the forecaster picked it by its recent error, including a case where the cumulative error
 * would have picked another.  Plus the bookkeeping: the median window, the history table
 * keyed by (network, depot), and the client-network cut.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <string.h>

#include "lbone_srv.h"
#include "lns_test.h"

static void add_n(lbone_fc_t *f, double v, int n)
{
    for (int i = 0; i < n; i++)
        lbone_fc_add(f, v);
}

static void test_empty_and_first(void)
{
    lbone_fc_t f;
    lbone_fc_init(&f);
    int p = -1;
    CU_ASSERT(isnan(lbone_fc_forecast(&f, &p)));
    CU_ASSERT(p == LBONE_FC_LAST);
    for (int k = 0; k < LBONE_FC_NPRED; k++)
        CU_ASSERT(isnan(lbone_fc_predict(&f, k)));
    lbone_fc_add(&f, 12.5);
    CU_ASSERT(lbone_fc_forecast(&f, &p) == 12.5);
    for (int k = 0; k < LBONE_FC_NPRED; k++)
        CU_ASSERT(lbone_fc_predict(&f, k) == 12.5);
    CU_ASSERT(f.nerr == 0 && isnan(lbone_fc_recent_error(&f, 0)));
}

static void test_constant_ties(void)
{
    lbone_fc_t f;
    lbone_fc_init(&f);
    add_n(&f, 10, 5);
    /* Every predictor is exact: ties go to the lowest number, the last value. */
    for (int k = 0; k < LBONE_FC_NPRED; k++)
        CU_ASSERT(lbone_fc_recent_error(&f, k) == 0);
    CU_ASSERT(lbone_fc_best(&f) == LBONE_FC_LAST);
    CU_ASSERT(lbone_fc_forecast(&f, NULL) == 10);
    CU_ASSERT(strcmp(lbone_fc_name(LBONE_FC_MEDIAN), "median") == 0);
}

static void test_level_shift_follows_last(void)
{
    lbone_fc_t f;
    int p;
    lbone_fc_init(&f);
    add_n(&f, 10, 20);
    add_n(&f, 100, 6);
    /* The mean and the median still say 10ish; the last value was right 5 times of 6. */
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEDIAN) == 10);
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEAN) < 40);
    CU_ASSERT(lbone_fc_forecast(&f, &p) == 100);
    CU_ASSERT(p == LBONE_FC_LAST);
    CU_ASSERT(fabs(lbone_fc_recent_error(&f, LBONE_FC_LAST) - 9.0) < 1e-9); /* 90 once in 10 */
}

static void test_spikes_follow_median(void)
{
    lbone_fc_t f;
    int p;
    lbone_fc_init(&f);
    for (int i = 0; i < 40; i++)
        lbone_fc_add(&f, i % 4 == 3 ? 500 : 50);
    double fc = lbone_fc_forecast(&f, &p);
    CU_ASSERT(p == LBONE_FC_MEDIAN);
    CU_ASSERT(fc == 50);
    CU_ASSERT(lbone_fc_recent_error(&f, LBONE_FC_MEDIAN) < lbone_fc_recent_error(&f, LBONE_FC_LAST));
    CU_ASSERT(lbone_fc_recent_error(&f, LBONE_FC_MEDIAN) < lbone_fc_recent_error(&f, LBONE_FC_MEAN));
}

static void test_noise_follows_a_smoother(void)
{
    static const double noise[] = {40, 60, 45, 55, 38, 62, 50, 44, 56, 47, 53};
    lbone_fc_t f;
    int p;
    lbone_fc_init(&f);
    for (int r = 0; r < 4; r++)
        for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++)
            lbone_fc_add(&f, noise[i]);
    double fc = lbone_fc_forecast(&f, &p);
    CU_ASSERT(p != LBONE_FC_LAST && p != LBONE_FC_EXP_FAST);
    CU_ASSERT(fabs(fc - 50) < 4);
}

static void test_recent_error_decides(void)
{
    lbone_fc_t f;
    lbone_fc_init(&f);
    /* A long noisy stretch makes the last value's cumulative error the worst ... */
    for (int i = 0; i < 30; i++)
        lbone_fc_add(&f, i % 2 ? 60 : 40);
    /* ... then a steady climb, which only the last value follows. */
    for (int i = 0; i < 10; i++)
        lbone_fc_add(&f, 100 + 10 * i);
    int best_cum = 0;
    for (int k = 1; k < LBONE_FC_NPRED; k++)
        if (lbone_fc_cum_error(&f, k) < lbone_fc_cum_error(&f, best_cum))
            best_cum = k;
    CU_ASSERT(best_cum != LBONE_FC_LAST);
    CU_ASSERT(lbone_fc_best(&f) == LBONE_FC_LAST);
    CU_ASSERT(lbone_fc_forecast(&f, NULL) == 190);
}

static void test_median_window(void)
{
    lbone_fc_t f;
    lbone_fc_init(&f);
    add_n(&f, 1000, 30);
    add_n(&f, 1, 10);
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEDIAN) == 1000); /* 11 of the last 21 are 1000 */
    lbone_fc_add(&f, 1);
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEDIAN) == 1);
    /* Even counts average the two middle values. */
    lbone_fc_init(&f);
    lbone_fc_add(&f, 10);
    lbone_fc_add(&f, 20);
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEDIAN) == 15);
    /* The ring keeps going past its size. */
    lbone_fc_init(&f);
    for (int i = 1; i <= 100; i++)
        lbone_fc_add(&f, i);
    CU_ASSERT(f.n == 100 && lbone_fc_predict(&f, LBONE_FC_LAST) == 100);
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEDIAN) == 90); /* median of 80..100 */
    CU_ASSERT(lbone_fc_predict(&f, LBONE_FC_MEAN) == 50.5);
}

static void test_history_table(void)
{
    lbone_hist_t *h = lbone_hist_new(2);
    CU_ASSERT_FATAL(h != NULL);
    CU_ASSERT(isnan(lbone_hist_forecast(h, "10.0.0.0/24", "aaaaaaaaaaaaaaaa")));
    CU_ASSERT(lbone_hist_add(h, "10.0.0.0/24", "aaaaaaaaaaaaaaaa", 10) == 0);
    CU_ASSERT(lbone_hist_add(h, "10.0.1.0/24", "aaaaaaaaaaaaaaaa", 70) == 0);
    /* Full: a third pair is refused, known pairs still learn. */
    CU_ASSERT(lbone_hist_add(h, "10.0.2.0/24", "aaaaaaaaaaaaaaaa", 5) == -1);
    CU_ASSERT(lbone_hist_add(h, "10.0.0.0/24", "aaaaaaaaaaaaaaaa", 10) == 0);
    CU_ASSERT(lbone_hist_forecast(h, "10.0.0.0/24", "aaaaaaaaaaaaaaaa") == 10);
    CU_ASSERT(lbone_hist_forecast(h, "10.0.1.0/24", "aaaaaaaaaaaaaaaa") == 70);
    CU_ASSERT(isnan(lbone_hist_forecast(h, "10.0.0.0/24", "bbbbbbbbbbbbbbbb")));
    lns_buf_t b;
    lns_buf_init(&b);
    lbone_hist_put_depot(h, "aaaaaaaaaaaaaaaa", &b);
    CU_ASSERT(b.p && strstr(b.p, "\"network\":\"10.0.0.0/24\",\"measurements\":2") &&
              strstr(b.p, "\"network\":\"10.0.1.0/24\",\"measurements\":1"));
    lns_buf_free(&b);
    lbone_hist_forget_depot(h, "aaaaaaaaaaaaaaaa");
    CU_ASSERT(lbone_hist_pairs(h) == 0);
    CU_ASSERT(lbone_hist_add(h, "10.0.2.0/24", "aaaaaaaaaaaaaaaa", 5) == 0);
    lbone_hist_free(h);
}

static void test_client_net(void)
{
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
    char out[80];
    memset(&v4, 0, sizeof v4);
    v4.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.77", &v4.sin_addr);
    CU_ASSERT(lbone_client_net(&v4, out, sizeof out) == 0 && strcmp(out, "192.0.2.0/24") == 0);
    memset(&v6, 0, sizeof v6);
    v6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "2001:db8:1234:5678::9", &v6.sin6_addr);
    CU_ASSERT(lbone_client_net(&v6, out, sizeof out) == 0 && strcmp(out, "2001:db8:1234::/48") == 0);
    inet_pton(AF_INET6, "::ffff:198.51.100.200", &v6.sin6_addr);
    CU_ASSERT(lbone_client_net(&v6, out, sizeof out) == 0 && strcmp(out, "198.51.100.0/24") == 0);
    CU_ASSERT(lbone_client_net(NULL, out, sizeof out) == -1);
}

static const lns_test_case tests[] = {
    {"empty series and the first measurement", test_empty_and_first},
    {"constant series: exact, ties to the last value", test_constant_ties},
    {"level shift: the last value wins", test_level_shift_follows_last},
    {"isolated spikes: the median wins", test_spikes_follow_median},
    {"noise around a level: a smoother wins", test_noise_follows_a_smoother},
    {"recent error decides, not cumulative", test_recent_error_decides},
    {"median window and ring", test_median_window},
    {"history per (network, depot), bounded", test_history_table},
    {"client network /24 and /48", test_client_net},
};

LNS_TEST_MAIN("lbone forecast", tests)
