/* test_proc.c -- start a server program of the build (ibp_depot, lbone_server) and wait until
 * it listens.
 *
 * The server gets --listen 127.0.0.1 --port P --port-file DIR/port; with P = 0 the kernel picks
 * a free port and the file, written once the server listens, tells us which. */
#include "lns_test.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* One try: the port, or -1 after printing why, with no process left. */
static int start_once(const char *prog, const char *cmd, char *const *argv, const char *portfile,
                      const char *log, int *pid)
{
    unlink(portfile);
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(cmd, argv);
        _exit(127);
    }
    *pid = child;
    lns_test_track_pid(child);

    /* Wait up to 15 s for the port file (the ASan build starts slowly). */
    for (int i = 0; i < 1500; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int p = 0;
            int ok = fscanf(f, "%d", &p) == 1 && p > 0;
            fclose(f);
            if (ok)
                return p;
        }
        int st;
        if (waitpid(child, &st, WNOHANG) == child) {
            fprintf(stderr, "start %s: exited (status %d); log %s:\n", prog, st, log);
            char c[PATH_MAX + 16];
            snprintf(c, sizeof c, "tail -20 '%s' >&2", log);
            if (system(c) != 0)
                fprintf(stderr, "(no log)\n");
            lns_test_untrack_pid(child);
            *pid = 0;
            return -1;
        }
        lns_test_sleep_ms(10);
    }
    fprintf(stderr, "start %s: did not write %s within 15 s\n", prog, portfile);
    lns_test_signal_child(pid, SIGKILL);
    return -1;
}

int lns_test_start_server(const char *prog, const char *dir, int port, const char *const *args,
                          const char *extra, const char *log, int tries, int *pid)
{
    char portfile[PATH_MAX + 16], portstr[16], cmd[PATH_MAX];
    char argbuf[2048];
    char *argv[128];
    int argc = 0;

    snprintf(portfile, sizeof portfile, "%s/port", dir);
    snprintf(portstr, sizeof portstr, "%d", port);
    snprintf(cmd, sizeof cmd, "%s/%s", lns_test_bindir(), prog);
    argv[argc++] = cmd;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "--port";
    argv[argc++] = portstr;
    argv[argc++] = "--port-file";
    argv[argc++] = portfile;
    for (; *args && argc < 126; args++)
        argv[argc++] = (char *)*args;
    snprintf(argbuf, sizeof argbuf, "%s", extra ? extra : "");
    for (char *tok = strtok(argbuf, " "); tok && argc < 126; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;

    for (int i = 0; i < tries; i++) {
        if (i > 0)
            lns_test_sleep_ms(100);
        int p = start_once(prog, cmd, argv, portfile, log, pid);
        if (p > 0)
            return p;
    }
    return -1;
}

int lns_test_server_init(lns_test_server *s, const char *kind, int seq, const char *extra)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s/%s%d", lns_test_tmpdir(), kind, seq);
    mkdir(s->dir, 0755);
    if (snprintf(s->log, sizeof s->log, "%s/%s.log", s->dir, kind) >= (int)sizeof s->log)
        return -1;
    snprintf(s->args, sizeof s->args, "%s", extra ? extra : "");
    return 0;
}

int lns_test_server_spawn(lns_test_server *s, const char *prog, int port,
                          const char *const *args, int tries)
{
    int p = lns_test_start_server(prog, s->dir, port, args, s->args, s->log, tries, &s->pid);
    if (p < 0)
        return -1;
    s->port = p;
    return 0;
}

int lns_test_server_kill(lns_test_server *s, int sig)
{
    return lns_test_signal_child(&s->pid, sig);
}

void lns_test_server_stop(lns_test_server *s)
{
    lns_test_signal_child(&s->pid, SIGTERM);
}

int lns_test_server_log_clean(const lns_test_server *s)
{
    return lns_test_log_clean(s->log);
}

void lns_test_server_finish(lns_test_server *s)
{
    lns_test_server_stop(s);
    CU_ASSERT(lns_test_server_log_clean(s));
}
