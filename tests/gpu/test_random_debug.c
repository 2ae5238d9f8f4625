/*
 * test_random_debug.c — rand, randn, randint, device_print and
 * device_assert on the GPU: kernels compiled from source strings with
 * tc_jit (the harness of feature_harness.h).
 *
 *     test_random_debug
 *
 * Covered:
 *   - randint, rand and randn against the C reference of Triton's algorithm
 *     (philox_ref.h, whose Philox4x32-10 matches Random123's known answers):
 *     randint and rand bit for bit, randn within 1e-5 * (1 + |ref|) of the
 *     exact transform (the GPU's cos.approx, lg2.approx and div.full are
 *     a few ulp; docs/language.md); i32 seeds (negative ones too) with i32
 *     offsets, i64 seeds with i64 offsets whose high word is set, a
 *     constexpr seed, 2-D offsets; odd sizes with masked tails (outputs
 *     poisoned, guards after them); mean, variance and range over 2^20
 *     draws;
 *   - a dropout mask drawn again from the same seed and offsets (the
 *     backward pass) is the same mask;
 *   - device_print: the process's stdout is redirected to a file around the
 *     launch and the synchronization (which flushes CUDA's printf buffer);
 *     every expected line (tiles with replicated layouts, scalars, several
 *     values, no value) appears exactly once, and nothing else;
 *   - device_assert: a passing assert changes nothing; a failing one makes
 *     the launch or the synchronization fail and prints the message with
 *     the .tile file and line. That runs last, in a child process (this
 *     program again, --assert-child, with its output in a file), since the
 *     CUDA context is unusable after it.
 *
 * Without a GPU every kernel is compiled to PTX and assembled by ptxas
 * (exit 77).
 */
#include "feature_harness.h"
#include "philox_ref.h"

#include <stdarg.h>
#include <sys/wait.h>

/* ---- the kernels ---- */

static const char SRC_RNG[] = "kernel rng(i32* ints, f32* u, f32* g, i64 seed, i64 base, i32 n, constexpr i32 KIND,\n"
                              "           constexpr i64 CSEED = 0, constexpr i32 BLOCK = 256) {\n"
                              "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                              "    let m = i < n;\n"
                              "    if (KIND == 0) { // i32 seed, i32 offsets\n"
                              "        let s = i32(seed);\n"
                              "        let off = i32(base) + i;\n"
                              "        store(ints + i, randint(s, off), m);\n"
                              "        store(u + i, rand(s, off), m);\n"
                              "        store(g + i, randn(s, off), m);\n"
                              "    } else if (KIND == 1) { // i64 seed, i64 offsets\n"
                              "        let off = base + i64(i);\n"
                              "        store(ints + i, randint(seed, off), m);\n"
                              "        store(u + i, rand(seed, off), m);\n"
                              "        store(g + i, randn(seed, off), m);\n"
                              "    } else { // a constexpr seed, i32 offsets\n"
                              "        let off = i32(base) + i;\n"
                              "        store(ints + i, randint(CSEED, off), m);\n"
                              "        store(u + i, rand(CSEED, off), m);\n"
                              "        store(g + i, randn(CSEED, off), m);\n"
                              "    }\n"
                              "}\n";

static const char SRC_RNG2D[] =
    "kernel rng2d(f32* u, i32 seed, i32 rows, i32 cols, constexpr i32 BM = 16, constexpr i32 BN = 64) {\n"
    "    let r = program_id(0) * BM + arange(0, BM);\n"
    "    let c = program_id(1) * BN + arange(0, BN);\n"
    "    let off = r[:, None] * cols + c[None, :];\n"
    "    store(u + off, rand(seed, off), r[:, None] < rows & c[None, :] < cols);\n"
    "}\n";

static const char SRC_DROPOUT[] =
    "kernel dropout(f32* out, const f32* x, i64 seed, f32 p, i32 n, constexpr i32 BLOCK = 512) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let keep = rand(seed, i) > p;\n"
    "    store(out + i, where(keep, load(x + i, m, 0) / (1.0 - p), 0.0), m);\n"
    "}\n";

