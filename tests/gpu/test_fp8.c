/*
 * test_fp8.c — the 8-bit floats f8e4m3 (OCP E4M3FN) and f8e5m2 on the GPU:
 * kernels compiled from source strings with tc_jit, each checked against a
 * C reference written from the formats' definitions (not from the
 * compiler's code).
 *
 *     test_fp8
 *
 * Conversions, bit exact: to fp8 from f32 (every value of either fp8
 * format, the midpoints between neighbouring codes and the floats on either
 * side of them, zeros, infinities, NaNs, f32 subnormals, values past the
 * maximum, 2^20 random bit patterns and 2^18 random values in fp8's range),
 * from f64 (values a hair off the midpoints, which rounding twice would get
 * wrong), from every f16 and every bf16, from integers; and from fp8 (all
 * 256 codes of each) to f32, f64, f16, bf16, i32, i8, bool and the other
 * fp8 format. Conversions to fp8 round to nearest even and saturate to the
 * finite maximum (infinities too); NaN stays a NaN (any NaN code passes).
 * Sizes are odd (masked tails) and each kernel is specialized for 16-byte
 * aligned pointers (vector accesses) and run again with fp8 pointers one
 * byte off (scalar accesses).
 *
 * Memory: a 2-D fp8 tile at a time from a strided matrix of odd size, with
 * a mask, a runtime fp8 `other` (a scalar parameter), `where` with an fp8
 * literal and a conversion to the other format; gaps and guards must stay
 * 0xFF.
 *
 * dot: fp8 operands (e4m3, e5m2, mixed), quantized on the host, against a
 * float64 reference: one program's 32x32x32 to 128x128x64 (mma.sync, or
 * wgmma on sm_90a), with and without an accumulator, B row-major and
 * K-major; and a K loop over a 100 x 72 x 80 problem with masked edges.
 * The products of fp8 values are exact in f32: the tolerance (1e-4) only
 * allows for the f32 accumulation.
 *
 * Without a GPU every kernel is compiled to PTX for sm_90a (hardware
 * conversions) and sm_80 (the software ones), each assembled by ptxas, and
 * the program exits 77. On Hopper, tests/gpu/run.sh also runs it with
 * TILEC_ARCH=sm_90 and TILEC_ARCH=sm_80, the latter running the software
 * conversions on the GPU.
 */
#include "feature_harness.h"

/* ---- the kernels ---- */

static const char SRC_CAST[] =
    "kernel cast(T* out, const S* x, i32 n, constexpr dtype S, constexpr dtype T, constexpr i32 BLOCK = 512) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    store(out + i, T(load(x + i, m, 0)), m);\n"
    "}\n";

static const char SRC_TILE[] =
    "kernel tile2d(f8e5m2* out, const f8e4m3* x, i32 M, i32 N, i64 sx, i64 so, f8e4m3 fill,\n"
    "              constexpr i32 BM = 16, constexpr i32 BN = 64) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    let inb = (r[:, None] < M) & (c[None, :] < N);\n"
    "    let v = load(x + i64(r)[:, None] * sx + c[None, :], inb & (c[None, :] % 3 != 0), fill);\n"
    "    store(out + i64(r)[:, None] * so + c[None, :], f8e5m2(where(c[None, :] % 5 == 0, -2.5, v)), inb);\n"
    "}\n";

/* B is K x N, or with BT stored N x K and transposed as a tile (trans of
 * fp8 values); the accumulator is zeros or loaded. */
static const char SRC_DOT[] =
    "kernel dot8(f32* out, const A* a, const B* b, const f32* acc0, constexpr dtype A, constexpr dtype B,\n"
    "            constexpr i32 M, constexpr i32 N, constexpr i32 K, constexpr bool ACC, constexpr bool BT) {\n"
    "    let rows = arange(0, M)[:, None];\n"
    "    let cols = arange(0, N)[None, :];\n"
    "    let ks = arange(0, K);\n"
    "    let tb = BT ? trans(load(b + arange(0, N)[:, None] * K + ks[None, :])) : load(b + ks[:, None] * N + cols);\n"
    "    let init = ACC ? load(acc0 + rows * N + cols) : zeros([M, N], f32);\n"
    "    store(out + rows * N + cols, dot(load(a + rows * K + ks[None, :]), tb, init));\n"
    "}\n";

