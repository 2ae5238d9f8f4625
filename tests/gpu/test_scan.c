/*
 * test_scan.c — scans and arg-reductions on the GPU, each case checked
 * against a CPU reference computed from the same (rounded) inputs: float64
 * for sums and products, exact for integers (which wrap) and for what picks
 * an input (argmax, a "last non-zero" scan).
 *
 *     test_scan
 *
 * Covered: cumsum, cumprod and scan with user funcs that do not commute (the
 * last non-zero value, through a func that calls another; the composition
 * of affine maps packed in an i32), forward and reverse, along each axis of
 * 2-D tiles of 64x128, 16x256, 128x32, 1x64, 2x512 and 256x2 at 4 and 8
 * warps (so that registers, lanes and warps lie along the axis), in f32,
 * f16 and i32, with masked tails (the padding is the combine's identity);
 * 1-D tiles of 1 to 4096 elements; a cumsum in a loop that carries the
 * running total; a cumsum of a dot's result (the tensor cores' layout);
 * argmax and argmin along each axis and of 1-D tiles, with many ties, NaNs
 * (the first NaN wins), -0.0 against 0.0, in f32, f16 and i32.
 *
 * Without a GPU every kernel is still compiled to PTX for sm_90a (and
 * assembled by ptxas where $TILEC_PTXAS or /usr/local/cuda/bin/ptxas is
 * found): then the program prints what it compiled and "SKIP: no GPU
 * (reason)" and exits 77, or exits 1 if something failed to compile.
 * Outputs are poisoned (0xFF) before each launch and followed by guard
 * elements that must stay poisoned.
 */
#include "feature_harness.h"

/* ---- the kernels ---- */

/* The combines: OP 0 cumsum, 1 cumprod, 2 the last non-zero value (f32),
 * 3 the same in f16, 4 affine maps x -> m x + c (mod 2^16) packed as
 * m << 16 | c, applied left to right. Masked elements are `pad`, the
 * combine's identity, so that a reverse scan may start from them. */
static const char SRC_SCAN2D[] =
    "func pick(f32 a, f32 b) { return b != 0.0 ? b : a; }\n"
    "func last_nz(f32 a, f32 b) { return pick(a, b); }\n"
    "func last_nz16(f16 a, f16 b) { return b != 0.0 ? b : a; }\n"
    "func affine(i32 a, i32 b) {\n"
    "    let mb = (b >> 16) & 0xffff;\n"
    "    let m = ((a >> 16) & 0xffff) * mb;\n"
    "    let c = (a & 0xffff) * mb + (b & 0xffff);\n"
    "    return ((m & 0xffff) << 16) | (c & 0xffff);\n"
    "}\n"
    "kernel scan2d(T* out, const T* x, i32 M, i32 N, T pad, constexpr dtype T, constexpr i32 BM,\n"
    "              constexpr i32 BN, constexpr i32 AXIS, constexpr i32 OP, constexpr bool REV) {\n"
    "    let base = i64(program_id(0)) * M * N;\n"
    "    let r = arange(0, BM);\n"
    "    let c = arange(0, BN);\n"
    "    let mask = (r[:, None] < M) & (c[None, :] < N);\n"
    "    let offs = base + r[:, None] * N + c[None, :];\n"
    "    let v = load(x + offs, mask, pad);\n"
    "    var y = v;\n"
    "    if (OP == 0) { y = cumsum(v, AXIS, REV); }\n"
    "    else if (OP == 1) { y = cumprod(v, AXIS - 2, REV); }\n"
    "    else if (OP == 2) { y = scan(v, AXIS, last_nz, REV); }\n"
    "    else if (OP == 3) { y = scan(v, AXIS, last_nz16, REV); }\n"
    "    else { y = scan(v, AXIS, affine, REV); }\n"
    "    store(out + offs, y, mask);\n"
    "}\n";

