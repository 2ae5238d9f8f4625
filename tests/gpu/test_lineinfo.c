/*
 * test_lineinfo.c — line info on the GPU: a kernel JIT-compiled with line
 * info (tc_options.line_info, and $TILEC_LINE_INFO=1) stores past the end
 * of a small allocation, and compute-sanitizer's memcheck must report the
 * bad write at the store's line of the kernel's .tile file (the name
 * tc_jit_request.path gives the source string).
 *
 *     test_lineinfo          the checks below; runs itself under compute-sanitizer
 *     test_lineinfo --child  the kernel alone, as compute-sanitizer runs it
 *
 * compute-sanitizer is $TILEC_COMPUTE_SANITIZER, else the first in PATH,
 * else /usr/local/cuda/bin/compute-sanitizer.
 *
 * Every run first compiles the kernel to PTX through tc_compile, for sm_80
 * and sm_90a: with line info the PTX must name the file (`.file 1
 * "lineinfo_oob.tile"`) and the store's line (`.loc 1 LINE`), without it
 * have neither, and ptxas (where $TILEC_PTXAS or
 * /usr/local/cuda/bin/ptxas is found) must take it with -lineinfo. Then,
 * without a GPU: "SKIP: no GPU (reason)", exit 77; with a GPU but no
 * compute-sanitizer: "SKIP: no compute-sanitizer (...)", exit 77. Exit 1
 * when a check fails; the SUMMARY line last, as the other GPU tests.
 */
#include "gpu_test.h"

#include <unistd.h>

#define SRC_NAME "lineinfo_oob.tile"

/* A store with no mask: every program writes 1024 elements, past the end of
 * the 64-element buffer the test gives it. */
static const char SRC[] = "// what compute-sanitizer must point at: the store\n"
                          "kernel oob_store(f32* out, i32 n) {\n"
                          "    let i = program_id(0) * 1024 + arange(0, 1024);\n"
                          "    let v = f32(i) * 2.0 + f32(n);\n"
                          "    store(out + i, v);\n"
                          "}\n";

#define BUFFER_ELEMS 64

/* The line of SRC that holds `what` (1-based). */
static int line_of(const char *what) {
    const char *at = strstr(SRC, what);
    int line = 1;
    for (const char *p = SRC; at && p < at; p++)
        line += *p == '\n';
    return at ? line : 0;
}

static void check(bool ok, const char *what) {
    printf("lineinfo %-58s %s\n", what, ok ? "ok" : "FAIL");
    fflush(stdout);
    gt_case_done(ok);
}

/* An executable: `env` if set, else `name` in PATH, else `fallback` (NULL
 * if none of them is there). The result is a static buffer. */
static const char *find_tool(const char *env, const char *name, const char *fallback) {
    static char buf[4096];
    const char *v = getenv(env);
    if (v && *v)
        return v;
    for (const char *path = getenv("PATH"); path && *path;) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && n + strlen(name) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, name);
            if (access(buf, X_OK) == 0)
                return buf;
        }
        path = end ? end + 1 : NULL;
    }
    return access(fallback, X_OK) == 0 ? fallback : NULL;
}

/* Runs `cmd` (stdout and stderr) into out (NUL-terminated, cut at cap);
 * its exit status, -1 if it could not run. */
static int run_capture(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, p)) > 0) {
        size_t keep = got < cap - 1 - n ? got : cap - 1 - n;
        memcpy(out + n, chunk, keep);
        n += keep;
    }
    out[n] = 0;
    int st = pclose(p);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- without a GPU: the PTX ---- */

