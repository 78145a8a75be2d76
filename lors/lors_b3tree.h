/* lors_b3tree.h -- liblors internal: BLAKE3's tree at 16 KiB, for an outboard beside the data.
 *
 * BLAKE3 hashes 1 KiB chunks and joins their chaining values (CVs) pairwise, the left side
 * always the largest power of two chunks less than the whole.  So every aligned 16 KiB group
 * of a checksum block (the last may be shorter) is a subtree of the block's own hash, and
 * the block's digest follows from its groups' 32-byte CVs alone.  An upload stores those CVs
 * after a mapping's data (the outboard: 2 KiB per MiB); a reader that wants 4 KiB loads the
 * 16 KiB group around it and the block's CVs, checks the group against its CV and the CVs
 * against the block's digest in the exNode, and never loads the rest of the block.
 *
 * The groups are hashed with the reference implementation's own SIMD routines (16 chunks
 * side by side, parents as wide), at the speed of its one-shot hasher. */
#ifndef LNS_LORS_B3TREE_H
#define LNS_LORS_B3TREE_H

#include <stddef.h>
#include <stdint.h>

#define LORS_B3_GROUP 16384 /* bytes under one CV of the outboard */
#define LORS_B3_CV 32

/* Groups of a checksum block of len bytes; a block of one group has no outboard CVs. */
int64_t lors__b3_groups(int64_t len);
/* Outboard bytes of a mapping of len bytes in checksum blocks of bs: the CVs of each block of
 * more than one group, block after block (a block of one group has none). */
int64_t lors__b3_outboard_len(int64_t len, int64_t bs);
/* The CVs (non-root) of the groups of len bytes at p, which start at group first of their
 * block: full groups, the last one possibly shorter.  out holds lors__b3_groups(len) CVs. */
void lors__b3_group_cvs(const unsigned char *p, size_t len, uint64_t first,
                        unsigned char (*out)[LORS_B3_CV]);
/* The block's BLAKE3 digest from its n >= 2 group CVs. */
void lors__b3_root(const unsigned char (*cvs)[LORS_B3_CV], size_t n,
                   unsigned char out[LORS_B3_CV]);
/* The digest of a block of at most one group (len <= LORS_B3_GROUP), hashed whole. */
void lors__b3_small(const unsigned char *p, size_t len, unsigned char out[LORS_B3_CV]);

/* Streaming: digests and the outboard of consecutive blocks of bs bytes, from pieces of any
 * size.  The first group of each block waits in the buffer until a byte after it comes: a
 * block of one group is hashed whole as a root. */
typedef struct lors_b3s {
    int64_t bs;
    int64_t in_block;                    /* bytes of the current block fed */
    unsigned char gbuf[LORS_B3_GROUP];   /* the group being gathered */
    size_t glen;
    unsigned char (*cvs)[LORS_B3_CV];    /* the current block's group CVs so far */
    size_t ncvs, cvcap;
    unsigned char *ob;                   /* outboard bytes of the blocks ended */
    size_t oblen, obcap;
} lors_b3s_t;

void lors__b3s_init(lors_b3s_t *s, int64_t bs);
/* 0, or -1 when out of memory. */
int lors__b3s_update(lors_b3s_t *s, const void *data, size_t len,
                     int (*digest)(void *arg, const unsigned char d[LORS_B3_CV]), void *arg);
/* End the current block (if it holds a byte): its digest to digest, its CVs to the outboard. */
int lors__b3s_end(lors_b3s_t *s, int (*digest)(void *arg, const unsigned char d[LORS_B3_CV]),
                  void *arg);
void lors__b3s_free(lors_b3s_t *s);

#endif
