/*
 * runtime.h — loading and launching tilec kernels through the CUDA Driver API,
 * and compiling them at run time with a disk cache (JIT).
 *
 *     tc_context *ctx;
 *     if (tc_context_create(0, &ctx) != TC_OK)          // device 0's primary context
 *         fprintf(stderr, "%s\n", tc_last_error());     // e.g. no driver on this machine
 *
 *     tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
 *     tc_jit_request req;
 *     tc_jit_request_init(&req);
 *     req.path = "softmax.tile";                        // or req.source = text
 *     req.kernel = "softmax_fwd";
 *     req.constexprs = cx;
 *     req.num_constexprs = 1;
 *     tc_kernel *k;
 *     tc_status st = tc_jit(ctx, &req, &k);             // compiled once, then cached
 *
 *     void *args[] = {&out, &x, &stride_out, &stride_x, &n_cols};
 *     st = tc_launch(k, (tc_dim3){rows, 1, 1}, stream, args, 5);
 *
 * libcuda is opened with dlopen on first use, so a program linked with tilec
 * runs on a machine without a GPU: tc_context_create then returns
 * TC_ERROR_NO_DRIVER. Every function returns a tc_status (or is an accessor
 * that cannot fail) and never exits or aborts; tc_last_error() (tilec.h)
 * gives the details of the last failure on the calling thread.
 *
 * Threads: what may be shared.
 *  - tc_context: by any number of threads. tc_jit, the standard library's
 *    calls, module loads and unloads, launches, memory and stream calls may
 *    run at once on one context; its compiles are serialized (one JIT lock
 *    per context: two threads asking for the same kernel compile it once),
 *    while different contexts compile in parallel. tc_context_destroy is the
 *    last call on a context, made once no other thread uses it or anything
 *    loaded into it.
 *  - tc_module: from any thread; tc_module_get_kernel may run at once with
 *    launches. tc_module_unload must not race with any use of the module or
 *    of its kernels.
 *  - tc_kernel: not changed after it is made; tc_launch may run on one kernel
 *    from many threads at once. tc_launch is lock-free and makes no context
 *    calls when the kernel's context is current on the calling thread
 *    (tc_context_create makes it current on the creating thread; call
 *    tc_context_make_current on others); when it is not, tc_launch notices
 *    the driver's complaint and launches again with the context pushed.
 *  - tc_timer: one thread at a time (its start, stop and elapsed calls must
 *    not race with each other).
 *  - tc_jit_request, tc_kernel_desc and every other input: only read, and
 *    not kept after the call returns.
 *  - The log callback: see tc_context_set_log.
 */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include "tilec/tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA driver types tilec's API uses, declared exactly as cuda.h
 * declares them, so that this header and cuda.h can be included together in
 * either order. */
typedef int CUdevice;
#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long CUdeviceptr;
#else
typedef unsigned int CUdeviceptr;
#endif
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

/* A grid (programs along x, y, z) or a block (threads). */
typedef struct tc_dim3 {
    unsigned int x, y, z;
} tc_dim3;

/* Limits checked before the driver is called (TC_ERROR_INVALID_ARGUMENT):
 * CUDA's grid and block extents, and what a kernel description may claim. */
#define TC_MAX_GRID_X 0x7fffffffu      /* grid.x <= 2^31 - 1 */
#define TC_MAX_GRID_YZ 65535u          /* grid.y, grid.z */
#define TC_MAX_BLOCK_THREADS 1024u     /* block.x * block.y * block.z (tc_launch_raw) */
#define TC_MAX_SHARED_BYTES 0x7fffffff /* tc_kernel_desc.shared_bytes (the driver takes an int) */
#define TC_MAX_KERNEL_DESCS 65536      /* kernel descriptions per module */
#define TC_MAX_KERNEL_PARAMS 65536     /* tc_kernel_desc.num_params */
#define TC_MAX_IMAGE_BYTES ((size_t)1 << 31) /* len of a PTX or cubin image */

/* ---- kernel signatures ---- */

/* A runtime parameter of a kernel. A launch passes args[i] pointing to a
 * value of this C type: a pointer as CUdeviceptr (or a void * holding a
 * device address; never 0); i1 as uint8_t (0 or 1); i8..i64 as
 * int8_t..int64_t; f16 and bf16 as uint16_t (the bits); f32 float; f64
 * double; f8e4m3 and f8e5m2 as uint8_t (the bits). */