static const char SRC_SHOW[] = "kernel show(const i32* x, f32 f, i32 n, constexpr i32 BLOCK = 64) {\n"
                               "    let i = arange(0, BLOCK);\n"
                               "    let v = load(x + i, i < n, -1);\n"
                               "    device_print(\"v\", v);\n"
                               "    device_print(\"scalar f\", f);\n"
                               "    device_print(\"i and v\", i, v);\n"
                               "    device_print(\"hello\");\n"
                               "    let t2 = arange(0, 4)[:, None] * 8 + arange(0, 8)[None, :];\n"
                               "    device_print(\"t2\", t2 + program_id(0));\n"
                               "}\n";

static const char ASSERT_PATH[] = "random_assert.tile";
static const char SRC_ASSERT[] =
    "kernel checked(f32* out, const f32* x, f32 limit, i32 n, constexpr bool CHECK, constexpr i32 BLOCK = 128) {\n"
    "    let i = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    let m = i < n;\n"
    "    let v = load(x + i, m, 0);\n"
    "    if (CHECK) { device_assert(!m | v < limit, \"value below the limit\"); }\n"
    "    store(out + i, v * 2.0, m);\n"
    "}\n";
enum { ASSERT_LINE = 5 }; /* the line of device_assert in SRC_ASSERT */

/* ---- rand, randn, randint ---- */

/* The three outputs of rng(): randint, rand, randn of n offsets (and
 * FGUARD poisoned elements after each). */
typedef struct Draws {
    Buf ints, u, g;
} Draws;

static void draws_free(Ft *f, Draws *d) {
    buf_free(f, &d->ints);
    buf_free(f, &d->u);
    buf_free(f, &d->g);
}

/* rng() of kernel k on offsets base, base + 1, ... base + n - 1, into *d
 * (downloaded); false (the case reported failed, *d freed) if it could
 * not run. */
static bool draws_run(Ft *f, const char *label, tc_kernel *k, int64_t seed, int64_t base, int n, Draws *d) {
    size_t bytes = (size_t)(n + FGUARD) * 4;
    memset(d, 0, sizeof *d);
    int32_t nn = n;
    void *args[] = {&d->ints.d, &d->u.d, &d->g.d, &seed, &base, &nn};
    bool ok = buf_new(f, &d->ints, bytes) && buf_new(f, &d->u, bytes) && buf_new(f, &d->g, bytes) &&
              buf_poison(f, &d->ints) && buf_poison(f, &d->u) && buf_poison(f, &d->g) &&
              launch(f, k, (tc_dim3){(n + 255) / 256, 1, 1}, args, 6) && buf_down(f, &d->ints) && buf_down(f, &d->u) &&
              buf_down(f, &d->g);
    if (!ok) {
        fail_case(label, "launch failed");
        draws_free(f, d);
    }
    return ok;
}

/* The number of randint and rand values that differ from the reference
 * draws of (seed, base + i), offsets of `bits` bits, and randn's worst
 * error relative to 1 + |ref|. */
static size_t check_draws(const Draws *d, int64_t seed, int64_t base, int n, int bits, double *worst_n) {
    size_t wrong = 0;
    *worst_n = 0;
    for (int i = 0; i < n; i++) {
        int64_t off = bits == 32 ? (int64_t)(int32_t)((uint32_t)base + (uint32_t)i) : base + i;
        float want_u = ref_rand(seed, off, bits);
        double want_n = ref_randn(seed, off, bits);
        wrong += I32(d->ints)[i] != ref_randint(seed, off, bits);
        wrong += memcmp(&F32(d->u)[i], &want_u, 4) != 0;
        double e = fabs(F32(d->g)[i] - want_n) / (1 + fabs(want_n));
        if (!(e <= *worst_n)) /* NaN too */
            *worst_n = isnan(e) ? INFINITY : e;
    }
    return wrong;
}

static tc_kernel *get_rng(Ft *f, int kind, int64_t cseed) {
    tc_constexpr cx[] = {cx_int("KIND", kind), cx_int("CSEED", cseed)};
    return get(f, "rng", SRC_RNG, "rng", cx, 2, 4);
}

