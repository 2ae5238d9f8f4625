/*
 * test_interp.c — the IR interpreter (include/tilec/interp.h) on hand-written
 * IR and on kernels compiled from source: the integer and float rules of
 * the generated code, memory checks with their messages, control flow,
 * reductions, asserts, calls, and the IR it refuses.
 */
#include "tilec/interp.h"
#include "tilec/runtime.h"
#include "tilec/stdlib.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir_test_util.h"
#include "unit.h"

/* ---- memory the tests hand out: every buffer the find callback knows ---- */

typedef struct Mem {
    uint64_t base[16], size[16];
    int n;
} Mem;

static int mem_find(void *user, uint64_t addr, uint64_t *base, uint64_t *bytes) {
    Mem *m = user;
    *base = *bytes = 0;
    for (int i = 0; i < m->n; i++) {
        if (addr >= m->base[i] && addr - m->base[i] < m->size[i]) {
            *base = m->base[i];
            *bytes = m->size[i];
            return 1;
        }
        if (addr >= m->base[i] && m->base[i] >= *base) { /* the nearest below, for the message */
            *base = m->base[i];
            *bytes = m->size[i];
        }
    }
    return 0;
}

static void *mem_add(Mem *m, size_t bytes) {
    void *p = calloc(1, bytes);
    m->base[m->n] = (uint64_t)(uintptr_t)p;
    m->size[m->n++] = bytes;
    return p;
}

static void mem_free(Mem *m) {
    for (int i = 0; i < m->n; i++)
        free((void *)(uintptr_t)m->base[i]);
    m->n = 0;
}

/* ---- loading ---- */

static tc_interp_module *load_ir(const char *text) {
    tc_source src = {"t.tir", text, strlen(text)};
    tc_interp_module *m = NULL;
    tc_status st = tc_interp_load(&src, &m, NULL);
    if (st != TC_OK)
        fprintf(stderr, "tc_interp_load: %s\n", tc_last_error());
    return m;
}

/* The kernel compiled from tile source to IR (with loc(...)), loaded. */
static tc_interp_module *load_tile(const char *text, const char *kernel) {
    return unit_interp_load_tile("k.tile", text, strlen(text), kernel, NULL, 0, true);
}

/* Kernel `kernel` of the library's file `file` (tc_stdlib_source) with these
 * constexprs, loaded. */
static tc_interp_module *load_lib(const char *file, const char *kernel, const tc_constexpr *cx, size_t ncx) {
    const char *text;
    size_t len;
    if (tc_stdlib_source(file, &text, &len) != TC_OK)
        return NULL;
    return unit_interp_load_tile(file, text, len, kernel, cx, ncx, false);
}

static tc_status launch(tc_interp_module *m, const char *kernel, unsigned gx, void **args, Mem *mem) {
    tc_interp_kernel *k = NULL;
    tc_status st = tc_interp_get_kernel(m, kernel, &k);
    if (st != TC_OK)
        return st;
    unsigned grid[3] = {gx, 1, 1};
    tc_interp_memory mm = {mem_find, mem};
    return tc_interp_launch(k, grid, args, mem ? &mm : NULL);
}

/* ---- integers: the generated code's rules ---- */

static const char IR_INTS[] = "kernel @ints(%out: ptr<i32>, %a: i32, %b: i32, %f: f32) {\n"
                              "  %q = div %a, %b : i32\n"
                              "  %r = rem %a, %b : i32\n"
                              "  %sl = shl %a, %b : i32\n"
                              "  %sr = shr %a, %b : i32\n"
                              "  %hi = umulhi %a, %a : i32\n"
                              "  %c = cast %f : i32\n"
                              "  %a8 = cast %a : i8\n"
                              "  %s8 = add %a8, %a8 : i8\n"
                              "  %w = cast %s8 : i32\n"
                              "  %k1 = constant {value = 1} : i32\n"
                              "  %k2 = constant {value = 2} : i32\n"
                              "  %k3 = constant {value = 3} : i32\n"
                              "  %k4 = constant {value = 4} : i32\n"
                              "  %k5 = constant {value = 5} : i32\n"
                              "  %k6 = constant {value = 6} : i32\n"
                              "  %p1 = addptr %out, %k1 : ptr<i32>\n"
                              "  %p2 = addptr %out, %k2 : ptr<i32>\n"
                              "  %p3 = addptr %out, %k3 : ptr<i32>\n"
                              "  %p4 = addptr %out, %k4 : ptr<i32>\n"
                              "  %p5 = addptr %out, %k5 : ptr<i32>\n"
                              "  %p6 = addptr %out, %k6 : ptr<i32>\n"
                              "  store %out, %q\n"
                              "  store %p1, %r\n"
                              "  store %p2, %sl\n"
                              "  store %p3, %sr\n"
                              "  store %p4, %hi\n"
                              "  store %p5, %c\n"
                              "  store %p6, %w\n"
                              "  return\n"
                              "}\n";