typedef struct tc_param_desc {
    const char *name; /* as written in the source (required; "" if unknown) */
    tc_dtype dtype;   /* the scalar type, or a pointer's element type: a tc_dtype value */
    int is_pointer;
    int is_const; /* a pointer declared `const T*` */
} tc_param_desc;

/* A TMA tensor map (CUtensorMap: 128 bytes) that the kernel takes as a
 * hidden `__grid_constant__` parameter, after its runtime parameters. The
 * caller never passes it: tc_launch builds it at each launch, with
 * cuTensorMapEncodeTiled, from the values of the runtime parameters named
 * here, so a kernel whose loads the compiler turned into TMA copies takes
 * the same arguments as before. Parameter indices are runtime parameter
 * indices; the element type is the base pointer's (f16, bf16, f32, f64, i8,
 * i16, i32, i64, f8e4m3 or f8e5m2: one-byte UINT8 to the TMA unit). At a launch:
 *  - an extent that is a constant 0 (unbounded: the kernel masks nothing
 *    along it), or a value above 2^31, becomes 2^31 (TMA coordinates are
 *    signed 32-bit, so nothing changes);
 *  - an extent <= 0 means that the kernel masks every element of the
 *    tensor: the map then covers a 16-byte zeroed buffer of the context
 *    instead, so every copy reads the zeros the masked load would give;
 *  - otherwise the base address must be 16-byte aligned and each stride in
 *    bytes (stride x element size) a multiple of 16 from 0 to 2^40 - 1: the
 *    kernel was specialized for such arguments (tc_jit's facts), so others
 *    are TC_ERROR_INVALID_ARGUMENT.
 * The map is tiled, without interleave, element strides 1, L2 promotion of
 * 128 bytes and zeros for elements out of bounds. Entries past `rank` are
 * ignored. tc_module_load_ptx and _cubin check every field against the
 * kernel's parameters (TC_ERROR_INVALID_ARGUMENT). */
#define TC_MAX_TENSOR_MAP_RANK 5
#define TC_MAX_TENSOR_MAPS 16 /* tc_kernel_desc.num_tensor_maps */
typedef struct tc_tensor_map_desc {
    int base;                                  /* the pointer parameter the tensor starts at */
    int rank;                                  /* 1..TC_MAX_TENSOR_MAP_RANK; dimension 0 is the contiguous one */
    int dim_param[TC_MAX_TENSOR_MAP_RANK];     /* the integer parameter holding dimension d's extent, or -1: dim[d] */
    int64_t dim[TC_MAX_TENSOR_MAP_RANK];       /* the extent when dim_param[d] is -1: >= 0, 0 = unbounded */
    int stride_param[TC_MAX_TENSOR_MAP_RANK];  /* d >= 1: the integer parameter the stride in elements is a
                                                  multiple of, or -1: stride[d]; [0] is unused (dimension 0 has
                                                  stride 1) */
    int64_t stride[TC_MAX_TENSOR_MAP_RANK];    /* >= 0: the stride in elements when stride_param[d] is -1, else
                                                  the multiplier of the parameter's value (0 stands for 1) */
    unsigned box[TC_MAX_TENSOR_MAP_RANK];      /* elements one copy moves along each dimension: 1..256, box[0]
                                                  x element size a multiple of 16 bytes */
    int swizzle;                               /* the shared-memory swizzle in bytes: 0, 32, 64 or 128 (then
                                                  box[0] x element size is at most that) */
} tc_tensor_map_desc;

/* What a launch needs to know about a kernel. The runtime parameters are
 * the kernel's parameters less its constexpr ones, in order; in the
 * kernel's PTX parameter list the grid of a persistent kernel follows
 * them, then the tensor maps, if any. */
