/*
 * runtime.h — internals of the runtime (include/tilec/runtime.h is the
 * public side): the dlopen'ed driver, hashing, the disk cache, kernel
 * metadata, and the JIT's build step.
 *
 * The runtime allocates with plain malloc and checks every result (no
 * TcGuard/longjmp), except around calls into the compiler, which guard
 * themselves. Errors are reported with rt_fail(), which records the text
 * for tc_last_error() and returns the status, so that a failing path reads
 * `return rt_fail(TC_ERROR_IO, "%s: %s", path, strerror(errno));`.
 */
#ifndef TILEC_RUNTIME_INTERNAL_H
#define TILEC_RUNTIME_INTERNAL_H

#include "tilec/runtime.h"

#include "base/base.h"
#include "driver/kernel_meta.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct RtCuda RtCuda;
typedef struct RtSha256 RtSha256;
typedef struct RtCacheEntry RtCacheEntry;
typedef struct RtLogger RtLogger;
typedef struct RtJitInputs RtJitInputs;
typedef struct RtJitBuild RtJitBuild;
typedef struct RtRawKernel RtRawKernel;
typedef struct RtJitTable RtJitTable;

/* ==== error.c: the compile log (the last error and RtBytes: base/base.h) ==== */

/* Where compile events go: the callback if set, else stderr when
 * TILEC_LOG >= level (1: compiles and rejected cache entries, 2: cache hits).
 * With a queue, lines are held there instead (each as a level byte and a
 * NUL-terminated text) and delivered by rt_log_deliver once the caller has
 * released its locks: a callback then runs with no tilec lock held, so it may
 * call back into tilec (tc_context_set_log, tc_jit on the same context). */
struct RtLogger {
    tc_log_fn fn;
    void *user;
    RtBytes *queue; /* NULL: deliver at once */
};
void rt_log(const RtLogger *lg, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Does TILEC_LOG ask for lines of this level on stderr? */
bool rt_log_env_wants(int level);
/* Delivers and frees a queue's lines: to fn if set, else to stderr by TILEC_LOG. */
void rt_log_deliver(RtBytes *queue, tc_log_fn fn, void *user);

/* ==== cuda.c: libcuda through dlopen ==== */

/* The driver API as tilec calls it. CUresult and the option enums are plain
 * ints here (same ABI); nothing includes cuda.h. */
typedef int RtCuResult;
typedef struct CUlinkState_st *RtCuLinkState;

enum {
    RT_CUDA_SUCCESS = 0,
    RT_CUDA_ERROR_OUT_OF_MEMORY = 2,
    RT_CUDA_ERROR_NOT_INITIALIZED = 3,
    RT_CUDA_ERROR_STUB_LIBRARY = 34,
    RT_CUDA_ERROR_NO_DEVICE = 100,
    RT_CUDA_ERROR_INVALID_DEVICE = 101,
    RT_CUDA_ERROR_INVALID_CONTEXT = 201,
    RT_CUDA_ERROR_INVALID_HANDLE = 400,
    RT_CUDA_ERROR_NOT_FOUND = 500,
    RT_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
    RT_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,

    RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    RT_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,

    RT_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    RT_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,

    RT_CU_JIT_INFO_LOG_BUFFER = 3,
    RT_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    RT_CU_JIT_ERROR_LOG_BUFFER = 5,
    RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    RT_CU_JIT_LOG_VERBOSE = 12,
    RT_CU_JIT_GENERATE_LINE_INFO = 13,

    RT_CU_JIT_INPUT_CUBIN = 0,
    RT_CU_JIT_INPUT_PTX = 1,
};

/* Statically allocated shared memory above this needs an opt-in per function. */
#define RT_DEFAULT_MAX_SHARED (48 * 1024)

typedef RtCuResult (*RtCuLaunchKernelFn)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz, unsigned shared, CUstream stream, void **params, void **extra);
/* cuTensorMapEncodeTiled, its enums as ints (their values: driver/kernel_meta.h). */
typedef RtCuResult (*RtCuTensorMapEncodeTiledFn)(void *map, int dtype, uint32_t rank, void *address,
                                                 const uint64_t *dim, const uint64_t *strides, const uint32_t *box,
                                                 const uint32_t *element_strides, int interleave, int swizzle,
                                                 int l2_promotion, int oob_fill);

