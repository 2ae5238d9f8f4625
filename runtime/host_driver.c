/*
 * host_driver.c — the CUDA Driver API on the host, for TILEC_INTERPRET=1.
 *
 * With TILEC_INTERPRET=1 in the environment, rt_cuda_load fills the
 * process's driver table (rt_cu) from here instead of libcuda, and the rest
 * of the runtime runs unchanged on top of it: one device (compute
 * capability 9.0, 132 multiprocessors, so that the standard library plans
 * as on an H100 or H200), contexts that are tokens, memory from the host's
 * heap, streams that run everything at once, events that read the clock.
 * A module's image is the IR text the JIT compiles in this mode
 * (rt_compile_ir), loaded by the interpreter (include/tilec/interp.h); a
 * launch interprets the kernel, every access checked against the
 * allocations made here. A failure (an access outside them, a failed
 * device_assert) is a launch error, CUDA_ERROR_LAUNCH_FAILED, whose text
 * (cuGetErrorString) is the interpreter's message with the .tile line.
 * "Linking" PTX returns it unchanged: the image is already what loads.
 *
 * Thread-safe: the allocation table is guarded by a read-write lock (the
 * launches' bounds checks read it); everything else is per object or per
 * thread.
 */
#include "runtime/runtime.h"

#include "tilec/interp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    HOST_ERROR_INVALID_VALUE = 1,
    HOST_ERROR_INVALID_IMAGE = 200,
    HOST_ERROR_LAUNCH_FAILED = 719,
    HOST_DRIVER_VERSION = 13000,
    HOST_CC_MAJOR = 9,
    HOST_CC_MINOR = 0,
    HOST_SMS = 132,
    HOST_SHARED_OPTIN = 232448,
};

/* The detail of this thread's last failure, for cuGetErrorString. */
static _Thread_local char host_error[1536];

static RtCuResult host_fail(RtCuResult code, const char *text) {
    snprintf(host_error, sizeof host_error, "%s", text);
    return code;
}

/* ---- device memory: the host's heap, every allocation in a sorted table ---- */

typedef struct Alloc {
    uint64_t base, size;
} Alloc;

static pthread_rwlock_t allocs_lock = PTHREAD_RWLOCK_INITIALIZER;
static Alloc *allocs;
static size_t num_allocs, cap_allocs;