static void run_ints(tc_interp_module *m, int32_t a, int32_t b, float f, int32_t *out) {
    Mem mem = {0};
    int32_t *buf = mem_add(&mem, 7 * sizeof(int32_t));
    uint64_t p = (uint64_t)(uintptr_t)buf;
    void *args[] = {&p, &a, &b, &f};
    CHECK_EQ_INT(launch(m, "ints", 1, args, &mem), TC_OK);
    memcpy(out, buf, 7 * sizeof(int32_t));
    mem_free(&mem);
}

TEST(test_int_rules) {
    tc_interp_module *m = load_ir(IR_INTS);
    CHECK(m != NULL);
    if (!m)
        return;
    int32_t o[7];
    run_ints(m, 7, 0, NAN, o); /* x / 0 = x, x % 0 = 0, shifts by 0; NaN -> 0 */
    CHECK_EQ_INT(o[0], 7);
    CHECK_EQ_INT(o[1], 0);
    CHECK_EQ_INT(o[2], 7);
    CHECK_EQ_INT(o[3], 7);
    CHECK_EQ_INT(o[5], 0);
    CHECK_EQ_INT(o[6], 14);
    run_ints(m, INT32_MIN, -1, 3e9f, o); /* INT_MIN / -1 wraps; saturating conversion */
    CHECK_EQ_INT(o[0], INT32_MIN);
    CHECK_EQ_INT(o[1], 0);
    CHECK_EQ_INT(o[3], -1); /* shr by 0xffffffff: the sign in every bit */
    CHECK_EQ_INT(o[4], 0x40000000);
    CHECK_EQ_INT(o[5], INT32_MAX);
    run_ints(m, -1, 33, -2.7f, o); /* shifts past the width */
    CHECK_EQ_INT(o[2], 0);
    CHECK_EQ_INT(o[3], -1);
    CHECK_EQ_INT(o[4], -2); /* 0xffffffff^2 >> 32 = 0xfffffffe */
    CHECK_EQ_INT(o[5], -2);
    run_ints(m, 100, 3, -3e9f, o); /* i8: 100 + 100 wraps to -56 */
    CHECK_EQ_INT(o[0], 33);
    CHECK_EQ_INT(o[1], 1);
    CHECK_EQ_INT(o[2], 800);
    CHECK_EQ_INT(o[3], 12);
    CHECK_EQ_INT(o[5], INT32_MIN);
    CHECK_EQ_INT(o[6], -56);
    run_ints(m, -7, 2, 0.5f, o); /* truncating division, remainder of the dividend's sign */
    CHECK_EQ_INT(o[0], -3);
    CHECK_EQ_INT(o[1], -1);
    CHECK_EQ_INT(o[3], -2);
    tc_interp_unload(m);
}

/* ---- floats: f16 rounds after every op ---- */

static const char IR_HALVES[] = "kernel @halves(%out: ptr<f16>, %x: f32, %y: f16) {\n"
                                "  %h = cast %x : f16\n"
                                "  %s = add %y, %y : f16\n"
                                "  %one = constant {value = 1.0} : f16\n"
                                "  %t = add %s, %one : f16\n"
                                "  %k1 = constant {value = 1} : i32\n"
                                "  %p1 = addptr %out, %k1 : ptr<f16>\n"
                                "  store %out, %h\n"
                                "  store %p1, %t\n"
                                "  return\n"
                                "}\n";

TEST(test_f16_rounding) {
    tc_interp_module *m = load_ir(IR_HALVES);
    CHECK(m != NULL);
    if (!m)
        return;
    struct {
        float x;
        uint16_t y, want_h, want_t;
    } cases[] = {
        {1.0f + 0x1p-11f, 0x4400 /* 4 */, 0x3c00 /* ties to even: 1 */, 0x4880 /* 8 + 1 */},
        {1.0f + 0x1.8p-10f, 0x6400 /* 1024 */, 0x3c02 /* 1 + 2^-9 */, 0x6800 /* 2048 + 1 = 2048 */},
        {70000.0f, 0x7bff /* 65504 */, 0x7c00 /* inf */, 0x7c00},
        {0x1p-25f, 0x0001, 0x0000 /* half the smallest subnormal: to even, 0 */, 0x3c00 /* 1 + 2^-23 = 1 */},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Mem mem = {0};
        uint16_t *buf = mem_add(&mem, 4);
        uint64_t p = (uint64_t)(uintptr_t)buf;
        void *args[] = {&p, &cases[c].x, &cases[c].y};
        CHECK_EQ_INT(launch(m, "halves", 1, args, &mem), TC_OK);
        CHECK_EQ_INT(buf[0], cases[c].want_h);
        CHECK_EQ_INT(buf[1], cases[c].want_t);
        mem_free(&mem);
    }
    tc_interp_unload(m);
}

