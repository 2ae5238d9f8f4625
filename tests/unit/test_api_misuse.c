/*
 * test_api_misuse.c — every public entry point (include/tilec/tilec.h,
 * runtime.h, stdlib.h, aot.h) called with bad arguments: NULL for each
 * pointer, zero, negative and overflowing sizes (SIZE_MAX, INT64_MIN,
 * INT64_MAX), enum values out of range, and the limits of tc_options and
 * tc_kernel_desc.
 *
 * One table row per call: the status it must return and a word its
 * tc_last_error() text must contain (the argument or the rule it names).
 * Before each call the last error is emptied, so a failing row also shows
 * that the call itself set the text; a row expected to succeed must leave it
 * empty. Nothing may crash (the suite runs under ASan and UBSan too).
 *
 * Rows marked CTX need a tc_context: with a driver (a GPU, or tests/gpu's
 * fake libcuda, which CTest's unit.fake.api_misuse points LD_LIBRARY_PATH
 * at) they run; without one they are counted as skipped and said so. The
 * stdlib rows fail validation before the context is used, so without a
 * driver they run against a dummy context that is never touched.
 */
#include "tilec/aot.h"
#include "tilec/runtime.h"
#include "tilec/stdlib.h"

#include "runtime/runtime.h"

#include "unit.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fixture: valid objects the rows spoil one argument of ---- */

static const char empty_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                                ".visible .entry empty(.param .u64 p)\n{\n\tret;\n}\n";

typedef struct Fx {
    tc_compiler *cc;
    tc_diagnostics *diags;
    tc_source src;       /* lib/softmax.tile */
    tc_binary *bin;      /* its softmax_fwd at emit = IR (metadata, no PTX) */
    tc_context *ctx;     /* NULL without a driver */
    tc_module *mod;      /* empty_ptx with metadata for `empty` */
    tc_kernel *k;        /* `empty`: one pointer parameter */
    tc_module *raw_mod;  /* empty_ptx without metadata */
    tc_kernel *raw;      /* `empty` found by name */
    tc_timer *timer;
    CUdeviceptr buf;     /* 4 KiB of device memory */
    void *args[1];
    CUdeviceptr arg0;
} Fx;

static Fx fx;
static char dummy_ctx_storage;
#define DUMMY_CTX ((tc_context *)(void *)&dummy_ctx_storage)
/* For the stdlib rows: refused before the context is touched. */
#define SCTX (fx.ctx ? fx.ctx : DUMMY_CTX)

static tc_param_desc good_param = {"p", TC_DTYPE_F32, 1, 0};

static tc_kernel_desc good_desc(void) {
    tc_kernel_desc d = {"empty", 4, 0, 1, &good_param, 0, NULL, 0};
    return d;
}

static void fx_setup(void) {
    memset(&fx, 0, sizeof fx);
    CHECK_EQ_INT(tc_compiler_create(NULL, &fx.cc), TC_OK);
    CHECK_EQ_INT(tc_diagnostics_create(&fx.diags), TC_OK);
    const char *text;
    size_t len;
    CHECK_EQ_INT(tc_stdlib_source("softmax.tile", &text, &len), TC_OK);
    fx.src = (tc_source){"softmax.tile", text, len};
    tc_options opt;
    tc_options_init(&opt);
    CHECK_EQ_INT(tc_compile(fx.cc, &fx.src, "softmax_fwd", NULL, 0, &opt, &fx.bin, fx.diags), TC_OK);
    /* the fake driver's static shared memory for every kernel: 16 bytes */
    setenv("TILEC_FAKE_CUDA_STATIC_SHARED", "16", 1);
    if (tc_context_create(0, &fx.ctx) != TC_OK) {
        fprintf(stderr, "  api_misuse: no driver (%s): the rows that need a context are skipped\n", tc_last_error());
        fx.ctx = NULL;
        return;
    }
    tc_kernel_desc d = good_desc();
    CHECK_EQ_INT(tc_module_load_ptx(fx.ctx, empty_ptx, strlen(empty_ptx), &d, 1, &fx.mod), TC_OK);
    CHECK_EQ_INT(tc_module_get_kernel(fx.mod, "empty", &fx.k), TC_OK);
    CHECK_EQ_INT(tc_module_load_ptx(fx.ctx, empty_ptx, strlen(empty_ptx), NULL, 0, &fx.raw_mod), TC_OK);
    CHECK_EQ_INT(tc_module_get_kernel(fx.raw_mod, "empty", &fx.raw), TC_OK);
    CHECK_EQ_INT(tc_timer_create(fx.ctx, &fx.timer), TC_OK);
    CHECK_EQ_INT(tc_mem_alloc(fx.ctx, 4096, &fx.buf), TC_OK);
    fx.arg0 = fx.buf;
    fx.args[0] = &fx.arg0;
}

static void fx_teardown(void) {
    if (fx.ctx) {
        CHECK_EQ_INT(tc_mem_free(fx.ctx, fx.buf), TC_OK);
        CHECK_EQ_INT(tc_timer_destroy(fx.timer), TC_OK);
        CHECK_EQ_INT(tc_context_destroy(fx.ctx), TC_OK); /* unloads the modules */
    }
    tc_binary_destroy(fx.bin);
    tc_diagnostics_destroy(fx.diags);
    tc_compiler_destroy(fx.cc);
    unsetenv("TILEC_FAKE_CUDA_STATIC_SHARED");
}

/* ---- helpers that build one bad argument each ---- */

enum { O_EMIT, O_WARPS, O_STAGES, O_PROGRAMS, O_PARAMS_NULL, O_PARAM_NAME, O_PARAM_DIV };

/* The options with one field set to v (for params: the name or the divisibility). */
static tc_options opt_with(int field, int64_t v, const char *name) {
    static tc_param_spec spec;
    tc_options o;
    tc_options_init(&o);
    switch (field) {
    case O_EMIT: o.emit = (tc_emit)v; break;
    case O_WARPS: o.num_warps = (int)v; break;
    case O_STAGES: o.num_stages = (int)v; break;
    case O_PROGRAMS: o.min_programs_per_sm = (int)v; break;
    case O_PARAMS_NULL: o.num_params = 1; break;
    case O_PARAM_NAME:
    case O_PARAM_DIV:
        spec = (tc_param_spec){name, field == O_PARAM_DIV ? v : 16};
        o.params = &spec;
        o.num_params = 1;
        break;
    }
    return o;
}

static tc_status compile_opt(int field, int64_t v, const char *name) {
    tc_options o = opt_with(field, v, name);
    tc_binary *b = (tc_binary *)&fx; /* must be reset to NULL */
    tc_status st = tc_compile(fx.cc, &fx.src, "softmax_fwd", NULL, 0, &o, &b, fx.diags);
    CHECK(st != TC_OK || b != NULL);
    if (st != TC_OK)
        CHECK(b == NULL);
    tc_binary_destroy(st == TC_OK ? b : NULL);
    return st;
}

static tc_status compile_cx(const char *name, int kind, int64_t i) {
    tc_constexpr cx = {name, (tc_constexpr_kind)kind, i, 0};
    tc_binary *b = NULL;
    tc_status st = tc_compile(fx.cc, &fx.src, "softmax_fwd", &cx, 1, NULL, &b, fx.diags);
    tc_binary_destroy(b);
    return st;
}

static tc_status compile_text(const char *name, const char *text, size_t len, const char *kernel,
                              const tc_constexpr *cx, size_t ncx) {
    tc_source s = {name, text, len};
    tc_binary *b = NULL;
    tc_status st = tc_compile(fx.cc, &s, kernel, cx, ncx, NULL, &b, fx.diags);
    tc_binary_destroy(b);
    return st;
}

static tc_status compile_block(int64_t block) {
    tc_constexpr cx = {"BLOCK", TC_CONSTEXPR_INT, block, 0};
    return compile_text("softmax.tile", fx.src.text, fx.src.len, "softmax_fwd", &cx, 1);
}

static tc_status opt_text(const char *text, size_t len, const char *passes, int field, int64_t v) {
    tc_source s = {"misuse.tir", text, len};
    tc_options o = opt_with(field, v, NULL);
    tc_binary *b = NULL;
    tc_status st = tc_opt(fx.cc, &s, passes, &o, &b, fx.diags);
    tc_binary_destroy(b);
    return st;
}

static const char small_ir[] = "kernel @k(%p: ptr<f32>) attrs {num_warps = 4} {\n  return\n}\n";
#define OPT_IR(field, v) opt_text(small_ir, strlen(small_ir), NULL, field, v)
#define OPT_SRC(text) opt_text(text, strlen(text), NULL, O_WARPS, 4)

static tc_status list_text(const char *text, size_t len) {
    tc_source s = {"list.tile", text, len};
    char **names = NULL;
    size_t n = 99;
    tc_status st = tc_list_kernels(&s, &names, &n, fx.diags);
    CHECK(st == TC_OK || (names == NULL && n == 0));
    tc_names_free(names, n);
    return st;
}

/* tc_rope with one argument wrong: every other one valid, so that the
 * named rule is what fails. */
enum { R_ROTARY_ODD, R_HEADS_OVERLAP, R_ONE_TABLE, R_THETA_NAN, R_NO_SEQLEN, R_K_MISALIGNED };
static tc_status rope(int which) {
    tc_rope_args a = {0};
    a.dtype = TC_DTYPE_F16;
    a.tokens = 4, a.q_heads = 8, a.k_heads = 2, a.head_dim = 64;
    a.q = 0x10000, a.k = 0x20000;
    a.stride_qt = 8 * 64, a.stride_qh = 64, a.stride_kt = 2 * 64, a.stride_kh = 64;
    a.seqlen = 4, a.theta = 10000.0f;
    switch (which) {
    case R_ROTARY_ODD: a.rotary_dim = 33; break;
    case R_HEADS_OVERLAP: a.stride_qh = 32; break;
    case R_ONE_TABLE: a.cos = 0x30000; break;
    case R_THETA_NAN: a.theta = NAN; break;
    case R_NO_SEQLEN: a.seqlen = 0; break;
    case R_K_MISALIGNED: a.k = 0x20001; break;
    }
    return tc_rope(fx.ctx ? fx.ctx : DUMMY_CTX, NULL, &a);
}