struct RtCuda {
    void *handle; /* from dlopen */
    RtCuResult (*cuInit)(unsigned flags);
    RtCuResult (*cuDriverGetVersion)(int *version);
    RtCuResult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    RtCuResult (*cuDeviceGetCount)(int *count);
    RtCuResult (*cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
    RtCuResult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    RtCuResult (*cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2 */
    RtCuResult (*cuCtxGetCurrent)(CUcontext *ctx);
    RtCuResult (*cuCtxSetCurrent)(CUcontext ctx);
    RtCuResult (*cuCtxPushCurrent)(CUcontext ctx); /* _v2 */
    RtCuResult (*cuCtxPopCurrent)(CUcontext *ctx); /* _v2 */
    RtCuResult (*cuCtxGetDevice)(CUdevice *dev);
    RtCuResult (*cuModuleLoadDataEx)(CUmodule *mod, const void *image, unsigned num_options, int *options,
                                     void **values);
    RtCuResult (*cuModuleUnload)(CUmodule mod);
    RtCuResult (*cuModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
    RtCuLaunchKernelFn cuLaunchKernel;
    RtCuResult (*cuFuncSetAttribute)(CUfunction fn, int attrib, int value);
    RtCuResult (*cuFuncGetAttribute)(int *value, int attrib, CUfunction fn);
    RtCuResult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, CUfunction fn, int block_threads,
                                                              size_t dynamic_shared);
    RtCuResult (*cuLinkCreate)(unsigned num_options, int *options, void **values, RtCuLinkState *state); /* _v2 */
    RtCuResult (*cuLinkAddData)(RtCuLinkState state, int type, void *data, size_t size, const char *name,
                                unsigned num_options, int *options, void **values); /* _v2 */
    RtCuResult (*cuLinkComplete)(RtCuLinkState state, void **cubin, size_t *size);
    RtCuResult (*cuLinkDestroy)(RtCuLinkState state);
    RtCuResult (*cuGetErrorName)(RtCuResult error, const char **name);
    RtCuResult (*cuGetErrorString)(RtCuResult error, const char **text);
    RtCuResult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);                     /* _v2 */
    RtCuResult (*cuMemFree)(CUdeviceptr ptr);                                     /* _v2 */
    RtCuResult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);   /* _v2 */
    RtCuResult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);         /* _v2 */
    RtCuResult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t bytes); /* _v2 */
    RtCuResult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream);
    RtCuResult (*cuStreamCreate)(CUstream *stream, unsigned flags);
    RtCuResult (*cuStreamDestroy)(CUstream stream); /* _v2 */
    RtCuResult (*cuStreamSynchronize)(CUstream stream);
    RtCuResult (*cuEventCreate)(CUevent *event, unsigned flags);
    RtCuResult (*cuEventRecord)(CUevent event, CUstream stream);
    RtCuResult (*cuEventSynchronize)(CUevent event);
    RtCuResult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end); /* _v2 if present */
    RtCuResult (*cuEventDestroy)(CUevent event);                             /* _v2 */
    RtCuTensorMapEncodeTiledFn cuTensorMapEncodeTiled; /* optional (CUDA 12.0): NULL when absent */
    RtCuResult (*cuDeviceGetName)(char *name, int len, CUdevice dev); /* optional: NULL when absent */
    bool host; /* the interpreter's driver (TILEC_INTERPRET=1, host_driver.c), not libcuda */
};

/* The process's driver table: valid once rt_cuda_load() returned TC_OK. */
extern RtCuda rt_cu;

/* Opens `soname` and resolves every symbol into *out (nothing else is
 * touched: tests use it with libraries that are not libcuda). A missing
 * library or symbol is TC_ERROR_NO_DRIVER with the reason in tc_last_error,
 * except for the optional ones, which stay NULL. */
