/*
 * test_autotune.c — search spaces (@autotune, tc_tune_space_create) and the
 * tuner (tc_autotune, tc_autotune_lookup) on the interpreter's device: the
 * configurations a clause lists and in what order, every error of the
 * clause, tuning and finding a key again, bucketed keys, the cost model's
 * top-k, dry runs, skipped configurations, and bad arguments.
 */
#include "tilec/runtime.h"
#include "tilec/stdlib.h"
#include "tilec/tilec.h"

#include "runtime/runtime.h"
#include "runtime/tune.h"
#include "stdlib/stdlib_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

static const char kernel_src[] =
    "@autotune(key = [n], BLOCK = [64, 128, 256], num_warps = [4, 8],\n"
    "          configs = [config(BLOCK = 1024, num_warps = 16, num_stages = 2)],\n"
    "          where = BLOCK * num_warps != 2048)\n"
    "kernel fill(f32* x, i32 n, constexpr i32 BLOCK = 64) {\n"
    "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(x + o, f32(o) * 2.0, o < n);\n"
    "}\n"
    "kernel plain(f32* x) { store(x, 1.0); }\n";

static tc_tune_space *space_of(const char *text, const char *kernel, const tc_constexpr *cx, size_t n,
                               tc_status *st, char *diag, size_t cap) {
    tc_source src = {"t.tile", text, strlen(text)};
    tc_diagnostics *d = NULL;
    tc_diagnostics_create(&d);
    tc_tune_space *s = NULL;
    *st = tc_tune_space_create(&src, kernel, cx, n, &s, d);
    if (diag)
        snprintf(diag, cap, "%s", tc_diagnostics_text(d));
    tc_diagnostics_destroy(d);
    return s;
}

static void config_text(const tc_tune_space *s, size_t i, char *out, size_t cap) {
    tc_tune_config c;
    if (tc_tune_space_config(s, i, &c) != TC_OK) {
        snprintf(out, cap, "(none)");
        return;
    }
    tc_tune_config_format(&c, out, cap);
}

/* The space's first n configurations read want[0..n) (tc_tune_config_format). */
static void check_configs(const tc_tune_space *s, const char *const *want, size_t n) {
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        config_text(s, i, buf, sizeof buf);
        CHECK_EQ_STR(buf, want[i]);
    }
}

/* min_programs_per_sm is tuned as num_warps is: an axis, a config(...) field, a name in where, and a
 * field of the configuration and of its text */
TEST(space_min_programs) {
    static const char src[] =
        "@autotune(BLOCK = [64, 128], min_programs_per_sm = [1, 2],\n"
        "          configs = [config(BLOCK = 256, min_programs_per_sm = 4)],\n"
        "          where = BLOCK * min_programs_per_sm <= 128 || BLOCK == 256)\n"
        "kernel fill(f32* x, i32 n, constexpr i32 BLOCK = 64) {\n"
        "    let o = program_id(0) * BLOCK + arange(0, BLOCK);\n"
        "    store(x + o, 2.0, o < n);\n"
        "}\n";
    tc_status st;
    tc_tune_space *s = space_of(src, "fill", NULL, 0, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_OK);
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 4);
    static const char *const want[] = {"BLOCK=64,min_programs_per_sm=1", "BLOCK=64,min_programs_per_sm=2",
                                       "BLOCK=128,min_programs_per_sm=1", "BLOCK=256,min_programs_per_sm=4"};
    check_configs(s, want, 4);
    tc_tune_config c;
    CHECK_EQ_INT(tc_tune_space_config(s, 1, &c), TC_OK);
    CHECK_EQ_INT(c.min_programs_per_sm, 2);
    CHECK_EQ_INT(c.num_warps, 0);
    tc_tune_space_destroy(s);
}

