/*
 * stdlib.c — what the standard library's families (rowwise.c, matmul.c,
 * attention.c) share: the embedded sources, the argument checkers, the JIT
 * request, and the launch through the context's memo of kernels.
 *
 * Cost of a call after the first: validation, a lookup in the context's
 * memo of the kernels tc_jit returned (the request's fields compared by
 * value, without a lock) and tc_launch. tc_jit's own in-memory lookup
 * hashes the 3 KB source (about 12 us on the build machine, four times a
 * bare launch), so it runs only for a request the memo has not seen.
 */
#include "tilec/stdlib.h"

#include "runtime/runtime.h"
#include "stdlib/stdlib_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the embedded sources ---- */

const RtStdlibSource *rt_stdlib_find_source(const char *name) {
    for (size_t i = 0; i < rt_stdlib_num_sources; i++)
        if (strcmp(rt_stdlib_sources[i].name, name) == 0)
            return &rt_stdlib_sources[i];
    return NULL;
}

tc_status tc_stdlib_source(const char *name, const char **text, size_t *len) {
    if (text)
        *text = NULL;
    if (len)
        *len = 0;
    if (!name || !text)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_source: %s is NULL", !name ? "name" : "text");
    const RtStdlibSource *s = rt_stdlib_find_source(name);
    if (!s)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stdlib_source: the standard library has no file named '%s'",
                       name);
    *text = s->text;
    if (len)
        *len = s->len;
    return TC_OK;
}

/* ---- the argument checkers ---- */

const char *rt_stdlib_target(const tc_context *ctx, bool hooked) {
    return hooked ? TC_DEFAULT_ARCH : tc_context_arch(ctx);
}

int rt_stdlib_forced_warp_specialize(const tc_context *ctx, bool hooked) {
    return hooked ? -1 : ctx->warp_specialize;
}

int rt_stdlib_forced_persistent(const tc_context *ctx, bool hooked) {
    return hooked ? -1 : ctx->persistent;
}

int rt_stdlib_sms(const tc_context *ctx, bool hooked) {
    return hooked ? 132 : tc_context_multiprocessors(ctx);
}

bool rt_stdlib_wgmma(const char *arch) {
    return arch && strcmp(arch, "sm_90a") == 0;
}

bool rt_stdlib_clusters(const char *arch) {
    return arch && strncmp(arch, "sm_", 3) == 0 && atoi(arch + 3) >= 90;
}

tc_status rt_stdlib_check_given(const char *entry, const char *name, const void *p) {
    if (!p)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", entry, name);
    return TC_OK;
}

tc_status rt_stdlib_check_dtype(const char *entry, tc_dtype dtype, bool f32_too) {
    if (dtype == TC_DTYPE_F16 || dtype == TC_DTYPE_BF16 || (f32_too && dtype == TC_DTYPE_F32))
        return TC_OK;
    return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: dtype must be %s", entry,
                   f32_too ? "TC_DTYPE_F16, TC_DTYPE_BF16 or TC_DTYPE_F32" : "TC_DTYPE_F16 or TC_DTYPE_BF16");
}

tc_status rt_stdlib_check_count(const char *entry, const char *name, int64_t v, int64_t max) {
    if (v < 1 || v > max)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) must be in 1..%lld", entry, name, (long long)v,
                       (long long)max);
    return TC_OK;
}

tc_status rt_stdlib_check_rows(const char *entry, tc_context *ctx, tc_dtype dtype, int64_t rows, int64_t cols) {
    tc_status st;
    if ((st = rt_stdlib_check_given(entry, "ctx", ctx)) != TC_OK ||
        (st = rt_stdlib_check_dtype(entry, dtype, true)) != TC_OK ||
        (st = rt_stdlib_check_count(entry, "rows", rows, INT32_MAX)) != TC_OK)
        return st;
    return rt_stdlib_check_count(entry, "cols", cols, RT_STDLIB_MAX_COLS);
}

