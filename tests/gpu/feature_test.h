/*
 * feature_test.h — the harness of the GPU tests made of small kernels
 * compiled from source strings (test_features.c, test_random_debug.c):
 * each kernel through tc_jit on the GPU or, without one, to PTX through
 * tc_compile and ptxas; poisoned host/device buffers; one line and one
 * gt_record per case; main() for both modes (ft_main).
 */
#ifndef TILEC_FEATURE_TEST_H
#define TILEC_FEATURE_TEST_H

#include "gpu_test.h"

#include <unistd.h>

enum { FGUARD = 64 }; /* poisoned elements after every output */

/* The first word of each case's line ("features"). */
static const char *ft_tag = "features";

typedef struct Ft {
    tc_context *ctx;   /* NULL: compile-only (no GPU) */
    tc_compiler *cc;   /* compile-only */
    const char *ptxas; /* compile-only: assemble each PTX with this, if set */
    int compiled, compile_failed, assembled;
} Ft;

/* Compile-only mode: does ptxas accept the PTX? */
static inline bool ptxas_accepts(const char *ptxas, const char *ptx, size_t len, const char *label) {
    char path[] = "/tmp/tilec-features-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return true; /* cannot check: not a failure of the kernel */
    bool wrote = write(fd, ptx, len) == (ssize_t)len;
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --gpu-name=sm_90a -o /dev/null %s 2>&1", ptxas, path);
    int rc = wrote ? system(cmd) : 0;
    unlink(path);
    if (rc != 0)
        printf("%s: ptxas rejects the PTX (%s)\n", label, cmd);
    return rc == 0;
}

static inline tc_constexpr cx_int(const char *name, int64_t v) {
    return (tc_constexpr){name, TC_CONSTEXPR_INT, v, 0};
}
static inline tc_constexpr cx_bool(const char *name, bool v) {
    return (tc_constexpr){name, TC_CONSTEXPR_BOOL, v, 0};
}
static inline tc_constexpr cx_dtype(const char *name, tc_dtype t) {
    return (tc_constexpr){name, TC_CONSTEXPR_DTYPE, (int64_t)t, 0};
}