static const char SRC_MATMUL[] =
    "kernel mm8(f32* c, const f8e4m3* a, const f8e5m2* b, i32 M, i32 N, i32 K, constexpr i32 BM = 64,\n"
    "           constexpr i32 BN = 64, constexpr i32 BK = 32) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = program_id(1) * BN + arange(0, BN);\n"
    "    let rk = arange(0, BK);\n"
    "    var acc = zeros([BM, BN], f32);\n"
    "    for (k in range(0, K, BK)) {\n"
    "        let ka = k + rk;\n"
    "        let ta = load(a + i64(rm)[:, None] * K + ka[None, :], (rm[:, None] < M) & (ka[None, :] < K), 0);\n"
    "        let tb = load(b + i64(ka)[:, None] * N + rn[None, :], (ka[:, None] < K) & (rn[None, :] < N), 0);\n"
    "        acc = dot(ta, tb, acc);\n"
    "    }\n"
    "    store(c + i64(rm)[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N));\n"
    "}\n";

/* ---- the reference: the formats from their definitions ---- */

static bool is_fp8(tc_dtype t) {
    return t == TC_DTYPE_F8E4M3 || t == TC_DTYPE_F8E5M2;
}

static bool f8_is_nan(tc_dtype t, unsigned c) {
    return isnan(gt_f8_value(t, c & 0xFF));
}

/* ---- host buffers of any scalar type ---- */

static size_t dt_bytes(tc_dtype t) {
    return is_fp8(t) ? 1 : t == TC_DTYPE_I1 ? 1 : gt_dtype_bytes(t);
}