TEST(space_order_and_filters) {
    tc_status st;
    tc_tune_space *s = space_of(kernel_src, "fill", NULL, 0, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_OK);
    CHECK(tc_tune_space_declared(s));
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 6);
    static const char *const want[] = {"BLOCK=64,num_warps=4",  "BLOCK=64,num_warps=8",
                                       "BLOCK=128,num_warps=4", "BLOCK=128,num_warps=8",
                                       "BLOCK=256,num_warps=4", "BLOCK=1024,num_warps=16,num_stages=2"};
    check_configs(s, want, 6);
    char buf[256];
    tc_tune_config c;
    CHECK_EQ_INT(tc_tune_space_config(s, 6, &c), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_tune_space_config(s, 0, &c), TC_OK);
    CHECK_EQ_INT(c.num_stages, 0);
    CHECK_EQ_INT(c.warp_specialize, -1);
    CHECK_EQ_INT(c.min_programs_per_sm, 0);
    CHECK_EQ_INT(tc_tune_space_num_keys(s), 1);
    CHECK_EQ_STR(tc_tune_space_key(s, 0), "n");
    CHECK_EQ_INT(tc_tune_space_key_param(s, 0), 1);
    CHECK_EQ_INT(tc_tune_space_key_dtype(s, 0), TC_DTYPE_I32);
    CHECK(tc_tune_space_key(s, 1) == NULL);
    /* a short buffer: truncated, NUL-terminated, the full length returned */
    tc_tune_space_config(s, 5, &c);
    char tiny[8];
    CHECK_EQ_INT(tc_tune_config_format(&c, tiny, sizeof tiny), strlen(want[5]));
    CHECK_EQ_STR(tiny, "BLOCK=1");
    tc_tune_space_destroy(s);

    /* the caller fixes BLOCK: the other values are left out */
    tc_constexpr fixed = {"BLOCK", TC_CONSTEXPR_INT, 128, 0};
    s = space_of(kernel_src, "fill", &fixed, 1, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_OK);
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 2);
    config_text(s, 1, buf, sizeof buf);
    CHECK_EQ_STR(buf, "BLOCK=128,num_warps=8");
    tc_tune_space_destroy(s);

    /* a kernel without the clause: an empty space, not an error */
    s = space_of(kernel_src, "plain", NULL, 0, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_OK);
    CHECK(!tc_tune_space_declared(s));
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 0);
    tc_tune_space_destroy(s);

    /* no such kernel */
    s = space_of(kernel_src, "nope", NULL, 0, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_ERROR_INVALID_ARGUMENT);
    CHECK(s == NULL);
}

TEST(space_where_uses_fixed_and_defaults) {
    static const char src[] = "@autotune(BM = [16, 32, 64], where = BM * D <= 2048 && FLAG)\n"
                              "kernel k(f32* x, constexpr i32 BM = 16, constexpr i32 D = 8, constexpr bool FLAG = true) {"
                              " store(x + arange(0, BM), 0.0); }\n";
    tc_status st;
    tc_tune_space *s = space_of(src, "k", NULL, 0, &st, NULL, 0);
    CHECK_EQ_INT(st, TC_OK);
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 3); /* D = 8 by default */
    tc_tune_space_destroy(s);
    tc_constexpr d = {"D", TC_CONSTEXPR_INT, 64, 0};
    s = space_of(src, "k", &d, 1, &st, NULL, 0);
    CHECK_EQ_INT(tc_tune_space_num_configs(s), 2); /* 16 * 64, 32 * 64 */
    tc_tune_space_destroy(s);
    tc_constexpr off = {"FLAG", TC_CONSTEXPR_BOOL, 0, 0};
    char diag[1024];
    s = space_of(src, "k", &off, 1, &st, diag, sizeof diag);
    CHECK_EQ_INT(st, TC_ERROR_COMPILE);
    CHECK(strstr(diag, "no configuration is left") != NULL);
    tc_tune_space_destroy(s);
}

