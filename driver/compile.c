/*
 * compile.c — the compile driver behind the public API (include/tilec/tilec.h).
 *
 * tc_compile: source -> fe_parse -> fe_lower (one specialization) -> verify ->
 * the kernels' signatures (TC_EMIT_SIGNATURE ends here) -> the caller's
 * specialize hook, whose facts are applied to the lowered IR -> the pass
 * pipeline -> the requested text (IR, or LLVM IR / PTX from codegen).
 * tc_opt: IR text -> ir_parse -> verify -> the named passes -> IR text, or
 * LLVM IR / PTX. Both record every kernel's launch metadata
 * (record_kernels) in the binary. Both run under a TcGuard, so an
 * internal error or a failed malloc deep inside becomes a status, and both
 * render their diagnostics into the caller's tc_diagnostics while the source
 * is still alive.
 *
 * The tools (tilec, tilec-opt) are thin wrappers over these two functions.
 */
#include "tilec/tilec.h"

#include "tilec/runtime.h"

#include "codegen/codegen.h"
#include "interp/interp.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "driver/driver.h"
#include "driver/kernel_meta.h"
#include "base/base.h"

#include <llvm-c/Core.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(TC_DTYPE_I1 == (int)IR_I1 && TC_DTYPE_BF16 == (int)IR_BF16 && TC_DTYPE_F64 == (int)IR_F64 &&
                   TC_DTYPE_F8E4M3 == (int)IR_F8E4M3 && TC_DTYPE_F8E5M2 == (int)IR_F8E5M2,
               "tc_dtype mirrors IrTypeKind");

struct tc_compiler {
    char arch[16]; /* sm_80, sm_90, sm_90a */
};

struct tc_diagnostics {
    Buf text;          /* rendered diagnostics */
    size_t num_errors; /* errors among them */
};

/* Launch metadata of one kernel, owned by its binary. */
typedef struct BinKernel {
    const char *name;
    int num_warps;
    size_t shared_bytes;
    size_t num_params;
    const char **param_names; /* "" when the IR has no name */
    const char **param_types; /* IR type text: "ptr<f16>", "i32" */
    tc_param_desc *params;    /* the same, as the runtime describes them */
    size_t num_tensor_maps;   /* the kernel's tensormap parameters, after the runtime ones */
    tc_tensor_map_desc *tensor_maps;
    bool persistent; /* the launch grid's three parameters follow the runtime ones */
} BinKernel;

struct tc_binary {
    Buf text;           /* the requested output */
    Buf log;            /* print-after dumps */
    Arena meta;         /* kernels and their strings */
    BinKernel *kernels; /* num_kernels, in source order */
    size_t num_kernels;
    tc_compile_times times;
};

const char *tc_status_string(tc_status s) {
    switch (s) {
    case TC_OK: return "success";
    case TC_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case TC_ERROR_COMPILE: return "compilation failed";
    case TC_ERROR_IO: return "input/output error";
    case TC_ERROR_OUT_OF_MEMORY: return "out of memory";
    case TC_ERROR_INTERNAL: return "internal compiler error";
    case TC_ERROR_UNSUPPORTED: return "unsupported";
    case TC_ERROR_NO_DRIVER: return "no CUDA driver";
    case TC_ERROR_NO_DEVICE: return "no CUDA device";
    case TC_ERROR_CUDA: return "CUDA driver error";
    case TC_ERROR_LAUNCH: return "kernel stopped by the interpreter";
    }
    return "unknown status";
}

/* The LLVM version is read from the LLVM linked in, not from the headers.
 * The text is formed once, under pthread_once: threads may ask at once. */
static char version_text[64];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void version_init(void) {
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(version_text, sizeof version_text, "tilec %s (LLVM %u.%u.%u)", TILEC_VERSION_STRING, major, minor,
             patch);
}

const char *tc_version(void) {
    pthread_once(&version_once, version_init);
    return version_text;
}

void tc_options_init(tc_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->emit = TC_EMIT_IR;
    opt->num_warps = TC_DEFAULT_NUM_WARPS;
}

/* ---- sources ---- */

tc_status tc_source_read_file(const char *path, tc_source *out) {
    if (!path || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_source_read_file: %s is NULL", path ? "out" : "path");
    memset(out, 0, sizeof *out);
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return rt_fail(TC_ERROR_IO, "cannot read '%s': %s", path, strerror(errno));
    Buf b;
    buf_init(&b);
    char chunk[65536];
    size_t n;
    TcGuard g;
    if (TC_GUARD(g)) {
        fclose(f);
        buf_free(&b);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_source_read_file: out of memory reading '%s'", path);
    }
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    tc_guard_pop(&g);
    int err = ferror(f);
    fclose(f);
    if (err) {
        buf_free(&b);
        return rt_fail(TC_ERROR_IO, "cannot read '%s': a read error", path);
    }
    char *name = strdup(path);
    char *text = b.data ? b.data : calloc(1, 1);
    if (!name || !text) {
        free(name);
        buf_free(&b);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_source_read_file: out of memory reading '%s'", path);
    }
    out->name = name;
    out->text = text;
    out->len = b.len;
    return TC_OK;
}

void tc_source_free(tc_source *src) {
    if (!src)
        return;
    free((char *)src->name);
    free((char *)src->text);
    memset(src, 0, sizeof *src);
}

tc_status tc_constexpr_parse(const char *text, tc_constexpr *out, char *name_buf, size_t name_buf_size) {
    if (!text || !out || !name_buf)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_constexpr_parse: %s is NULL",
                       !text ? "text" : !out ? "out" : "name_buf");
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_constexpr_parse: '%s' is not NAME=VALUE", text);
    if ((size_t)(eq - text) >= name_buf_size)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_constexpr_parse: name_buf_size %zu has no room for the name of '%s' and its NUL",
                       name_buf_size, text);
    memcpy(name_buf, text, (size_t)(eq - text));
    name_buf[eq - text] = 0;
    for (const char *p = name_buf; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (p > name_buf && *p >= '0' && *p <= '9')))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_constexpr_parse: '%s' is not an identifier", name_buf);
    const char *v = eq + 1;
    memset(out, 0, sizeof *out);
    out->name = name_buf;
    IrTypeKind scalar;
    if (ir_scalar_from_name(v, strlen(v), &scalar) || strcmp(v, "bool") == 0) {
        out->kind = TC_CONSTEXPR_DTYPE;
        out->i = strcmp(v, "bool") == 0 ? TC_DTYPE_I1 : (int64_t)scalar;
        return TC_OK;
    }
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        out->kind = TC_CONSTEXPR_BOOL;
        out->i = v[0] == 't';
        return TC_OK;
    }
    if (!*v)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_constexpr_parse: '%s' has no value", text);
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 0);
    if (!*end && errno == 0) {
        out->kind = TC_CONSTEXPR_INT;
        out->i = i;
        return TC_OK;
    }
    errno = 0;
    double f = strtod(v, &end);
    if (*end || errno != 0 || isnan(f))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_constexpr_parse: '%s' is not an integer, a float, true, false or a type name", v);
    out->kind = TC_CONSTEXPR_FLOAT;
    out->f = f;
    return TC_OK;
}

