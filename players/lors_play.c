/* lors_play.c -- lors_play: stream a network file into a media player reading stdin.
 *
 * A thin front end over lors_download_fd() (lors.h) whose output is a pipe to a player it
 * spawns: mpv, mplayer, vlc, lns_paced (the measuring stand-in) or any shell command.  What
 * makes it a player's front end rather than lors_download: settings chosen for playback (small
 * blocks so the first bytes come early, more streams than depots, a reorder buffer of a few
 * seconds of stream, a short stall trigger), a pre-buffer given in seconds of stream and
 * turned into bytes with the stream's bitrate (--bitrate, else the exNode's "bitrate"
 * metadata that lors_upload --bitrate writes, else ffprobe: size over duration), and a report of
 * the stalls.  Two measures of them: lns_paced's underruns when it is the player (the
 * objective one), and for any player how long the pipe stood empty after the first byte
 * while the download was still running: a monitor thread samples the pipe's fill level
 * (FIONREAD) every 2 ms.  An empty pipe means the player could have taken data and none was
 * there; its own cache may still have covered the gap, so this is an upper bound on what the
 * viewer saw.  With --start POS the player seeks instead: it reads the file from a private
 * lors_serve on 127.0.0.1 (play_gateway.c) with its own start option, and the pipe, the
 * monitor and the pre-buffer are not used.  See docs/players.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lns_time.h"
#include "lns_units.h"
#include "lors.h"
#include "tool.h"
#include "tool_opt.h"
#include "lns_err.h"
#include "play_gateway.h"

static const char *TOOL = "lors_play";

#define MIB ((int64_t)1 << 20)

typedef struct settings {
    tool_common_t c;
    const char *player, *output, *keyfile;
    int headless, depot_cap, redundancy;
    double prebuffer, buffer, bitrate; /* seconds, seconds, bit/s; 0 = not given */
    double start;                      /* --start in seconds, when has_start */
    int has_start;                     /* --start given: the gateway, not a pipe */
    int64_t blocksize;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

/* --prebuffer and --buffer: seconds of stream, 0 to 3600 (a buffer above 0). */
static int set_secs(void *sp, const tool_opt_t *o, const char *name, const char *val,
                    tool_from from, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (end == val || errno || (*end && strcmp(end, "s") != 0) || !(v >= 0) || v > 3600)
        return lns_err_set(err, errlen, "%s %s: expected seconds from 0 to 3600", name, val);
    if (o->min > 0 && v <= 0)
        return lns_err_set(err, errlen, "%s %s: must be above 0", name, val);
    *(double *)((char *)sp + o->off) = v;
    return 0;
}

static int set_bitrate(void *sp, const tool_opt_t *o, const char *name, const char *val,
                       tool_from from, char *err, size_t errlen)
{
    if (lns_parse_rate(val, &((settings_t *)sp)->bitrate) < 0)
        return lns_err_set(err, errlen, "%s %s: expected bits per second such as 15M", name,
                        val);
    return 0;
}

/* --start: seconds or [h:]m:s. */
static int set_start(void *sp, const tool_opt_t *o, const char *name, const char *val,
                     tool_from from, char *err, size_t errlen)
{
    settings_t *f = sp;
    if (play_parse_pos(val, &f->start) < 0)
        return lns_err_set(err, errlen, "%s %s: expected seconds (90, 90.5) or [h:]m:s "
                           "(1:30, 1:02:03)", name, val);
    f->has_start = 1;
    return 0;
}

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    {TOOL_OPT_STR, "player", 'P', NULL, S(player), 0, 0, NULL, "P",
     "mpv, mplayer, vlc, paced (lns_paced: measures underruns) or a\nshell command reading "
     "stdin; default the first of mpv, mplayer,\nvlc that is installed", NULL},
    {TOOL_OPT_FN, "start", 0, NULL, 0, 0, 0, NULL, "POS",
     "start at POS (90, 1:30, 1:02:03): the player reads the file\nfrom a lors_serve of its "
     "own with its start option (mpv,\nmplayer, vlc, or a command running one of them)",
     set_start},
    {TOOL_OPT_SWITCH, "headless", 0, NULL, S(headless), 1, 0, NULL, NULL,
     "no video or audio output, real-time pace (servers, tests)", NULL},
    {TOOL_OPT_FN, "prebuffer", 'q', NULL, S(prebuffer), 0, 0, NULL, "T",
     "seconds of stream downloaded before the player gets any (0.5 ok)", set_secs},
    {TOOL_OPT_FN, "bitrate", 'b', NULL, 0, 0, 0, NULL, "RATE",
     "the stream's bits per second (15M; K, M, G are powers of 1000);\nelse the exNode's "
     "bitrate metadata, else ffprobe (size over duration)", set_bitrate},
    {TOOL_OPT_FN, "buffer", 'B', NULL, S(buffer), 1, 0, NULL, "T",
     "reorder buffer in seconds of stream (default 4)", set_secs},
    TOOL_OPT_THREADS(1, NULL, "parallel streams (default: depots x -a)"),
    {TOOL_OPT_INT, "depot-streams", 'a', NULL, S(depot_cap), 1, TOOL_MAX_THREADS, NULL, "N",
     "most streams on one depot at once (default: 8 / depots, 1 to 4)", NULL},
    {TOOL_OPT_SIZE, "bs|block-size", 0, NULL, S(blocksize), 1, 1 << 30, "512K", "N",
     "block size", NULL},
    {TOOL_OPT_INT, "redundancy", 'r', NULL, S(redundancy), 1, 8, "2", "R",
     "most fetches of one block at once, 1..8", NULL},
    TOOL_OPT_TIMEOUT("10s", "longest wait for any progress of one depot read"),
    {TOOL_OPT_STR, "output", 'o', NULL, S(output), 0, 0, NULL, "FILE",
     "with --player paced: also write the bytes to FILE", NULL},
    {TOOL_OPT_STR, "key-file", 0, NULL, S(keyfile), 0, 0, NULL, "FILE",
     "the aes key of an encrypted file (else $LNS_KEY or $LNS_KEY_FILE)", NULL},
    {TOOL_OPT_STR, "events", 0, NULL, TOOL_C(events), 0, 0, NULL, "FILE|fd:N",
     "write the event stream (docs/events.md)", NULL},
    TOOL_OPT_VERBOSE("also the player's own summary (paced) and the per-depot table"),
    TOOL_OPT_QUIET_BUT(0, "print nothing but errors and warnings of lost copies"),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static const tool_cmd_t command = {
    "lors_play",
    "Usage: lors_play [options] EXNODE\n"
    "Stream a network file into a media player that reads standard input, with settings\n"
    "chosen for playback, and report how often and how long playback had to wait for data.\n\n",
    "\nExit: 0 ok (stalls or not: they are reported), 2 usage or no player, 3 exNode,\n"
    "4 the player failed or quit early (--start: or the gateway did), 6 some bytes have no\n"
    "live copy, 7 integrity or key, 9 internal; 130 SIGINT, 143 SIGTERM (the player and the\n"
    "download, or the gateway, stopped; one line says what the player got).  See lors_play(1).\n",
    opts, sizeof(settings_t), NULL,
};