static void rng_case(Ft *f, int kind, int64_t seed, int64_t base, int n) {
    static const char *kinds[] = {"i32", "i64", "constexpr"};
    char label[96];
    snprintf(label, sizeof label, "%s n=%d seed=%lld base=%lld", kinds[kind], n, (long long)seed, (long long)base);
    tc_kernel *k = get_rng(f, kind, kind == 2 ? seed : 0);
    Draws d;
    if (!k || !draws_run(f, label, k, seed, base, n, &d))
        return;
    double worst_n;
    size_t wrong = check_draws(&d, kind == 0 ? (int64_t)(int32_t)seed : seed, base, n, kind == 1 ? 64 : 32, &worst_n);
    size_t past = buf_clobbered(&d.ints, (size_t)n * 4, 4) + buf_clobbered(&d.u, (size_t)n * 4, 4) +
                  buf_clobbered(&d.g, (size_t)n * 4, 4);
    char l2[128];
    snprintf(l2, sizeof l2, "randint/rand %s", label);
    report(l2, TC_DTYPE_I32, (double)wrong / n, 1e-12, past);
    snprintf(l2, sizeof l2, "randn %s", label);
    report(l2, TC_DTYPE_F32, worst_n, 1e-5, 0);
    draws_free(f, &d);
}

static void feat_rng(Ft *f) {
    static const int sizes[] = {1, 255, 1000, 4097};
    for (int s = 0; s < 4; s++) {
        int n = sizes[s];
        rng_case(f, 0, s == 0 ? 0 : s == 1 ? -7 : (int64_t)(int32_t)gt_next(), (int64_t)(int32_t)gt_next(), n);
        /* offsets across 2^32: the high word changes inside the draw */
        rng_case(f, 1, (int64_t)gt_next(), ((int64_t)1 << 32) - n / 2 + (int64_t)(gt_next() % 3) * ((int64_t)1 << 40),
                 n);
        rng_case(f, 2, 20240917 + s, s * 1000, n);
        if (!f->ctx)
            break; /* one of each kind is every kernel */
    }
}

