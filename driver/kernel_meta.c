/*
 * kernel_meta.c — kernel metadata: what a launch must know about a kernel (its
 * entry name, num_warps, dynamic shared memory, whether it is persistent,
 * the type of each runtime parameter, and the tensor maps it builds from
 * them), kept in one block per module, serialized into cache entries, and
 * obtained from the compiler.
 *
 * Serialized form (integers little-endian, strings as u32 length + bytes):
 *
 *     u32 version (3)   u32 kernel count
 *     per kernel: str name, u32 num_warps, u64 shared_bytes, u8 persistent, u32 param count,
 *                 per param: str name, u8 dtype, u8 is_pointer, u8 is_const
 *                 u32 tensor map count,
 *                 per map: u32 base, u8 rank, u8 swizzle,
 *                          per dimension: u32 dim_param, u64 dim, u32 box,
 *                          per dimension after the first: u32 stride_param, u64 stride
 *                 (signed fields as their two's complement)
 *
 * Decoding validates every length, count and enum value, and each tensor
 * map against its kernel's parameters (rt_tensor_map_check): the bytes come
 * from a file another process wrote.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 3: persistent kernels (2: tensor maps). An entry of another version is
 * refused, and the JIT compiles it afresh: metadata without the flag would
 * launch a persistent kernel without its grid. */
#define META_VERSION 3u
#define META_MAX_COUNT ((uint64_t)TC_MAX_KERNEL_PARAMS) /* kernels or parameters (TC_MAX_KERNEL_DESCS is the same) */
_Static_assert(TC_MAX_KERNEL_DESCS == TC_MAX_KERNEL_PARAMS, "one bound for both counts");