/* ---- objects ---- */

tc_status tc_compiler_create(const tc_target *target, tc_compiler **out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_compiler_create: out is NULL");
    *out = NULL;
    const char *arch = target && target->arch ? target->arch : TC_DEFAULT_ARCH;
    TgTarget t;
    if (!tg_target_init(&t, arch))
        return rt_fail(TC_ERROR_UNSUPPORTED, "tc_compiler_create: target arch '%.64s' is not sm_80, sm_90 or sm_90a",
                       arch);
    tc_compiler *cc = calloc(1, sizeof *cc);
    if (!cc)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_compiler_create: out of memory");
    snprintf(cc->arch, sizeof cc->arch, "%s", arch);
    *out = cc;
    return TC_OK;
}

void tc_compiler_destroy(tc_compiler *cc) { free(cc); }

tc_status tc_diagnostics_create(tc_diagnostics **out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_diagnostics_create: out is NULL");
    *out = calloc(1, sizeof **out);
    return *out ? TC_OK : rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_diagnostics_create: out of memory");
}

void tc_diagnostics_destroy(tc_diagnostics *d) {
    if (!d)
        return;
    buf_free(&d->text);
    free(d);
}

const char *tc_diagnostics_text(const tc_diagnostics *d) { return d && d->text.data ? d->text.data : ""; }

size_t tc_diagnostics_error_count(const tc_diagnostics *d) { return d ? d->num_errors : 0; }

void tc_diagnostics_clear(tc_diagnostics *d) {
    if (!d)
        return;
    buf_free(&d->text);
    d->num_errors = 0;
}

const char *tc_binary_text(const tc_binary *b, size_t *len) {
    if (len)
        *len = b ? b->text.len : 0;
    return b && b->text.data ? b->text.data : "";
}

const char *tc_binary_log(const tc_binary *b, size_t *len) {
    if (len)
        *len = b ? b->log.len : 0;
    return b && b->log.data ? b->log.data : "";
}

tc_status tc_binary_compile_times(const tc_binary *b, tc_compile_times *out) {
    if (!b || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_binary_compile_times: %s is NULL", b ? "out" : "the binary");
    *out = b->times;
    return TC_OK;
}

tc_status tc_binary_write(const tc_binary *b, const char *path) {
    if (!b)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_binary_write: the binary is NULL");
    size_t len;
    const char *text = tc_binary_text(b, &len);
    errno = 0;
    FILE *f = path ? fopen(path, "wb") : stdout;
    bool ok = f && fwrite(text, 1, len, f) == len;
    if (f && f != stdout)
        ok = fclose(f) == 0 && ok;
    if (ok)
        return TC_OK;
    return rt_fail(TC_ERROR_IO, "cannot write '%s'%s%s", path ? path : "<stdout>", errno ? ": " : "",
                   errno ? strerror(errno) : "");
}

void tc_binary_destroy(tc_binary *b) {
    if (!b)
        return;
    buf_free(&b->text);
    buf_free(&b->log);
    arena_free(&b->meta);
    free(b);
}

/* ---- kernel metadata ---- */

static const BinKernel *bin_kernel(const tc_binary *b, size_t k) {
    return b && k < b->num_kernels ? &b->kernels[k] : NULL;
}

size_t tc_binary_kernel_count(const tc_binary *b) {
    return b ? b->num_kernels : 0;
}

const char *tc_binary_kernel_name(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk ? bk->name : NULL;
}

int tc_binary_kernel_num_warps(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk ? bk->num_warps : 0;
}

size_t tc_binary_kernel_shared_bytes(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk ? bk->shared_bytes : 0;
}

size_t tc_binary_kernel_num_params(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk ? bk->num_params : 0;
}

const char *tc_binary_kernel_param_name(const tc_binary *b, size_t k, size_t p) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk && p < bk->num_params ? bk->param_names[p] : NULL;
}

const char *tc_binary_kernel_param_type(const tc_binary *b, size_t k, size_t p) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk && p < bk->num_params ? bk->param_types[p] : NULL;
}

/* The kernel an indexed accessor `fn` reads, or NULL with the reason set. */
static const BinKernel *bin_kernel_checked(const char *fn, const tc_binary *b, size_t k, const void *out) {
    if (!b || !out) {
        rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, b ? "out" : "the binary");
        return NULL;
    }
    if (k >= b->num_kernels)
        rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernel %zu is out of range (the binary has %zu)", fn, k,
                b->num_kernels);
    return bin_kernel(b, k);
}

tc_status tc_binary_kernel_param(const tc_binary *b, size_t k, size_t p, tc_param_desc *out) {
    const BinKernel *bk = bin_kernel_checked("tc_binary_kernel_param", b, k, out);
    if (!bk)
        return TC_ERROR_INVALID_ARGUMENT;
    if (p >= bk->num_params)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_binary_kernel_param: parameter %zu is out of range (kernel %s has %zu)", p, bk->name,
                       bk->num_params);
    *out = bk->params[p];
    return TC_OK;
}

size_t tc_binary_kernel_num_tensor_maps(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk ? bk->num_tensor_maps : 0;
}

int tc_binary_kernel_persistent(const tc_binary *b, size_t k) {
    const BinKernel *bk = bin_kernel(b, k);
    return bk && bk->persistent;
}

tc_status tc_binary_kernel_tensor_map(const tc_binary *b, size_t k, size_t i, tc_tensor_map_desc *out) {
    const BinKernel *bk = bin_kernel_checked("tc_binary_kernel_tensor_map", b, k, out);
    if (!bk)
        return TC_ERROR_INVALID_ARGUMENT;
    if (i >= bk->num_tensor_maps)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_binary_kernel_tensor_map: tensor map %zu is out of range (kernel %s has %zu)", i, bk->name,
                       bk->num_tensor_maps);
    *out = bk->tensor_maps[i];
    return TC_OK;
}

