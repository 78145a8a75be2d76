/* lors_augment_int.h -- the augment engine's state, shared by its two files.
 *
 * lors_augment_engine.c plans (probe, cover the range with live mappings, count the copies to add)
 * and builds the result; lors_augment_copy.c runs the jobs, one new copy each: choose a
 * depot, ALLOCATE, SEND (or relay), move elsewhere on failure.  Internal to liblors.
 *
 * Locking: a->mu guards the placement state (bad, load, every job's depot), the report and
 * a->err; no depot call and no event runs under it.  Events are serialized by a->evmu,
 * taken without a->mu.  The exNode is only read while the jobs run.
 */
#ifndef LNS_LORS_AUGMENT_INT_H
#define LNS_LORS_AUGMENT_INT_H

#include <pthread.h>
#include <stdint.h>

#include "lors.h"
#include "lors_func_int.h"
#include "lors_lease_int.h"

#define AUG_RELAY_CHUNK ((int64_t)4 << 20) /* bytes per LOAD/STORE when relaying */

/* One piece of the file: a live mapping chosen by the cover, copied whole. */
typedef struct aug_piece {
    int index;
    int src;            /* the chosen mapping: its range, function and the first source */
    int64_t off, len;   /* its bytes of the file */
    int whole;          /* a 1.3.1 chain (lors_func_int.h): its allocation is copied as it is */
    int64_t slen;       /* the bytes copied: len, or whole the source's alloc_length */
    int *alts;          /* live mappings holding all of [off, off+len), src first */
    int nalts;
    unsigned char *held; /* per target depot: holds a live copy of the piece already */
    int copies;         /* new copies to make */
} aug_piece_t;

/* One new copy of a piece. */
typedef struct aug_job {
    aug_piece_t *p;
    int copy;           /* 0.. p->copies-1 */
    int seq;            /* number of the job, for round-robin placement */
    int depot;          /* target: index into o->up.depots; -1 before the first choice */
    int alt;            /* current source: p->alts[alt] */
    int allocated;
    ibp_caps_t caps;
    int64_t start, end; /* epochs; end XND_TIME_UNKNOWN if the depot did not tell */
    int done;
    int dropped;        /* distinct: no depot fit for it; not made */
} aug_job_t;

typedef struct aug {
    const lors_augment_opts_t *o;
    const xnd_t *x;
    ibp_client_t *ibp;
    lors__alive_t *alive; /* the provisional leases kept alive (NULL: none) */
    lors_report_t *rep;
    pthread_mutex_t mu, evmu;
    lors_depot_t *mapdep; /* depot of each mapping (host "" if none parses) */
    lors__func_t *fn;     /* what each mapping's function means */
    int *bad;             /* per target depot: failed during this call */
    int *load;            /* per target depot: live mappings of x and jobs placed there */
    aug_piece_t *pieces;
    int npieces;
    aug_job_t *jobs;
    int njobs;
    int err;              /* first fatal error; stops every job */
} aug_t;

/* lors_augment's options checked: LORS_OK, or LORS_E_INVAL with the reason in err. */
int lors__augment_check(const lors_augment_opts_t *o, char *err, size_t errlen);
/* lors_augment of a replicated file (the public entry, lors_entry.c, takes an erasure-coded
 * one to the keeper's repair): more copies of its ranges, made depot to depot. */
int lors__augment_copies(const lors_augment_opts_t *o, xnd_t *x, xnd_t **added,
                         lors_report_t *report);
/* lors_augment_copy.c: run job i (a lors__parallel function; arg is the aug_t). */
void lors__aug_run_job(void *arg, size_t i);
/* With a->mu held: once the caller's stop flag is set, fail the augment with LORS_E_STOPPED
 * (unless it failed already); 1 if it is stopped. */
int lors__aug_stopped_locked(aug_t *a);

#endif