static const char SRC_SCAN1D[] =
    "func last_nz(f32 a, f32 b) { return b != 0.0 ? b : a; }\n"
    "func affine(i32 a, i32 b) {\n"
    "    let mb = (b >> 16) & 0xffff;\n"
    "    return ((((a >> 16) & 0xffff) * mb & 0xffff) << 16) | (((a & 0xffff) * mb + (b & 0xffff)) & 0xffff);\n"
    "}\n"
    "kernel scan1d(T* out, const T* x, i32 n, T pad, constexpr dtype T, constexpr i32 BLOCK,\n"
    "              constexpr i32 OP, constexpr bool REV) {\n"
    "    let i = arange(0, BLOCK);\n"
    "    let offs = i64(program_id(0)) * n + i;\n"
    "    let v = load(x + offs, i < n, pad);\n"
    "    if (OP == 0) { store(out + offs, cumsum(v, 0, REV), i < n); }\n"
    "    else if (OP == 1) { store(out + offs, cumprod(v, -1, REV), i < n); }\n"
    "    else if (OP == 2) { store(out + offs, scan(v, 0, last_nz, REV), i < n); }\n"
    "    else { store(out + offs, scan(v, 0, affine, REV), i < n); }\n"
    "}\n";

/* A row longer than the tile: each block's cumsum plus the total so far. */
static const char SRC_SCAN_LOOP[] =
    "kernel scan_loop(f32* out, const f32* x, i32 n, constexpr i32 BLOCK = 256) {\n"
    "    let row = i64(program_id(0)) * n;\n"
    "    var carry = 0.0;\n"
    "    for (start in range(0, n, BLOCK)) {\n"
    "        let i = start + arange(0, BLOCK);\n"
    "        let v = load(x + row + i, i < n, 0.0);\n"
    "        store(out + row + i, cumsum(v, 0) + carry, i < n);\n"
    "        carry += sum(v, 0);\n"
    "    }\n"
    "}\n";

/* A scan of a dot's result, in the tensor cores' layout. */
static const char SRC_DOT_SCAN[] =
    "kernel dot_scan(f32* out, const f16* a, const f16* b, constexpr i32 AXIS, constexpr bool REV) {\n"
    "    let r = arange(0, 64);\n"
    "    let c = arange(0, 64);\n"
    "    let k = arange(0, 32);\n"
    "    let d = dot(load(a + r[:, None] * 32 + k[None, :]), load(b + k[:, None] * 64 + c[None, :]));\n"
    "    store(out + r[:, None] * 64 + c[None, :], cumsum(d, AXIS, REV));\n"
    "}\n";

/* argmax / argmin along AXIS of each program's [M, N] (padding: `pad`, the
 * extreme that never wins). */
static const char SRC_ARG2D[] =
    "kernel arg2d(i32* out, const T* x, i32 M, i32 N, T pad, constexpr dtype T, constexpr i32 BM,\n"
    "             constexpr i32 BN, constexpr i32 AXIS, constexpr bool MIN) {\n"
    "    let p = i64(program_id(0));\n"
    "    let r = arange(0, BM);\n"
    "    let c = arange(0, BN);\n"
    "    let mask = (r[:, None] < M) & (c[None, :] < N);\n"
    "    let v = load(x + p * M * N + r[:, None] * N + c[None, :], mask, pad);\n"
    "    if (AXIS == 0) { store(out + p * N + c, MIN ? argmin(v, 0) : argmax(v, -2), c < N); }\n"
    "    else { store(out + p * M + r, MIN ? argmin(v, 1) : argmax(v, 1), r < M); }\n"
    "}\n";

static const char SRC_ARG1D[] =
    "kernel arg1d(i32* out, const T* x, i32 n, T pad, constexpr dtype T, constexpr i32 BLOCK,\n"
    "             constexpr bool MIN) {\n"
    "    let p = program_id(0);\n"
    "    let i = arange(0, BLOCK);\n"
    "    let v = load(x + i64(p) * n + i, i < n, pad);\n"
    "    store(out + p, MIN ? argmin(v) : argmax(v));\n"
    "}\n";