tc_status rt_cuda_open(const char *soname, RtCuda *out);
void rt_cuda_close(RtCuda *cu);
/* Loads libcuda.so.1 and calls cuInit, once per process (thread-safe); later
 * calls return the first call's status and message. With TILEC_INTERPRET=1
 * in the environment the table is the host's instead (rt_host_driver);
 * another value than 0 or 1 is TC_ERROR_INVALID_ARGUMENT. */
tc_status rt_cuda_load(void);
/* ==== host_driver.c: the driver API on the host (TILEC_INTERPRET=1) ==== */

/* Fills *cu with functions that run everything on the host: one device of
 * compute capability 9.0, the host's heap as device memory, modules whose
 * images are IR text (rt_compile_ir) run by the interpreter (interp.h). */
void rt_host_driver(RtCuda *cu);

/* TC_OK for CUDA_SUCCESS; otherwise records "what: NAME (text)" and maps the
 * error to a status (NO_DEVICE, OUT_OF_MEMORY, NO_DRIVER or CUDA). */
tc_status rt_cuda_check(RtCuResult r, const char *what);

/* ==== hash.c: SHA-256 ==== */

struct RtSha256 {
    uint32_t state[8];
    uint64_t bytes;    /* total bytes hashed */
    uint8_t block[64]; /* pending input */
    size_t block_len;
};

void rt_sha256_init(RtSha256 *h);
void rt_sha256_update(RtSha256 *h, const void *data, size_t len);
void rt_sha256_final(RtSha256 *h, uint8_t digest[32]);
void rt_sha256(const void *data, size_t len, uint8_t digest[32]);
/* Hashes a tagged, length-prefixed field: fields can't run into each other. */
void rt_sha256_field(RtSha256 *h, const char *tag, const void *data, size_t len);
void rt_sha256_field_str(RtSha256 *h, const char *tag, const char *s); /* NULL hashes differently from "" */
void rt_sha256_field_i64(RtSha256 *h, const char *tag, int64_t v);
/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void rt_hex(const uint8_t *bytes, size_t n, char *out);

/* ==== cache.c: content-addressed entries on disk ==== */

typedef enum { RT_PAYLOAD_PTX = 1, RT_PAYLOAD_CUBIN = 2 } RtPayloadKind;

#define RT_CACHE_MAGIC "TILECv1" /* 8 bytes with the NUL */
#define RT_CACHE_FORMAT_VERSION 1u
#define RT_CACHE_HEADER_SIZE 96u
#define RT_CACHE_MAX_ENTRY (1u << 30) /* larger files are not tilec's */

/* A decoded entry; every pointer points into `data`. */
struct RtCacheEntry {
    RtPayloadKind kind;
    uint8_t key[32];
    const char *compiler; /* rt_compiler_id() of the writer (NUL-terminated copy) */
    const uint8_t *meta;  /* serialized kernel metadata (driver/kernel_meta.c) */
    size_t meta_len;
    const uint8_t *payload;
    size_t payload_len;
    uint8_t *data; /* malloc-owned file contents */
    size_t data_len;
};

/* The cache directory: $TILEC_CACHE_DIR, else $XDG_CACHE_HOME/tilec, else
 * $HOME/.cache/tilec, read with secure_getenv (so none of them in a setuid
 * program). TC_ERROR_IO if none can be formed. *base (may be NULL) gets the
 * length of the prefix that must exist already: the home directory for the
 * default location, which tilec never creates; 0 otherwise. */
tc_status rt_cache_dir(char *out, size_t cap, size_t *base);
/* DIR/HEX.entry for a key. */
tc_status rt_cache_path(const char *dir, const uint8_t key[32], char *out, size_t cap);
/* $TILEC_CACHE_MAX_BYTES: bytes, with an optional K, M or G suffix (powers
 * of 1024); 0 means no limit; unset or unparsable, 1 GiB. */
uint64_t rt_cache_max_bytes(void);
/* Whether a directory or an entry with this status is trusted for uid: a
 * directory (an entry: a regular file) owned by uid and not writable by group
 * or others. If not, false with the reason in why. */
