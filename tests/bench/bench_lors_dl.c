/* bench_lors_dl.c -- drives liblors's upload and download engines for tests/bench/bench_lors.sh.
 *
 *   bench_lors_dl upload   --depot-list "h:p,h:p" [-c COPIES] [-F FRAGS] [-d SECONDS] -o X.xnd FILE
 *   bench_lors_dl download [-o OUT] [-t STREAMS] [-a PER_DEPOT] [-bs BYTES] [-M BYTES]
 *                          [-r R] [-p P] [--no-verify] X.xnd
 *   bench_lors_dl time CMD [ARGS...]
 *
 * Both take the flags of lors_upload and lors_download, so the benchmark script can run
 * either; download it prints one line of key=value fields (op=... first) with the engine's report and
 * this process's peak resident memory (getrusage), so a run shows where its bytes went
 * (fetched vs written, redundant and cancelled fetches) next to its rate.  MB are 10^6 bytes.
 * `time` runs any program and prints its wall time and peak resident memory (wait4), so
 * that ours and the peers (curl, aria2c) are timed by the same clock, process start included.
 * It uses only liblors's public header, as the lors_* programs do.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lns_time.h"
#include "lns_units.h"
#include "lors.h"
#include "usage.h"
#include "xnd.h"

enum { EXIT_LORS = 1, EXIT_USAGE = 2, EXIT_SYS = 4 };

static const char *usage_text =
    "usage: bench_lors_dl COMMAND ARGS...\n"
    "  upload --depot-list \"h:p,h:p\" [-c COPIES] [-F FRAGS] [-d SECONDS] -o X.xnd FILE\n"
    "         lors_upload_fd of FILE (sha256 per 1 MiB, the library default); writes the exNode.\n"
    "  download [-o OUT|-] [-t STREAMS] [-a PER_DEPOT] [-bs BYTES] [-M BYTES] [-r R] [-p P]\n"
    "           [--no-verify] [-V] X.xnd\n"
    "         lors_download_fd to OUT (default /dev/null; - is stdout, and the report goes\n"
    "         to stderr); unset flags keep the library's defaults.  Prints MB/s, the report\n"
    "         and the peak RSS (-V is accepted and changes nothing).\n"
    "  time CMD [ARGS...]\n"
    "         run CMD; print its wall seconds, peak RSS and exit status; exit as it did.\n"
    "Sizes take K, M, G, T suffixes (powers of 1024).  Output: one key=value line.\n";

static int64_t size_arg(const char *s, const char *what)
{
    uint64_t v = bench_size_arg(s, what);
    if (v > INT64_MAX)
        bench_usage_exit(what);
    return (int64_t)v;
}

static int int_arg(const char *s, const char *what)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < 0 || v > 1 << 20)
        bench_usage_exit(what);
    return (int)v;
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int cmd_upload(int argc, char **argv)
{
    lors_upload_opts_t o;
    lors_report_t rep;
    lors_depot_t *depots = NULL;
    size_t nd = 0;
    const char *in = NULL, *xout = NULL;
    char err[256];

    lors_upload_opts_init(&o);
    o.duration_s = 3600;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--depot-list")) {
            if (!v || lors_depot_list_parse(v, &depots, &nd, err, sizeof err) != LORS_OK)
                bench_usage_exit(v ? err : "--depot-list needs a list");
            i++;
        } else if (!strcmp(a, "-o")) {
            if (!v)
                bench_usage_exit("-o needs a path");
            xout = v, i++;
        } else if (!strcmp(a, "-d")) {
            int64_t secs;
            if (!v || lns_parse_seconds(v, &secs) < 0)
                bench_usage_exit("-d needs a duration");
            o.duration_s = secs, i++;
        } else if (!strcmp(a, "-c")) {
            o.copies = int_arg(v, "-c needs a count"), i++;
        } else if (!strcmp(a, "-F")) {
            o.fragments = int_arg(v, "-F needs a count"), i++;
        } else if (a[0] == '-') {
            bench_usage_exit("unknown upload flag");
        } else if (!in) {
            in = a;
        } else {
            bench_usage_exit("too many arguments");
        }
    }
    if (!in || !xout || !depots)
        bench_usage_exit("upload needs --depot-list, -o X.xnd and FILE");
    o.depots = depots;
    o.ndepots = nd;
    int fd = open(in, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "bench_lors_dl: %s: %s\n", in, strerror(errno));
        return EXIT_SYS;
    }
    xnd_t *x = NULL;
    int64_t t0 = lns_mono_ns();
    int rc = lors_upload_fd(&o, fd, st.st_size, in, &x, &rep);
    double secs = (double)(lns_mono_ns() - t0) / 1e9;
    close(fd);
    if (rc != LORS_OK) {
        fprintf(stderr, "bench_lors_dl: upload %s: %s: %s\n", in, lors_strerror(rc), rep.error);
        lors_report_free(&rep);
        free(depots);
        return EXIT_LORS;
    }
    if (xnd_write_file(x, xout, err, sizeof err) != XND_OK) {
        fprintf(stderr, "bench_lors_dl: writing %s: %s\n", xout, err);
        rc = EXIT_SYS;
    } else {
        printf("op=upload bytes=%lld mappings=%d seconds=%.3f mbps=%.1f\n",
               (long long)rep.size, rep.mappings, secs,
               secs > 0 ? (double)rep.bytes_stored / secs / 1e6 : 0.0);
    }
    lors_report_free(&rep);
    xnd_free(x);
    free(depots);
    return rc == LORS_OK ? 0 : rc;
}

static int cmd_download(int argc, char **argv)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    const char *out = "/dev/null", *xpath = NULL;
    char err[256];

    lors_download_opts_init(&o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-o")) {
            if (!v)
                bench_usage_exit("-o needs a path");
            out = v, i++;
        } else if (!strcmp(a, "-t")) {
            o.threads = int_arg(v, "-t needs a count"), i++;
        } else if (!strcmp(a, "-a")) {
            o.depot_cap = int_arg(v, "-a needs a count"), i++;
        } else if (!strcmp(a, "-bs")) {
            o.blocksize = size_arg(v, "-bs needs a size"), i++;
        } else if (!strcmp(a, "-M")) {
            o.buffer_bytes = size_arg(v, "-M needs a size"), i++;
        } else if (!strcmp(a, "-r")) {
            o.redundancy = int_arg(v, "-r needs a count"), i++;
        } else if (!strcmp(a, "-p")) {
            o.progress = int_arg(v, "-p needs a count"), i++;
        } else if (!strcmp(a, "--no-verify")) {
            o.verify = 0;
        } else if (!strcmp(a, "-V")) {
            /* lors_download's verbose report: this driver always prints its own */
        } else if (a[0] == '-') {
            bench_usage_exit("unknown download flag");
        } else if (!xpath) {
            xpath = a;
        } else {
            bench_usage_exit("too many arguments");
        }
    }
    if (!xpath)
        bench_usage_exit("download needs X.xnd");
    xnd_t *x = NULL;
    if (xnd_read_file(xpath, &x, err, sizeof err) != XND_OK) {
        fprintf(stderr, "bench_lors_dl: %s: %s\n", xpath, err);
        return EXIT_LORS;
    }
    int to_stdout = strcmp(out, "-") == 0;
    FILE *info = to_stdout ? stderr : stdout; /* the data owns stdout */
    int fd = to_stdout ? 1 : open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        fprintf(stderr, "bench_lors_dl: %s: %s\n", out, strerror(errno));
        xnd_free(x);
        return EXIT_SYS;
    }
    int rc = lors_download_fd(&o, x, fd, &rep);
    if (!to_stdout)
        close(fd);
    if (rc != LORS_OK) {
        fprintf(stderr, "bench_lors_dl: download %s: %s: %s\n", xpath, lors_strerror(rc),
                rep.error);
    } else {
        uint64_t red = 0, wasted = 0, fetches = 0;
        for (size_t d = 0; d < rep.ndepots; d++) {
            red += rep.depots[d].redundant_started;
            wasted += rep.depots[d].wasted;
            fetches += rep.depots[d].fetches;
        }
        fprintf(info, "op=download bytes=%lld seconds=%.3f mbps=%.1f fetched=%lld blocks=%u "
               "blocksize=%lld fetches=%" PRIu64 " redundant=%" PRIu64 " cancelled=%" PRIu64
               " peak_buffered=%lld maxrss_kb=%ld verify=%d",
               (long long)rep.bytes_written, rep.seconds,
               rep.seconds > 0 ? (double)rep.bytes_written / rep.seconds / 1e6 : 0.0,
               (long long)rep.bytes_fetched, rep.blocks, (long long)rep.blocksize, fetches, red,
               wasted, (long long)rep.peak_buffered, maxrss_kb(), o.verify);
        for (size_t d = 0; d < rep.ndepots; d++)
            fprintf(info, " depot%zu_blocks=%" PRIu64, d, rep.depots[d].blocks);
        fprintf(info, "\n");
    }
    lors_dl_report_free(&rep);
    xnd_free(x);
    return rc == LORS_OK ? 0 : EXIT_LORS;
}

static int cmd_time(int argc, char **argv)
{
    if (argc < 1)
        bench_usage_exit("time needs a command");
    fflush(stdout);
    int64_t t0 = lns_mono_ns();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench_lors_dl: fork: %s\n", strerror(errno));
        return EXIT_SYS;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "bench_lors_dl: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "bench_lors_dl: wait4: %s\n", strerror(errno));
            return EXIT_SYS;
        }
    double secs = (double)(lns_mono_ns() - t0) / 1e9;
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    printf("op=time seconds=%.4f maxrss_kb=%ld cpu_s=%.3f status=%d\n", secs, ru.ru_maxrss,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
           code);
    return code;
}

int main(int argc, char **argv)
{
    bench_usage_init("bench_lors_dl", usage_text);
    if (argc < 2)
        bench_usage_exit(NULL);
    if (!strcmp(argv[1], "upload"))
        return cmd_upload(argc - 2, argv + 2);
    if (!strcmp(argv[1], "download"))
        return cmd_download(argc - 2, argv + 2);
    if (!strcmp(argv[1], "time"))
        return cmd_time(argc - 2, argv + 2);
    bench_usage_exit("unknown command");
    return EXIT_USAGE;
}