/* ---- the harness ---- */

enum { OP_SUM, OP_PROD, OP_LAST_NZ, OP_LAST_NZ16, OP_AFFINE };
static const char *const op_names[] = {"cumsum", "cumprod", "last_nz", "last_nz16", "affine"};

typedef Ft St; /* feature_harness.h: tc_jit, or compile only without a GPU */

/* A scalar kernel argument of type t. */
typedef union Scalar {
    float f;
    uint16_t h;
    int32_t i;
} Scalar;

static Scalar scalar(tc_dtype t, double v) {
    Scalar s;
    memset(&s, 0, sizeof s);
    if (t == TC_DTYPE_I32)
        s.i = (int32_t)v;
    else if (t == TC_DTYPE_F16)
        s.h = f32_to_f16((float)v);
    else
        s.f = (float)v;
    return s;
}

/* Fills element i of an input (ctx: what the case needs to know). */
typedef void (*FillFn)(const void *ctx, tc_dtype t, void *buf, size_t i);

/* One case: a kernel whose arguments are out, x, then `extra`, run on
 * `programs` programs; x (rows x cols of tx) is filled by `fill`, out
 * (out_rows x out_cols of tout) is poisoned, both dense with guard
 * elements after them. */
typedef struct Case {
    char label[96];
    const char *src, *kernel;
    tc_constexpr cx[8];
    size_t ncx;
    int warps;
    tc_dtype tx, tout;
    int64_t rows, cols, out_rows, out_cols;
    unsigned programs;
    FillFn fill;
    const void *fill_ctx;
    void *extra[4];
    size_t nextra;
    Mat x, out; /* with a GPU, after run_case */
} Case;

static void cx_add(Case *c, const char *name, tc_constexpr_kind kind, int64_t v) {
    c->cx[c->ncx++] = (tc_constexpr){name, kind, v, 0};
}

static void finish(const Case *c, tc_dtype t, double err, double tol) {
    report(c->label, t, err, tol, mat_clobbered(&c->out));
}

/* Compiles c's kernel and, with a GPU, runs it: true when there are
 * outputs to check (and then the caller calls done_case). */
static bool run_case(St *st, Case *c) {
    memset(&c->x, 0, sizeof c->x);
    memset(&c->out, 0, sizeof c->out);
    tc_kernel *k = get_for(st, c->label, c->src, c->kernel, c->cx, c->ncx, c->warps, NULL, 0);
    if (!st->ctx)
        return false;
    const char *why = "does not compile";
    if (k) {
        why = "allocation failed";
        if (mat_alloc(st->ctx, &c->x, c->tx, c->rows, c->cols, 0) &&
            mat_alloc(st->ctx, &c->out, c->tout, c->out_rows, c->out_cols, 0)) {
            for (size_t i = 0; i < (size_t)(c->rows * c->cols); i++)
                c->fill(c->fill_ctx, c->tx, c->x.host, i);
            void *args[6] = {&c->out.dev, &c->x.dev};
            memcpy(args + 2, c->extra, sizeof(void *) * c->nextra);
            why = "launch failed";
            if (mat_upload(st->ctx, &c->x) && mat_poison(st->ctx, &c->out) &&
                GT_OK(tc_launch(k, (tc_dim3){c->programs, 1, 1}, NULL, args, 2 + c->nextra)) &&
                GT_OK(tc_stream_synchronize(st->ctx, NULL)) && mat_download(st->ctx, &c->out))
                return true;
        }
    }
    fail_case(c->label, why);
    mat_free(st->ctx, &c->x);
    mat_free(st->ctx, &c->out);
    return false;
}

static void done_case(St *st, Case *c) {
    mat_free(st->ctx, &c->x);
    mat_free(st->ctx, &c->out);
}

/* What the 2-D kernels share: constexprs T, BM, BN, AXIS, and arguments M,
 * N and the padding (in *a, alive until the case has run); each program's
 * [M, N] input. */
typedef struct Args2d {
    int32_t m, n;
    Scalar pad;
} Args2d;