/* ---- the player ------------------------------------------------------------------------- */

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static int in_path(const char *name)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, name);
        if (n && executable(buf))
            return 1;
        path += n + (path[n] == ':');
    }
    return 0;
}

/* Program name next to this one (the build's bin/ or the install's), else from PATH. */
static void sibling_path(const char *name, char *buf, size_t size)
{
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, size, "%s/%s", self, name);
            if (executable(buf))
                return;
        }
    }
    snprintf(buf, size, "%s", name);
}

typedef struct player {
    char name[16];            /* mpv, mplayer, vlc, paced, cmd */
    const char *argv[24];
    char rate[32], json[PATH_MAX], paced[PATH_MAX], jsonopt[PATH_MAX + 16];
    char startopt[64], url[PATH_MAX + 160]; /* --start: url is filled once the gateway runs */
    char conf[PATH_MAX], confopt[PATH_MAX + 16]; /* --start: the option file with the token */
    const struct known_player *confk; /* --start: whose option file; NULL: token in the URL */
    char shcmd[4096];         /* --start with a command: CMD "$@" */
    int pid;
} player_t;

/* The players lors_play knows: their flags, those for --headless (no video or audio, still
 * real time: mpv's ao=null plays in real time; --untimed would not, so it is never used), and
 * their start option (seconds; "=" joins it to its value, else it is a word of its own).
 * Each reads the stream from "-", or with --start the gateway's URL; then the gateway's token
 * goes in an option file of theirs (include, joined or not as start is), a line that sends
 * it as a header, so that it is in no argv; a player without one (vlc) gets it in the URL.
 * mplayer gets libavformat's demuxer: its own MPEG-TS one finds no stream on a pipe and,
 * from a URL, seeks to the wrong place (-ss 1 and -ss 2 of a 3 s clip both played 2.5 s). */
typedef struct known_player {
    const char *name;
    const char *args[4];
    const char *headless[6];
    const char *start;
    int start_joined;
    const char *include;
} known_player_t;

static const known_player_t known_players[] = {
    {"mpv", {"--no-terminal", "--cache=yes"}, {"--vo=null", "--ao=null"}, "--start=", 1,
     "--include="},
    {"mplayer", {"-really-quiet", "-demuxer", "lavf"},
     {"-vo", "null", "-ao", "null", "-noconsolecontrols"}, "-ss", 0, "-include"},
    {"vlc", {"--play-and-exit"}, {"-I", "dummy", "--no-video", "--aout=dummy"}, "--start-time=",
     1, NULL},
};

static const known_player_t *known_player(const char *name)
{
    for (size_t i = 0; i < sizeof known_players / sizeof known_players[0]; i++)
        if (strcmp(name, known_players[i].name) == 0)
            return &known_players[i];
    return NULL;
}

/* The known player a shell command runs: its first word's file name (mpv, /opt/bin/mpv). */
static const known_player_t *command_player(const char *cmd)
{
    char w[256];
    cmd += strspn(cmd, " \t");
    size_t n = strcspn(cmd, " \t");
    snprintf(w, sizeof w, "%.*s", (int)(n < sizeof w ? n : sizeof w - 1), cmd);
    const char *b = strrchr(w, '/');
    return known_player(b ? b + 1 : w);
}

/* With --start: the start option of player k, its option file with the token unless it is
 * run by a command (p->conf, filled later), then the URL (p->url, filled later: the token in
 * it when there is no option file). */
static void start_args(const settings_t *f, const known_player_t *k, int by_command, player_t *p,
                       int *n)
{
    char secs[32];
    play_format_secs(f->start, secs, sizeof secs);
    if (k->start_joined) {
        snprintf(p->startopt, sizeof p->startopt, "%s%s", k->start, secs);
        p->argv[(*n)++] = p->startopt;
    } else {
        snprintf(p->startopt, sizeof p->startopt, "%s", secs);
        p->argv[(*n)++] = k->start;
        p->argv[(*n)++] = p->startopt;
    }
    if (!by_command && k->include) {
        p->confk = k;
        if (k->start_joined) {
            p->argv[(*n)++] = p->confopt;
        } else {
            p->argv[(*n)++] = k->include;
            p->argv[(*n)++] = p->conf;
        }
    }
    p->argv[(*n)++] = p->url;
}