/* ---- memory: masks, bounds, messages ---- */

static const char SRC_COPY[] = "kernel copy(f32* out, const f32* x, i32 n, constexpr i32 B = 64) {\n"
                               "    let i = program_id(0) * B + arange(0, B);\n"
                               "    let v = load(x + i, i < n, -1.0);\n"
                               "    store(out + i, v * 2.0, i < n + 1);\n"
                               "}\n";

TEST(test_memory_checks) {
    tc_interp_module *m = load_tile(SRC_COPY, "copy");
    CHECK(m != NULL);
    if (!m)
        return;
    Mem mem = {0};
    enum { N = 100 };
    float *x = mem_add(&mem, N * sizeof(float)), *out = mem_add(&mem, (N + 1) * sizeof(float));
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    uint64_t px = (uint64_t)(uintptr_t)x, po = (uint64_t)(uintptr_t)out;
    int32_t n = N;
    void *args[] = {&po, &px, &n};
    /* two programs; element N is masked on the load (other = -1) and stored */
    CHECK_EQ_INT(launch(m, "copy", 2, args, &mem), TC_OK);
    bool right = true;
    for (int i = 0; i < N; i++)
        right &= out[i] == 2.0f * (float)i;
    CHECK(right);
    CHECK(out[N] == -2.0f);

    /* out one element short: the store of element N runs past it */
    mem.size[1] = N * sizeof(float);
    out[N - 1] = 0;
    CHECK_EQ_INT(launch(m, "copy", 2, args, &mem), TC_ERROR_LAUNCH);
    const char *msg = tc_last_error();
    CHECK(strstr(msg, "k.tile:4:") != NULL);
    CHECK(strstr(msg, "a store of 4 bytes") != NULL);
    CHECK(strstr(msg, "(element (36))") != NULL);
    CHECK(strstr(msg, "runs past the end of the allocation") != NULL);
    CHECK(strstr(msg, "program (1, 0, 0)") != NULL);
    CHECK(out[N - 1] == 2.0f * (N - 1)); /* the elements before the fault were stored */

    /* a pointer outside every allocation, and a misaligned one */
    uint64_t wild = 64;
    void *wild_args[] = {&po, &wild, &n};
    CHECK_EQ_INT(launch(m, "copy", 1, wild_args, &mem), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "a load of 4 bytes at address 0x40") != NULL);
    CHECK(strstr(tc_last_error(), "outside every allocation") != NULL);
    uint64_t odd = px + 2;
    void *odd_args[] = {&po, &odd, &n};
    CHECK_EQ_INT(launch(m, "copy", 1, odd_args, &mem), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "misaligned") != NULL);

    /* n = 0: every element masked, nothing read (x may be anything) */
    int32_t zero = 0;
    void *none_args[] = {&po, &wild, &zero};
    mem.size[1] = (N + 1) * sizeof(float);
    CHECK_EQ_INT(launch(m, "copy", 1, none_args, &mem), TC_OK);
    CHECK(out[0] == -2.0f && out[1] == 2.0f);
    /* an empty grid runs nothing */
    tc_interp_kernel *k = NULL;
    CHECK_EQ_INT(tc_interp_get_kernel(m, "copy", &k), TC_OK);
    unsigned empty[3] = {0, 1, 1};
    CHECK_EQ_INT(tc_interp_launch(k, empty, args, NULL), TC_OK);
    CHECK_EQ_INT(tc_interp_kernel_num_params(k), 3);
    mem_free(&mem);
    tc_interp_unload(m);
}

/* ---- control flow, reductions, asserts ---- */

static const char SRC_FLOW[] = "kernel flow(i32* out, const f32* x, i32 n) {\n"
                               "    var s = 0;\n"
                               "    var k = 0;\n"
                               "    while (k < n) {\n"
                               "        k += 1;\n"
                               "        if (k % 3 == 0) { continue; }\n"
                               "        s += k;\n"
                               "        if (s > 20) { break; }\n"
                               "    }\n"
                               "    store(out, s);\n"
                               "    store(out + 1, k);\n"
                               "    let v = load(x + arange(0, 8));\n"
                               "    store(out + 2, argmax(v, 0));\n"
                               "    store(out + 3, argmin(v, 0));\n"
                               "    store(out + 4, sum(i32(v), 0));\n"
                               "    device_assert(v != 1000.0, \"v is not 1000\");\n"
                               "}\n";