static void case_2d(Case *c, Args2d *a, tc_dtype t, int BM, int BN, int M, int N, int axis, double pad) {
    cx_add(c, "T", TC_CONSTEXPR_DTYPE, t);
    cx_add(c, "BM", TC_CONSTEXPR_INT, BM);
    cx_add(c, "BN", TC_CONSTEXPR_INT, BN);
    cx_add(c, "AXIS", TC_CONSTEXPR_INT, axis);
    *a = (Args2d){M, N, scalar(t, pad)};
    c->extra[c->nextra++] = &a->m;
    c->extra[c->nextra++] = &a->n;
    c->extra[c->nextra++] = &a->pad;
    c->rows = (int64_t)c->programs * M;
    c->cols = N;
}

/* ---- scans ---- */

/* The combine on the host: floats in float64, integers wrapping in 32 bits. */
static double combine_f(int op, double a, double b) {
    return op == OP_SUM ? a + b : op == OP_PROD ? a * b : b != 0 ? b : a;
}

static uint32_t combine_i(int op, uint32_t a, uint32_t b) {
    uint32_t mb = b >> 16;
    switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_AFFINE: return ((a >> 16) * mb & 0xffff) << 16 | (((a & 0xffff) * mb + (b & 0xffff)) & 0xffff);
    default: return b != 0 ? b : a;
    }
}

/* The combine's identity, the padding of masked elements. */
static double identity(int op) {
    return op == OP_PROD ? 1 : op == OP_AFFINE ? 65536 : 0;
}

/* A random input element for the op *ctx. */
static void fill_scan(const void *ctx, tc_dtype t, void *buf, size_t i) {
    int op = *(const int *)ctx;
    if (t == TC_DTYPE_I32) {
        static const int32_t factors[] = {-3, -2, -1, 1, 2, 3};
        uint32_t v = (uint32_t)gt_next();
        ((int32_t *)buf)[i] = op == OP_SUM    ? (int32_t)(v % 2001) - 1000
                              : op == OP_PROD ? factors[v % 6]
                                              : (int32_t)v; /* affine: any packed map */
        return;
    }
    double v = op == OP_SUM    ? gt_uniform_in(-1, 1)
               : op == OP_PROD ? gt_uniform_in(0.9, 1.1) * (gt_uniform() < 0.1 ? -1 : 1)
               : gt_uniform() < 0.6 ? 0 /* last non-zero: mostly zeros */
                                    : gt_uniform_in(-4, 4);
    gt_put(t, buf, i, v);
}

/* Checks out against the scans of x along `lines` lines of `len` elements:
 * element k of line l at base + l * ls + k * ks. Floats add to e (a sum
 * counts as accurate as the sum of |terms| allows); integers count
 * mismatches in *bad. */
static void check_lines(tc_dtype t, int op, bool rev, const Mat *x, const Mat *out, size_t base, int lines, int len,
                        size_t ls, size_t ks, GtErr *e, size_t *bad) {
    for (int l = 0; l < lines; l++) {
        double acc = 0, mag = 0;
        uint32_t iacc = 0;
        for (int j = 0; j < len; j++) {
            int k = rev ? len - 1 - j : j;
            size_t at = base + (size_t)l * ls + (size_t)k * ks;
            if (t == TC_DTYPE_I32) {
                uint32_t v = (uint32_t)((const int32_t *)x->host)[at];
                iacc = j ? combine_i(op, iacc, v) : v;
                *bad += (uint32_t)((const int32_t *)out->host)[at] != iacc;
                continue;
            }
            double v = gt_get(t, x->host, at);
            acc = j ? combine_f(op, acc, v) : v;
            mag = op == OP_SUM ? mag + fabs(v) : fabs(acc);
            gt_err_add_scaled(e, gt_get(t, out->host, at), acc, mag);
        }
    }
}

/* Checks a case's scans: `programs` blocks of `lines` lines (line l,
 * element k at p * block + l * ls + k * ks), and records it. */
