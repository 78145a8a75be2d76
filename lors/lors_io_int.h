/* lors_io_int.h -- the I/O helpers the engines share (lors_io.c): upload, download, EC and
 * e2e read their sources, wait on their workers and write to pipes the same way.
 */
#ifndef LORS_IO_INT_H
#define LORS_IO_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

/* How often a wait looks at the caller's stop flag (the options' stop). */
#define STOP_POLL_MS 100

/* lns_fd_read_full of want bytes (fewer only at the end), except that with a stop flag the
 * fd (a pipe) is polled so that a stop is seen: the bytes read, -1 (errno), or -2: stopped. */
int64_t lors__read_stoppable(int fd, unsigned char *buf, int64_t want,
                             const volatile sig_atomic_t *stop);
/* pthread_cond_wait, at most STOP_POLL_MS when poll (the caller may be stopped). */
void lors__cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int poll);
/* Hold SIGPIPE back for the calling thread (a write to a closed pipe gives EPIPE), and put
 * things back, dropping a SIGPIPE raised meanwhile unless one was pending before. */
void lors__sigpipe_hold(sigset_t *old, int *was_pending);
void lors__sigpipe_release(const sigset_t *old, int was_pending);

#endif
