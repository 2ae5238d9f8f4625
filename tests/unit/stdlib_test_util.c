/*
 * stdlib_test_util.c — the helpers of stdlib_test_util.h. The run's state
 * (compiler, ptxas, the keys seen, the counts) lives here, one run at a time.
 */
#include "stdlib_test_util.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int stdlib_hook_calls;

static tc_compiler *compiler;
static const char *ptxas;
static char seen[512][320];
static int num_seen, num_compiled, num_spilling;

int64_t constexpr_value(const tc_constexpr *cx, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(cx[i].name, name) == 0)
            return cx[i].i;
    return -1;
}

void stdlib_jit_key(const tc_jit_request *req, uint8_t key[32]) {
    tc_source src = {req->path, req->source, req->source_len};
    RtJitInputs in = {0};
    in.source = &src;
    in.kernel = req->kernel;
    in.constexprs = req->constexprs;
    in.num_constexprs = req->num_constexprs;
    in.options = req->options;
    in.arch = "sm_90a";
    uint8_t base[32], div16[64];
    rt_jit_base_key(&in, base);
    size_t n = req->num_divisibility < 64 ? req->num_divisibility : 64;
    for (size_t i = 0; i < n; i++)
        div16[i] = req->divisibility[i] != 0 && req->divisibility[i] % 16 == 0;
    rt_jit_ptx_key(base, div16, n, key);
}

bool has_fact(const tc_options *options, const char *name, int64_t div) {
    for (size_t i = 0; i < options->num_params; i++)
        if (strcmp(options->params[i].name, name) == 0 && options->params[i].divisibility == div)
            return true;
    return false;
}

bool launch_signature(const tc_jit_request *req, int num_warps, RtMeta *sig, tc_diagnostics *diags) {
    tc_source src = {req->path, req->source, req->source_len};
    tc_status st = rt_signature(&src, req->kernel, req->constexprs, req->num_constexprs, num_warps, sig, diags);
    CHECK_EQ_INT(st, TC_OK);
    if (st != TC_OK || sig->num_kernels != 1) {
        fprintf(stderr, "%s", tc_diagnostics_text(diags));
        return false;
    }
    return true;
}

void ptx_check_begin(void) {
    const char *env = getenv("TILEC_PTXAS");
    ptxas = env && *env ? env : access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas" : NULL;
    tc_target target = {"sm_90a"};
    CHECK_EQ_INT(tc_compiler_create(&target, &compiler), TC_OK);
    num_seen = num_compiled = num_spilling = 0;
}

int ptx_check_end(const char *family) {
    tc_compiler_destroy(compiler);
    compiler = NULL;
    fprintf(stderr, "  %s: %d specializations compiled to PTX%s, %d with spills\n", family, num_compiled,
            ptxas ? " and checked by ptxas" : " (no ptxas: not assembled)", num_spilling);
    return num_compiled;
}

void ptx_key_facts(char *key, size_t size, int off, const tc_options *options, const int64_t *divisibility,
                   size_t num_args) {
    for (size_t i = 0; i < options->num_params && off < (int)size; i++)
        off += snprintf(key + off, size - (size_t)off, " %s", options->params[i].name);
    for (size_t i = 0; i < num_args && off < (int)size; i++)
        off += snprintf(key + off, size - (size_t)off, "%c", divisibility[i] ? '1' : '0');
}

/* ptxas -v on the PTX: it must accept it; spills are reported (a note, not a failure). */
static void run_ptxas(const char *ptx, size_t len, const char *what) {
    char path[] = "/tmp/tilec-stdlib-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    bool wrote = write(fd, ptx, len) == (ssize_t)len;
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -v --gpu-name=sm_90a -o /dev/null %s 2>&1", ptxas, path);
    FILE *p = wrote ? popen(cmd, "r") : NULL;
    char line[512], spills[512] = "";
    while (p && fgets(line, sizeof line, p))
        if (strstr(line, "spill") && !strstr(line, " 0 bytes spill stores, 0 bytes spill loads"))
            snprintf(spills, sizeof spills, "%s", line);
    int rc = p ? pclose(p) : -1;
    CHECK(rc == 0);
    if (rc != 0)
        fprintf(stderr, "  ptxas rejected the PTX of %s (%s)\n", what, cmd);
    if (spills[0]) {
        num_spilling++;
        fprintf(stderr, "  note: %s spills: %s", what, spills);
    }
    unlink(path);
}

int ptx_key_plan(char *key, size_t size, const char *kernel, int num_warps, int num_stages, const tc_constexpr *cx,
                 size_t num_cx) {
    int off = snprintf(key, size, "%s w%d s%d", kernel, num_warps, num_stages);
    for (size_t i = 0; i < num_cx && off < (int)size; i++)
        off += snprintf(key + off, size - (size_t)off, " %s=%lld", cx[i].name, (long long)cx[i].i);
    return off < (int)size ? off : (int)size - 1;
}

tc_binary *ptx_compile_once(const char *key, const tc_jit_request *req, const tc_options *options,
                            const tc_kernel_desc *k, const int64_t *divisibility, size_t num_args, int num_warps,
                            tc_diagnostics *diags) {
    for (int i = 0; i < num_seen; i++)
        if (strcmp(seen[i], key) == 0)
            return NULL;
    if (num_seen == (int)(sizeof seen / sizeof seen[0]))
        return NULL;
    snprintf(seen[num_seen++], sizeof seen[0], "%s", key);

    tc_param_spec specs[64];
    size_t ns = 0;
    CHECK(options->num_params + num_args <= sizeof specs / sizeof specs[0]);
    for (size_t i = 0; i < options->num_params && ns < 64; i++)
        specs[ns++] = options->params[i];
    for (size_t i = 0; i < num_args && ns < 64; i++)
        if (divisibility[i])
            specs[ns++] = (tc_param_spec){k->params[i].name, 16};
    tc_options opt = *options;
    opt.emit = TC_EMIT_PTX;
    opt.params = specs;
    opt.num_params = ns;
    tc_source src = {req->path, req->source, req->source_len};
    tc_binary *bin = NULL;
    tc_status st = tc_compile(compiler, &src, req->kernel, req->constexprs, req->num_constexprs, &opt, &bin, diags);
    CHECK_EQ_INT(st, TC_OK);
    if (st != TC_OK) {
        fprintf(stderr, "  %s does not compile: %s%s\n", key, tc_diagnostics_text(diags), tc_last_error());
        tc_binary_destroy(bin);
        return NULL;
    }
    num_compiled++;
    size_t len;
    const char *ptx = tc_binary_text(bin, &len);
    CHECK(ptx && strstr(ptx, ".entry") != NULL);
    /* a warp-specialized kernel launches its producer warpgroup too */
    int launched = tc_binary_kernel_num_warps(bin, 0);
    CHECK(launched == num_warps || (options->warp_specialize && launched == num_warps + 4));
    if (ptxas && ptx)
        run_ptxas(ptx, len, key);
    return bin;
}