static void check_scans(const Case *c, tc_dtype t, int op, bool rev, const Mat *x, size_t block, int lines, int len,
                        size_t ls, size_t ks) {
    GtErr e = {0};
    size_t bad = 0;
    for (unsigned p = 0; p < c->programs; p++)
        check_lines(t, op, rev, x, &c->out, p * block, lines, len, ls, ks, &e, &bad);
    if (t == TC_DTYPE_I32)
        finish(c, t, bad ? 1.0 : 0.0, 0.5);
    else
        finish(c, t, gt_err_value(&e), gt_tolerance(t));
}

static void scan_2d(St *st, tc_dtype t, int op, int BM, int BN, int M, int N, int axis, bool rev, int warps) {
    Case c = {.src = SRC_SCAN2D, .kernel = "scan2d", .warps = warps, .tx = t, .tout = t, .programs = 2};
    snprintf(c.label, sizeof c.label, "%s %dx%d (%dx%d) axis %d%s w%d %s", op_names[op], BM, BN, M, N, axis,
             rev ? " rev" : "", warps, gt_dtype_name(t));
    Args2d a;
    case_2d(&c, &a, t, BM, BN, M, N, axis, identity(op));
    cx_add(&c, "OP", TC_CONSTEXPR_INT, op);
    cx_add(&c, "REV", TC_CONSTEXPR_BOOL, rev);
    c.out_rows = c.rows;
    c.out_cols = c.cols;
    c.fill = fill_scan;
    c.fill_ctx = &op;
    if (!run_case(st, &c))
        return;
    if (axis == 1)
        check_scans(&c, t, op, rev, &c.x, (size_t)M * N, M, N, (size_t)N, 1);
    else
        check_scans(&c, t, op, rev, &c.x, (size_t)M * N, N, M, 1, (size_t)N);
    done_case(st, &c);
}

static void scan_1d(St *st, tc_dtype t, int op, int block, int n, bool rev, int warps) {
    Case c = {.src = SRC_SCAN1D, .kernel = "scan1d", .warps = warps, .tx = t, .tout = t, .programs = 3};
    snprintf(c.label, sizeof c.label, "%s 1-D %d (%d)%s w%d %s", op_names[op], block, n, rev ? " rev" : "", warps,
             gt_dtype_name(t));
    cx_add(&c, "T", TC_CONSTEXPR_DTYPE, t);
    cx_add(&c, "BLOCK", TC_CONSTEXPR_INT, block);
    cx_add(&c, "OP", TC_CONSTEXPR_INT, op == OP_AFFINE ? 3 : op); /* SRC_SCAN1D numbers its ops 0..3 */
    cx_add(&c, "REV", TC_CONSTEXPR_BOOL, rev);
    c.rows = c.out_rows = c.programs;
    c.cols = c.out_cols = n;
    c.fill = fill_scan;
    c.fill_ctx = &op;
    int32_t nn = n;
    Scalar pad = scalar(t, identity(op));
    c.extra[c.nextra++] = &nn;
    c.extra[c.nextra++] = &pad;
    if (!run_case(st, &c))
        return;
    check_scans(&c, t, op, rev, &c.x, (size_t)n, 1, n, 0, 1);
    done_case(st, &c);
}

static void scan_loop(St *st) {
    Case c = {.label = "cumsum in a loop, running total (3x1000)", .src = SRC_SCAN_LOOP, .kernel = "scan_loop",
              .warps = 4, .tx = TC_DTYPE_F32, .tout = TC_DTYPE_F32, .programs = 3};
    int op = OP_SUM, n = 1000;
    c.rows = c.out_rows = c.programs;
    c.cols = c.out_cols = n;
    c.fill = fill_scan;
    c.fill_ctx = &op;
    int32_t nn = n;
    c.extra[c.nextra++] = &nn;
    if (!run_case(st, &c))
        return;
    check_scans(&c, TC_DTYPE_F32, OP_SUM, false, &c.x, (size_t)n, 1, n, 0, 1);
    done_case(st, &c);
}

