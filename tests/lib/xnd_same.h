/* xnd_same.h -- deep comparison of two exNode models, for the tests and the fuzz target that
 * check a parse -> write -> parse round trip gives back the same model.
 *
 * Header-only (static inline), so the fuzz target, built by fuzz.mk with clang apart from the
 * test library, includes it as the unit tests do. */
#ifndef XND_SAME_H
#define XND_SAME_H

#include <string.h>

#include "xnd.h"

static inline int same_meta(const xnd_meta_list_t *a, const xnd_meta_list_t *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const xnd_meta_t *x = &a->items[i], *y = &b->items[i];
        if (strcmp(x->name, y->name) || x->type != y->type || strcmp(x->text, y->text) ||
            x->i != y->i || x->d != y->d || !same_meta(&x->sub, &y->sub) ||
            (x->type_name && (!y->type_name || strcmp(x->type_name, y->type_name))))
            return 0;
    }
    return 1;
}

static inline int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static inline int same_func(const xnd_func_t *a, const xnd_func_t *b)
{
    if (!a || !b)
        return a == b;
    if (strcmp(a->name, b->name) || !same_meta(&a->args, &b->args) ||
        !same_meta(&a->meta, &b->meta) || a->nsubs != b->nsubs)
        return 0;
    for (size_t i = 0; i < a->nsubs; i++)
        if (!same_func(a->subs[i], b->subs[i]))
            return 0;
    return 1;
}

static inline int same_mapping(const xnd_mapping_t *a, const xnd_mapping_t *b)
{
    return a->exnode_offset == b->exnode_offset && a->logical_length == b->logical_length &&
           a->alloc_offset == b->alloc_offset && a->alloc_length == b->alloc_length &&
           a->e2e_blocksize == b->e2e_blocksize &&
           a->has_e2e_blocksize == b->has_e2e_blocksize && a->start.epoch == b->start.epoch &&
           a->end.epoch == b->end.epoch && same_str(a->start.text, b->start.text) &&
           same_str(a->end.text, b->end.text) && same_str(a->cap[0], b->cap[0]) &&
           same_str(a->cap[1], b->cap[1]) && same_str(a->cap[2], b->cap[2]) &&
           same_func(a->func, b->func) && same_meta(&a->meta, &b->meta);
}

static inline int same_model(const xnd_t *a, const xnd_t *b)
{
    if (!same_meta(&a->meta, &b->meta) || a->nmaps != b->nmaps)
        return 0;
    for (size_t i = 0; i < a->nmaps; i++)
        if (!same_mapping(a->maps[i], b->maps[i]))
            return 0;
    return 1;
}

#endif