typedef struct tc_kernel_desc {
    const char *name;    /* the PTX entry (required, not empty) */
    int num_warps;       /* a program runs 32 * num_warps threads, 1..TC_MAX_NUM_WARPS warps: the
                            compile's num_warps, plus its producer warps with warp specialization */
    size_t shared_bytes; /* dynamic shared memory per program, <= TC_MAX_SHARED_BYTES; with the kernel's
                            static shared memory at most what the device allows (else TC_ERROR_UNSUPPORTED) */
    size_t num_params;   /* runtime parameters, the ones a launch passes: <= TC_MAX_KERNEL_PARAMS */
    const tc_param_desc *params; /* num_params entries (NULL only when 0) */
    size_t num_tensor_maps;      /* hidden parameters after the runtime ones: <= TC_MAX_TENSOR_MAPS */
    const tc_tensor_map_desc *tensor_maps; /* num_tensor_maps entries, in parameter order (NULL only when 0) */
    int persistent; /* 1: the kernel takes the launch's grid as three hidden i32 parameters (x, y, z)
                       after its runtime parameters and before its tensor maps, and loops over the
                       grid's programs itself: tc_launch starts min(grid.x * grid.y * grid.z,
                       programs resident at once on the device) programs along x (each SM's
                       resident count from cuOccupancyMaxActiveBlocksPerMultiprocessor for the
                       kernel's block and dynamic shared memory). grid.x * grid.y * grid.z must
                       then be at most 2^31 - 1 (TC_ERROR_INVALID_ARGUMENT). 0: one program per
                       grid point, as CUDA launches it. Any other value is
                       TC_ERROR_INVALID_ARGUMENT at load. */
} tc_kernel_desc;

/* Bytes of a launch argument for this parameter (8 for pointers). */
TC_API size_t tc_param_size(const tc_param_desc *param);

/* ---- the driver ---- */

/* libcuda's version (e.g. 13000 for CUDA 13.0) and the number of GPUs. Both
 * load the driver if needed: TC_ERROR_NO_DRIVER without one. */
TC_API tc_status tc_driver_version(int *version);
TC_API tc_status tc_device_count(int *count);

/* ---- contexts ---- */

typedef struct tc_context tc_context;

/* Retains `device`'s primary context (the one the CUDA runtime API uses) and
 * makes it current on the calling thread. */
TC_API tc_status tc_context_create(int device, tc_context **out);
/* Wraps a context the caller owns (NULL: the one current on this thread);
 * the caller keeps it alive until tc_context_destroy. */
TC_API tc_status tc_context_create_from(CUcontext cu, tc_context **out);
/* Unloads every module loaded into ctx (JIT kernels included) and releases
 * the primary context if tc_context_create retained it. NULL is a no-op. */
TC_API tc_status tc_context_destroy(tc_context *ctx);
TC_API tc_status tc_context_make_current(tc_context *ctx);
TC_API CUcontext tc_context_cuda(const tc_context *ctx);
TC_API CUdevice tc_context_device(const tc_context *ctx);
/* Compute capability as major * 10 + minor: 80, 86, 90, 100, ... */
TC_API int tc_context_compute_capability(const tc_context *ctx);
/* The target tc_jit compiles for on this device: "sm_80", "sm_90a", ... */
TC_API const char *tc_context_arch(const tc_context *ctx);
/* The device's multiprocessors (SMs): 132 on an H100 SXM or an H200. */
TC_API int tc_context_multiprocessors(const tc_context *ctx);
/* 1 when the context's device is the interpreter's (TILEC_INTERPRET=1 in
 * the environment when the process first used the driver; include/tilec/
 * interp.h): a device of compute capability 9.0 and 132 multiprocessors,
 * so that plans are the GPU's, whose kernels run on the host from their IR
 * (no tensor maps, no persistent programs, no shared memory). 0 otherwise. */
TC_API int tc_context_interpreted(const tc_context *ctx);

/* Where the JIT reports what it does, one line per event: every compile
 * ("tilec: compiled softmax_fwd (key 3fa4...) in 12.3 ms"), every rejected
 * cache entry, every cache hit. Without a callback, compiles and rejections
 * go to stderr when the environment has TILEC_LOG=1, hits too with
 * TILEC_LOG=2; otherwise nothing is printed.
 *
 * The callback runs on the thread whose tc_jit (or standard-library call)
 * produced the lines, after that call has released every lock of the
 * context, and before it returns: it may call any tilec function, including
 * tc_context_set_log and tc_jit on the same context. Calls from several
 * threads may run it at the same time: it must be thread-safe if the context
 * is shared. Setting a callback takes effect for the lines of calls that
 * finish after it; fn NULL restores the default. */
typedef void (*tc_log_fn)(void *user, const char *line);
TC_API tc_status tc_context_set_log(tc_context *ctx, tc_log_fn fn, void *user);

/* ---- modules and kernels ---- */

typedef struct tc_module tc_module;
typedef struct tc_kernel tc_kernel;