/* The dot's A (64 x 32) is the case's input, its B (32 x 64) is b_host. */
static void fill_dot(const void *ctx, tc_dtype t, void *buf, size_t i) {
    (void)ctx;
    gt_put(t, buf, i, gt_uniform_in(-1, 1));
}

static void dot_scan(St *st, int axis, bool rev) {
    Case c = {.src = SRC_DOT_SCAN, .kernel = "dot_scan", .warps = 4, .tx = TC_DTYPE_F16, .tout = TC_DTYPE_F32,
              .rows = 64, .cols = 32, .out_rows = 64, .out_cols = 64, .programs = 1, .fill = fill_dot};
    snprintf(c.label, sizeof c.label, "cumsum of a dot 64x64x32 axis %d%s", axis, rev ? " rev" : "");
    cx_add(&c, "AXIS", TC_CONSTEXPR_INT, axis);
    cx_add(&c, "REV", TC_CONSTEXPR_BOOL, rev);
    Mat b;
    memset(&b, 0, sizeof b);
    if (st->ctx) {
        if (!mat_alloc(st->ctx, &b, TC_DTYPE_F16, 32, 64, 0)) {
            fail_case(c.label, "allocation failed");
            return;
        }
        for (size_t i = 0; i < 32 * 64; i++)
            fill_dot(NULL, TC_DTYPE_F16, b.host, i);
        if (!mat_upload(st->ctx, &b)) {
            fail_case(c.label, "upload failed");
            mat_free(st->ctx, &b);
            return;
        }
    }
    c.extra[c.nextra++] = &b.dev;
    if (run_case(st, &c)) {
        /* the reference: the product in float64 (as an f32 matrix), then its scans */
        Mat d = {.dtype = TC_DTYPE_F32};
        d.host = malloc(64 * 64 * sizeof(float));
        for (int r = 0; r < 64; r++)
            for (int col = 0; col < 64; col++) {
                double acc = 0;
                for (int k = 0; k < 32; k++)
                    acc += gt_get(TC_DTYPE_F16, c.x.host, (size_t)r * 32 + k) *
                           gt_get(TC_DTYPE_F16, b.host, (size_t)k * 64 + col);
                ((float *)d.host)[r * 64 + col] = (float)acc;
            }
        if (axis == 1)
            check_scans(&c, TC_DTYPE_F32, OP_SUM, rev, &d, 0, 64, 64, 64, 1);
        else
            check_scans(&c, TC_DTYPE_F32, OP_SUM, rev, &d, 0, 64, 64, 1, 64);
        free(d.host);
        done_case(st, &c);
    }
    mat_free(st->ctx, &b);
}

/* ---- argmax, argmin ---- */

/* Does b beat a (NaN beats any number; equal values and two NaNs tie)? */
static bool beats(bool min, double b, double a) {
    if (isnan(a))
        return false;
    return isnan(b) || (min ? b < a : b > a);
}

/* An input with many ties: small integers (-0.0 and 0.0 alike), and in
 * floats a NaN now and then (*ctx true). */
static void fill_arg(const void *ctx, tc_dtype t, void *buf, size_t i) {
    double v = (double)(gt_next() % 8);
    if (t == TC_DTYPE_I32) {
        ((int32_t *)buf)[i] = (int32_t)v - 4;
        return;
    }
    if (v == 0 && gt_uniform() < 0.5)
        v = -0.0;
    if (*(const bool *)ctx && gt_uniform() < 0.02)
        v = NAN;
    gt_put(t, buf, i, v);
}

/* Checks the winner's index of each line (element k of line l of program p
 * at p * block + l * ls + k * ks) against out[p * lines + l], and records. */