static const char *dt_name(tc_dtype t) {
    static const char *const names[] = {"i1",   "i8",  "i16", "i32",    "i64",   "f16",
                                        "bf16", "f32", "f64", "f8e4m3", "f8e5m2"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* Element i of a host buffer of t, exactly, as a double. */
static double dt_get(tc_dtype t, const void *p, size_t i) {
    switch (t) {
    case TC_DTYPE_I1: return ((const uint8_t *)p)[i];
    case TC_DTYPE_I8: return ((const int8_t *)p)[i];
    case TC_DTYPE_I32: return ((const int32_t *)p)[i];
    case TC_DTYPE_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case TC_DTYPE_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    case TC_DTYPE_F32: return ((const float *)p)[i];
    case TC_DTYPE_F64: return ((const double *)p)[i];
    default: return gt_f8_value(t, ((const uint8_t *)p)[i]);
    }
}

/* What a cast of v (a value of the source type) to t must give, as a
 * double; for fp8 the code (as a double too). */
static double dt_expect(tc_dtype t, double v) {
    double lim;
    switch (t) {
    case TC_DTYPE_I1: return v != 0 || isnan(v);
    case TC_DTYPE_I8: lim = 128; break;
    case TC_DTYPE_I32: lim = 2147483648.0; break;
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return gt_f8_encode(t, v);
    default: return v; /* every value of a narrower source is exact in f16, bf16, f32, f64 */
    }
    if (isnan(v)) /* float to int saturates, NaN gives 0 */
        return 0;
    double r = trunc(v);
    return r >= lim ? lim - 1 : r < -lim ? -lim : r;
}

/* Does element i of the output (type t) hold what converting v gives? */
static bool dt_check(tc_dtype t, const void *out, size_t i, double v) {
    double want = dt_expect(t, v);
    if (is_fp8(t)) {
        unsigned got = ((const uint8_t *)out)[i];
        return isnan(v) ? f8_is_nan(t, got) : got == (unsigned)want;
    }
    double got = dt_get(t, out, i);
    if (isnan(want))
        return isnan(got);
    return got == want &&
           (want != 0 || !signbit(got) == !signbit(want) || t == TC_DTYPE_I32 || t == TC_DTYPE_I8 || t == TC_DTYPE_I1);
}

/* Bits of an input that has them (f32 patterns, f16, bf16, fp8 codes). */
#define HAS_BITS ((uint64_t)1 << 32)

/* Writes one source element: its bits where it has them, else its value. */
static void dt_put(tc_dtype t, void *p, size_t i, double v, uint64_t bits) {
    if (t == TC_DTYPE_F32 && (bits & HAS_BITS)) {
        ((uint32_t *)p)[i] = (uint32_t)bits;
        return;
    }
    switch (t) {
    case TC_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TC_DTYPE_F16:
    case TC_DTYPE_BF16: ((uint16_t *)p)[i] = (uint16_t)bits; break;
    case TC_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case TC_DTYPE_F64: ((double *)p)[i] = v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)bits; break;
    }
}

static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- conversions ---- */

enum { MAX_INPUTS = (1 << 20) + (1 << 18) + 8192 };

/* The inputs of a cast from s: n values in *vals (doubles) or bits. */
static size_t cast_inputs(tc_dtype s, double *vals, uint64_t *bits) {
    size_t n = 0;
#define ADD(v) (vals[n] = (v), bits[n] = 0, n++)
#define ADD_F32_BITS(u) (vals[n] = f32_bits(u), bits[n] = (u) | HAS_BITS, n++)
    if (is_fp8(s) || s == TC_DTYPE_I8) { /* every code, five times over and three more: an odd count */
        for (unsigned r = 0; r < 5 * 256 + 3; r++) {
            bits[n] = r & 0xFF;
            vals[n++] = s == TC_DTYPE_I8 ? (double)(int8_t)(r & 0xFF) : gt_f8_value(s, r & 0xFF);
        }
        return n;
    }
    if (s == TC_DTYPE_F16 || s == TC_DTYPE_BF16) { /* every bit pattern */
        for (unsigned u = 0; u < 65536; u++) {
            bits[n] = u;
            vals[n++] = s == TC_DTYPE_F16 ? f16_to_f32((uint16_t)u) : bf16_to_f32((uint16_t)u);
        }
        ADD(0.0); /* and one more: an odd count */
        bits[n - 1] = 0;
        return n;
    }
    if (s == TC_DTYPE_I32) {
        static const double edges[] = {2147483647.0, -2147483648.0, 57344, 57345, 61439, 61440, 61441,    448,
                                       449,          464,           465,   479,   480,   481,   16777217, -16777217};
        for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
            ADD(edges[i]);
        for (int i = -70000; i <= 70000; i += 7)
            ADD(i);
        for (int i = 0; i < 4096; i++)
            ADD((double)(int32_t)gt_next());
        return n;
    }
    /* f32 and f64: every value of both formats, the midpoints between
     * neighbours and (f32) the floats beside them or (f64) values a hair
     * beside them, specials, and random ones */
    static const tc_dtype fmts[] = {TC_DTYPE_F8E4M3, TC_DTYPE_F8E5M2};
    for (int fi = 0; fi < 2; fi++)
        for (unsigned c = 0; c < 256; c++) {
            double v = gt_f8_value(fmts[fi], c), w = gt_f8_value(fmts[fi], (c & 0x80) | ((c + 1) & 0x7F));
            if (isnan(v))
                continue;
            ADD(v);
            if (isnan(w) || isinf(w) || (c & 0x7F) == 0x7F)
                continue;
            double mid = (v + w) / 2;
            ADD(mid);
            if (s == TC_DTYPE_F32) {
                ADD(nextafterf((float)mid, 0));
                ADD(nextafterf((float)mid, (float)w * 2));
            } else { /* below f32's resolution: f64 -> f32 -> fp8 rounding twice would tie */
                ADD(mid + fabs(mid) * 0x1p-40);
                ADD(mid - fabs(mid) * 0x1p-40);
            }
        }
    static const double specials[] = {0.0,    -0.0,    INFINITY,  -INFINITY, 448,     449,       464,   464.0001,
                                      480,    1e6,     57344,     61439,     61440,   61441,     1e10,  3e38,
                                      0x1p-9, 0x1p-10, 0x1.8p-10, 0x1p-16,   0x1p-17, 0x1.8p-17, 1e-30, -1e-30};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        ADD(specials[i]);
    ADD(NAN);
    ADD(-NAN);
    if (s == TC_DTYPE_F32) {
        static const uint32_t pats[] = {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x00000001u,
                                        0x807FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu};
        for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++)
            ADD_F32_BITS(pats[i]);
        for (int i = 0; i < (1 << 20); i++)
            ADD_F32_BITS((uint32_t)gt_next());
        for (int i = 0; i < (1 << 18); i++)
            ADD((gt_next() & 1 ? -1 : 1) * (double)(float)ldexp(1.0 + gt_uniform(), (int)(gt_next() % 40) - 22));
    } else {
        static const double wide[] = {1e300, -1e300, 1e-300, 1e39, 0x1p-149, 0x1p-160, 5e-324};
        for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
            ADD(wide[i]);
        for (int i = 0; i < (1 << 16); i++)
            ADD((gt_next() & 1 ? -1 : 1) * ldexp(1.0 + gt_uniform(), (int)(gt_next() % 40) - 22));
    }
#undef ADD
#undef ADD_F32_BITS
    if (n % 2 == 0)
        vals[n] = 1.0, bits[n++] = 0;
    return n;
}