TEST(test_flow_and_reductions) {
    tc_interp_module *m = load_tile(SRC_FLOW, "flow");
    CHECK(m != NULL);
    if (!m)
        return;
    Mem mem = {0};
    int32_t *out = mem_add(&mem, 5 * sizeof(int32_t));
    float *x = mem_add(&mem, 8 * sizeof(float));
    float v[8] = {1, 7, -3, 7, -3, 2, 0, 5}; /* ties: the first index wins */
    memcpy(x, v, sizeof v);
    uint64_t po = (uint64_t)(uintptr_t)out, px = (uint64_t)(uintptr_t)x;
    int32_t n = 100;
    void *args[] = {&po, &px, &n};
    CHECK_EQ_INT(launch(m, "flow", 1, args, &mem), TC_OK);
    CHECK_EQ_INT(out[0], 1 + 2 + 4 + 5 + 7 + 8); /* 27 > 20 after k = 8 */
    CHECK_EQ_INT(out[1], 8);
    CHECK_EQ_INT(out[2], 1);
    CHECK_EQ_INT(out[3], 2);
    CHECK_EQ_INT(out[4], 16);
    n = 4; /* the loop's own condition ends it */
    CHECK_EQ_INT(launch(m, "flow", 1, args, &mem), TC_OK);
    CHECK_EQ_INT(out[0], 1 + 2 + 4);
    CHECK_EQ_INT(out[1], 4);
    x[5] = NAN; /* a NaN is the largest and the smallest */
    CHECK_EQ_INT(launch(m, "flow", 1, args, &mem), TC_OK);
    CHECK_EQ_INT(out[2], 5);
    CHECK_EQ_INT(out[3], 5);
    x[6] = 1000; /* the assert fails, naming its line */
    CHECK_EQ_INT(launch(m, "flow", 3, args, &mem), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "k.tile:16:") != NULL);
    CHECK(strstr(tc_last_error(), "v is not 1000") != NULL);
    CHECK(strstr(tc_last_error(), "program (0, 0, 0)") != NULL);
    mem_free(&mem);
    tc_interp_unload(m);
}

/* ---- what the interpreter refuses, and calls ---- */

TEST(test_refused_ir) {
    tc_source src = {"gpu.tir", "kernel @k() {\n  barrier\n  return\n}\n", 0};
    src.len = strlen(src.text);
    tc_interp_module *m = NULL;
    tc_diagnostics *d = NULL;
    CHECK_EQ_INT(tc_diagnostics_create(&d), TC_OK);
    CHECK_EQ_INT(tc_interp_load(&src, &m, d), TC_ERROR_COMPILE);
    CHECK(m == NULL);
    CHECK(strstr(tc_diagnostics_text(d), "gpu.tir:2:3: error: 'barrier' is an op of the GPU passes") != NULL);
    tc_diagnostics_clear(d);
    tc_source bad = {"bad.tir", "kernel @k( {", 12};
    CHECK_EQ_INT(tc_interp_load(&bad, &m, d), TC_ERROR_COMPILE);
    CHECK(strstr(tc_diagnostics_text(d), "bad.tir:1:") != NULL);
    tc_diagnostics_destroy(d);
    CHECK_EQ_INT(tc_interp_load(NULL, &m, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_interp_get_kernel(NULL, "k", NULL), TC_ERROR_INVALID_ARGUMENT);
    unsigned grid[3] = {1, 1, 1};
    CHECK_EQ_INT(tc_interp_launch(NULL, grid, NULL, NULL), TC_ERROR_INVALID_ARGUMENT);
}

static const char IR_CALLS[] = "func @twice(%x: i32) -> (i32) {\n"
                               "  %y = add %x, %x : i32\n"
                               "  return %y\n"
                               "}\n"
                               "kernel @calls(%out: ptr<i32>, %a: i32) {\n"
                               "  %b = call %a {callee = @twice} : i32\n"
                               "  %c = call %b {callee = @twice} : i32\n"
                               "  store %out, %c\n"
                               "  return\n"
                               "}\n";

TEST(test_calls_and_loops) {
    tc_interp_module *m = load_ir(IR_CALLS);
    CHECK(m != NULL);
    if (!m)
        return;
    Mem mem = {0};
    int32_t *out = mem_add(&mem, 4);
    uint64_t po = (uint64_t)(uintptr_t)out;
    int32_t a = 5;
    void *args[] = {&po, &a};
    CHECK_EQ_INT(launch(m, "calls", 1, args, &mem), TC_OK);
    CHECK_EQ_INT(out[0], 20);
    tc_interp_kernel *k = NULL;
    CHECK_EQ_INT(tc_interp_get_kernel(m, "twice", &k), TC_ERROR_INVALID_ARGUMENT); /* a func, not a kernel */
    mem_free(&mem);
    tc_interp_unload(m);

    /* a for loop whose step never reaches the bound stops with a message */
    static const char IR_STEP[] = "kernel @spin(%n: i32, %step: i32) {\n"
                                  "  %c0 = constant {value = 0} : i32\n"
                                  "  for %c0, %n, %step {\n"
                                  "  ^bb(%i: i32):\n"
                                  "    yield\n"
                                  "  }\n"
                                  "  return\n"
                                  "}\n";
    m = load_ir(IR_STEP);
    CHECK(m != NULL);
    if (!m)
        return;
    int32_t n = 10, step = 0;
    void *sargs[] = {&n, &step};
    CHECK_EQ_INT(launch(m, "spin", 1, sargs, NULL), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "never ends") != NULL);
    step = 3;
    CHECK_EQ_INT(launch(m, "spin", 1, sargs, NULL), TC_OK);
    n = INT32_MAX, step = 1 << 30; /* the counter would wrap */
    CHECK_EQ_INT(launch(m, "spin", 1, sargs, NULL), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "overflows") != NULL);
    tc_interp_unload(m);
}