/* Loads a compiled binary (tc_compile with emit = PTX): its PTX, and a
 * tc_kernel for each of its kernels with the metadata tc_launch checks. The
 * driver's JIT log of a failed load is in tc_last_error(). The load (this
 * one and tc_module_load_ptx's and _cubin's) counts the programs of each
 * persistent kernel that the device holds at once; a kernel of which no
 * program fits on a multiprocessor is TC_ERROR_UNSUPPORTED. */
TC_API tc_status tc_module_load(tc_context *ctx, const tc_binary *bin, tc_module **out);
/* Raw PTX (need not be NUL-terminated) or a cubin of len bytes (1 ..
 * TC_MAX_IMAGE_BYTES). `kernels` (num_kernels <= TC_MAX_KERNEL_DESCS
 * entries, each checked as tc_kernel_desc says) describes the entries for
 * tc_launch; with NULL, tc_module_get_kernel still finds any entry but only
 * tc_launch_raw can launch it. */
TC_API tc_status tc_module_load_ptx(tc_context *ctx, const char *ptx, size_t len, const tc_kernel_desc *kernels,
                                    size_t num_kernels, tc_module **out);
TC_API tc_status tc_module_load_cubin(tc_context *ctx, const void *cubin, size_t len, const tc_kernel_desc *kernels,
                                      size_t num_kernels, tc_module **out);
/* Unloads the module; its kernels become invalid. NULL is a no-op. */
TC_API tc_status tc_module_unload(tc_module *mod);
TC_API tc_status tc_module_get_kernel(tc_module *mod, const char *name, tc_kernel **out);

/* The kernel's metadata (NULL for an entry loaded without one), and its
 * driver handle. */
TC_API const tc_kernel_desc *tc_kernel_get_desc(const tc_kernel *k);
TC_API CUfunction tc_kernel_function(const tc_kernel *k);

/* What the driver made of a loaded kernel, as Triton's n_regs and
 * n_spills: the first things to look at when a kernel is slower than its
 * bytes or FLOPs say. On the interpreter every field is 0 but
 * programs_per_sm (1). */
typedef struct tc_kernel_info {
    int registers;           /* per thread */
    int local_bytes;         /* per thread, in local memory: spilled registers and arrays (0: none) */
    int static_shared_bytes; /* per program, besides the kernel's dynamic shared memory */
    int max_threads;         /* per program, the most the driver would launch it with */
    int programs_per_sm;     /* programs of 32 * num_warps threads with the dynamic shared memory that
                                one multiprocessor holds at once (the occupancy) */
} tc_kernel_info;
TC_API tc_status tc_kernel_get_info(const tc_kernel *k, tc_kernel_info *out);

/* Launches `grid` programs of k on `stream`: 32 * num_warps threads each,
 * with the kernel's dynamic shared memory. args[i] points to the value of
 * runtime parameter i (see tc_param_desc); num_args must equal the kernel's
 * parameter count, no pointer argument may be 0, and the grid must be within
 * TC_MAX_GRID_X x TC_MAX_GRID_YZ x TC_MAX_GRID_YZ (all
 * TC_ERROR_INVALID_ARGUMENT, checked before the driver is called). An empty
 * grid (a zero extent) launches nothing and returns TC_OK. A persistent
 * kernel (tc_kernel_desc.persistent) gets the grid after the arguments, as
 * three int32 values, and runs in as many programs as the device holds at
 * once, each looping over its share of the grid: the same grid, the same
 * results; its grid must also have at most 2^31 - 1 programs in all. A
 * kernel with tensor maps gets them built from the arguments and passed
 * after them (after the grid of a persistent kernel; tc_tensor_map_desc has
 * the rules); a driver without cuTensorMapEncodeTiled makes its launches
 * TC_ERROR_UNSUPPORTED, and a map the driver refuses is TC_ERROR_CUDA with
 * the map's parameters. */
TC_API tc_status tc_launch(tc_kernel *k, tc_dim3 grid, CUstream stream, void **args, size_t num_args);
/* For entries without metadata: no checks of the arguments; the grid as for
 * tc_launch, and a block of 1 to TC_MAX_BLOCK_THREADS threads. */
TC_API tc_status tc_launch_raw(tc_kernel *k, tc_dim3 grid, tc_dim3 block, unsigned int shared_bytes, CUstream stream,
                               void **args);

/* ---- JIT ---- */

/* What tc_jit compiles: a kernel of a source file or string, specialized
 * with constexpr values and, optionally, with what is known about the
 * alignment of its arguments. */