/* tc_cross_entropy with one argument wrong. */
enum { C_LABEL_DTYPE, C_STRIDE_SHORT, C_OVERLAP, C_SMOOTHING, C_WORKSPACE };
static tc_status ce(int which) {
    tc_cross_entropy_args a = {0};
    a.dtype = TC_DTYPE_BF16, a.label_dtype = TC_DTYPE_I64;
    a.rows = 4, a.vocab = 1000;
    a.logits = 0x100000, a.stride_logits = 1000;
    a.labels = 0x200000, a.ignore_index = -100, a.loss = 0x300000, a.grad_scale = 1;
    a.dlogits = 0x100000, a.stride_dlogits = 1000;
    a.workspace = 0x400000, a.workspace_bytes = 1 << 20;
    switch (which) {
    case C_LABEL_DTYPE: a.label_dtype = TC_DTYPE_F32; break;
    case C_STRIDE_SHORT: a.stride_logits = 999, a.stride_dlogits = 999; break;
    case C_OVERLAP: a.dlogits = 0x100000 + 2000; break;
    case C_SMOOTHING: a.label_smoothing = 1.5f; break;
    case C_WORKSPACE: a.workspace_bytes = 16; break;
    }
    return tc_cross_entropy(fx.ctx ? fx.ctx : DUMMY_CTX, NULL, &a);
}

/* tc_adamw with one argument wrong. */
enum { W_NO_TENSORS, W_NUMEL_0, W_MASTER_MISSING, W_BETA_1, W_WORKSPACE };
static tc_status adamw(int which) {
    tc_adamw_tensor t[2] = {{0x100000, 0x200000, 0x300000, 0x400000, 0x500000, 1000},
                            {0x110000, 0x210000, 0x310000, 0x410000, 0x510000, 70000}};
    tc_adamw_args a = {TC_DTYPE_BF16, TC_DTYPE_BF16, t, 2, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1.0f,
                       0x600000, 0x700000, 1 << 20};
    switch (which) {
    case W_NO_TENSORS: a.num_tensors = 0; break;
    case W_NUMEL_0: t[1].numel = 0; break;
    case W_MASTER_MISSING: t[0].master = 0; break;
    case W_BETA_1: a.beta1 = 1.0f; break;
    case W_WORKSPACE: a.workspace_bytes = 16; break;
    }
    return tc_adamw(fx.ctx ? fx.ctx : DUMMY_CTX, NULL, &a);
}

/* tc_tune_space_create with one argument wrong (which), or none; the
 * space it makes is checked and destroyed. */
enum { T_NONE, T_SRC, T_KERNEL, T_OUT, T_CX_KIND, T_NO_KERNEL };
static tc_status tune_space(int which) {
    tc_constexpr cx = {"BLOCK", which == T_CX_KIND ? (tc_constexpr_kind)99 : TC_CONSTEXPR_INT, 4096, 0};
    tc_tune_space *s = (tc_tune_space *)&cx; /* must be replaced */
    tc_status st = tc_tune_space_create(which == T_SRC ? NULL : &fx.src,
                                        which == T_KERNEL      ? NULL
                                        : which == T_NO_KERNEL ? "nope"
                                                               : "softmax_fwd",
                                        &cx, 1, which == T_OUT ? NULL : &s, fx.diags);
    CHECK(which == T_OUT || st == TC_OK || s == NULL);
    if (st == TC_OK) {
        /* softmax_fwd's @autotune with BLOCK fixed at 4096: its 4 warp counts (4 to 32); past the last, an error */
        CHECK(tc_tune_space_declared(s) && tc_tune_space_num_configs(s) == 4);
        tc_tune_config c;
        CHECK_EQ_INT(tc_tune_space_config(s, 3, &c), TC_OK);
        CHECK_EQ_INT(tc_tune_space_config(s, 4, &c), TC_ERROR_INVALID_ARGUMENT);
        rt_last_error_clear();
        tc_tune_space_destroy(s);
    }
    return st;
}

static tc_status parse_cx(const char *text, size_t buf_size) {
    char buf[64];
    tc_constexpr cx;
    return tc_constexpr_parse(text, &cx, buf, buf_size);
}

static tc_status create_arch(const char *arch) {
    tc_target t = {arch};
    tc_compiler *cc = (tc_compiler *)&fx;
    tc_status st = tc_compiler_create(&t, &cc);
    CHECK(st == TC_OK || cc == NULL);
    tc_compiler_destroy(st == TC_OK ? cc : NULL);
    return st;
}

static tc_status bin_param(const tc_binary *b, size_t k, size_t p, int with_out) {
    tc_param_desc d;
    return tc_binary_kernel_param(b, k, p, with_out ? &d : NULL);
}

static tc_status bin_map(const tc_binary *b, size_t k, size_t i, int with_out) {
    tc_tensor_map_desc d;
    return tc_binary_kernel_tensor_map(b, k, i, with_out ? &d : NULL);
}

/* ---- modules ---- */

enum {
    D_NAME_NULL, D_NAME_EMPTY, D_WARPS, D_SHARED, D_NPARAMS, D_PARAMS_NULL, D_PNAME_NULL, D_DTYPE,
    D_PERSISTENT, D_NMAPS, D_MAPS_NULL, D_MAP_RANK, D_MAP_BASE, D_MAP_DIM_PARAM, D_MAP_BOX, D_MAP_SWIZZLE
};

static tc_status load_desc(int field, int64_t v, size_t sv) {
    tc_param_desc p = good_param;
    tc_kernel_desc d = good_desc();
    d.params = &p;
    /* one tensor map over p (f32), rank 1, unbounded, 4 elements (16 bytes) a copy */
    tc_tensor_map_desc map = {0, 1, {-1, -1, -1, -1, -1}, {0}, {-1, -1, -1, -1, -1}, {0}, {4}, 0};
    if (field >= D_NMAPS) {
        d.num_tensor_maps = 1;
        d.tensor_maps = &map;
    }
    switch (field) {
    case D_NAME_NULL: d.name = NULL; break;
    case D_NAME_EMPTY: d.name = ""; break;
    case D_WARPS: d.num_warps = (int)v; break;
    case D_SHARED: d.shared_bytes = sv; break;
    case D_NPARAMS: d.num_params = sv; break;
    case D_PARAMS_NULL: d.params = NULL; break;
    case D_PNAME_NULL: p.name = NULL; break;
    case D_DTYPE: p.dtype = (tc_dtype)v; break;
    case D_PERSISTENT: d.persistent = (int)v; break;
    case D_NMAPS: d.num_tensor_maps = sv; break;
    case D_MAPS_NULL: d.tensor_maps = NULL; break;
    case D_MAP_RANK: map.rank = (int)v; break;
    case D_MAP_BASE: map.base = (int)v; break;
    case D_MAP_DIM_PARAM: map.dim_param[0] = (int)v; break;
    case D_MAP_BOX: map.box[0] = (unsigned)v; break;
    case D_MAP_SWIZZLE: map.swizzle = (int)v; break;
    }
    tc_module *m = NULL;
    tc_status st = tc_module_load_ptx(fx.ctx, empty_ptx, strlen(empty_ptx), &d, 1, &m);
    CHECK(st != TC_OK || m != NULL);
    if (st == TC_OK)
        tc_module_unload(m);
    return st;
}

static tc_status load_ptx(tc_context *ctx, const char *ptx, size_t len, const tc_kernel_desc *k, size_t nk,
                          int with_out) {
    tc_module *m = NULL;
    tc_status st = tc_module_load_ptx(ctx, ptx, len, k, nk, with_out ? &m : NULL);
    if (st == TC_OK)
        tc_module_unload(m);
    return st;
}

static tc_status load_cubin(const void *image, size_t len) {
    tc_module *m = NULL;
    tc_status st = tc_module_load_cubin(fx.ctx, image, len, NULL, 0, &m);
    if (st == TC_OK)
        tc_module_unload(m);
    return st;
}

static tc_status module_load(tc_context *ctx, const tc_binary *b, int with_out) {
    tc_module *m = NULL;
    tc_status st = tc_module_load(ctx, b, with_out ? &m : NULL);
    if (st == TC_OK)
        tc_module_unload(m);
    return st;
}

static tc_status get_kernel(tc_module *m, const char *name, int with_out) {
    tc_kernel *k = NULL;
    return tc_module_get_kernel(m, name, with_out ? &k : NULL);
}

static tc_status launch(tc_kernel *k, unsigned gx, unsigned gy, unsigned gz, void **args, size_t n) {
    return tc_launch(k, (tc_dim3){gx, gy, gz}, NULL, args, n);
}

static tc_status launch_zero_ptr(void) {
    CUdeviceptr zero = 0;
    void *args[1] = {&zero};
    return tc_launch(fx.k, (tc_dim3){1, 1, 1}, NULL, args, 1);
}

/* A launch of `empty` described as persistent. */
static tc_status launch_persistent(unsigned gx, unsigned gy, unsigned gz) {
    tc_kernel_desc d = good_desc();
    d.persistent = 1;
    tc_module *m = NULL;
    tc_kernel *k = NULL;
    tc_status st = tc_module_load_ptx(fx.ctx, empty_ptx, strlen(empty_ptx), &d, 1, &m);
    if (st == TC_OK && (st = tc_module_get_kernel(m, "empty", &k)) == TC_OK)
        st = tc_launch(k, (tc_dim3){gx, gy, gz}, NULL, fx.args, 1);
    if (m)
        tc_module_unload(m);
    return st;
}

static tc_status launch_raw(tc_kernel *k, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    return tc_launch_raw(k, (tc_dim3){1, 1, gz}, (tc_dim3){bx, by, bz}, 0, NULL, fx.args);
}

/* ---- JIT ---- */

enum { J_NONE, J_REQ_NULL, J_OUT_NULL, J_KERNEL_NULL, J_NO_SOURCE, J_CX_KIND, J_OPT, J_DIV_NULL, J_DIV, J_ARGS_NULL,
       J_PATH, J_SOURCE };