/* Clusters: a reduction inside a loop, run by the programs of each cluster
 * taking turns; a program that returns before a reduction the others reach
 * stops the launch (a GPU would hang); a program that fails stops its
 * cluster; a grid that is not whole clusters is refused. */
TEST(test_clusters) {
    static const char SRC[] = "kernel loop(f32* out, i32 iters, i32 quit) {\n"
                              "    let pid = program_id(0);\n"
                              "    var acc = 0.0;\n"
                              "    for (i in range(0, iters)) {\n"
                              "        if (pid == quit && i == 1) { return; }\n"
                              "        acc += cluster_sum(f32(pid * 10 + i), 4);\n"
                              "    }\n"
                              "    store(out + pid, acc + f32(cluster_max(pid, 4)));\n"
                              "}\n"
                              "kernel lse(f32* out, const f32* x) {\n"
                              "    let pid = program_id(0);\n"
                              "    store(out + pid, cluster_logsumexp(load(x + pid), 4));\n"
                              "}\n"
                              "kernel faults(f32* out, i32 bad) {\n"
                              "    let pid = program_id(0);\n"
                              "    let v = load(out + (pid == bad ? 1 << 28 : pid));\n"
                              "    store(out + pid, cluster_sum(v, 2));\n"
                              "}\n";
    tc_interp_module *m = load_tile(SRC, NULL);
    CHECK(m != NULL);
    if (!m)
        return;
    Mem mem = {0};
    float *out = mem_add(&mem, 8 * sizeof(float));
    int32_t iters = 3, quit = -1;
    void *args[] = {&out, &iters, &quit};
    CHECK_EQ_INT(launch(m, "loop", 8, args, &mem), TC_OK);
    for (int p = 0; p < 8; p++) {
        int c = p / 4 * 4; /* the cluster's first program */
        double want = 0;
        for (int i = 0; i < iters; i++)
            for (int r = c; r < c + 4; r++)
                want += r * 10 + i;
        CHECK(out[p] == (float)(want + c + 3));
    }
    quit = 5; /* program 5 returns at i = 1; 4, 6 and 7 wait there */
    CHECK_EQ_INT(launch(m, "loop", 8, args, &mem), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "ended without reaching this cluster_sum") != NULL);
    quit = -1;
    CHECK_EQ_INT(launch(m, "loop", 6, args, &mem), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "not a multiple") != NULL);
    /* logsumexp over each cluster of 4: ordinary values, -inf (an empty part), +inf with a NaN */
    float *x = mem_add(&mem, 16 * sizeof(float));
    float *lse = mem_add(&mem, 16 * sizeof(float));
    const float xs[16] = {1.0f,      -2.0f,     3.5f,      0.25f, 100.0f, -INFINITY, 99.0f, -INFINITY,
                          -INFINITY, -INFINITY, -INFINITY, 7.0f,  1.0f,   INFINITY,  NAN,   2.0f};
    memcpy(x, xs, sizeof xs);
    void *largs[] = {&lse, &x};
    CHECK_EQ_INT(launch(m, "lse", 16, largs, &mem), TC_OK);
    for (int p = 0; p < 16; p++) {
        int c = p / 4 * 4;
        double mx = -INFINITY, sum = 0;
        for (int r = c; r < c + 4; r++)
            mx = xs[r] > mx ? xs[r] : mx;
        for (int r = c; r < c + 4; r++)
            sum += exp(xs[r] - mx);
        double want = mx + log(sum);
        if (c == 8)
            CHECK(lse[p] == 7.0f); /* three -inf and 7 */
        else if (c == 12)
            CHECK(isnan(lse[p])); /* a NaN wins over +inf */
        else
            CHECK(fabs(lse[p] - want) <= 1e-5 * fabs(want));
    }
    int32_t bad = 3;
    void *fargs[] = {&out, &bad};
    CHECK_EQ_INT(launch(m, "faults", 4, fargs, &mem), TC_ERROR_LAUNCH);
    CHECK(strstr(tc_last_error(), "program (3, 0, 0)") != NULL);
    mem_free(&mem);
    tc_interp_unload(m);
}