/* Build the player's command line.  TOOL_EXIT_OK or a usage error. */
static int player_argv(const settings_t *f, double bitrate, player_t *p)
{
    const char *want = f->player;
    int n = 0;
    if (!want) {
        for (size_t i = 0; i < sizeof known_players / sizeof known_players[0] && !want; i++)
            if (in_path(known_players[i].name))
                want = known_players[i].name;
        if (!want)
            return tool_usage(TOOL, "no player: none of mpv, mplayer, vlc is installed; "
                                  "name one with --player (paced, or a command)");
    }
    snprintf(p->name, sizeof p->name, "%s", want);
    const known_player_t *k = known_player(want);
    int start = f->has_start;
    if (start && !k && (strcmp(want, "paced") == 0 || !command_player(want)))
        return tool_usage(TOOL, "--start: the player '%s' has no known start option (use mpv, "
                              "mplayer, vlc, or a command that runs one of them)", want);
    if (k) {
        p->argv[n++] = k->name;
        for (int i = 0; k->args[i]; i++)
            p->argv[n++] = k->args[i];
        for (int i = 0; f->headless && k->headless[i]; i++)
            p->argv[n++] = k->headless[i];
        if (start)
            start_args(f, k, 0, p, &n);
        else
            p->argv[n++] = "-";
    } else if (start) {
        /* a command running a known player: its start option and the URL as its arguments */
        if ((size_t)snprintf(p->shcmd, sizeof p->shcmd, "%s \"$@\"", want) >= sizeof p->shcmd)
            return tool_usage(TOOL, "--player: the command is too long");
        snprintf(p->name, sizeof p->name, "command");
        p->argv[n++] = "/bin/sh";
        p->argv[n++] = "-c";
        p->argv[n++] = p->shcmd;
        p->argv[n++] = TOOL;
        start_args(f, command_player(want), 1, p, &n);
    } else if (strcmp(want, "paced") == 0) {
        if (!(bitrate > 0))
            return tool_usage(TOOL, "--player paced needs the stream's bitrate: give "
                                  "--bitrate (the exNode has none and ffprobe could not tell)");
        sibling_path("lns_paced", p->paced, sizeof p->paced);
        snprintf(p->rate, sizeof p->rate, "%.0f", bitrate);
        snprintf(p->jsonopt, sizeof p->jsonopt, "--json=%s", p->json);
        p->argv[n++] = p->paced;
        p->argv[n++] = "--rate";
        p->argv[n++] = p->rate;
        p->argv[n++] = p->jsonopt;
        if (f->output) {
            p->argv[n++] = "--output";
            p->argv[n++] = f->output;
        }
        if (!f->c.verbose)
            p->argv[n++] = "--quiet";
    } else {
        snprintf(p->name, sizeof p->name, "command");
        p->argv[n++] = "/bin/sh";
        p->argv[n++] = "-c";
        p->argv[n++] = want;
    }
    p->argv[n] = NULL;
    if (f->output && strcmp(p->name, "paced") != 0)
        return tool_usage(TOOL, "--output works with --player paced only");
    return TOOL_EXIT_OK;
}

/* Start the player with rfd as its stdin (-1: lors_play's own), wfd closed in it.  0 or -1
 * (message printed). */
static int player_start(player_t *p, int rfd, int wfd)
{
    pid_t pid = fork();
    if (pid < 0) {
        tool_error(TOOL, "starting the player: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* --start blocks signals for sigtimedwait */
        signal(SIGPIPE, SIG_DFL);
        if (wfd >= 0)
            close(wfd);
        if (rfd >= 0 && dup2(rfd, STDIN_FILENO) < 0)
            _exit(126);
        if (rfd >= 0 && rfd != STDIN_FILENO)
            close(rfd);
        execvp(p->argv[0], (char *const *)p->argv);
        fprintf(stderr, "%s: running %s: %s\n", TOOL, p->argv[0], strerror(errno));
        _exit(127);
    }
    p->pid = (int)pid;
    return 0;
}

/* ---- SIGINT and SIGTERM on the pipe ------------------------------------------------------
 * Both are blocked in every thread and taken by a thread of lors_play's own (sigtimedwait), so
 * that the end runs in the main flow, not in a handler.  That thread sets the download's stop
 * flag and stops the player (SIGTERM, SIGKILL 3 s later or at a second signal), which also
 * frees a write blocked on a pipe the player no longer reads; main then reaps the player,
 * says in one line what went to it, removes its temporary files and exits 128 + the signal.
 * The player is signalled only while it is known not reaped (main waits with WNOWAIT, clears
 * stopper.player, then reaps), so a recycled pid is never hit.  A signal ignored at start (a
 * script's background job) stays ignored. */

typedef struct stopper {
    pthread_t th;
    sigset_t set;               /* SIGINT, SIGTERM: those not ignored */
    pthread_mutex_t mu;
    pid_t player;               /* mu: the running player; 0 none yet, or being reaped */
    int done;                   /* mu: main is through; the thread leaves */
    volatile sig_atomic_t sig;  /* the signal that came (0: none); the download's stop flag */
} stopper_t;

static void *stopper_main(void *arg)
{
    stopper_t *s = arg;
    int64_t kill_at = 0;
    int signals = 0, termed = 0, killed = 0;
    for (;;) {
        struct timespec ts = {0, 100000000};
        int sig = sigtimedwait(&s->set, NULL, &ts);
        int64_t now = lns_mono_ns();
        pthread_mutex_lock(&s->mu);
        if (s->done) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        if (sig == SIGINT || sig == SIGTERM) {
            if (!signals++)
                s->sig = sig;
            kill_at = signals > 1 ? now : now + 3000000000LL;
        }
        if (s->sig && s->player > 0 && !termed) {
            kill(s->player, SIGTERM);
            termed = 1;
        }
        if (s->sig && s->player > 0 && !killed && now >= kill_at) {
            kill(s->player, SIGKILL);
            killed = 1;
        }
        pthread_mutex_unlock(&s->mu);
    }
}

/* Block the signals and start the thread that takes them.  0, or -1 (errno). */
static int stopper_start(stopper_t *s)
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    struct sigaction old;
    memset(s, 0, sizeof *s);
    sigemptyset(&s->set);
    for (int i = 0; i < 2; i++)
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaddset(&s->set, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &s->set, NULL);
    pthread_mutex_init(&s->mu, NULL);
    int e = pthread_create(&s->th, NULL, stopper_main, s);
    if (e) {
        pthread_mutex_destroy(&s->mu);
        errno = e;
        return -1;
    }
    return 0;
}

