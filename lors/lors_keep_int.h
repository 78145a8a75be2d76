/* lors_keep_int.h -- internal to liblors: the keeper's pass (lors_keep_engine.c) and its repair of
 * erasure-coded files (lors_keep_ec.c).
 *
 * The pass holds one picture of the file: per mapping its probe, whether it sits on a
 * leaving depot and whether this pass made it.  The arrays grow with the mappings the repair
 * appends (lors__keep_grow) and shrink with the prune.
 */
#ifndef LNS_LORS_KEEP_INT_H
#define LNS_LORS_KEEP_INT_H

#include <stddef.h>

#include "lors.h"
#include "lors_ec_int.h"
#include "lors_lease_int.h"

typedef struct keep {
    const lors_keep_opts_t *o;
    xnd_t *x;
    lors_keep_report_t *rep;
    lors_probe_t *pr;         /* per mapping */
    unsigned char *leaving;   /* per mapping: on a leaving depot */
    unsigned char *fresh;     /* per mapping: made by this pass */
    size_t n;                 /* entries in the three arrays */
    lors_depot_t *targets;    /* o->depots without the leaving ones */
    size_t ntargets;
    int min_live;             /* repair below this (copies or pieces) */
    int ec_present;
    lors__ec_t ec;
    lors__alive_t *alive;     /* keeps this pass's new allocations alive (NULL: none) */
} keep_t;

/* lors_keep's pass; prune_dead 0 leaves every mapping in x (lors_augment of an erasure-coded
 * file: new pieces appended after x's mappings, nothing taken out). */
int lors__keep_pass(const lors_keep_opts_t *o, xnd_t *x, lors_keep_report_t *report,
                    int prune_dead);
int lors__keep_grow(keep_t *k);
int lors__keep_counts(const keep_t *k, size_t i);
int lors__keep_stopped(const keep_t *k);
/* Rebuild the missing columns of every stripe group below min_live; LORS_OK also when some
 * could not be rebuilt (the risks say so), else LORS_E_STOPPED, LORS_E_NOMEM, LORS_E_WRITE. */
int lors__keep_ec(keep_t *k);

#endif