tc_status rt_stdlib_check_ptr(const char *entry, const char *name, CUdeviceptr p, size_t elem_bytes) {
    if (!p)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is 0", entry, name);
    if (p % elem_bytes)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (0x%llx) is not aligned to its %zu-byte elements", entry,
                       name, (unsigned long long)p, elem_bytes);
    return TC_OK;
}

tc_status rt_stdlib_check_row_stride(const char *entry, const char *name, int64_t stride, const char *min_name,
                                     int64_t min) {
    if (stride < min)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%lld) is smaller than %s (%lld)", entry, name,
                       (long long)stride, min_name, (long long)min);
    return TC_OK;
}

tc_status rt_stdlib_check_finite(const char *entry, const char *name, float v, bool nonnegative) {
    if (!isfinite(v) || (nonnegative && v < 0))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s (%g) must be finite%s", entry, name, (double)v,
                       nonnegative ? " and >= 0" : "");
    return TC_OK;
}

bool rt_stdlib_span_add(int64_t *used, int64_t count, int64_t stride) {
    if (count <= 1 || stride == 0)
        return true;
    if (count - 1 > (RT_STDLIB_MAX_OFFSET - *used) / stride)
        return false;
    *used += (count - 1) * stride;
    return true;
}

/* Appends " (stride_am 64, stride_ak 1)" for the named strides of dims. */
static void describe_strides(char *buf, size_t cap, const RtStdlibDim *dims, size_t num_dims) {
    size_t n = 0;
    const char *sep = " (";
    for (size_t i = 0; i < num_dims && n < cap; i++)
        if (dims[i].stride_name) {
            n += (size_t)snprintf(buf + n, cap - n, "%s%s %lld", sep, dims[i].stride_name, (long long)dims[i].stride);
            sep = ", ";
        }
    if (n < cap)
        snprintf(buf + n, cap - n, ")");
}

tc_status rt_stdlib_check_strides(const char *entry, const char *what, const RtStdlibDim *dims, size_t num_dims) {
    char strides[256] = "";
    bool negative = false;
    for (size_t i = 0; i < num_dims; i++)
        negative |= dims[i].stride < 0;
    if (negative) {
        describe_strides(strides, sizeof strides, dims, num_dims);
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s's strides%s must be >= 0", entry, what, strides);
    }
    int64_t used = 0;
    for (size_t i = 0; i < num_dims; i++)
        if (!rt_stdlib_span_add(&used, dims[i].count, dims[i].stride)) {
            char extents[128] = "";
            for (size_t j = 0, n = 0; j < num_dims && n < sizeof extents; j++)
                n += (size_t)snprintf(extents + n, sizeof extents - n, "%s%lld", j ? " x " : "",
                                      (long long)dims[j].count);
            describe_strides(strides, sizeof strides, dims, num_dims);
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s's strides%s with %s elements overflow a 64-bit offset",
                           entry, what, strides, extents);
        }
    return TC_OK;
}

/* ---- the request and the launch ---- */

tc_status rt_stdlib_request(const char *entry, const char *file, const char *kernel, const tc_constexpr *constexprs,
                            size_t num_constexprs, const tc_options *options, const int64_t *divisibility,
                            size_t num_args, tc_jit_request *req) {
    tc_jit_request_init(req);
    const RtStdlibSource *s = rt_stdlib_find_source(file);
    if (!s)
        return rt_fail(TC_ERROR_INTERNAL, "%s: this libtilec was built without lib/%s", entry, file);
    req->source = s->text;
    req->source_len = s->len;
    req->path = s->path;
    req->kernel = kernel;
    req->constexprs = constexprs;
    req->num_constexprs = num_constexprs;
    req->options = options;
    req->divisibility = divisibility;
    req->num_divisibility = num_args;
    return TC_OK;
}

tc_status rt_stdlib_jit_launch(tc_context *ctx, const tc_jit_request *req, tc_dim3 grid, CUstream stream, void **args,
                               size_t num_args) {
    /* Sources, paths, kernel and parameter names are static (rt_stdlib_request),
     * so the memo's address keys are sound (stdlib_internal.h). */
    RtStdlibKey key;
    rt_stdlib_key(req, &key);
    tc_kernel *k = rt_stdlib_memo_find(ctx, &key);
    if (!k) {
        tc_status st = tc_jit(ctx, req, &k);
        if (st != TC_OK)
            return st; /* tc_last_error() has the compiler's or the driver's message */
        rt_stdlib_memo_add(ctx, &key, k);
    }
    return tc_launch(k, grid, stream, args, num_args);
}