/* The source's declaration of kernel `name`, or NULL (tc_opt has no source). */
static const AstNode *find_ast_kernel(const AstFile *ast, const char *name) {
    for (int i = 0; ast && i < ast->num_decls; i++)
        if (ast->decls[i]->kind == AST_KERNEL && ast->decls[i]->name && strcmp(ast->decls[i]->name, name) == 0)
            return ast->decls[i];
    return NULL;
}

/* Whether the kernel declares parameter `name` as `const T*`: the IR keeps
 * the parameters' names but not `const`. Matched by name, not position, so
 * that a pass that drops a parameter cannot shift the answer. */
static bool param_is_const(const AstNode *decl, const char *name) {
    for (int p = 0; decl && name && p < decl->num_items; p++) {
        const AstNode *ap = decl->items[p];
        if (ap && ap->kind == AST_PARAM && ap->name && strcmp(ap->name, name) == 0)
            return ap->type.is_pointer && ap->type.is_const;
    }
    return false;
}

/* Fills one kernel's launch metadata, in the binary's arena: the runtime
 * parameters from the IR's first num_params. */
static void fill_kernel(tc_binary *bin, BinKernel *bk, const AstNode *decl, const IrFunc *f, int num_warps,
                        size_t shared_bytes, int num_params) {
    Arena *a = &bin->meta;
    bk->name = arena_strdup(a, f->name);
    bk->num_warps = num_warps;
    bk->shared_bytes = shared_bytes;
    bk->num_params = (size_t)num_params;
    int np = num_params ? num_params : 1;
    bk->param_names = ARENA_ARRAY(a, const char *, np);
    bk->param_types = ARENA_ARRAY(a, const char *, np);
    bk->params = ARENA_ARRAY(a, tc_param_desc, np);
    for (int p = 0; p < num_params; p++) {
        const IrType *t = f->body->args[p]->type;
        const char *name = f->body->args[p]->name;
        Buf tb;
        buf_init(&tb);
        ir_print_type(&tb, t);
        bk->param_types[p] = arena_strdup(a, tb.data ? tb.data : "");
        buf_free(&tb);
        bk->param_names[p] = arena_strdup(a, name ? name : "");
        tc_param_desc *d = &bk->params[p];
        d->name = bk->param_names[p];
        d->is_pointer = t->kind == IR_PTR;
        d->dtype = (tc_dtype)(d->is_pointer ? t->elem->kind : t->kind);
        d->is_const = param_is_const(decl, name);
    }
}

/* The attribute launch_grid of an IR parameter, of any kind: a parameter
 * that has one is never taken for a runtime parameter, so that a malformed
 * grid parameter is diagnosed instead of asked of the caller. */
static const IrAttr *launch_grid_attr(const IrValue *param) {
    return ir_attr_get(param->num_attrs, param->attrs, "launch_grid");
}

/* Whether kernel f is persistent (*persistent): its parameters from `first`
 * (the first after the runtime ones) on start with one that has the
 * attribute launch_grid. Its grid is then exactly three i32 parameters with
 * launch_grid = 0, 1, 2 (x, y, z), as the pass persistent appends them;
 * false with a diagnostic otherwise. */
static bool check_launch_grid(const IrFunc *f, int first, bool *persistent, DiagList *diags) {
    *persistent = first < f->body->num_args && launch_grid_attr(f->body->args[first]);
    for (int i = 0; *persistent && i < 3; i++) {
        const IrValue *param = first + i < f->body->num_args ? f->body->args[first + i] : NULL;
        const IrAttr *a = param ? launch_grid_attr(param) : NULL;
        if (!a || a->kind != IR_ATTR_INT || a->i != i || param->type->kind != IR_I32) {
            char which[160] = "";
            if (param)
                snprintf(which, sizeof which, "parameter %d (%%%.100s)", first + i, param->name ? param->name : "");
            else
                snprintf(which, sizeof which, "the kernel's %d parameters", f->body->num_args);
            diag_error(diags, srcloc_none(),
                       "kernel @%s: %s: no i32 parameter with launch_grid = %d, the launch grid's extent along %c: a "
                       "persistent kernel's grid is three i32 parameters with launch_grid = 0, 1, 2 in that order, "
                       "right after the runtime parameters",
                       f->name, which, i, "xyz"[i]);
            return false;
        }
    }
    return true;
}

/* The tensor maps of kernel f (its tensormap parameters, all from `first`
 * on, after the runtime parameters and the launch grid) into bk, whose
 * runtime parameters are filled; false with a diagnostic for a map the
 * runtime cannot build or for another parameter among them. */
static bool fill_tensor_maps(tc_binary *bin, BinKernel *bk, const IrFunc *f, int first, DiagList *diags) {
    int n = f->body->num_args - first;
    if (n > TC_MAX_TENSOR_MAPS) {
        diag_error(diags, srcloc_none(), "kernel @%s: %d tensormap parameters, more than a launch builds (%d)",
                   f->name, n, TC_MAX_TENSOR_MAPS);
        return false;
    }
    bk->num_tensor_maps = (size_t)n;
    bk->tensor_maps = ARENA_ARRAY(&bin->meta, tc_tensor_map_desc, n ? n : 1);
    tc_kernel_desc kd = {bk->name, bk->num_warps, bk->shared_bytes, bk->num_params, bk->params, 0, NULL, 0};
    for (int i = 0; i < n; i++) {
        const IrValue *param = f->body->args[first + i];
        if (param->type->kind == IR_TENSORMAP)
            continue;
        if (i == 0) /* first follows the launch grid: only tensormap parameters may */
            diag_error(diags, srcloc_none(),
                       "kernel @%s: parameter %d (%%%s) follows the launch grid's parameters: only tensormap "
                       "parameters may",
                       f->name, first + i, param->name ? param->name : "");
        else
            diag_error(diags, srcloc_none(),
                       "kernel @%s: parameter %d (%%%s) follows a tensormap parameter: the tensormap parameters must "
                       "come after every runtime parameter and the launch grid",
                       f->name, first + i, param->name ? param->name : "");
        return false;
    }
    for (int i = 0; i < n; i++) {
        const IrValue *param = f->body->args[first + i];
        IrTensorMap tm;
        const char *why;
        char text[160];
        tc_tensor_map_desc *m = &bk->tensor_maps[i];
        bool ok = ir_tensormap_of(f, param, &tm, &why);
        if (ok) {
            memset(m, 0, sizeof *m);
            m->base = tm.base;
            m->rank = tm.rank;
            m->swizzle = tm.swizzle;
            for (int d = 0; d < TC_MAX_TENSOR_MAP_RANK; d++) {
                m->dim_param[d] = d < tm.rank ? tm.dim_param[d] : -1;
                m->dim[d] = d < tm.rank ? tm.dim[d] : 0;
                m->box[d] = d < tm.rank ? (unsigned)tm.box[d] : 0;
                m->stride_param[d] = d > 0 && d < tm.rank ? tm.stride_param[d] : -1;
                m->stride[d] = d > 0 && d < tm.rank ? tm.stride[d] : 0;
            }
            ok = rt_tensor_map_check(&kd, m, text, sizeof text);
            why = text;
        }
        if (!ok) {
            diag_error(diags, srcloc_none(), "kernel @%s: parameter %d (%%%s): no tensor map a launch can build: %s",
                       f->name, first + i, param->name ? param->name : "", why);
            return false;
        }
    }
    return true;
}