/* Each clause, and the error it must give (at its line). */
TEST(space_errors) {
    static const struct {
        const char *clause;
        const char *error;
    } cases[] = {
        {"@tune(B = [1])", "unknown decorator '@tune'"},
        {"@autotune(B = [16], B = [32])", "'B' is given twice"},
        {"@autotune(X = [1])", "'X' is not a constexpr parameter"},
        {"@autotune(n = [1])", "'n' is a runtime parameter"},
        {"@autotune(key = [x], B = [16])", "a key is a runtime integer parameter"},
        {"@autotune(key = [B], B = [16])", "a key is a runtime integer parameter"},
        {"@autotune(key = [n, n], B = [16])", "key 'n' is listed twice"},
        {"@autotune(B = [])", "non-empty list"},
        {"@autotune(B = 16)", "non-empty list"},
        {"@autotune(B = [16, 16])", "listed twice"},
        {"@autotune(B = [n])", "must be a literal"},
        {"@autotune(B = [1.5])", "its values are integers"},
        {"@autotune(S = [1.5])", "float parameter"},
        {"@autotune(F = [2])", "true or false"},
        {"@autotune(T = [16])", "type parameter"},
        {"@autotune(B = [f16])", "not a type parameter"},
        {"@autotune(num_warps = [3])", "powers of two"},
        {"@autotune(num_warps = [64])", "powers of two"},
        {"@autotune(num_stages = [0])", "from 1 to 16"},
        {"@autotune(warp_specialize = [2])", "true or false"},
        {"@autotune(min_programs_per_sm = [0])", "from 1 to 32"},
        {"@autotune(min_programs_per_sm = [33])", "from 1 to 32"},
        {"@autotune(min_programs_per_sm = [true])", "from 1 to 32"},
        {"@autotune(key = [n])", "needs configs"},
        {"@autotune(configs = [])", "non-empty list"},
        {"@autotune(configs = [B])", "config(NAME = value"},
        {"@autotune(configs = [config()])", "sets nothing"},
        {"@autotune(configs = [config(B = 16, B = 32)])", "sets 'B' twice"},
        {"@autotune(configs = [config(16)])", "NAME = value"},
        {"@autotune(B = [16], where = Z > 1)", "where uses 'Z'"},
        {"@autotune(B = [16], where = n > 1)", "where uses 'n'"},
        {"@autotune(B = [16], where = foo(B))", "min(a, b), max(a, b) and cdiv"},
        {"@autotune(B = [16], where = B / 0 > 1)", "division by zero"},
        {"@autotune(B = [16], where = B << 70 > 1)", "a shift takes"},
        {"@autotune(B = [16], where = false)", "no configuration is left"},
        {"@autotune(16)", "takes named arguments"},
        {"@autotune(B = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096], C = [1, 2, 3, 4, 5, 6, 7, 8, 9],"
         " D = [1, 2, 3, 4, 5, 6, 7, 8, 9], E = [1, 2, 3, 4, 5, 6, 7, 8, 9], G = [1, 2, 3, 4, 5, 6, 7, 8, 9],"
         " H = [1, 2])",
         "more than 65536"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "%s\nkernel k(f32* x, i32 n, f32 v, constexpr i32 B = 16, constexpr f32 S = 1.0,\n"
                 "         constexpr bool F = false, constexpr dtype T = f32, constexpr i32 C = 1,\n"
                 "         constexpr i32 D = 1, constexpr i32 E = 1, constexpr i32 G = 1, constexpr i32 H = 1) {\n"
                 "    store(x + arange(0, B), v);\n}\n",
                 cases[i].clause);
        tc_status st;
        char diag[2048];
        tc_tune_space *s = space_of(src, "k", NULL, 0, &st, diag, sizeof diag);
        CHECK_EQ_INT(st, TC_ERROR_COMPILE);
        CHECK(s == NULL);
        if (!strstr(diag, cases[i].error) || !strstr(diag, "t.tile:1:")) {
            fprintf(stderr, "clause %s:\n  expected: %s\n  got: %s\n", cases[i].clause, cases[i].error, diag);
            CHECK(0);
        }
        tc_tune_space_destroy(s);
    }
}

/* An error in the clause fails an ordinary compile too; a named argument
 * anywhere else is refused. */
TEST(compile_checks_clause) {
    static const char bad[] = "@autotune(num_warps = [3])\nkernel k(f32* x) { store(x, 1.0); }\n";
    static const char named[] = "kernel k(f32* x) { store(x, value = 1.0); }\n";
    tc_compiler *cc;
    CHECK_EQ_INT(tc_compiler_create(NULL, &cc), TC_OK);
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_IR;
    const char *texts[] = {bad, named};
    const char *want[] = {"powers of two", "only allowed in @autotune"};
    for (int i = 0; i < 2; i++) {
        tc_source src = {"t.tile", texts[i], strlen(texts[i])};
        tc_diagnostics *d;
        tc_diagnostics_create(&d);
        tc_binary *b = NULL;
        CHECK_EQ_INT(tc_compile(cc, &src, NULL, NULL, 0, &opt, &b, d), TC_ERROR_COMPILE);
        CHECK(strstr(tc_diagnostics_text(d), want[i]) != NULL);
        tc_diagnostics_destroy(d);
        tc_binary_destroy(b);
    }
    tc_compiler_destroy(cc);
}

