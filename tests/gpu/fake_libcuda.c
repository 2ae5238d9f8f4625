/*
 * fake_libcuda.c — a stand-in libcuda.so.1 that runs the standard library's
 * row-wise kernels on the CPU, so that the GPU test programs, the stdlib
 * example and bench/launch_overhead can be run end to end on a machine
 * without a GPU: their harness (allocation, poisoning, strides, the
 * argument wiring of include/tilec/stdlib.h, the CPU references, the
 * summary lines) is then tested by CTest everywhere (the gpu.fake.* tests),
 * before a GPU run depends on it.
 *
 * It is NOT a CUDA emulator: "device" memory is host memory, a module is
 * its PTX text (the "cubin" the linker returns is that text behind a
 * marker), and a launch runs a C version of the kernel the entry names —
 * softmax_fwd, softmax_bwd, rmsnorm_fwd, rmsnorm_bwd (the storage type read
 * off the PTX's conversions: cvt.f32.bf16, cvt.f32.f16, else f32; one row
 * for each cluster of programs where the entry declares a cluster) — or,
 * for a kernel whose name starts with `empty`, nothing. Any other kernel
 * fails to launch with CUDA_ERROR_NOT_SUPPORTED. It reports compute
 * capability 9.0 and driver version 99999, so that the JIT's disk cache
 * never mixes its "cubins" with a real driver's, and 132 multiprocessors
 * that hold two programs of any kernel each. Never install it:
 * cmake/gpu_bundle.cmake does not.
 *
 * Tensor maps: cuTensorMapEncodeTiled checks its arguments by the rules of
 * the driver's documentation (CUDA_ERROR_INVALID_VALUE otherwise) and writes
 * them into the map (FakeTensorMap, fake_libcuda.h); every launch records,
 * per calling thread, the parameters its PTX entry declares, with a copy of
 * each tensor map (`.param .align 64 .b8 NAME[128]`), which tests read
 * through fake_cuda_last_launch.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "f16.h" /* examples/f16.h */
#include "fake_libcuda.h"

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    ERR_INVALID_VALUE = 1,
    ERR_OUT_OF_MEMORY = 2,
    ERR_NOT_FOUND = 500,
    ERR_NOT_SUPPORTED = 801,
    ERR_INVALID_CLUSTER_SIZE = 912,
};

static const char MARK[] = "FAKE-CUBIN\n";

_Static_assert(sizeof(FakeTensorMap) <= 128, "a fake tensor map fits in a CUtensorMap");

/* the calling thread's last launch, and its counts */
static _Thread_local FakeLaunch last_launch;

API const FakeLaunch *fake_cuda_last_launch(void) {
    return &last_launch;
}

typedef enum { T_F32, T_F16, T_BF16 } Ty;

typedef struct Func {
    char name[128];
    Ty ty;
    int num_params;              /* as the PTX entry declares them */
    int is_map[FAKE_MAX_PARAMS]; /* a 128-byte parameter: a tensor map */
    unsigned cluster;            /* the entry's .reqnctapercluster along x: programs of one row; 1 without */
} Func;

typedef struct Module {
    Func funcs[16];
    int num_funcs;
} Module;

typedef struct Link {
    char *data;
    size_t len;
} Link;

/* like the driver's, the current context is the calling thread's own */
static int ctx_dummy;
static _Thread_local int *current_ctx;

/* TILEC_FAKE_CUDA_BUG makes the kernels wrong, so that CTest can check that
 * the tests notice: "skip-last" leaves each row's last element unwritten,
 * "overrun" writes one element past each row, "scale" writes outputs 2%
 * too large. */
static enum { BUG_NONE, BUG_SKIP_LAST, BUG_OVERRUN, BUG_SCALE } bug;

/* The columns an output loop writes, and the value it writes. */
static int32_t out_cols(int32_t n) {
    return bug == BUG_SKIP_LAST ? n - 1 : bug == BUG_OVERRUN ? n + 1 : n;
}
static float out_val(float v) {
    return bug == BUG_SCALE ? v * 1.02f : v;
}

/* ---- storage types ---- */

