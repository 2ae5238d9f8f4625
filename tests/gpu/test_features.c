/*
 * test_features.c — the language's features on the GPU: small kernels
 * compiled from source strings with tc_jit, each checked against a CPU
 * reference (float64, or exact where the result is exact).
 *
 *     test_features
 *
 * Covered: elementwise math (exp exp2 log log2 sqrt rsqrt erf tanh sigmoid
 * abs floor ceil sin cos) in f32, and in f16/bf16; arithmetic, minimum,
 * maximum, where, fma, funcs; casts between f32, f16, bf16 and i32 (bit
 * exact, rounding to nearest even, saturating to i32); integer arithmetic
 * and bit operations; reductions sum/max/min over each axis of 2-D tiles
 * (64x128, 16x256, 128x32 at 4 and 8 warps, so that warps and lanes lie
 * along either axis) and over the whole tile; broadcasts and expand_dims;
 * transposed stores (a layout conversion through shared memory), with and
 * without trans(); masked loads with `other` values (runtime and literal);
 * atomic_add on f32 and i32 with heavy contention, and a scalar atomic that
 * must happen once per program; atomic adds of whole f32 tiles into strided
 * matrices (TMA reductions on sm_90a where the strides allow, which the
 * kernel's tensor maps must show); for loops with carried vars and runtime
 * trip counts (0 included); runtime if/else and a runtime ?: ; early
 * `return` (in a guard and from nested loops), `while`, `break` and
 * `continue` against a CPU run of the same code; program_id and
 * num_programs on two grid axes; dot 32x32x32 in f32, f16 and bf16 with and
 * without an accumulator.
 *
 * Without a GPU every kernel is still compiled to PTX (sm_90a) through
 * tc_compile (and assembled by ptxas for sm_90a where $TILEC_PTXAS or
 * /usr/local/cuda/bin/ptxas is found), so a codegen failure shows here
 * too: then the program prints
 * what it compiled and "SKIP: no GPU (reason)" and exits 77, or exits 1 if
 * something failed to compile. Outputs are poisoned (0xFF) before each
 * launch, followed by guard elements that must stay poisoned.
 */
#include "feature_harness.h"

/* ---- the kernels ---- */

static const char SRC_UNARY[] =
    "kernel unary(f32* out, const f32* x, i32 n, constexpr i32 OP, constexpr i32 BLOCK = 256) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let v = load(x + i, m, 1.0);\n"
    "    if (OP == 0) { store(out + i, exp(v), m); }\n"
    "    else if (OP == 1) { store(out + i, exp2(v), m); }\n"
    "    else if (OP == 2) { store(out + i, log(v), m); }\n"
    "    else if (OP == 3) { store(out + i, log2(v), m); }\n"
    "    else if (OP == 4) { store(out + i, sqrt(v), m); }\n"
    "    else if (OP == 5) { store(out + i, rsqrt(v), m); }\n"
    "    else if (OP == 6) { store(out + i, erf(v), m); }\n"
    "    else if (OP == 7) { store(out + i, tanh(v), m); }\n"
    "    else if (OP == 8) { store(out + i, sigmoid(v), m); }\n"
    "    else if (OP == 9) { store(out + i, abs(v), m); }\n"
    "    else if (OP == 10) { store(out + i, floor(v), m); }\n"
    "    else if (OP == 11) { store(out + i, ceil(v), m); }\n"
    "    else if (OP == 12) { store(out + i, sin(v), m); }\n"
    "    else { store(out + i, cos(v), m); }\n"
    "}\n";

static const char SRC_UNARY16[] =
    "kernel unary16(T* out divisible_by(16), const T* x divisible_by(16), i32 n, constexpr dtype T,\n"
    "               constexpr i32 OP, constexpr i32 BLOCK = 256) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let v = load(x + i, m, 0);\n"
    "    if (OP == 0) { store(out + i, exp(v), m); }\n"
    "    else if (OP == 1) { store(out + i, tanh(v), m); }\n"
    "    else if (OP == 2) { store(out + i, sigmoid(v), m); }\n"
    "    else { store(out + i, v * v + v, m); }\n"
    "}\n";

static const char SRC_BINARY[] =
    "func silu(f32 v) { return v * sigmoid(v); }\n"
    "kernel binary(f32* out, const f32* x, const f32* y, i32 n, constexpr i32 OP, constexpr i32 BLOCK = 128) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let a = load(x + i, m, 0);\n"
    "    let b = load(y + i, m, 1);\n"
    "    if (OP == 0) { store(out + i, a + b * 2.0 - 1.0, m); }\n"
    "    else if (OP == 1) { store(out + i, a * b / (abs(b) + 1.0), m); }\n"
    "    else if (OP == 2) { store(out + i, minimum(a, b), m); }\n"
    "    else if (OP == 3) { store(out + i, maximum(a, b), m); }\n"
    "    else if (OP == 4) { store(out + i, where(a > b, a - b, b * 0.5), m); }\n"
    "    else if (OP == 5) { store(out + i, fma(a, b, 0.25), m); }\n"
    "    else { store(out + i, silu(a) + where(a < 0.0, 1.0, 2.0), m); }\n"
    "}\n";

static const char SRC_CASTS[] =
    "kernel casts(f16* o16, bf16* ob16, i32* oi, f32* of, f32* osum, const f32* x, const i32* xi, i32 n,\n"
    "             constexpr i32 BLOCK = 256) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let v = load(x + i, m, 0);\n"
    "    let h = f16(v);\n"
    "    let b = bf16(v);\n"
    "    store(o16 + i, h, m);\n"
    "    store(ob16 + i, b, m);\n"
    "    store(oi + i, i32(v), m);\n"
    "    store(of + i, f32(load(xi + i, m, 0)) * 0.5, m);\n"
    "    store(osum + i, f32(h) + f32(b), m);\n"
    "}\n";

static const char SRC_INTOPS[] =
    "kernel intops(i32* out, const i32* x, const i32* y, i32 n, constexpr i32 BLOCK = 128) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let a = load(x + i, m, 0);\n"
    "    let b = load(y + i, m, 1);\n"
    "    let lhs = (a * 3 + b) / b + a % 7 - (a >> 2) + (a & 0xff);\n"
    "    let rhs = (b << 1) + minimum(a, b) - max(a, 0);\n"
    "    store(out + i, lhs ^ rhs, m);\n"
    "}\n";

static const char SRC_REDUCE[] =
    "kernel reduce2d(f32* out, const f32* x, constexpr i32 M, constexpr i32 N, constexpr i32 AXIS,\n"
    "                constexpr i32 OP) {\n"
    "    let p = i64(program_id(0));\n"
    "    let r = arange(0, M);\n"
    "    let c = arange(0, N);\n"
    "    let v = load(x + p * (M * N) + r[:, None] * N + c[None, :]);\n"
    "    if (AXIS == 0) {\n"
    "        if (OP == 0) { store(out + p * N + c, sum(v, 0)); }\n"
    "        else if (OP == 1) { store(out + p * N + c, max(v, 0)); }\n"
    "        else { store(out + p * N + c, min(v, 0)); }\n"
    "    } else if (AXIS == 1) {\n"
    "        if (OP == 0) { store(out + p * M + r, sum(v, 1)); }\n"
    "        else if (OP == 1) { store(out + p * M + r, max(v, 1)); }\n"
    "        else { store(out + p * M + r, min(v, 1)); }\n"
    "    } else {\n"
    "        if (OP == 0) { store(out + p, sum(v)); }\n"
    "        else if (OP == 1) { store(out + p, max(v)); }\n"
    "        else { store(out + p, min(v)); }\n"
    "    }\n"
    "}\n";

static const char SRC_OUTER[] =
    "kernel outer(f32* out, const f32* a, const f32* b, i32 M, i32 N, constexpr i32 BM = 64, constexpr i32 BN = 32) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    let av = load(a + r, r < M, 0);\n"
    "    let bv = load(b + c, c < N, 0);\n"
    "    let t = expand_dims(av, 1) * bv[None, :] + broadcast_to(bv[None, :], [BM, BN]) * 0.5 + av[:, None];\n"
    "    let mask = (r[:, None] < M) & (c[None, :] < N);\n"
    "    store(out + r[:, None] * N + c[None, :], t, mask);\n"
    "}\n";

static const char SRC_TRANSPOSE[] =
    "kernel transpose(f32* out, const f32* x, i32 M, i32 N, constexpr i32 BM = 64, constexpr i32 BN = 64,\n"
    "                 constexpr bool TRANS = false) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    let mask = (r[:, None] < M) & (c[None, :] < N);\n"
    "    let v = load(x + r[:, None] * N + c[None, :], mask, 0);\n"
    "    if (TRANS) {\n"
    "        let mt = (c[:, None] < N) & (r[None, :] < M);\n"
    "        store(out + c[:, None] * M + r[None, :], trans(v), mt);\n"
    "    } else {\n"
    "        store(out + c[None, :] * M + r[:, None], v, mask);\n"
    "    }\n"
    "}\n";