static void check_ptx(const char *arch, int store_line, const char *ptxas) {
    tc_target target = {arch};
    tc_compiler *cc = NULL;
    if (!GT_OK(tc_compiler_create(&target, &cc))) {
        check(false, "tc_compiler_create");
        return;
    }
    tc_source src = {SRC_NAME, SRC, strlen(SRC)};
    char what[128], loc[64];
    snprintf(loc, sizeof loc, "\t.loc\t1 %d ", store_line);
    for (int g = 1; g >= 0; g--) {
        tc_options opt;
        tc_options_init(&opt);
        opt.emit = TC_EMIT_PTX;
        opt.line_info = g;
        tc_binary *bin = NULL;
        tc_status st = tc_compile(cc, &src, "oob_store", NULL, 0, &opt, &bin, NULL);
        const char *ptx = st == TC_OK ? tc_binary_text(bin, NULL) : "";
        snprintf(what, sizeof what, "%s PTX %s line info", arch, g ? "with" : "without");
        if (st != TC_OK)
            printf("%s: %s\n", what, tc_last_error());
        bool has_file = strstr(ptx, "\t.file\t1 \"" SRC_NAME "\"") != NULL, has_loc = strstr(ptx, loc) != NULL;
        check(st == TC_OK && has_file == (g == 1) && has_loc == (g == 1) && (g || !strstr(ptx, ".loc")), what);
        if (g && st == TC_OK && ptxas) {
            char path[] = "/tmp/tilec-lineinfo-XXXXXX";
            int fd = mkstemp(path);
            size_t len = strlen(ptx);
            bool wrote = fd >= 0 && write(fd, ptx, len) == (ssize_t)len;
            if (fd >= 0)
                close(fd);
            char cmd[4200], out[4096];
            snprintf(cmd, sizeof cmd, "%s -lineinfo --gpu-name %s -o /dev/null %s 2>&1", ptxas, arch, path);
            int rc = wrote ? run_capture(cmd, out, sizeof out) : -1;
            if (fd >= 0)
                unlink(path);
            if (rc != 0)
                printf("%s\n%s", cmd, rc >= 0 ? out : "(did not run)\n");
            snprintf(what, sizeof what, "%s PTX with line info: ptxas -lineinfo takes it", arch);
            check(rc == 0, what);
        }
        tc_binary_destroy(bin);
    }
    tc_compiler_destroy(cc);
}

/* ---- with a GPU: the kernel under compute-sanitizer ---- */

/* What compute-sanitizer runs: the kernel, with line info from the option
 * (or from $TILEC_LINE_INFO, which the parent sets), on a buffer it
 * overruns. Exits 0 whatever the launch gives: the report is the test. */
static int child(void) {
    tc_context *ctx = NULL;
    if (!GT_OK(tc_context_create(0, &ctx)))
        return 1;
    tc_options opt;
    tc_options_init(&opt);
    opt.line_info = getenv("TILEC_LINE_INFO") ? 0 : 1;
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = SRC;
    req.path = SRC_NAME;
    req.kernel = "oob_store";
    req.options = &opt;
    tc_kernel *k = NULL;
    CUdeviceptr out = 0;
    int rc = 1;
    if (GT_OK(tc_jit(ctx, &req, &k)) && GT_OK(tc_mem_alloc(ctx, BUFFER_ELEMS * sizeof(float), &out))) {
        int32_t n = BUFFER_ELEMS;
        void *args[] = {&out, &n};
        tc_status st = tc_launch(k, (tc_dim3){1, 1, 1}, NULL, args, 2);
        if (st == TC_OK)
            st = tc_stream_synchronize(ctx, NULL);
        printf("child: oob_store launched: %s%s%s\n", tc_status_string(st), st == TC_OK ? "" : ": ",
               st == TC_OK ? "" : tc_last_error());
        rc = 0;
    }
    /* after the fault the driver may refuse these: their status does not matter */
    if (out)
        tc_mem_free(ctx, out);
    tc_context_destroy(ctx);
    return rc;
}

/* One run of the child under memcheck: the report must name the kernel, a
 * bad global write, and SRC_NAME:LINE of the store. */
static void run_sanitized(const char *sanitizer, const char *self, bool env, int store_line) {
    char cmd[8400], where[64], what[128];
    snprintf(cmd, sizeof cmd, "%s%s --tool memcheck --print-limit 4 '%s' --child 2>&1", env ? "TILEC_LINE_INFO=1 " : "",
             sanitizer, self);
    static char out[1 << 16];
    printf("== %s\n", cmd);
    int rc = run_capture(cmd, out, sizeof out);
    fputs(out, stdout);
    snprintf(where, sizeof where, SRC_NAME ":%d", store_line);
    snprintf(what, sizeof what, "memcheck names %s (line info from %s)", where,
             env ? "TILEC_LINE_INFO=1" : "the option");
    bool ok = rc >= 0 && strstr(out, "Invalid __global__ write") && strstr(out, "oob_store") && strstr(out, where);
    if (!ok && rc >= 0 && !strstr(out, "Invalid __global__ write"))
        printf("(no invalid write reported: exit status %d)\n", rc);
    check(ok, what);
}

