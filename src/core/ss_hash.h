/* The 64-bit FNV-1a hash, the one hash of bytes the project uses where it needs a digest or a
 * stable key (trace digests, workload streams, the KV pool's model keys, capacity's inputs).
 * Not for tables of ids (gmg/gmg_idtab.h mixes those) nor for anything cryptographic. */
#ifndef SS_CORE_SS_HASH_H
#define SS_CORE_SS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a offset basis: the hash of no bytes. */
#define SS_FNV1A_OFFSET UINT64_C(0xcbf29ce484222325)

/* h advanced over n bytes at p (borrowed). */
static inline uint64_t ss_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#endif