static inline void report(const char *label, tc_dtype t, double err, double tol, size_t clobbered_elems) {
    bool ok = gt_record(t, err, tol) && clobbered_elems == 0;
    printf("%s %-34s err %.2e (tol %.0e)", ft_tag, label, err, tol);
    if (clobbered_elems)
        printf(" wrote %zu elements past the outputs", clobbered_elems);
    printf(" %s\n", ok ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(ok);
}

static inline void fail_case(const char *label, const char *why) {
    printf("%s %-34s %s FAIL\n", ft_tag, label, why);
    fflush(stdout);
    gt_case_done(false);
}

/* The kernel: compiled by tc_jit with a GPU (specialized for the alignment
 * of `args` when given); without one compiled to PTX by tc_compile (and
 * NULL returned, so the caller skips the run). */
static inline tc_kernel *get_for(Ft *f, const char *label, const char *src, const char *kernel, const tc_constexpr *cx,
                                 size_t ncx, int num_warps, void **args, size_t nargs) {
    tc_diagnostics *diags = NULL;
    tc_diagnostics_create(&diags);
    tc_options opt;
    tc_options_init(&opt);
    opt.num_warps = num_warps;
    tc_kernel *k = NULL;
    tc_status st;
    if (!f->ctx) {
        tc_source s = {label, src, strlen(src)};
        opt.emit = TC_EMIT_PTX;
        tc_binary *bin = NULL;
        st = tc_compile(f->cc, &s, kernel, cx, ncx, &opt, &bin, diags);
        size_t len = 0;
        const char *ptx = st == TC_OK ? tc_binary_text(bin, &len) : NULL;
        if (ptx && f->ptxas) {
            f->assembled++;
            if (!ptxas_accepts(f->ptxas, ptx, len, label))
                st = TC_ERROR_COMPILE;
        }
        tc_binary_destroy(bin);
    } else {
        tc_jit_request req;
        tc_jit_request_init(&req);
        req.source = src;
        req.path = label;
        req.kernel = kernel;
        req.constexprs = cx;
        req.num_constexprs = ncx;
        req.options = &opt;
        req.diags = diags;
        req.args = args;
        req.num_args = nargs;
        st = tc_jit(f->ctx, &req, &k);
    }
    if (st == TC_OK) {
        f->compiled++;
    } else {
        f->compile_failed++;
        printf("%s: compile failed: %s\n%s%s\n", label, tc_status_string(st), tc_diagnostics_text(diags),
               tc_last_error());
        if (f->ctx)
            fail_case(label, "does not compile");
    }
    tc_diagnostics_destroy(diags);
    return k;
}

/* A host buffer (filled with 0xFF) and its device copy. */
typedef struct Buf {
    size_t bytes;
    unsigned char *h;
    CUdeviceptr d;
} Buf;

static inline tc_kernel *get(Ft *f, const char *label, const char *src, const char *kernel, const tc_constexpr *cx,
                             size_t ncx, int num_warps) {
    return get_for(f, label, src, kernel, cx, ncx, num_warps, NULL, 0);
}

static inline bool buf_new(Ft *f, Buf *b, size_t bytes) {
    b->bytes = bytes;
    b->d = 0;
    b->h = malloc(bytes);
    if (!b->h)
        return false;
    memset(b->h, 0xFF, bytes);
    return GT_OK(tc_mem_alloc(f->ctx, bytes, &b->d));
}

static inline void buf_free(Ft *f, Buf *b) {
    if (b->d)
        tc_mem_free(f->ctx, b->d);
    free(b->h);
    memset(b, 0, sizeof *b);
}

static inline bool buf_up(Ft *f, Buf *b) {
    return GT_OK(tc_memcpy_htod(f->ctx, b->d, b->h, b->bytes));
}

static inline bool buf_poison(Ft *f, Buf *b) {
    return GT_OK(tc_memset_d8(f->ctx, b->d, 0xFF, b->bytes));
}

static inline bool buf_down(Ft *f, Buf *b) {
    return GT_OK(tc_memcpy_dtoh(f->ctx, b->h, b->d, b->bytes));
}

/* Bytes from `from` on that are no longer 0xFF, in elements of `elem` bytes. */
static inline size_t buf_clobbered(const Buf *b, size_t from, size_t elem) {
    size_t bad = 0;
    for (size_t i = from; i < b->bytes; i++)
        bad += b->h[i] != 0xFF;
    return (bad + elem - 1) / elem;
}

static inline bool launch(Ft *f, tc_kernel *k, tc_dim3 grid, void **args, size_t nargs) {
    return GT_OK(tc_launch(k, grid, NULL, args, nargs)) && GT_OK(tc_stream_synchronize(f->ctx, NULL));
}

#define F32(b) ((float *)(b).h)
#define I32(b) ((int32_t *)(b).h)
#define U16(b) ((uint16_t *)(b).h)

/* main() of such a test: with a GPU, run_all(f) on it and the summary;
 * without one every kernel is still compiled to PTX for sm_90a (and
 * assembled by ptxas where $TILEC_PTXAS or /usr/local/cuda/bin/ptxas is
 * found), then "SKIP: no GPU (reason)" and 77, or 1 if something failed to
 * compile. */
static inline int ft_main(const char *name, const char *tag, void (*run_all)(Ft *)) {
    Ft f = {0};
    ft_tag = tag;
    gt_summary.name = name;
    tc_context *ctx = NULL;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        /* No GPU: compile every kernel to PTX, then skip (or fail). */
        char reason[512];
        snprintf(reason, sizeof reason, "%s", tc_last_error());
        tc_target target = {"sm_90a"};
        if (!GT_OK(tc_compiler_create(&target, &f.cc)))
            return 1;
        const char *env = getenv("TILEC_PTXAS");
        f.ptxas = env && *env                                      ? env
                  : access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas"
                                                                   : NULL;
        run_all(&f);
        tc_compiler_destroy(f.cc);
        printf("%s: compiled %d kernels to PTX for sm_90a (%d assembled by ptxas), %d failed\n", name, f.compiled,
               f.assembled, f.compile_failed);
        if (f.compile_failed)
            return 1;
        printf("SKIP: no GPU (%s)\n", reason);
        return 77;
    }
    if (!GT_OK(st))
        return 1;
    tc_context_destroy(ctx);
    f.ctx = gt_start(name); /* prints the seed and the device */
    run_all(&f);
    tc_context_destroy(f.ctx);
    return gt_finish();
}

#endif