bool rt_cache_dir_trusted(const struct stat *st, uid_t uid, char *why, size_t why_cap);
bool rt_cache_entry_trusted(const struct stat *st, uid_t uid, char *why, size_t why_cap);
/* Creates dir 0700 (and its missing parents, 0700 too, except within the
 * first `base` bytes) and checks it: not a symbolic link, and trusted for the
 * effective user. TC_ERROR_IO saying why not ("cache directory D refused:
 * ..."); such a directory must not be used. */
tc_status rt_cache_prepare(const char *dir, size_t base);
/* Opens the directory dir (O_DIRECTORY, no link followed) and checks that
 * it is trusted (rt_cache_dir_trusted); with create, makes it and its
 * parents from byte `base` of dir on (0700). *missing (may be NULL) says a
 * directory that does not exist, with TC_OK and *out -1. TC_ERROR_IO with
 * the reason otherwise. */
tc_status rt_cache_open_dir(const char *dir, bool create, size_t base, int *out, bool *missing);
/* The tilec build: the GNU build-id note of the object holding tilec's code
 * in hex, or without one a hash of the version and of the runtime's compile
 * time. Computed once, thread-safe. */
const char *rt_build_id(void);
/* 64 random bits (getrandom, else the clock and a counter): temporary file names. */
uint64_t rt_random_u64(void);
/* Writes len bytes as the file `name` of the open directory dfd (dir is its
 * path, for messages): a new temporary file of mode 0600 whatever the
 * umask, written, fsynced and renamed over name, or removed on failure
 * (TC_ERROR_IO). dfd stays open. The disk cache's entries and the tuning
 * table are written this way. */
tc_status rt_cache_write_file(int dfd, const char *dir, const char *name, const void *data, size_t len);
/* Writes all n bytes to fd, through short writes and EINTR; false with errno set. */
bool rt_write_all(int fd, const uint8_t *p, size_t n);
/* tc_version() and the build id: an entry's "compiler" field. */
const char *rt_compiler_id(void);
/* The bytes of an entry, and their validation (pure: used by the tests). */
bool rt_cache_encode(RtBytes *out, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                     const void *payload, size_t payload_len);
/* Validates data (malloc'd, with a NUL at data[len] so that a PTX payload
 * is a C string; ownership passes to *e, or it is freed on failure) into
 * *e; on failure returns false with the reason in why. */
bool rt_cache_decode(uint8_t *data, size_t len, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, char *why,
                     size_t why_cap);
/* Writes atomically: a temp file in dir (pid + random suffix, 0600), fsync,
 * rename; creates dir (and parents, 0700) if needed, refuses it if it is not
 * trusted. Then updates the size estimate, and evicts when it is over
 * rt_cache_max_bytes() (cache.c). TC_ERROR_IO with the path. */
tc_status rt_cache_store(const char *dir, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                         const void *payload, size_t payload_len);
/* *hit = true with *e filled (and the entry's times set to now, for the
 * eviction), or false: no entry (or no directory), or one that was
 * rejected (a symbolic link, not a regular file, not the effective user's,
 * writable by others, short, bad magic, other format, other compiler, bad
 * checksum, other key, other kind), in which case the file is deleted if it
 * is the user's own and why says what was wrong. A directory that is not
 * trusted and a file that exists but cannot be read are errors. */
tc_status rt_cache_load(const char *dir, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, bool *hit,
                        char *why, size_t why_cap);
/* Deletes the key's entry if it is the effective user's (not an error if
 * there is none). */
tc_status rt_cache_remove(const char *dir, const uint8_t key[32]);
/* What a scan of the directory found and did. */
typedef struct RtCacheTrim {
    size_t entries;        /* the user's entries */
    uint64_t bytes_before; /* their total size */
    uint64_t bytes_after;  /* after eviction */
    size_t evicted;        /* least recently used first */
    size_t stale_tmps;     /* temp files of killed writers (older than ten minutes) deleted */
} RtCacheTrim;
/* Scans dir as a store does when its estimate says so: evicts down to 90%
 * of max_bytes when over it (0: no limit) and deletes stale temp files. */