static void stopper_player(stopper_t *s, pid_t pid)
{
    pthread_mutex_lock(&s->mu);
    s->player = pid;
    pthread_mutex_unlock(&s->mu);
}

static void stopper_end(stopper_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->done = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    pthread_mutex_destroy(&s->mu);
}

/* Wait for the player to end, take it from the stopper, reap it: its exit status,
 * 128 + signal, or -1. */
static int player_wait(player_t *p, stopper_t *s)
{
    siginfo_t si;
    int st;
    while (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    stopper_player(s, 0);
    while (waitpid(p->pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* ---- the pipe monitor ------------------------------------------------------------------- */

typedef struct monitor {
    int fd;                   /* the pipe's write end */
    pthread_t th;
    pthread_mutex_t mu;
    int stop;
    int64_t first_byte_ns;    /* 0 until the pipe first held data */
    int64_t empty_ns, longest_ns, stretch_from;
    int stretches;            /* empty stretches of 100 ms or more */
} monitor_t;

static void stretch_end(monitor_t *m, int64_t now)
{
    int64_t d = now - m->stretch_from;
    m->empty_ns += d;
    if (d > m->longest_ns)
        m->longest_ns = d;
    if (d >= 100000000)
        m->stretches++;
    m->stretch_from = 0;
}

static void *monitor_main(void *arg)
{
    monitor_t *m = arg;
    for (;;) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        int n = 0;
        int64_t now = lns_mono_ns();
        pthread_mutex_lock(&m->mu);
        if (m->stop) {
            pthread_mutex_unlock(&m->mu);
            return NULL;
        }
        if (ioctl(m->fd, FIONREAD, &n) == 0) {
            if (n > 0 && !m->first_byte_ns)
                m->first_byte_ns = now;
            if (m->first_byte_ns && n == 0 && !m->stretch_from)
                m->stretch_from = now;
            else if (n > 0 && m->stretch_from)
                stretch_end(m, now);
        }
        pthread_mutex_unlock(&m->mu);
    }
}

/* The download ended (the last bytes are in the pipe): an empty pipe from now on is the end
 * of the stream, not a wait. */
static void monitor_stop(monitor_t *m)
{
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    if (m->stretch_from)
        stretch_end(m, lns_mono_ns());
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
}

/* ---- the stream's bitrate --------------------------------------------------------------- */

static double meta_bitrate(const xnd_t *x)
{
    int64_t i;
    double d;
    const char *s;
    if (xnd_meta_get_int(&x->meta, "bitrate", &i) == XND_OK && i > 0)
        return (double)i;
    if (xnd_meta_get_double(&x->meta, "bitrate", &d) == XND_OK && d > 0)
        return d;
    if (xnd_meta_get_string(&x->meta, "bitrate", &s) == XND_OK && lns_parse_rate(s, &d) == 0)
        return d;
    return 0;
}

/* One ffprobe query on path: the first positive number it prints, or with sum all of them
 * added; 0 if none ("N/A" reads as 0). */
static double ffprobe_query(const char *path, const char *entries, int sum)
{
    char cmd[512], line[128];
    double v = 0;
    snprintf(cmd, sizeof cmd, "ffprobe -v error -show_entries %s -of "
             "default=noprint_wrappers=1:nokey=1 '%s' 2>/dev/null", entries, path);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) {
        double x = strtod(line, NULL);
        if (x > 0 && (sum || v == 0))
            v = sum ? v + x : x;
    }
    if (p)
        pclose(p);
    return v;
}

/* A file in $TMPDIR (else /tmp) from the template name "lors_play-WHAT-XXXXXX": its fd, or -1. */
static int temp_file(const char *what, char *buf, size_t size)
{
    const char *d = getenv("TMPDIR");
    snprintf(buf, size, "%s/lors_play-%s-XXXXXX", d && *d ? d : "/tmp", what);
    return mkstemp(buf);
}

/* ffprobe on a sparse copy of the file: its first and its last MiB at their places, the
 * rest a hole, so that a container whose index is at the end (an MP4 without faststart: moov
 * after the data) is read as well as one with it in front.  The rate is the file's size over
 * the duration ffprobe finds, else the sum of its streams' bitrates; 0 if it cannot tell.
 * (The container's own bit_rate of a 1 MiB prefix was that prefix over the whole duration.) */
static double probe_bitrate(const xnd_t *x, int64_t size, const unsigned char *key,
                            const volatile sig_atomic_t *stop)
{
    char tmp[PATH_MAX];
    double rate = 0;
    if (!in_path("ffprobe") || size <= 0)
        return 0;
    int fd = temp_file("probe", tmp, sizeof tmp);
    if (fd < 0)
        return 0;
    lors_download_opts_t o;
    lors_download_opts_init(&o);
    o.length = size < MIB ? size : MIB;
    o.key = key;
    o.stop = stop;
    int rc = lors_download_fd(&o, x, fd, NULL);
    if (rc == LORS_OK && size > MIB) {
        int64_t tail = size - MIB > MIB ? MIB : size - MIB;
        o.offset = size - tail;
        o.length = tail;
        rc = lseek(fd, (off_t)o.offset, SEEK_SET) < 0 ? LORS_E_WRITE
                                                       : lors_download_fd(&o, x, fd, NULL);
    }
    if (rc == LORS_OK && ftruncate(fd, (off_t)size) < 0)
        rc = LORS_E_WRITE;
    close(fd);
    if (rc == LORS_OK) {
        double secs = ffprobe_query(tmp, "format=duration", 0);
        rate = secs > 0 ? size * 8.0 / secs : ffprobe_query(tmp, "stream=bit_rate", 1);
    }
    unlink(tmp);
    return rate;
}

/* ---- lns_paced's results ---------------------------------------------------------------- */

typedef struct paced_result {
    int ok;
    long count;
    double total_s, max_s;
} paced_result_t;

static double json_number(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtod(p + strlen(key), NULL) : -1;
}

static void paced_read(const char *path, paced_result_t *r)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    memset(r, 0, sizeof *r);
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *u = strstr(buf, "\"underruns\":");
    if (!u)
        return;
    r->count = (long)json_number(u, "\"count\": ");
    r->total_s = json_number(u, "\"total_s\": ");
    r->max_s = json_number(u, "\"max_s\": ");
    r->ok = r->count >= 0 && r->total_s >= 0 && r->max_s >= 0;
}

/* ---- main ------------------------------------------------------------------------------- */

/* Depots the exNode's mappings live on, counted once each. */
static int count_depots(const xnd_t *x)
{
    char (*seen)[IBP_MAX_HOST + IBP_MAX_RID + 16] = calloc(x->nmaps + 1, sizeof *seen);
    int n = 0;
    if (!seen)
        return 1;
    for (size_t i = 0; i < x->nmaps; i++) {
        char d[sizeof seen[0]];
        tool_mapping_depot(x->maps[i], d, sizeof d);
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = strcmp(seen[j], d) == 0;
        if (!dup)
            memcpy(seen[n++], d, sizeof d);
    }
    free(seen);
    return n > 0 ? n : 1;
}

/* lors_download's defaults, then those of playback, then the rc file, then the flags. */
static void play_opts(const settings_t *f, const xnd_t *x, double bitrate,
                      lors_download_opts_t *o)
{
    int depots = count_depots(x);
    lors_download_opts_init(o);
    o->blocksize = f->blocksize;
    /* Playback wants each block soon, not the most bytes per second: a block shared by k
     * fetches on one link takes k times as long to arrive.  So about 8 streams spread one
     * per depot where there are 8 or more depots (8 x 5 Mbit/s links: 0 underruns with one,
     * 1-8 per minute with up to 4 of 16 streams on a depot), more per depot where there are
     * few of them, and never more than 4 (lors_download's cap). */
    int share = (8 + depots - 1) / depots;
    o->depot_cap = f->depot_cap != TOOL_UNSET_INT ? f->depot_cap : share > 4 ? 4 : share;
    o->timeout_ms = (int)(1000 * f->c.timeout);
    o->redundancy = f->redundancy;
    if (f->c.threads != TOOL_UNSET_INT)
        o->threads = f->c.threads;
    else
        o->threads = depots * o->depot_cap > TOOL_MAX_THREADS ? TOOL_MAX_THREADS
                                                              : depots * o->depot_cap;
    double Bps = bitrate / 8;
    if (f->prebuffer > 0)
        o->prebuffer_bytes = (int64_t)(f->prebuffer * Bps);
    /* the buffer holds the pre-buffer plus a block in flight on every stream */
    int64_t floor = o->prebuffer_bytes + (int64_t)o->threads * o->blocksize;
    int64_t want = bitrate > 0 ? (int64_t)((f->buffer > 0 ? f->buffer : 4) * Bps) : 64 * MIB;
    o->buffer_bytes = want > floor ? want : floor;
    /* A stall is a fetch that reports no progress (one every 64 KiB piece: the download
     * engine) for twice the time a piece takes at the slowest rate playback can live with: the
     * stream's rate shared by every stream, and never under 2 s.  A fixed second aborted
     * healthy fetches on slow links (8 x 5 Mbit/s depots, 16 streams, 256 KiB pieces then:
     * a piece every ~0.8 s) until no replica was left. */
    double per_stream = bitrate > 0 ? Bps / o->threads : 0;
    double piece_ms = per_stream > 0 ? 64.0 * 1024 / per_stream * 1000 : 0;
    o->stall_ms = piece_ms * 2 > 2000 ? (piece_ms * 2 < 30000 ? (int)(piece_ms * 2) : 30000) : 2000;
}

/* --start: the player reads the file from a private gateway (play_gateway.c) at the
 * position, instead of a pipe from the start.  The session ends when the player does, when
 * SIGINT or SIGTERM comes, or when the gateway dies; the gateway and its files go in every
 * case.  Its BEGIN and END lines are those of the pipe, with start= and url= and without the
 * pipe's measures; END's bytes are those the player asked the gateway for. */
static int play_from(const settings_t *f, const char *path, const xnd_t *x, int64_t size,
                     double bitrate, const char *bsrc, player_t *pl)
{
    tool_feed_t feed = {0};
    play_gateway_t g;
    char serve[PATH_MAX], err[PATH_MAX + 256], secs[32], timeout[32];
    const char *extra[8];
    int n = 0, code, pstatus = -1, requests = 0;
    int64_t bytes = 0, t0 = lns_mono_ns();

    memset(&g, 0, sizeof g);
    if ((code = tool_feed_open(TOOL, &feed, f->c.events, "play", -1, -1)))
        return code;
    play_signals_block();
    sibling_path("lors_serve", serve, sizeof serve);
    if (f->c.no_rc)
        extra[n++] = "--no-rc";
    else if (f->c.rcfile) {
        extra[n++] = "--rc";
        extra[n++] = f->c.rcfile;
    }
    if (f->keyfile) {
        extra[n++] = "--key-file";
        extra[n++] = f->keyfile;
    }
    snprintf(timeout, sizeof timeout, "%llds", (long long)f->c.timeout);
    extra[n++] = "-T";
    extra[n++] = timeout;
    extra[n] = NULL;
    play_format_secs(f->start, secs, sizeof secs);
    if (play_gateway_start(&g, serve, path, x, extra, err, sizeof err) < 0) {
        tool_error(TOOL, "%s", err);
        code = TOOL_EXIT_IO;
        goto out;
    }
    if (pl->confk) {
        char text[sizeof g.token + 64];
        snprintf(text, sizeof text, "http-header-fields=\"Authorization: Bearer %s\"\n",
                 g.token);
        int w = play_gateway_player_conf(&g, text, pl->conf, sizeof pl->conf);
        memset(text, 0, sizeof text);
        if (w < 0) {
            tool_error(TOOL, "the player's option file %s: %s", pl->conf, strerror(errno));
            code = TOOL_EXIT_IO;
            goto out;
        }
        snprintf(pl->confopt, sizeof pl->confopt, "%s%s", pl->confk->include, pl->conf);
        snprintf(pl->url, sizeof pl->url, "%s", g.url);
    } else {
        snprintf(pl->url, sizeof pl->url, "%s", g.token_url);
    }
    if (feed.es) {
        char xp[3 * PATH_MAX], up[3 * sizeof g.url];
        tool_events_encode(path, xp, sizeof xp);
        tool_events_encode(g.url, up, sizeof up);
        tool_events_printf(feed.es, "BEGIN", "op=play exnode=%s size=%" PRId64 " player=%s "
                           "bitrate=%.0f bitrate_from=%s start=%s url=%s", xp, size, pl->name,
                           bitrate > 0 ? bitrate : 0, bsrc, secs, up);
    }
    if (player_start(pl, -1, -1) < 0) {
        code = TOOL_EXIT_IO;
        goto out;
    }
    int why = play_gateway_wait(&g, pl->pid, &pstatus);
    play_gateway_stats(&g, &requests, &bytes);
    if (why == SIGINT || why == SIGTERM) {
        code = 128 + why;
        tool_error(TOOL, "%s: stopped the player and the gateway", strsignal(why));
    } else if (why == PLAY_GATEWAY_DIED) {
        code = TOOL_EXIT_IO;
        tool_error(TOOL, "the gateway (%s) exited with status %d while the player played",
                   serve, g.status);
    } else if (pstatus != 0) {
        code = TOOL_EXIT_IO;
        tool_error(TOOL, "the player (%s) %s %d", pl->argv[0], pstatus > 128 ?
                   "died of signal" : "exited with status", pstatus > 128 ? pstatus - 128 :
                   pstatus);
    } else {
        code = TOOL_EXIT_OK;
    }
    if (!f->c.quiet)
        fprintf(stderr, "%s: played from %s s through %s: the player asked for %" PRId64
                " bytes in %d requests\n", TOOL, secs, g.url, bytes, requests);
out:
    play_gateway_stop(&g);
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f player_status=%d "
                           "start=%s requests=%d rc=%d", bytes, (lns_mono_ns() - t0) / 1e9,
                           pstatus, secs, requests, code);
    tool_feed_close(&feed);
    return code;
}