static void check_args(const Case *c, bool min, size_t block, int lines, int len, size_t ls, size_t ks) {
    size_t bad = 0;
    const Mat *x = &c->x;
    for (unsigned p = 0; p < c->programs; p++)
        for (int l = 0; l < lines; l++) {
            size_t base = p * block + (size_t)l * ls;
            int best = 0;
            for (int k = 1; k < len; k++)
                if (beats(min, gt_get(x->dtype, x->host, base + k * ks), gt_get(x->dtype, x->host, base + best * ks)))
                    best = k;
            bad += ((const int32_t *)c->out.host)[p * (size_t)lines + (size_t)l] != best;
        }
    finish(c, TC_DTYPE_I32, bad ? 1.0 : 0.0, 0.5);
}

/* The padding that never wins. */
static double arg_pad(tc_dtype t, bool min) {
    if (t == TC_DTYPE_I32)
        return min ? 2147483647.0 : -2147483648.0;
    return min ? INFINITY : -INFINITY;
}

static void arg_2d(St *st, tc_dtype t, bool min, int BM, int BN, int M, int N, int axis, int warps) {
    static const bool nans = true;
    Case c = {.src = SRC_ARG2D, .kernel = "arg2d", .warps = warps, .tx = t, .tout = TC_DTYPE_I32, .programs = 2,
              .fill = fill_arg, .fill_ctx = &nans};
    snprintf(c.label, sizeof c.label, "%s %dx%d (%dx%d) axis %d w%d %s", min ? "argmin" : "argmax", BM, BN, M, N, axis,
             warps, gt_dtype_name(t));
    Args2d a;
    case_2d(&c, &a, t, BM, BN, M, N, axis, arg_pad(t, min));
    cx_add(&c, "MIN", TC_CONSTEXPR_BOOL, min);
    c.out_rows = c.programs;
    c.out_cols = axis == 0 ? N : M;
    if (!run_case(st, &c))
        return;
    if (axis == 1)
        check_args(&c, min, (size_t)M * N, M, N, (size_t)N, 1);
    else
        check_args(&c, min, (size_t)M * N, N, M, 1, (size_t)N);
    done_case(st, &c);
}

/* 1-D, the axis left out; with `nans`, each program's row has two NaNs
 * (the first must win), else none. */
typedef struct NanRows {
    bool random_nans; /* fill_arg's ctx: always false here */
    int n;
    bool nans;
} NanRows;

static void fill_arg_1d(const void *ctx, tc_dtype t, void *buf, size_t i) {
    const NanRows *r = ctx;
    fill_arg(&r->random_nans, t, buf, i);
    size_t p = i / (size_t)r->n, k = i % (size_t)r->n;
    if (r->nans && t != TC_DTYPE_I32 && (k == (p * 7) % (size_t)r->n || k + 1 == (size_t)r->n))
        gt_put(t, buf, i, NAN);
}

static void arg_1d(St *st, tc_dtype t, bool min, int block, int n, bool nans, int warps) {
    NanRows rows = {false, n, nans};
    Case c = {.src = SRC_ARG1D, .kernel = "arg1d", .warps = warps, .tx = t, .tout = TC_DTYPE_I32, .programs = 4,
              .fill = fill_arg_1d, .fill_ctx = &rows};
    snprintf(c.label, sizeof c.label, "%s 1-D %d (%d)%s w%d %s", min ? "argmin" : "argmax", block, n,
             nans ? " two NaNs" : "", warps, gt_dtype_name(t));
    cx_add(&c, "T", TC_CONSTEXPR_DTYPE, t);
    cx_add(&c, "BLOCK", TC_CONSTEXPR_INT, block);
    cx_add(&c, "MIN", TC_CONSTEXPR_BOOL, min);
    c.rows = c.programs;
    c.cols = n;
    c.out_rows = 1;
    c.out_cols = c.programs;
    int32_t nn = n;
    Scalar pad = scalar(t, arg_pad(t, min));
    c.extra[c.nextra++] = &nn;
    c.extra[c.nextra++] = &pad;
    if (!run_case(st, &c))
        return;
    check_args(&c, min, (size_t)n, 1, n, 0, 1);
    done_case(st, &c);
}

/* ---- the cases ---- */