static tc_status jit(int what, int64_t v, int opt_field) {
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = fx.src.text;
    req.source_len = fx.src.len;
    req.path = "softmax.tile";
    req.kernel = "softmax_fwd";
    req.no_disk_cache = 1;
    tc_constexpr cx = {"BLOCK", TC_CONSTEXPR_INT, 1024, 0};
    tc_options o = opt_with(opt_field, v, "x");
    int64_t div[5] = {16, 16, 16, 16, 16};
    switch (what) {
    case J_KERNEL_NULL: req.kernel = NULL; break;
    case J_NO_SOURCE: req.source = NULL, req.path = NULL; break;
    case J_CX_KIND:
        cx.kind = (tc_constexpr_kind)v;
        req.constexprs = &cx;
        req.num_constexprs = 1;
        break;
    case J_OPT: req.options = &o; break;
    case J_DIV_NULL: req.num_divisibility = 5; break;
    case J_DIV:
        div[1] = v;
        req.divisibility = div;
        req.num_divisibility = 5;
        break;
    case J_ARGS_NULL: req.num_args = 5; break;
    case J_PATH: req.source = NULL, req.path = "/nonexistent-tilec-dir/x.tile"; break;
    case J_SOURCE:
        req.source = "kernel softmax_fwd(f32* p) { oops }";
        req.source_len = 0;
        break;
    }
    tc_kernel *k = NULL;
    return tc_jit(what == J_NONE ? NULL : fx.ctx, what == J_REQ_NULL ? NULL : &req, what == J_OUT_NULL ? NULL : &k);
}

/* ---- memory, streams, timers ---- */

static tc_status mem_alloc(tc_context *ctx, size_t bytes, int with_out) {
    CUdeviceptr p = 0;
    tc_status st = tc_mem_alloc(ctx, bytes, with_out ? &p : NULL);
    if (st == TC_OK)
        tc_mem_free(ctx, p);
    return st;
}

static tc_status stream_create(tc_context *ctx, int with_out) {
    CUstream s = NULL;
    tc_status st = tc_stream_create(ctx, with_out ? &s : NULL);
    if (st == TC_OK)
        tc_stream_destroy(ctx, s);
    return st;
}

static tc_status timer_make(tc_context *ctx, int with_out) {
    tc_timer *t = NULL;
    tc_status st = tc_timer_create(ctx, with_out ? &t : NULL);
    if (st == TC_OK)
        tc_timer_destroy(t);
    return st;
}

static tc_status elapsed(tc_timer *t, int with_ms) {
    float ms;
    return tc_timer_elapsed_ms(t, with_ms ? &ms : NULL);
}

/* ---- stdlib ---- */

#define P 0x10000 /* a device address that is never dereferenced: every row is refused first */

static tc_status softmax(tc_context *ctx, int dtype, CUdeviceptr out, int64_t rows, int64_t cols, int64_t stride) {
    return tc_softmax_fwd(ctx, NULL, (tc_dtype)dtype, out, P, rows, cols, stride, stride);
}

static tc_status rmsnorm(int64_t rows, int64_t cols, float eps) {
    return tc_rmsnorm_fwd(SCTX, NULL, TC_DTYPE_F16, P, P + 0x1000, P + 0x2000, P + 0x3000, rows, cols, cols, cols,
                          eps);
}

static tc_status matmul(tc_context *ctx, int dtype, CUdeviceptr c, int64_t M, int64_t N, int64_t K, int64_t scm,
                        int64_t scn, int act) {
    return tc_matmul(ctx, NULL, (tc_dtype)dtype, c, P, P, 0, M, N, K, K, 1, N, 1, scm, scn, (tc_activation)act);
}

static tc_status mm_plan(int64_t M, int act, int with_out) {
    tc_matmul_plan p;
    return tc_matmul_plan_for(TC_DTYPE_F16, M, 64, 64, 64, 1, 64, 1, 64, 1, 0, (tc_activation)act,
                              with_out ? &p : NULL);
}

static tc_status blockdiag(int64_t batch, int64_t nblocks) {
    return tc_blockdiag_matmul(SCTX, NULL, TC_DTYPE_F16, P, P, P, batch, nblocks, 64, 64, nblocks * 64, 64 * 64, 64,
                               1, nblocks * 64);
}

static tc_status bd_plan(int64_t nblocks, int with_out) {
    tc_matmul_plan p;
    return tc_blockdiag_matmul_plan_for(TC_DTYPE_F16, 4, nblocks, 64, 64, 64 * nblocks, 4096, 64, 1, 64 * nblocks,
                                        with_out ? &p : NULL);
}

static tc_status plan(int op, int dtype, int64_t cols, int with_out) {
    tc_stdlib_plan p;
    return tc_stdlib_plan_for((tc_stdlib_op)op, (tc_dtype)dtype, cols, with_out ? &p : NULL);
}

static tc_status source(const char *name, int with_text) {
    const char *text;
    size_t len;
    return tc_stdlib_source(name, with_text ? &text : NULL, &len);
}

static tc_status attention(tc_context *ctx, int dtype, int64_t batch, int64_t heads, int64_t kv_heads,
                           int64_t seqlen, int64_t head_dim, CUdeviceptr cu_q, float scale) {
    /* dense strides, from a short sequence when seqlen itself is the bad value */
    int64_t rows = seqlen <= 4096 ? seqlen : 128;
    int64_t sm = heads * head_dim, sb = rows * sm, skm = kv_heads * head_dim, skb = rows * skm;
    return tc_attention_fwd(ctx, NULL, (tc_dtype)dtype, P, P + 0x1000, P, P, P, batch, heads, kv_heads, seqlen, seqlen,
                            head_dim, sb, head_dim, sm, skb, head_dim, skm, skb, head_dim, skm, sb, head_dim, sm, cu_q,
                            0, scale, 0);
}

/* tc_attention_bwd with dense [batch, seqlen, heads, head_dim] tensors and
 * every gradient dense too; ws_bytes of workspace at P. */
static tc_status attention_bwd(tc_context *ctx, int dtype, int64_t heads, int64_t kv_heads, int64_t seqlen,
                               int64_t head_dim, float scale, size_t ws_bytes) {
    int64_t rows = seqlen <= 4096 ? seqlen : 128;
    int64_t sm = heads * head_dim, sb = rows * sm, skm = kv_heads * head_dim, skb = rows * skm;
    return tc_attention_bwd(ctx, NULL, (tc_dtype)dtype, P, P, P, P, P, P, P, P, P + 0x1000, 1, heads, kv_heads, seqlen,
                            seqlen, head_dim, sb, head_dim, sm, skb, head_dim, skm, skb, head_dim, skm, sb, head_dim,
                            sm, sb, head_dim, sm, sb, head_dim, sm, skb, head_dim, skm, skb, head_dim, skm, 0, 0, scale,
                            1, 0, P, ws_bytes);
}

static tc_status attn_bwd_ws(int dtype, int64_t head_dim, int with_out) {
    size_t bytes;
    return tc_attention_bwd_workspace_size((tc_dtype)dtype, 1, 8, 8, 128, 128, head_dim, 0, 0, 0,
                                           with_out ? &bytes : NULL);
}

static tc_status attn_bwd_plan(int dtype, int64_t head_dim, int with_out) {
    tc_attention_bwd_plan p;
    return tc_attention_bwd_plan_for((tc_dtype)dtype, 1, 8, 8, 128, 128, head_dim, 0, 0, 0, with_out ? &p : NULL);
}

static tc_status attn_plan(int dtype, int64_t head_dim, int with_out) {
    tc_attention_plan p;
    return tc_attention_plan_for((tc_dtype)dtype, 1, 8, 8, 128, 128, head_dim, 0, 0, with_out ? &p : NULL);
}

/* ---- AOT ---- */

enum { A_REQ_NULL, A_OUT_NULL, A_SOURCE_NULL, A_NAME_NULL, A_NAME_BAD, A_ARCH, A_NUM_ARCHS, A_STAGES, A_CX_KIND };

static tc_status aot(int what) {
    tc_aot_request req;
    tc_aot_request_init(&req);
    req.source = &fx.src;
    req.kernel = "softmax_fwd";
    req.name = "softmax";
    req.ptxas = "";
    static const char *const bad_arch[] = {"sm_70"};
    tc_options o = opt_with(O_STAGES, 1000, NULL);
    tc_constexpr cx = {"BLOCK", (tc_constexpr_kind)99, 1024, 0};
    switch (what) {
    case A_SOURCE_NULL: req.source = NULL; break;
    case A_NAME_NULL: req.name = NULL; break;
    case A_NAME_BAD: req.name = "1softmax"; break;
    case A_ARCH: req.archs = bad_arch, req.num_archs = 1; break;
    case A_NUM_ARCHS: req.archs = bad_arch, req.num_archs = 0; break;
    case A_STAGES: req.options = &o; break;
    case A_CX_KIND: req.constexprs = &cx, req.num_constexprs = 1; break;
    }
    tc_aot_output *out = NULL;
    tc_status st = tc_aot_generate(what == A_REQ_NULL ? NULL : &req, what == A_OUT_NULL ? NULL : &out, fx.diags);
    tc_aot_output_destroy(out);
    return st;
}

/* ---- the table ---- */

#define INV TC_ERROR_INVALID_ARGUMENT
#define CMP TC_ERROR_COMPILE
#define NOCTX 0
#define CTX 1

static const char bad_syntax[] = "kernel k(f32* p) { let = ; }";
static const char ir_warps3[] = "kernel @k(%p: ptr<f32>) attrs {num_warps = 3} {\n  return\n}\n";
static const char ir_warps64[] = "kernel @k(%p: ptr<f32>) attrs {num_warps = 64} {\n  return\n}\n";
static const char ir_stages[] = "kernel @k(%p: ptr<f32>) attrs {num_warps = 4, num_stages = 1000} {\n  return\n}\n";
static const char ir_programs[] =
    "kernel @k(%p: ptr<f32>) attrs {num_warps = 4, min_programs_per_sm = 0} {\n  return\n}\n";
static const char ir_programs_threads[] =
    "kernel @k(%p: ptr<f32>) attrs {num_warps = 8, min_programs_per_sm = 9} {\n  return\n}\n";
static const char ir_big_tile[] = "kernel @k(%t: tile<1073741824xi32>) {\n  return\n}\n";

