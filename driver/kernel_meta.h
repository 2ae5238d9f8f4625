/*
 * kernel_meta.h — kernel metadata (RtMeta: what a launch must know about each
 * kernel), its serialized form, and the bridge to tc_compile that the JIT
 * and the AOT generator share (kernel_meta.c). Everything here uses the
 * compiler through the public API only (tilec.h); it is the part of the
 * driver the runtime may include (docs/design.md, "Layers").
 */
#ifndef TILEC_DRIVER_KERNEL_META_H
#define TILEC_DRIVER_KERNEL_META_H

#include "base/base.h"
#include "tilec/runtime.h"

typedef struct RtMeta RtMeta;
typedef struct RtCompileRequest RtCompileRequest;


/* Kernel descriptions with their own storage. */
struct RtMeta {
    size_t num_kernels;
    tc_kernel_desc *kernels; /* descs, tensor maps, params and names all in one block */
};

tc_status rt_meta_copy(const tc_kernel_desc *kernels, size_t num_kernels, RtMeta *out);
void rt_meta_free(RtMeta *m);
const tc_kernel_desc *rt_meta_find(const RtMeta *m, const char *name);
bool rt_meta_encode(const RtMeta *m, RtBytes *out);
/* Validates everything (lengths, enum values, counts): false on bad input. */
bool rt_meta_decode(const uint8_t *data, size_t len, RtMeta *out);

/* The runtime signature of `kernel` (every kernel when NULL) specialized
 * with the constexpr values (type parameters decide parameter types), with
 * num_warps and no shared memory: what the front end knows before any pass
 * runs (a TC_EMIT_SIGNATURE compile). Errors in the source:
 * TC_ERROR_COMPILE, rendered into diags; a kernel the source lacks:
 * TC_ERROR_INVALID_ARGUMENT. */
tc_status rt_signature(const tc_source *src, const char *kernel, const tc_constexpr *constexprs, size_t num_constexprs,
                       int num_warps, RtMeta *out, tc_diagnostics *diags);
/* ---- tensor maps (tc_tensor_map_desc) ---- */

/* The values of cuda.h's enums that a launch passes to
 * cuTensorMapEncodeTiled (the runtime and the AOT launchers include no
 * cuda.h; test_runtime checks these against it where it is installed). */
enum {
    RT_CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    RT_CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    RT_CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    RT_CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
    RT_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    RT_CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    RT_CU_TENSOR_MAP_SWIZZLE_NONE = 0,
    RT_CU_TENSOR_MAP_SWIZZLE_32B = 1,
    RT_CU_TENSOR_MAP_SWIZZLE_64B = 2,
    RT_CU_TENSOR_MAP_SWIZZLE_128B = 3,
    RT_CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    RT_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
};
/* The CUtensorMapDataType of an element type, or -1 (i1 has none). */
int rt_tensor_map_dtype(tc_dtype t);
/* The CUtensorMapSwizzle of a swizzle width in bytes (0, 32, 64, 128). */
int rt_tensor_map_swizzle(int bytes);
/* Whether map m can be built at a launch of kernel d from its runtime
 * parameters: every rule of tc_tensor_map_desc that does not depend on the
 * arguments' values. If not, false with the field and the rule in why. */
bool rt_tensor_map_check(const tc_kernel_desc *d, const tc_tensor_map_desc *m, char *why, size_t cap);

/* Bytes of an argument of this scalar type (1 for i1). */
size_t rt_dtype_size(tc_dtype t);
const char *rt_dtype_name(tc_dtype t); /* "i32", "bf16", ... */

/* The options a JIT or AOT request compiles with: a copy of *opt (NULL:
 * tc_options_init's defaults), num_warps 0 made 4 (other values are
 * rt_check_options's to judge), and no specialize hook (the caller's is
 * ignored). */
void rt_request_options(const tc_options *opt, tc_options *out);

/* A compile's hook (tc_specialize_fn with the signature as an RtMeta):
 * called once after the front end with the signature of the kernel
 * compiled, which lives only during the call. It may point *specs at more
 * divisibility facts (valid until the compile returns) and set *stop to end
 * the compile there. */
typedef tc_status (*RtSpecializeFn)(void *user, const RtMeta *sig, const tc_param_spec **specs, size_t *num_specs,
                                    bool *stop);

/* A compile to PTX, as the JIT and the AOT generator ask for it. */
struct RtCompileRequest {
    const tc_source *source;
    const char *kernel;
    const tc_constexpr *constexprs;
    size_t num_constexprs;
    const tc_options *options; /* never NULL; emit and the hook are ignored */
    const char *arch;
    const tc_param_spec *specs; /* divisibility facts by parameter name (may be NULL) */
    size_t num_specs;
    RtSpecializeFn specialize; /* NULL: none */
    void *specialize_user;
};

/* A compile: PTX and the kernels' metadata. With req->specialize, the hook
 * runs as RtSpecializeFn says; when it stops the compile, TC_OK with ptx and
 * meta left empty (the hook knows it stopped); an error it returns is the
 * compile's, with its message. */
typedef tc_status (*RtCompileFn)(void *user, const RtCompileRequest *req, RtBytes *ptx, RtMeta *meta,
                                 tc_diagnostics *diags);
/* tc_compile with emit = PTX, and the kernel metadata of the result. */
tc_status rt_compile_ptx(void *user, const RtCompileRequest *req, RtBytes *ptx, RtMeta *meta, tc_diagnostics *diags);
/* The same compile to TC_EMIT_IR with line info (ops carry loc(...)): what
 * the interpreter runs (TILEC_INTERPRET=1, runtime/host_driver.c). */
tc_status rt_compile_ir(void *user, const RtCompileRequest *req, RtBytes *ir, RtMeta *meta, tc_diagnostics *diags);
/* The metadata a tc_binary carries, read through tilec.h's accessors. */
tc_status rt_meta_from_binary(const tc_binary *bin, RtMeta *out);

#endif