/* ---- the tuner, on the interpreter's device ---- */

typedef struct Launch {
    tc_context *ctx;
    CUdeviceptr x;
    int32_t n;
    void *args[2];
    tc_jit_request req;
} Launch;

static tc_dim3 fill_grid(void *user, const tc_constexpr *cx, size_t n) {
    const Launch *l = user;
    int64_t block = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(cx[i].name, "BLOCK") == 0)
            block = cx[i].i;
    return (tc_dim3){(unsigned)((l->n + block - 1) / block), 1, 1};
}

static void launch_init(Launch *l, tc_context *ctx, CUdeviceptr x, int32_t n) {
    l->ctx = ctx;
    l->x = x;
    l->n = n;
    l->args[0] = &l->x;
    l->args[1] = &l->n;
    tc_jit_request_init(&l->req);
    l->req.source = kernel_src;
    l->req.path = "t.tile";
    l->req.kernel = "fill";
    l->req.args = l->args;
    l->req.num_args = 2;
}

static int tune(Launch *l, const tc_tune_space *s, int top_k, int dry, tc_autotune_result *res, double *ms) {
    tc_autotune_request ar = {0};
    ar.jit = &l->req;
    ar.grid = fill_grid;
    ar.grid_user = l;
    ar.top_k = top_k;
    ar.reps = 2;
    ar.dry_run = dry;
    ar.config_ms = ms;
    tc_kernel *k = NULL;
    tc_status st = tc_autotune(l->ctx, NULL, &ar, s, res, &k);
    if (st != TC_OK) {
        fprintf(stderr, "tc_autotune: %s\n", tc_last_error());
        return -1;
    }
    /* the kernel it returns is the chosen configuration's, and runs */
    tc_tune_config c;
    tc_tune_space_config(s, res->config, &c);
    tc_dim3 g = fill_grid(l, c.constexprs, c.num_constexprs);
    return k && tc_launch(k, g, NULL, l->args, 2) == TC_OK ? 0 : -1;
}

TEST(tune_on_interpreter) {
    setenv("TILEC_INTERPRET", "1", 1);
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        fprintf(stderr, "no interpreter context: %s\n", tc_last_error());
        CHECK(0);
        return;
    }
    CHECK(tc_context_interpreted(ctx));
    CHECK_EQ_STR(tc_context_device_name(ctx), "tilec interpreter");
    tc_status st;
    tc_tune_space *s = space_of(kernel_src, "fill", NULL, 0, &st, NULL, 0);
    CUdeviceptr x;
    CHECK_EQ_INT(tc_mem_alloc(ctx, 8192 * 4, &x), TC_OK);
    Launch l;
    tc_autotune_result res;
    double ms[6];

    /* exhaustive: every configuration timed, the result written */
    launch_init(&l, ctx, x, 1000);
    CHECK_EQ_INT(tune(&l, s, 0, 0, &res, ms), 0);
    CHECK_EQ_INT(res.timed, 6);
    CHECK_EQ_INT(res.failed, 0);
    CHECK(!res.from_table && !res.used_model);
    CHECK(res.config < 6 && res.ms > 0 && isfinite(res.ms));
    for (int i = 0; i < 6; i++)
        CHECK(isfinite(ms[i]) && ms[i] > 0 && ms[i] >= res.ms);
    float back[1000];
    CHECK_EQ_INT(tc_memcpy_dtoh(ctx, back, x, sizeof back), TC_OK);
    CHECK(back[0] == 0.0f && back[999] == 1998.0f);
    size_t first = res.config;

    /* the same key, and one in the same bucket (1000 and 1024): found */
    static const int32_t same[] = {1000, 1024};
    for (int i = 0; i < 2; i++) {
        launch_init(&l, ctx, x, same[i]);
        CHECK_EQ_INT(tune(&l, s, 0, 0, &res, ms), 0);
        CHECK(res.from_table);
        CHECK_EQ_INT(res.timed, 0);
        CHECK_EQ_INT(res.config, first);
        CHECK(isinf(ms[0]));
        int found = 0;
        size_t cfg = 99;
        CHECK_EQ_INT(tc_autotune_lookup(ctx, &l.req, s, &found, &cfg), TC_OK);
        CHECK(found && cfg == first);
    }
    /* other buckets are tuned anew; afterwards the model has 3 tasks */
    launch_init(&l, ctx, x, 64);
    CHECK_EQ_INT(tune(&l, s, 3, 0, &res, ms), 0); /* 1 other task: no model yet, every config timed */
    CHECK(!res.from_table && !res.used_model);
    CHECK_EQ_INT(res.timed, 6);
    launch_init(&l, ctx, x, 5000);
    CHECK_EQ_INT(tune(&l, s, 0, 0, &res, ms), 0);
    CHECK_EQ_INT(res.timed, 6);

    /* the model ranks, only top_k are timed; a dry run leaves no entry */
    launch_init(&l, ctx, x, 300);
    CHECK_EQ_INT(tune(&l, s, 2, 1, &res, ms), 0);
    CHECK(res.used_model);
    CHECK_EQ_INT(res.timed, 2);
    int timed = 0;
    for (int i = 0; i < 6; i++)
        timed += isfinite(ms[i]);
    CHECK_EQ_INT(timed, 2);
    CHECK(isfinite(ms[res.config]));
    int found = 1;
    size_t cfg;
    CHECK_EQ_INT(tc_autotune_lookup(ctx, &l.req, s, &found, &cfg), TC_OK);
    CHECK(!found);

    tc_mem_free(ctx, x);
    tc_tune_space_destroy(s);
    tc_context_destroy(ctx);
}