static void run_all(St *st) {
    /* shapes that put registers, lanes and warps along either axis; masked tails */
    static const struct {
        int bm, bn, m, n, warps;
    } shapes[] = {{64, 128, 61, 125, 4}, {16, 256, 16, 250, 8}, {128, 32, 100, 32, 8},
                  {1, 64, 1, 63, 4},     {2, 512, 2, 509, 4},   {256, 2, 255, 2, 8}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int axis = 0; axis < 2; axis++) {
            int bm = shapes[si].bm, bn = shapes[si].bn, m = shapes[si].m, n = shapes[si].n, w = shapes[si].warps;
            for (int rev = 0; rev < 2; rev++) {
                scan_2d(st, TC_DTYPE_F32, OP_SUM, bm, bn, m, n, axis, rev, w);
                scan_2d(st, TC_DTYPE_F32, OP_PROD, bm, bn, m, n, axis, rev, w);
                scan_2d(st, TC_DTYPE_F32, OP_LAST_NZ, bm, bn, m, n, axis, rev, w);
                scan_2d(st, TC_DTYPE_I32, OP_AFFINE, bm, bn, m, n, axis, rev, w);
            }
            scan_2d(st, TC_DTYPE_F16, OP_SUM, bm, bn, m, n, axis, false, w);
            if ((axis ? bn : bm) <= 256) /* f16 rounds every product: longer lines drift too far */
                scan_2d(st, TC_DTYPE_F16, OP_PROD, bm, bn, m, n, axis, true, w);
            scan_2d(st, TC_DTYPE_F16, OP_LAST_NZ16, bm, bn, m, n, axis, axis == 1, w);
            scan_2d(st, TC_DTYPE_I32, OP_SUM, bm, bn, m, n, axis, true, w);
            scan_2d(st, TC_DTYPE_I32, OP_PROD, bm, bn, m, n, axis, false, w);
            arg_2d(st, TC_DTYPE_F32, false, bm, bn, m, n, axis, w);
            arg_2d(st, TC_DTYPE_F32, true, bm, bn, m, n, axis, w);
            arg_2d(st, TC_DTYPE_F16, axis == 0, bm, bn, m, n, axis, w);
            arg_2d(st, TC_DTYPE_I32, axis == 1, bm, bn, m, n, axis, w);
        }
    /* 1-D tiles: sizes 1 and 2, a warp, warps along the axis, registers above the warps */
    static const struct {
        int block, n, warps;
    } lines[] = {{1, 1, 4}, {2, 2, 4}, {32, 29, 4}, {128, 127, 8}, {1024, 1000, 4}, {4096, 4093, 8}};
    for (size_t li = 0; li < sizeof lines / sizeof lines[0]; li++) {
        int b = lines[li].block, n = lines[li].n, w = lines[li].warps;
        for (int rev = 0; rev < 2; rev++) {
            scan_1d(st, TC_DTYPE_F32, OP_SUM, b, n, rev, w);
            scan_1d(st, TC_DTYPE_F32, OP_LAST_NZ, b, n, rev, w);
            scan_1d(st, TC_DTYPE_I32, OP_AFFINE, b, n, rev, w);
        }
        scan_1d(st, TC_DTYPE_F32, OP_PROD, b, n, li % 2, w);
        scan_1d(st, TC_DTYPE_I32, OP_SUM, b, n, li % 2 == 0, w);
        arg_1d(st, TC_DTYPE_F32, false, b, n, false, w);
        arg_1d(st, TC_DTYPE_F32, true, b, n, true, w);
        arg_1d(st, TC_DTYPE_F16, false, b, n, true, w);
        arg_1d(st, TC_DTYPE_I32, true, b, n, false, w);
    }
    scan_loop(st);
    for (int axis = 0; axis < 2; axis++)
        dot_scan(st, axis, axis == 1);
}

int main(void) {
    static const char *const archs[] = {"sm_90a"};
    return ft_main("test_scan", "scan", archs, 1, run_all);
}
