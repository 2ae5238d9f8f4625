/*
 * kernel_meta.c — kernel metadata: what a launch must know about a kernel (its
 * entry name, num_warps, dynamic shared memory, and the type of each runtime
 * parameter), kept in one block per module, serialized into cache entries,
 * and obtained from the compiler.
 *
 * Serialized form (integers little-endian, strings as u32 length + bytes):
 *
 *     u32 version (1)   u32 kernel count
 *     per kernel: str name, u32 num_warps, u64 shared_bytes, u32 param count,
 *                 per param: str name, u8 dtype, u8 is_pointer, u8 is_const
 *
 * Decoding validates every length, count and enum value: the bytes come from
 * a file another process wrote.
 *
 * Everything here reaches the compiler through the public API (tilec.h).
 * rt_signature is a TC_EMIT_SIGNATURE compile (the front end only, one
 * specialization, so that `T* x` with `constexpr dtype T` resolves): what the
 * AOT generator prints and the standard library's tests check. rt_compile_ptx
 * is the one bridge to tc_compile's PTX output; with a specialize hook in the
 * request, that same compile hands the signature to the caller (the JIT)
 * after its front end, so that the argument facts, computed from it, join
 * the compile without a second parse.
 */
#include "driver/kernel_meta.h"

#include <stdlib.h>
#include <string.h>

#define META_VERSION 1u
#define META_MAX_COUNT ((uint64_t)TC_MAX_KERNEL_PARAMS) /* kernels or parameters (TC_MAX_KERNEL_DESCS is the same) */
_Static_assert(TC_MAX_KERNEL_DESCS == TC_MAX_KERNEL_PARAMS, "one bound for both counts");

size_t rt_dtype_size(tc_dtype t) {
    switch (t) {
    case TC_DTYPE_I1:
    case TC_DTYPE_I8: return 1;
    case TC_DTYPE_I16:
    case TC_DTYPE_F16:
    case TC_DTYPE_BF16: return 2;
    case TC_DTYPE_I32:
    case TC_DTYPE_F32: return 4;
    case TC_DTYPE_I64:
    case TC_DTYPE_F64: return 8;
    }
    return 0;
}

