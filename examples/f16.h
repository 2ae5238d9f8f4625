/*
 * f16.h — IEEE half-precision and bfloat16 conversions (round to nearest
 * even; NaN stays NaN), so that the examples, the GPU tests and the fake
 * driver need no compiler support for _Float16 or __bf16. One copy for all
 * of them: tests/gpu reaches it through its include path.
 */
#ifndef TILEC_EXAMPLES_F16_H
#define TILEC_EXAMPLES_F16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xffu);
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u)); /* inf, nan */
    exp = exp - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u); /* overflow: inf */
    if (exp <= 0) {                        /* subnormal or zero */
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp), h = mant >> shift, rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* may carry into the exponent: still right (up to inf) */
    return (uint16_t)(sign | h);
}

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    x = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112u) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* nan: keep it quiet, not inf */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

#endif