/* One conversion from s to t over its inputs; `skew` puts the fp8 pointer
 * one byte past 16-byte alignment. */
static void fp8_cast_case(Ft *f, tc_dtype s, tc_dtype t, bool skew, double *vals, uint64_t *bits) {
    char label[64];
    snprintf(label, sizeof label, "cast %s -> %s%s", dt_name(s), dt_name(t), skew ? " (unaligned)" : "");
    tc_constexpr cx[] = {cx_dtype("S", s), cx_dtype("T", t)};
    size_t n = f->ctx ? cast_inputs(s, vals, bits) : 1;
    size_t sb = dt_bytes(s), tb = dt_bytes(t), xo = skew && is_fp8(s), oo = skew && is_fp8(t);
    Buf x = {0}, out = {0};
    if (f->ctx && (!buf_new(f, &x, (n + 1) * sb) || !buf_new(f, &out, (n + 1 + FGUARD) * tb))) {
        fail_case(label, "allocation failed");
        buf_free(f, &x);
        buf_free(f, &out);
        return;
    }
    CUdeviceptr xd = x.d + xo * sb, od = out.d + oo * tb;
    int32_t nn = (int32_t)n;
    void *args[] = {&od, &xd, &nn};
    tc_kernel *k = get_for(f, label, SRC_CAST, "cast", cx, 2, 4, f->ctx ? args : NULL, f->ctx ? 3 : 0);
    if (!k) {
        if (f->ctx) {
            buf_free(f, &x);
            buf_free(f, &out);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        dt_put(s, x.h + xo * sb, i, vals[i], bits[i]);
    if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){(unsigned)((n + 511) / 512), 1, 1}, args, 3) &&
        buf_down(f, &out)) {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) {
            double v = dt_get(s, x.h + xo * sb, i);
            if (!dt_check(t, out.h + oo * tb, i, v) && wrong++ < 5) {
                if (is_fp8(t))
                    printf("  %s: input %zu = %a: got 0x%02x, want 0x%02x\n", label, i, v, out.h[oo + i],
                           (unsigned)dt_expect(t, v));
                else
                    printf("  %s: input %zu = %a: got %a, want %a\n", label, i, v, dt_get(t, out.h, i),
                           dt_expect(t, v));
            }
        }
        size_t before = oo ? (out.h[0] != 0xFF) : 0;
        report(label, TC_DTYPE_I32, (double)wrong / (double)n, 1e-12, before + buf_clobbered(&out, (n + oo) * tb, tb));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &out);
}

static void fp8_casts(Ft *f) {
    static const tc_dtype fp8[] = {TC_DTYPE_F8E4M3, TC_DTYPE_F8E5M2};
    static const tc_dtype to[] = {TC_DTYPE_F32, TC_DTYPE_F64, TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_I32, TC_DTYPE_I8};
    static const tc_dtype from[] = {TC_DTYPE_F32, TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_I32, TC_DTYPE_I8};
    double *vals = f->ctx ? malloc(sizeof(double) * MAX_INPUTS) : NULL;
    uint64_t *bits = f->ctx ? malloc(sizeof(uint64_t) * MAX_INPUTS) : NULL;
    if (f->ctx && (!vals || !bits)) {
        fail_case("casts", "allocation failed");
        free(vals);
        free(bits);
        return;
    }
    for (int i = 0; i < 2; i++) {
        tc_dtype q = fp8[i];
        fp8_cast_case(f, TC_DTYPE_F32, q, false, vals, bits);
        fp8_cast_case(f, TC_DTYPE_F32, q, true, vals, bits);
        fp8_cast_case(f, TC_DTYPE_F64, q, false, vals, bits);
        for (size_t j = 0; j < sizeof from / sizeof from[0]; j++)
            if (from[j] != TC_DTYPE_F32)
                fp8_cast_case(f, from[j], q, false, vals, bits);
        fp8_cast_case(f, fp8[1 - i], q, false, vals, bits);
        for (size_t j = 0; j < sizeof to / sizeof to[0]; j++)
            fp8_cast_case(f, q, to[j], false, vals, bits);
        fp8_cast_case(f, q, TC_DTYPE_F32, true, vals, bits);
        fp8_cast_case(f, q, TC_DTYPE_I1, false, vals, bits);
    }
    free(vals);
    free(bits);
}