const char *rt_dtype_name(tc_dtype t) {
    static const char *const names[] = {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

size_t tc_param_size(const tc_param_desc *p) {
    return !p ? 0 : p->is_pointer ? 8 : rt_dtype_size(p->dtype);
}

/* ---- storage ---- */

/* Room for n kernels, np params and nstr bytes of strings, in one block. */
static bool meta_alloc(RtMeta *m, size_t nk, size_t np, size_t nstr, tc_param_desc **params, char **strings) {
    size_t size = nk * sizeof(tc_kernel_desc) + np * sizeof(tc_param_desc) + nstr;
    char *block = calloc(1, size ? size : 1);
    if (!block)
        return false;
    m->num_kernels = nk;
    m->kernels = (tc_kernel_desc *)block;
    *params = (tc_param_desc *)(block + nk * sizeof(tc_kernel_desc));
    *strings = block + nk * sizeof(tc_kernel_desc) + np * sizeof(tc_param_desc);
    return true;
}

static const char *put_str(char **strings, const char *s, size_t n) {
    char *p = *strings;
    memcpy(p, s, n);
    p[n] = 0;
    *strings += n + 1;
    return p;
}

tc_status rt_meta_copy(const tc_kernel_desc *kernels, size_t num_kernels, RtMeta *out) {
    memset(out, 0, sizeof *out);
    size_t np = 0, nstr = 0;
    for (size_t k = 0; k < num_kernels; k++) {
        if (!kernels[k].name || (kernels[k].num_params && !kernels[k].params))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "kernel description %zu: no name or no params", k);
        nstr += strlen(kernels[k].name) + 1;
        np += kernels[k].num_params;
        for (size_t p = 0; p < kernels[k].num_params; p++)
            nstr += (kernels[k].params[p].name ? strlen(kernels[k].params[p].name) : 0) + 1;
    }
    tc_param_desc *params;
    char *strings;
    if (!meta_alloc(out, num_kernels, np, nstr, &params, &strings))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory copying kernel metadata");
    for (size_t k = 0; k < num_kernels; k++) {
        tc_kernel_desc *d = &out->kernels[k];
        *d = kernels[k];
        d->name = put_str(&strings, kernels[k].name, strlen(kernels[k].name));
        d->params = params;
        for (size_t p = 0; p < d->num_params; p++) {
            *params = kernels[k].params[p];
            const char *n = params->name ? params->name : "";
            params->name = put_str(&strings, n, strlen(n));
            params++;
        }
    }
    return TC_OK;
}

void rt_meta_free(RtMeta *m) {
    free(m->kernels);
    memset(m, 0, sizeof *m);
}

const tc_kernel_desc *rt_meta_find(const RtMeta *m, const char *name) {
    for (size_t k = 0; k < m->num_kernels; k++)
        if (name && strcmp(m->kernels[k].name, name) == 0)
            return &m->kernels[k];
    return NULL;
}

/* ---- serialization ---- */

bool rt_meta_encode(const RtMeta *m, RtBytes *out) {
    if (!rt_bytes_u32(out, META_VERSION) || !rt_bytes_u32(out, (uint32_t)m->num_kernels))
        return false;
    for (size_t k = 0; k < m->num_kernels; k++) {
        const tc_kernel_desc *d = &m->kernels[k];
        if (!rt_bytes_str(out, d->name) || !rt_bytes_u32(out, (uint32_t)d->num_warps) ||
            !rt_bytes_u64(out, d->shared_bytes) || !rt_bytes_u32(out, (uint32_t)d->num_params))
            return false;
        for (size_t p = 0; p < d->num_params; p++) {
            const tc_param_desc *q = &d->params[p];
            if (!rt_bytes_str(out, q->name) || !rt_bytes_u8(out, (uint8_t)q->dtype) ||
                !rt_bytes_u8(out, q->is_pointer != 0) || !rt_bytes_u8(out, q->is_const != 0))
                return false;
        }
    }
    return true;
}

typedef struct Reader {
    const uint8_t *p, *end;
    bool ok;
} Reader;

static uint64_t rd(Reader *r, int bytes) {
    if (!r->ok || (size_t)(r->end - r->p) < (size_t)bytes) {
        r->ok = false;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    return v;
}

static const char *rd_str(Reader *r, size_t *len) {
    uint64_t n = rd(r, 4);
    if (!r->ok || (size_t)(r->end - r->p) < n || memchr(r->p, 0, (size_t)n)) {
        r->ok = false;
        *len = 0;
        return "";
    }
    const char *s = (const char *)r->p;
    r->p += n;
    *len = (size_t)n;
    return s;
}

/* One pass over the bytes: counts (fill == NULL) or fills. */
static bool meta_parse(const uint8_t *data, size_t len, RtMeta *fill, tc_param_desc *params, char *strings,
                       size_t *nk_out, size_t *np_out, size_t *nstr_out) {
    Reader r = {data, data + len, true};
    size_t np = 0, nstr = 0;
    if (rd(&r, 4) != META_VERSION)
        return false;
    uint64_t nk = rd(&r, 4);
    if (!r.ok || nk > META_MAX_COUNT)
        return false;
    for (uint64_t k = 0; k < nk; k++) {
        size_t n;
        const char *name = rd_str(&r, &n);
        uint64_t warps = rd(&r, 4), shared = rd(&r, 8), nparams = rd(&r, 4);
        if (!r.ok || n == 0 || warps < 1 || warps > TC_MAX_NUM_WARPS || (warps & (warps - 1)) || nparams > META_MAX_COUNT ||
            shared > TC_MAX_SHARED_BYTES)
            return false;
        nstr += n + 1;
        tc_kernel_desc *d = fill ? &fill->kernels[k] : NULL;
        if (d) {
            d->name = put_str(&strings, name, n);
            d->num_warps = (int)warps;
            d->shared_bytes = (size_t)shared;
            d->num_params = (size_t)nparams;
            d->params = params;
        }
        for (uint64_t p = 0; p < nparams; p++) {
            const char *pname = rd_str(&r, &n);
            uint64_t dtype = rd(&r, 1), is_ptr = rd(&r, 1), is_const = rd(&r, 1);
            if (!r.ok || dtype > TC_DTYPE_F64 || is_ptr > 1 || is_const > 1)
                return false;
            nstr += n + 1;
            np++;
            if (d) {
                params->name = put_str(&strings, pname, n);
                params->dtype = (tc_dtype)dtype;
                params->is_pointer = (int)is_ptr;
                params->is_const = (int)is_const;
                params++;
            }
        }
    }
    if (r.p != r.end)
        return false; /* trailing bytes */
    *nk_out = (size_t)nk;
    *np_out = np;
    *nstr_out = nstr;
    return true;
}

bool rt_meta_decode(const uint8_t *data, size_t len, RtMeta *out) {
    memset(out, 0, sizeof *out);
    size_t nk, np, nstr;
    if (!data || !meta_parse(data, len, NULL, NULL, NULL, &nk, &np, &nstr))
        return false;
    tc_param_desc *params;
    char *strings;
    if (!meta_alloc(out, nk, np, nstr, &params, &strings))
        return false;
    meta_parse(data, len, out, params, strings, &nk, &np, &nstr);
    return true;
}

/* ---- from the compiler ---- */

tc_status rt_meta_from_binary(const tc_binary *bin, RtMeta *out) {
    memset(out, 0, sizeof *out);
    size_t nk = tc_binary_kernel_count(bin), np = 0;
    for (size_t k = 0; k < nk; k++)
        np += tc_binary_kernel_num_params(bin, k);
    tc_kernel_desc *descs = calloc(nk ? nk : 1, sizeof *descs);
    tc_param_desc *params = calloc(np ? np : 1, sizeof *params);
    tc_status st = TC_OK;
    if (!descs || !params) {
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory reading kernel metadata");
    } else {
        size_t p = 0;
        for (size_t k = 0; k < nk; k++) {
            descs[k].name = tc_binary_kernel_name(bin, k);
            descs[k].num_warps = tc_binary_kernel_num_warps(bin, k);
            descs[k].shared_bytes = (size_t)tc_binary_kernel_shared_bytes(bin, k);
            descs[k].num_params = tc_binary_kernel_num_params(bin, k);
            descs[k].params = &params[p];
            for (size_t i = 0; i < descs[k].num_params; i++, p++)
                tc_binary_kernel_param(bin, k, i, &params[p]);
        }
        st = rt_meta_copy(descs, nk, out);
    }
    free(descs);
    free(params);
    return st;
}

void rt_request_options(const tc_options *opt, tc_options *out) {
    if (opt)
        *out = *opt;
    else
        tc_options_init(out);
    out->num_warps = out->num_warps != 0 ? out->num_warps : TC_DEFAULT_NUM_WARPS;
    out->specialize = NULL; /* the JIT and the AOT generator install their own */
    out->specialize_user = NULL;
}

/* rt_compile_ptx's hook for tc_compile: the signature as an RtMeta, for the
 * request's own hook. */
typedef struct SpecializeBridge {
    const RtCompileRequest *req;
    bool stopped; /* the request's hook ended the compile */
    bool failed;  /* ... with an error, whose message it set */
} SpecializeBridge;

static tc_status specialize_bridge(void *user, const tc_binary *signature, const tc_param_spec **specs,
                                   size_t *num_specs, int *stop) {
    SpecializeBridge *b = user;
    RtMeta sig;
    tc_status st = rt_meta_from_binary(signature, &sig);
    if (st != TC_OK)
        return st;
    bool halt = false;
    st = b->req->specialize(b->req->specialize_user, &sig, specs, num_specs, &halt);
    rt_meta_free(&sig);
    b->failed = st != TC_OK;
    b->stopped = halt;
    *stop = halt;
    return st;
}

/* One tc_compile of the request with the given emit (and hook), its errors
 * turned into tc_last_error() text: a compile error carries the rendered
 * diagnostics (also in diags, when given); a refused argument keeps
 * tc_compile's message. */
static tc_status compile_request(const RtCompileRequest *req, tc_emit emit, SpecializeBridge *bridge, tc_binary **bin,
                                 tc_diagnostics *diags) {
    *bin = NULL;
    tc_target target = {req->arch};
    tc_compiler *cc = NULL;
    tc_status st = tc_compiler_create(&target, &cc);
    if (st != TC_OK)
        return rt_fail(st, "cannot compile for %s", req->arch ? req->arch : "the default target");
    tc_options opt = *req->options;
    opt.emit = emit;
    opt.print_after = NULL;
    opt.print_after_all = 0;
    opt.params = req->specs;
    opt.num_params = req->num_specs;
    opt.specialize = bridge ? specialize_bridge : NULL;
    opt.specialize_user = bridge;
    tc_diagnostics *own = NULL;
    if (!diags && tc_diagnostics_create(&own) == TC_OK)
        diags = own; /* the text still goes to tc_last_error */
    st = tc_compile(cc, req->source, req->kernel, req->constexprs, req->num_constexprs, &opt, bin, diags);
    tc_compiler_destroy(cc);
    if (st != TC_OK && st != TC_ERROR_INVALID_ARGUMENT && !(bridge && bridge->failed)) {
        const char *text = diags ? tc_diagnostics_text(diags) : "";
        st = rt_fail(st, "compiling %s: %s%s%s", req->kernel ? req->kernel : "the kernels", tc_status_string(st),
                     *text ? "\n" : "", text);
    }
    tc_diagnostics_destroy(own);
    return st;
}

tc_status rt_signature(const tc_source *src, const char *kernel, const tc_constexpr *cx, size_t ncx, int num_warps,
                       RtMeta *out, tc_diagnostics *diags) {
    memset(out, 0, sizeof *out);
    if (!src || (ncx && !cx))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_signature: no source");
    tc_options opt;
    tc_options_init(&opt);
    opt.num_warps = num_warps;
    RtCompileRequest req = {src, kernel, cx, ncx, &opt, NULL, NULL, 0, NULL, NULL};
    tc_binary *bin;
    tc_status st = compile_request(&req, TC_EMIT_SIGNATURE, NULL, &bin, diags);
    if (st == TC_OK)
        st = rt_meta_from_binary(bin, out);
    tc_binary_destroy(bin);
    return st;
}

tc_status rt_compile_ptx(void *user, const RtCompileRequest *req, RtBytes *ptx, RtMeta *meta, tc_diagnostics *diags) {
    (void)user;
    memset(meta, 0, sizeof *meta);
    SpecializeBridge bridge = {req, false, false};
    tc_binary *bin;
    tc_status st = compile_request(req, TC_EMIT_PTX, req->specialize ? &bridge : NULL, &bin, diags);
    if (st != TC_OK || bridge.stopped) {
        tc_binary_destroy(bin);
        return st;
    }
    size_t len;
    const char *text = tc_binary_text(bin, &len);
    if (!rt_bytes_append(ptx, text, len)) {
        tc_binary_destroy(bin);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory copying PTX");
    }
    st = rt_meta_from_binary(bin, meta);
    tc_binary_destroy(bin);
    return st;
}