/* The larger of two errors, a NaN counting as infinite (fmax would drop it). */
static double worse(double a, double e) {
    return isnan(e) ? INFINITY : fmax(a, e);
}

/* A split-row case's verdict: the worst error within 1e-5, and the gaps
 * between the rows left alone. */
static void check_split(const char *what, int cols, int C, double worst, bool gaps) {
    if (worst > 1e-5 || !gaps)
        fprintf(stderr, "%s: %d columns, C %d: worst %g, gaps %s\n", what, cols, C, worst, gaps ? "kept" : "written");
    CHECK(worst <= 1e-5);
    CHECK(gaps);
}

/* The library's row loops split over clusters (CLUSTER: softmax and
 * RMSNorm, forward and backward), f32, against float64: rows of 301
 * columns in parts of 80 on tiles of 32 (a ragged last part), of 9 (a part
 * of one column, two empty ones) and of 1, each with CLUSTER 4 and 1; in
 * the rows of 301 the softmax's row 1 is -inf from column 100 on (whole
 * parts of -inf) and row 2 up to column 70 (tiles of -inf before any
 * number). */
TEST(test_lib_clusters) {
    static const int widths[] = {301, 9, 1};
    for (int wi = 0; wi < 3; wi++)
        for (int C = 1; C <= 4; C += 3) {
            const int rows = 3, n = widths[wi];
            const int64_t stride = n + 3; /* gaps between the rows, left alone */
            tc_constexpr cx[] = {{"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F32, 0},
                                 {"BLOCK", TC_CONSTEXPR_INT, 32, 0},
                                 {"CLUSTER", TC_CONSTEXPR_INT, C, 0},
                                 {"SINGLE_TILE", TC_CONSTEXPR_BOOL, 0, 0}};
            tc_interp_module *fwd = load_lib("softmax.tile", "softmax_fwd", cx, 4);
            tc_interp_module *bwd = load_lib("softmax.tile", "softmax_bwd", cx, 3);
            tc_interp_module *rms = load_lib("rmsnorm.tile", "rmsnorm_fwd", cx, 4);
            tc_interp_module *rmsb = load_lib("rmsnorm.tile", "rmsnorm_bwd", cx, 3);
            CHECK(fwd && bwd && rms && rmsb);
            Mem mem = {0};
            size_t bytes = (size_t)(rows * stride) * sizeof(float);
            float *x = mem_add(&mem, bytes), *y = mem_add(&mem, bytes), *dy = mem_add(&mem, bytes);
            float *dx = mem_add(&mem, bytes), *w = mem_add(&mem, (size_t)n * sizeof(float));
            float *rn = mem_add(&mem, bytes), *rstd = mem_add(&mem, rows * sizeof(float));
            float *rdx = mem_add(&mem, bytes), *dw = mem_add(&mem, (size_t)n * sizeof(float)); /* zeroed */
            for (int i = 0; i < rows * stride; i++) {
                x[i] = (float)((i * 7919) % 211) / 37.0f - 2.0f;
                dy[i] = (float)((i * 104729) % 193) / 53.0f - 1.5f;
                y[i] = dx[i] = rn[i] = rdx[i] = -7.0f;
            }
            for (int c = 0; c < n; c++)
                w[c] = 0.5f + (float)c / (float)n;
            float *sx = mem_add(&mem, bytes); /* the softmax's input: x with -inf heads and tails */
            for (int i = 0; i < rows * stride; i++) {
                int r = i / (int)stride, c = i % (int)stride;
                sx[i] = n == 301 && ((r == 1 && c >= 100) || (r == 2 && c < 70)) ? -INFINITY : x[i];
            }
            int32_t nn = n;
            int64_t st = stride;
            float eps = 1e-6f;
            void *fargs[] = {&y, &sx, &st, &st, &nn};
            void *bargs[] = {&dx, &y, &dy, &st, &st, &st, &nn};
            void *rargs[] = {&rn, &rstd, &x, &w, &st, &st, &nn, &eps};
            void *rbargs[] = {&rdx, &dw, &dy, &x, &w, &rstd, &st, &st, &st, &nn};
            unsigned grid = (unsigned)(rows * C);
            CHECK_EQ_INT(fwd ? launch(fwd, "softmax_fwd", grid, fargs, &mem) : TC_ERROR_INTERNAL, TC_OK);
            CHECK_EQ_INT(bwd ? launch(bwd, "softmax_bwd", grid, bargs, &mem) : TC_ERROR_INTERNAL, TC_OK);
            CHECK_EQ_INT(rms ? launch(rms, "rmsnorm_fwd", grid, rargs, &mem) : TC_ERROR_INTERNAL, TC_OK);
            CHECK_EQ_INT(rmsb ? launch(rmsb, "rmsnorm_bwd", grid, rbargs, &mem) : TC_ERROR_INTERNAL, TC_OK);
            double dw_ref[301] = {0};
            double worst = 0;
            bool gaps = true;
            for (int r = 0; r < rows; r++) {
                const float *xr = x + r * stride, *sr = sx + r * stride;
                double m = -INFINITY, s = 0, dot = 0, sq = 0;
                for (int c = 0; c < n; c++)
                    m = fmax(m, sr[c]);
                for (int c = 0; c < n; c++)
                    s += exp(sr[c] - m), sq += (double)xr[c] * xr[c];
                for (int c = 0; c < n; c++)
                    dot += exp(sr[c] - m) / s * dy[r * stride + c];
                double inv_rms = 1.0 / sqrt(sq / n + eps), mean_gx = 0;
                worst = worse(worst, fabs(rstd[r] - inv_rms) / inv_rms);
                for (int c = 0; c < n; c++)
                    mean_gx += (double)dy[r * stride + c] * w[c] * xr[c] * rstd[r] / n;
                for (int c = 0; c < n; c++) {
                    double xhat = xr[c] * (double)rstd[r], g = (double)dy[r * stride + c] * w[c];
                    worst = worse(worst, fabs(rdx[r * stride + c] - rstd[r] * (g - xhat * mean_gx)));
                    dw_ref[c] += dy[r * stride + c] * xhat;
                }
                for (int c = 0; c < n; c++) {
                    double p = exp(sr[c] - m) / s;
                    worst = worse(worst, fabs(y[r * stride + c] - p));
                    worst = worse(worst, fabs(dx[r * stride + c] - p * (dy[r * stride + c] - dot)));
                    worst = worse(worst, fabs(rn[r * stride + c] - xr[c] * inv_rms * w[c]) /
                                             (fabs(xr[c] * inv_rms * w[c]) + 1));
                }
                for (int c = n; c < stride; c++)
                    gaps &= y[r * stride + c] == -7.0f && dx[r * stride + c] == -7.0f && rn[r * stride + c] == -7.0f &&
                            rdx[r * stride + c] == -7.0f;
            }
            for (int c = 0; c < n; c++)
                worst = worse(worst, fabs(dw[c] - dw_ref[c]) / (fabs(dw_ref[c]) + 1));
            check_split("lib clusters", n, C, worst, gaps);
            mem_free(&mem);
            tc_interp_unload(fwd);
            tc_interp_unload(bwd);
            tc_interp_unload(rms);
            tc_interp_unload(rmsb);
        }
}

/* The worst error of ce_row's outputs (the gradient in g, written over the
 * logits x) against float64 for rows of V logits; *gaps gets false where the
 * columns past V changed. */
static double ce_worst(const float *x, const float *g, const float *losses, const float *lse, const int64_t *labels,
                       int rows, int V, int64_t stride, double smoothing, double z, double scale_valid, bool *gaps) {
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + r * stride;
        bool valid = labels[r] >= 0 && labels[r] < V;
        double mx = -INFINITY, se = 0, sx = 0;
        for (int c = 0; c < V; c++)
            mx = fmax(mx, xr[c]), sx += xr[c];
        for (int c = 0; c < V; c++)
            se += exp(xr[c] - mx);
        double l = mx + log(se), eps_v = smoothing / V;
        double smooth = smoothing != 0 ? eps_v * sx : 0.0;
        double loss = valid ? l - (1 - smoothing) * xr[labels[r]] - smooth + z * l * l : 0.0;
        double scale = valid ? scale_valid : 0.0;
        worst = worse(worst, fabs(lse[r] - l) / (fabs(l) + 1));
        worst = worse(worst, fabs(losses[r] - loss) / (fabs(loss) + 1));
        for (int c = 0; c < V; c++) {
            double p = exp(xr[c] - l);
            double want = scale * (p * (1 + 2 * z * l) - eps_v) - (c == labels[r] ? scale * (1 - smoothing) : 0);
            worst = worse(worst, fabs(g[r * stride + c] - want));
        }
        for (int c = V; c < stride; c++)
            *gaps &= g[r * stride + c] == x[r * stride + c];
    }
    return worst;
}

