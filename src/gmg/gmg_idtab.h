/* gmg/ internal: the 64-bit mix the prefix cache and the KV pool hash with, and an index of
 * entry ids by 64-bit key, for the prefix cache's runs and the KV pool's blocks. Open
 * addressing with linear probing on the key's low bits (the keys are splitmix64 outputs,
 * already mixed), GMG_NONE in an empty slot, and backward-shift deletion,
 * which keeps probing correct without tombstones. The entries stay in the caller's array of
 * `stride`-byte records whose first member is their uint64_t key; the table has mask + 1 slots
 * and must keep at least one empty. */
#ifndef SS_GMG_GMG_IDTAB_H
#define SS_GMG_GMG_IDTAB_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64's finaliser: the hash behind the prefix cache's block keys and the KV pool's. */
static inline uint64_t gmg__mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t gmg__idtab_key(const void *ent, size_t stride, uint32_t e)
{
    return *(const uint64_t *)(const void *)((const char *)ent + (size_t)e * stride);
}

/* The entry with key, GMG_NONE (0xffffffff) if none. */
static inline uint32_t gmg__idtab_find(const uint32_t *tab, uint32_t mask, const void *ent,
                                       size_t stride, uint64_t key)
{
    for (uint32_t i = (uint32_t)key & mask;; i = (i + 1) & mask) {
        uint32_t e = tab[i];
        if (e == UINT32_MAX || gmg__idtab_key(ent, stride, e) == key)
            return e;
    }
}

/* Index entry e (its key not indexed yet). */
static inline void gmg__idtab_put(uint32_t *tab, uint32_t mask, const void *ent, size_t stride,
                                  uint32_t e)
{
    uint32_t i = (uint32_t)gmg__idtab_key(ent, stride, e) & mask;
    while (tab[i] != UINT32_MAX)
        i = (i + 1) & mask;
    tab[i] = e;
}

/* Unindex entry e (indexed): later entries of its probe run move back into the hole when their
 * home slot is not in (hole, slot], cyclically. */
static inline void gmg__idtab_remove(uint32_t *tab, uint32_t mask, const void *ent, size_t stride,
                                     uint32_t e)
{
    uint32_t i = (uint32_t)gmg__idtab_key(ent, stride, e) & mask;
    while (tab[i] != e)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        uint32_t f = tab[j];
        if (f == UINT32_MAX)
            break;
        uint32_t home = (uint32_t)gmg__idtab_key(ent, stride, f) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            tab[i] = f;
            i = j;
        }
    }
    tab[i] = UINT32_MAX;
}

#endif