/* The 1-D access with eviction policies (a masked load kept in L2, an
 * unmasked store out of it first), the 2-D one without. */
static const char SRC_MASKED[] =
    "kernel masked(f32* out, const f32* x, i32 n, f32 other, constexpr i32 BLOCK = 256) {\n"
    "    let i = arange(0, BLOCK);\n"
    "    store(out + i, load(x + i, i < n, other, \"evict_last\"), \"evict_first\");\n"
    "    let j = arange(0, 16);\n"
    "    let k = arange(0, 32);\n"
    "    let m2 = (j[:, None] < 5) & (k[None, :] < n % 32);\n"
    "    store(out + BLOCK + j[:, None] * 32 + k[None, :], load(x + j[:, None] * 32 + k[None, :], m2, -2.5));\n"
    "}\n";

static const char SRC_ATOMICS[] =
    "kernel atomics(f32* accf, i32* acci, const f32* x, const i32* xi, i32 n, constexpr i32 K,\n"
    "               constexpr i32 BLOCK = 256) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    atomic_add(accf + i % K, load(x + i, m, 0), m);\n"
    "    atomic_add(acci + i % K, load(xi + i, m, 0), m);\n"
    "    atomic_add(acci + K, 1);\n"
    "}\n";

/* Whole tiles added into a strided matrix: every program adds its tile
 * `reps` times, scaled by its own factors, so that the programs of one
 * tile contend and a program reuses what it added from. On sm_90a an
 * aligned matrix takes TMA reductions (pass tma-store); the others, and
 * every other target, atomics. */
static const char SRC_TILE_ATOMICS[] =
    "kernel tile_atomics(f32* acc, const f32* x, i32 M, i32 N, i64 stride_am, i64 stride_xm, i32 reps,\n"
    "                    constexpr i32 BM = 64, constexpr i32 BN = 64) {\n"
    "    let m = program_id(0) * BM + arange(0, BM);\n"
    "    let n = program_id(1) * BN + arange(0, BN);\n"
    "    let mask = (m < M)[:, None] & (n < N)[None, :];\n"
    "    let v = load(x + i64(m)[:, None] * stride_xm + n[None, :], mask, 0);\n"
    "    for (j in range(0, reps)) {\n"
    "        let k = f32(program_id(2) * reps + j + 1);\n"
    "        atomic_add(acc + i64(m)[:, None] * stride_am + n[None, :], v * k, mask);\n"
    "    }\n"
    "}\n";

static const char SRC_LOOPS[] = "kernel loops(f32* out, const f32* x, i32 iters, constexpr i32 BLOCK = 128) {\n"
                                "    let c = arange(0, BLOCK);\n"
                                "    let p = i64(program_id(0));\n"
                                "    var acc = zeros([BLOCK], f32);\n"
                                "    var s = 0.0;\n"
                                "    var k = 0;\n"
                                "    for (it in range(0, iters)) {\n"
                                "        acc += load(x + (p * iters + it) * BLOCK + c) * f32(it + 1);\n"
                                "        s = s * 0.5 + 1.0;\n"
                                "        k += 2;\n"
                                "    }\n"
                                "    for (j in range(0, 4)) {\n"
                                "        acc = acc + f32(j);\n"
                                "    }\n"
                                "    store(out + p * BLOCK + c, acc * s + f32(k));\n"
                                "}\n";

static const char SRC_BRANCHES[] = "kernel branches(f32* out, const f32* x, i32 flag, constexpr i32 BLOCK = 128) {\n"
                                   "    let p = program_id(0);\n"
                                   "    let c = arange(0, BLOCK);\n"
                                   "    var v = load(x + p * BLOCK + c);\n"
                                   "    if (p % 2 == 0) {\n"
                                   "        v = v * 2.0;\n"
                                   "    } else {\n"
                                   "        v = v - 1.0;\n"
                                   "    }\n"
                                   "    if (flag != 0) {\n"
                                   "        v = v + 100.0;\n"
                                   "    }\n"
                                   "    let scale = flag != 0 ? 0.5 : 0.25;\n"
                                   "    if (p == 3) {\n"
                                   "        store(out + p * BLOCK + c, zeros([BLOCK], f32) - 7.0);\n"
                                   "    } else {\n"
                                   "        store(out + p * BLOCK + c, v * scale);\n"
                                   "    }\n"
                                   "}\n";

/* Early exits. `guard`: programs past the data return at once (their
 * outputs stay poisoned). `scan_ints`: per program, a while loop over its
 * row that skips multiples of 3 (continue) and stops once the sum passes
 * `limit` (break); a for loop that skips one index and breaks at a
 * data-dependent point; the first negative element of the program's
 * matrix found by nested loops that return from inside. `tile_until`:
 * tiles and a pointer carried by a while that breaks on a reduction. */
static const char SRC_EXITS[] =
    "kernel guard(f32* out, const f32* x, i32 n, constexpr i32 B = 128) {\n"
    "    let pid = program_id(0);\n"
    "    if (pid * B >= n) { return; }\n"
    "    let i = pid * B + arange(0, B);\n"
    "    store(out + i, load(x + i, i < n, 0.0) * 2.0 + 1.0, i < n);\n"
    "}\n"
    "kernel scan_ints(i32* out, const i32* x, i32 n, i32 limit, i32 skip) {\n"
    "    let p = program_id(0);\n"
    "    let row = x + p * n;\n"
    "    var s = 0;\n"
    "    var k = 0;\n"
    "    while (k < n) {\n"
    "        let v = load(row + k);\n"
    "        k += 1;\n"
    "        if (v % 3 == 0) { continue; }\n"
    "        s += v;\n"
    "        if (s > limit) { break; }\n"
    "    }\n"
    "    var t = 0;\n"
    "    var last = -1;\n"
    "    for (j in range(0, n)) {\n"
    "        if (j == skip) continue;\n"
    "        let v = load(row + j);\n"
    "        if (v > limit / 2) { last = j; break; }\n"
    "        t += v;\n"
    "    }\n"
    "    store(out + p * 8, s);\n"
    "    store(out + p * 8 + 1, k);\n"
    "    store(out + p * 8 + 2, t);\n"
    "    store(out + p * 8 + 3, last);\n"
    "    for (i in range(0, n)) {\n"
    "        var j = 0;\n"
    "        while (j < n) {\n"
    "            if (load(row + ((i + j) % n)) < 0) {\n"
    "                store(out + p * 8 + 4, i);\n"
    "                store(out + p * 8 + 5, j);\n"
    "                return;\n"
    "            }\n"
    "            j += 4;\n"
    "        }\n"
    "    }\n"
    "    store(out + p * 8 + 4, -1);\n"
    "    store(out + p * 8 + 5, -1);\n"
    "}\n"
    "kernel tile_until(f32* out, i32* iters, const f32* x, i32 n, f32 limit, constexpr i32 B = 256) {\n"
    "    let p = program_id(0);\n"
    "    let cols = arange(0, B);\n"
    "    var ptr = x + p * n * B + cols;\n"
    "    var acc = zeros([B], f32);\n"
    "    var i = 0;\n"
    "    while (true) {\n"
    "        if (i >= n) { break; }\n"
    "        acc += load(ptr);\n"
    "        ptr += B;\n"
    "        i += 1;\n"
    "        if (max(acc, 0) > limit) { break; }\n"
    "    }\n"
    "    store(out + p * B + cols, acc);\n"
    "    store(iters + p, i);\n"
    "}\n";

/* A K loop of tensor-core dots that breaks early (a `while` carrying the
 * accumulator, not pipelined): only the blocks before kmax count. */
static const char SRC_DOT_BREAK[] =
    "kernel mm_break(f32* c, const f16* a, const f16* b, i32 M, i32 N, i32 K, i32 kmax,\n"
    "                constexpr i32 BM = 64, constexpr i32 BN = 64, constexpr i32 BK = 32) {\n"
    "    let rm = program_id(0) * BM + arange(0, BM);\n"
    "    let rn = program_id(1) * BN + arange(0, BN);\n"
    "    let rk = arange(0, BK);\n"
    "    var acc = zeros([BM, BN], f32);\n"
    "    for (k in range(0, K, BK)) {\n"
    "        if (k >= kmax) { break; }\n"
    "        let x = load(a + rm[:, None] * K + (k + rk)[None, :], (rm[:, None] < M) & ((k + rk)[None, :] < K), 0.0);\n"
    "        let y = load(b + (k + rk)[:, None] * N + rn[None, :], ((k + rk)[:, None] < K) & (rn[None, :] < N), 0.0);\n"
    "        acc = dot(x, y, acc);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, (rm[:, None] < M) & (rn[None, :] < N));\n"
    "}\n";