tc_status rt_cache_trim(const char *dir, uint64_t max_bytes, RtCacheTrim *out);
void rt_cache_entry_free(RtCacheEntry *e);

/* Kernel metadata (RtMeta) and the bridge to tc_compile: driver/kernel_meta.h. */

/* ==== module.c: contexts, modules, kernels and launches ==== */

struct tc_context {
    CUcontext cu;
    CUdevice device;
    bool owns_primary;        /* tc_context_create retained the primary context */
    int cc;                   /* compute capability, major * 10 + minor */
    int driver_version;       /* cuDriverGetVersion */
    int max_shared_optin;     /* bytes of shared memory a block may opt in to */
    int multiprocessors;      /* the device's SMs */
    char arch[16];            /* what tc_jit compiles for ("" if the device is too old) */
    char name[256];           /* the device's name (cuDeviceGetName), the tuning table's GPU column */
    int warp_specialize;      /* $TILEC_WARP_SPECIALIZE: 0 or 1 forces the library's choice, -1 leaves it */
    int persistent;           /* $TILEC_PERSISTENT: the same for persistent programs (attention) */
    int line_info;            /* $TILEC_LINE_INFO: 1 gives every tc_jit compile line info, -1 (or 0) leaves it */
    bool host;                /* the interpreter's device (TILEC_INTERPRET=1): tc_jit compiles to IR, in memory only */
    pthread_mutex_t lock;     /* guards modules and their raw kernels */
    tc_module *modules;       /* every module loaded into the context */
    pthread_mutex_t jit_lock; /* guards jit, attached's writers; held through a compile (taken before lock) */
    pthread_mutex_t log_lock; /* guards log; never held while a callback runs */
    RtLogger log;             /* the callback (tc_context_set_log); no queue */
    RtJitTable *jit; /* jit.c's in-memory table (NULL until the first tc_jit) */
    /* State a layer above runtime/ keeps per context (stdlib/'s memo of
     * kernels), opaque here: NULL until that layer sets it, read without a
     * lock, written under jit_lock. The layer sets attached_free (under
     * jit_lock, before publishing attached), which tc_context_destroy calls
     * on attached; so runtime/ frees it without knowing what it is. */
    _Atomic(void *) attached;
    void (*attached_free)(void *attached);
    /* 16 zeroed bytes of device memory that the tensor maps of a tensor
     * whose every element is masked cover (tensor_map.c): 0 until the first
     * launch that needs it, then written once, under lock; freed by
     * tc_context_destroy. */
    _Atomic(CUdeviceptr) zero_buf;
};

/* Everything tc_launch reads, precomputed at load time. */
struct tc_kernel {
    CUfunction fn;
    RtCuLaunchKernelFn launch;  /* rt_cu.cuLaunchKernel */
    size_t num_params;          /* SIZE_MAX: no metadata (tc_launch refuses) */
    unsigned block;             /* 32 * num_warps */
    unsigned shared;            /* dynamic shared memory bytes */
    const uint32_t *ptr_params; /* indices of pointer parameters */
    uint32_t num_ptr_params;
    tc_module *module;
    const tc_kernel_desc *desc; /* NULL: no metadata */
    const char *name;
    uint32_t num_maps;                 /* desc->num_tensor_maps: built at each launch, passed after the arguments */
    RtCuTensorMapEncodeTiledFn encode; /* rt_cu.cuTensorMapEncodeTiled (NULL: the driver has none) */
    uint32_t programs; /* a persistent kernel's programs resident at once on the device (>= 1); 0: not persistent */
};

/* An entry found by name in a module loaded without metadata for it. */
struct RtRawKernel {
    tc_kernel kernel;
    RtRawKernel *next;
    char name[];
};

