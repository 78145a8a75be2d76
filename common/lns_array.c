/* lns_array.c -- growing a heap array by doubling (see lns_array.h). */
#include "lns_array.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int lns_grow(void *arrp, size_t *cap, size_t need, size_t elsize, size_t first)
{
    if (need <= *cap)
        return 0;
    if (*cap > SIZE_MAX / 2)
        return -1;
    size_t nc = *cap ? *cap * 2 : first;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -1;
        nc *= 2;
    }
    if (elsize && nc > SIZE_MAX / elsize)
        return -1;
    void *old, *p;
    memcpy(&old, arrp, sizeof old);
    if (!(p = realloc(old, nc * elsize)))
        return -1;
    memcpy(arrp, &p, sizeof p);
    *cap = nc;
    return 0;
}