/* The stream's bitrate, needed for a pre-buffer in seconds and by lns_paced: --bitrate, the
 * exNode's, or ffprobe's (on the pipe only, when needed); -1 unknown.  *from says which. */
static double bitrate_of(const settings_t *f, const xnd_t *x, int64_t size,
                         const unsigned char *key, volatile sig_atomic_t *sig, const char **from)
{
    double b;
    if (f->bitrate > 0) {
        *from = "flag";
        return f->bitrate;
    }
    if ((b = meta_bitrate(x)) > 0) {
        *from = "exnode";
        return b;
    }
    if (!f->has_start && (f->prebuffer > 0 || (f->player && strcmp(f->player, "paced") == 0)) &&
        (b = probe_bitrate(x, size, key, sig)) > 0) {
        *from = "ffprobe";
        return b;
    }
    return b;
}

/* lns_paced's results file, made empty in $TMPDIR (pl->json). */
static int paced_json(player_t *pl)
{
    int jfd = temp_file("json", pl->json, sizeof pl->json);
    if (jfd < 0) {
        tool_error(TOOL, "a temporary file %s: %s", pl->json, strerror(errno));
        pl->json[0] = 0;
        return TOOL_EXIT_IO;
    }
    close(jfd);
    return TOOL_EXIT_OK;
}