struct tc_module {
    tc_context *ctx;
    CUmodule cu;
    RtMeta meta;            /* owned */
    tc_kernel *kernels;     /* one per meta kernel */
    uint32_t *ptr_index;    /* storage behind kernels[i].ptr_params */
    RtRawKernel *raw;       /* guarded by ctx->lock */
    tc_module *prev, *next; /* in ctx->modules */
};

/* Makes ctx current on this thread for a cold-path driver call, and restores
 * the previous one. */
tc_status rt_ctx_push(tc_context *ctx);
void rt_ctx_pop(tc_context *ctx);
/* Delivers (and frees) lines queued while ctx's locks were held to ctx's log
 * callback as it is now; called with no lock held. */
void rt_context_log_flush(tc_context *ctx, RtBytes *queue);
/* Will a line of this level logged on ctx be seen (a callback, or TILEC_LOG)? For lines that cost work to make. */
bool rt_context_logs(tc_context *ctx, int level);
/* Whether PTX text carries line info: a `.loc` directive (tilec -g, nvcc
 * -lineinfo). The driver compiles such PTX with CU_JIT_GENERATE_LINE_INFO
 * (rt_module_load, rt_link_ptx), so that the cubin maps SASS to source lines. */
bool rt_ptx_has_line_info(const char *ptx, size_t len);
/* Loads a NUL-terminated PTX or a cubin image into ctx, taking ownership of
 * meta (freed on failure too). */
tc_status rt_module_load(tc_context *ctx, const void *image, bool is_ptx, RtMeta *meta, tc_module **out);
/* The driver's cubin for a PTX (cuLink*), compiled for ctx's device. */
/* Links PTX into a cubin in ctx; ptxas's performance-loss reports (wgmma
 * serialized: C7510-C7515) go to lg as level-1 lines. */
tc_status rt_link_ptx(tc_context *ctx, const char *ptx, size_t len, RtBytes *cubin, const RtLogger *lg);
/* The JIT target for a compute capability: "sm_80", "sm_90a", "sm_90" or "". */
const char *rt_arch_for_cc(int cc);
/* NULL when a context on a device of compute capability cc may compile for
 * `arch` instead (TILEC_ARCH: sm_90 or sm_80 on an H100 forces the mma.sync
 * path), else why not. */
const char *rt_arch_override_check(const char *arch, int cc);

/* ==== tensor_map.c: the tensor maps a launch builds ==== */

/* The arguments of one cuTensorMapEncodeTiled call, but the map. */
typedef struct RtTensorMapArgs {
    int dtype; /* CUtensorMapDataType */
    uint32_t rank;
    CUdeviceptr address;
    uint64_t dim[TC_MAX_TENSOR_MAP_RANK];
    uint64_t stride[TC_MAX_TENSOR_MAP_RANK - 1]; /* bytes, dimensions 1..rank-1 */
    uint32_t box[TC_MAX_TENSOR_MAP_RANK];
    int swizzle; /* CUtensorMapSwizzle */
    bool zero;   /* every element is masked: the map covers the context's zero buffer (address 0 here) */
} RtTensorMapArgs;

/* Storage for one map: 128 bytes, 64-byte aligned, as the driver wants it. */
typedef struct RtTensorMapSlot {
    _Alignas(64) unsigned char bytes[128];
} RtTensorMapSlot;

/* Map i of kernel d from a launch's arguments (tc_tensor_map_desc's
 * rules): TC_ERROR_INVALID_ARGUMENT, naming the kernel, the parameter and
 * the rule, for a base or a stride the kernel was not specialized for. */
tc_status rt_tensor_map_args(const tc_kernel_desc *d, size_t i, void *const *args, RtTensorMapArgs *out);
/* Encodes map i of k into slot with k->encode (the zero buffer's map from
 * k's context when every element is masked). */
tc_status rt_tensor_map_encode(const tc_kernel *k, size_t i, void *const *args, RtTensorMapSlot *slot);
/* The context's zero buffer, allocated and zeroed by the first call. */
tc_status rt_context_zero_buffer(tc_context *ctx, CUdeviceptr *out);

/* ==== jit.c: keys and the driver-free half of tc_jit ==== */