static float ld(Ty t, CUdeviceptr p, int64_t i) {
    if (t == T_F32)
        return ((const float *)(uintptr_t)p)[i];
    uint16_t h = ((const uint16_t *)(uintptr_t)p)[i];
    return t == T_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

static void st(Ty t, CUdeviceptr p, int64_t i, float v) {
    if (t == T_F32) {
        ((float *)(uintptr_t)p)[i] = v;
    } else {
        ((uint16_t *)(uintptr_t)p)[i] = t == T_F16 ? f32_to_f16(v) : f32_to_bf16(v);
    }
}

/* ---- the kernels, one program (row) at a time, with the arguments the .tile files declare ---- */

#define PTR(i) (*(const CUdeviceptr *)params[i])
#define I64(i) (*(const int64_t *)params[i])
#define I32(i) (*(const int32_t *)params[i])
#define F32(i) (*(const float *)params[i])

static void softmax_fwd(Ty t, int64_t row, void **params) {
    CUdeviceptr out = PTR(0), x = PTR(1);
    int64_t so = I64(2) * row, sx = I64(3) * row;
    int32_t n = I32(4);
    float m = -INFINITY;
    double s = 0; /* sums in double: as accurate as a GPU's tree reductions, or more */
    for (int32_t c = 0; c < n; c++)
        m = fmaxf(m, ld(t, x, sx + c));
    for (int32_t c = 0; c < n; c++)
        s += expf(ld(t, x, sx + c) - m);
    for (int32_t c = 0; c < out_cols(n); c++)
        st(t, out, so + c, out_val(expf(ld(t, x, sx + c) - m) / (float)s));
}

static void softmax_bwd(Ty t, int64_t row, void **params) {
    CUdeviceptr dx = PTR(0), y = PTR(1), dy = PTR(2);
    int64_t sdx = I64(3) * row, sy = I64(4) * row, sdy = I64(5) * row;
    int32_t n = I32(6);
    double dot = 0;
    for (int32_t c = 0; c < n; c++)
        dot += ld(t, y, sy + c) * ld(t, dy, sdy + c);
    for (int32_t c = 0; c < out_cols(n); c++)
        st(t, dx, sdx + c, out_val(ld(t, y, sy + c) * (ld(t, dy, sdy + c) - (float)dot)));
}

static void rmsnorm_fwd(Ty t, int64_t row, void **params) {
    CUdeviceptr y = PTR(0), rstd = PTR(1), x = PTR(2), w = PTR(3);
    int64_t sy = I64(4) * row, sx = I64(5) * row;
    int32_t n = I32(6);
    float eps = F32(7);
    double ss = 0;
    for (int32_t c = 0; c < n; c++)
        ss += ld(t, x, sx + c) * ld(t, x, sx + c);
    float r = 1.0f / sqrtf((float)(ss / n) + eps);
    st(T_F32, rstd, row, r);
    for (int32_t c = 0; c < out_cols(n); c++)
        st(t, y, sy + c, out_val(ld(t, x, sx + c) * r * ld(t, w, c)));
}

static void rmsnorm_bwd(Ty t, int64_t row, void **params) {
    CUdeviceptr dx = PTR(0), dw = PTR(1), dy = PTR(2), x = PTR(3), w = PTR(4), rstd = PTR(5);
    int64_t sdx = I64(6) * row, sdy = I64(7) * row, sx = I64(8) * row;
    int32_t n = I32(9);
    float r = ld(T_F32, rstd, row);
    double acc = 0;
    for (int32_t c = 0; c < n; c++)
        acc += ld(t, dy, sdy + c) * ld(t, w, c) * ld(t, x, sx + c) * r;
    float mean = (float)(acc / n);
    for (int32_t c = 0; c < out_cols(n); c++) {
        float xhat = ld(t, x, sx + c) * r, d = ld(t, dy, sdy + c);
        st(t, dx, sdx + c, out_val(r * (d * ld(t, w, c) - xhat * mean)));
        ((float *)(uintptr_t)dw)[c] += d * xhat;
    }
}

/* ---- the driver API ---- */

API CUresult cuInit(unsigned flags) {
    (void)flags;
    const char *b = getenv("TILEC_FAKE_CUDA_BUG");
    bug = !b                            ? BUG_NONE
          : strcmp(b, "skip-last") == 0 ? BUG_SKIP_LAST
          : strcmp(b, "overrun") == 0   ? BUG_OVERRUN
          : strcmp(b, "scale") == 0     ? BUG_SCALE
                                        : BUG_NONE;
    fprintf(stderr, "note: FAKE libcuda.so.1 (tests/gpu/fake_libcuda.c): kernels run on the CPU%s%s\n",
            bug ? ", with the bug " : "", bug ? b : "");
    return OK;
}
API CUresult cuDriverGetVersion(int *v) {
    *v = 99999;
    return OK;
}
API CUresult cuDeviceGet(int *dev, int ordinal) {
    *dev = ordinal;
    return ordinal == 0 ? OK : 101;
}
API CUresult cuDeviceGetCount(int *n) {
    *n = 1;
    return OK;
}
API CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    (void)dev;
    *v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 97 ? 232448 : attr == 16 ? 132 : 0; /* 16: multiprocessors */
    return OK;
}
API CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    (void)dev;
    *ctx = &ctx_dummy;
    return OK;
}
API CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
    (void)dev;
    return OK;
}
API CUresult cuCtxGetCurrent(void **ctx) {
    *ctx = current_ctx;
    return OK;
}
API CUresult cuCtxSetCurrent(void *ctx) {
    current_ctx = ctx;
    return OK;
}
API CUresult cuCtxPushCurrent_v2(void *ctx) {
    (void)ctx;
    return OK;
}
API CUresult cuCtxPopCurrent_v2(void **ctx) {
    if (ctx)
        *ctx = current_ctx;
    return OK;
}
API CUresult cuCtxGetDevice(int *dev) {
    *dev = 0;
    return OK;
}