void rt_stdlib_arg_ptr(const RtStdlibArgs *a, const char *name, CUdeviceptr p, bool known) {
    size_t i = (*a->num_args)++;
    a->names[i] = name;
    a->ptrs[i] = p;
    a->args[i] = &a->ptrs[i];
    a->divisibility[i] = known && p % 16 == 0 ? 16 : 0;
}

void rt_stdlib_arg_int(const RtStdlibArgs *a, const char *name, int64_t v, bool is_i32, int64_t vector) {
    size_t i = (*a->num_args)++;
    a->names[i] = name;
    if (is_i32) {
        a->i32s[i] = (int32_t)v;
        a->args[i] = &a->i32s[i];
    } else {
        a->i64s[i] = v;
        a->args[i] = &a->i64s[i];
    }
    if (vector && v % vector == 0)
        a->facts[(*a->num_facts)++] = (tc_param_spec){name, vector};
}

RtStdlibArgs rt_stdlib_kernel_args(RtStdlibKernelLaunch *l) {
    return (RtStdlibArgs){l->names, l->ptrs, l->i64s, l->i32s, l->divisibility, l->args, &l->num_args, l->facts,
                          &l->num_facts};
}

void rt_stdlib_kernel_arg_f32(RtStdlibKernelLaunch *l, const char *name, float v) {
    size_t i = l->num_args++;
    l->names[i] = name;
    l->f32s[i] = v;
    l->args[i] = &l->f32s[i];
}

tc_status rt_stdlib_kernel_launch(tc_context *ctx, CUstream stream, const char *entry, const char *file,
                                  const char *kernel, int num_warps, tc_dim3 grid, RtStdlibKernelLaunch *l) {
    tc_options_init(&l->options);
    l->options.num_warps = num_warps;
    l->options.min_programs_per_sm = l->min_programs_per_sm;
    l->options.params = l->num_facts ? l->facts : NULL;
    l->options.num_params = l->num_facts;
    tc_status st = rt_stdlib_request(entry, file, kernel, l->cx, l->num_cx, &l->options, l->divisibility, l->num_args,
                                     &l->req);
    if (st != TC_OK)
        return st;
    return rt_stdlib_jit_launch(ctx, &l->req, grid, stream, l->args, l->num_args);
}

tc_status rt_stdlib_check_matrix(const char *entry, const char *name, const char *stride_name, CUdeviceptr p,
                                 size_t elem, int64_t rows, int64_t cols, int64_t stride) {
    RtStdlibDim dims[2] = {{stride_name, rows, stride}, {NULL, cols, 1}};
    tc_status st;
    if ((st = rt_stdlib_check_ptr(entry, name, p, elem)) != TC_OK ||
        (st = rt_stdlib_check_row_stride(entry, stride_name, stride, "cols", cols)) != TC_OK)
        return st;
    return rt_stdlib_check_strides(entry, name, dims, 2);
}

tc_status rt_stdlib_check_workspace(const char *entry, CUdeviceptr workspace, size_t bytes, size_t need,
                                    const char *size_fn) {
    if (!workspace || workspace % 16 != 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: workspace (0x%llx) must be a 16-byte aligned device address",
                       entry, (unsigned long long)workspace);
    if (need != SIZE_MAX && bytes < need)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: workspace_bytes (%zu) is less than the %zu bytes needed (%s)",
                       entry, bytes, need, size_fn);
    return TC_OK;
}

/* ---- the memo (stdlib_internal.h says why its keys are sound) ---- */

typedef struct RtStdlibMemo RtStdlibMemo;
struct RtStdlibMemo {
    RtStdlibKey key;
    tc_kernel *kernel;  /* tc_jit's result for the key; lives as long as the context */
    RtStdlibMemo *next; /* older entries; immutable once published */
};