/* The argument facts of a variant: per runtime parameter whether it is
 * divisible by 16, and the same by name for the compiler (the caller's
 * tc_options.params first). */
typedef struct RtJitFacts {
    const uint8_t *div16;
    size_t num_params;
    const tc_param_spec *specs;
    size_t num_specs;
} RtJitFacts;

/* For a request whose signature only its compile will tell (tc_jit's
 * family miss): called from that compile's specialize hook with the
 * signature (valid during the call), it fills *facts (storage the callee
 * keeps alive until rt_jit_build_ptx returns), or sets *done when it has the
 * variant from elsewhere (a cubin from the disk), which ends the compile. It
 * may be called again for the same build (a refused cached PTX is compiled
 * afresh) and must give the same facts. */
typedef tc_status (*RtJitFactsFn)(void *user, const RtMeta *sig, RtJitFacts *facts, bool *done);

/* Everything that goes into a JIT key, and what a compile needs besides. */
struct RtJitInputs {
    const tc_source *source;
    const char *kernel;
    const tc_constexpr *constexprs;
    size_t num_constexprs;
    const tc_options *options; /* never NULL; num_warps normalized (0 -> 4) */
    const char *arch;
    const uint8_t *div16; /* per runtime parameter: 1 if divisible by 16 */
    size_t num_params;
    const tc_param_spec *specs; /* the same facts by name, for the compiler */
    size_t num_specs;
    /* Set: div16, num_params and specs are unknown until the compile's front
     * end has run; this fills them then (and the PTX cache is looked up
     * then, a hit ending the compile), so a miss parses the source once. */
    RtJitFactsFn facts;
    void *facts_user;
    const char *cache_dir; /* NULL: memory only */
    bool no_cache_load;    /* compile even if the disk has the PTX (it was refused) */
    RtCompileFn compile;   /* NULL: rt_compile_ptx */
    void *compile_user;
    const RtLogger *log;
    tc_diagnostics *diags;
};

/* The key of the specialization less its argument facts, and with them. */
void rt_jit_base_key(const RtJitInputs *in, uint8_t key[32]);
void rt_jit_ptx_key(const uint8_t base[32], const uint8_t *div16, size_t num_params, uint8_t key[32]);
/* The cubin's key adds the device and the driver that produced it. */
void rt_jit_cubin_key(const uint8_t ptx_key[32], int compute_capability, int driver_version, uint8_t key[32]);

/* PTX and metadata for a specialization: from the disk cache, or compiled
 * (and then stored); or nothing, when in->facts had the variant (done). */
struct RtJitBuild {
    RtBytes ptx;
    RtMeta meta;
    uint8_t key[32]; /* the PTX key */
    bool compiled;   /* false: read from the cache */
    bool done;       /* in->facts had the variant: no PTX, no metadata, no key */
};
tc_status rt_jit_build_ptx(const RtJitInputs *in, RtJitBuild *out);
void rt_jit_build_free(RtJitBuild *b);
/* PTX to cubin: rt_link_ptx in a context, or a stand-in in the tests. */
typedef tc_status (*RtLinkFn)(void *user, const char *ptx, size_t len, RtBytes *cubin);
/* rt_jit_build_ptx, then link (nothing when b->done). PTX from the disk
 * cache that does not link is deleted, compiled afresh (and stored) and
 * linked once more; only then is a link failure returned. On failure *b is
 * freed; *cubin is the caller's to free either way. */
tc_status rt_jit_build_cubin(const RtJitInputs *in, RtLinkFn link, void *link_user, RtJitBuild *b, RtBytes *cubin);
/* The disk cache tc_jit uses: rt_cache_dir, created and checked by
 * rt_cache_prepare. If there is none or it is refused, false, and the reason
 * is logged (level 1) the first time only: *warned (one flag per context)
 * records that it was. */
bool rt_jit_disk_cache(const RtLogger *log, bool *warned, char *dir, size_t cap);
/* Frees a context's JIT table (its modules are unloaded by the caller). */
void rt_jit_table_free(RtJitTable *t);

#endif