/* The kernels of m into the binary: each one's parameters (with `const`
 * from the AST when there is one), its num_warps (its attribute, else
 * num_warps) and, once the passes have sized it (`sized`), its dynamic
 * shared memory; straight from the front end that is the runtime
 * signature, with no shared memory yet. A kernel's runtime parameters are
 * those before its first tensormap parameter or launch_grid one; the
 * pipeline's passes append the others, in this order: the launch grid of a
 * persistent kernel (check_launch_grid), then the tensor maps
 * (fill_tensor_maps). A kernel whose hidden parameters are not so is false,
 * with a diagnostic. */
static bool record_kernels(tc_binary *bin, IrModule *m, int num_warps, const AstFile *ast, bool sized,
                           DiagList *diags) {
    int n = 0;
    for (IrFunc *f = m->first; f; f = f->next)
        n += f->kind == IR_FUNC_KERNEL;
    bin->kernels = ARENA_ARRAY(&bin->meta, BinKernel, n ? n : 1);
    bin->num_kernels = (size_t)n;
    int k = 0;
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        int np = 0;
        while (np < f->body->num_args && f->body->args[np]->type->kind != IR_TENSORMAP &&
               !launch_grid_attr(f->body->args[np]))
            np++;
        int warps = tg_kernel_num_warps(f, num_warps);
        size_t shared = sized ? (size_t)tg_kernel_shared_bytes(f, warps) : 0;
        BinKernel *bk = &bin->kernels[k++];
        fill_kernel(bin, bk, find_ast_kernel(ast, f->name), f, tg_kernel_launch_warps(f, num_warps), shared, np);
        if (!check_launch_grid(f, np, &bk->persistent, diags) ||
            !fill_tensor_maps(bin, bk, f, np + (bk->persistent ? 3 : 0), diags))
            return false;
    }
    return true;
}

/* Adds divisibility facts to the lowered kernels' parameters, as fe_lower
 * does for FeOptions.params: a parameter named by a fact gets the larger of
 * its divisibility and the fact's, as an attribute when above 1. The
 * front end reads no divisibility while lowering, so the IR is the same as
 * lowering with these facts among FeOptions.params. */
static void apply_param_specs(IrModule *m, const tc_param_spec *specs, size_t n) {
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        for (int i = 0; i < f->body->num_args; i++) {
            IrValue *v = f->body->args[i];
            const IrAttr *cur = ir_attr_get(v->num_attrs, v->attrs, "divisibility");
            int64_t div = cur && cur->kind == IR_ATTR_INT ? cur->i : 1;
            for (size_t s = 0; s < n; s++)
                if (v->name && strcmp(v->name, specs[s].name) == 0 && specs[s].divisibility > div)
                    div = specs[s].divisibility;
            if (div > 1 && (!cur || cur->i != div)) {
                IrAttr a = {.name = "divisibility", .kind = IR_ATTR_INT, .i = div};
                ir_attrs_set(m, &v->num_attrs, &v->attrs, &a);
            }
        }
    }
}

/* tc_options.min_programs_per_sm as the kernels' attribute min_programs_per_sm
 * (what the pipeline pass and codegen read), where a kernel does not state
 * its own: tc_compile's and tc_opt's one route for it. */
static void apply_min_programs(IrFunc *first, int programs) {
    for (IrFunc *f = first; programs > 0 && f; f = f->next)
        if (f->kind == IR_FUNC_KERNEL && !ir_attr_get(f->num_attrs, f->attrs, "min_programs_per_sm"))
            ir_func_set_int(f, "min_programs_per_sm", programs);
}

/* ---- compiling ---- */

/* ---- argument checks (shared with the JIT: runtime/runtime.h) ---- */

/* *in (NULL: tc_options_init's defaults) into *out, checked. */
static tc_status options_of(const char *fn, const tc_options *in, tc_options *out) {
    if (in)
        *out = *in;
    else
        tc_options_init(out);
    return rt_check_options(fn, out);
}

static tc_status check_source(const char *fn, const char *what, const tc_source *src) {
    if (!src)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
    if (!src->text && src->len)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: %s->text is NULL with len %zu (a NULL text is the empty source, with len 0)", fn, what,
                       src->len);
    return TC_OK;
}

/* Whether `name` is a parameter of `kernel` (of some kernel when NULL). A
 * kernel the file lacks is fe_lower's to report: true then. */
static bool names_param(const AstFile *ast, const char *kernel, const char *name) {
    bool seen = false;
    for (int i = 0; i < ast->num_decls; i++) {
        const AstNode *d = ast->decls[i];
        if (d->kind != AST_KERNEL || !d->name || (kernel && strcmp(d->name, kernel) != 0))
            continue;
        seen = true;
        for (int p = 0; p < d->num_items; p++)
            if (d->items[p] && d->items[p]->name && strcmp(d->items[p]->name, name) == 0)
                return true;
    }
    return !seen;
}

/* Front-end runs of this process (tc_compile, tc_list_kernels), for the
 * tests that check that a JIT miss parses its source once. */
static atomic_size_t frontend_parses, frontend_lowers;

RtFrontendRuns rt_frontend_runs(void) {
    RtFrontendRuns r = {atomic_load_explicit(&frontend_parses, memory_order_relaxed),
                        atomic_load_explicit(&frontend_lowers, memory_order_relaxed)};
    return r;
}

/* State shared by tc_compile and tc_opt; released by finish(). */
typedef struct Job {
    const char *fn;  /* the entry point, for tc_last_error() */
    Source src;      /* the caller's text */
    DiagList diags;  /* collected diagnostics */
    Arena ast_arena; /* the AST */
    IrModule *module;
    tc_binary *bin;
} Job;

