/* lns_io.h -- reading and writing local descriptors (files, pipes, terminals) completely.
 *
 * The socket side lives in lns_net; these are for the other end of a transfer: the file a
 * STORE reads, the pipe a LOAD writes to, the data file of a depot.  They retry on EINTR
 * and short transfers, and on a non-blocking descriptor wait in poll() for at most idle_ms
 * (< 0: no limit) before giving up with ETIMEDOUT.
 */
#ifndef LNS_IO_H
#define LNS_IO_H

#include <stdint.h>
#include <sys/types.h>

/* Read at least one byte (up to n): bytes read, 0 at end of file, -1 on error. */
ssize_t lns_fd_read_some(int fd, void *buf, size_t n, int idle_ms);
/* Read n bytes, fewer only at end of file: bytes read, or -1 on error (errno). */
ssize_t lns_fd_read_full(int fd, void *buf, size_t n, int idle_ms);
/* Write all n bytes. 0 ok, -1 error (errno). */
int lns_fd_write_all(int fd, const void *buf, size_t n, int idle_ms);
/* pwrite(2) all n bytes at off. 0 ok, -1 error (errno). */
int lns_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);

#endif
