/* lns_fail.c -- failpoints (lns_fail.h).
 *
 * The armed set is parsed once (pthread_once) from the environment into a small fixed table;
 * hit counts are per point, under a mutex (an armed run is a test run: correctness, not speed,
 * matters there).  Unarmed, lns_fail reads one flag. */
#include "lns_fail.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_log.h"

#define FAIL_MAX 64

enum { ACT_ENOSPC, ACT_EIO, ACT_KILL, ACT_STOP };

typedef struct fail_point {
    char name[48];
    int action;
    unsigned long at;   /* the hit that triggers, 1-based */
    int every;          /* and every hit after it */
    int done;
    unsigned long hits;
} fail_point_t;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int armed;
static fail_point_t points[FAIL_MAX];
static int npoints;
static int random_permille, random_kill;
static uint64_t random_state;
static FILE *hit_log;

static int parse_action(const char *s, size_t n)
{
    if (n == 5 && !strncmp(s, "error", 5))
        return ACT_ENOSPC;
    if (n == 3 && !strncmp(s, "eio", 3))
        return ACT_EIO;
    if (n == 4 && !strncmp(s, "kill", 4))
        return ACT_KILL;
    if (n == 4 && !strncmp(s, "stop", 4))
        return ACT_STOP;
    return -1;
}

/* One "NAME=ACTION[@N[+]]" item; a malformed one is reported and ignored. */
static void parse_item(const char *item, size_t len)
{
    char buf[128];
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    memcpy(buf, item, len);
    buf[len] = 0;
    char *eq = strchr(buf, '=');
    if (eq && !strncmp(buf, "random", 6) && eq == buf + 6) {
        unsigned long long seed;
        int permille;
        char kill[8] = "";
        if (sscanf(eq + 1, "%llu/%d/%7s", &seed, &permille, kill) >= 2 && permille >= 0 &&
            permille <= 1000) {
            random_state = seed * 0x9E3779B97F4A7C15ULL + 1;
            random_permille = permille;
            random_kill = !strcmp(kill, "kill");
            return;
        }
    } else if (eq && eq > buf && (size_t)(eq - buf) < sizeof points[0].name && npoints < FAIL_MAX) {
        fail_point_t *p = &points[npoints];
        char *at = strchr(eq + 1, '@');
        size_t alen = at ? (size_t)(at - eq - 1) : strlen(eq + 1);
        memset(p, 0, sizeof *p);
        memcpy(p->name, buf, (size_t)(eq - buf));
        p->action = parse_action(eq + 1, alen);
        p->at = 1;
        if (at) {
            char *end;
            p->at = strtoul(at + 1, &end, 10);
            p->every = *end == '+';
            if (end == at + 1 || p->at == 0 || (*end && strcmp(end, "+")))
                p->action = -1;
        }
        if (p->action >= 0) {
            npoints++;
            return;
        }
    }
    lns_log(LNS_LOG_WARN, "LNS_FAILPOINTS: ignored '%s'", buf);
}

static void setup(void)
{
    const char *spec = getenv("LNS_FAILPOINTS"), *log = getenv("LNS_FAILPOINTS_LOG");
    if (log && *log && (hit_log = fopen(log, "ae")))
        setvbuf(hit_log, NULL, _IOLBF, 0);
    while (spec && *spec) {
        size_t n = strcspn(spec, ",");
        if (n)
            parse_item(spec, n);
        spec += n + (spec[n] == ',');
    }
    atomic_store(&armed, npoints > 0 || random_permille > 0 || hit_log != NULL);
}

/* xorshift64*: reproducible from the seed, whatever the platform's rand() is. */
static unsigned next_random(void)
{
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return (unsigned)((random_state * 0x2545F4914F6CDD1DULL) >> 33);
}

static int trigger(const char *name, int action)
{
    if (action == ACT_KILL) {
        lns_log(LNS_LOG_WARN, "failpoint %s: SIGKILL", name);
        kill(getpid(), SIGKILL);
        for (;;)
            pause();
    }
    if (action == ACT_STOP) { /* hung: the step goes on if someone sends SIGCONT */
        lns_log(LNS_LOG_WARN, "failpoint %s: SIGSTOP", name);
        /* to this thread: sent to the process, the group stop could reach this thread only
         * after it had gone on past the point (a test renaming a file there saw it read) */
        raise(SIGSTOP);
        return 0;
    }
    lns_log(LNS_LOG_WARN, "failpoint %s: %s", name, action == ACT_EIO ? "EIO" : "ENOSPC");
    errno = action == ACT_EIO ? EIO : ENOSPC;
    return -1;
}

int lns_fail_armed(void)
{
    pthread_once(&once, setup);
    return atomic_load_explicit(&armed, memory_order_relaxed);
}

int lns_fail(const char *name)
{
    pthread_once(&once, setup);
    if (!atomic_load_explicit(&armed, memory_order_relaxed))
        return 0;
    int action = -1;
    pthread_mutex_lock(&mu);
    if (hit_log)
        fprintf(hit_log, "%s\n", name);
    for (int i = 0; i < npoints; i++) {
        fail_point_t *p = &points[i];
        if (strcmp(p->name, name))
            continue;
        p->hits++;
        if (!p->done && (p->hits == p->at || (p->every && p->hits > p->at))) {
            p->done = !p->every;
            action = p->action;
        }
    }
    if (action < 0 && random_permille > 0 && next_random() % 1000 < (unsigned)random_permille)
        action = random_kill && next_random() % 20 == 0 ? ACT_KILL
                 : next_random() % 2                    ? ACT_EIO
                                                        : ACT_ENOSPC;
    pthread_mutex_unlock(&mu);
    return action < 0 ? 0 : trigger(name, action);
}