static const char SRC_GRID2D[] =
    "kernel grid2d(i32* out, i32 M, i32 N, constexpr i32 BM = 16, constexpr i32 BN = 32) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    let val = r[:, None] * 1000 + c[None, :] + program_id(1) * 1000000 + num_programs(0) * 100000000;\n"
    "    store(out + r[:, None] * N + c[None, :], val, (r[:, None] < M) & (c[None, :] < N));\n"
    "}\n";

/* Cluster reductions: each cluster of C programs reduces one row of n
 * values, each program a tile of BLOCK of them (its part's log-sum-exp for
 * cluster_logsumexp; -inf for a part past the row's end); every program
 * writes what it got. */
static const char SRC_CLUSTERS[] =
    "kernel clusters(f32* out, i32* iout, const f32* x, const i32* xi, i32 n, constexpr i32 C = 4,\n"
    "                constexpr i32 BLOCK = 256) {\n"
    "    let pid = program_id(0);\n"
    "    let c = (pid % C) * BLOCK + arange(0, BLOCK);\n"
    "    let base = i64(pid / C) * n;\n"
    "    let m = c < n;\n"
    "    let v = load(x + base + c, m, 0.0);\n"
    "    store(out + pid * 4, cluster_sum(sum(v, 0), C));\n"
    "    let hi = max(where(m, v, -inf), 0);\n"
    "    store(out + pid * 4 + 1, cluster_max(hi, C));\n"
    "    store(out + pid * 4 + 2, cluster_min(min(where(m, v, inf), 0), C));\n"
    "    let part = hi + log(sum(where(m, exp(v - hi), 0.0), 0));\n"
    "    store(out + pid * 4 + 3, cluster_logsumexp(part, C));\n"
    "    let iv = load(xi + base + c, m, 0);\n"
    "    store(iout + pid * 2, cluster_sum(sum(iv, 0), C));\n"
    "    store(iout + pid * 2 + 1, cluster_max(max(where(m, iv, -2147483647), 0), C));\n"
    "}\n";

static const char SRC_MATMUL[] =
    "kernel matmul(f32* out, const T* a, const T* b, const f32* acc0, constexpr dtype T, constexpr i32 M = 32,\n"
    "              constexpr i32 N = 32, constexpr i32 K = 32, constexpr bool ACC = false,\n"
    "              constexpr bool BT = false) {\n"
    "    let r = arange(0, M);\n"
    "    let c = arange(0, N);\n"
    "    let k = arange(0, K);\n"
    "    let av = load(a + r[:, None] * K + k[None, :]);\n"
    "    let bv = BT ? load(b + c[None, :] * K + k[:, None]) : load(b + k[:, None] * N + c[None, :]);\n"
    "    if (ACC) {\n"
    "        let a0 = load(acc0 + r[:, None] * N + c[None, :]);\n"
    "        store(out + r[:, None] * N + c[None, :], dot(av, bv, a0));\n"
    "    } else {\n"
    "        store(out + r[:, None] * N + c[None, :], dot(av, bv));\n"
    "    }\n"
    "}\n";

/* ---- helpers ---- */

/* The common case of one f32 input and one f32 output: x gets nx normal
 * values, out room for nout values and the guard, both on the device (out
 * poisoned); the kernel runs on `programs` programs and out comes back.
 * False (the case reported failed, the buffers freed) on any error. */
static bool run_x_out(Ft *f, const char *label, tc_kernel *k, Buf *x, Buf *out, size_t nx, size_t nout,
                      unsigned programs, void **args, size_t nargs) {
    memset(x, 0, sizeof *x);
    memset(out, 0, sizeof *out);
    if (!buf_new(f, x, nx * 4) || !buf_new(f, out, (nout + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
    } else {
        for (size_t i = 0; i < nx; i++)
            ((float *)x->h)[i] = (float)gt_normal();
        if (buf_up(f, x) && buf_poison(f, out) && launch(f, k, (tc_dim3){programs, 1, 1}, args, nargs) &&
            buf_down(f, out))
            return true;
        fail_case(label, "launch failed");
    }
    buf_free(f, x);
    buf_free(f, out);
    return false;
}

/* The end of a run_x_out case: the error against the reference (the first
 * `written` outputs checked for clobbering after them), then the buffers go. */
static void done_x_out(Ft *f, const char *label, const GtErr *e, double tol, Buf *x, Buf *out, size_t written) {
    report(label, TC_DTYPE_F32, gt_err_value(e), tol, buf_clobbered(out, written * 4, 4));
    buf_free(f, x);
    buf_free(f, out);
}

/* ---- elementwise ---- */

static double ref_unary(int op, double v) {
    switch (op) {
    case 0: return exp(v);
    case 1: return exp2(v);
    case 2: return log(v);
    case 3: return log2(v);
    case 4: return sqrt(v);
    case 5: return 1 / sqrt(v);
    case 6: return erf(v);
    case 7: return tanh(v);
    case 8: return 1 / (1 + exp(-v));
    case 9: return fabs(v);
    case 10: return floor(v);
    case 11: return ceil(v);
    case 12: return sin(v);
    default: return cos(v);
    }
}

static void feat_unary(Ft *f) {
    static const char *names[] = {"exp",  "exp2",    "log", "log2",  "sqrt", "rsqrt", "erf",
                                  "tanh", "sigmoid", "abs", "floor", "ceil", "sin",   "cos"};
    const int n = 1000;
    for (int op = 0; op < 14; op++) {
        char label[64];
        snprintf(label, sizeof label, "unary f32 %s", names[op]);
        tc_constexpr cx[] = {cx_int("OP", op)};
        tc_kernel *k = get(f, label, SRC_UNARY, "unary", cx, 1, 4);
        if (!k)
            continue;
        Buf x, out;
        if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &out, (size_t)(n + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        bool positive = op >= 2 && op <= 5;
        for (int i = 0; i < n; i++)
            F32(x)
            [i] = (float)(positive   ? gt_uniform_in(0.05, 8)
                          : op >= 12 ? gt_uniform_in(-3.14, 3.14)
                                     : gt_uniform_in(-4, 4));
        int32_t nn = n;
        void *args[] = {&out.d, &x.d, &nn};
        if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){(n + 255) / 256, 1, 1}, args, 3) &&
            buf_down(f, &out)) {
            GtErr e = {0};
            for (int i = 0; i < n; i++)
                gt_err_add(&e, F32(out)[i], ref_unary(op, F32(x)[i]));
            report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5, buf_clobbered(&out, (size_t)n * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &x);
        buf_free(f, &out);
    }
}

static void feat_unary16(Ft *f) {
    static const char *names[] = {"exp", "tanh", "sigmoid", "v*v+v"};
    static const tc_dtype types[] = {TC_DTYPE_F16, TC_DTYPE_BF16};
    const int n = 777;
    for (int ti = 0; ti < 2; ti++)
        for (int op = 0; op < 4; op++) {
            tc_dtype t = types[ti];
            char label[64];
            snprintf(label, sizeof label, "unary %s %s", gt_dtype_name(t), names[op]);
            tc_constexpr cx[] = {cx_dtype("T", t), cx_int("OP", op)};
            tc_kernel *k = get(f, label, SRC_UNARY16, "unary16", cx, 2, 4);
            if (!k)
                continue;
            Buf x, out;
            if (!buf_new(f, &x, (size_t)n * 2) || !buf_new(f, &out, (size_t)(n + FGUARD) * 2)) {
                fail_case(label, "allocation failed");
                continue;
            }
            GtErr e = {0};
            double *in = malloc(sizeof(double) * (size_t)n);
            for (int i = 0; i < n; i++)
                in[i] = gt_put_get(t, x.h, (size_t)i, gt_uniform_in(-4, 4));
            int32_t nn = n;
            void *args[] = {&out.d, &x.d, &nn};
            if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){(n + 255) / 256, 1, 1}, args, 3) &&
                buf_down(f, &out)) {
                for (int i = 0; i < n; i++) {
                    double v = in[i];
                    double r = op == 0 ? exp(v) : op == 1 ? tanh(v) : op == 2 ? 1 / (1 + exp(-v)) : v * v + v;
                    gt_err_add(&e, gt_get(t, out.h, (size_t)i), r);
                }
                report(label, t, gt_err_value(&e), gt_tolerance(t), buf_clobbered(&out, (size_t)n * 2, 2));
            } else {
                fail_case(label, "launch failed");
            }
            free(in);
            buf_free(f, &x);
            buf_free(f, &out);
        }
}

