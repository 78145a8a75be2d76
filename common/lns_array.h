/* lns_array.h -- growing a heap array by doubling.
 *
 * Every growable array in the tree is a pointer, a used count and a capacity; when it is full
 * the capacity doubles (from a first size of the caller's choosing) and the array is
 * reallocated.  lns_grow is that step, once: on failure nothing changes, so the caller still
 * owns (and frees) the old array.
 */
#ifndef LNS_ARRAY_H
#define LNS_ARRAY_H

#include <stddef.h>

/* Make room for at least `need` elements of `elsize` bytes in the array whose pointer is at
 * `arrp` (a T **, passed as void *) and whose capacity is *cap: when need > *cap, the
 * capacity doubles (from `first` if it was 0) until it holds need, and the array is
 * reallocated.  Returns 0, or -1 (out of memory or overflow: *arrp and *cap unchanged). */
int lns_grow(void *arrp, size_t *cap, size_t need, size_t elsize, size_t first);

#endif