/* The events stream's BEGIN line. */
static void say_begin(tool_events_t *es, const char *path, int64_t size, const char *player,
                      double bitrate, const char *bsrc, const lors_download_opts_t *o)
{
    char xp[3 * PATH_MAX];
    tool_events_encode(path, xp, sizeof xp);
    tool_events_printf(es, "BEGIN", "op=play exnode=%s size=%" PRId64 " player=%s "
                       "bitrate=%.0f bitrate_from=%s prebuffer=%" PRId64 " buffer=%" PRId64
                       " threads=%d bs=%" PRId64, xp, size, player, bitrate > 0 ? bitrate : 0,
                       bsrc, o->prebuffer_bytes, o->buffer_bytes, o->threads, o->blocksize);
}

/* The summary lines of a play on the pipe. */
static void say_played(const lors_dl_report_t *rep, const lors_download_opts_t *o,
                       const monitor_t *mon, const paced_result_t *pr, double bitrate,
                       const char *bsrc, int64_t t0)
{
    char stream[64];
    if (bitrate > 0)
        snprintf(stream, sizeof stream, "stream %.1f Mbit/s from %s", bitrate / 1e6, bsrc);
    else
        snprintf(stream, sizeof stream, "stream bitrate unknown");
    fprintf(stderr, "%s: %" PRId64 " bytes in %.2f s (%.1f Mbit/s; %s), %u blocks of %" PRId64
            ", %d streams; pipe empty %.3f s while downloading, longest %.3f s, %d "
            "stretches of 100 ms or more\n", TOOL, rep->bytes_written, rep->seconds,
            rep->seconds > 0 ? rep->bytes_written * 8 / 1e6 / rep->seconds : 0, stream,
            rep->blocks, rep->blocksize, o->threads, mon->empty_ns / 1e9,
            mon->longest_ns / 1e9, mon->stretches);
    if (mon->first_byte_ns)
        fprintf(stderr, "%s: the player's first bytes after %.3f s (pre-buffer %" PRId64
                " bytes)\n", TOOL, (mon->first_byte_ns - t0) / 1e9, o->prebuffer_bytes);
    if (pr->ok)
        fprintf(stderr, "%s: underruns %ld, %.3f s in all, longest %.3f s (lns_paced)\n", TOOL,
                pr->count, pr->total_s, pr->max_s);
}