static void put(RtStdlibKey *key, uint64_t word) {
    if (key->len < RT_STDLIB_KEY_WORDS)
        key->words[key->len] = word;
    key->len++; /* past the end: rt_stdlib_key says no */
}

static uint64_t addr(const void *p) {
    return (uint64_t)(uintptr_t)p;
}

/* The request's fields that tc_jit's key reads, in the order
 * rt_jit_base_key hashes them, then the per-parameter facts that select a
 * variant (rt_jit_ptx_key). */
bool rt_stdlib_key(const tc_jit_request *r, RtStdlibKey *key) {
    key->len = 0;
    if (!r->source || !r->options || r->args)
        return false; /* a file is read at every call; argument facts are not in the request */
    put(key, addr(r->path));
    put(key, addr(r->source));
    put(key, r->source_len);
    put(key, addr(r->kernel));
    put(key, addr(r->arch)); /* NULL: the context's */
    put(key, r->num_constexprs);
    for (size_t i = 0; i < r->num_constexprs; i++) {
        uint64_t fbits;
        memcpy(&fbits, &r->constexprs[i].f, sizeof fbits);
        put(key, addr(r->constexprs[i].name));
        put(key, (uint64_t)r->constexprs[i].kind);
        put(key, (uint64_t)r->constexprs[i].i);
        put(key, fbits);
    }
    put(key, (uint64_t)r->options->num_warps);
    put(key, (uint64_t)r->options->num_stages);
    put(key, (uint64_t)(r->options->llvm_o3 != 0));
    put(key, (uint64_t)(r->options->warp_specialize != 0));
    put(key, (uint64_t)(r->options->persistent != 0));
    put(key, (uint64_t)r->options->min_programs_per_sm);
    put(key, (uint64_t)(r->options->line_info != 0));
    put(key, r->options->num_params);
    for (size_t i = 0; i < r->options->num_params; i++) {
        put(key, addr(r->options->params[i].name));
        put(key, (uint64_t)r->options->params[i].divisibility);
    }
    put(key, r->num_divisibility);
    for (size_t i = 0; i < r->num_divisibility; i++)
        put(key, (uint64_t)r->divisibility[i]);
    if (key->len <= RT_STDLIB_KEY_WORDS)
        return true;
    key->len = 0;
    return false;
}

bool rt_stdlib_key_equal(const RtStdlibKey *a, const RtStdlibKey *b) {
    return a->len == b->len && memcmp(a->words, b->words, a->len * sizeof a->words[0]) == 0;
}

static tc_kernel *memo_lookup(const RtStdlibMemo *m, const RtStdlibKey *key) {
    for (; m; m = m->next)
        if (rt_stdlib_key_equal(&m->key, key))
            return m->kernel;
    return NULL;
}

/* The context's attached_free: the memo is the context's attached state. */
static void memo_free(void *attached) {
    RtStdlibMemo *m = attached;
    while (m) {
        RtStdlibMemo *next = m->next;
        free(m);
        m = next;
    }
}

tc_kernel *rt_stdlib_memo_find(tc_context *ctx, const RtStdlibKey *key) {
    if (!key->len)
        return NULL;
    return memo_lookup(atomic_load_explicit(&ctx->attached, memory_order_acquire), key);
}

void rt_stdlib_memo_add(tc_context *ctx, const RtStdlibKey *key, tc_kernel *k) {
    if (!key->len)
        return;
    pthread_mutex_lock(&ctx->jit_lock);
    RtStdlibMemo *head = atomic_load_explicit(&ctx->attached, memory_order_relaxed);
    RtStdlibMemo *m = memo_lookup(head, key) ? NULL : malloc(sizeof *m);
    if (m) {
        m->key = *key;
        m->kernel = k;
        m->next = head;
        ctx->attached_free = memo_free;
        atomic_store_explicit(&ctx->attached, m, memory_order_release);
    }
    pthread_mutex_unlock(&ctx->jit_lock);
}
