/*
 * gpu_test.h — what the GPU tests share: the GPU or a loud skip, fresh
 * random inputs with a printed seed, storage types (f16.h converts), the error
 * metric, poisoned buffers, the row-wise tests' cases, and the one-line
 * summary that run.sh reads.
 *
 * The rules (docs/gpu.md, "Correctness"): every result is compared with a
 * float64 CPU reference computed from the same (rounded) inputs, by
 *
 *     err = ||out - ref|| / ||ref||     (||out - ref|| when ref is all zero)
 *
 * over the whole output of a case (for outputs that are a difference of
 * nearly equal terms, such as RMSNorm's dx with one column, the norm of the
 * larger term replaces ||ref|| when it is larger: gt_err_add_scaled), and must be below 1e-2 for f16/bf16
 * storage and 1e-5 for f32; a NaN anywhere fails. Outputs are filled with
 * 0xFF bytes (a NaN in f16, bf16 and f32) before every launch, so an element
 * the kernel forgot to write fails; elements it must not write (the gaps of
 * strided rows, the bytes around a buffer) must still hold 0xFF.
 *
 * Seeds: TILEC_TEST_SEED=N replays a run; otherwise the seed comes from the
 * clock and is printed first.
 *
 * Exit status: 0 all passed, 1 something failed, 77 no GPU (after printing
 * "SKIP: no GPU (reason)").
 */
#ifndef TILEC_GPU_TEST_H
#define TILEC_GPU_TEST_H

#include <tilec/runtime.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "f16.h" /* examples/f16.h: f16 and bf16 conversions */

/* ---- random numbers: xorshift64*, one stream per test program ---- */

static uint64_t gt_rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t gt_next(void) {
    uint64_t x = gt_rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    gt_rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1). */
static inline double gt_uniform(void) {
    return (double)(gt_next() >> 11) * (1.0 / 9007199254740992.0);
}

static inline double gt_uniform_in(double lo, double hi) {
    return lo + (hi - lo) * gt_uniform();
}