/* -v: what each depot gave. */
static void say_depots(const lors_dl_report_t *rep)
{
    for (size_t i = 0; i < rep->ndepots; i++) {
        char name[IBP_MAX_HOST + IBP_MAX_RID + 16];
        lors_depot_format(&rep->depots[i].depot, name, sizeof name);
        fprintf(stderr, "%s: %-24s %6" PRIu64 " blocks %8.1f MB/s %4" PRIu64 " fetches %4"
                PRIu64 " failed %4" PRIu64 " cancelled %4" PRIu64 "/%" PRIu64
                " redundant won\n", TOOL, name, rep->depots[i].blocks, rep->depots[i].mbps,
                rep->depots[i].fetches, rep->depots[i].failures, rep->depots[i].wasted,
                rep->depots[i].redundant_won, rep->depots[i].redundant_started);
    }
}

/* One line: what the player got, and whether the download still ran (ended: it had). */
static void say_interrupted(const char *path, const player_t *pl, int sig, int64_t written,
                            int64_t size, int ended)
{
    const char *who = pl->argv[0] ? pl->argv[0] : pl->name, *slash = strrchr(who, '/');
    tool_error(TOOL, "%s: interrupted (%s) after %" PRId64 " of %" PRId64 " bytes to the player "
               "(%s); %s", path, sig == SIGINT ? "SIGINT" : "SIGTERM", written, size,
               slash ? slash + 1 : who, ended && written == size
                                            ? "stopped the player (the download had ended)"
                                            : "stopped the player and the download");
}

/* The play's exit code: the download's error, else the player's, else lns_paced's missing
 * results, each said in one line (a write error of a player that died is the player's). */
static int judged(const char *path, int lrc, const lors_dl_report_t *rep, const player_t *pl,
                  int pstatus, const paced_result_t *pr, int64_t size)
{
    if (lrc == LORS_OK)
        tool_print_degraded(TOOL, rep); /* lost copies: said even under --quiet */
    if (lrc != LORS_OK && !(lrc == LORS_E_WRITE && pstatus != 0)) {
        tool_error(TOOL, "%s: %s", path, rep->error[0] ? rep->error : lors_strerror(lrc));
        return tool_exit_code(lrc);
    }
    if (pstatus != 0) {
        tool_error(TOOL, "the player (%s) %s %d after %" PRId64 " of %" PRId64 " bytes",
                   pl->argv[0], pstatus > 128 ? "died of signal" : "exited with status",
                   pstatus > 128 ? pstatus - 128 : pstatus, rep->bytes_written, size);
        return TOOL_EXIT_IO;
    }
    if (strcmp(pl->name, "paced") == 0 && !pr->ok) {
        tool_error(TOOL, "lns_paced left no results in %s", pl->json);
        return TOOL_EXIT_IO;
    }
    return TOOL_EXIT_OK;
}

/* The events stream's END line. */
static void say_end(tool_events_t *es, const lors_dl_report_t *rep, int pstatus,
                    const monitor_t *mon, const paced_result_t *pr, int code)
{
    tool_events_printf(es, "END", "bytes=%" PRId64 " seconds=%.3f player_status=%d "
                       "pipe_empty=%.3f pipe_empty_max=%.3f underruns=%ld "
                       "underrun_total=%.3f underrun_max=%.3f rc=%d", rep->bytes_written,
                       rep->seconds, pstatus, mon->empty_ns / 1e9, mon->longest_ns / 1e9,
                       pr->ok ? pr->count : -1, pr->total_s, pr->max_s, code);
}