typedef struct tc_jit_request {
    const char *source; /* the source text; NULL: read the file `path` */
    size_t source_len;  /* bytes of source; 0: strlen(source) */
    const char *path;   /* the .tile file (when source is NULL), or the name diagnostics and line info show */
    const char *kernel; /* the kernel to compile (required) */
    const tc_constexpr *constexprs; /* checked as by tc_compile */
    size_t num_constexprs;
    const tc_options *options; /* NULL: defaults; emit and the print options are ignored, the rest
                                  is checked as by tc_compile */
    const char *arch;          /* NULL: the context's (tc_context_arch) */
    /* Alignment specialization, per runtime parameter in order: a number
     * known to divide parameter i (a pointer's address in bytes, an
     * integer's value), 0 or 1 if nothing is known; never negative. tilec specializes on
     * divisibility by 16 (as Triton does) and ignores other types. NULL:
     * nothing known. */
    const int64_t *divisibility;
    size_t num_divisibility;
    /* Alternatively the launch's actual arguments (as for tc_launch): each
     * pointer is checked for 16-byte alignment and each integer for
     * divisibility by 16. Ignored when divisibility is given. */
    void **args;
    size_t num_args;
    tc_diagnostics *diags; /* compile errors are rendered here as well (may be NULL) */
    int no_disk_cache;     /* compile and keep in memory only */
} tc_jit_request;

TC_API void tc_jit_request_init(tc_jit_request *req);

/* Returns the kernel, compiled if needed. Each specialization is compiled
 * once per process (an in-memory table in ctx) and once per machine: the PTX
 * and the driver's cubin are kept under $TILEC_CACHE_DIR (default
 * $XDG_CACHE_HOME/tilec, else ~/.cache/tilec), keyed by a SHA-256 of
 * everything that affects the code, so a warm start loads the cubin and
 * compiles nothing. A file source is read at every call (an edit is seen).
 * A call that finds its kernel in memory costs a hash of the source (a few
 * microseconds): keep the tc_kernel for hot loops. Compile errors:
 * TC_ERROR_COMPILE with the diagnostics in req->diags and tc_last_error().
 * Line info (tc_options.line_info, or every compile when the environment
 * has TILEC_LINE_INFO=1 as the context is created; 0 or unset leaves the
 * request's, other values make tc_context_create fail): the PTX maps each
 * instruction to its line of req->path (the name given, or "<string>"), the
 * driver keeps that in the cubin (CU_JIT_GENERATE_LINE_INFO), and
 * compute-sanitizer and Nsight Compute report .tile lines; such kernels are
 * cached apart from the others.
 * The kernel belongs to ctx and lives until tc_context_destroy. Thread-safe:
 * calls on one context are serialized, so a kernel is compiled once. */
TC_API tc_status tc_jit(tc_context *ctx, const tc_jit_request *req, tc_kernel **out);

/* ---- autotuning (docs/autotune.md) ----
 *
 * tc_autotune times the configurations of a kernel's @autotune space
 * (tilec.h: tc_tune_space_create) for the request's key values and keeps
 * the fastest in the tuning table: in memory, and in the file tuning.tsv
 * of the JIT's cache directory (trusted as the cache is), keyed by the
 * device's name, the compiler's build, the kernel (a SHA-256 of its source,
 * name, fixed constexprs, options and target) and the key values, each
 * rounded up to a power of two. A later call with the same key finds it
 * there and times nothing.
 *
 * The cost model: every timed configuration is also kept (the table's time
 * entries). With top_k > 0, once configurations of the same kernel have
 * been timed for at least two other key values, a gradient-boosted tree
 * model fitted to those measurements (in C, at the call: milliseconds)
 * ranks the space and only its top_k best are timed. */

/* The grid of a launch of one configuration: cx holds the request's
 * constexprs and then the configuration's. */
typedef tc_dim3 (*tc_tune_grid_fn)(void *user, const tc_constexpr *cx, size_t num_cx);

