/*
 * cuda.c — the CUDA Driver API, opened with dlopen.
 *
 * tilec never links libcuda: the compiler, the tools and every CPU test run
 * on machines without a driver. The first runtime call that needs the GPU
 * opens libcuda.so.1 (the name the driver installs; the unversioned
 * libcuda.so is the toolkit's link-time stub), resolves each function by
 * the name cuda.h's #defines select (the _v2 entry points where the ABI
 * changed), and calls cuInit. That happens once per process under
 * pthread_once; its status and message are kept, so every later caller on
 * any thread gets the same answer ("libcuda.so.1 not found: no NVIDIA
 * driver on this machine") without trying again.
 */
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

RtCuda rt_cu;

/* Each entry: the table slot, the symbol, an older name to fall back to,
 * and whether a driver may lack it. */
typedef struct Sym {
    size_t offset;
    const char *name;
    const char *fallback;
    bool optional;
} Sym;

#define SYM(field, name)                                                                                               \
    { offsetof(RtCuda, field), name, NULL, false }
#define SYM2(field, name, old)                                                                                         \
    { offsetof(RtCuda, field), name, old, false }
#define SYM_OPTIONAL(field, name)                                                                                      \
    { offsetof(RtCuda, field), name, NULL, true }

static const Sym syms[] = {
    SYM(cuInit, "cuInit"),
    SYM(cuDriverGetVersion, "cuDriverGetVersion"),
    SYM(cuDeviceGet, "cuDeviceGet"),
    SYM(cuDeviceGetCount, "cuDeviceGetCount"),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(cuCtxGetCurrent, "cuCtxGetCurrent"),
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent"),
    SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
    SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
    SYM(cuCtxGetDevice, "cuCtxGetDevice"),
    SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
    SYM(cuModuleUnload, "cuModuleUnload"),
    SYM(cuModuleGetFunction, "cuModuleGetFunction"),
    SYM(cuLaunchKernel, "cuLaunchKernel"),
    SYM(cuFuncSetAttribute, "cuFuncSetAttribute"),
    SYM(cuFuncGetAttribute, "cuFuncGetAttribute"),
    SYM(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
    SYM(cuLinkCreate, "cuLinkCreate_v2"),
    SYM(cuLinkAddData, "cuLinkAddData_v2"),
    SYM(cuLinkComplete, "cuLinkComplete"),
    SYM(cuLinkDestroy, "cuLinkDestroy"),
    SYM(cuGetErrorName, "cuGetErrorName"),
    SYM(cuGetErrorString, "cuGetErrorString"),
    SYM(cuMemAlloc, "cuMemAlloc_v2"),
    SYM(cuMemFree, "cuMemFree_v2"),
    SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(cuMemsetD8, "cuMemsetD8_v2"),
    SYM(cuMemsetD8Async, "cuMemsetD8Async"),
    SYM(cuStreamCreate, "cuStreamCreate"),
    SYM(cuStreamDestroy, "cuStreamDestroy_v2"),
    SYM(cuStreamSynchronize, "cuStreamSynchronize"),
    SYM(cuEventCreate, "cuEventCreate"),
    SYM(cuEventRecord, "cuEventRecord"),
    SYM(cuEventSynchronize, "cuEventSynchronize"),
    /* CUDA 12.8 added _v2 and CUDA 13's cuda.h maps the name to it. */
    SYM2(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SYM(cuEventDestroy, "cuEventDestroy_v2"),
    /* CUDA 12.0: only kernels with tensor maps (TMA, sm_90a) need it. */
    SYM_OPTIONAL(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
    /* only the autotuner's table needs the device's name */
    SYM_OPTIONAL(cuDeviceGetName, "cuDeviceGetName"),
};

tc_status rt_cuda_open(const char *soname, RtCuda *out) {
    memset(out, 0, sizeof *out);
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return rt_fail(TC_ERROR_NO_DRIVER, "%s not found: no NVIDIA driver on this machine (%s)", soname, dlerror());
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p && syms[i].fallback)
            p = dlsym(h, syms[i].fallback);
        if (!p && syms[i].optional)
            continue;
        if (!p) {
            dlclose(h);
            memset(out, 0, sizeof *out);
            return rt_fail(TC_ERROR_NO_DRIVER, "%s has no %s: the NVIDIA driver is too old or this is not libcuda",
                           soname, syms[i].name);
        }
        /* POSIX guarantees that a data pointer from dlsym converts to a function pointer. */
        memcpy((char *)out + syms[i].offset, &p, sizeof p);
    }
    out->handle = h;
    return TC_OK;
}

void rt_cuda_close(RtCuda *cu) {
    if (cu->handle)
        dlclose(cu->handle);
    memset(cu, 0, sizeof *cu);
}

/* ---- the process's driver ---- */

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static tc_status load_status;
static char load_message[512];

static void load(void) {
    const char *interpret = secure_getenv("TILEC_INTERPRET");
    if (interpret && *interpret && strcmp(interpret, "0") != 0) {
        if (strcmp(interpret, "1") == 0) {
            rt_host_driver(&rt_cu);
            load_status = TC_OK;
        } else {
            load_status = rt_fail(TC_ERROR_INVALID_ARGUMENT, "TILEC_INTERPRET=%.32s: must be 0 or 1", interpret);
            snprintf(load_message, sizeof load_message, "%s", tc_last_error());
        }
        return;
    }
    load_status = rt_cuda_open("libcuda.so.1", &rt_cu);
    if (load_status == TC_OK) {
        RtCuResult r = rt_cu.cuInit(0);
        if (r != RT_CUDA_SUCCESS)
            load_status = rt_cuda_check(r, "cuInit");
    }
    if (load_status != TC_OK)
        snprintf(load_message, sizeof load_message, "%s", tc_last_error());
}

tc_status rt_cuda_load(void) {
    pthread_once(&load_once, load);
    if (load_status != TC_OK)
        return rt_fail(load_status, "%s", load_message);
    return TC_OK;
}

tc_status rt_cuda_check(RtCuResult r, const char *what) {
    if (r == RT_CUDA_SUCCESS)
        return TC_OK;
    const char *name = NULL, *text = NULL;
    if (rt_cu.cuGetErrorName)
        rt_cu.cuGetErrorName(r, &name);
    if (rt_cu.cuGetErrorString)
        rt_cu.cuGetErrorString(r, &text);
    char code[32];
    if (!name) {
        snprintf(code, sizeof code, "CUDA error %d", r);
        name = code;
    }
    tc_status st = TC_ERROR_CUDA;
    switch (r) {
    case RT_CUDA_ERROR_NO_DEVICE:
    case RT_CUDA_ERROR_INVALID_DEVICE:
    case RT_CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: st = TC_ERROR_NO_DEVICE; break;
    case RT_CUDA_ERROR_STUB_LIBRARY:
    case RT_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: st = TC_ERROR_NO_DRIVER; break;
    case RT_CUDA_ERROR_OUT_OF_MEMORY: st = TC_ERROR_OUT_OF_MEMORY; break;
    }
    return rt_fail(st, "%s: %s (%s)", what, name, text ? text : "no description");
}

/* ---- public queries ---- */

tc_status tc_driver_version(int *version) {
    if (!version)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_driver_version: version is NULL");
    *version = 0;
    tc_status st = rt_cuda_load();
    if (st != TC_OK)
        return st;
    return rt_cuda_check(rt_cu.cuDriverGetVersion(version), "cuDriverGetVersion");
}

tc_status tc_device_count(int *count) {
    if (!count)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_device_count: count is NULL");
    *count = 0;
    tc_status st = rt_cuda_load();
    if (st == TC_ERROR_NO_DEVICE)
        return TC_OK; /* a driver without GPUs: zero of them */
    if (st != TC_OK)
        return st;
    return rt_cuda_check(rt_cu.cuDeviceGetCount(count), "cuDeviceGetCount");
}