/* Whether the options ask for line info (CU_JIT_GENERATE_LINE_INFO = 13, value 1). */
static int asks_line_info(unsigned n, const int *options, void **values) {
    for (unsigned i = 0; i < n; i++)
        if (options[i] == 13)
            return (uintptr_t)values[i] == 1;
    return 0;
}

API CUresult cuModuleLoadDataEx(void **out, const void *image, unsigned n, int *options, void **values) {
    const char *text = image;
    if (strncmp(text, MARK, strlen(MARK)) == 0) {
        text += strlen(MARK);
    } else {
        last_launch.ptx_loads++;
        last_launch.line_info = asks_line_info(n, options, values);
    }
    Module *m = calloc(1, sizeof *m);
    if (!m)
        return ERR_OUT_OF_MEMORY;
    Ty ty = strstr(text, "cvt.f32.bf16") || strstr(text, "cvt.rn.bf16.f32") ? T_BF16
            : strstr(text, "cvt.f32.f16") || strstr(text, "cvt.rn.f16.f32") ? T_F16
                                                                            : T_F32;
    for (const char *p = strstr(text, ".entry "); p && m->num_funcs < 16; p = strstr(p + 1, ".entry ")) {
        const char *name = p + 7;
        size_t len = strcspn(name, "( \n");
        Func *f = &m->funcs[m->num_funcs++];
        snprintf(f->name, sizeof f->name, "%.*s", (int)len, name);
        f->ty = ty;
        /* the parameter list: "(.param .u64 a, .param .align 64 .b8 m[128])" */
        const char *open = name + len, *close;
        while (*open == ' ' || *open == '\n')
            open++;
        if (*open != '(' || !(close = strchr(open, ')')))
            continue;
        /* a cluster (the softmax's row split over its programs): between the parameters and the body */
        const char *body = strchr(close, '{'), *rc = strstr(close, ".reqnctapercluster ");
        f->cluster = rc && body && rc < body ? (unsigned)atoi(rc + 19) : 1;
        if (f->cluster < 1)
            f->cluster = 1;
        for (const char *q = open + 1; q < close && f->num_params < FAKE_MAX_PARAMS;) {
            const char *end = memchr(q, ',', (size_t)(close - q));
            if (!end)
                end = close;
            const char *decl = memmem(q, (size_t)(end - q), ".param", 6);
            if (decl) {
                f->is_map[f->num_params] = memmem(q, (size_t)(end - q), "[128]", 5) != NULL;
                f->num_params++;
            }
            q = end + 1;
        }
    }
    *out = m;
    return OK;
}
API CUresult cuModuleUnload(void *m) {
    free(m);
    return OK;
}
API CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
    Module *m = mod;
    for (int i = 0; i < m->num_funcs; i++)
        if (strcmp(m->funcs[i].name, name) == 0) {
            *fn = &m->funcs[i];
            return OK;
        }
    return ERR_NOT_FOUND;
}
API CUresult cuFuncSetAttribute(void *fn, int attr, int v) {
    (void)fn, (void)attr, (void)v;
    return OK;
}
/* Static shared memory (attribute 1) is 0, or $TILEC_FAKE_CUDA_STATIC_SHARED
 * bytes: the runtime's shared-memory sums are tested with it. */