/* Standard normal (Box-Muller). */
static inline double gt_normal(void) {
    double u = gt_uniform(), v = gt_uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static inline uint64_t gt_seed_from_env_or_clock(void) {
    const char *s = getenv("TILEC_TEST_SEED");
    if (s && *s)
        return strtoull(s, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000003u ^ (uint64_t)ts.tv_nsec;
}

/* ---- storage types ---- */

/* ---- the 8-bit floats, from their definitions ---- */

/* The value of code c: E4M3FN (bias 7, no infinities, S.1111.111 NaN) or
 * E5M2 (bias 15, IEEE-like). */
static inline double gt_f8_value(tc_dtype t, unsigned c) {
    bool e4 = t == TC_DTYPE_F8E4M3;
    int mant = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    unsigned e = (c & 0x7F) >> mant, m = c & ((1u << mant) - 1);
    double s = c & 0x80 ? -1.0 : 1.0;
    if (e4 && (c & 0x7F) == 0x7F)
        return NAN;
    if (!e4 && e == 31)
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexp(m, 1 - bias - mant);
    return s * ldexp((double)((1u << mant) + m), (int)e - bias - mant);
}

static inline double gt_f8_max(tc_dtype t) {
    return t == TC_DTYPE_F8E4M3 ? 448.0 : 57344.0;
}

/* The code of x: round to nearest, ties to the even code, saturate past
 * the maximum (infinities too); NaN gives 0x7F (the comparison accepts any
 * NaN code for a NaN). By binary search over the non-negative finite codes. */
static inline unsigned gt_f8_encode(tc_dtype t, double x) {
    if (isnan(x))
        return 0x7F;
    unsigned sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x);
    if (a >= gt_f8_max(t))
        return sign | (t == TC_DTYPE_F8E4M3 ? 0x7E : 0x7B);
    unsigned lo = 0, hi = t == TC_DTYPE_F8E4M3 ? 0x7E : 0x7B; /* the largest code whose value is <= a */
    while (lo < hi) { /* values grow with the codes */
        unsigned mid = (lo + hi + 1) / 2;
        if (gt_f8_value(t, mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    double dl = a - gt_f8_value(t, lo), dh = gt_f8_value(t, lo + 1) - a;
    return sign | (dl < dh || (dl == dh && !(lo & 1)) ? lo : lo + 1);
}

static inline size_t gt_dtype_bytes(tc_dtype t) {
    switch (t) {
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return 1;
    case TC_DTYPE_F16:
    case TC_DTYPE_BF16:
    case TC_DTYPE_I16: return 2;
    case TC_DTYPE_F64:
    case TC_DTYPE_I64: return 8;
    case TC_DTYPE_I8:
    case TC_DTYPE_I1: return 1;
    default: return 4;
    }
}

static inline const char *gt_dtype_name(tc_dtype t) {
    switch (t) {
    case TC_DTYPE_F16: return "f16";
    case TC_DTYPE_BF16: return "bf16";
    case TC_DTYPE_F32: return "f32";
    case TC_DTYPE_I32: return "i32";
    case TC_DTYPE_F8E4M3: return "e4m3";
    case TC_DTYPE_F8E5M2: return "e5m2";
    default: return "?";
    }
}

/* The storage value nearest to v (f16, bf16 and f32 round to nearest even). */
static inline void gt_put(tc_dtype t, void *buf, size_t i, double v) {
    switch (t) {
    case TC_DTYPE_F16: ((uint16_t *)buf)[i] = f32_to_f16((float)v); break;
    case TC_DTYPE_BF16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case TC_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: ((uint8_t *)buf)[i] = (uint8_t)gt_f8_encode(t, v); break;
    default: ((float *)buf)[i] = (float)v; break;
    }
}

static inline double gt_get(tc_dtype t, const void *buf, size_t i) {
    switch (t) {
    case TC_DTYPE_F16: return f16_to_f32(((const uint16_t *)buf)[i]);
    case TC_DTYPE_BF16: return bf16_to_f32(((const uint16_t *)buf)[i]);
    case TC_DTYPE_I32: return ((const int32_t *)buf)[i];
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return gt_f8_value(t, ((const uint8_t *)buf)[i]);
    default: return ((const float *)buf)[i];
    }
}

/* Stores v rounded to the storage type and returns the rounded value: the
 * input the reference must use. */
static inline double gt_put_get(tc_dtype t, void *buf, size_t i, double v) {
    gt_put(t, buf, i, v);
    return gt_get(t, buf, i);
}

/* Still the 0xFF poison? */
static inline bool gt_is_poison(tc_dtype t, const void *buf, size_t i) {
    size_t b = gt_dtype_bytes(t);
    const unsigned char *p = (const unsigned char *)buf + i * b;
    for (size_t k = 0; k < b; k++)
        if (p[k] != 0xFF)
            return false;
    return true;
}

static inline double gt_tolerance(tc_dtype t) {
    return t == TC_DTYPE_F32 ? 1e-5 : 1e-2;
}

/* ---- the error metric ---- */

typedef struct GtErr {
    double diff2;  /* sum of (out - ref)^2 */
    double ref2;   /* sum of ref^2 */
    double scale2; /* sum of the squared scales given to gt_err_add_scaled */
    size_t nan;    /* outputs that are NaN or infinite where the reference is finite */
    size_t count;
} GtErr;

static inline void gt_err_add(GtErr *e, double out, double ref) {
    e->count++;
    if (!isfinite(out) && !(isinf(out) && out == ref)) {
        e->nan++;
        return;
    }
    double d = out - ref;
    e->diff2 += d * d;
    e->ref2 += ref * ref;
}

/* The same, for a ref computed as a difference whose larger term has the
 * magnitude |scale|: f32 arithmetic can only be accurate relative to that. */
static inline void gt_err_add_scaled(GtErr *e, double out, double ref, double scale) {
    gt_err_add(e, out, ref);
    e->scale2 += scale * scale;
}

/* ||out - ref|| / max(||ref||, ||scale||), or ||out - ref|| when both are
 * zero; NaN if any output was NaN. */
static inline double gt_err_value(const GtErr *e) {
    if (e->nan)
        return NAN;
    double den = e->ref2 > e->scale2 ? e->ref2 : e->scale2;
    return den > 0 ? sqrt(e->diff2 / den) : sqrt(e->diff2);
}

/* ---- a test program's results ---- */

typedef struct GtSummary {
    const char *name;
    int cases;
    int failed;
    double worst_16;  /* worst err over f16/bf16 cases (NaN if one was NaN) */
    double worst_32;  /* worst err over f32 (and integer) cases */
    double worst_rel; /* worst err / tolerance */
} GtSummary;

static GtSummary gt_summary;

/* Records one checked output; prints nothing. Returns whether it passed. */
static inline bool gt_record(tc_dtype t, double err, double tol) {
    bool ok = err < tol; /* NaN fails */
    double *w = t == TC_DTYPE_F16 || t == TC_DTYPE_BF16 ? &gt_summary.worst_16 : &gt_summary.worst_32;
    if (isnan(err) || err > *w)
        *w = isnan(*w) ? *w : err;
    double rel = err / tol;
    if (isnan(rel) || rel > gt_summary.worst_rel)
        gt_summary.worst_rel = isnan(gt_summary.worst_rel) ? gt_summary.worst_rel : rel;
    return ok;
}

static inline void gt_case_done(bool ok) {
    gt_summary.cases++;
    gt_summary.failed += !ok;
}

/* The last line of every test program; run.sh parses it. */
static inline int gt_finish(void) {
    printf("SUMMARY %s cases=%d failed=%d worst16=%.3g worst32=%.3g worst_rel=%.3g\n", gt_summary.name,
           gt_summary.cases, gt_summary.failed, gt_summary.worst_16, gt_summary.worst_32, gt_summary.worst_rel);
    return gt_summary.failed ? 1 : 0;
}

/* Seeds the generator (printing the seed) and makes the GPU context, or
 * skips: "SKIP: no GPU (reason)" and exit 77. */
static inline tc_context *gt_start(const char *name) {
    gt_summary.name = name;
    uint64_t seed = gt_seed_from_env_or_clock();
    gt_rng_state = seed ? seed : 1;
    printf("%s: seed %llu (TILEC_TEST_SEED=%llu replays this run)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
    tc_context *ctx = NULL;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("SKIP: no GPU (%s)\n", tc_last_error());
        fflush(stdout);
        exit(77);
    }
    if (st != TC_OK) {
        printf("%s: tc_context_create failed: %s: %s\n", name, tc_status_string(st), tc_last_error());
        exit(1);
    }
    printf("%s: %s, compute capability %d, compiling for %s\n", name, tc_version(), tc_context_compute_capability(ctx),
           tc_context_arch(ctx));
    return ctx;
}

/* Checks a call; on failure prints it with tc_last_error() and returns false. */
#define GT_OK(call) gt_ok_((call), #call, __FILE__, __LINE__)
static inline bool gt_ok_(tc_status st, const char *what, const char *file, int line) {
    if (st == TC_OK)
        return true;
    printf("%s:%d: %s failed: %s\n  %s\n", file, line, what, tc_status_string(st), tc_last_error());
    return false;
}

/* ---- strided matrices for the row-wise kernels ---- */

enum { GUARD = 16 }; /* poisoned elements after each matrix */

typedef struct GtLayout {
    const char *name;
    int kind; /* 0 dense, 1 strided (aligned), 2 unaligned, 3 aligned pointers with an odd stride */
} GtLayout;

static inline const GtLayout *gt_layout(int kind) {
    static const GtLayout layouts[] = {{"dense", 0}, {"strided", 1}, {"unaligned", 2}, {"oddstride", 3}};
    return &layouts[kind];
}

static inline int64_t gt_stride_for(int kind, int64_t cols) {
    if (kind == 1)
        return (cols + 15) / 16 * 16 + 16;
    if (kind == 2 || kind == 3)
        return cols + 3 + (cols % 2 == 0); /* odd */
    return cols;
}

/* A matrix on the host and the device: `offset` elements, then rows of
 * `stride` elements of which the first `cols` are data, then GUARD. */
typedef struct Mat {
    tc_dtype dtype;
    int64_t rows, cols, stride, offset;
    size_t n; /* elements allocated */
    void *host;
    CUdeviceptr dev;
} Mat;

static inline bool mat_alloc(tc_context *ctx, Mat *m, tc_dtype t, int64_t rows, int64_t cols, int kind) {
    memset(m, 0, sizeof *m);
    m->dtype = t;
    m->rows = rows;
    m->cols = cols;
    m->stride = gt_stride_for(kind, cols);
    m->offset = kind == 2 ? 1 : 0;
    m->n = (size_t)(m->offset + (rows - 1) * m->stride + cols + GUARD);
    m->host = malloc(m->n * gt_dtype_bytes(t));
    if (!m->host) {
        printf("out of host memory\n");
        return false;
    }
    memset(m->host, 0xFF, m->n * gt_dtype_bytes(t));
    return GT_OK(tc_mem_alloc(ctx, m->n * gt_dtype_bytes(t), &m->dev));
}

static inline void mat_free(tc_context *ctx, Mat *m) {
    if (m->dev)
        tc_mem_free(ctx, m->dev);
    free(m->host);
    memset(m, 0, sizeof *m);
}

static inline size_t mat_at(const Mat *m, int64_t r, int64_t c) {
    return (size_t)(m->offset + r * m->stride + c);
}

static inline CUdeviceptr mat_base(const Mat *m) {
    return m->dev + (CUdeviceptr)((size_t)m->offset * gt_dtype_bytes(m->dtype));
}

static inline bool mat_upload(tc_context *ctx, const Mat *m) {
    return GT_OK(tc_memcpy_htod(ctx, m->dev, m->host, m->n * gt_dtype_bytes(m->dtype)));
}

static inline bool mat_poison(tc_context *ctx, const Mat *m) {
    return GT_OK(tc_memset_d8(ctx, m->dev, 0xFF, m->n * gt_dtype_bytes(m->dtype)));
}

static inline bool mat_download(tc_context *ctx, Mat *m) {
    return GT_OK(tc_memcpy_dtoh(ctx, m->host, m->dev, m->n * gt_dtype_bytes(m->dtype)));
}

/* Elements outside the rows that are not 0xFF any more. */
static inline size_t mat_clobbered(const Mat *m) {
    size_t bad = 0;
    size_t i = 0;
    for (int64_t r = 0; r < m->rows; r++) {
        size_t row = mat_at(m, r, 0);
        for (; i < row; i++)
            bad += !gt_is_poison(m->dtype, m->host, i);
        i = row + (size_t)m->cols;
    }
    for (; i < m->n; i++)
        bad += !gt_is_poison(m->dtype, m->host, i);
    return bad;
}

/* ---- the row-wise tests' cases ---- */

/* One case of a row-wise test: runs, checks and prints it, and records it
 * (gt_record, gt_case_done); returns whether it passed. */
typedef bool (*GtRowwiseCase)(tc_context *ctx, CUstream stream, tc_dtype t, int64_t rows, int64_t cols,
                              const GtLayout *lay);

/* main() of test_softmax and test_rmsnorm: f16, bf16 and f32 × widths 1,
 * 7, 1000, 1024, 4095, 4096, 12288, 20479, 65536, 100003, 130001 × 1, 3, 37, 1000 rows
 * (the long rows: 100003 ends in a nearly empty 16384 tile, so its loops take 8192 and the
 * softmax forward's parts 2048; 130001 takes the 16384 tile; not 1000 rows), dense, and
 * for 3 and 37 rows also strided, unaligned and with an odd stride from an aligned pointer
 * (gaps between the rows); with --quick only the cases
 * of at most 2^20 elements. Returns the exit status. */
/* The cases of gt_rowwise_main, then extra(ctx, stream) when not NULL. */
static inline int gt_rowwise_main_ex(const char *name, int argc, char **argv, GtRowwiseCase run_case,
                                     void (*extra)(tc_context *, CUstream)) {
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    tc_context *ctx = gt_start(name);
    CUstream stream;
    if (!GT_OK(tc_stream_create(ctx, &stream)))
        return 1;
    static const tc_dtype dtypes[] = {TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32};
    static const int64_t widths[] = {1, 7, 1000, 1024, 4095, 4096, 12288, 20479, 65536, 100003, 130001};
    static const int64_t row_counts[] = {1, 3, 37, 1000};
    for (size_t d = 0; d < 3; d++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
            for (size_t r = 0; r < sizeof row_counts / sizeof row_counts[0]; r++)
                for (int l = 0; l < 4; l++) {
                    int64_t rows = row_counts[r], cols = widths[w];
                    if (l > 0 && rows != 3 && rows != 37)
                        continue;
                    if ((quick && rows * cols > (1 << 20)) || (cols > 65536 && rows > 37))
                        continue;
                    run_case(ctx, stream, dtypes[d], rows, cols, gt_layout(l));
                }
    if (extra)
        extra(ctx, stream);
    tc_stream_destroy(ctx, stream);
    tc_context_destroy(ctx);
    return gt_finish();
}

static inline int gt_rowwise_main(const char *name, int argc, char **argv, GtRowwiseCase run_case) {
    return gt_rowwise_main_ex(name, argc, argv, run_case, NULL);
}

#endif