/* Index of the first allocation whose base is above addr. */
static size_t upper(uint64_t addr) {
    size_t lo = 0, hi = num_allocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocs[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The allocation holding addr, under the lock (read or write). */
static const Alloc *holding(uint64_t addr) {
    size_t i = upper(addr);
    if (i == 0)
        return NULL;
    const Alloc *a = &allocs[i - 1];
    return addr - a->base < a->size ? a : NULL;
}

static int find_alloc(void *user, uint64_t addr, uint64_t *base, uint64_t *bytes) {
    (void)user;
    pthread_rwlock_rdlock(&allocs_lock);
    const Alloc *a = holding(addr);
    if (a) {
        *base = a->base;
        *bytes = a->size;
    } else {
        /* the nearest allocation below, for the message */
        size_t i = upper(addr);
        *base = i ? allocs[i - 1].base : 0;
        *bytes = i ? allocs[i - 1].size : 0;
    }
    pthread_rwlock_unlock(&allocs_lock);
    return a != NULL;
}

static const tc_interp_memory host_memory = {find_alloc, NULL};

/* Whether [addr, addr + bytes) lies in one allocation. */
static bool in_allocation(uint64_t addr, size_t bytes) {
    pthread_rwlock_rdlock(&allocs_lock);
    const Alloc *a = holding(addr);
    bool ok = a && bytes <= a->size - (addr - a->base);
    pthread_rwlock_unlock(&allocs_lock);
    return ok;
}

static RtCuResult host_mem_alloc(CUdeviceptr *ptr, size_t bytes) {
    *ptr = 0;
    size_t rounded = (bytes + 255) & ~(size_t)255;
    if (!bytes || rounded < bytes)
        return host_fail(HOST_ERROR_INVALID_VALUE, "cuMemAlloc of 0 bytes or more than the address space");
    void *p = aligned_alloc(256, rounded); /* cudaMalloc's alignment */
    if (!p)
        return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    memset(p, 0, rounded);
    pthread_rwlock_wrlock(&allocs_lock);
    if (num_allocs == cap_allocs) {
        size_t cap = cap_allocs ? 2 * cap_allocs : 64;
        Alloc *grown = realloc(allocs, cap * sizeof *grown);
        if (!grown) {
            pthread_rwlock_unlock(&allocs_lock);
            free(p);
            return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
        }
        allocs = grown;
        cap_allocs = cap;
    }
    uint64_t base = (uint64_t)(uintptr_t)p;
    size_t i = upper(base);
    memmove(allocs + i + 1, allocs + i, (num_allocs - i) * sizeof *allocs);
    allocs[i] = (Alloc){base, bytes}; /* the bytes asked for: an access past them is caught */
    num_allocs++;
    pthread_rwlock_unlock(&allocs_lock);
    *ptr = base;
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_mem_free(CUdeviceptr ptr) {
    pthread_rwlock_wrlock(&allocs_lock);
    size_t i = upper(ptr);
    bool found = i > 0 && allocs[i - 1].base == ptr;
    if (found) {
        memmove(allocs + i - 1, allocs + i, (num_allocs - i) * sizeof *allocs);
        num_allocs--;
    }
    pthread_rwlock_unlock(&allocs_lock);
    if (!found)
        return host_fail(HOST_ERROR_INVALID_VALUE, "cuMemFree of an address cuMemAlloc did not return");
    free((void *)(uintptr_t)ptr);
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_htod(CUdeviceptr dst, const void *src, size_t bytes) {
    if (!in_allocation(dst, bytes))
        return host_fail(HOST_ERROR_INVALID_VALUE, "the copy's destination is not within one allocation");
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_dtoh(void *dst, CUdeviceptr src, size_t bytes) {
    if (!in_allocation(src, bytes))
        return host_fail(HOST_ERROR_INVALID_VALUE, "the copy's source is not within one allocation");
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_memset(CUdeviceptr dst, unsigned char value, size_t bytes) {
    if (!in_allocation(dst, bytes))
        return host_fail(HOST_ERROR_INVALID_VALUE, "the memset's range is not within one allocation");
    memset((void *)(uintptr_t)dst, value, bytes);
    return RT_CUDA_SUCCESS;
}

/* Streams run in order on the host, each operation when it is queued. */
static RtCuResult host_memset_async(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream) {
    (void)stream;
    return host_memset(dst, value, bytes);
}

/* ---- the device and contexts ---- */

static struct {
    int token;
} host_context; /* the one context: its address is the CUcontext */
static _Thread_local CUcontext current;
static _Thread_local CUcontext pushed[64];
static _Thread_local int num_pushed;

static RtCuResult host_init(unsigned flags) {
    (void)flags;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_driver_version(int *v) {
    *v = HOST_DRIVER_VERSION;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_device_get(CUdevice *dev, int ordinal) {
    if (ordinal != 0)
        return host_fail(RT_CUDA_ERROR_INVALID_DEVICE, "the interpreter has one device, 0");
    *dev = 0;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_device_count(int *count) {
    *count = 1;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_attribute(int *value, int attrib, CUdevice dev) {
    (void)dev;
    switch (attrib) {
    case RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = HOST_SMS; break;
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = HOST_CC_MAJOR; break;
    case RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = HOST_CC_MINOR; break;
    case RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = HOST_SHARED_OPTIN; break;
    default: *value = 0; break;
    }
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_retain(CUcontext *ctx, CUdevice dev) {
    (void)dev;
    *ctx = (CUcontext)(void *)&host_context;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_release(CUdevice dev) {
    (void)dev;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_get_current(CUcontext *ctx) {
    *ctx = current;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_set_current(CUcontext ctx) {
    current = ctx;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_push(CUcontext ctx) {
    if (num_pushed == (int)(sizeof pushed / sizeof pushed[0]))
        return host_fail(HOST_ERROR_INVALID_VALUE, "contexts pushed 64 deep");
    pushed[num_pushed++] = current;
    current = ctx;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_pop(CUcontext *ctx) {
    if (ctx)
        *ctx = current;
    current = num_pushed ? pushed[--num_pushed] : NULL;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_ctx_device(CUdevice *dev) {
    *dev = 0;
    return RT_CUDA_SUCCESS;
}

/* ---- modules, functions, launches ---- */

static RtCuResult host_module_load(CUmodule *mod, const void *image, unsigned num_options, int *options,
                                   void **values) {
    (void)num_options, (void)options, (void)values;
    const char *text = image;
    tc_source src = {"<jit>", text, strlen(text)};
    tc_interp_module *m = NULL;
    if (tc_interp_load(&src, &m, NULL) != TC_OK)
        return host_fail(HOST_ERROR_INVALID_IMAGE, tc_last_error());
    *mod = (CUmodule)(void *)m;
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_module_unload(CUmodule mod) {
    tc_interp_unload((tc_interp_module *)(void *)mod);
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_get_function(CUfunction *fn, CUmodule mod, const char *name) {
    tc_interp_kernel *k = NULL;
    if (tc_interp_get_kernel((tc_interp_module *)(void *)mod, name, &k) != TC_OK)
        return host_fail(RT_CUDA_ERROR_NOT_FOUND, tc_last_error());
    *fn = (CUfunction)(void *)k;
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
    (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
    unsigned grid[3] = {gx, gy, gz};
    tc_status st = tc_interp_launch((tc_interp_kernel *)(void *)f, grid, params, &host_memory);
    if (st == TC_OK)
        return RT_CUDA_SUCCESS;
    return host_fail(st == TC_ERROR_OUT_OF_MEMORY ? RT_CUDA_ERROR_OUT_OF_MEMORY : HOST_ERROR_LAUNCH_FAILED,
                     tc_last_error());
}

static RtCuResult host_func_set(CUfunction fn, int attrib, int value) {
    (void)fn, (void)attrib, (void)value;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_func_get(int *value, int attrib, CUfunction fn) {
    (void)attrib, (void)fn;
    *value = 0;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_occupancy(int *blocks, CUfunction fn, int threads, size_t shared) {
    (void)fn, (void)threads, (void)shared;
    *blocks = 1;
    return RT_CUDA_SUCCESS;
}

/* "Linking": the image handed in is the image that loads. */
typedef struct HostLink {
    RtBytes image;
} HostLink;

static RtCuResult host_link_create(unsigned n, int *options, void **values, RtCuLinkState *state) {
    (void)n, (void)options, (void)values;
    HostLink *l = calloc(1, sizeof *l);
    if (!l)
        return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    *state = (RtCuLinkState)(void *)l;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_link_add(RtCuLinkState state, int type, void *data, size_t size, const char *name,
                                unsigned n, int *options, void **values) {
    (void)type, (void)name, (void)n, (void)options, (void)values;
    HostLink *l = (HostLink *)(void *)state;
    if (l->image.len)
        return host_fail(HOST_ERROR_INVALID_VALUE, "the interpreter links one image");
    if (!rt_bytes_append(&l->image, data, size))
        return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_link_complete(RtCuLinkState state, void **image, size_t *size) {
    HostLink *l = (HostLink *)(void *)state;
    *image = l->image.data;
    *size = l->image.len;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_link_destroy(RtCuLinkState state) {
    HostLink *l = (HostLink *)(void *)state;
    rt_bytes_free(&l->image);
    free(l);
    return RT_CUDA_SUCCESS;
}

/* ---- errors ---- */

static RtCuResult host_error_name(RtCuResult error, const char **name) {
    switch (error) {
    case RT_CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case HOST_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case RT_CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case RT_CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case HOST_ERROR_INVALID_IMAGE: *name = "CUDA_ERROR_INVALID_IMAGE"; break;
    case RT_CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
    case HOST_ERROR_LAUNCH_FAILED: *name = "CUDA_ERROR_LAUNCH_FAILED"; break;
    default: *name = NULL; return HOST_ERROR_INVALID_VALUE;
    }
    return RT_CUDA_SUCCESS;
}

static RtCuResult host_error_string(RtCuResult error, const char **text) {
    *text = error == RT_CUDA_SUCCESS ? "no error" : host_error[0] ? host_error : "the interpreter failed";
    return RT_CUDA_SUCCESS;
}

/* ---- streams and events: everything has run when a call returns ---- */

static RtCuResult host_stream_create(CUstream *stream, unsigned flags) {
    (void)flags;
    void *s = malloc(1);
    if (!s)
        return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    *stream = (CUstream)s;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_stream_destroy(CUstream stream) {
    free((void *)stream);
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_stream_sync(CUstream stream) {
    (void)stream;
    return RT_CUDA_SUCCESS;
}

typedef struct HostEvent {
    double ms; /* CLOCK_MONOTONIC at the last record */
} HostEvent;

static RtCuResult host_event_create(CUevent *event, unsigned flags) {
    (void)flags;
    HostEvent *e = calloc(1, sizeof *e);
    if (!e)
        return host_fail(RT_CUDA_ERROR_OUT_OF_MEMORY, "the host is out of memory");
    *event = (CUevent)(void *)e;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_event_record(CUevent event, CUstream stream) {
    (void)stream;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ((HostEvent *)(void *)event)->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_event_sync(CUevent event) {
    (void)event;
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_event_elapsed(float *ms, CUevent start, CUevent end) {
    *ms = (float)(((HostEvent *)(void *)end)->ms - ((HostEvent *)(void *)start)->ms);
    return RT_CUDA_SUCCESS;
}
static RtCuResult host_event_destroy(CUevent event) {
    free((void *)event);
    return RT_CUDA_SUCCESS;
}

void rt_host_driver(RtCuda *cu) {
    memset(cu, 0, sizeof *cu);
    cu->cuInit = host_init;
    cu->cuDriverGetVersion = host_driver_version;
    cu->cuDeviceGet = host_device_get;
    cu->cuDeviceGetCount = host_device_count;
    cu->cuDeviceGetAttribute = host_attribute;
    cu->cuDevicePrimaryCtxRetain = host_retain;
    cu->cuDevicePrimaryCtxRelease = host_release;
    cu->cuCtxGetCurrent = host_get_current;
    cu->cuCtxSetCurrent = host_set_current;
    cu->cuCtxPushCurrent = host_push;
    cu->cuCtxPopCurrent = host_pop;
    cu->cuCtxGetDevice = host_ctx_device;
    cu->cuModuleLoadDataEx = host_module_load;
    cu->cuModuleUnload = host_module_unload;
    cu->cuModuleGetFunction = host_get_function;
    cu->cuLaunchKernel = host_launch;
    cu->cuFuncSetAttribute = host_func_set;
    cu->cuFuncGetAttribute = host_func_get;
    cu->cuOccupancyMaxActiveBlocksPerMultiprocessor = host_occupancy;
    cu->cuLinkCreate = host_link_create;
    cu->cuLinkAddData = host_link_add;
    cu->cuLinkComplete = host_link_complete;
    cu->cuLinkDestroy = host_link_destroy;
    cu->cuGetErrorName = host_error_name;
    cu->cuGetErrorString = host_error_string;
    cu->cuMemAlloc = host_mem_alloc;
    cu->cuMemFree = host_mem_free;
    cu->cuMemcpyHtoD = host_htod;
    cu->cuMemcpyDtoH = host_dtoh;
    cu->cuMemsetD8 = host_memset;
    cu->cuMemsetD8Async = host_memset_async;
    cu->cuStreamCreate = host_stream_create;
    cu->cuStreamDestroy = host_stream_destroy;
    cu->cuStreamSynchronize = host_stream_sync;
    cu->cuEventCreate = host_event_create;
    cu->cuEventRecord = host_event_record;
    cu->cuEventSynchronize = host_event_sync;
    cu->cuEventElapsedTime = host_event_elapsed;
    cu->cuEventDestroy = host_event_destroy;
    cu->cuTensorMapEncodeTiled = NULL; /* the IR the interpreter runs has no tensor maps */
    cu->host = true;
}