/* Static shared memory: $TILEC_FAKE_CUDA_STATIC_SHARED (else 0); 40 registers, 8 bytes of local memory and at most
 * 1024 threads, for tc_kernel_get_info. */
API CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
    (void)fn;
    const char *s = getenv("TILEC_FAKE_CUDA_STATIC_SHARED");
    *v = attr == 1 && s ? atoi(s) : attr == 4 ? 40 : attr == 3 ? 8 : attr == 0 ? 1024 : 0;
    return OK;
}
/* Programs of a block that fit on one multiprocessor at once: 2, or
 * $TILEC_FAKE_CUDA_OCCUPANCY (0: none, which the loaders must refuse). */
API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int block, size_t shared) {
    (void)fn, (void)shared;
    const char *s = getenv("TILEC_FAKE_CUDA_OCCUPANCY");
    if (block < 1 || block > 1024)
        return ERR_INVALID_VALUE;
    *n = s ? atoi(s) : 2;
    return OK;
}
API CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, void *stream, void **params, void **extra) {
    (void)by, (void)bz, (void)stream, (void)extra;
    const Func *f = fn;
    FakeLaunch *l = &last_launch;
    snprintf(l->kernel, sizeof l->kernel, "%s", f->name);
    l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
    l->block = bx;
    l->shared = shared;
    l->num_params = f->num_params;
    l->launches++;
    for (int i = 0; i < f->num_params; i++) {
        l->params[i] = params ? params[i] : NULL;
        l->is_map[i] = f->is_map[i];
        if (f->is_map[i] && params)
            memcpy(&l->map[i], params[i], sizeof l->map[i]);
    }
    void (*kernel)(Ty, int64_t, void **) = NULL;
    if (strcmp(f->name, "softmax_fwd") == 0)
        kernel = softmax_fwd;
    else if (strcmp(f->name, "softmax_bwd") == 0)
        kernel = softmax_bwd;
    else if (strcmp(f->name, "rmsnorm_fwd") == 0)
        kernel = rmsnorm_fwd;
    else if (strcmp(f->name, "rmsnorm_bwd") == 0)
        kernel = rmsnorm_bwd;
    else if (strncmp(f->name, "empty", 5) != 0)
        return ERR_NOT_SUPPORTED;
    if (gy != 1 || gz != 1 || bx == 0 || bx % 32)
        return ERR_INVALID_VALUE;
    if (gx % f->cluster)
        return ERR_INVALID_CLUSTER_SIZE;
    for (unsigned r = 0; kernel && r < gx / f->cluster; r++) /* a cluster's programs share one row */
        kernel(f->ty, r, params);
    return OK;
}

/* Bytes per element of each CUtensorMapDataType up to TFLOAT32_FTZ. */
static const unsigned tmap_elem_bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