int main(int argc, char **argv)
{
    settings_t f;
    const char *path, *bsrc = "none";
    xnd_t *x = NULL;
    lors_e2e_info_t e2e;
    unsigned char key[LORS_KEY_BYTES];
    char err[512];
    int code, lrc = LORS_OK, pipefd[2] = {-1, -1}, mon_on = 0, stop_on = 0, pstatus = -1;
    double bitrate = -1;
    player_t pl;
    monitor_t mon;
    stopper_t stop;
    paced_result_t pr;
    lors_download_opts_t o;
    tool_feed_t feed = {0};
    lors_dl_report_t rep = {0};

    memset(&pl, 0, sizeof pl);
    memset(&pr, 0, sizeof pr);
    memset(&mon, 0, sizeof mon);
    memset(&stop, 0, sizeof stop);
    code = tool_opt_exnode(&command, argc, argv, &f, &path, &x);
    if (code)
        return code;
    if (lors_e2e_info(x, &e2e, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }
    int64_t size = e2e.present ? e2e.plain_size : xnd_size(x);
    if (size < 0) {
        tool_error(TOOL, "%s: the exNode does not say the file's size", path);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }
    const unsigned char *keyp;
    code = tool_key(TOOL, e2e.present ? e2e.chain : NULL, f.keyfile, key, &keyp);
    if (code != TOOL_EXIT_OK)
        goto done;

    /* on the pipe, from here on a signal stops the download and the player (--start: the
     * gateway's own wait takes them) */
    if (!f.has_start) {
        if (stopper_start(&stop) < 0) {
            tool_error(TOOL, "a thread for SIGINT and SIGTERM: %s", strerror(errno));
            code = TOOL_EXIT_INTERNAL;
            goto done;
        }
        stop_on = 1;
    }
    bitrate = bitrate_of(&f, x, size, keyp, &stop.sig, &bsrc);
    if (stop.sig) /* while ffprobe's bytes came */
        goto interrupted;
    if (f.has_start && f.prebuffer > 0) {
        code = tool_usage(TOOL, "--prebuffer and --start exclude each other (from a position "
                              "the player reads the gateway at its own pace)");
        goto done;
    }
    if (f.prebuffer > 0 && !(bitrate > 0)) {
        code = tool_usage(TOOL, "--prebuffer %g: the stream's bitrate is unknown (the exNode "
                              "has none and ffprobe could not tell): give --bitrate", f.prebuffer);
        goto done;
    }
    if (!f.has_start && f.player && strcmp(f.player, "paced") == 0 && /* its results */
        (code = paced_json(&pl)))
        goto done;
    code = player_argv(&f, bitrate, &pl);
    if (code)
        goto done;
    if (f.has_start) {
        code = play_from(&f, path, x, size, bitrate, bsrc, &pl);
        goto done;
    }
    play_opts(&f, x, bitrate, &o);
    o.key = keyp;
    o.stop = &stop.sig;

    code = tool_feed_open(TOOL, &feed, f.c.events, "play", -1, -1);
    if (code)
        goto done;
    tool_feed_attach(&feed, &o.on_event, &o.event_arg);
    if (feed.es)
        say_begin(feed.es, path, size, pl.name, bitrate, bsrc, &o);

    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        tool_error(TOOL, "a pipe to the player: %s", strerror(errno));
        code = TOOL_EXIT_IO;
        goto done;
    }
    if (stop.sig) /* before the player */
        goto interrupted;
    if (player_start(&pl, pipefd[0], pipefd[1]) < 0) {
        code = TOOL_EXIT_IO;
        goto done;
    }
    stopper_player(&stop, pl.pid);
    close(pipefd[0]);
    pipefd[0] = -1;
    mon.fd = pipefd[1];
    pthread_mutex_init(&mon.mu, NULL);
    if (pthread_create(&mon.th, NULL, monitor_main, &mon) == 0)
        mon_on = 1;

    int64_t t0 = lns_mono_ns();
    lrc = lors_download_fd(&o, x, pipefd[1], &rep);
    if (mon_on)
        monitor_stop(&mon);
    close(pipefd[1]);
    pipefd[1] = -1;
    pstatus = player_wait(&pl, &stop);
    if (stop.sig)
        goto interrupted;
    if (strcmp(pl.name, "paced") == 0)
        paced_read(pl.json, &pr);

    code = judged(path, lrc, &rep, &pl, pstatus, &pr, size);
    if (!f.c.quiet)
        say_played(&rep, &o, &mon, &pr, bitrate, bsrc, t0);
    if (f.c.verbose && !f.c.quiet)
        say_depots(&rep);
    goto done;

interrupted: /* one line: what the player got, and whether the download still ran */
    code = 128 + stop.sig;
    if (!pl.pid) {
        tool_error(TOOL, "%s: interrupted (%s) before the player started", path,
                   stop.sig == SIGINT ? "SIGINT" : "SIGTERM");
        goto done;
    }
    say_interrupted(path, &pl, stop.sig, rep.bytes_written, size, lrc == LORS_OK);

done:
    if (stop_on)
        stopper_end(&stop);
    if (feed.es)
        say_end(feed.es, &rep, pstatus, &mon, &pr, code);
    tool_feed_close(&feed);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (pl.json[0])
        unlink(pl.json);
    memset(key, 0, sizeof key);
    lors_dl_report_free(&rep);
    xnd_free(x);
    tool_opt_free(&f);
    return code;
}