/* ---- under the interpreter (TILEC_INTERPRET=1): its own bounds checks ---- */

/* The interpreter checks every access against the allocations: the launch
 * itself must fail, its message naming the store's .tile line, and the
 * elements in bounds up to the fault must have been written. */
static void interpreted(tc_context *ctx, int store_line) {
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = SRC;
    req.path = SRC_NAME;
    req.kernel = "oob_store";
    tc_kernel *k = NULL;
    CUdeviceptr out = 0;
    if (!GT_OK(tc_jit(ctx, &req, &k)) || !GT_OK(tc_mem_alloc(ctx, BUFFER_ELEMS * sizeof(float), &out))) {
        check(false, "interpreter: compile and allocate");
        return;
    }
    int32_t n = BUFFER_ELEMS;
    void *args[] = {&out, &n};
    tc_status st = tc_launch(k, (tc_dim3){1, 1, 1}, NULL, args, 2);
    const char *msg = st == TC_OK ? "" : tc_last_error();
    printf("interpreter: oob_store: %s%s%s\n", tc_status_string(st), st == TC_OK ? "" : ": ", msg);
    char where[64];
    snprintf(where, sizeof where, SRC_NAME ":%d:", store_line);
    check(st == TC_ERROR_CUDA && strstr(msg, where) && strstr(msg, "a store of 4 bytes") &&
              strstr(msg, "runs past the end of the allocation"),
          "interpreter: the launch fails at the store's .tile line");
    float got[BUFFER_ELEMS];
    bool written = GT_OK(tc_memcpy_dtoh(ctx, got, out, sizeof got));
    for (int i = 0; written && i < BUFFER_ELEMS; i++)
        written = got[i] == (float)i * 2.0f + (float)n;
    check(written, "interpreter: the elements in bounds were stored");
    tc_mem_free(ctx, out);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    gt_summary.name = "test_lineinfo";
    int store_line = line_of("store(out + i");
    printf("test_lineinfo: %s; the store is on line %d of %s\n", tc_version(), store_line, SRC_NAME);
    const char *ptxas = find_tool("TILEC_PTXAS", "ptxas", "/usr/local/cuda/bin/ptxas");
    if (ptxas) /* a static buffer: the next find_tool reuses it */
        ptxas = strdup(ptxas);
    check_ptx("sm_80", store_line, ptxas);
    check_ptx("sm_90a", store_line, ptxas);
    free((void *)ptxas);
    if (gt_summary.failed)
        return gt_finish();

    tc_context *ctx = NULL;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("SKIP: no GPU (%s)\n", tc_last_error());
        return 77;
    }
    if (!GT_OK(st))
        return 1;
    printf("test_lineinfo: compute capability %d, compiling for %s\n", tc_context_compute_capability(ctx),
           tc_context_arch(ctx));
    if (tc_context_interpreted(ctx)) {
        interpreted(ctx, store_line);
        tc_context_destroy(ctx);
        return gt_finish();
    }
    tc_context_destroy(ctx);
    const char *sanitizer =
        find_tool("TILEC_COMPUTE_SANITIZER", "compute-sanitizer", "/usr/local/cuda/bin/compute-sanitizer");
    if (!sanitizer) {
        printf("SKIP: no compute-sanitizer ($TILEC_COMPUTE_SANITIZER, PATH, /usr/local/cuda/bin)\n");
        return 77;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        printf("test_lineinfo: cannot find its own executable\n");
        return 1;
    }
    self[n] = 0;
    run_sanitized(sanitizer, self, false, store_line);
    run_sanitized(sanitizer, self, true, store_line);
    return gt_finish();
}
