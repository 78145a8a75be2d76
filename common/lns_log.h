/* lns_log.h -- diagnostic log lines and NetLogger-style event lines.
 *
 * Diagnostics: "2026-11-22T17:40:01Z ibp_depot[123] warn: message" to stderr or a file.
 * Events (docs/depot.md, "Event log"): one line per event,
 *     <EVENT> <host> <sec>.<nsec> key=value key=value ...
 * buffered and written in whole lines by a writer thread at most 50 ms later, on an
 * O_APPEND descriptor, so lines from many threads and processes never interleave.
 * lns_event_close() writes out what is buffered.  Values must not contain spaces (callers pass ids, numbers
 * and symbolic names).
 */
#ifndef LNS_LOG_H
#define LNS_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

enum lns_log_level { LNS_LOG_ERROR = 0, LNS_LOG_WARN = 1, LNS_LOG_INFO = 2, LNS_LOG_DEBUG = 3 };

/* prog: the program name in every line; path: NULL or "-" for stderr.  0, or -1 with
 * "log-file: cannot open PATH: why" in err. */
int lns_log_open(const char *prog, const char *path, int level, char *err, size_t errlen);
void lns_log_close(void);
int lns_log_level_parse(const char *s); /* "error".."debug" -> level, or -1 */
void lns_log_set_level(int level);
int lns_log_enabled(int level);
void lns_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lns_vlog(int level, const char *fmt, va_list ap);
/* A request log's line on f: "2026-11-22T17:40:01Z " and the message, written whole under
 * f's lock and flushed (lors_serve's and lors_mount's logs).  f NULL: nothing. */
void lns_log_line(FILE *f, const char *fmt, va_list ap);

/* The event stream.  host: the name written in every line.  sample: write 1 event in
 * `sample` (1 = all, 0 = events off).  0, or -1 with "event-log: cannot open PATH: why" in
 * err. */
int lns_event_open(const char *path, const char *host, int sample, char *err, size_t errlen);
void lns_event_close(void);
int lns_event_on(void);
/* Returns 1 if this event should be written (sampling), 0 if not; cheap. */
int lns_event_sampled(void);
void lns_event(const char *event, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A private event log in the same format (docs/netlogger.md), for a library that must not
 * take over the process's event stream (liblors' --netlog): each line is formatted on the
 * stack and written with one write(2) on an O_APPEND descriptor, under the handle's mutex.
 * path: a file (appended to) or "fd:N"; host: the <host> of every line (NULL: gethostname).
 * NULL and errno on failure.  Writing through a NULL handle does nothing. */
typedef struct lns_evlog lns_evlog_t;
lns_evlog_t *lns_evlog_open(const char *path, const char *host);
void lns_evlog_write(lns_evlog_t *l, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lns_evlog_close(lns_evlog_t *l);

#endif
