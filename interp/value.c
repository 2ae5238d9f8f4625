/*
 * value.c — the interpreter's values, and the conversions of one element:
 * rounding to a float type, wrapping to an integer width, the memory image
 * of each scalar type, and casts with the generated code's rules
 * (codegen/lower_math.c, cg_cast).
 */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

IVal *ival_new(Run *r, bool fl, int64_t n) {
    IVal *v;
    if (n == 1 && r->free_scalars) {
        v = r->free_scalars;
        r->free_scalars = (IVal *)(void *)v->i;
    } else {
        v = malloc(sizeof *v);
        if (!v) {
            interp_fail(r, RUN_OOM, NULL, "out of memory for a value");
            return NULL;
        }
    }
    v->refs = 1;
    v->fl = fl;
    v->n = n;
    if (n == 1) {
        v->i = &v->one.i1;
        return v;
    }
    v->i = NULL;
    for (int s = r->num_spare - 1; s >= 0; s--)
        if (r->spare[s].n == n) {
            v->i = r->spare[s].data;
            r->spare[s] = r->spare[--r->num_spare];
            break;
        }
    if (!v->i)
        v->i = malloc((size_t)n * sizeof(int64_t));
    if (!v->i) {
        free(v);
        interp_fail(r, RUN_OOM, NULL, "out of memory for a tile of %lld elements", (long long)n);
        return NULL;
    }
    return v;
}

IVal *ival_retain(IVal *v) {
    if (v)
        v->refs++;
    return v;
}

void ival_release(Run *r, IVal *v) {
    if (!v || --v->refs > 0)
        return;
    if (v->n == 1) {
        v->i = (int64_t *)(void *)r->free_scalars;
        r->free_scalars = v;
        return;
    }
    if (r->num_spare < RUN_SPARE) {
        r->spare[r->num_spare].n = v->n;
        r->spare[r->num_spare++].data = v->i;
    } else {
        free(v->i);
    }
    free(v);
}

void ival_free_cache(Run *r) {
    while (r->num_spare)
        free(r->spare[--r->num_spare].data);
    while (r->free_scalars) {
        IVal *v = r->free_scalars;
        r->free_scalars = (IVal *)(void *)v->i;
        free(v);
    }
}

IVal *interp_get(Run *r, const IrValue *v) {
    return r->slots[v->id];
}

void interp_set(Run *r, const IrValue *v, IVal *x) {
    IVal *old = r->slots[v->id];
    r->slots[v->id] = x;
    ival_release(r, old);
}

/* ---- one element ---- */

bool interp_kind_is_float(IrTypeKind k) {
    switch (k) {
    case IR_F16:
    case IR_BF16:
    case IR_F32:
    case IR_F64:
    case IR_F8E4M3:
    case IR_F8E5M2: return true;
    default: return false;
    }
}

/* f32 bits -> f16 bits, rounded to nearest even (overflow: infinity). */
static uint16_t f32_to_f16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
    if (ax >= 0x477ff000u) /* rounds to 65536 or more */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal f16 (or zero) */
        if (ax < 0x33000000u) /* below half the smallest subnormal */
            return (uint16_t)sign;
        int e = (int)(ax >> 23);
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        int shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((ax - 0x38000000u) >> 13), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1)))
        q++;
    return (uint16_t)(sign | q);
}

