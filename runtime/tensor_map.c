/*
 * tensor_map.c — the TMA tensor maps a launch builds (tc_tensor_map_desc in
 * include/tilec/runtime.h has the rules).
 *
 * A kernel whose global loads the compiler turned into TMA copies takes, after
 * its runtime parameters, one CUtensorMap per tensor it copies from. The map
 * holds the tensor's address, extents and strides, which are launch
 * arguments, so it is encoded at every launch: rt_tensor_map_args turns the
 * description and the arguments into the driver's parameters (the checks
 * included), rt_tensor_map_encode calls cuTensorMapEncodeTiled into a slot
 * on the launch's stack. Encoding is host work only: no allocation, no lock,
 * no context call, except the first time a context needs its zero buffer.
 */
#include "runtime/runtime.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The largest extent a launch passes. TMA coordinates are signed 32-bit, so
 * no copy reaches an element at 2^31 or beyond and a larger extent changes
 * nothing; and a map with an extent of 2^32, which cuTensorMapEncodeTiled
 * accepts, faults the copy on the H200 (CUDA_ERROR_ILLEGAL_INSTRUCTION,
 * driver 580). */
#define MAX_EXTENT ((uint64_t)1 << 31)
#define MAX_STRIDE ((int64_t)1 << 40)  /* bytes */

/* The value of integer parameter p (i8 .. i64: rt_tensor_map_check). */
static int64_t int_arg(const tc_kernel_desc *d, void *const *args, int p) {
    switch (d->params[p].dtype) {
    case TC_DTYPE_I8: return *(const int8_t *)args[p];
    case TC_DTYPE_I16: return *(const int16_t *)args[p];
    case TC_DTYPE_I32: return *(const int32_t *)args[p];
    default: return *(const int64_t *)args[p];
    }
}

/* The stride of dimension dim in bytes, checked: tc_launch's error when the
 * kernel was not specialized for it. */
static tc_status stride_bytes(const tc_kernel_desc *d, size_t i, int dim, void *const *args, uint64_t *out) {
    const tc_tensor_map_desc *m = &d->tensor_maps[i];
    int p = m->stride_param[dim];
    int64_t k = p < 0 || m->stride[dim] == 0 ? 1 : m->stride[dim]; /* the parameter's multiplier */
    int64_t s = p < 0 ? m->stride[dim] : int_arg(d, args, p);
    tc_dtype t = d->params[m->base].dtype;
    int64_t eb = (int64_t)rt_dtype_size(t);
    const char *rule = NULL;
    if (s < 0)
        rule = "is negative";
    else if (s >= MAX_STRIDE / eb / k)
        rule = "is 2^40 bytes or more, more than a tensor map addresses";
    else
        s *= k;
    if (!rule && s * eb % 16)
        rule = "is not a multiple of 16 bytes";
    if (!rule) {
        *out = (uint64_t)(s * eb);
        return TC_OK;
    }
    char what[160];
    if (p < 0)
        snprintf(what, sizeof what, "the constant %lld", (long long)s);
    else if (k > 1)
        snprintf(what, sizeof what, "%lld x argument %d (%s) = %lld", (long long)k, p, d->params[p].name,
                 (long long)int_arg(d, args, p));
    else
        snprintf(what, sizeof what, "argument %d (%s) = %lld", p, d->params[p].name, (long long)s);
    return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                   "tc_launch: kernel %s: tensor map %zu over argument %d (%s): the stride of dimension %d, %s "
                   "elements of %s, %s: the kernel was specialized for 16-byte aligned strides below 2^40 bytes "
                   "(tc_jit with these arguments gives a kernel for them)",
                   d->name, i, m->base, d->params[m->base].name, dim, what, rt_dtype_name(t), rule);
}

tc_status rt_tensor_map_args(const tc_kernel_desc *d, size_t i, void *const *args, RtTensorMapArgs *out) {
    const tc_tensor_map_desc *m = &d->tensor_maps[i];
    out->dtype = rt_tensor_map_dtype(d->params[m->base].dtype);
    out->rank = (uint32_t)m->rank;
    out->swizzle = rt_tensor_map_swizzle(m->swizzle);
    out->zero = false;
    for (int k = 0; k < m->rank; k++) {
        out->box[k] = m->box[k];
        int64_t e = m->dim_param[k] < 0 ? (m->dim[k] ? m->dim[k] : (int64_t)MAX_EXTENT)
                                        : int_arg(d, args, m->dim_param[k]);
        out->zero |= e <= 0;
        out->dim[k] = e <= 0 ? 1 : (uint64_t)e > MAX_EXTENT ? MAX_EXTENT : (uint64_t)e;
    }
    if (out->zero) { /* the kernel masks every element: a map of zeros, whatever the base and strides */
        out->address = 0;
        for (int k = 0; k < m->rank; k++) {
            out->dim[k] = 1;
            if (k > 0)
                out->stride[k - 1] = 16;
        }
        return TC_OK;
    }
    out->address = *(const CUdeviceptr *)args[m->base];
    if (out->address % 16)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_launch: kernel %s: tensor map %zu: pointer argument %d (%s) = 0x%llx is not 16-byte "
                       "aligned: the kernel was specialized for 16-byte aligned pointers (tc_jit with these arguments "
                       "gives a kernel for them)",
                       d->name, i, m->base, d->params[m->base].name, (unsigned long long)out->address);
    for (int k = 1; k < m->rank; k++) {
        tc_status st = stride_bytes(d, i, k, args, &out->stride[k - 1]);
        if (st != TC_OK)
            return st;
    }
    return TC_OK;
}

