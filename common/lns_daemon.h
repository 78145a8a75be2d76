/* lns_daemon.h -- what ibp_depot and lbone_server do alike to start and stop.
 *
 * A fatal error is one line "PROG: why" with the daemon's exit code; while a detached daemon
 * starts, that line goes up the pipe to the parent still waiting on the terminal (which
 * prints it and exits with the code), so "-d" fails as loudly as the foreground.  The pid and
 * port files are written whole (a temporary file renamed), because scripts poll for them.
 */
#ifndef LNS_DAEMON_H
#define LNS_DAEMON_H

#include <signal.h>

/* The daemons' exit codes, one set (man/ibp_depot.8, man/lbone_server.8); a bad setting is 2,
 * as a tool's bad flag is. */
enum lns_exit {
    LNS_EXIT_OK = 0,
    LNS_EXIT_RUNTIME = 1, /* failure while serving (out of memory, thread creation...) */
    LNS_EXIT_CONFIG = 2,  /* bad flag, config file, setting or key file */
    LNS_EXIT_STORAGE = 3, /* its storage (resources, database) cannot be used */
    LNS_EXIT_NETWORK = 4, /* cannot listen */
    LNS_EXIT_DAEMON = 5   /* cannot daemonize or write the pid, port or pin file */
};

typedef struct {
    const char *prog;     /* the program, prefix of the line on stderr */
    const char *log_file; /* its log-file setting: if set, the log gets the line too */
    int ready_fd;         /* -1, or the pipe to the waiting parent: "0 ready" or "CODE why" */
} lns_daemon_t;

/* Report the formatted line (stderr or the parent's pipe, and the log) and exit(code). */
void lns_daemon_die(const lns_daemon_t *d, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Write "VALUE\n" to path through path.tmp; on failure die with code and "WHAT: cannot write
 * PATH: why". */
void lns_daemon_write_file(const lns_daemon_t *d, int code, const char *path, long value,
                           const char *what);
/* The same with "TEXT\n" (a pin). */
void lns_daemon_write_text(const lns_daemon_t *d, int code, const char *path, const char *text,
                           const char *what);

/* Startup is over: tell the waiting parent, if any ("0 ready"), and close the pipe. */
void lns_daemon_ready(lns_daemon_t *d);

/* Ignore SIGPIPE; block SIGTERM, SIGINT and extra (if not 0) in this thread and the threads
 * it starts; sigs gets them, for sigwait or signalfd. */
void lns_daemon_signals(sigset_t *sigs, int extra);

/* Raise the soft open-file limit to the hard one; returns the limit now in force (-1 when it
 * cannot be read, LONG_MAX when unlimited), which bounds how many connections a server can
 * hold. */
long lns_daemon_nofile(void);

#endif