/* ---- a 2-D tile ---- */

static void fp8_tile(Ft *f) {
    const char *label = "tile 37x45 of 40x64 (mask, other, where)";
    const int M = 37, N = 45, SX = 64, SO = 61, BM = 16, BN = 64;
    tc_kernel *k = get(f, label, SRC_TILE, "tile2d", NULL, 0, 4);
    if (!k)
        return;
    Buf x, out;
    if (!buf_new(f, &x, (size_t)40 * SX) || !buf_new(f, &out, (size_t)(M * SO + FGUARD))) {
        fail_case(label, "allocation failed");
        return;
    }
    for (size_t i = 0; i < x.bytes; i++)
        x.h[i] = (uint8_t)gt_next();
    uint8_t fill = 0x3A; /* 1.25 in e4m3 */
    int32_t mm = M, nn = N;
    int64_t sx = SX, so = SO;
    void *args[] = {&out.d, &x.d, &mm, &nn, &sx, &so, &fill};
    if (buf_up(f, &x) && buf_poison(f, &out) &&
        launch(f, k, (tc_dim3){(M + BM - 1) / BM, (N + BN - 1) / BN, 1}, args, 7) && buf_down(f, &out)) {
        size_t wrong = 0, gaps = 0;
        for (int r = 0; r < M; r++)
            for (int c = 0; c < SO; c++) {
                unsigned got = out.h[r * SO + c];
                if (c >= N) { /* the gap after each row */
                    gaps += got != 0xFF;
                    continue;
                }
                double v = c % 5 == 0 ? -2.5 : gt_f8_value(TC_DTYPE_F8E4M3, c % 3 ? x.h[r * SX + c] : fill);
                unsigned want = gt_f8_encode(TC_DTYPE_F8E5M2, v);
                wrong += isnan(v) ? !f8_is_nan(TC_DTYPE_F8E5M2, got) : got != want;
            }
        report(label, TC_DTYPE_I32, (double)wrong / (M * N), 1e-12, gaps + buf_clobbered(&out, (size_t)M * SO, 1));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &out);
}

/* ---- dot ---- */

/* Products of fp8 values are exact in f32 (and their f16 operands are
 * exact); only the f32 accumulation rounds, K terms of it: well below this
 * bound, which any wrong element or fragment exceeds by orders. */
#define DOT_TOL 1e-4

/* n random values of fp8 type t (normal, times `scale`, a few at the
 * maximum), quantized: the codes go to buf, their values to ref. */
static void fp8_fill(tc_dtype t, uint8_t *buf, double *ref, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) {
        double v = gt_uniform() < 0.01 ? (gt_next() & 1 ? 1 : -1) * gt_f8_max(t) : gt_normal() * scale;
        buf[i] = (uint8_t)gt_f8_encode(t, v);
        ref[i] = gt_f8_value(t, buf[i]);
    }
}

/* A dot case's buffers: A (M x K codes) and B (K x N) with their values,
 * an f32 accumulator (M x N) and the output (M x N f32, guarded). */
typedef struct DotBufs {
    Buf a, b, a0, out;
    double *ra, *rb;
} DotBufs;

static void dot_free(Ft *f, DotBufs *d) {
    free(d->ra);
    free(d->rb);
    buf_free(f, &d->a);
    buf_free(f, &d->b);
    buf_free(f, &d->a0);
    buf_free(f, &d->out);
}

/* Allocates and fills the buffers (A of type ta, B of tb); false after
 * reporting a failure. */