/* "{a, b, c}" of n values into buf. */
static const char *list_u64(char *buf, size_t cap, const uint64_t *v, uint32_t n) {
    size_t len = (size_t)snprintf(buf, cap, "{");
    for (uint32_t k = 0; k < n && len < cap; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%llu", k ? ", " : "", (unsigned long long)v[k]);
    if (len < cap)
        snprintf(buf + len, cap - len, "}");
    return buf;
}

tc_status rt_tensor_map_encode(const tc_kernel *k, size_t i, void *const *args, RtTensorMapSlot *slot) {
    RtTensorMapArgs a;
    tc_status st = rt_tensor_map_args(k->desc, i, args, &a);
    if (st != TC_OK)
        return st;
    if (a.zero) {
        if (!k->module)
            return rt_fail(TC_ERROR_INTERNAL, "tc_launch: kernel %s belongs to no context", k->name);
        if ((st = rt_context_zero_buffer(k->module->ctx, &a.address)) != TC_OK)
            return st;
    }
    static const uint32_t ones[TC_MAX_TENSOR_MAP_RANK] = {1, 1, 1, 1, 1};
    RtCuResult r = k->encode(slot->bytes, a.dtype, a.rank, (void *)(uintptr_t)a.address, a.dim, a.stride, a.box, ones,
                             RT_CU_TENSOR_MAP_INTERLEAVE_NONE, a.swizzle, RT_CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                             RT_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r == RT_CUDA_SUCCESS)
        return TC_OK;
    uint64_t box[TC_MAX_TENSOR_MAP_RANK];
    for (uint32_t d = 0; d < a.rank; d++)
        box[d] = a.box[d];
    char dims[128], strides[128], boxes[64], what[600];
    const tc_tensor_map_desc *m = &k->desc->tensor_maps[i];
    snprintf(what, sizeof what,
             "cuTensorMapEncodeTiled (kernel %s, tensor map %zu over argument %d (%s): data type %d, rank %u, "
             "address 0x%llx%s, dims %s, strides %s bytes, box %s, swizzle %d bytes)",
             k->name, i, m->base, k->desc->params[m->base].name, a.dtype, a.rank, (unsigned long long)a.address,
             a.zero ? " (the zero buffer: every element is masked)" : "", list_u64(dims, sizeof dims, a.dim, a.rank),
             list_u64(strides, sizeof strides, a.stride, a.rank - 1), list_u64(boxes, sizeof boxes, box, a.rank),
             m->swizzle);
    return rt_cuda_check(r, what);
}

tc_status rt_context_zero_buffer(tc_context *ctx, CUdeviceptr *out) {
    *out = atomic_load_explicit(&ctx->zero_buf, memory_order_acquire);
    if (*out)
        return TC_OK;
    tc_status st = TC_OK;
    pthread_mutex_lock(&ctx->lock);
    *out = atomic_load_explicit(&ctx->zero_buf, memory_order_relaxed);
    if (!*out && (st = rt_ctx_push(ctx)) == TC_OK) {
        CUdeviceptr p = 0;
        st = rt_cuda_check(rt_cu.cuMemAlloc(&p, 16), "cuMemAlloc (the tensor maps' zero buffer)");
        if (st == TC_OK)
            st = rt_cuda_check(rt_cu.cuMemsetD8(p, 0, 16), "cuMemsetD8 (the tensor maps' zero buffer)");
        /* the memset runs on the legacy stream, which a non-blocking stream does not wait for */
        if (st == TC_OK)
            st = rt_cuda_check(rt_cu.cuStreamSynchronize(NULL), "cuStreamSynchronize (the tensor maps' zero buffer)");
        if (st == TC_OK) {
            atomic_store_explicit(&ctx->zero_buf, p, memory_order_release);
            *out = p;
        } else if (p) {
            rt_cu.cuMemFree(p);
        }
        rt_ctx_pop(ctx);
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}