static tc_dim3 one_grid(void *user, const tc_constexpr *cx, size_t n) {
    (void)user, (void)cx, (void)n;
    return (tc_dim3){1, 1, 1};
}

/* A configuration that does not compile is skipped, the others tuned; when
 * none does, the call says so. */
TEST(tune_skips_failures) {
    static const char src[] = "@autotune(B = [16, 3])\n"
                              "kernel k(f32* x, constexpr i32 B = 16) { store(x + arange(0, B), 1.0); }\n";
    static const char none[] = "@autotune(B = [3, 5])\n"
                               "kernel k(f32* x, constexpr i32 B = 16) { store(x + arange(0, B), 1.0); }\n";
    setenv("TILEC_INTERPRET", "1", 1);
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        CHECK(0);
        return;
    }
    CUdeviceptr x;
    CHECK_EQ_INT(tc_mem_alloc(ctx, 64, &x), TC_OK);
    void *args[] = {&x};
    for (int i = 0; i < 2; i++) {
        const char *text = i ? none : src;
        tc_status st;
        tc_tune_space *s = space_of(text, "k", NULL, 0, &st, NULL, 0);
        CHECK_EQ_INT(st, TC_OK);
        tc_jit_request req;
        tc_jit_request_init(&req);
        req.source = text;
        req.kernel = "k";
        req.args = args;
        req.num_args = 1;
        tc_autotune_request ar = {0};
        ar.jit = &req;
        ar.grid = one_grid;
        ar.reps = 1;
        tc_autotune_result res;
        st = tc_autotune(ctx, NULL, &ar, s, &res, NULL);
        if (i == 0) {
            CHECK_EQ_INT(st, TC_OK);
            CHECK_EQ_INT(res.timed, 1);
            CHECK_EQ_INT(res.failed, 1);
            CHECK_EQ_INT(res.config, 0);
        } else {
            CHECK_EQ_INT(st, TC_ERROR_UNSUPPORTED);
            CHECK(strstr(tc_last_error(), "none of the 2 configurations") != NULL);
        }
        tc_tune_space_destroy(s);
    }
    tc_mem_free(ctx, x);
    tc_context_destroy(ctx);
}