/* A job with its empty binary; false when that cannot be allocated. */
static bool job_init(Job *j, const char *fn, const tc_source *s) {
    memset(j, 0, sizeof *j);
    j->fn = fn;
    j->src.name = s->name ? s->name : "<string>";
    j->src.text = s->text ? s->text : "";
    j->src.len = s->text ? s->len : 0;
    diag_init(&j->diags);
    arena_init(&j->ast_arena);
    j->bin = calloc(1, sizeof *j->bin);
    return j->bin != NULL;
}

/* tc_last_error() for a job that failed with the diagnostics collected: the
 * count and the first error (no allocation: this may report running out of
 * memory). */
static void fail_from_diags(const Job *j, tc_status st) {
    const Diag *first = j->diags.head;
    while (first && first->level != DIAG_ERROR)
        first = first->next;
    if (!first) {
        rt_fail(st, "%s: %s in %s", j->fn, tc_status_string(st), j->src.name);
        return;
    }
    const SrcLoc *l = &first->loc;
    char where[320] = "";
    if (l->src && l->line > 0)
        snprintf(where, sizeof where, "%.256s:%d:%d: ", l->src->name, l->line, l->col);
    else if (l->src)
        snprintf(where, sizeof where, "%.256s: ", l->src->name);
    int n = j->diags.num_errors;
    rt_fail(st, "%s: %s: %d error%s in %s (see the diagnostics); the first: %serror: %s", j->fn,
            tc_status_string(st), n, n == 1 ? "" : "s", j->src.name, where, first->msg);
}

/* Renders diagnostics, frees everything but the binary, and returns status.
 * A failure that comes with diagnostics (or out of memory) is summarized in
 * tc_last_error(); a refused argument has set its own message already. */
static tc_status finish(Job *j, tc_status st, tc_diagnostics *diags, tc_binary **out) {
    if (st != TC_OK && st != TC_ERROR_INVALID_ARGUMENT)
        fail_from_diags(j, st);
    if (diags) {
        diag_render(&j->diags, &diags->text);
        diags->num_errors += (size_t)j->diags.num_errors;
    }
    diag_free(&j->diags);
    arena_free(&j->ast_arena);
    ir_module_destroy(j->module);
    j->module = NULL;
    if (st == TC_OK && out) {
        *out = j->bin;
    } else {
        tc_binary_destroy(j->bin);
        if (out)
            *out = NULL;
    }
    return st;
}

/* The caller's constexprs as the front end takes them, in arena a. */
static FeConstexpr *fe_constexprs(Arena *a, const tc_constexpr *cx, size_t num_cx) {
    FeConstexpr *fcx = ARENA_ARRAY(a, FeConstexpr, num_cx ? num_cx : 1);
    for (size_t i = 0; i < num_cx; i++) {
        fcx[i].name = cx[i].name;
        fcx[i].is_float = cx[i].kind == TC_CONSTEXPR_FLOAT;
        fcx[i].is_dtype = cx[i].kind == TC_CONSTEXPR_DTYPE;
        fcx[i].i = cx[i].i;
        fcx[i].f = cx[i].f;
    }
    return fcx;
}

static tc_status guard_status(const TcGuard *g, Job *j) {
    if (g->code == 1)
        return TC_ERROR_OUT_OF_MEMORY;
    diag_error(&j->diags, srcloc_none(), "%s", g->message);
    return TC_ERROR_INTERNAL;
}

/* The one target record of a compile: the compiler's arch and the options'
 * choices, every default applied here (target/target.h). */
static TgTarget target_of(const tc_compiler *cc, const tc_options *opt) {
    TgTarget t;
    tg_target_init(&t, cc->arch); /* checked by tc_compiler_create */
    tg_target_set_options(&t, opt->num_warps, opt->num_stages, opt->llvm_o3 != 0);
    t.warp_specialize = opt->warp_specialize != 0;
    t.persistent = opt->persistent != 0;
    t.line_info = opt->line_info != 0;
    return t;
}

static void pass_options_from(PassOptions *po, const tc_compiler *cc, const tc_options *opt, Job *j) {
    pass_options_init(po, &j->diags);
    po->target = target_of(cc, opt);
    po->verify_each = opt->verify_each != 0;
    po->print_after = opt->print_after;
    po->print_after_all = opt->print_after_all != 0 || opt->emit == TC_EMIT_IR_AFTER_ALL;
    po->print_out = opt->emit == TC_EMIT_IR_AFTER_ALL ? &j->bin->text : &j->bin->log;
    po->print_locs = opt->line_info != 0;
}

/* The IR as an emit prints it: with -g, with the ops' locations, which
 * tilec-opt reads back (docs/ir.md). */
static void print_ir(const IrModule *m, const tc_options *opt, Buf *out) {
    if (opt->line_info)
        ir_print_module_locs(m, out);
    else
        ir_print_module(m, out);
}

static double clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Lowers the module to LLVM IR or PTX into the binary's text. */
static bool emit_code(Job *j, const tc_compiler *cc, const tc_options *opt) {
    TgTarget t = target_of(cc, opt);
    CgEmit e = opt->emit == TC_EMIT_LLVM ? CG_EMIT_LLVM : CG_EMIT_PTX;
    CgStats st = {0};
    bool ok = cg_compile_module(j->module, &t, e, &j->bin->text, &j->diags, &st);
    j->bin->times.lower_ms = st.lower_ms;
    j->bin->times.llvm_opt_ms = st.opt_ms;
    j->bin->times.ptx_emit_ms = st.emit_ms;
    return ok;
}