/* Cross-entropy's row split over clusters (ce_row's CLUSTER), f32, against
 * float64: vocabularies of 301 (parts of 80 on tiles of 32) and 9 (parts of
 * 8: one of one column, two empty), CLUSTER 4 and 1, rows whose label lies
 * in the first part, at the last column of a part and the first of the
 * next, in the last part, is ignore_index, or is out of range; label
 * smoothing, z-loss, the lse, and the gradient written over the logits (in
 * place). A second pass without smoothing over logits some of which are
 * -inf: the loss stays finite. */
TEST(test_lib_ce_clusters) {
    static const int vocabs[] = {301, 9};
    for (int vi = 0; vi < 2; vi++)
        for (int C = 1; C <= 4; C += 3) {
            const int rows = 7, V = vocabs[vi];
            const int64_t stride = V + 5;
            tc_constexpr cx[] = {{"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F32, 0}, {"L", TC_CONSTEXPR_DTYPE, TC_DTYPE_I64, 0},
                                 {"BLOCK", TC_CONSTEXPR_INT, 32, 0},         {"GRAD", TC_CONSTEXPR_BOOL, 1, 0},
                                 {"LSE", TC_CONSTEXPR_BOOL, 1, 0},           {"CLUSTER", TC_CONSTEXPR_INT, C, 0}};
            tc_interp_module *m = load_lib("cross_entropy.tile", "ce_row", cx, 6);
            CHECK(m != NULL);
            if (!m)
                continue;
            Mem mem = {0};
            size_t bytes = (size_t)(rows * stride) * sizeof(float);
            float *x = mem_add(&mem, bytes), *x0 = mem_add(&mem, bytes);
            float *losses = mem_add(&mem, rows * sizeof(float)), *lse = mem_add(&mem, rows * sizeof(float));
            int64_t *labels = mem_add(&mem, rows * sizeof(int64_t));
            float *count = mem_add(&mem, sizeof(float));
            for (int i = 0; i < rows * stride; i++)
                x[i] = x0[i] = (float)((i * 7919) % 211) / 23.0f - 4.0f;
            const int64_t ignore = -100;
            labels[0] = 3, labels[1] = V - 2, labels[2] = ignore, labels[3] = V;
            labels[4] = V == 301 ? 79 : 7, labels[5] = V == 301 ? 80 : 8, labels[6] = V == 301 ? 160 : 0;
            count[0] = 5.0f;
            for (int r = 0; r < rows; r++)
                losses[r] = lse[r] = -7.0f;
            int64_t st = stride, ig = ignore;
            int32_t vv = V;
            float smoothing = 0.1f, z = 1e-3f, grad_scale = 0.5f;
            void *args[] = {&x, &x, &losses, &lse, &labels, &count, &st, &st, &vv, &ig, &smoothing, &z, &grad_scale};
            bool gaps = true;
            double worst = 0;
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) { /* no smoothing, some logits -inf (no label's): columns 20-22, or 5 */
                    smoothing = 0.0f;
                    int lo = V == 301 ? 20 : 5, hi = V == 301 ? 23 : 6;
                    for (int i = 0; i < rows * stride; i++)
                        x[i] = x0[i] = i % stride >= lo && i % stride < hi ? -INFINITY : x0[i];
                }
                CHECK_EQ_INT(launch(m, "ce_row", (unsigned)(rows * C), args, &mem), TC_OK);
                worst = worse(worst, ce_worst(x0, x, losses, lse, labels, rows, V, stride, smoothing, z,
                                              grad_scale / count[0], &gaps));
            }
            check_split("ce clusters", V, C, worst, gaps);
            mem_free(&mem);
            tc_interp_unload(m);
        }
}

UNIT_SUITE(interp, test_int_rules, test_f16_rounding, test_memory_checks, test_flow_and_reductions, test_refused_ir,
           test_calls_and_loops, test_clusters, test_lib_clusters, test_lib_ce_clusters)