size_t rt_dtype_size(tc_dtype t) {
    switch (t) {
    case TC_DTYPE_I1:
    case TC_DTYPE_I8:
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return 1;
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
    static const char *const names[] = {"i1",   "i8",  "i16", "i32",    "i64",   "f16",
                                        "bf16", "f32", "f64", "f8e4m3", "f8e5m2"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

size_t tc_param_size(const tc_param_desc *p) {
    return !p ? 0 : p->is_pointer ? 8 : rt_dtype_size(p->dtype);
}

/* ---- tensor maps ---- */

int rt_tensor_map_dtype(tc_dtype t) {
    switch (t) {
    case TC_DTYPE_I8:
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return RT_CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case TC_DTYPE_I16: return RT_CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case TC_DTYPE_I32: return RT_CU_TENSOR_MAP_DATA_TYPE_INT32;
    case TC_DTYPE_I64: return RT_CU_TENSOR_MAP_DATA_TYPE_INT64;
    case TC_DTYPE_F16: return RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case TC_DTYPE_BF16: return RT_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case TC_DTYPE_F32: return RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case TC_DTYPE_F64: return RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case TC_DTYPE_I1: break;
    }
    return -1;
}

int rt_tensor_map_swizzle(int bytes) {
    return bytes == 32    ? RT_CU_TENSOR_MAP_SWIZZLE_32B
           : bytes == 64  ? RT_CU_TENSOR_MAP_SWIZZLE_64B
           : bytes == 128 ? RT_CU_TENSOR_MAP_SWIZZLE_128B
                          : RT_CU_TENSOR_MAP_SWIZZLE_NONE;
}

/* Whether parameter p of d is an integer a launch can read an extent or a
 * stride from. */
static bool int_param(const tc_kernel_desc *d, int p) {
    return p >= 0 && (size_t)p < d->num_params && !d->params[p].is_pointer && d->params[p].dtype >= TC_DTYPE_I8 &&
           d->params[p].dtype <= TC_DTYPE_I64;
}

/* A dimension's extent or stride: parameter -1 with a constant >= 0, or an
 * integer parameter. */
static bool check_value(const tc_kernel_desc *d, const char *what, int dim, int param, int64_t value, char *why,
                        size_t cap) {
    if (value < 0) {
        snprintf(why, cap, "%s[%d] is %lld: a constant (or a parameter's multiplier) must be >= 0", what, dim,
                 (long long)value);
        return false;
    }
    if (param != -1 && !int_param(d, param)) {
        snprintf(why, cap, "%s_param[%d] is %d: neither -1 nor an integer parameter (i8..i64; the kernel has %zu)",
                 what, dim, param, d->num_params);
        return false;
    }
    return true;
}

bool rt_tensor_map_check(const tc_kernel_desc *d, const tc_tensor_map_desc *m, char *why, size_t cap) {
    if (m->rank < 1 || m->rank > TC_MAX_TENSOR_MAP_RANK) {
        snprintf(why, cap, "rank %d is not from 1 to %d", m->rank, TC_MAX_TENSOR_MAP_RANK);
        return false;
    }
    if (m->base < 0 || (size_t)m->base >= d->num_params || !d->params[m->base].is_pointer) {
        snprintf(why, cap, "base %d is not a pointer parameter (the kernel has %zu)", m->base, d->num_params);
        return false;
    }
    tc_dtype t = d->params[m->base].dtype;
    if (rt_tensor_map_dtype(t) < 0) {
        snprintf(why, cap, "the base pointer's element type %s has no TMA data type", rt_dtype_name(t));
        return false;
    }
    for (int i = 0; i < m->rank; i++) {
        if (!check_value(d, "dim", i, m->dim_param[i], m->dim[i], why, cap) ||
            (i > 0 && !check_value(d, "stride", i, m->stride_param[i], m->stride[i], why, cap)))
            return false;
        if (m->box[i] < 1 || m->box[i] > 256) {
            snprintf(why, cap, "box[%d] is %u: not from 1 to 256", i, m->box[i]);
            return false;
        }
    }
    if (m->swizzle != 0 && m->swizzle != 32 && m->swizzle != 64 && m->swizzle != 128) {
        snprintf(why, cap, "swizzle %d is not 0, 32, 64 or 128", m->swizzle);
        return false;
    }
    size_t inner = m->box[0] * rt_dtype_size(t);
    if (inner % 16 || (m->swizzle && inner > (size_t)m->swizzle)) {
        snprintf(why, cap, "box[0] is %u elements of %s, %zu bytes: it must be a multiple of 16 bytes%s", m->box[0],
                 rt_dtype_name(t), inner, m->swizzle ? ", no wider than the swizzle" : "");
        return false;
    }
    return true;
}

/* ---- storage ---- */

_Static_assert(sizeof(tc_kernel_desc) % _Alignof(tc_tensor_map_desc) == 0 &&
                   sizeof(tc_tensor_map_desc) % _Alignof(tc_param_desc) == 0,
               "each part of a metadata block starts aligned");

/* The parts of one block of metadata: kernels, their tensor maps, their
 * parameters, then their strings (every record's size is a multiple of 8,
 * so each part is aligned). */
typedef struct MetaParts {
    tc_tensor_map_desc *maps;
    tc_param_desc *params;
    char *strings;
} MetaParts;

/* Room for nk kernels, nm maps, np params and nstr bytes of strings. */
static bool meta_alloc(RtMeta *m, size_t nk, size_t nm, size_t np, size_t nstr, MetaParts *parts) {
    size_t size = nk * sizeof(tc_kernel_desc) + nm * sizeof(tc_tensor_map_desc) + np * sizeof(tc_param_desc) + nstr;
    char *block = calloc(1, size ? size : 1);
    if (!block)
        return false;
    m->num_kernels = nk;
    m->kernels = (tc_kernel_desc *)block;
    parts->maps = (tc_tensor_map_desc *)(block + nk * sizeof(tc_kernel_desc));
    parts->params = (tc_param_desc *)((char *)parts->maps + nm * sizeof(tc_tensor_map_desc));
    parts->strings = (char *)(parts->params + np);
    return true;
}

static const char *put_str(char **strings, const char *s, size_t n) {
    char *p = *strings;
    memcpy(p, s, n);
    p[n] = 0;
    *strings += n + 1;
    return p;
}

/* A map with its unused entries (stride [0], everything past rank) cleared,
 * so that equal maps have equal bytes. */
static tc_tensor_map_desc map_canonical(const tc_tensor_map_desc *m) {
    tc_tensor_map_desc c;
    memset(&c, 0, sizeof c);
    c.base = m->base;
    c.rank = m->rank;
    c.swizzle = m->swizzle;
    for (int i = 0; i < TC_MAX_TENSOR_MAP_RANK; i++) {
        bool used = i < m->rank;
        c.dim_param[i] = used ? m->dim_param[i] : -1;
        c.dim[i] = used ? m->dim[i] : 0;
        c.box[i] = used ? m->box[i] : 0;
        c.stride_param[i] = used && i > 0 ? m->stride_param[i] : -1;
        c.stride[i] = used && i > 0 ? m->stride[i] : 0;
    }
    return c;
}

tc_status rt_meta_copy(const tc_kernel_desc *kernels, size_t num_kernels, RtMeta *out) {
    memset(out, 0, sizeof *out);
    size_t np = 0, nm = 0, nstr = 0;
    for (size_t k = 0; k < num_kernels; k++) {
        if (!kernels[k].name || (kernels[k].num_params && !kernels[k].params) ||
            (kernels[k].num_tensor_maps && !kernels[k].tensor_maps))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "kernel description %zu: no name, params or tensor_maps", k);
        nstr += strlen(kernels[k].name) + 1;
        np += kernels[k].num_params;
        nm += kernels[k].num_tensor_maps;
        for (size_t p = 0; p < kernels[k].num_params; p++)
            nstr += (kernels[k].params[p].name ? strlen(kernels[k].params[p].name) : 0) + 1;
    }
    MetaParts parts;
    if (!meta_alloc(out, num_kernels, nm, np, nstr, &parts))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory copying kernel metadata");
    for (size_t k = 0; k < num_kernels; k++) {
        tc_kernel_desc *d = &out->kernels[k];
        *d = kernels[k];
        d->name = put_str(&parts.strings, kernels[k].name, strlen(kernels[k].name));
        d->params = parts.params;
        for (size_t p = 0; p < d->num_params; p++) {
            *parts.params = kernels[k].params[p];
            const char *n = parts.params->name ? parts.params->name : "";
            parts.params->name = put_str(&parts.strings, n, strlen(n));
            parts.params++;
        }
        d->tensor_maps = d->num_tensor_maps ? parts.maps : NULL;
        for (size_t i = 0; i < d->num_tensor_maps; i++)
            *parts.maps++ = map_canonical(&kernels[k].tensor_maps[i]);
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

static bool encode_map(RtBytes *out, const tc_tensor_map_desc *m) {
    if (!rt_bytes_u32(out, (uint32_t)m->base) || !rt_bytes_u8(out, (uint8_t)m->rank) ||
        !rt_bytes_u8(out, (uint8_t)m->swizzle))
        return false;
    for (int i = 0; i < m->rank; i++)
        if (!rt_bytes_u32(out, (uint32_t)m->dim_param[i]) || !rt_bytes_u64(out, (uint64_t)m->dim[i]) ||
            !rt_bytes_u32(out, m->box[i]))
            return false;
    for (int i = 1; i < m->rank; i++)
        if (!rt_bytes_u32(out, (uint32_t)m->stride_param[i]) || !rt_bytes_u64(out, (uint64_t)m->stride[i]))
            return false;
    return true;
}

bool rt_meta_encode(const RtMeta *m, RtBytes *out) {
    if (!rt_bytes_u32(out, META_VERSION) || !rt_bytes_u32(out, (uint32_t)m->num_kernels))
        return false;
    for (size_t k = 0; k < m->num_kernels; k++) {
        const tc_kernel_desc *d = &m->kernels[k];
        if (!rt_bytes_str(out, d->name) || !rt_bytes_u32(out, (uint32_t)d->num_warps) ||
            !rt_bytes_u64(out, d->shared_bytes) || !rt_bytes_u8(out, d->persistent != 0) ||
            !rt_bytes_u32(out, (uint32_t)d->num_params))
            return false;
        for (size_t p = 0; p < d->num_params; p++) {
            const tc_param_desc *q = &d->params[p];
            if (!rt_bytes_str(out, q->name) || !rt_bytes_u8(out, (uint8_t)q->dtype) ||
                !rt_bytes_u8(out, q->is_pointer != 0) || !rt_bytes_u8(out, q->is_const != 0))
                return false;
        }
        if (!rt_bytes_u32(out, (uint32_t)d->num_tensor_maps))
            return false;
        for (size_t i = 0; i < d->num_tensor_maps; i++)
            if (!encode_map(out, &d->tensor_maps[i]))
                return false;
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

/* One map's fields, range-checked only as far as reading needs (its rank);
 * rt_tensor_map_check judges the rest once the kernel's parameters are in. */
static bool decode_map(Reader *r, tc_tensor_map_desc *m) {
    memset(m, 0, sizeof *m);
    m->base = (int32_t)(uint32_t)rd(r, 4);
    uint64_t rank = rd(r, 1);
    m->swizzle = (int)rd(r, 1);
    if (!r->ok || rank < 1 || rank > TC_MAX_TENSOR_MAP_RANK)
        return false;
    m->rank = (int)rank;
    for (int i = 0; i < TC_MAX_TENSOR_MAP_RANK; i++)
        m->dim_param[i] = m->stride_param[i] = -1;
    for (int i = 0; i < m->rank; i++) {
        m->dim_param[i] = (int32_t)(uint32_t)rd(r, 4);
        m->dim[i] = (int64_t)rd(r, 8);
        m->box[i] = (unsigned)rd(r, 4);
    }
    for (int i = 1; i < m->rank; i++) {
        m->stride_param[i] = (int32_t)(uint32_t)rd(r, 4);
        m->stride[i] = (int64_t)rd(r, 8);
    }
    return r->ok;
}

/* What one pass over the bytes counts: kernels, tensor maps, parameters,
 * bytes of strings. */
typedef struct MetaCounts {
    size_t nk, nm, np, nstr;
} MetaCounts;

/* One pass over the bytes: counts (fill == NULL) or fills. */
static bool meta_parse(const uint8_t *data, size_t len, RtMeta *fill, MetaParts *parts, MetaCounts *out) {
    Reader r = {data, data + len, true};
    MetaCounts c = {0, 0, 0, 0};
    if (rd(&r, 4) != META_VERSION)
        return false;
    uint64_t nk = rd(&r, 4);
    if (!r.ok || nk > META_MAX_COUNT)
        return false;
    for (uint64_t k = 0; k < nk; k++) {
        size_t n;
        const char *name = rd_str(&r, &n);
        uint64_t warps = rd(&r, 4), shared = rd(&r, 8), persistent = rd(&r, 1), nparams = rd(&r, 4);
        if (!r.ok || n == 0 || warps < 1 || warps > TC_MAX_NUM_WARPS || (warps & (warps - 1)) ||
            nparams > META_MAX_COUNT || shared > TC_MAX_SHARED_BYTES || persistent > 1)
            return false;
        c.nstr += n + 1;
        tc_kernel_desc *d = fill ? &fill->kernels[k] : NULL;
        if (d) {
            d->name = put_str(&parts->strings, name, n);
            d->num_warps = (int)warps;
            d->shared_bytes = (size_t)shared;
            d->persistent = (int)persistent;
            d->num_params = (size_t)nparams;
            d->params = parts->params;
        }
        for (uint64_t p = 0; p < nparams; p++) {
            const char *pname = rd_str(&r, &n);
            uint64_t dtype = rd(&r, 1), is_ptr = rd(&r, 1), is_const = rd(&r, 1);
            if (!r.ok || dtype > TC_DTYPE_F8E5M2 || is_ptr > 1 || is_const > 1)
                return false;
            c.nstr += n + 1;
            c.np++;
            if (d) {
                tc_param_desc *q = parts->params++;
                q->name = put_str(&parts->strings, pname, n);
                q->dtype = (tc_dtype)dtype;
                q->is_pointer = (int)is_ptr;
                q->is_const = (int)is_const;
            }
        }
        uint64_t nmaps = rd(&r, 4);
        if (!r.ok || nmaps > TC_MAX_TENSOR_MAPS)
            return false;
        if (d) {
            d->num_tensor_maps = (size_t)nmaps;
            d->tensor_maps = nmaps ? parts->maps : NULL;
        }
        for (uint64_t i = 0; i < nmaps; i++) {
            tc_tensor_map_desc m;
            if (!decode_map(&r, &m))
                return false;
            c.nm++;
            if (d)
                *parts->maps++ = m;
        }
    }
    if (r.p != r.end)
        return false; /* trailing bytes */
    c.nk = (size_t)nk;
    *out = c;
    return true;
}

bool rt_meta_decode(const uint8_t *data, size_t len, RtMeta *out) {
    memset(out, 0, sizeof *out);
    MetaCounts c;
    if (!data || !meta_parse(data, len, NULL, NULL, &c))
        return false;
    MetaParts parts;
    if (!meta_alloc(out, c.nk, c.nm, c.np, c.nstr, &parts))
        return false;
    meta_parse(data, len, out, &parts, &c);
    char why[160];
    for (size_t k = 0; k < out->num_kernels; k++)
        for (size_t i = 0; i < out->kernels[k].num_tensor_maps; i++)
            if (!rt_tensor_map_check(&out->kernels[k], &out->kernels[k].tensor_maps[i], why, sizeof why)) {
                rt_meta_free(out);
                return false;
            }
    return true;
}

/* ---- from the compiler ---- */

tc_status rt_meta_from_binary(const tc_binary *bin, RtMeta *out) {
    memset(out, 0, sizeof *out);
    size_t nk = tc_binary_kernel_count(bin), np = 0, nm = 0;
    for (size_t k = 0; k < nk; k++) {
        np += tc_binary_kernel_num_params(bin, k);
        nm += tc_binary_kernel_num_tensor_maps(bin, k);
    }
    tc_kernel_desc *descs = calloc(nk ? nk : 1, sizeof *descs);
    tc_param_desc *params = calloc(np ? np : 1, sizeof *params);
    tc_tensor_map_desc *maps = calloc(nm ? nm : 1, sizeof *maps);
    tc_status st = TC_OK;
    if (!descs || !params || !maps) {
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory reading kernel metadata");
    } else {
        size_t p = 0, m = 0;
        for (size_t k = 0; k < nk; k++) {
            descs[k].name = tc_binary_kernel_name(bin, k);
            descs[k].num_warps = tc_binary_kernel_num_warps(bin, k);
            descs[k].shared_bytes = (size_t)tc_binary_kernel_shared_bytes(bin, k);
            descs[k].persistent = tc_binary_kernel_persistent(bin, k);
            descs[k].num_params = tc_binary_kernel_num_params(bin, k);
            descs[k].params = &params[p];
            for (size_t i = 0; i < descs[k].num_params; i++, p++)
                tc_binary_kernel_param(bin, k, i, &params[p]);
            descs[k].num_tensor_maps = tc_binary_kernel_num_tensor_maps(bin, k);
            descs[k].tensor_maps = &maps[m];
            for (size_t i = 0; i < descs[k].num_tensor_maps; i++, m++)
                tc_binary_kernel_tensor_map(bin, k, i, &maps[m]);
        }
        st = rt_meta_copy(descs, nk, out);
    }
    free(descs);
    free(params);
    free(maps);
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

/* One compile of the request to `emit`, its text into *text and the
 * kernels' metadata into *meta. */
static tc_status compile_text(const RtCompileRequest *req, tc_emit emit, RtBytes *text, RtMeta *meta,
                              tc_diagnostics *diags) {
    memset(meta, 0, sizeof *meta);
    SpecializeBridge bridge = {req, false, false};
    tc_binary *bin;
    tc_status st = compile_request(req, emit, req->specialize ? &bridge : NULL, &bin, diags);
    if (st != TC_OK || bridge.stopped) {
        tc_binary_destroy(bin);
        return st;
    }
    size_t len;
    const char *out = tc_binary_text(bin, &len);
    if (!rt_bytes_append(text, out, len)) {
        tc_binary_destroy(bin);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory copying the compiled text");
    }
    st = rt_meta_from_binary(bin, meta);
    tc_binary_destroy(bin);
    return st;
}

tc_status rt_compile_ptx(void *user, const RtCompileRequest *req, RtBytes *ptx, RtMeta *meta, tc_diagnostics *diags) {
    (void)user;
    return compile_text(req, TC_EMIT_PTX, ptx, meta, diags);
}

tc_status rt_compile_ir(void *user, const RtCompileRequest *req, RtBytes *ir, RtMeta *meta, tc_diagnostics *diags) {
    (void)user;
    tc_options opt = *req->options;
    opt.line_info = 1; /* loc(...) on every op: the interpreter's messages name .tile lines */
    RtCompileRequest with_locs = *req;
    with_locs.options = &opt;
    return compile_text(&with_locs, TC_EMIT_IR, ir, meta, diags);
}
