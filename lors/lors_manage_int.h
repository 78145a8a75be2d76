/* lors_manage_int.h -- what probe, augment, trim and refresh share; internal to liblors.
 *
 * These modules work on the mappings of an existing exNode, many depot calls at once: a
 * small pool of threads takes mapping (or job) numbers from a shared counter, each call
 * bounded by the user's timeout, all through one pooled libibp client.  The exNode itself is
 * never touched by the worker threads (xnd_t is not thread-safe): they fill per-item results
 * and the calling thread applies them after the join.  Augment stores its copies as an
 * upload does, so the two also share the upload's option rules and mapping writer.
 */
#ifndef LNS_LORS_MANAGE_INT_H
#define LNS_LORS_MANAGE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "lors.h"

/* The depot of a mapping, from its first capability (read, write, manage) that parses.
 * 0, or -1 with d zeroed (host "") when none does. */
int lors__map_depot(const xnd_mapping_t *m, lors_depot_t *d);
/* 1 if the two name the same depot (host and port; rid only when both give one). */
int lors__same_depot(const lors_depot_t *a, const lors_depot_t *b);

/* Give a new mapping its allocation's start, end (unless XND_TIME_UNKNOWN) and three
 * capabilities, as upload and augment write them.  XND_OK or the first xnd error.  In
 * lors_upload_engine.c. */
int lors__map_set_alloc(xnd_mapping_t *m, int64_t start, int64_t end, const ibp_caps_t *caps);
/* The start of an upload's exNode: a new one with its filename (unless NULL), size and
 * lorsversion in *out (NULL when there is no memory).  XND_OK or the first xnd error.  In
 * lors_upload_engine.c, as are the two below. */
int lors__xnd_begin(const char *filename, int64_t size, xnd_t **out);
/* A new mapping of [off, off+len) of the file on the whole of an allocation of alloc_len
 * bytes, given its times and capabilities by lors__map_set_alloc, in *out (NULL on error).
 * XND_OK or the first xnd error. */
int lors__map_new_alloc(int64_t off, int64_t len, int64_t alloc_len, int64_t start,
                        int64_t end, const ibp_caps_t *caps, xnd_mapping_t **out);
/* The end of an upload's exNode: on rc XND_OK, x into *out and LORS_OK; else x is freed, the
 * report (unless NULL) says "building the exNode: ...", and LORS_E_NOMEM or LORS_E_EXNODE. */
int lors__xnd_built(xnd_t *x, int rc, lors_report_t *rep, xnd_t **out);
/* Record (or drop) the mapping's "lns_pin": its depot's pin if libibp knows one (lors_pins.c).
 * lors__map_set_alloc calls it.  XND_OK or the xnd error. */
int lors__pin_record(xnd_mapping_t *m);

/* What is wrong with the storing settings of o (duration, reliability, threads, timeout) as
 * an upload, and augment's copies, check them; NULL: nothing.  In lors_upload_engine.c. */
const char *lors__store_opts_problem(const lors_upload_opts_t *o);

/* A pooled client for `threads` parallel calls, each bounded by timeout_s (below 1: 30 s; its
 * milliseconds saturate at INT_MAX, about 24.8 days) and by LORS_STALL_MS without progress
 * (connects too).  NULL: no memory. */
ibp_client_t *lors__client(int timeout_s, int threads);

/* Run fn(arg, i) for every i in [0, n), on up to min(threads, n) threads, the calling one
 * among them, so it always completes (on fewer threads if some cannot start).  fn runs
 * without any lock of ours held. */
void lors__parallel(size_t n, int threads, void (*fn)(void *arg, size_t i), void *arg);

/* Free the allocations of the manage capabilities mcaps[0..n) (NULL ones count as unfreed),
 * as lors_discard does: LORS_OK, LORS_E_PARTIAL or LORS_E_NOMEM, with *out filled.  In
 * lors_discard.c. */
int lors__release(const char *const *mcaps, size_t n, int threads, int timeout_s,
                  lors_freed_t *out);

/* Mapping pointer -> document index, for xnd_coverage callbacks that only get the pointer. */
typedef struct lors__mapidx {
    const xnd_mapping_t **ptr; /* sorted */
    size_t *idx;
    size_t n;
} lors__mapidx_t;

int lors__mapidx_build(const xnd_t *x, lors__mapidx_t *mi); /* LORS_OK or LORS_E_NOMEM */
/* The index of m, or (size_t)-1 if m is not one of x's mappings. */
size_t lors__mapidx_find(const lors__mapidx_t *mi, const xnd_mapping_t *m);
void lors__mapidx_free(lors__mapidx_t *mi);

/* A short human reason for a libibp error ("no such allocation", "cannot connect", ...). */
const char *lors__why(int err);

/* "bytes A-B" of [off, off+len) into buf (len 0: "no bytes at A"). */
void lors__bytes(int64_t off, int64_t len, char *buf, size_t size);

#endif