tc_status tc_compile(tc_compiler *cc, const tc_source *src, const char *kernel, const tc_constexpr *cx,
                     size_t num_cx, const tc_options *opt_in, tc_binary **out, tc_diagnostics *diags) {
    if (out)
        *out = NULL;
    if (!cc || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_compile: %s is NULL", !cc ? "the compiler" : "out");
    tc_status st = check_source("tc_compile", "src", src);
    if (st == TC_OK)
        st = rt_check_constexprs("tc_compile", cx, num_cx);
    tc_options opt;
    if (st == TC_OK)
        st = options_of("tc_compile", opt_in, &opt);
    if (st != TC_OK)
        return st;

    Job j;
    if (!job_init(&j, "tc_compile", src))
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, out);
    TcGuard g;
    if (TC_GUARD(g))
        return finish(&j, guard_status(&g, &j), diags, out);

    double t0 = clock_ms();
    atomic_fetch_add_explicit(&frontend_parses, 1, memory_order_relaxed);
    AstFile *ast = fe_parse(&j.ast_arena, &j.src, &j.diags);
    if (diag_has_errors(&j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    if (opt.emit == TC_EMIT_AST) {
        fe_dump_ast(ast, &j.bin->text);
        tc_guard_pop(&g);
        return finish(&j, TC_OK, diags, out);
    }
    /* The JIT and the AOT generator name the kernel as an argument. */
    bool kernel_is_argument = opt.emit == TC_EMIT_SIGNATURE || opt.specialize;
    if (kernel && kernel_is_argument && !find_ast_kernel(ast, kernel)) {
        tc_guard_pop(&g);
        rt_fail(TC_ERROR_INVALID_ARGUMENT, "%.200s has no kernel named '%.200s'", j.src.name, kernel);
        return finish(&j, TC_ERROR_INVALID_ARGUMENT, diags, out);
    }

    FeConstexpr *fcx = fe_constexprs(&j.ast_arena, cx, num_cx);
    for (size_t i = 0; i < opt.num_params; i++)
        if (!names_param(ast, kernel, opt.params[i].name)) {
            tc_guard_pop(&g);
            rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_compile: opt->params[%zu].name '%.200s' is not a parameter of %s%.200s",
                    i, opt.params[i].name, kernel ? "kernel " : "any kernel of ", kernel ? kernel : j.src.name);
            return finish(&j, TC_ERROR_INVALID_ARGUMENT, diags, out);
        }
    FeParamSpec *fps = ARENA_ARRAY(&j.ast_arena, FeParamSpec, opt.num_params ? opt.num_params : 1);
    for (size_t i = 0; i < opt.num_params; i++) {
        fps[i].name = opt.params[i].name;
        fps[i].divisibility = opt.params[i].divisibility;
    }
    FeOptions fo = {kernel, fcx, (int)num_cx, target_of(cc, &opt).num_warps, fps, (int)opt.num_params};
    atomic_fetch_add_explicit(&frontend_lowers, 1, memory_order_relaxed);
    j.module = fe_lower(ast, &fo, &j.diags);
    if (!j.module || diag_has_errors(&j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    apply_min_programs(j.module->first, opt.min_programs_per_sm);
    if (!ir_verify(j.module, &j.diags)) {
        /* The front end produced invalid IR: a bug, reported as such. */
        diag_error(&j.diags, srcloc_none(), "internal error: the front end produced IR that does not verify");
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_INTERNAL, diags, out);
    }
    if (!record_kernels(j.bin, j.module, fo.num_warps, ast, false, &j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_INTERNAL, diags, out);
    }
    int stop = opt.emit == TC_EMIT_SIGNATURE;
    if (!stop && opt.specialize) {
        const tc_param_spec *more = NULL;
        size_t num_more = 0;
        tc_status hs = opt.specialize(opt.specialize_user, j.bin, &more, &num_more, &stop);
        if (hs == TC_OK)
            hs = rt_check_specs("tc_compile", "the specialize hook's specs", more, num_more);
        for (size_t i = 0; hs == TC_OK && i < num_more; i++)
            if (!names_param(ast, kernel, more[i].name))
                hs = rt_fail(TC_ERROR_INVALID_ARGUMENT,
                             "tc_compile: the specialize hook's specs[%zu].name '%.200s' is not a parameter of %s%.200s",
                             i, more[i].name, kernel ? "kernel " : "any kernel of ", kernel ? kernel : j.src.name);
        if (hs != TC_OK) {
            tc_guard_pop(&g);
            /* finish() as for a refused argument, which keeps the hook's (or
             * the check's) message in tc_last_error(): there are no
             * diagnostics to summarize */
            finish(&j, TC_ERROR_INVALID_ARGUMENT, diags, out);
            return hs;
        }
        if (!stop)
            apply_param_specs(j.module, more, num_more);
    }
    if (stop) {
        j.bin->times.frontend_ms = clock_ms() - t0;
        tc_guard_pop(&g);
        return finish(&j, TC_OK, diags, out);
    }
    if (opt.emit == TC_EMIT_IR_RAW) {
        print_ir(j.module, &opt, &j.bin->text);
        tc_guard_pop(&g);
        return finish(&j, TC_OK, diags, out);
    }
    double t1 = clock_ms();
    j.bin->times.frontend_ms = t1 - t0;
    PassOptions po;
    pass_options_from(&po, cc, &opt, &j);
    if (opt.emit == TC_EMIT_IR_AFTER_ALL) {
        buf_puts(&j.bin->text, "// -----// IR after lower //----- //\n");
        print_ir(j.module, &opt, &j.bin->text);
    }
    bool gpu = opt.emit != TC_EMIT_IR;
    if (!(gpu ? drv_run_gpu_passes(j.module, &po) : drv_run_cleanup_passes(j.module, &po))) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    j.bin->times.passes_ms = clock_ms() - t1;
    if (!record_kernels(j.bin, j.module, target_of(cc, &opt).num_warps, ast, true, &j.diags)) {
        /* the pipeline added a tensor map the runtime cannot build, or a malformed launch grid: a bug */
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_INTERNAL, diags, out);
    }
    if (opt.emit == TC_EMIT_IR || opt.emit == TC_EMIT_IR_GPU)
        print_ir(j.module, &opt, &j.bin->text);
    if ((opt.emit == TC_EMIT_LLVM || opt.emit == TC_EMIT_PTX) && !emit_code(&j, cc, &opt)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    tc_guard_pop(&g);
    return finish(&j, TC_OK, diags, out);
}

tc_status tc_opt(tc_compiler *cc, const tc_source *ir, const char *passes, const tc_options *opt_in,
                 tc_binary **out, tc_diagnostics *diags) {
    if (out)
        *out = NULL;
    if (!cc || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_opt: %s is NULL", !cc ? "the compiler" : "out");
    tc_status st = check_source("tc_opt", "ir", ir);
    tc_options opt;
    if (st == TC_OK)
        st = options_of("tc_opt", opt_in, &opt);
    if (st != TC_OK)
        return st;
    if (opt.emit == TC_EMIT_IR_AFTER_ALL)
        opt.print_after_all = 1;
    if (opt.emit != TC_EMIT_LLVM && opt.emit != TC_EMIT_PTX)
        opt.emit = TC_EMIT_IR;

    Job j;
    if (!job_init(&j, "tc_opt", ir))
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, out);
    TcGuard g;
    if (TC_GUARD(g))
        return finish(&j, guard_status(&g, &j), diags, out);

    j.module = ir_parse(&j.src, &j.diags);
    if (j.module)
        apply_min_programs(j.module->first, opt.min_programs_per_sm);
    if (!j.module || diag_has_errors(&j.diags) || !ir_verify(j.module, &j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    PassOptions po;
    pass_options_from(&po, cc, &opt, &j);
    if (passes && *passes && !pass_run_list(j.module, passes, &po)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    if (!record_kernels(j.bin, j.module, target_of(cc, &opt).num_warps, NULL, true, &j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    if (opt.emit == TC_EMIT_IR) {
        print_ir(j.module, &opt, &j.bin->text);
    } else if (!emit_code(&j, cc, &opt)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, out);
    }
    tc_guard_pop(&g);
    return finish(&j, TC_OK, diags, out);
}

/* The interpreter's load: tc_opt's parse and verify, the inline pass when
 * the IR still has calls, then interp/ checks every op and numbers the
 * values. The module keeps its own copy of the text, which the locations
 * point into. */
tc_status tc_interp_load(const tc_source *ir, tc_interp_module **out, tc_diagnostics *diags) {
    if (out)
        *out = NULL;
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_interp_load: out is NULL");
    tc_status st = check_source("tc_interp_load", "ir", ir);
    if (st != TC_OK)
        return st;
    tc_interp_module *m = interp_module_new(ir);
    Job j;
    if (!m || !job_init(&j, "tc_interp_load", ir)) {
        tc_interp_unload(m);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_interp_load: out of memory");
    }
    TcGuard g;
    if (TC_GUARD(g)) { /* the diagnostics point into m: rendered before it goes */
        st = finish(&j, guard_status(&g, &j), diags, NULL);
        tc_interp_unload(m);
        return st;
    }
    j.module = ir_parse(interp_module_source(m), &j.diags);
    bool ok = j.module && !diag_has_errors(&j.diags) && ir_verify(j.module, &j.diags);
    if (ok && interp_module_has_calls(j.module)) {
        PassOptions po;
        pass_options_init(&po, &j.diags);
        ok = pass_run(j.module, "inline", &po);
    }
    if (ok) {
        IrModule *ir_module = j.module;
        j.module = NULL; /* the interpreter's now, freed with m */
        ok = interp_module_init(m, ir_module, &j.diags);
    }
    tc_guard_pop(&g);
    if (!ok) {
        st = finish(&j, TC_ERROR_COMPILE, diags, NULL);
        tc_interp_unload(m);
        return st;
    }
    *out = m;
    return finish(&j, TC_OK, diags, NULL);
}

tc_status tc_list_kernels(const tc_source *src, char ***names, size_t *count, tc_diagnostics *diags) {
    if (names)
        *names = NULL;
    if (count)
        *count = 0;
    if (!names || !count)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_list_kernels: %s is NULL", names ? "count" : "names");
    tc_status st = check_source("tc_list_kernels", "src", src);
    if (st != TC_OK)
        return st;
    Job j;
    if (!job_init(&j, "tc_list_kernels", src))
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, NULL);
    TcGuard g;
    if (TC_GUARD(g))
        return finish(&j, guard_status(&g, &j), diags, NULL);
    atomic_fetch_add_explicit(&frontend_parses, 1, memory_order_relaxed);
    AstFile *ast = fe_parse(&j.ast_arena, &j.src, &j.diags);
    tc_guard_pop(&g);
    if (diag_has_errors(&j.diags))
        return finish(&j, TC_ERROR_COMPILE, diags, NULL);
    size_t n = 0;
    for (int i = 0; i < ast->num_decls; i++)
        n += ast->decls[i]->kind == AST_KERNEL;
    char **list = calloc(n ? n : 1, sizeof *list);
    if (!list)
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, NULL);
    size_t k = 0;
    for (int i = 0; i < ast->num_decls; i++) {
        if (ast->decls[i]->kind != AST_KERNEL)
            continue;
        list[k] = strdup(ast->decls[i]->name);
        if (!list[k]) {
            tc_names_free(list, k);
            return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, NULL);
        }
        k++;
    }
    *names = list;
    *count = n;
    return finish(&j, TC_OK, diags, NULL);
}

/* ---- search spaces (frontend/tune.c) ---- */

struct tc_tune_space {
    int declared;
    size_t num_keys;
    char **keys;
    size_t *key_params;
    tc_dtype *key_dtypes;
    size_t num_configs;
    tc_tune_config *configs;
    tc_constexpr *cx; /* every configuration's constexprs, one array */
    char *names;      /* the distinct names they point to, NUL-separated */
};

void tc_tune_space_destroy(tc_tune_space *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->num_keys; i++)
        free(s->keys[i]);
    free(s->keys);
    free(s->key_params);
    free(s->key_dtypes);
    free(s->configs);
    free(s->cx);
    free(s->names);
    free(s);
}

/* Copies the front end's space into a tc_tune_space: false when out of
 * memory. */
static bool copy_space(const FeTuneSpace *f, tc_tune_space *s) {
    s->declared = f->declared;
    s->num_keys = (size_t)f->num_keys;
    s->keys = calloc(s->num_keys ? s->num_keys : 1, sizeof *s->keys);
    s->key_params = calloc(s->num_keys ? s->num_keys : 1, sizeof *s->key_params);
    s->key_dtypes = calloc(s->num_keys ? s->num_keys : 1, sizeof *s->key_dtypes);
    if (!s->keys || !s->key_params || !s->key_dtypes)
        return false;
    for (size_t i = 0; i < s->num_keys; i++) {
        s->keys[i] = strdup(f->keys[i]);
        if (!s->keys[i])
            return false;
        s->key_params[i] = (size_t)f->key_params[i];
        s->key_dtypes[i] = (tc_dtype)f->key_types[i]; /* the same order as IrTypeKind's */
    }
    size_t total = 0, name_bytes = 0;
    for (int i = 0; i < f->num_configs; i++)
        total += (size_t)f->configs[i].num_cx;
    /* names are shared by every configuration: copy each distinct one once */
    const char *distinct[64];
    size_t nd = 0;
    for (int i = 0; i < f->num_configs; i++)
        for (int j = 0; j < f->configs[i].num_cx; j++) {
            size_t d = 0;
            while (d < nd && distinct[d] != f->configs[i].cx[j].name)
                d++;
            if (d == nd && nd < 64) {
                distinct[nd++] = f->configs[i].cx[j].name;
                name_bytes += strlen(f->configs[i].cx[j].name) + 1;
            }
        }
    s->num_configs = (size_t)f->num_configs;
    s->configs = calloc(s->num_configs ? s->num_configs : 1, sizeof *s->configs);
    s->cx = calloc(total ? total : 1, sizeof *s->cx);
    s->names = malloc(name_bytes ? name_bytes : 1);
    if (!s->configs || !s->cx || !s->names)
        return false;
    const char *copied[64];
    char *w = s->names;
    for (size_t d = 0; d < nd; d++) {
        size_t n = strlen(distinct[d]) + 1;
        memcpy(w, distinct[d], n);
        copied[d] = w;
        w += n;
    }
    size_t at = 0;
    for (size_t i = 0; i < s->num_configs; i++) {
        const FeTuneConfig *fc = &f->configs[i];
        tc_tune_config *c = &s->configs[i];
        c->constexprs = s->cx + at;
        c->num_constexprs = (size_t)fc->num_cx;
        c->num_warps = fc->num_warps;
        c->num_stages = fc->num_stages;
        c->warp_specialize = fc->warp_specialize;
        c->min_programs_per_sm = fc->min_programs_per_sm;
        for (int j = 0; j < fc->num_cx; j++) {
            const FeConstexpr *x = &fc->cx[j];
            tc_constexpr *y = &s->cx[at++];
            size_t d = 0;
            while (d < nd && distinct[d] != x->name)
                d++;
            y->name = copied[d];
            y->kind = x->is_dtype ? TC_CONSTEXPR_DTYPE : x->is_float ? TC_CONSTEXPR_FLOAT : TC_CONSTEXPR_INT;
            y->i = x->i;
            y->f = x->f;
        }
    }
    return true;
}

tc_status tc_tune_space_create(const tc_source *src, const char *kernel, const tc_constexpr *cx, size_t num_cx,
                               tc_tune_space **out, tc_diagnostics *diags) {
    const char *fn = "tc_tune_space_create";
    if (out)
        *out = NULL;
    if (!out || !kernel)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !out ? "out" : "kernel");
    tc_status st = check_source(fn, "src", src);
    if (st == TC_OK)
        st = rt_check_constexprs(fn, cx, num_cx);
    if (st != TC_OK)
        return st;
    Job j;
    if (!job_init(&j, fn, src))
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, NULL);
    TcGuard g;
    if (TC_GUARD(g))
        return finish(&j, guard_status(&g, &j), diags, NULL);
    atomic_fetch_add_explicit(&frontend_parses, 1, memory_order_relaxed);
    AstFile *ast = fe_parse(&j.ast_arena, &j.src, &j.diags);
    if (diag_has_errors(&j.diags)) {
        tc_guard_pop(&g);
        return finish(&j, TC_ERROR_COMPILE, diags, NULL);
    }
    const AstNode *k = find_ast_kernel(ast, kernel);
    if (!k) {
        tc_guard_pop(&g);
        rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %.200s has no kernel named '%.200s'", fn, j.src.name, kernel);
        return finish(&j, TC_ERROR_INVALID_ARGUMENT, diags, NULL);
    }
    FeConstexpr *fcx = fe_constexprs(&j.ast_arena, cx, num_cx);
    FeTuneSpace fs;
    bool ok = fe_tune_space(&j.ast_arena, k, fcx, (int)num_cx, &j.diags, &fs);
    tc_guard_pop(&g);
    if (!ok)
        return finish(&j, TC_ERROR_COMPILE, diags, NULL);
    tc_tune_space *s = calloc(1, sizeof *s);
    if (!s || !copy_space(&fs, s)) {
        tc_tune_space_destroy(s);
        return finish(&j, TC_ERROR_OUT_OF_MEMORY, diags, NULL);
    }
    *out = s;
    return finish(&j, TC_OK, diags, NULL);
}