static bool dot_alloc(Ft *f, DotBufs *d, const char *label, int M, int N, int K, tc_dtype ta, tc_dtype tb) {
    memset(d, 0, sizeof *d);
    d->ra = malloc(sizeof(double) * (size_t)M * K);
    d->rb = malloc(sizeof(double) * (size_t)K * N);
    if (!d->ra || !d->rb || !buf_new(f, &d->a, (size_t)M * K) || !buf_new(f, &d->b, (size_t)K * N) ||
        !buf_new(f, &d->a0, (size_t)M * N * 4) || !buf_new(f, &d->out, (size_t)(M * N + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        dot_free(f, d);
        return false;
    }
    fp8_fill(ta, d->a.h, d->ra, (size_t)M * K, ta == TC_DTYPE_F8E4M3 ? 4.0 : 64.0);
    fp8_fill(tb, d->b.h, d->rb, (size_t)K * N, tb == TC_DTYPE_F8E4M3 ? 4.0 : 64.0);
    for (int i = 0; i < M * N; i++)
        F32(d->a0)[i] = (float)(gt_normal() * 1000);
    return true;
}

/* Runs the kernel and checks its output against A B (B stored N x K when
 * bt), plus the accumulator when acc; frees the buffers. */
static void dot_run(Ft *f, DotBufs *d, const char *label, tc_kernel *k, tc_dim3 grid, void **args, size_t nargs, int M,
                    int N, int K, bool bt, bool acc) {
    if (buf_up(f, &d->a) && buf_up(f, &d->b) && buf_up(f, &d->a0) && buf_poison(f, &d->out) &&
        launch(f, k, grid, args, nargs) && buf_down(f, &d->out)) {
        GtErr e = {0};
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                double s = acc ? F32(d->a0)[r * N + c] : 0;
                for (int kk = 0; kk < K; kk++)
                    s += d->ra[r * K + kk] * d->rb[bt ? c * K + kk : kk * N + c];
                gt_err_add(&e, F32(d->out)[r * N + c], s);
            }
        report(label, TC_DTYPE_F32, gt_err_value(&e), DOT_TOL, buf_clobbered(&d->out, (size_t)M * N * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    dot_free(f, d);
}

static void fp8_dot(Ft *f) {
    static const struct {
        int m, n, k, warps;
    } shapes[] = {{32, 32, 32, 4}, {64, 64, 64, 4}, {128, 128, 64, 4}, {64, 128, 32, 4}, {128, 64, 128, 8}};
    static const tc_dtype pairs[][2] = {
        {TC_DTYPE_F8E4M3, TC_DTYPE_F8E4M3}, {TC_DTYPE_F8E5M2, TC_DTYPE_F8E5M2}, {TC_DTYPE_F8E4M3, TC_DTYPE_F8E5M2}};
    int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    for (int ci = 0; ci < nshapes * 3 * 2; ci++) {
        int si = ci / 6, pi = ci / 2 % 3, acc = ci % 2, bt = (si + pi) % 2;
        const int M = shapes[si].m, N = shapes[si].n, K = shapes[si].k;
        tc_dtype ta = pairs[pi][0], tb = pairs[pi][1];
        char label[96];
        snprintf(label, sizeof label, "dot %dx%dx%d w%d %s x %s%s%s", M, N, K, shapes[si].warps, dt_name(ta),
                 dt_name(tb), acc ? " + acc" : "", bt ? " B k-major" : "");
        tc_constexpr cx[] = {cx_dtype("A", ta), cx_dtype("B", tb),   cx_int("M", M),   cx_int("N", N),
                             cx_int("K", K),    cx_bool("ACC", acc), cx_bool("BT", bt)};
        tc_kernel *k = get(f, label, SRC_DOT, "dot8", cx, 7, shapes[si].warps);
        DotBufs d;
        if (!k || !dot_alloc(f, &d, label, M, N, K, ta, tb))
            continue;
        void *args[] = {&d.out.d, &d.a.d, &d.b.d, &d.a0.d};
        dot_run(f, &d, label, k, (tc_dim3){1, 1, 1}, args, 4, M, N, K, bt, acc);
    }
}

/* A K loop with masked edges: 100 x 72 x 80 in 64 x 64 x 32 blocks. */
static void fp8_matmul(Ft *f) {
    const char *label = "matmul 100x72x80 e4m3 x e5m2";
    const int M = 100, N = 72, K = 80, BM = 64, BN = 64;
    tc_kernel *k = get(f, label, SRC_MATMUL, "mm8", NULL, 0, 4);
    DotBufs d;
    if (!k || !dot_alloc(f, &d, label, M, N, K, TC_DTYPE_F8E4M3, TC_DTYPE_F8E5M2))
        return;
    int32_t mm = M, nn = N, kk = K;
    void *args[] = {&d.out.d, &d.a.d, &d.b.d, &mm, &nn, &kk};
    dot_run(f, &d, label, k, (tc_dim3){(M + BM - 1) / BM, (N + BN - 1) / BN, 1}, args, 6, M, N, K, false, false);
}

static void run_all(Ft *f) {
    fp8_casts(f);
    fp8_tile(f);
    fp8_dot(f);
    fp8_matmul(f);
}

int main(void) {
    static const char *const archs[] = {"sm_90a", "sm_80"};
    return ft_main("test_fp8", "fp8", archs, 2, run_all);
}
