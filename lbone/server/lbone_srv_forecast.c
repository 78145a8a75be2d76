/* lbone_srv_forecast.c -- bandwidth forecasts in the manner of the Network Weather Service.
 *
 * No single predictor suits every path: a steady link is best forecast by a long mean, a
 * link whose capacity shifts by the last value or a fast exponential average, a noisy one by
 * a median.  So, as the NWS does, every predictor runs on every series, each new measurement
 * first judges what each predictor had forecast for it (absolute error), and the forecast
 * handed out is that of the predictor with the smallest error over the last
 * LBONE_FC_RECENT forecasts.  The cumulative error breaks ties and is reported.
 *
 * The predictors: the last value; the running mean of all measurements; the median of the
 * last LBONE_FC_MEDIAN_WIN; exponential smoothing with gains 0.1 (slow) and 0.5 (fast).
 */
#include "lbone_srv.h"

#include <math.h>
#include <string.h>

#define GAIN_SLOW 0.1
#define GAIN_FAST 0.5

static const char *const names[LBONE_FC_NPRED] = {"last", "mean", "median", "exp_0.1", "exp_0.5"};

void lbone_fc_init(lbone_fc_t *f)
{
    memset(f, 0, sizeof *f);
}

const char *lbone_fc_name(int p)
{
    return p >= 0 && p < LBONE_FC_NPRED ? names[p] : "none";
}

/* The k-th newest measurement, k = 0 the newest (k < min(n, KEEP)). */
static double newest(const lbone_fc_t *f, int k)
{
    return f->hist[(f->head - 1 - k + 2 * LBONE_FC_KEEP) % LBONE_FC_KEEP];
}

static double median(const lbone_fc_t *f)
{
    double w[LBONE_FC_MEDIAN_WIN];
    int m = f->n < LBONE_FC_MEDIAN_WIN ? (int)f->n : LBONE_FC_MEDIAN_WIN;
    for (int i = 0; i < m; i++) {
        double x = newest(f, i);
        int j = i;
        for (; j > 0 && w[j - 1] > x; j--)
            w[j] = w[j - 1];
        w[j] = x;
    }
    return m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2;
}

double lbone_fc_predict(const lbone_fc_t *f, int p)
{
    if (f->n == 0)
        return NAN;
    switch (p) {
    case LBONE_FC_LAST: return newest(f, 0);
    case LBONE_FC_MEAN: return f->sum / (double)f->n;
    case LBONE_FC_MEDIAN: return median(f);
    case LBONE_FC_EXP_SLOW: return f->exp_slow;
    case LBONE_FC_EXP_FAST: return f->exp_fast;
    default: return NAN;
    }
}

void lbone_fc_add(lbone_fc_t *f, double mbps)
{
    if (f->n > 0) {
        int slot = (int)(f->nerr % LBONE_FC_RECENT);
        for (int p = 0; p < LBONE_FC_NPRED; p++) {
            double e = fabs(lbone_fc_predict(f, p) - mbps);
            f->cum_err[p] += e;
            f->recent[p][slot] = e;
        }
        f->nerr++;
    }
    f->hist[f->head] = mbps;
    f->head = (f->head + 1) % LBONE_FC_KEEP;
    f->sum += mbps;
    if (f->n == 0) {
        f->exp_slow = f->exp_fast = mbps;
    } else {
        f->exp_slow += GAIN_SLOW * (mbps - f->exp_slow);
        f->exp_fast += GAIN_FAST * (mbps - f->exp_fast);
    }
    f->n++;
}

double lbone_fc_recent_error(const lbone_fc_t *f, int p)
{
    int m = f->nerr < LBONE_FC_RECENT ? (int)f->nerr : LBONE_FC_RECENT;
    double s = 0;
    if (m == 0 || p < 0 || p >= LBONE_FC_NPRED)
        return NAN;
    for (int i = 0; i < m; i++)
        s += f->recent[p][i];
    return s / m;
}

double lbone_fc_cum_error(const lbone_fc_t *f, int p)
{
    if (f->nerr == 0 || p < 0 || p >= LBONE_FC_NPRED)
        return NAN;
    return f->cum_err[p] / (double)f->nerr;
}

int lbone_fc_best(const lbone_fc_t *f)
{
    int best = LBONE_FC_LAST;
    if (f->nerr == 0)
        return best;
    for (int p = 1; p < LBONE_FC_NPRED; p++) {
        double rp = lbone_fc_recent_error(f, p), rb = lbone_fc_recent_error(f, best);
        if (rp < rb || (rp == rb && f->cum_err[p] < f->cum_err[best]))
            best = p;
    }
    return best;
}

double lbone_fc_forecast(const lbone_fc_t *f, int *pred)
{
    int p = lbone_fc_best(f);
    if (pred)
        *pred = p;
    return lbone_fc_predict(f, p);
}
