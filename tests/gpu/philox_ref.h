/*
 * philox_ref.h — the tile language's randint, rand and randn computed on
 * the CPU, written from Triton's algorithm (python/triton/language/random.py;
 * frontend/builtins_random.c says it in full): the reference of the unit
 * suite `random` (which checks the front end's expansion of the builtins)
 * and of tests/gpu/test_random_debug.c.
 *
 * Philox4x32-10 itself is checked against the Random123 paper's
 * known-answer vectors (philox_ref_kat).
 */
#ifndef TILEC_PHILOX_REF_H
#define TILEC_PHILOX_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* Ten rounds of Philox4x32 on counter c with key (k0, k1), in place. */
static inline void philox_ref(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* Random123's known answers for philox4x32_10: true if philox_ref gives
 * them. */
static inline bool philox_ref_kat(void) {
    static const uint32_t kat[3][10] = {
        /* counter, key, result */
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        uint32_t c[4] = {kat[t][0], kat[t][1], kat[t][2], kat[t][3]};
        philox_ref(c, kat[t][4], kat[t][5]);
        for (int i = 0; i < 4; i++)
            if (c[i] != kat[t][6 + i])
                return false;
    }
    return true;
}

/* The four words for (seed, offset): the seed sign-extended to 64 bits
 * gives the key, the offset (of `offset_bits` bits, sign-extended) the
 * counter: its low word, and its high word when it has 64 bits. */
static inline void philox_ref_draw(int64_t seed, int64_t offset, int offset_bits, uint32_t out[4]) {
    uint64_t s = (uint64_t)seed, o = (uint64_t)offset;
    out[0] = (uint32_t)o;
    out[1] = offset_bits == 64 ? (uint32_t)(o >> 32) : 0;
    out[2] = out[3] = 0;
    philox_ref(out, (uint32_t)s, (uint32_t)(s >> 32));
}

/* A word as a uniform f32 in [0, 1): exactly what the GPU computes. */
static inline float philox_ref_uniform(uint32_t w) {
    int32_t x = (int32_t)w;
    if (x < 0)
        x = ~x;
    volatile float f = (float)x; /* one rounding each, in f32 */
    return f * 4.6566127342e-10f;
}

static inline int32_t ref_randint(int64_t seed, int64_t offset, int offset_bits) {
    uint32_t w[4];
    philox_ref_draw(seed, offset, offset_bits, w);
    return (int32_t)w[0];
}

static inline float ref_rand(int64_t seed, int64_t offset, int offset_bits) {
    uint32_t w[4];
    philox_ref_draw(seed, offset, offset_bits, w);
    return philox_ref_uniform(w[0]);
}

/* Triton's Box-Muller of the two f32 uniforms, the rest in double: the
 * value an exact implementation would round. */
static inline double ref_randn(int64_t seed, int64_t offset, int offset_bits) {
    uint32_t w[4];
    philox_ref_draw(seed, offset, offset_bits, w);
    float u1 = philox_ref_uniform(w[0]), u2 = philox_ref_uniform(w[1]);
    if (u1 < 1e-7f)
        u1 = 1e-7f;
    return sqrt(-2.0 * log((double)u1)) * cos(6.283185307179586 * (double)u2);
}

#endif