/* X(name, needs a context, expected status, a word of the message, the call) */
#define ROWS(X)                                                                                                        \
    /* tilec.h: sources and constexprs */                                                                              \
    X(read_file_null_path, NOCTX, INV, "path", tc_source_read_file(NULL, &(tc_source){0}))                             \
    X(read_file_null_out, NOCTX, INV, "out", tc_source_read_file("x.tile", NULL))                                      \
    X(read_file_missing, NOCTX, TC_ERROR_IO, "/nonexistent-tilec-dir/x.tile",                                          \
      tc_source_read_file("/nonexistent-tilec-dir/x.tile", &(tc_source){0}))                                           \
    X(cx_parse_null_text, NOCTX, INV, "text", parse_cx(NULL, 64))                                                      \
    X(cx_parse_null_out, NOCTX, INV, "out", tc_constexpr_parse("B=1", NULL, (char[8]){0}, 8))                          \
    X(cx_parse_null_buf, NOCTX, INV, "name_buf", tc_constexpr_parse("B=1", &(tc_constexpr){0}, NULL, 8))               \
    X(cx_parse_buf_size_0, NOCTX, INV, "name_buf_size", parse_cx("B=1", 0))                                            \
    X(cx_parse_buf_too_small, NOCTX, INV, "name_buf_size", parse_cx("BLOCK=1", 5))                                     \
    X(cx_parse_empty, NOCTX, INV, "NAME=VALUE", parse_cx("", 64))                                                      \
    X(cx_parse_no_name, NOCTX, INV, "NAME=VALUE", parse_cx("=1", 64))                                                  \
    X(cx_parse_bad_name, NOCTX, INV, "identifier", parse_cx("1B=2", 64))                                               \
    X(cx_parse_no_value, NOCTX, INV, "no value", parse_cx("B=", 64))                                                   \
    X(cx_parse_bad_value, NOCTX, INV, "not an integer", parse_cx("B=12abc", 64))                                       \
    X(cx_parse_nan, NOCTX, INV, "not an integer", parse_cx("B=nan", 64))                                               \
    /* compilers, diagnostics, binaries */                                                                             \
    X(compiler_null_out, NOCTX, INV, "out", tc_compiler_create(NULL, NULL))                                            \
    X(compiler_arch_sm70, NOCTX, TC_ERROR_UNSUPPORTED, "sm_70", create_arch("sm_70"))                                  \
    X(compiler_arch_empty, NOCTX, TC_ERROR_UNSUPPORTED, "arch", create_arch(""))                                       \
    X(diagnostics_null_out, NOCTX, INV, "out", tc_diagnostics_create(NULL))                                            \
    X(times_null_binary, NOCTX, INV, "binary", tc_binary_compile_times(NULL, &(tc_compile_times){0}))                  \
    X(times_null_out, NOCTX, INV, "out", tc_binary_compile_times(fx.bin, NULL))                                        \
    X(write_null_binary, NOCTX, INV, "binary", tc_binary_write(NULL, "x"))                                             \
    X(write_bad_path, NOCTX, TC_ERROR_IO, "cannot write", tc_binary_write(fx.bin, "/nonexistent-tilec-dir/x"))         \
    X(param_null_binary, NOCTX, INV, "binary", bin_param(NULL, 0, 0, 1))                                               \
    X(param_null_out, NOCTX, INV, "out", bin_param(fx.bin, 0, 0, 0))                                                   \
    X(param_kernel_size_max, NOCTX, INV, "kernel", bin_param(fx.bin, SIZE_MAX, 0, 1))                                  \
    X(param_param_size_max, NOCTX, INV, "parameter", bin_param(fx.bin, 0, SIZE_MAX, 1))                                \
    X(map_null_binary, NOCTX, INV, "binary", bin_map(NULL, 0, 0, 1))                                                   \
    X(map_null_out, NOCTX, INV, "out", bin_map(fx.bin, 0, 0, 0))                                                       \
    X(map_kernel_size_max, NOCTX, INV, "kernel", bin_map(fx.bin, SIZE_MAX, 0, 1))                                      \
    X(map_none, NOCTX, INV, "tensor map 0 is out of range", bin_map(fx.bin, 0, 0, 1))                                  \
    /* tc_compile: pointers and sources */                                                                             \
    X(compile_null_cc, NOCTX, INV, "compiler",                                                                         \
      tc_compile(NULL, &fx.src, NULL, NULL, 0, NULL, &(tc_binary *){0}, NULL))                                         \
    X(compile_null_src, NOCTX, INV, "src", tc_compile(fx.cc, NULL, NULL, NULL, 0, NULL, &(tc_binary *){0}, NULL))      \
    X(compile_null_out, NOCTX, INV, "out", tc_compile(fx.cc, &fx.src, NULL, NULL, 0, NULL, NULL, NULL))                \
    X(compile_null_text_len10, NOCTX, INV, "text", compile_text("t", NULL, 10, NULL, NULL, 0))                         \
    X(compile_null_text_len_max, NOCTX, INV, "text", compile_text("t", NULL, SIZE_MAX, NULL, NULL, 0))                 \
    X(compile_null_text_len0, NOCTX, TC_OK, "", compile_text("t", NULL, 0, NULL, NULL, 0))                             \
    X(compile_null_cx, NOCTX, INV, "constexpr", compile_text("t", "", 0, NULL, NULL, 1))                               \
    X(compile_null_cx_size_max, NOCTX, INV, "constexpr", compile_text("t", "", 0, NULL, NULL, SIZE_MAX))               \
    /* tc_compile: constexprs */                                                                                       \
    X(cx_null_name, NOCTX, INV, "NULL name", compile_cx(NULL, TC_CONSTEXPR_INT, 1))                                    \
    X(cx_kind_99, NOCTX, INV, "kind 99", compile_cx("BLOCK", 99, 1))                                                   \
    X(cx_kind_neg, NOCTX, INV, "kind -1", compile_cx("BLOCK", -1, 1))                                                  \
    X(cx_bool_2, NOCTX, INV, "0 or 1", compile_cx("SINGLE_TILE", TC_CONSTEXPR_BOOL, 2))                                \
    X(cx_dtype_99, NOCTX, INV, "tc_dtype", compile_cx("T", TC_CONSTEXPR_DTYPE, 99))                                    \
    X(cx_dtype_min, NOCTX, INV, "tc_dtype", compile_cx("T", TC_CONSTEXPR_DTYPE, INT64_MIN))                            \
    X(cx_dtype_past_fp8, NOCTX, INV, "tc_dtype", compile_cx("T", TC_CONSTEXPR_DTYPE, TC_DTYPE_F8E5M2 + 1))             \
    /* tc_compile: options */                                                                                          \
    X(emit_99, NOCTX, INV, "opt->emit", compile_opt(O_EMIT, 99, NULL))                                                 \
    X(emit_neg, NOCTX, INV, "opt->emit", compile_opt(O_EMIT, -1, NULL))                                                \
    X(warps_3, NOCTX, INV, "opt->num_warps", compile_opt(O_WARPS, 3, NULL))                                            \
    X(warps_neg, NOCTX, INV, "opt->num_warps", compile_opt(O_WARPS, -1, NULL))                                         \
    X(warps_64, NOCTX, INV, "opt->num_warps", compile_opt(O_WARPS, 64, NULL))                                          \
    X(warps_int_max, NOCTX, INV, "opt->num_warps", compile_opt(O_WARPS, INT_MAX, NULL))                                \
    X(warps_int_min, NOCTX, INV, "opt->num_warps", compile_opt(O_WARPS, INT_MIN, NULL))                                \
    X(warps_32, NOCTX, TC_OK, "", compile_opt(O_WARPS, 32, NULL))                                                      \
    X(stages_1000, NOCTX, INV, "opt->num_stages", compile_opt(O_STAGES, 1000, NULL))                                   \
    X(stages_17, NOCTX, INV, "opt->num_stages", compile_opt(O_STAGES, TC_MAX_NUM_STAGES + 1, NULL))                    \
    X(stages_neg, NOCTX, INV, "opt->num_stages", compile_opt(O_STAGES, -1, NULL))                                      \
    X(stages_int_min, NOCTX, INV, "opt->num_stages", compile_opt(O_STAGES, INT_MIN, NULL))                             \
    X(programs_33, NOCTX, INV, "opt->min_programs_per_sm", compile_opt(O_PROGRAMS, TC_MAX_PROGRAMS_PER_SM + 1, NULL))  \
    X(programs_neg, NOCTX, INV, "opt->min_programs_per_sm", compile_opt(O_PROGRAMS, -1, NULL))                         \
    X(programs_threads, NOCTX, INV, "exceed the 2048 an SM holds", compile_opt(O_PROGRAMS, 17, NULL))                  \
    X(stages_16, NOCTX, TC_OK, "", compile_opt(O_STAGES, TC_MAX_NUM_STAGES, NULL))                                     \
    X(params_null, NOCTX, INV, "opt->params", compile_opt(O_PARAMS_NULL, 0, NULL))                                     \
    X(param_name_null, NOCTX, INV, "name is NULL", compile_opt(O_PARAM_NAME, 0, NULL))                                 \
    X(param_name_unknown, NOCTX, INV, "'nope' is not a parameter", compile_opt(O_PARAM_NAME, 0, "nope"))               \
    X(param_name_known, NOCTX, TC_OK, "", compile_opt(O_PARAM_NAME, 0, "x"))                                           \
    X(param_div_0, NOCTX, INV, "divisibility 0", compile_opt(O_PARAM_DIV, 0, "x"))                                     \
    X(param_div_neg, NOCTX, INV, "divisibility -16", compile_opt(O_PARAM_DIV, -16, "x"))                               \
    X(param_div_24, NOCTX, INV, "power of two", compile_opt(O_PARAM_DIV, 24, "x"))                                     \
    X(param_div_min, NOCTX, INV, "power of two", compile_opt(O_PARAM_DIV, INT64_MIN, "x"))                             \
    X(param_div_max, NOCTX, INV, "power of two", compile_opt(O_PARAM_DIV, INT64_MAX, "x"))                             \
    /* tc_compile: errors in the source */                                                                             \
    X(compile_syntax, NOCTX, CMP,                                                                                      \
      "bad.tile:1:", compile_text("bad.tile", bad_syntax, strlen(bad_syntax), NULL, NULL, 0))                          \
    X(compile_no_kernel, NOCTX, CMP, "no kernel named 'nope'",                                                         \
      compile_text("softmax.tile", fx.src.text, fx.src.len, "nope", NULL, 0))                                          \
    X(compile_block_2m, NOCTX, CMP, "more than 1048576 elements", compile_block(2097152))                              \
    X(compile_block_1m, NOCTX, TC_OK, "", compile_block(1048576))                                                      \
    /* tc_opt */                                                                                                       \
    X(opt_null_cc, NOCTX, INV, "compiler", tc_opt(NULL, &fx.src, NULL, NULL, &(tc_binary *){0}, NULL))                 \
    X(opt_null_ir, NOCTX, INV, "ir", tc_opt(fx.cc, NULL, NULL, NULL, &(tc_binary *){0}, NULL))                         \
    X(opt_null_out, NOCTX, INV, "out", tc_opt(fx.cc, &fx.src, NULL, NULL, NULL, NULL))                                 \
    X(opt_null_text, NOCTX, INV, "text", opt_text(NULL, 10, NULL, O_WARPS, 4))                                         \
    X(opt_emit_99, NOCTX, INV, "opt->emit", OPT_IR(O_EMIT, 99))                                                        \
    X(opt_warps_48, NOCTX, INV, "opt->num_warps", OPT_IR(O_WARPS, 48))                                                 \
    X(opt_stages_1000, NOCTX, INV, "opt->num_stages", OPT_IR(O_STAGES, 1000))                                          \
    X(opt_good, NOCTX, TC_OK, "", OPT_IR(O_WARPS, 4))                                                                  \
    X(opt_ir_warps_3, NOCTX, CMP, "'num_warps' must be a power of two", OPT_SRC(ir_warps3))                            \
    X(opt_ir_warps_64, NOCTX, CMP, "got 64", OPT_SRC(ir_warps64))                                                      \
    X(opt_ir_stages, NOCTX, CMP, "'num_stages' must be from 0 to 16", OPT_SRC(ir_stages))                              \
    X(opt_ir_programs, NOCTX, CMP, "'min_programs_per_sm' must be an integer from 1", OPT_SRC(ir_programs))            \
    X(opt_ir_programs_threads, NOCTX, CMP, "exceed the 2048 an SM holds", OPT_SRC(ir_programs_threads))                \
    X(opt_ir_big_tile, NOCTX, CMP, "more than 1048576 elements", OPT_SRC(ir_big_tile))                                 \
    X(opt_bad_pass, NOCTX, CMP, "unknown pass", opt_text(small_ir, strlen(small_ir), "no-such-pass", O_WARPS, 4))      \
    /* tc_list_kernels */                                                                                              \
    X(list_null_src, NOCTX, INV, "src", tc_list_kernels(NULL, &(char **){0}, &(size_t){0}, NULL))                      \
    X(list_null_names, NOCTX, INV, "names", tc_list_kernels(&fx.src, NULL, &(size_t){0}, NULL))                        \
    X(list_null_count, NOCTX, INV, "count", tc_list_kernels(&fx.src, &(char **){0}, NULL, NULL))                       \
    X(list_null_text, NOCTX, INV, "text", list_text(NULL, 5))                                                          \
    X(list_empty, NOCTX, TC_OK, "", list_text(NULL, 0))                                                                \
    X(list_syntax, NOCTX, CMP, "list.tile:1:", list_text(bad_syntax, strlen(bad_syntax)))                              \
    /* tc_tune_space_create and its accessors, tc_autotune */                                                         \
    X(tune_null_src, NOCTX, INV, "src", tune_space(T_SRC))                                                             \
    X(tune_null_kernel, NOCTX, INV, "kernel", tune_space(T_KERNEL))                                                    \
    X(tune_null_out, NOCTX, INV, "out", tune_space(T_OUT))                                                             \
    X(tune_cx_kind_99, NOCTX, INV, "kind 99", tune_space(T_CX_KIND))                                                   \
    X(tune_no_kernel, NOCTX, INV, "no kernel named 'nope'", tune_space(T_NO_KERNEL))                                  \
    X(tune_block_fixed, NOCTX, TC_OK, "", tune_space(T_NONE))                                                          \
    X(tune_config_null, NOCTX, INV, "space", tc_tune_space_config(NULL, 0, &(tc_tune_config){0}))                      \
    X(autotune_null_req, NOCTX, INV, "the request",                                                                    \
      tc_autotune(NULL, NULL, NULL, NULL, &(tc_autotune_result){0}, NULL))                                             \
    X(autotune_null_out, NOCTX, INV, "out", tc_autotune(NULL, NULL, &(tc_autotune_request){0}, NULL, NULL, NULL))      \
    X(autotune_null_jit, NOCTX, INV, "req->jit",                                                                       \
      tc_autotune(NULL, NULL, &(tc_autotune_request){0}, NULL, &(tc_autotune_result){0}, NULL))                        \
    X(autotune_lookup_null, NOCTX, INV, "found", tc_autotune_lookup(NULL, NULL, NULL, NULL, &(size_t){0}))            \
    X(autotune_lookup_ctx, NOCTX, INV, "ctx", tc_autotune_lookup(NULL, NULL, NULL, &(int){0}, &(size_t){0}))           \
    /* runtime.h: the driver and contexts */                                                                           \
    X(driver_version_null, NOCTX, INV, "version", tc_driver_version(NULL))                                             \
    X(device_count_null, NOCTX, INV, "count", tc_device_count(NULL))                                                   \
    X(context_null_out, NOCTX, INV, "out", tc_context_create(0, NULL))                                                 \
    X(context_device_neg, CTX, TC_ERROR_NO_DEVICE, "-1", tc_context_create(-1, &(tc_context *){0}))                    \
    X(context_device_max, CTX, TC_ERROR_NO_DEVICE, "2147483647", tc_context_create(INT_MAX, &(tc_context *){0}))       \
    X(context_from_null_out, NOCTX, INV, "out", tc_context_create_from(NULL, NULL))                                    \
    X(make_current_null, NOCTX, INV, "ctx", tc_context_make_current(NULL))                                             \
    X(set_log_null, NOCTX, INV, "ctx", tc_context_set_log(NULL, NULL, NULL))                                           \
    /* modules */                                                                                                      \
    X(module_load_null_ctx, NOCTX, INV, "ctx", module_load(NULL, fx.bin, 1))                                           \
    X(module_load_null_bin, CTX, INV, "bin", module_load(fx.ctx, NULL, 1))                                             \
    X(module_load_null_out, CTX, INV, "out", module_load(fx.ctx, fx.bin, 0))                                           \
    X(module_load_no_ptx, CTX, INV, "no PTX", module_load(fx.ctx, fx.bin, 1))                                          \
    X(ptx_null_ctx, NOCTX, INV, "ctx", load_ptx(NULL, empty_ptx, 10, NULL, 0, 1))                                      \
    X(ptx_null_ptx, CTX, INV, "ptx is NULL", load_ptx(fx.ctx, NULL, 10, NULL, 0, 1))                                   \
    X(ptx_len_0, CTX, INV, "len 0", load_ptx(fx.ctx, empty_ptx, 0, NULL, 0, 1))                                        \
    X(ptx_len_max, CTX, INV, "len 18446744073709551615", load_ptx(fx.ctx, empty_ptx, SIZE_MAX, NULL, 0, 1))            \
    X(ptx_null_out, CTX, INV, "out", load_ptx(fx.ctx, empty_ptx, 10, NULL, 0, 0))                                      \
    X(ptx_null_kernels, CTX, INV, "kernels is NULL", load_ptx(fx.ctx, empty_ptx, 10, NULL, 1, 1))                      \
    X(ptx_num_kernels_max, CTX, INV, "num_kernels", load_ptx(fx.ctx, empty_ptx, 10, &good_desc_storage, SIZE_MAX, 1))  \
    X(desc_name_null, CTX, INV, "name is NULL", load_desc(D_NAME_NULL, 0, 0))                                          \
    X(desc_name_empty, CTX, INV, "name is empty", load_desc(D_NAME_EMPTY, 0, 0))                                       \
    X(desc_warps_0, CTX, INV, "num_warps 0", load_desc(D_WARPS, 0, 0))                                                 \
    X(desc_warps_33, CTX, INV, "num_warps 33", load_desc(D_WARPS, 33, 0))                                              \
    X(desc_warps_64, CTX, INV, "num_warps 64", load_desc(D_WARPS, 64, 0))                                              \
    X(desc_warps_neg, CTX, INV, "num_warps -1", load_desc(D_WARPS, -1, 0))                                             \
    X(desc_shared_wraps, CTX, INV, "shared_bytes", load_desc(D_SHARED, 0, SIZE_MAX - 15))                              \
    X(desc_shared_max, CTX, INV, "shared_bytes", load_desc(D_SHARED, 0, SIZE_MAX))                                     \
    X(desc_shared_too_big, CTX, TC_ERROR_UNSUPPORTED, "shared memory", load_desc(D_SHARED, 0, TC_MAX_SHARED_BYTES))    \
    X(desc_nparams_max, CTX, INV, "num_params", load_desc(D_NPARAMS, 0, SIZE_MAX))                                     \
    X(desc_params_null, CTX, INV, "params is NULL", load_desc(D_PARAMS_NULL, 0, 0))                                    \
    X(desc_param_name_null, CTX, INV, "params[0].name is NULL", load_desc(D_PNAME_NULL, 0, 0))                         \
    X(desc_dtype_99, CTX, INV, "dtype 99", load_desc(D_DTYPE, 99, 0))                                                  \
    X(desc_dtype_neg, CTX, INV, "dtype -1", load_desc(D_DTYPE, -1, 0))                                                 \
    X(desc_dtype_past_fp8, CTX, INV, "dtype 11", load_desc(D_DTYPE, TC_DTYPE_F8E5M2 + 1, 0))                           \
    X(desc_good, CTX, TC_OK, "", load_desc(D_SHARED, 0, 1024))                                                         \
    X(desc_persistent_2, CTX, INV, "persistent 2 is not 0 or 1", load_desc(D_PERSISTENT, 2, 0))                        \
    X(desc_persistent_neg, CTX, INV, "persistent -1", load_desc(D_PERSISTENT, -1, 0))                                  \
    X(desc_persistent_min, CTX, INV, "persistent -2147483648", load_desc(D_PERSISTENT, INT_MIN, 0))                    \
    X(desc_persistent_good, CTX, TC_OK, "", load_desc(D_PERSISTENT, 1, 0))                                             \
    X(desc_nmaps_max, CTX, INV, "num_tensor_maps", load_desc(D_NMAPS, 0, SIZE_MAX))                                    \
    X(desc_nmaps_17, CTX, INV, "num_tensor_maps 17", load_desc(D_NMAPS, 0, 17))                                        \
    X(desc_maps_null, CTX, INV, "tensor_maps is NULL", load_desc(D_MAPS_NULL, 0, 0))                                   \
    X(desc_map_rank_0, CTX, INV, "tensor_maps[0]: rank 0", load_desc(D_MAP_RANK, 0, 0))                                \
    X(desc_map_rank_6, CTX, INV, "rank 6", load_desc(D_MAP_RANK, 6, 0))                                                \
    X(desc_map_rank_min, CTX, INV, "rank", load_desc(D_MAP_RANK, INT_MIN, 0))                                          \
    X(desc_map_base_1, CTX, INV, "base 1 is not a pointer parameter", load_desc(D_MAP_BASE, 1, 0))                     \
    X(desc_map_base_neg, CTX, INV, "base -1", load_desc(D_MAP_BASE, -1, 0))                                            \
    X(desc_map_dim_ptr, CTX, INV, "dim_param[0] is 0", load_desc(D_MAP_DIM_PARAM, 0, 0))                               \
    X(desc_map_dim_max, CTX, INV, "dim_param[0]", load_desc(D_MAP_DIM_PARAM, INT_MAX, 0))                              \
    X(desc_map_box_0, CTX, INV, "box[0] is 0", load_desc(D_MAP_BOX, 0, 0))                                             \
    X(desc_map_box_300, CTX, INV, "box[0] is 300", load_desc(D_MAP_BOX, 300, 0))                                       \
    X(desc_map_box_3, CTX, INV, "12 bytes", load_desc(D_MAP_BOX, 3, 0))                                                \
    X(desc_map_swizzle_16, CTX, INV, "swizzle 16", load_desc(D_MAP_SWIZZLE, 16, 0))                                    \
    X(desc_map_good, CTX, TC_OK, "", load_desc(D_MAP_SWIZZLE, 32, 0))                                                  \
    X(cubin_null, CTX, INV, "cubin is NULL", load_cubin(NULL, 10))                                                     \
    X(cubin_len_max, CTX, INV, "len", load_cubin(empty_ptx, SIZE_MAX))                                                 \
    X(get_kernel_null_module, NOCTX, INV, "module", get_kernel(NULL, "empty", 1))                                      \
    X(get_kernel_null_name, CTX, INV, "name", get_kernel(fx.mod, NULL, 1))                                             \
    X(get_kernel_null_out, CTX, INV, "out", get_kernel(fx.mod, "empty", 0))                                            \
    X(get_kernel_unknown, CTX, INV, "no kernel named 'nope'", get_kernel(fx.raw_mod, "nope", 1))                       \
    /* launches */                                                                                                     \
    X(launch_null_kernel, NOCTX, INV, "kernel is NULL", launch(NULL, 1, 1, 1, NULL, 0))                                \
    X(launch_arg_count, CTX, INV, "takes 1 arguments, got 2", launch(fx.k, 1, 1, 1, fx.args, 2))                       \
    X(launch_null_args, CTX, INV, "args[0]", launch(fx.k, 1, 1, 1, NULL, 1))                                           \
    X(launch_zero_pointer, CTX, INV, "is 0", launch_zero_ptr())                                                        \
    X(launch_grid_y, CTX, INV, "grid 1x65536x1", launch(fx.k, 1, 65536, 1, fx.args, 1))                                \
    X(launch_grid_x, CTX, INV, "grid 4294967295x1x1", launch(fx.k, UINT_MAX, 1, 1, fx.args, 1))                        \
    X(launch_no_metadata, CTX, INV, "without metadata", launch(fx.raw, 1, 1, 1, fx.args, 1))                           \
    X(launch_empty_grid, CTX, TC_OK, "", launch(fx.k, 0, 1, 1, fx.args, 1))                                            \
    X(launch_persistent_programs, CTX, INV, "more than 2^31 - 1", launch_persistent(1u << 16, 1u << 15, 1))            \
    X(launch_persistent_max, CTX, INV, "9223090559730712575 programs", launch_persistent(TC_MAX_GRID_X, 65535, 65535)) \
    X(launch_persistent_good, CTX, TC_OK, "", launch_persistent(TC_MAX_GRID_X, 1, 1))                                  \
    X(launch_persistent_empty, CTX, TC_OK, "", launch_persistent(TC_MAX_GRID_X, 0, 65535))                             \
    X(launch_raw_null, NOCTX, INV, "kernel is NULL", launch_raw(NULL, 1, 32, 1, 1))                                    \
    X(launch_raw_block_0, CTX, INV, "block 0x1x1", launch_raw(fx.raw, 1, 0, 1, 1))                                     \
    X(launch_raw_block_1025, CTX, INV, "1 to 1024 threads", launch_raw(fx.raw, 1, 1025, 1, 1))                         \
    X(launch_raw_block_product, CTX, INV, "1 to 1024 threads", launch_raw(fx.raw, 1, 64, 64, 1))                       \
    X(launch_raw_block_max, CTX, INV, "1 to 1024 threads", launch_raw(fx.raw, 1, UINT_MAX, UINT_MAX, UINT_MAX))        \
    X(launch_raw_grid_z, CTX, INV, "grid 1x1x65536", launch_raw(fx.raw, 65536, 32, 1, 1))                              \
    /* tc_jit */                                                                                                       \
    X(jit_null_ctx, NOCTX, INV, "ctx", jit(J_NONE, 0, O_WARPS))                                                        \
    X(jit_null_req, CTX, INV, "req", jit(J_REQ_NULL, 0, O_WARPS))                                                      \
    X(jit_null_out, CTX, INV, "out", jit(J_OUT_NULL, 0, O_WARPS))                                                      \
    X(jit_null_kernel, CTX, INV, "req->kernel", jit(J_KERNEL_NULL, 0, O_WARPS))                                        \
    X(jit_no_source, CTX, INV, "req->source and req->path", jit(J_NO_SOURCE, 0, O_WARPS))                              \
    X(jit_cx_kind, CTX, INV, "kind 99", jit(J_CX_KIND, 99, O_WARPS))                                                   \
    X(jit_warps_3, CTX, INV, "opt->num_warps 3", jit(J_OPT, 3, O_WARPS))                                               \
    X(jit_warps_neg, CTX, INV, "opt->num_warps -1", jit(J_OPT, -1, O_WARPS))                                           \
    X(jit_stages_1000, CTX, INV, "opt->num_stages", jit(J_OPT, 1000, O_STAGES))                                        \
    X(jit_param_div_0, CTX, INV, "divisibility 0", jit(J_OPT, 0, O_PARAM_DIV))                                         \
    X(jit_div_null, CTX, INV, "req->divisibility is NULL", jit(J_DIV_NULL, 0, O_WARPS))                                \
    X(jit_div_neg, CTX, INV, "req->divisibility[1]", jit(J_DIV, -16, O_WARPS))                                         \
    X(jit_div_min, CTX, INV, "req->divisibility[1]", jit(J_DIV, INT64_MIN, O_WARPS))                                   \
    X(jit_args_null, CTX, INV, "req->args", jit(J_ARGS_NULL, 0, O_WARPS))                                              \
    X(jit_missing_path, CTX, TC_ERROR_IO, "/nonexistent-tilec-dir/x.tile", jit(J_PATH, 0, O_WARPS))                    \
    X(jit_bad_source, CTX, CMP, "error", jit(J_SOURCE, 0, O_WARPS))                                                    \
    /* memory, streams, timers */                                                                                      \
    X(alloc_null_out, NOCTX, INV, "out", mem_alloc(NULL, 16, 0))                                                       \
    X(alloc_null_ctx, NOCTX, INV, "ctx", mem_alloc(NULL, 16, 1))                                                       \
    X(alloc_size_max, CTX, TC_ERROR_OUT_OF_MEMORY, "cuMemAlloc", mem_alloc(fx.ctx, SIZE_MAX, 1))                       \
    X(free_null_ctx, NOCTX, INV, "ctx", tc_mem_free(NULL, 0x1000))                                                     \
    X(htod_null_ctx, NOCTX, INV, "ctx", tc_memcpy_htod(NULL, 0x1000, "abcd", 4))                                       \
    X(htod_null_dst, CTX, INV, "dst is 0", tc_memcpy_htod(fx.ctx, 0, "abcd", 4))                                       \
    X(htod_null_src, CTX, INV, "src is NULL", tc_memcpy_htod(fx.ctx, fx.buf, NULL, 4))                                 \
    X(dtoh_null_dst, CTX, INV, "dst is NULL", tc_memcpy_dtoh(fx.ctx, NULL, fx.buf, 4))                                 \
    X(dtoh_null_src, CTX, INV, "src is 0", tc_memcpy_dtoh(fx.ctx, (char[4]){0}, 0, 4))                                 \
    X(memset_null_dst, CTX, INV, "dst is 0", tc_memset_d8(fx.ctx, 0, 0, 4))                                            \
    X(memset_null_ctx, NOCTX, INV, "ctx", tc_memset_d8(NULL, 0x1000, 0, 4))                                            \
    X(memset_async_null_dst, CTX, INV, "dst is 0", tc_memset_d8_async(fx.ctx, NULL, 0, 0, 4))                        \
    X(memset_async_null_ctx, NOCTX, INV, "ctx", tc_memset_d8_async(NULL, NULL, 0x1000, 0, 4))                          \
    X(stream_null_out, CTX, INV, "out", stream_create(fx.ctx, 0))                                                      \
    X(stream_null_ctx, NOCTX, INV, "ctx", stream_create(NULL, 1))                                                      \
    X(stream_destroy_null_ctx, NOCTX, INV, "ctx", tc_stream_destroy(NULL, (CUstream)(uintptr_t)0x10))                  \
    X(stream_sync_null_ctx, NOCTX, INV, "ctx", tc_stream_synchronize(NULL, NULL))                                      \
    X(timer_null_ctx, NOCTX, INV, "ctx", timer_make(NULL, 1))                                                          \
    X(timer_null_out, CTX, INV, "out", timer_make(fx.ctx, 0))                                                          \
    X(timer_start_null, NOCTX, INV, "timer", tc_timer_start(NULL, NULL))                                               \
    X(timer_stop_null, NOCTX, INV, "timer", tc_timer_stop(NULL, NULL))                                                 \
    X(timer_elapsed_null, NOCTX, INV, "timer", elapsed(NULL, 1))                                                       \
    X(timer_elapsed_null_ms, CTX, INV, "ms", elapsed(fx.timer, 0))                                                     \
    /* stdlib.h: row-wise kernels */                                                                                   \
    X(softmax_null_ctx, NOCTX, INV, "ctx", softmax(NULL, TC_DTYPE_F32, P, 4, 64, 64))                                  \
    X(softmax_dtype_99, NOCTX, INV, "dtype", softmax(SCTX, 99, P, 4, 64, 64))                                          \
    X(softmax_dtype_neg, NOCTX, INV, "dtype", softmax(SCTX, -1, P, 4, 64, 64))                                         \
    X(softmax_dtype_fp8, NOCTX, INV, "dtype", softmax(SCTX, TC_DTYPE_F8E4M3, P, 4, 64, 64))                            \
    X(softmax_rows_0, NOCTX, INV, "rows", softmax(SCTX, TC_DTYPE_F32, P, 0, 64, 64))                                   \
    X(softmax_rows_min, NOCTX, INV, "rows", softmax(SCTX, TC_DTYPE_F32, P, INT64_MIN, 64, 64))                         \
    X(softmax_rows_max, NOCTX, INV, "rows", softmax(SCTX, TC_DTYPE_F32, P, INT64_MAX, 64, 64))                         \
    X(softmax_cols_neg, NOCTX, INV, "cols", softmax(SCTX, TC_DTYPE_F32, P, 4, -1, 64))                                 \
    X(softmax_cols_max, NOCTX, INV, "cols", softmax(SCTX, TC_DTYPE_F32, P, 4, INT64_MAX, INT64_MAX))                   \
    X(softmax_cols_i32, NOCTX, INV, "cols", softmax(SCTX, TC_DTYPE_F32, P, 1, INT32_MAX, INT32_MAX))                   \
    X(rmsnorm_cols_i32, NOCTX, INV, "cols", rmsnorm(1, INT32_MAX - 65535, 1e-5f))                                      \
    X(softmax_stride_small, NOCTX, INV, "stride", softmax(SCTX, TC_DTYPE_F32, P, 4, 64, 32))                           \
    X(softmax_stride_min, NOCTX, INV, "stride", softmax(SCTX, TC_DTYPE_F32, P, 4, 64, INT64_MIN))                      \
    X(softmax_out_0, NOCTX, INV, "out", softmax(SCTX, TC_DTYPE_F32, 0, 4, 64, 64))                                     \
    X(softmax_bwd_rows_min, NOCTX, INV, "rows",                                                                        \
      tc_softmax_bwd(SCTX, NULL, TC_DTYPE_F32, P, P, P, INT64_MIN, 64, 64, 64, 64))                                    \
    X(swiglu_null_ctx, NOCTX, INV, "ctx", tc_swiglu_fwd(NULL, NULL, TC_DTYPE_F16, P, P, P, 4, 64, 64, 64, 64))         \
    X(swiglu_stride_short, NOCTX, INV, "stride_gate",                                                                  \
      tc_swiglu_fwd(SCTX, NULL, TC_DTYPE_F16, P, P, P, 4, 64, 64, 32, 64))                                             \
    X(swiglu_bwd_null_dup, NOCTX, INV, "dup",                                                                          \
      tc_swiglu_bwd(SCTX, NULL, TC_DTYPE_BF16, P, 0, P, P, P, 4, 64, 64, 64, 64, 64, 64))                              \
    X(rope_null_args, NOCTX, INV, "a is NULL", tc_rope(SCTX, NULL, NULL))                                              \
    X(rope_rotary_odd, NOCTX, INV, "rotary_dim", rope(R_ROTARY_ODD))                                                   \
    X(rope_heads_overlap, NOCTX, INV, "heads overlap", rope(R_HEADS_OVERLAP))                                          \
    X(rope_one_table, NOCTX, INV, "cos and sin", rope(R_ONE_TABLE))                                                    \
    X(rope_theta_nan, NOCTX, INV, "theta", rope(R_THETA_NAN))                                                          \
    X(rope_no_seqlen, NOCTX, INV, "seqlen", rope(R_NO_SEQLEN))                                                         \
    X(rope_k_misaligned, NOCTX, INV, "k", rope(R_K_MISALIGNED))                                                        \
    X(ce_null_args, NOCTX, INV, "a is NULL", tc_cross_entropy(SCTX, NULL, NULL))                                       \
    X(ce_label_dtype, NOCTX, INV, "label_dtype", ce(C_LABEL_DTYPE))                                                    \
    X(ce_stride_short, NOCTX, INV, "stride_logits", ce(C_STRIDE_SHORT))                                                \
    X(ce_overlap, NOCTX, INV, "dlogits overlaps logits", ce(C_OVERLAP))                                                \
    X(ce_smoothing, NOCTX, INV, "label_smoothing", ce(C_SMOOTHING))                                                    \
    X(ce_workspace_small, NOCTX, INV, "workspace_bytes", ce(C_WORKSPACE))                                              \
    X(ce_ws_size_null, NOCTX, INV, "bytes", tc_cross_entropy_workspace_size(4, NULL))                                  \
    X(adamw_null_args, NOCTX, INV, "a is NULL", tc_adamw(SCTX, NULL, NULL))                                            \
    X(adamw_no_tensors, NOCTX, INV, "num_tensors is 0", adamw(W_NO_TENSORS))                                           \
    X(adamw_numel_0, NOCTX, INV, "tensors[1].numel", adamw(W_NUMEL_0))                                                 \
    X(adamw_master_missing, NOCTX, INV, "tensors[0].master", adamw(W_MASTER_MISSING))                                  \
    X(adamw_beta_1, NOCTX, INV, "beta1", adamw(W_BETA_1))                                                              \
    X(adamw_workspace_small, NOCTX, INV, "workspace_bytes", adamw(W_WORKSPACE))                                        \
    X(adamw_ws_null, NOCTX, INV, "bytes", tc_adamw_workspace_size(NULL, 1, NULL))                                      \
    X(ln_null_ctx, NOCTX, INV, "ctx", tc_layernorm_fwd(NULL, NULL, TC_DTYPE_F16, P, P, P, P, P, 0, 4, 64, 64, 64, 1e-5f)) \
    X(ln_stride_short, NOCTX, INV, "stride_x",                                                                         \
      tc_layernorm_fwd(SCTX, NULL, TC_DTYPE_F16, P, P, P, P, P, 0, 4, 64, 64, 32, 1e-5f))                              \
    X(ln_eps_neg, NOCTX, INV, "eps", tc_layernorm_fwd(SCTX, NULL, TC_DTYPE_F16, P, P, P, P, P, 0, 4, 64, 64, 64, -1.0f)) \
    X(ln_bwd_null_ws, NOCTX, INV, "workspace",                                                                         \
      tc_layernorm_bwd(SCTX, NULL, TC_DTYPE_BF16, P, P, 0, P, P, P, P, P, 4, 64, 64, 64, 64, 0, 1 << 20))             \
    X(ln_ws_size_null, NOCTX, INV, "bytes", tc_layernorm_bwd_workspace_size(SCTX, 4, 64, NULL))                        \
    X(rmsnorm_eps_nan, NOCTX, INV, "eps", rmsnorm(4, 64, NAN))                                                         \
    X(rmsnorm_eps_neg, NOCTX, INV, "eps", rmsnorm(4, 64, -1.0f))                                                       \
    X(rmsnorm_eps_inf, NOCTX, INV, "eps", rmsnorm(4, 64, INFINITY))                                                    \
    X(rmsnorm_cols_max, NOCTX, INV, "cols", rmsnorm(4, INT64_MAX, 1e-6f))                                              \
    X(rmsnorm_bwd_rows_max, NOCTX, INV, "rows",                                                                        \
      tc_rmsnorm_bwd(SCTX, NULL, TC_DTYPE_F16, P, P, P, P, P, P, INT64_MAX, 64, 64, 64, 64))                           \
    X(plan_null_out, NOCTX, INV, "out", plan(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F32, 64, 0))                              \
    X(plan_op_99, NOCTX, INV, "op 99", plan(99, TC_DTYPE_F32, 64, 1))                                                  \
    X(plan_op_neg, NOCTX, INV, "op -1", plan(-1, TC_DTYPE_F32, 64, 1))                                                 \
    X(plan_dtype_99, NOCTX, INV, "dtype", plan(TC_STDLIB_SOFTMAX_FWD, 99, 64, 1))                                      \
    X(plan_cols_0, NOCTX, INV, "cols", plan(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F32, 0, 1))                                \
    X(plan_cols_max, NOCTX, INV, "cols", plan(TC_STDLIB_SOFTMAX_FWD, TC_DTYPE_F32, INT64_MAX, 1))                      \
    X(source_null_name, NOCTX, INV, "name", source(NULL, 1))                                                           \
    X(source_null_text, NOCTX, INV, "text", source("softmax.tile", 0))                                                 \
    X(source_unknown, NOCTX, INV, "nope.tile", source("nope.tile", 1))                                                 \
    /* matrix multiplies */                                                                                            \
    X(matmul_null_ctx, NOCTX, INV, "ctx", matmul(NULL, TC_DTYPE_F16, P, 64, 64, 64, 64, 1, 0))                         \
    X(matmul_dtype_f32, NOCTX, INV, "dtype", matmul(SCTX, TC_DTYPE_F32, P, 64, 64, 64, 64, 1, 0))                      \
    X(matmul_dtype_fp8, NOCTX, INV, "dtype", matmul(SCTX, TC_DTYPE_F8E5M2, P, 64, 64, 64, 64, 1, 0))                   \
    X(matmul_m_0, NOCTX, INV, "M", matmul(SCTX, TC_DTYPE_F16, P, 0, 64, 64, 64, 1, 0))                                 \
    X(matmul_m_max, NOCTX, INV, "M", matmul(SCTX, TC_DTYPE_F16, P, INT64_MAX, 64, 64, 64, 1, 0))                       \
    X(matmul_k_min, NOCTX, INV, "K", matmul(SCTX, TC_DTYPE_F16, P, 64, 64, INT64_MIN, 64, 1, 0))                       \
    X(matmul_c_aliased, NOCTX, INV, "stride", matmul(SCTX, TC_DTYPE_F16, P, 64, 64, 64, 0, 0, 0))                      \
    X(matmul_act_99, NOCTX, INV, "act", matmul(SCTX, TC_DTYPE_F16, P, 64, 64, 64, 64, 1, 99))                          \
    X(matmul_act_neg, NOCTX, INV, "act", matmul(SCTX, TC_DTYPE_F16, P, 64, 64, 64, 64, 1, -1))                         \
    X(matmul_c_0, NOCTX, INV, "c", matmul(SCTX, TC_DTYPE_F16, 0, 64, 64, 64, 64, 1, 0))                                \
    X(mm_plan_null_out, NOCTX, INV, "out", mm_plan(64, 0, 0))                                                          \
    X(mm_plan_m_big, NOCTX, INV, "M", mm_plan(((int64_t)1 << 30) + 1, 0, 1))                                           \
    X(mm_plan_act_99, NOCTX, INV, "act", mm_plan(64, 99, 1))                                                           \
    X(blockdiag_nblocks_big, NOCTX, INV, "nblocks", blockdiag(4, 65536))                                               \
    X(blockdiag_batch_min, NOCTX, INV, "batch", blockdiag(INT64_MIN, 4))                                               \
    X(bd_plan_null_out, NOCTX, INV, "out", bd_plan(4, 0))                                                              \
    X(bd_plan_nblocks_0, NOCTX, INV, "nblocks", bd_plan(0, 1))                                                         \
    /* attention */                                                                                                    \
    X(attn_null_ctx, NOCTX, INV, "ctx", attention(NULL, TC_DTYPE_F16, 1, 8, 8, 128, 64, 0, 0.125f))                    \
    X(attn_dtype_f32, NOCTX, INV, "dtype", attention(SCTX, TC_DTYPE_F32, 1, 8, 8, 128, 64, 0, 0.125f))                 \
    X(attn_head_dim_0, NOCTX, INV, "head_dim", attention(SCTX, TC_DTYPE_F16, 1, 8, 8, 128, 0, 0, 0.125f))              \
    X(attn_head_dim_257, NOCTX, INV, "head_dim", attention(SCTX, TC_DTYPE_F16, 1, 8, 8, 128, 257, 0, 0.125f))          \
    X(attn_kv_heads, NOCTX, INV, "kv_heads", attention(SCTX, TC_DTYPE_F16, 1, 8, 3, 128, 64, 0, 0.125f))               \
    X(attn_seqlen_max, NOCTX, INV, "seqlen", attention(SCTX, TC_DTYPE_F16, 1, 8, 8, INT64_MAX, 64, 0, 0.125f))         \
    X(attn_batch_heads, NOCTX, INV, "batch * heads", attention(SCTX, TC_DTYPE_F16, 512, 256, 256, 16, 64, 0, 0.125f))  \
    X(attn_scale_nan, NOCTX, INV, "scale", attention(SCTX, TC_DTYPE_F16, 1, 8, 8, 128, 64, 0, NAN))                    \
    X(attn_one_cu_seqlens, NOCTX, INV, "cu_seqlens", attention(SCTX, TC_DTYPE_F16, 1, 8, 8, 128, 64, P, 0.125f))       \
    X(attn_plan_null_out, NOCTX, INV, "out", attn_plan(TC_DTYPE_F16, 64, 0))                                           \
    X(attn_plan_head_dim_min, NOCTX, INV, "head_dim", attn_plan(TC_DTYPE_F16, INT64_MIN, 1))                           \
    X(attn_bwd_null_ctx, NOCTX, INV, "ctx", attention_bwd(NULL, TC_DTYPE_F16, 8, 8, 128, 64, 0.125f, 1 << 20))         \
    X(attn_bwd_dtype_f32, NOCTX, INV, "dtype", attention_bwd(SCTX, TC_DTYPE_F32, 8, 8, 128, 64, 0.125f, 1 << 20))      \
    X(attn_bwd_head_dim_257, NOCTX, INV, "head_dim",                                                                   \
      attention_bwd(SCTX, TC_DTYPE_F16, 8, 8, 128, 257, 0.125f, 1 << 20))                                              \
    X(attn_bwd_kv_heads, NOCTX, INV, "kv_heads", attention_bwd(SCTX, TC_DTYPE_F16, 8, 3, 128, 64, 0.125f, 1 << 20))    \
    X(attn_bwd_seqlen_max, NOCTX, INV, "seqlen",                                                                       \
      attention_bwd(SCTX, TC_DTYPE_F16, 8, 8, INT64_MAX, 64, 0.125f, 1 << 20))                                         \
    X(attn_bwd_scale_inf, NOCTX, INV, "scale", attention_bwd(SCTX, TC_DTYPE_F16, 8, 8, 128, 64, INFINITY, 1 << 20))    \
    X(attn_bwd_workspace_small, NOCTX, INV, "workspace_bytes (16)",                                                    \
      attention_bwd(SCTX, TC_DTYPE_F16, 8, 8, 128, 64, 0.125f, 16))                                                    \
    X(attn_bwd_ws_null_out, NOCTX, INV, "bytes", attn_bwd_ws(TC_DTYPE_F16, 64, 0))                                     \
    X(attn_bwd_ws_head_dim_0, NOCTX, INV, "head_dim", attn_bwd_ws(TC_DTYPE_F16, 0, 1))                                 \
    X(attn_bwd_ws_dtype_f32, NOCTX, INV, "dtype", attn_bwd_ws(TC_DTYPE_F32, 64, 1))                                    \
    X(attn_bwd_plan_null_out, NOCTX, INV, "out", attn_bwd_plan(TC_DTYPE_F16, 64, 0))                                   \
    X(attn_bwd_plan_head_dim_min, NOCTX, INV, "head_dim", attn_bwd_plan(TC_DTYPE_F16, INT64_MIN, 1))                   \
    /* aot.h */                                                                                                        \
    X(aot_null_req, NOCTX, INV, "tc_aot_generate", aot(A_REQ_NULL))                                                    \
    X(aot_null_out, NOCTX, INV, "tc_aot_generate", aot(A_OUT_NULL))                                                    \
    X(aot_null_source, NOCTX, INV, "source", aot(A_SOURCE_NULL))                                                       \
    X(aot_null_name, NOCTX, INV, "name", aot(A_NAME_NULL))                                                             \
    X(aot_bad_name, NOCTX, INV, "'1softmax' is not a C identifier", aot(A_NAME_BAD))                                   \
    X(aot_bad_arch, NOCTX, TC_ERROR_UNSUPPORTED, "sm_70", aot(A_ARCH))                                                 \
    X(aot_no_archs, NOCTX, INV, "targets", aot(A_NUM_ARCHS))                                                           \
    X(aot_stages_1000, NOCTX, INV, "opt->num_stages", aot(A_STAGES))                                                   \
    X(aot_cx_kind_99, NOCTX, INV, "kind 99", aot(A_CX_KIND))