int tc_tune_space_declared(const tc_tune_space *s) { return s ? s->declared : 0; }
size_t tc_tune_space_num_configs(const tc_tune_space *s) { return s ? s->num_configs : 0; }
size_t tc_tune_space_num_keys(const tc_tune_space *s) { return s ? s->num_keys : 0; }
const char *tc_tune_space_key(const tc_tune_space *s, size_t i) {
    return s && i < s->num_keys ? s->keys[i] : NULL;
}
size_t tc_tune_space_key_param(const tc_tune_space *s, size_t i) {
    return s && i < s->num_keys ? s->key_params[i] : 0;
}

tc_dtype tc_tune_space_key_dtype(const tc_tune_space *s, size_t i) {
    return s && i < s->num_keys ? s->key_dtypes[i] : TC_DTYPE_I32;
}

tc_status tc_tune_space_config(const tc_tune_space *s, size_t i, tc_tune_config *out) {
    if (!s || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_tune_space_config: %s is NULL", !s ? "the space" : "out");
    if (i >= s->num_configs)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_tune_space_config: configuration %zu of %zu", i,
                       s->num_configs);
    *out = s->configs[i];
    return TC_OK;
}

size_t tc_tune_config_format(const tc_tune_config *c, char *out, size_t cap) {
    char buf[4096];
    size_t n = 0;
    buf[0] = 0;
#define PUT(...) (n += (size_t)snprintf(buf + (n < sizeof buf ? n : sizeof buf), n < sizeof buf ? sizeof buf - n : 0, __VA_ARGS__))
    for (size_t i = 0; c && i < c->num_constexprs; i++) {
        const tc_constexpr *x = &c->constexprs[i];
        if (x->kind == TC_CONSTEXPR_FLOAT)
            PUT("%s%s=%.17g", n ? "," : "", x->name, x->f);
        else
            PUT("%s%s=%lld", n ? "," : "", x->name, (long long)x->i);
    }
    if (c && c->num_warps > 0)
        PUT("%snum_warps=%d", n ? "," : "", c->num_warps);
    if (c && c->num_stages > 0)
        PUT("%snum_stages=%d", n ? "," : "", c->num_stages);
    if (c && c->warp_specialize >= 0)
        PUT("%swarp_specialize=%d", n ? "," : "", c->warp_specialize);
    if (c && c->min_programs_per_sm > 0)
        PUT("%smin_programs_per_sm=%d", n ? "," : "", c->min_programs_per_sm);
#undef PUT
    if (n == 0)
        n = (size_t)snprintf(buf, sizeof buf, "-");
    if (out && cap > 0) {
        size_t m = n < cap - 1 ? n : cap - 1;
        memcpy(out, buf, m < sizeof buf - 1 ? m : sizeof buf - 1);
        out[m < sizeof buf - 1 ? m : sizeof buf - 1] = 0;
    }
    return n;
}

void tc_names_free(char **names, size_t count) {
    if (!names)
        return;
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

const char *tc_pass_list(void) { return pass_list_text(); }