TEST(tune_bad_arguments) {
    setenv("TILEC_INTERPRET", "1", 1);
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        CHECK(0);
        return;
    }
    tc_status st;
    tc_tune_space *s = space_of(kernel_src, "fill", NULL, 0, &st, NULL, 0);
    tc_tune_space *empty = space_of(kernel_src, "plain", NULL, 0, &st, NULL, 0);
    Launch l;
    CUdeviceptr x;
    tc_mem_alloc(ctx, 64, &x);
    launch_init(&l, ctx, x, 16);
    tc_autotune_request ar = {0};
    ar.jit = &l.req;
    ar.grid = fill_grid;
    ar.grid_user = &l;
    tc_autotune_result res;
    CHECK_EQ_INT(tc_autotune(NULL, NULL, &ar, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_autotune(ctx, NULL, NULL, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, NULL, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, NULL, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, empty, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "no configuration") != NULL);
    ar.grid = NULL;
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "grid") != NULL);
    ar.grid = fill_grid;
    ar.top_k = -1;
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    ar.top_k = 0;
    ar.num_derived = 5;
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "num_derived") != NULL);
    ar.num_derived = 0;
    l.req.args = NULL; /* the key's value comes from the args */
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, &res, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "args") != NULL);
    int found;
    size_t cfg;
    CHECK_EQ_INT(tc_autotune_lookup(ctx, &l.req, s, NULL, &cfg), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_autotune_lookup(ctx, &l.req, s, &found, NULL), TC_ERROR_INVALID_ARGUMENT);
    tc_tune_space *none = NULL;
    CHECK_EQ_INT(tc_tune_space_create(NULL, "fill", NULL, 0, &none, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(none == NULL);
    tc_mem_free(ctx, x);
    tc_tune_space_destroy(s);
    tc_tune_space_destroy(empty);
    tc_context_destroy(ctx);
}

/* The library's table (lib/tuning.tsv, built in) parses, and each entry
 * is a configuration of its kernel's @autotune space: the names and values
 * of one of the configurations its source lists, with the build left open. */
extern const char rt_stdlib_tuning_text[];
extern const size_t rt_stdlib_tuning_text_len;

TEST(shipped_table) {
    RtTuneTable t = {0};
    char why[256] = "";
    CHECK_EQ_INT(rt_tune_table_parse(rt_stdlib_tuning_text, rt_stdlib_tuning_text_len, &t, why, sizeof why), TC_OK);
    if (why[0])
        fprintf(stderr, "lib/tuning.tsv: %s\n", why);
    static const struct {
        const char *kernel, *file;
        tc_constexpr fixed[1];
    } kernels[] = {{"matmul", "matmul.tile", {{"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F16, 0}}},
                   {"attention_fwd", "attention.tile", {{"D", TC_CONSTEXPR_INT, 0, 0}}}};
    size_t checked = 0;
    for (size_t i = 0; i < t.count; i++) {
        const RtTuneEntry *e = &t.entries[i];
        CHECK_EQ_STR(e->build, "*");
        CHECK(e->kind == RT_TUNE_BEST);
        size_t k = 0;
        while (k < 2 && strcmp(kernels[k].kernel, e->kernel) != 0)
            k++;
        CHECK(k < 2);
        if (k == 2)
            continue;
        const char *text;
        size_t len;
        CHECK_EQ_INT(tc_stdlib_source(kernels[k].file, &text, &len), TC_OK);
        /* attention's space depends on D: try each head-dim tile */
        bool member = false;
        for (int64_t d = 16; d <= 256 && !member; d *= 2) {
            tc_constexpr cx = kernels[k].fixed[0];
            if (strcmp(cx.name, "D") == 0)
                cx.i = d;
            tc_source src = {kernels[k].file, text, len};
            tc_tune_space *s = NULL;
            if (tc_tune_space_create(&src, e->kernel, &cx, 1, &s, NULL) != TC_OK)
                continue;
            RtTuneEntry want = *e;
            for (size_t c = 0; c < tc_tune_space_num_configs(s) && !member; c++) {
                tc_tune_config cfg;
                tc_tune_space_config(s, c, &cfg);
                char a[512], b[512];
                tc_tune_config_format(&cfg, a, sizeof a);
                rt_tune_config_text(&want, b, sizeof b);
                member = strcmp(a, b) == 0;
            }
            tc_tune_space_destroy(s);
        }
        CHECK(member);
        checked++;
    }
    CHECK(checked == t.count);
    rt_tune_table_free(&t);
}

/* The library finds the shipped entries: its identity of a kernel (the
 * plan's constexprs less the tuned ones) hashes as bench/tune's requests
 * did. A context of the interpreter stands in for an H200 by name. When
 * this fails after an edit of lib/matmul.tile or lib/attention.tile, the
 * table no longer matches the kernels: tune again (bench/tune,
 * docs/autotune.md) or remove their entries. */
TEST(shipped_table_found) {
    setenv("TILEC_INTERPRET", "1", 1);
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK) {
        CHECK(0);
        return;
    }
    char saved[sizeof ctx->name];
    memcpy(saved, ctx->name, sizeof saved);
    snprintf(ctx->name, sizeof ctx->name, "NVIDIA H200");
    tc_matmul_plan mp;
    CHECK_EQ_INT(tc_matmul_plan_for(TC_DTYPE_F16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, 0, TC_ACTIVATION_NONE,
                                    &mp),
                 TC_OK);
    static const char *const mm_out[] = {"BM", "BN", "BK", "EVEN_K", NULL};
    int64_t mkeys[3] = {4096, 4096, 4096}, v;
    RtStdlibTuned t;
    CHECK(rt_stdlib_tuned_plan(ctx, "sm_90a", mp.file, mp.kernel, mp.constexprs, mp.num_constexprs, mm_out, mkeys, 3,
                               &t));
    CHECK(rt_stdlib_tuned_value(&t, "BN", &v) && v == 256);
    /* bucketed: 3000 x 4000 x 4096 finds the 4096^3 entry; another target or GPU does not */
    int64_t near[3] = {3000, 4000, 4096};
    CHECK(rt_stdlib_tuned_plan(ctx, "sm_90a", mp.file, mp.kernel, mp.constexprs, mp.num_constexprs, mm_out, near, 3,
                               &t));
    CHECK(!rt_stdlib_tuned_plan(ctx, "sm_80", mp.file, mp.kernel, mp.constexprs, mp.num_constexprs, mm_out, mkeys, 3,
                                &t));
    tc_attention_plan ap;
    CHECK_EQ_INT(tc_attention_plan_for(TC_DTYPE_F16, 4, 32, 32, 4096, 4096, 64, 0, 0, &ap), TC_OK);
    static const char *const at_out[] = {"BM", "BN", "EVEN_N", NULL};
    int64_t akeys[2] = {4096, 4096};
    CHECK(rt_stdlib_tuned_plan(ctx, "sm_90a", ap.file, ap.kernel, ap.constexprs, ap.num_constexprs, at_out, akeys, 2,
                               &t));
    CHECK(rt_stdlib_tuned_value(&t, "BM", &v) && v == 64);
    CHECK_EQ_INT(t.warp_specialize, 0);
    snprintf(ctx->name, sizeof ctx->name, "NVIDIA H100 80GB HBM3");
    CHECK(!rt_stdlib_tuned_plan(ctx, "sm_90a", ap.file, ap.kernel, ap.constexprs, ap.num_constexprs, at_out, akeys, 2,
                                &t));
    memcpy(ctx->name, saved, sizeof saved);
    tc_context_destroy(ctx);
}

/* ---- the row loops take the user's tuned tile ---- */

typedef struct RowLaunch {
    int rows;
    CUdeviceptr out, x;
    int64_t stride_out, stride_x;
    int32_t n_cols;
    void *args[5];
} RowLaunch;

static tc_dim3 row_grid(void *user, const tc_constexpr *cx, size_t n) {
    (void)cx;
    (void)n;
    return (tc_dim3){(unsigned)((const RowLaunch *)user)->rows, 1, 1};
}

static int64_t seen_block, seen_warps;

static tc_status seeing_hook(const RtStdlibLaunch *l) {
    seen_block = seen_warps = -1;
    for (size_t i = 0; i < l->num_cx; i++)
        if (strcmp(l->cx[i].name, "BLOCK") == 0)
            seen_block = l->cx[i].i;
    seen_warps = l->options.num_warps;
    return TC_ERROR_UNSUPPORTED; /* nothing launched */
}

/* tc_softmax_fwd's loop over rows wider than a tile takes the tile and warps
 * that `tilec tune` (here tc_autotune on the interpreter, on the installed
 * source's @autotune space) wrote to the user's table for its width's
 * bucket; at a width in another bucket, or another specialization, its
 * plan. An interpreter's table lives in memory only (the entry stays for the
 * process: later f32 softmax rows of 16385 to 32768 columns take its tile,
 * with the same results). */
TEST(rowwise_takes_tuned) {
    const char *off = getenv("TILEC_TUNED");
    if (off && strcmp(off, "0") == 0) {
        fprintf(stderr, "  autotune: TILEC_TUNED=0 turns lookups off: rowwise_takes_tuned skipped\n");
        return;
    }
    setenv("TILEC_INTERPRET", "1", 1);
    tc_context *ctx = NULL;
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_OK);
    const char *text = NULL;
    size_t len = 0;
    CHECK_EQ_INT(tc_stdlib_source("softmax.tile", &text, &len), TC_OK);
    RowLaunch r = {2, 0, 0, 20000, 20000, 20000, {0}};
    CHECK_EQ_INT(tc_mem_alloc(ctx, 2 * 20000 * 4, &r.out), TC_OK);
    CHECK_EQ_INT(tc_mem_alloc(ctx, 2 * 20000 * 4, &r.x), TC_OK);
    void *args[5] = {&r.out, &r.x, &r.stride_out, &r.stride_x, &r.n_cols};
    static const tc_constexpr fixed[] = {{"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F32, 0},
                                         {"SINGLE_TILE", TC_CONSTEXPR_BOOL, 0, 0}};
    tc_source src = {"softmax.tile", text, len};
    tc_tune_space *s = NULL;
    CHECK_EQ_INT(tc_tune_space_create(&src, "softmax_fwd", fixed, 2, &s, NULL), TC_OK);
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = text;
    req.source_len = len;
    req.path = "softmax.tile";
    req.kernel = "softmax_fwd";
    req.constexprs = fixed;
    req.num_constexprs = 2;
    req.args = args;
    req.num_args = 5;
    tc_autotune_request ar = {0};
    ar.jit = &req;
    ar.grid = row_grid;
    ar.grid_user = &r;
    ar.reps = 1;
    tc_autotune_result res;
    CHECK_EQ_INT(tc_autotune(ctx, NULL, &ar, s, &res, NULL), TC_OK);
    tc_tune_config c = {0};
    CHECK_EQ_INT(tc_tune_space_config(s, res.config, &c), TC_OK);
    int64_t block = 0;
    for (size_t i = 0; i < c.num_constexprs; i++)
        if (strcmp(c.constexprs[i].name, "BLOCK") == 0)
            block = c.constexprs[i].i;
    CHECK(block >= 2048 && c.num_warps >= 4);

    rt_stdlib_launch_hook = seeing_hook;
    rt_stdlib_hook_tunes = true;
    CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, r.out, r.x, 2, 20000, 20000, 20000), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(seen_block, block);
    CHECK_EQ_INT(seen_warps, c.num_warps);
    /* the same bucket (20000 and 20479 columns): found; another (60000): the plan (8192, 8 warps) */
    CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, r.out, r.x, 1, 20479, 20480, 20480), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(seen_block, block);
    CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, r.out, r.x, 1, 60000, 60000, 60000), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(seen_block, 8192);
    CHECK_EQ_INT(seen_warps, 8);
    /* other kernel specializations were not tuned: f16, and REALIGN (an odd stride: its 4096 tile) */
    CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F16, r.out, r.x, 2, 20000, 20000, 20000), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(seen_block, 8192);
    CHECK_EQ_INT(tc_softmax_fwd(ctx, NULL, TC_DTYPE_F32, r.out, r.x, 1, 20000, 20001, 20001), TC_ERROR_UNSUPPORTED);
    CHECK_EQ_INT(seen_block, 4096);
    rt_stdlib_launch_hook = NULL;
    rt_stdlib_hook_tunes = false;

    tc_tune_space_destroy(s);
    tc_mem_free(ctx, r.out);
    tc_mem_free(ctx, r.x);
    tc_context_destroy(ctx);
}

UNIT_SUITE(autotune, shipped_table, shipped_table_found, space_order_and_filters, space_min_programs,
           space_where_uses_fixed_and_defaults, space_errors, compile_checks_clause, tune_on_interpreter,
           tune_skips_failures, tune_bad_arguments, rowwise_takes_tuned)