static float f16_bits_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f)
        x = sign | 0x7f800000u | (m << 13);
    else if (e)
        x = sign | ((e + 112) << 23) | (m << 13);
    else if (!m)
        x = sign;
    else { /* subnormal: m * 2^-24 */
        float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* a quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_bits_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

double interp_round_slow(IrTypeKind k, double v) {
    switch (k) {
    case IR_F32: return (double)(float)v;
    case IR_F16: {
        float f = (float)v;
        if ((double)f == v || isnan(v)) /* one rounding: exact through f32 */
            return f16_bits_to_f32(f32_to_f16_bits(f));
        return ir_float_round(IR_F16, v);
    }
    case IR_BF16: {
        float f = (float)v;
        if ((double)f == v || isnan(v))
            return bf16_bits_to_f32(f32_to_bf16_bits(f));
        return ir_float_round(IR_BF16, v);
    }
    case IR_F8E4M3:
    case IR_F8E5M2: return ir_f8_value(k, ir_f8_bits(k, v));
    default: return v;
    }
}

int64_t interp_wrap(IrTypeKind k, int64_t v) {
    switch (k) {
    case IR_I1: return v & 1;
    case IR_I8: return (int8_t)v;
    case IR_I16: return (int16_t)v;
    case IR_I32: return (int32_t)v;
    default: return v;
    }
}

void interp_encode(IrTypeKind k, const IVal *v, int64_t i, void *dst) {
    switch (k) {
    case IR_I1: *(uint8_t *)dst = (uint8_t)(v->i[i] & 1); break;
    case IR_I8: *(int8_t *)dst = (int8_t)v->i[i]; break;
    case IR_I16: {
        int16_t x = (int16_t)v->i[i];
        memcpy(dst, &x, 2);
        break;
    }
    case IR_I32: {
        int32_t x = (int32_t)v->i[i];
        memcpy(dst, &x, 4);
        break;
    }
    case IR_I64:
    case IR_PTR: memcpy(dst, &v->i[i], 8); break;
    case IR_F16: {
        uint16_t h = f32_to_f16_bits((float)v->f[i]);
        memcpy(dst, &h, 2);
        break;
    }
    case IR_BF16: {
        uint16_t h = f32_to_bf16_bits((float)v->f[i]);
        memcpy(dst, &h, 2);
        break;
    }
    case IR_F32: {
        float x = (float)v->f[i];
        memcpy(dst, &x, 4);
        break;
    }
    case IR_F64: memcpy(dst, &v->f[i], 8); break;
    case IR_F8E4M3:
    case IR_F8E5M2: *(uint8_t *)dst = ir_f8_bits(k, v->f[i]); break;
    default: break;
    }
}

void interp_decode(IrTypeKind k, const void *src, IVal *v, int64_t i) {
    switch (k) {
    case IR_I1: v->i[i] = *(const uint8_t *)src != 0; break;
    case IR_I8: v->i[i] = *(const int8_t *)src; break;
    case IR_I16: {
        int16_t x;
        memcpy(&x, src, 2);
        v->i[i] = x;
        break;
    }
    case IR_I32: {
        int32_t x;
        memcpy(&x, src, 4);
        v->i[i] = x;
        break;
    }
    case IR_I64:
    case IR_PTR: memcpy(&v->i[i], src, 8); break;
    case IR_F16: {
        uint16_t h;
        memcpy(&h, src, 2);
        v->f[i] = f16_bits_to_f32(h);
        break;
    }
    case IR_BF16: {
        uint16_t h;
        memcpy(&h, src, 2);
        v->f[i] = bf16_bits_to_f32(h);
        break;
    }
    case IR_F32: {
        float x;
        memcpy(&x, src, 4);
        v->f[i] = x;
        break;
    }
    case IR_F64: memcpy(&v->f[i], src, 8); break;
    case IR_F8E4M3:
    case IR_F8E5M2: v->f[i] = ir_f8_value(k, *(const uint8_t *)src); break;
    default: break;
    }
}

int interp_kind_bits(IrTypeKind k) {
    switch (k) {
    case IR_I1: return 1;
    case IR_I8: return 8;
    case IR_I16: return 16;
    case IR_I32: return 32;
    default: return 64;
    }
}

/* fptosi.sat: NaN gives 0, values past the range its end. */
static int64_t float_to_int(double v, IrTypeKind to) {
    if (isnan(v))
        return 0;
    int bits = interp_kind_bits(to);
    double hi = ldexp(1.0, bits - 1), lo = -hi;
    if (v >= hi)
        return bits == 64 ? INT64_MAX : (int64_t)hi - 1;
    if (v <= lo)
        return bits == 64 ? INT64_MIN : (int64_t)lo;
    return (int64_t)v; /* truncates toward zero */
}

void interp_cast(IrTypeKind from, const IVal *x, int64_t xi, IrTypeKind to, IVal *out, int64_t oi) {
    bool ff = interp_kind_is_float(from), tf = interp_kind_is_float(to);
    if (to == IR_I1) {
        out->i[oi] = ff ? x->f[xi] != 0 || isnan(x->f[xi]) : x->i[xi] != 0;
        return;
    }
    if (!ff && !tf) {
        out->i[oi] = interp_wrap(to, x->i[xi]); /* i1 is 0 or 1: zero-extended */
        return;
    }
    if (!ff && tf) {
        /* integers convert to f32 first (NVPTX does), then to the type */
        double d = (double)x->i[xi];
        if (to == IR_F64)
            out->f[oi] = d;
        else
            out->f[oi] = interp_round(to, (double)(float)d);
        return;
    }
    if (ff && !tf) {
        out->i[oi] = float_to_int(x->f[xi], to);
        return;
    }
    out->f[oi] = interp_round(to, x->f[xi]);
}

void interp_cast_all(IrTypeKind from, const IVal *x, IrTypeKind to, IVal *out) {
    int64_t n = out->n;
    bool scalar = x->n == 1;
    if (from == IR_F32 && (to == IR_F16 || to == IR_BF16)) {
        for (int64_t i = 0; i < n; i++) {
            float f = (float)x->f[scalar ? 0 : i];
            out->f[i] = to == IR_F16 ? f16_bits_to_f32(f32_to_f16_bits(f)) : bf16_bits_to_f32(f32_to_bf16_bits(f));
        }
        return;
    }
    if ((from == IR_F16 || from == IR_BF16 || from == IR_F32) && (to == IR_F32 || to == IR_F64)) {
        for (int64_t i = 0; i < n; i++)
            out->f[i] = x->f[scalar ? 0 : i]; /* exact */
        return;
    }
    for (int64_t i = 0; i < n; i++)
        interp_cast(from, x, scalar ? 0 : i, to, out, i);
}