API CUresult cuTensorMapEncodeTiled(void *map, int dtype, uint32_t rank, void *address, const uint64_t *dim,
                                    const uint64_t *strides, const uint32_t *box, const uint32_t *element_strides,
                                    int interleave, int swizzle, int l2_promotion, int oob_fill) {
    last_launch.encodes++;
    if (!map || (uintptr_t)map % 64 || dtype < 0 || dtype > 12 || rank < 1 || rank > 5 ||
        (uintptr_t)address % 16 || interleave != 0 || swizzle < 0 || swizzle > 3 || l2_promotion < 0 ||
        l2_promotion > 3 || oob_fill < 0 || oob_fill > 1)
        return ERR_INVALID_VALUE;
    unsigned eb = tmap_elem_bytes[dtype];
    /* dims up to 2^31, not the documented 2^32: a copy through a map with an
     * extent of 2^32 faults on an H200 (driver 580), so the runtime must
     * never pass one */
    for (uint32_t i = 0; i < rank; i++)
        if (dim[i] < 1 || dim[i] > ((uint64_t)1 << 31) || box[i] < 1 || box[i] > 256 || element_strides[i] < 1 ||
            element_strides[i] > 8 || (i > 0 && (strides[i - 1] % 16 || strides[i - 1] >= ((uint64_t)1 << 40))))
            return ERR_INVALID_VALUE;
    if (box[0] * eb % 16 || (swizzle && box[0] * eb > (16u << swizzle)))
        return ERR_INVALID_VALUE;
    FakeTensorMap t = fake_tensor_map_of(dtype, rank, address, dim, strides, box, element_strides, interleave, swizzle,
                                         l2_promotion, oob_fill);
    memset(map, 0xA5, 128);
    memcpy(map, &t, sizeof t);
    return OK;
}

API CUresult cuLinkCreate_v2(unsigned n, int *options, void **values, void **state) {
    last_launch.line_info = asks_line_info(n, options, values);
    *state = calloc(1, sizeof(Link));
    return *state ? OK : ERR_OUT_OF_MEMORY;
}
API CUresult cuLinkAddData_v2(void *state, int type, void *data, size_t size, const char *name, unsigned n,
                              int *options, void **values) {
    (void)type, (void)name, (void)n, (void)options, (void)values;
    Link *l = state;
    free(l->data);
    l->len = strlen(MARK) + size + 1;
    if (!(l->data = malloc(l->len)))
        return ERR_OUT_OF_MEMORY;
    memcpy(l->data, MARK, strlen(MARK));
    memcpy(l->data + strlen(MARK), data, size);
    l->data[l->len - 1] = 0;
    return OK;
}
API CUresult cuLinkComplete(void *state, void **cubin, size_t *size) {
    Link *l = state;
    *cubin = l->data;
    *size = l->len;
    return OK;
}
API CUresult cuLinkDestroy(void *state) {
    Link *l = state;
    free(l->data);
    free(l);
    return OK;
}

API CUresult cuGetErrorName(CUresult e, const char **s) {
    *s = e == ERR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED (fake: no CPU version of this kernel)" : "CUDA_ERROR_FAKE";
    return OK;
}
API CUresult cuGetErrorString(CUresult e, const char **s) {
    (void)e;
    *s = "an error of the fake libcuda (tests/gpu/fake_libcuda.c)";
    return OK;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    if (bytes > ((size_t)1 << 40))
        return ERR_OUT_OF_MEMORY; /* more than a GPU has (and rounding up would wrap) */
    void *h = aligned_alloc(256, (bytes + 255) / 256 * 256);
    *p = (CUdeviceptr)(uintptr_t)h;
    return h ? OK : ERR_OUT_OF_MEMORY;
}
API CUresult cuMemFree_v2(CUdeviceptr p) {
    free((void *)(uintptr_t)p);
    return OK;
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return OK;
}
API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return OK;
}
API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t bytes) {
    memset((void *)(uintptr_t)dst, v, bytes);
    return OK;
}
API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t bytes, void *stream) {
    (void)stream;
    memset((void *)(uintptr_t)dst, v, bytes);
    return OK;
}

static int stream_dummy;
API CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    *s = &stream_dummy;
    return OK;
}
API CUresult cuStreamDestroy_v2(void *s) {
    (void)s;
    return OK;
}
API CUresult cuStreamSynchronize(void *s) {
    (void)s;
    return OK;
}

API CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof(double));
    return *e ? OK : ERR_OUT_OF_MEMORY;
}
API CUresult cuEventRecord(void *e, void *stream) {
    (void)stream;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)e = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
    return OK;
}
API CUresult cuEventSynchronize(void *e) {
    (void)e;
    return OK;
}
API CUresult cuEventElapsedTime_v2(float *ms, void *start, void *end) {
    *ms = (float)(*(double *)end - *(double *)start);
    return OK;
}
API CUresult cuEventDestroy_v2(void *e) {
    free(e);
    return OK;
}