static const tc_kernel_desc good_desc_storage = {"empty", 4, 0, 1, &good_param, 0, NULL, 0};

#define DEFINE_ROW(name, ctx, status, word, call)                                                                      \
    static tc_status row_##name(void) { return (call); }
ROWS(DEFINE_ROW)

typedef struct Row {
    const char *name;
    int needs_ctx;
    tc_status expect;
    const char *word; /* in tc_last_error() */
    tc_status (*call)(void);
} Row;

#define ROW_ENTRY(name, ctx, status, word, call) {#name, ctx, status, word, row_##name},
static const Row rows[] = {ROWS(ROW_ENTRY)};

TEST(test_misuse_table) {
    fx_setup();
    int run = 0, skipped = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const Row *r = &rows[i];
        if (r->needs_ctx && !fx.ctx) {
            skipped++;
            continue;
        }
        rt_last_error_clear();
        tc_diagnostics_clear(fx.diags);
        tc_status st = r->call();
        const char *err = tc_last_error();
        if (getenv("TILEC_MISUSE_VERBOSE"))
            fprintf(stderr, "  %-28s %-24s %.160s\n", r->name, tc_status_string(st), err);
        run++;
        unit_checks++;
        bool ok = st == r->expect && (r->expect == TC_OK ? *err == 0 : *err != 0 && strstr(err, r->word) != NULL);
        if (!ok) {
            unit_failures++;
            fprintf(stderr, "%s:%d: row %s: got %s, expected %s; tc_last_error: \"%s\" (should %s \"%s\")\n",
                    __FILE__, __LINE__, r->name, tc_status_string(st), tc_status_string(r->expect), err,
                    r->expect == TC_OK ? "be empty, not" : "contain", r->word);
        }
    }
    fprintf(stderr, "  api_misuse: %d rows run, %d skipped (no context)\n", run, skipped);
    CHECK(run > 0);
    fx_teardown();
}

/* A compile error's last error is a summary: the count, the file, and the
 * first diagnostic with its position (the rest are in the diagnostics). */
TEST(test_compile_error_summary) {
    tc_compiler *cc;
    CHECK_EQ_INT(tc_compiler_create(NULL, &cc), TC_OK);
    const char text[] = "kernel k(f32* p) {\n  let a = undefined_one;\n  let b = undefined_two;\n}\n";
    tc_source src = {"two.tile", text, strlen(text)};
    tc_binary *b = NULL;
    CHECK_EQ_INT(tc_compile(cc, &src, NULL, NULL, 0, NULL, &b, NULL), TC_ERROR_COMPILE);
    const char *err = tc_last_error();
    CHECK(strstr(err, "tc_compile: compilation failed: 2 errors in two.tile") != NULL);
    CHECK(strstr(err, "the first: two.tile:2:11: error:") != NULL);
    CHECK(strstr(err, "undefined_one") != NULL);
    CHECK(strstr(err, "undefined_two") == NULL);
    tc_compiler_destroy(cc);
}

UNIT_SUITE(api_misuse, test_misuse_table, test_compile_error_summary)