static void feat_rng2d(Ft *f) {
    const char *label = "rand 2-D offsets 37x100";
    tc_kernel *k = get(f, label, SRC_RNG2D, "rng2d", NULL, 0, 4);
    if (!k)
        return;
    const int rows = 37, cols = 100;
    Buf u;
    if (!buf_new(f, &u, (size_t)(rows * cols + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    int32_t seed = (int32_t)gt_next(), r = rows, c = cols;
    void *args[] = {&u.d, &seed, &r, &c};
    if (buf_poison(f, &u) && launch(f, k, (tc_dim3){(rows + 15) / 16, (cols + 63) / 64, 1}, args, 4) &&
        buf_down(f, &u)) {
        size_t wrong = 0;
        for (int i = 0; i < rows * cols; i++) {
            float want = ref_rand(seed, i, 32);
            wrong += memcmp(&F32(u)[i], &want, 4) != 0;
        }
        report(label, TC_DTYPE_F32, (double)wrong, 0.5, buf_clobbered(&u, (size_t)rows * cols * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &u);
}

/* Mean, variance and range of 2^20 draws (i64 seed and offsets). */
static void feat_rng_stats(Ft *f) {
    const char *label = "rand/randn statistics over 2^20";
    tc_kernel *k = get_rng(f, 1, 0);
    const int n = 1 << 20;
    Draws d;
    if (!k || !draws_run(f, label, k, (int64_t)gt_next(), 0, n, &d))
        return;
    double su = 0, su2 = 0, sg = 0, sg2 = 0, umin = 1, umax = 0, gmax = 0;
    for (int i = 0; i < n; i++) {
        double a = F32(d.u)[i], b = F32(d.g)[i];
        su += a, su2 += a * a, sg += b, sg2 += b * b;
        umin = a < umin ? a : umin;
        umax = a > umax ? a : umax;
        gmax = fabs(b) > gmax || isnan(b) ? fabs(b) : gmax;
    }
    double mu = su / n, vu = su2 / n - mu * mu, mg = sg / n, vg = sg2 / n - mg * mg;
    printf("random: rand mean %.5f var %.5f [%.3g, %.7f]; randn mean %.5f var %.5f max |x| %.3f\n", mu, vu, umin, umax,
           mg, vg, gmax);
    /* 5 to 7 standard deviations of each estimate */
    bool ok = fabs(mu - 0.5) < 1.5e-3 && fabs(vu - 1.0 / 12) < 5e-4 && umin >= 0 && umax < 1 && fabs(mg) < 5e-3 &&
              fabs(vg - 1) < 1e-2 && gmax < 5.7;
    report(label, TC_DTYPE_F32, ok ? 0 : 1, 0.5, 0);
    draws_free(f, &d);
}

/* A dropout forward pass and its backward pass (the same kernel on the
 * gradient) drop the same elements: the mask is drawn again, not stored. */
static void feat_dropout(Ft *f) {
    const char *label = "dropout mask recomputed, n=10007";
    tc_kernel *k = get(f, label, SRC_DROPOUT, "dropout", NULL, 0, 4);
    if (!k)
        return;
    const int n = 10007;
    Buf x, dy, y, dx;
    size_t bytes = (size_t)(n + FGUARD) * 4;
    if (!buf_new(f, &x, bytes) || !buf_new(f, &dy, bytes) || !buf_new(f, &y, bytes) || !buf_new(f, &dx, bytes)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < n; i++) {
        F32(x)[i] = (float)gt_uniform_in(0.5, 2);
        F32(dy)[i] = (float)gt_uniform_in(-2, -0.5);
    }
    int64_t seed = (int64_t)gt_next();
    float p = 0.3f;
    int32_t nn = n;
    void *fwd[] = {&y.d, &x.d, &seed, &p, &nn}, *bwd[] = {&dx.d, &dy.d, &seed, &p, &nn};
    tc_dim3 grid = {(n + 511) / 512, 1, 1};
    if (buf_up(f, &x) && buf_up(f, &dy) && buf_poison(f, &y) && buf_poison(f, &dx) && launch(f, k, grid, fwd, 5) &&
        launch(f, k, grid, bwd, 5) && buf_down(f, &y) && buf_down(f, &dx)) {
        size_t wrong = 0, dropped = 0;
        for (int i = 0; i < n; i++) {
            bool keep = ref_rand(seed, i, 32) > p;
            dropped += !keep;
            wrong += (F32(y)[i] != 0) != keep || (F32(dx)[i] != 0) != keep;
            double scaled = F32(x)[i] / (1.0 - p); /* the GPU's division: within 2 ulp */
            wrong += keep && fabs(F32(y)[i] - scaled) > 1e-6 * scaled;
        }
        printf("random: dropout p=%.1f dropped %zu of %d\n", p, dropped, n);
        report(label, TC_DTYPE_F32, (double)wrong, 0.5,
               buf_clobbered(&y, (size_t)n * 4, 4) + buf_clobbered(&dx, (size_t)n * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &dy);
    buf_free(f, &y);
    buf_free(f, &dx);
}

/* ---- the kernel author's tools together ---- */

/* Early return, while/break, rand, cumsum, device_assert and device_print in
 * one kernel: dropout applied twice (two seeds), then a running sum per
 * block. Programs past the data return at once. */
static const char SRC_TOOLS[] =
    "kernel dropout_cumsum(f32* out, const f32* x, i32 n, i32 seed, f32 p, constexpr i32 B = 256) {\n"
    "    let pid = program_id(0);\n"
    "    if (pid * B >= n) { return; }\n"
    "    let offs = pid * B + arange(0, B);\n"
    "    let mask = offs < n;\n"
    "    var v = load(x + offs, mask, 0.0);\n"
    "    var rounds = 0;\n"
    "    while (true) {\n"
    "        let keep = rand(seed + rounds, offs) > p;\n"
    "        v = where(keep, v / (1.0 - p), 0.0);\n"
    "        rounds += 1;\n"
    "        if (rounds >= 2) { break; }\n"
    "    }\n"
    "    let c = cumsum(v, 0);\n"
    "    device_assert(c == c, \"cumsum produced a NaN\");\n"
    "    if (pid == 0) { device_print(\"first block's sum\", sum(v, 0)); }\n"
    "    store(out + offs, c, mask);\n"
    "}\n";

static void feat_tools(Ft *f) {
    const int block = 256, n = 1000, programs = (n + block - 1) / block + 2;
    const char *label = "return, while, rand, cumsum, assert, print";
    tc_kernel *k = get(f, label, SRC_TOOLS, "dropout_cumsum", NULL, 0, 4);
    if (!k)
        return;
    Buf x, out;
    if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &out, (size_t)(programs * block + FGUARD) * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < n; i++)
        F32(x)[i] = (float)gt_normal();
    int32_t nn = n, seed = (int32_t)(gt_next() >> 40);
    float p = 0.25f;
    void *args[] = {&out.d, &x.d, &nn, &seed, &p};
    if (buf_up(f, &x) && buf_poison(f, &out) && launch(f, k, (tc_dim3){(unsigned)programs, 1, 1}, args, 5) &&
        buf_down(f, &out)) {
        GtErr e = {0};
        for (int b0 = 0; b0 < n; b0 += block) {
            double run = 0;
            for (int i = b0; i < b0 + block && i < n; i++) {
                float v = F32(x)[i];
                for (int r = 0; r < 2; r++)
                    v = ref_rand((int32_t)(seed + r), i, 32) > p ? v / (1.0f - p) : 0.0f;
                run += v;
                gt_err_add(&e, F32(out)[i], run);
            }
        }
        report(label, TC_DTYPE_F32, gt_err_value(&e), 1e-5, buf_clobbered(&out, (size_t)n * 4, 4));
    } else {
        fail_case(label, "launch failed");
    }
    buf_free(f, &x);
    buf_free(f, &out);
}

/* ---- device_print ---- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text that start with `prefix` (each NUL-terminated in
 * place), sorted; *count of them. */
static char **sorted_lines(char *text, const char *prefix, size_t *count) {
    size_t n = 0, cap = 64;
    char **lines = malloc(cap * sizeof *lines);
    for (char *p = text; lines && *p;) {
        char *e = strchr(p, '\n');
        if (e)
            *e = 0;
        if (n == cap) {
            char **more = realloc(lines, (cap *= 2) * sizeof *lines);
            if (!more)
                break;
            lines = more;
        }
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            lines[n++] = p;
        p = e ? e + 1 : p + strlen(p);
    }
    if (lines)
        qsort(lines, n, sizeof *lines, cmp_str);
    *count = lines ? n : 0;
    return lines;
}

/* The contents of the file (malloc'd, NUL-terminated; NULL if unreadable),
 * which is then removed. */
static char *read_and_remove(const char *path) {
    FILE *fp = fopen(path, "rb");
    char *text = NULL;
    if (fp) {
        fseek(fp, 0, SEEK_END);
        long len = ftell(fp);
        fseek(fp, 0, SEEK_SET);
        text = calloc((size_t)(len > 0 ? len : 0) + 1, 1);
        if (text && len > 0 && fread(text, 1, (size_t)len, fp) != (size_t)len)
            text[0] = 0;
        fclose(fp);
    }
    unlink(path);
    return text;
}

/* Redirects stdout to a new temporary file (its name in path); returns the
 * saved descriptor of stdout, or -1. */
static int capture_begin(char *path) {
    fflush(stdout);
    int fd = mkstemp(path);
    int saved = fd < 0 ? -1 : dup(1);
    if (saved >= 0)
        dup2(fd, 1);
    if (fd >= 0)
        close(fd);
    return saved;
}

/* Ends the redirection: what was written (see read_and_remove). */
static char *capture_end(int saved, const char *path) {
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return read_and_remove(path);
}

static void add_line(char ***lines, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_line(char ***lines, size_t *n, const char *fmt, ...) {
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *lines = realloc(*lines, (*n + 1) * sizeof **lines);
    (*lines)[(*n)++] = strdup(buf);
}

static void feat_print(Ft *f) {
    const char *label = "device_print lines, 2 programs";
    tc_kernel *k = get(f, label, SRC_SHOW, "show", NULL, 0, 4);
    if (!k)
        return;
    const int n = 50, block = 64, programs = 2;
    Buf x;
    if (!buf_new(f, &x, (size_t)block * 4)) {
        fail_case(label, "allocation failed");
        return;
    }
    for (int i = 0; i < block; i++)
        I32(x)[i] = (int32_t)gt_uniform_in(-1000, 1000);
    float fv = 0.375f;
    int32_t nn = n;
    void *args[] = {&x.d, &fv, &nn};
    char path[] = "/tmp/tilec-print-XXXXXX";
    bool ran = buf_up(f, &x);
    char *text = NULL;
    if (ran) {
        int saved = capture_begin(path);
        ran = saved >= 0 && GT_OK(tc_launch(k, (tc_dim3){programs, 1, 1}, NULL, args, 3)) &&
              GT_OK(tc_stream_synchronize(f->ctx, NULL));
        if (saved >= 0)
            text = capture_end(saved, path);
    }
    /* what the kernel must print, each line once */
    char **want = NULL;
    size_t nwant = 0;
    for (int p = 0; p < programs; p++) {
        for (int i = 0; i < block; i++) {
            int v = i < n ? I32(x)[i] : -1;
            add_line(&want, &nwant, "pid (%d, 0, 0) idx (%2d) v: %d", p, i, v);
            add_line(&want, &nwant, "pid (%d, 0, 0) idx (%2d) i and v: (operand 0) %d", p, i, i);
            add_line(&want, &nwant, "pid (%d, 0, 0) idx (%2d) i and v: (operand 1) %d", p, i, v);
        }
        add_line(&want, &nwant, "pid (%d, 0, 0) idx () scalar f: %f", p, (double)fv);
        add_line(&want, &nwant, "pid (%d, 0, 0) hello", p);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 8; c++)
                add_line(&want, &nwant, "pid (%d, 0, 0) idx (%d, %d) t2: %d", p, r, c, r * 8 + c + p);
    }
    qsort(want, nwant, sizeof *want, cmp_str);
    size_t ngot = 0;
    char **got = text ? sorted_lines(text, "pid (", &ngot) : NULL; /* not the runtime's log lines */
    size_t missing = 0, extra = 0, i = 0, j = 0;
    while (i < nwant || j < ngot) {
        int c = i == nwant ? 1 : j == ngot ? -1 : strcmp(want[i], got[j]);
        if (c == 0) {
            i++, j++;
        } else if (c < 0) {
            if (missing++ < 5)
                printf("random: missing line \"%s\"\n", want[i]);
            i++;
        } else {
            if (extra++ < 5)
                printf("random: unexpected line \"%s\"\n", got[j]);
            j++;
        }
    }
    if (ran) {
        printf("random: device_print gave %zu lines, %zu expected, %zu missing, %zu unexpected\n", ngot, nwant, missing,
               extra);
        report(label, TC_DTYPE_I32, (double)(missing + extra), 0.5, 0);
    } else {
        fail_case(label, "launch failed");
    }
    for (size_t w = 0; w < nwant; w++)
        free(want[w]);
    free(want);
    free(got);
    free(text);
    buf_free(f, &x);
}

/* ---- device_assert ---- */

/* checked() with every value below the limit but x[bad] (none when bad <
 * 0): -1 if the buffers could not be set up, 0 if the launch or the
 * synchronization failed, 1 if they succeeded (and then *right tells
 * whether out = 2 x). */
static int run_checked(Ft *f, tc_kernel *k, int bad, bool *right) {
    const int n = 1000;
    Buf x, out;
    *right = false;
    if (!buf_new(f, &x, (size_t)n * 4) || !buf_new(f, &out, (size_t)(n + FGUARD) * 4) || !buf_poison(f, &out))
        return -1;
    for (int i = 0; i < n; i++)
        F32(x)[i] = i == bad ? 5.0f : (float)gt_uniform_in(-1, 1);
    float limit = 2;
    int32_t nn = n;
    void *args[] = {&out.d, &x.d, &limit, &nn};
    if (!buf_up(f, &x))
        return -1;
    bool ok = launch(f, k, (tc_dim3){(n + 127) / 128, 1, 1}, args, 4);
    if (ok && buf_down(f, &out)) {
        size_t wrong = buf_clobbered(&out, (size_t)n * 4, 4);
        for (int i = 0; i < n; i++)
            wrong += F32(out)[i] != 2 * F32(x)[i];
        *right = wrong == 0;
    }
    buf_free(f, &x);
    buf_free(f, &out);
    return ok;
}

static tc_kernel *get_checked(Ft *f, bool check) {
    tc_constexpr cx[] = {cx_bool("CHECK", check)};
    return get(f, ASSERT_PATH, SRC_ASSERT, "checked", cx, 1, 4);
}

/* A passing assert: the same results as without one. */
static void feat_assert_passes(Ft *f) {
    const char *label = "device_assert that holds";
    tc_kernel *with = get_checked(f, true), *without = get_checked(f, false);
    if (!with || !without)
        return;
    bool right_with, right_without;
    bool ran = run_checked(f, with, -1, &right_with) == 1 && run_checked(f, without, -1, &right_without) == 1;
    if (ran)
        report(label, TC_DTYPE_F32, right_with && right_without ? 0 : 1, 0.5, 0);
    else
        fail_case(label, "launch failed");
}

/* --assert-child: a failing assert must fail the launch or the
 * synchronization. Exit 0 if it did, 3 if not, 1 if something else went
 * wrong. */
static int assert_child(void) {
    Ft f = {0};
    if (tc_context_create(0, &f.ctx) != TC_OK)
        return 1;
    tc_kernel *k = get_checked(&f, true);
    if (!k)
        return 1;
    bool right;
    int ran = run_checked(&f, k, 777, &right);
    printf("assert-child: the launch %s\n", ran < 0 ? "could not be set up" : ran ? "succeeded" : "failed, as it must");
    fflush(stdout);
    tc_context_destroy(f.ctx); /* after a GPU's assert it may fail: the context is unusable */
    return ran < 0 ? 1 : ran ? 3 : 0;
}

/* Runs the child with its stdout and stderr in a file; checks its status
 * and that the message, the file and the line were printed. */
static void feat_assert_fails(Ft *f) {
    const char *label = "device_assert that fails";
    if (!f->ctx)
        return; /* compile-only: feat_assert_passes compiled the kernel */
    char path[] = "/tmp/tilec-assert-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        fail_case(label, "no temporary file");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execl("/proc/self/exe", "test_random_debug", "--assert-child", (char *)NULL);
        _exit(127);
    }
    close(fd);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        unlink(path);
        fail_case(label, "cannot run the child");
        return;
    }
    char *text = read_and_remove(path);
    char where[64];
    snprintf(where, sizeof where, "%s:%d", ASSERT_PATH, ASSERT_LINE);
    bool exited0 = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    bool msg = text && strstr(text, "value below the limit"), at = text && strstr(text, where);
    printf("random: the child %s; its output:\n%s", exited0 ? "saw the launch fail" : "did not see the launch fail",
           text ? text : "(none)\n");
    if (!msg || !at)
        printf("random: the output lacks %s\n", !msg ? "the message" : where);
    report(label, TC_DTYPE_I32, exited0 && msg && at ? 0 : 1, 0.5, 0);
    free(text);
}

static void run_all(Ft *f) {
    feat_rng(f);
    feat_rng2d(f);
    feat_rng_stats(f);
    feat_dropout(f);
    feat_tools(f);
    feat_print(f);
    feat_assert_passes(f);
    feat_assert_fails(f);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--assert-child") == 0)
        return assert_child();
    static const char *const archs[] = {"sm_90a"};
    return ft_main("test_random_debug", "random", archs, 1, run_all);
}