static void feat_binary(Ft *f) {
    static const char *names[] = {"a+2b-1", "a*b/(|b|+1)", "minimum", "maximum", "where", "fma", "func silu+where"};
    const int n = 1001;
    for (int op = 0; op < 7; op++) {
        char label[64];
        snprintf(label, sizeof label, "binary %s", names[op]);
        tc_constexpr cx[] = {cx_int("OP", op)};
        tc_kernel *k = get(f, label, SRC_BINARY, "binary", cx, 1, 4);
        if (!k)
            continue;
        Buf x, y, out;
        if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &y, (size_t)n * 4) ||
            !buf_new(f, &out, (size_t)(n + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        for (int i = 0; i < n; i++) {
            F32(x)[i] = (float)gt_uniform_in(-3, 3);
            F32(y)[i] = (float)gt_uniform_in(-3, 3);
        }
        int32_t nn = n;
        void *args[] = {&out.d, &x.d, &y.d, &nn};
        if (buf_up(f, &x) && buf_up(f, &y) && buf_poison(f, &out) &&
            launch(f, k, (tc_dim3){(n + 127) / 128, 1, 1}, args, 4) && buf_down(f, &out)) {
            GtErr e = {0};
            for (int i = 0; i < n; i++) {
                double a = F32(x)[i], b = F32(y)[i], r;
                switch (op) {
                case 0: r = a + b * 2 - 1; break;
                case 1: r = a * b / (fabs(b) + 1); break;
                case 2: r = fmin(a, b); break;
                case 3: r = fmax(a, b); break;
                case 4: r = a > b ? a - b : b * 0.5; break;
                case 5: r = a * b + 0.25; break;
                default: r = a / (1 + exp(-a)) + (a < 0 ? 1 : 2); break;
                }
                gt_err_add(&e, F32(out)[i], r);
            }
            report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5, buf_clobbered(&out, (size_t)n * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &x);
        buf_free(f, &y);
        buf_free(f, &out);
    }
}

/* f32 -> i32 as PTX's cvt.rzi.s32.f32: toward zero, saturating, NaN -> 0. */
static int32_t f32_to_i32_sat(float v) {
    if (isnan(v))
        return 0;
    if (v >= 2147483648.0f)
        return INT32_MAX;
    if (v <= -2147483648.0f)
        return INT32_MIN;
    return (int32_t)v;
}

static void feat_casts(Ft *f) {
    const char *label = "casts f32->f16/bf16/i32, i32->f32";
    tc_kernel *k = get(f, label, SRC_CASTS, "casts", NULL, 0, 4);
    if (!k)
        return;
    const int n = 1500;
    Buf x, xi, o16, ob16, oi, of, osum;
    Buf *outs[] = {&o16, &ob16, &oi, &of, &osum};
    size_t esz[] = {2, 2, 4, 4, 4};
    bool ok = buf_new(f, &x, (size_t)n * 4) && buf_new(f, &xi, (size_t)n * 4);
    for (int i = 0; i < 5; i++)
        ok = ok && buf_new(f, outs[i], (size_t)(n + FGUARD) * esz[i]);
    if (!ok) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < n; i++) {
        double v;
        switch (i % 10) {
        case 0: v = gt_uniform_in(-1e-5, 1e-5); break;   /* f16 subnormals */
        case 1: v = gt_uniform_in(-70000, 70000); break; /* f16 overflow to inf at the ends */
        case 2: v = i % 20 == 2 ? 3e9 : -3e9; break;     /* i32 saturation */
        case 3: /* halfway between two f16 values (odd i / 10) or two bf16 values (even): to even */
            v = (i / 10) % 2 ? 1.0 + (2.0 * (double)(gt_next() % 512) + 1.0) / 2048.0
                             : 1.0 + (2.0 * (double)(gt_next() % 64) + 1.0) / 256.0;
            break;
        default: v = gt_uniform_in(-1000, 1000); break;
        }
        F32(x)[i] = (float)v;
        I32(xi)[i] = (int32_t)gt_uniform_in(-16777216, 16777216);
    }
    int32_t nn = n;
    void *args[] = {&o16.d, &ob16.d, &oi.d, &of.d, &osum.d, &x.d, &xi.d, &nn};
    ok = buf_up(f, &x) && buf_up(f, &xi);
    for (int i = 0; i < 5; i++)
        ok = ok && buf_poison(f, outs[i]);
    ok = ok && launch(f, k, (tc_dim3){(n + 255) / 256, 1, 1}, args, 8);
    for (int i = 0; i < 5; i++)
        ok = ok && buf_down(f, outs[i]);
    if (ok) {
        size_t wrong[5] = {0}, clob = 0;
        for (int i = 0; i < n; i++) {
            float v = F32(x)[i];
            uint16_t h = f32_to_f16(v), b = f32_to_bf16(v);
            wrong[0] += U16(o16)[i] != h;
            wrong[1] += U16(ob16)[i] != b;
            wrong[2] += I32(oi)[i] != f32_to_i32_sat(v);
            wrong[3] += F32(of)[i] != (float)I32(xi)[i] * 0.5f;
            float s = f16_to_f32(h) + bf16_to_f32(b);
            wrong[4] += !(F32(osum)[i] == s || (isnan(s) && isnan(F32(osum)[i])));
        }
        for (int i = 0; i < 5; i++)
            clob += buf_clobbered(outs[i], (size_t)n * esz[i], esz[i]);
        static const char *what[] = {"f16", "bf16", "i32", "i32->f32", "f16+bf16"};
        size_t total = 0;
        for (int i = 0; i < 5; i++) {
            total += wrong[i];
            if (wrong[i])
                printf("  casts: %zu of %d wrong in %s\n", wrong[i], n, what[i]);
        }
        report(label, TC_DTYPE_I32, (double)total / n, 1e-12, clob);
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &xi);
    for (int i = 0; i < 5; i++)
        buf_free(f, outs[i]);
}

static void feat_intops(Ft *f) {
    const char *label = "i32 arithmetic and bit operations";
    tc_kernel *k = get(f, label, SRC_INTOPS, "intops", NULL, 0, 4);
    if (!k)
        return;
    const int n = 1000, block = 128;
    Buf x, y, out;
    if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &y, (size_t)n * 4) ||
        !buf_new(f, &out, (size_t)(n + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < n; i++) {
        I32(x)[i] = (int32_t)gt_uniform_in(-1e6, 1e6);
        int32_t b = (int32_t)gt_uniform_in(1, 1000);
        I32(y)[i] = i % 3 == 0 ? -b : b;
    }
    int32_t nn = n;
    void *args[] = {&out.d, &x.d, &y.d, &nn};
    if (buf_up(f, &x) && buf_up(f, &y) && buf_poison(f, &out) &&
        launch(f, k, (tc_dim3){(n + block - 1) / block, 1, 1}, args, 4) && buf_down(f, &out)) {
        size_t wrong = 0;
        for (int p = 0; p * block < n; p++) {
            int32_t bmax = INT32_MIN; /* max(a, 0) reduces the program's tile, masked lanes loaded as 0 */
            for (int j = 0; j < block; j++) {
                int i = p * block + j;
                int32_t a = i < n ? I32(x)[i] : 0;
                bmax = a > bmax ? a : bmax;
            }
            for (int j = 0; j < block && p * block + j < n; j++) {
                int i = p * block + j;
                int32_t a = I32(x)[i], b = I32(y)[i];
                int32_t lhs = (a * 3 + b) / b + a % 7 - (a >> 2) + (a & 0xff);
                int32_t rhs = (int32_t)((uint32_t)b << 1) + (a < b ? a : b) - bmax;
                wrong += I32(out)[i] != (lhs ^ rhs);
            }
        }
        report(label, TC_DTYPE_I32, (double)wrong / n, 1e-12, buf_clobbered(&out, (size_t)n * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &y);
    buf_free(f, &out);
}

/* ---- reductions ---- */

static void feat_reduce(Ft *f) {
    static const int shapes[][2] = {{64, 128}, {16, 256}, {128, 32}};
    static const char *ops[] = {"sum", "max", "min"};
    static const char *axes[] = {"axis 0", "axis 1", "all"};
    const int programs = 3;
    for (int s = 0; s < 3; s++)
        for (int warps = 4; warps <= 8; warps *= 2)
            for (int axis = 0; axis < 3; axis++)
                for (int op = 0; op < 3; op++) {
                    int M = shapes[s][0], N = shapes[s][1];
                    char label[64];
                    snprintf(label, sizeof label, "reduce %dx%d w%d %s %s", M, N, warps, ops[op], axes[axis]);
                    tc_constexpr cx[] = {cx_int("M", M), cx_int("N", N), cx_int("AXIS", axis), cx_int("OP", op)};
                    tc_kernel *k = get(f, label, SRC_REDUCE, "reduce2d", cx, 4, warps);
                    if (!k)
                        continue;
                    int per = axis == 0 ? N : axis == 1 ? M : 1;
                    Buf x, out;
                    if (!buf_new(f, &x, (size_t)programs * M * N * 4) ||
                        !buf_new(f, &out, (size_t)(programs * per + FGUARD) * 4)) {
                        fail_case(label, "allocation failed");
                        continue;
                    }
                    for (int i = 0; i < programs * M * N; i++)
                        F32(x)[i] = (float)gt_normal();
                    void *args[] = {&out.d, &x.d};
                    if (buf_up(f, &x) && buf_poison(f, &out) &&
                        launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 2) && buf_down(f, &out)) {
                        GtErr e = {0};
                        for (int p = 0; p < programs; p++)
                            for (int o = 0; o < per; o++) {
                                double acc = op == 0 ? 0 : op == 1 ? -INFINITY : INFINITY, mag = 0;
                                int len = axis == 0 ? M : axis == 1 ? N : M * N;
                                for (int j = 0; j < len; j++) {
                                    int r = axis == 0 ? j : axis == 1 ? o : j / N;
                                    int c = axis == 0 ? o : axis == 1 ? j : j % N;
                                    double v = F32(x)[(size_t)p * M * N + (size_t)r * N + c];
                                    acc = op == 0 ? acc + v : op == 1 ? fmax(acc, v) : fmin(acc, v);
                                    mag += fabs(v);
                                }
                                /* a sum is as accurate as the sum of |terms| allows */
                                gt_err_add_scaled(&e, F32(out)[p * per + o], acc, op == 0 ? mag : 0);
                            }
                        report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5,
                               buf_clobbered(&out, (size_t)programs * per * 4, 4));
                    } else {
                        fail_case(label, "launch failed");
                    }
                    buf_free(f, &x);
                    buf_free(f, &out);
                }
}

/* ---- shapes and layouts ---- */

static void feat_outer(Ft *f) {
    const char *label = "broadcast, expand_dims (outer)";
    tc_kernel *k = get(f, label, SRC_OUTER, "outer", NULL, 0, 4);
    if (!k)
        return;
    const int M = 100, N = 70;
    Buf a, b, out;
    if (!buf_new(f, &a, M * 4) || !buf_new(f, &b, N * 4) || !buf_new(f, &out, (size_t)(M * N + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < M; i++)
        F32(a)[i] = (float)gt_normal();
    for (int i = 0; i < N; i++)
        F32(b)[i] = (float)gt_normal();
    int32_t mm = M, nn = N;
    void *args[] = {&out.d, &a.d, &b.d, &mm, &nn};
    if (buf_up(f, &a) && buf_up(f, &b) && buf_poison(f, &out) &&
        launch(f, k, (tc_dim3){(M + 63) / 64, (N + 31) / 32, 1}, args, 5) && buf_down(f, &out)) {
        GtErr e = {0};
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++) {
                double av = F32(a)[r], bv = F32(b)[c];
                gt_err_add(&e, F32(out)[r * N + c], av * bv + bv * 0.5 + av);
            }
        report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5, buf_clobbered(&out, (size_t)M * N * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &a);
    buf_free(f, &b);
    buf_free(f, &out);
}

static void feat_transpose(Ft *f) {
    const int M = 100, N = 90;
    for (int trans = 0; trans < 2; trans++)
        for (int warps = 4; warps <= 8; warps *= 2) {
            char label[64];
            snprintf(label, sizeof label, "transposed store%s w%d", trans ? " (trans)" : "", warps);
            tc_constexpr cx[] = {cx_bool("TRANS", trans)};
            tc_kernel *k = get(f, label, SRC_TRANSPOSE, "transpose", cx, 1, warps);
            if (!k)
                continue;
            Buf x, out;
            if (!buf_new(f, &x, (size_t)M * N * 4) || !buf_new(f, &out, (size_t)(M * N + FGUARD) * 4)) {
                fail_case(label, "allocation failed");
                continue;
            }
            for (int i = 0; i < M * N; i++)
                F32(x)[i] = (float)gt_normal();
            int32_t mm = M, nn = N;
            void *args[] = {&out.d, &x.d, &mm, &nn};
            if (buf_up(f, &x) && buf_poison(f, &out) &&
                launch(f, k, (tc_dim3){(M + 63) / 64, (N + 63) / 64, 1}, args, 4) && buf_down(f, &out)) {
                GtErr e = {0};
                for (int r = 0; r < M; r++)
                    for (int c = 0; c < N; c++)
                        gt_err_add(&e, F32(out)[c * M + r], F32(x)[r * N + c]);
                report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-12, buf_clobbered(&out, (size_t)M * N * 4, 4));
            } else {
                fail_case(label, "launch failed");
            }
            buf_free(f, &x);
            buf_free(f, &out);
        }
}

/* ---- memory ---- */

/* tc_kernel_get_info on a loaded kernel: the driver's registers (1 to 255),
 * local memory, a program of 4 warps allowed, at least one program per SM;
 * on the interpreter zeros and one program. */
static void kernel_info(Ft *f, tc_kernel *k) {
    const char *label = "tc_kernel_get_info";
    tc_kernel_info info;
    if (!GT_OK(tc_kernel_get_info(k, &info))) {
        fail_case(label, "failed");
        return;
    }
    bool ok = tc_context_interpreted(f->ctx)
                  ? info.registers == 0 && info.local_bytes == 0 && info.programs_per_sm == 1
                  : info.registers >= 1 && info.registers <= 255 && info.local_bytes >= 0 && info.max_threads >= 128 &&
                        info.programs_per_sm >= 1 && info.static_shared_bytes >= 0;
    printf("%s %-34s %d registers, %d bytes local, %d static shared, %d threads at most, %d programs/SM %s\n",
           ft_prefix, label, info.registers, info.local_bytes, info.static_shared_bytes, info.max_threads,
           info.programs_per_sm, ok ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(ok);
}

static void feat_masked(Ft *f) {
    const char *label = "masked loads with other";
    tc_kernel *k = get(f, label, SRC_MASKED, "masked", NULL, 0, 4);
    if (!k)
        return;
    kernel_info(f, k);
    const int n = 200, block = 256, total = block + 16 * 32;
    Buf x, out;
    if (!buf_new(f, &x, (size_t)block * 4) || !buf_new(f, &out, (size_t)(total + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < n; i++) /* x[n..] stays NaN: a load that ignores its mask shows */
        F32(x)[i] = (float)gt_normal();
    int32_t nn = n;
    float other = -7.5f;
    void *args[] = {&out.d, &x.d, &nn, &other};
    if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){1, 1, 1}, args, 4) && buf_down(f, &out)) {
        GtErr e = {0};
        for (int i = 0; i < block; i++)
            gt_err_add(&e, F32(out)[i], i < n ? F32(x)[i] : other);
        for (int j = 0; j < 16; j++)
            for (int c = 0; c < 32; c++)
                gt_err_add(&e, F32(out)[block + j * 32 + c], j < 5 && c < n % 32 ? F32(x)[j * 32 + c] : -2.5);
        report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-12, buf_clobbered(&out, (size_t)total * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &out);
}

static void feat_atomics(Ft *f) {
    const int n = 4000, block = 256, programs = (n + block - 1) / block;
    static const int ks[] = {16, 1};
    for (int ki = 0; ki < 2; ki++) {
        int K = ks[ki];
        char label[64];
        snprintf(label, sizeof label, "atomic_add f32+i32, %d addresses", K);
        tc_constexpr cx[] = {cx_int("K", K)};
        tc_kernel *k = get(f, label, SRC_ATOMICS, "atomics", cx, 1, 4);
        if (!k)
            continue;
        Buf x, xi, accf, acci;
        if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &xi, (size_t)n * 4) ||
            !buf_new(f, &accf, (size_t)(K + FGUARD) * 4) || !buf_new(f, &acci, (size_t)(K + 1 + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        for (int i = 0; i < n; i++) {
            F32(x)[i] = (float)gt_uniform(); /* positive: the sum's rounding error stays relative */
            I32(xi)[i] = (int32_t)gt_uniform_in(-1000, 1000);
        }
        for (int j = 0; j < K; j++)
            F32(accf)[j] = 0;
        for (int j = 0; j <= K; j++)
            I32(acci)[j] = 0;
        int32_t nn = n;
        void *args[] = {&accf.d, &acci.d, &x.d, &xi.d, &nn};
        if (buf_up(f, &x) && buf_up(f, &xi) && buf_up(f, &accf) && buf_up(f, &acci) &&
            launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 5) && buf_down(f, &accf) && buf_down(f, &acci)) {
            GtErr e = {0};
            size_t wrong = 0;
            for (int j = 0; j < K; j++) {
                double s = 0;
                int64_t si = 0;
                for (int i = j; i < n; i += K) {
                    s += F32(x)[i];
                    si += I32(xi)[i];
                }
                gt_err_add(&e, F32(accf)[j], s);
                wrong += I32(acci)[j] != si;
            }
            if (I32(acci)[K] != programs) {
                printf("  atomics: the scalar atomic_add counted %d, want one per program (%d)\n", I32(acci)[K],
                       programs);
                wrong++;
            }
            if (wrong)
                printf("  atomics: %zu i32 sums wrong\n", wrong);
            double err = gt_err_value(&e);
            report(label, TC_DTYPE_F32, wrong ? INFINITY : err, 1e-5,
                   buf_clobbered(&accf, (size_t)K * 4, 4) + buf_clobbered(&acci, (size_t)(K + 1) * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &x);
        buf_free(f, &xi);
        buf_free(f, &accf);
        buf_free(f, &acci);
    }
}

static void feat_tile_atomics(Ft *f) {
    /* M, N, the row strides of acc and x, the programs per tile, the adds per program */
    static const int cases[][6] = {
        {100, 76, 80, 76, 3, 2}, /* strides of 16 elements: TMA on sm_90a */
        {130, 200, 208, 203, 2, 3},
        {1, 4, 16, 4, 4, 1},     /* one row */
        {37, 75, 75, 75, 3, 2},  /* 300-byte rows: atomics */
        {50, 100, 100, 100, 2, 2}, /* 400-byte rows, which the JIT does not specialize for: atomics */
        {0, 76, 80, 76, 2, 1},   /* no rows: one program per tile column, which must store nothing */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int M = cases[c][0], N = cases[c][1], sa = cases[c][2], sx = cases[c][3], R = cases[c][4], reps = cases[c][5];
        char label[64];
        snprintf(label, sizeof label, "tile atomic_add %dx%d, stride %d", M, N, sa);
        Buf x, acc;
        size_t acc_n = (size_t)M * (size_t)sa;
        if (f->ctx && (!buf_new(f, &x, (size_t)(M ? M : 1) * (size_t)sx * 4) || !buf_new(f, &acc, (acc_n + FGUARD) * 4))) {
            fail_case(label, "allocation failed");
            continue;
        }
        int32_t mm = M, nn = N, rr = reps;
        int64_t sam = sa, sxm = sx;
        void *args[] = {&acc.d, &x.d, &mm, &nn, &sam, &sxm, &rr};
        /* specialized for these arguments (the JIT's facts: 16-byte aligned pointers, integers that are
         * multiples of 16), as the library's calls are */
        tc_kernel *k = get_for(f, label, SRC_TILE_ATOMICS, "tile_atomics", NULL, 0, 4, f->ctx ? args : NULL,
                               f->ctx ? 7 : 0);
        if (!k) {
            if (f->ctx) {
                buf_free(f, &x);
                buf_free(f, &acc);
            }
            continue;
        }
        /* the path: TMA reductions exactly where the target has them and the facts allow (the
         * interpreter runs the IR before the GPU passes: no TMA) */
        bool want_tma = strcmp(tc_context_arch(f->ctx), "sm_90a") == 0 && sa % 16 == 0 &&
                        !tc_context_interpreted(f->ctx);
        bool tma = tc_kernel_get_desc(k)->num_tensor_maps == 1;
        for (size_t i = 0; i < (size_t)M * (size_t)sx; i++)
            F32(x)[i] = (float)gt_uniform_in(-2, 2);
        for (size_t i = 0; i < acc_n; i++) /* the padding columns must keep their values */
            F32(acc)[i] = i % (size_t)sa < (size_t)N ? (float)gt_uniform_in(-1, 1) : 7.5f;
        float *init = malloc(acc_n ? acc_n * 4 : 4);
        if (!init) {
            fail_case(label, "allocation failed");
            buf_free(f, &x);
            buf_free(f, &acc);
            continue;
        }
        memcpy(init, acc.h, acc_n * 4);
        tc_dim3 grid = {(unsigned)(M ? (M + 63) / 64 : 1), (unsigned)((N + 63) / 64), (unsigned)R};
        if (buf_up(f, &x) && buf_up(f, &acc) && launch(f, k, grid, args, 7) && buf_down(f, &acc)) {
            GtErr e = {0};
            size_t padding = 0;
            double factor = (double)(R * reps) * (R * reps + 1) / 2; /* 1 + 2 + ... + R reps */
            for (int r = 0; r < M; r++)
                for (int col = 0; col < sa; col++) {
                    size_t i = (size_t)r * (size_t)sa + (size_t)col;
                    if (col < N)
                        gt_err_add(&e, F32(acc)[i], (double)init[i] + factor * F32(x)[(size_t)r * (size_t)sx + col]);
                    else
                        padding += F32(acc)[i] != 7.5f;
                }
            if (padding)
                printf("  tile atomics: %zu padding elements changed\n", padding);
            if (tma != want_tma)
                printf("  tile atomics: %s, expected %s\n", tma ? "TMA reductions" : "atomics",
                       want_tma ? "TMA reductions" : "atomics");
            report(label, TC_DTYPE_F32, padding || tma != want_tma ? INFINITY : gt_err_value(&e), 1e-5,
                   buf_clobbered(&acc, acc_n * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        free(init);
        buf_free(f, &x);
        buf_free(f, &acc);
    }
}

/* ---- control flow and grids ---- */

static void feat_loops(Ft *f) {
    const int block = 128, programs = 3;
    for (int iters = 0; iters <= 5; iters += 5) {
        char label[64];
        snprintf(label, sizeof label, "for loops, carried vars, %d iters", iters);
        tc_kernel *k = get(f, label, SRC_LOOPS, "loops", NULL, 0, 4);
        if (!k)
            continue;
        Buf x, out;
        size_t nx = (size_t)programs * (size_t)(iters ? iters : 1) * block, n = (size_t)programs * block;
        int32_t it = iters;
        void *args[] = {&out.d, &x.d, &it};
        if (run_x_out(f, label, k, &x, &out, nx, n, (unsigned)programs, args, 3)) {
            GtErr e = {0};
            for (int p = 0; p < programs; p++)
                for (int c = 0; c < block; c++) {
                    double acc = 0, s = 0;
                    int kk = 0;
                    for (int i = 0; i < iters; i++) {
                        acc += F32(x)[((size_t)p * iters + i) * block + c] * (i + 1);
                        s = s * 0.5 + 1;
                        kk += 2;
                    }
                    acc += 0 + 1 + 2 + 3;
                    gt_err_add(&e, F32(out)[p * block + c], acc * s + kk);
                }
            done_x_out(f, label, &e, 1e-5, &x, &out, n);
        }
    }
}

static void feat_branches(Ft *f) {
    const int block = 128, programs = 6;
    for (int flag = 0; flag <= 1; flag++) {
        char label[64];
        snprintf(label, sizeof label, "runtime if/else and ?:, flag %d", flag);
        tc_kernel *k = get(f, label, SRC_BRANCHES, "branches", NULL, 0, 4);
        if (!k)
            continue;
        Buf x, out;
        int32_t fl = flag;
        void *args[] = {&out.d, &x.d, &fl};
        size_t n = (size_t)programs * block;
        if (run_x_out(f, label, k, &x, &out, n, n, (unsigned)programs, args, 3)) {
            GtErr e = {0};
            for (int p = 0; p < programs; p++)
                for (int c = 0; c < block; c++) {
                    double v = F32(x)[p * block + c];
                    v = p % 2 == 0 ? v * 2 : v - 1;
                    if (flag)
                        v += 100;
                    double want = p == 3 ? -7.0 : v * (flag ? 0.5 : 0.25);
                    gt_err_add(&e, F32(out)[p * block + c], want);
                }
            done_x_out(f, label, &e, 1e-6, &x, &out, n);
        }
    }
}

static void feat_exit_guard(Ft *f) {
    const int block = 128;
    for (int n = 1; n <= 1000; n += 333) {
        char label[64];
        snprintf(label, sizeof label, "early return, n %d", n);
        tc_kernel *k = get(f, label, SRC_EXITS, "guard", NULL, 0, 4);
        if (!k)
            continue;
        int programs = (n + block - 1) / block + 3; /* three programs return at once */
        Buf x, out;
        int32_t nn = n;
        void *args[] = {&out.d, &x.d, &nn};
        size_t all = (size_t)programs * block;
        if (run_x_out(f, label, k, &x, &out, all, all, (unsigned)programs, args, 3)) {
            GtErr e = {0};
            for (int i = 0; i < n; i++)
                gt_err_add(&e, F32(out)[i], F32(x)[i] * 2.0 + 1.0);
            done_x_out(f, label, &e, 1e-6, &x, &out, (size_t)n);
        }
    }
}

/* The CPU's scan_ints for row r (n values): out[0..5]. */
static void ref_scan_ints(const int32_t *r, int n, int limit, int skip, int32_t *o) {
    int s = 0, k = 0;
    while (k < n) {
        int v = r[k++];
        if (v % 3 == 0)
            continue;
        s += v;
        if (s > limit)
            break;
    }
    int t = 0, last = -1;
    for (int j = 0; j < n; j++) {
        if (j == skip)
            continue;
        if (r[j] > limit / 2) {
            last = j;
            break;
        }
        t += r[j];
    }
    o[0] = s, o[1] = k, o[2] = t, o[3] = last, o[4] = -1, o[5] = -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j += 4)
            if (r[(i + j) % n] < 0) {
                o[4] = i, o[5] = j;
                return;
            }
}

static void feat_exit_loops(Ft *f) {
    const int programs = 7;
    const int sizes[] = {1, 5, 37};
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        char label[64];
        snprintf(label, sizeof label, "while/for break continue return, n %d", n);
        tc_kernel *k = get(f, label, SRC_EXITS, "scan_ints", NULL, 0, 4);
        if (!k)
            continue;
        Buf x, out;
        if (!buf_new(f, &x, (size_t)programs * n * 4) || !buf_new(f, &out, (size_t)(programs * 8 + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        /* Rows of small positive values; some rows get one negative value
         * (program 0 none), so that the nested loops return at different
         * points or run to the end. */
        for (int p = 0; p < programs; p++)
            for (int i = 0; i < n; i++)
                I32(x)[p * n + i] = (int32_t)(gt_next() % 20);
        for (int p = 1; p < programs; p += 2)
            I32(x)[p * n + (int)(gt_next() % (uint64_t)n)] = -5;
        int32_t nn = n, limit = 10 + (int32_t)(gt_next() % 60), skip = (int32_t)(gt_next() % (uint64_t)(n + 1));
        void *args[] = {&out.d, &x.d, &nn, &limit, &skip};
        if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 5) &&
            buf_down(f, &out)) {
            int wrong = 0;
            for (int p = 0; p < programs; p++) {
                int32_t want[6];
                ref_scan_ints(I32(x) + p * n, n, limit, skip, want);
                for (int j = 0; j < 6; j++)
                    if (I32(out)[p * 8 + j] != want[j]) {
                        if (wrong++ < 4)
                            printf("  program %d value %d: got %d, want %d\n", p, j, I32(out)[p * 8 + j], want[j]);
                    }
                for (int j = 6; j < 8; j++) /* never written */
                    wrong += I32(out)[p * 8 + j] != -1;
            }
            report(label, TC_DTYPE_F32, wrong ? 1.0 : 0.0, 1e-6, buf_clobbered(&out, (size_t)programs * 8 * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &x);
        buf_free(f, &out);
    }
}

static void feat_exit_tiles(Ft *f) {
    const int block = 256, programs = 5, n = 9;
    for (int w = 4; w <= 8; w += 4) {
        char label[64];
        snprintf(label, sizeof label, "while carrying tiles, break, %d warps", w);
        tc_kernel *k = get(f, label, SRC_EXITS, "tile_until", NULL, 0, w);
        if (!k)
            continue;
        Buf x, out, it;
        if (!buf_new(f, &x, (size_t)programs * n * block * 4) ||
            !buf_new(f, &out, (size_t)(programs * block + FGUARD) * 4) ||
            !buf_new(f, &it, (size_t)(programs + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        for (int i = 0; i < programs * n * block; i++)
            F32(x)[i] = (float)gt_uniform_in(0, 1);
        int32_t nn = n;
        float limit = 4.5f;
        void *args[] = {&out.d, &it.d, &x.d, &nn, &limit};
        if (buf_up(f, &x) && buf_poison(f, &out) && buf_poison(f, &it) &&
            launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 5) && buf_down(f, &out) && buf_down(f, &it)) {
            GtErr e = {0};
            int wrong_iters = 0;
            for (int p = 0; p < programs; p++) {
                /* The sums in f32, as the kernel adds them, so that the
                 * break happens at the same step. */
                float acc[256] = {0};
                int i = 0;
                while (i < n) {
                    float mx = -INFINITY;
                    for (int c = 0; c < block; c++) {
                        acc[c] += F32(x)[((size_t)p * n + i) * block + c];
                        mx = acc[c] > mx ? acc[c] : mx;
                    }
                    i++;
                    if (mx > limit)
                        break;
                }
                wrong_iters += I32(it)[p] != i;
                for (int c = 0; c < block; c++)
                    gt_err_add(&e, F32(out)[p * block + c], acc[c]);
            }
            report(label, TC_DTYPE_F32, wrong_iters ? 1.0 : gt_err_value(&e), 1e-6,
                   buf_clobbered(&out, (size_t)programs * block * 4, 4) +
                       buf_clobbered(&it, (size_t)programs * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &x);
        buf_free(f, &out);
        buf_free(f, &it);
    }
}

static void feat_dot_break(Ft *f) {
    static const int shapes[][4] = {{64, 64, 96, 50}, {70, 130, 200, 1000}, {100, 33, 77, 0}};
    for (int si = 0; si < 3; si++) {
        int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], kmax = shapes[si][3];
        char label[64];
        snprintf(label, sizeof label, "dot loop with break %dx%dx%d kmax %d", M, N, K, kmax);
        tc_kernel *k = get(f, label, SRC_DOT_BREAK, "mm_break", NULL, 0, 4);
        if (!k)
            continue;
        Buf a, b, out;
        if (!buf_new(f, &a, (size_t)M * K * 2) || !buf_new(f, &b, (size_t)K * N * 2) ||
            !buf_new(f, &out, (size_t)(M * N + FGUARD) * 4)) {
            fail_case(label, "allocation failed");
            continue;
        }
        for (int i = 0; i < M * K; i++)
            gt_put(TC_DTYPE_F16, a.h, (size_t)i, gt_uniform_in(-1, 1));
        for (int i = 0; i < K * N; i++)
            gt_put(TC_DTYPE_F16, b.h, (size_t)i, gt_uniform_in(-1, 1));
        int32_t mm = M, nn = N, kk = K, km = kmax;
        void *args[] = {&out.d, &a.d, &b.d, &mm, &nn, &kk, &km};
        tc_dim3 grid = {(unsigned)((M + 63) / 64), (unsigned)((N + 63) / 64), 1};
        if (buf_up(f, &a) && buf_up(f, &b) && buf_poison(f, &out) && launch(f, k, grid, args, 7) &&
            buf_down(f, &out)) {
            int kend = (kmax + 31) / 32 * 32; /* the blocks that start below kmax */
            kend = kend < K ? kend : K;
            GtErr e = {0};
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double ref = 0;
                    for (int x = 0; x < kend; x++)
                        ref += gt_get(TC_DTYPE_F16, a.h, (size_t)i * K + x) * gt_get(TC_DTYPE_F16, b.h, (size_t)x * N + j);
                    gt_err_add(&e, F32(out)[i * N + j], ref);
                }
            report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5, buf_clobbered(&out, (size_t)M * N * 4, 4));
        } else {
            fail_case(label, "launch failed");
        }
        buf_free(f, &a);
        buf_free(f, &b);
        buf_free(f, &out);
    }
}

static void feat_grid2d(Ft *f) {
    const char *label = "program_id/num_programs on 2 axes";
    tc_kernel *k = get(f, label, SRC_GRID2D, "grid2d", NULL, 0, 4);
    if (!k)
        return;
    const int M = 50, N = 70, BM = 16, BN = 32, gx = (M + BM - 1) / BM, gy = (N + BN - 1) / BN;
    Buf out;
    if (!buf_new(f, &out, (size_t)(M * N + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    int32_t mm = M, nn = N;
    void *args[] = {&out.d, &mm, &nn};
    if (buf_poison(f, &out) && launch(f, k, (tc_dim3){(unsigned)gx, (unsigned)gy, 1}, args, 3) && buf_down(f, &out)) {
        size_t wrong = 0;
        for (int r = 0; r < M; r++)
            for (int c = 0; c < N; c++)
                wrong += I32(out)[r * N + c] != r * 1000 + c + (c / BN) * 1000000 + gx * 100000000;
        report(label, TC_DTYPE_I32, (double)wrong / (M * N), 1e-12, buf_clobbered(&out, (size_t)M * N * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &out);
}

/* cluster_sum / cluster_max / cluster_min / cluster_logsumexp over clusters
 * of 1, 2, 4 and 8 programs (sm_90 on the GPU), rows of odd lengths and of
 * 1: the row's sum (f32, within the sum of |terms|), max, min (exact),
 * log-sum-exp (within |lse| + 1) and i32 sum and max (exact), and the same
 * bits in every program of a cluster. Then a grid
 * that is not a whole number of clusters: the launch fails. */
static void feat_clusters(Ft *f) {
    static const int sizes[] = {1, 2, 4, 8};
    const int BLOCK = 256, rows = 3;
    for (int s = 0; s < 4; s++) {
        int C = sizes[s];
        const int lens[] = {C * BLOCK - 37, 1, C * BLOCK};
        for (int li = 0; li < 3; li++) {
            int n = lens[li];
            char label[64];
            snprintf(label, sizeof label, "cluster reductions C%d n%d", C, n);
            tc_constexpr cx[] = {cx_int("C", C), cx_int("BLOCK", BLOCK)};
            tc_kernel *k = get(f, label, SRC_CLUSTERS, "clusters", cx, 2, 4);
            if (!k)
                continue;
            int programs = C * rows;
            Buf x, xi, out, iout;
            memset(&xi, 0, sizeof xi), memset(&out, 0, sizeof out), memset(&iout, 0, sizeof iout);
            if (!buf_new(f, &x, (size_t)rows * n * 4) || !buf_new(f, &xi, (size_t)rows * n * 4) ||
                !buf_new(f, &out, (size_t)(programs * 4 + FGUARD) * 4) ||
                !buf_new(f, &iout, (size_t)(programs * 2 + FGUARD) * 4)) {
                fail_case(label, "allocation failed");
            } else {
                for (int i = 0; i < rows * n; i++) {
                    F32(x)[i] = (float)gt_normal();
                    I32(xi)[i] = (int32_t)(gt_normal() * 1000.0);
                }
                int32_t nn = n;
                void *args[] = {&out.d, &iout.d, &x.d, &xi.d, &nn};
                if (buf_up(f, &x) && buf_up(f, &xi) && buf_poison(f, &out) && buf_poison(f, &iout) &&
                    launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 5) && buf_down(f, &out) &&
                    buf_down(f, &iout)) {
                    GtErr e = {0};
                    size_t wrong = 0;
                    for (int r = 0; r < rows; r++) {
                        double sum = 0, mag = 0, hi = -INFINITY, lo = INFINITY, ex = 0;
                        int64_t isum = 0;
                        int32_t imax = INT32_MIN + 1;
                        for (int j = 0; j < n; j++) {
                            double v = F32(x)[(size_t)r * n + j];
                            int32_t iv = I32(xi)[(size_t)r * n + j];
                            sum += v, mag += fabs(v), hi = fmax(hi, v), lo = fmin(lo, v);
                            isum += iv;
                            imax = iv > imax ? iv : imax;
                        }
                        for (int j = 0; j < n; j++)
                            ex += exp(F32(x)[(size_t)r * n + j] - hi);
                        double lse = hi + log(ex);
                        for (int p = r * C; p < (r + 1) * C; p++) {
                            const float *o = &F32(out)[p * 4], *o0 = &F32(out)[r * C * 4];
                            const int32_t *io = &I32(iout)[p * 2];
                            gt_err_add_scaled(&e, o[0], sum, mag);
                            gt_err_add_scaled(&e, o[3], lse, fabs(lse) + 1.0);
                            wrong += o[1] != (float)hi || o[2] != (float)lo || io[0] != (int32_t)isum || io[1] != imax;
                            wrong += memcmp(o, o0, 16) != 0; /* every program of the cluster: the same bits */
                        }
                    }
                    report(label, TC_DTYPE_F32, wrong ? 1.0 : gt_err_value(&e), 1e-5,
                           buf_clobbered(&out, (size_t)programs * 4 * 4, 4) +
                               buf_clobbered(&iout, (size_t)programs * 2 * 4, 4));
                } else {
                    fail_case(label, "launch failed");
                }
            }
            buf_free(f, &x);
            buf_free(f, &xi);
            buf_free(f, &out);
            buf_free(f, &iout);
        }
    }
    /* a grid of 3 clusters of 4 and one program more */
    const char *label = "cluster reductions: grid not a multiple of the cluster";
    tc_constexpr cx[] = {cx_int("C", 4), cx_int("BLOCK", BLOCK)};
    tc_kernel *k = get(f, label, SRC_CLUSTERS, "clusters", cx, 2, 4);
    Buf x, out;
    memset(&out, 0, sizeof out);
    if (k && buf_new(f, &x, (size_t)BLOCK * 16 * 4) && buf_new(f, &out, (size_t)(13 * 4 + FGUARD) * 4)) {
        int32_t nn = 4 * BLOCK;
        void *args[] = {&out.d, &out.d, &x.d, &x.d, &nn};
        tc_status st = tc_launch(k, (tc_dim3){13, 1, 1}, NULL, args, 5);
        if (st == TC_OK)
            st = tc_stream_synchronize(f->ctx, NULL);
        report(label, TC_DTYPE_I32, st == TC_OK ? 1.0 : 0.0, 1e-12, false);
        if (st != TC_OK)
            printf("%s: %s: refused: %s\n", ft_prefix, label, tc_last_error());
    } else if (k) {
        fail_case(label, "allocation failed");
    }
    if (k) {
        buf_free(f, &x);
        buf_free(f, &out);
    }
}

/* ---- dot ---- */

/* One program's dot, from registers: 32x32x32 in every type (mma.sync or
 * FMA), and f16/bf16 shapes that sm_90a runs on wgmma with its operands
 * stored into #nvmma_shared buffers: one and two m64 tiles per warpgroup,
 * two warpgroups along M or along N, instruction n from 16 to 256, K of 16
 * (32-byte swizzle) to 64 (128-byte), B N-major (row-major) and K-major
 * (BT: stored N x K). On sm_80/sm_90 the same cases run on mma.sync. */
static void feat_dot(Ft *f) {
    static const tc_dtype types[] = {TC_DTYPE_F32, TC_DTYPE_F16, TC_DTYPE_BF16};
    static const struct {
        int m, n, k, warps;
    } shapes[] = {{32, 32, 32, 4},  {64, 64, 32, 4},  {128, 128, 64, 4}, {64, 256, 16, 8},
                  {128, 256, 32, 8}, {256, 64, 64, 8}, {64, 32, 16, 4},   {64, 16, 32, 4}};
    for (int ci = 0; ci < (int)(sizeof shapes / sizeof shapes[0]) * 3 * 2 * 2; ci++) {
        int si = ci / 12, ti = ci / 4 % 3, acc = ci / 2 % 2, bt = ci % 2;
        {
            tc_dtype t = types[ti];
            const int M = shapes[si].m, N = shapes[si].n, K = shapes[si].k;
            if ((si > 0 && t == TC_DTYPE_F32) || (si == 0 && bt) || (si > 1 && acc && bt))
                continue; /* f32 (FMA) at 32^3 only; each wgmma shape with and without acc, B both ways */
            char label[96];
            snprintf(label, sizeof label, "dot %dx%dx%d w%d %s%s%s", M, N, K, shapes[si].warps, gt_dtype_name(t),
                     acc ? " + acc" : "", bt ? " B k-major" : "");
            tc_constexpr cx[] = {cx_dtype("T", t), cx_bool("ACC", acc), cx_int("M", M), cx_int("N", N),
                                 cx_int("K", K),   cx_bool("BT", bt)};
            tc_kernel *k = get(f, label, SRC_MATMUL, "matmul", cx, 6, shapes[si].warps);
            if (!k)
                continue;
            size_t es = gt_dtype_bytes(t);
            Buf a, b, a0, out;
            if (!buf_new(f, &a, (size_t)M * K * es) || !buf_new(f, &b, (size_t)K * N * es) ||
                !buf_new(f, &a0, (size_t)M * N * 4) || !buf_new(f, &out, (size_t)(M * N + FGUARD) * 4)) {
                fail_case(label, "allocation failed");
                continue;
            }
            for (int i = 0; i < M * K; i++)
                gt_put(t, a.h, (size_t)i, gt_uniform_in(-1, 1));
            for (int i = 0; i < K * N; i++)
                gt_put(t, b.h, (size_t)i, gt_uniform_in(-1, 1));
            for (int i = 0; i < M * N; i++)
                F32(a0)[i] = (float)gt_normal();
            void *args[] = {&out.d, &a.d, &b.d, &a0.d};
            if (buf_up(f, &a) && buf_up(f, &b) && buf_up(f, &a0) && buf_poison(f, &out) &&
                launch(f, k, (tc_dim3){1, 1, 1}, args, 4) && buf_down(f, &out)) {
                GtErr e = {0};
                for (int r = 0; r < M; r++)
                    for (int c = 0; c < N; c++) {
                        double s = acc ? F32(a0)[r * N + c] : 0;
                        for (int kk = 0; kk < K; kk++)
                            s += gt_get(t, a.h, (size_t)(r * K + kk)) *
                                 gt_get(t, b.h, (size_t)(bt ? c * K + kk : kk * N + c));
                        gt_err_add(&e, F32(out)[r * N + c], s);
                    }
                report(label, t, gt_err_value(&e), gt_tolerance(t), buf_clobbered(&out, (size_t)M * N * 4, 4));
            } else {
                fail_case(label, "launch failed");
            }
            buf_free(f, &a);
            buf_free(f, &b);
            buf_free(f, &a0);
            buf_free(f, &out);
        }
    }
}

static void run_all(Ft *f) {
    feat_unary(f);
    feat_unary16(f);
    feat_binary(f);
    feat_casts(f);
    feat_intops(f);
    feat_reduce(f);
    feat_outer(f);
    feat_transpose(f);
    feat_masked(f);
    feat_atomics(f);
    feat_tile_atomics(f);
    feat_loops(f);
    feat_branches(f);
    feat_exit_guard(f);
    feat_exit_loops(f);
    feat_exit_tiles(f);
    feat_dot_break(f);
    feat_grid2d(f);
    feat_clusters(f);
    feat_dot(f);
}

int main(void) {
    static const char *const archs[] = {"sm_90a"};
    return ft_main("test_features", "features", archs, 1, run_all);
}