typedef struct tc_autotune_request {
    const tc_jit_request *jit; /* the kernel, its fixed constexprs and options, and (required) the launch's
                                  args, with which every configuration is timed */
    tc_tune_grid_fn grid;      /* required */
    void *grid_user;
    void (*reset)(void *user, CUstream stream); /* called before each timed launch (outputs a kernel
                                                   accumulates into), or NULL */
    void *reset_user;
    int top_k;   /* 0: time every configuration; > 0: the cost model's top_k (every one while it has too
                    little data) */
    int reps;    /* timed launches per configuration, of which the median counts; 0: 10 */
    int force;   /* 1: tune even when the table has an entry */
    int no_disk; /* 1: neither read nor write the table's file */
    int dry_run; /* 1: time and choose, but add nothing to the table (to evaluate the cost model) */
    int warm_l2; /* 0: before each timed launch the GPU's L2 cache is filled with other data (twice its size
                    written), as Triton's do_bench does, so that every launch starts from a cold cache;
                    1: each launch finds the cache as the one before left it */
    double *config_ms;  /* optional: one entry per configuration of the space, set to its median time in
                           milliseconds, or to INFINITY when it was not timed or did not run */
    size_t num_derived; /* the last num_derived of jit->constexprs follow from the configuration and the
                           arguments (EVEN_K for K % BK == 0, say; the caller makes sure they hold for
                           every configuration): every compile gets them, the table's key leaves them out */
} tc_autotune_request;

typedef struct tc_autotune_result {
    size_t config;    /* the chosen configuration's index in the space */
    double ms;        /* its median time (the table's, when from_table) */
    int from_table;   /* 1: the table had this key; nothing was timed */
    int used_model;   /* 1: the cost model chose what was timed */
    size_t timed;     /* configurations timed */
    size_t failed;    /* configurations that did not compile, load or launch (skipped) */
    double tuning_ms; /* the call's wall time */
} tc_autotune_result;

/* Tunes (or looks up) req's kernel and returns the chosen configuration in
 * out and, when kernel is not NULL, its compiled kernel. The space must be
 * the kernel's for the request's constexprs and hold at least one
 * configuration. TC_ERROR_UNSUPPORTED when no configuration compiles and
 * runs; a configuration whose launch fails the context (a fault) ends the
 * call with TC_ERROR_CUDA. Calls on one context are not meant to run at
 * once (each times its launches alone on the GPU); the table is shared and
 * locked. */
TC_API tc_status tc_autotune(tc_context *ctx, CUstream stream, const tc_autotune_request *req,
                             const tc_tune_space *space, tc_autotune_result *out, tc_kernel **kernel);
/* The table's configuration for req (its args give the key values): *found
 * 1 and *config its index, or *found 0. Times nothing. */
TC_API tc_status tc_autotune_lookup(tc_context *ctx, const tc_jit_request *req, const tc_tune_space *space,
                                    int *found, size_t *config);
/* The device's name as the driver gives it ("NVIDIA H200"; the
 * interpreter's is "tilec interpreter"): the tuning table's GPU column. */
TC_API const char *tc_context_device_name(const tc_context *ctx);

/* ---- device memory, streams and timing (for examples, tests, benchmarks) ---- */

TC_API tc_status tc_mem_alloc(tc_context *ctx, size_t bytes, CUdeviceptr *out);
TC_API tc_status tc_mem_free(tc_context *ctx, CUdeviceptr ptr);
TC_API tc_status tc_memcpy_htod(tc_context *ctx, CUdeviceptr dst, const void *src, size_t bytes);
TC_API tc_status tc_memcpy_dtoh(tc_context *ctx, void *dst, CUdeviceptr src, size_t bytes);
TC_API tc_status tc_memset_d8(tc_context *ctx, CUdeviceptr dst, unsigned char value, size_t bytes);
/* tc_memset_d8 queued on stream, in order with its kernels (NULL: the legacy default stream); returns
 * before it runs */
TC_API tc_status tc_memset_d8_async(tc_context *ctx, CUstream stream, CUdeviceptr dst, unsigned char value,
                                    size_t bytes);
TC_API tc_status tc_stream_create(tc_context *ctx, CUstream *out);
TC_API tc_status tc_stream_destroy(tc_context *ctx, CUstream stream);
TC_API tc_status tc_stream_synchronize(tc_context *ctx, CUstream stream);

/* Milliseconds between two points of a stream, measured with CUDA events. */
typedef struct tc_timer tc_timer;
TC_API tc_status tc_timer_create(tc_context *ctx, tc_timer **out);
TC_API tc_status tc_timer_start(tc_timer *t, CUstream stream);
TC_API tc_status tc_timer_stop(tc_timer *t, CUstream stream);
TC_API tc_status tc_timer_elapsed_ms(tc_timer *t, float *ms); /* waits for the stop event */
TC_API tc_status tc_timer_destroy(tc_timer *t);

#ifdef __cplusplus
}
#endif

#endif
