/*
 * main.c — a program that runs a kernel compiled ahead of time: CMake runs
 * `tilec --aot lib/softmax.tile` at build time, which writes softmax.h and
 * softmax.c (the PTX and cubins, and a typed launcher per kernel). This
 * program links neither libtilec nor libcuda: the generated code opens the
 * driver itself, and so does this file, for the little memory management it
 * needs (a real program would use its framework's allocator).
 *
 * Exit status: 0 correct, 1 wrong or failed, 77 skipped (no driver or GPU).
 */
#include "softmax.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../f16.h"

/* The four driver calls this example makes itself. */
typedef int (*MemAllocFn)(CUdeviceptr *, size_t);
typedef int (*MemFreeFn)(CUdeviceptr);
typedef int (*CopyHtoDFn)(CUdeviceptr, const void *, size_t);
typedef int (*CopyDtoHFn)(void *, CUdeviceptr, size_t);
static MemAllocFn mem_alloc;
static MemFreeFn mem_free;
static CopyHtoDFn copy_htod;
static CopyDtoHFn copy_dtoh;

static int open_memory_functions(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *p[4] = {0};
    if (lib) {
        p[0] = dlsym(lib, "cuMemAlloc_v2");
        p[1] = dlsym(lib, "cuMemFree_v2");
        p[2] = dlsym(lib, "cuMemcpyHtoD_v2");
        p[3] = dlsym(lib, "cuMemcpyDtoH_v2");
    }
    memcpy(&mem_alloc, &p[0], sizeof p[0]);
    memcpy(&mem_free, &p[1], sizeof p[1]);
    memcpy(&copy_htod, &p[2], sizeof p[2]);
    memcpy(&copy_dtoh, &p[3], sizeof p[3]);
    return mem_alloc && mem_free && copy_htod && copy_dtoh;
}

int main(void) {
    tc_status st = softmax_load(NULL); /* device 0 */
    if (st == TC_ERROR_NO_DRIVER || st == TC_ERROR_NO_DEVICE) {
        printf("aot_softmax: skipped: %s\n", softmax_last_error());
        return 77;
    }
    if (st != TC_OK) {
        fprintf(stderr, "aot_softmax: softmax_load: status %d\n%s\n", (int)st, softmax_last_error());
        return 1;
    }
    printf("aot_softmax: loaded %s\n", softmax_image());
    if (!open_memory_functions())
        return 1;

    enum { ROWS = 1027, COLS = 1000 }; /* BLOCK = 1024 (the kernel's default): one tile per row */
    size_t n = (size_t)ROWS * COLS;
    uint16_t *hx = malloc(n * 2), *hy = malloc(n * 2);
    srand((unsigned)time(NULL));
    for (size_t i = 0; i < n; i++)
        hx[i] = f32_to_f16((float)rand() / (float)RAND_MAX * 6.0f - 3.0f);
    CUdeviceptr x, y;
    if (mem_alloc(&x, n * 2) || mem_alloc(&y, n * 2) || copy_htod(x, hx, n * 2))
        return 1;

    st = softmax_softmax_fwd(NULL, (void *)y, (const void *)x, COLS, COLS, COLS, (tc_dim3){ROWS, 1, 1});
    if (st != TC_OK) {
        fprintf(stderr, "aot_softmax: launch: status %d\n%s\n", (int)st, softmax_last_error());
        return 1;
    }
    /* a wrong call is refused, not crashed on */
    if (softmax_softmax_fwd(NULL, NULL, (const void *)x, COLS, COLS, COLS, (tc_dim3){ROWS, 1, 1}) !=
        TC_ERROR_INVALID_ARGUMENT)
        return 1;
    if (copy_dtoh(hy, y, n * 2)) /* synchronous: waits for the kernel */
        return 1;

    double max_err = 0;
    for (int r = 0; r < ROWS; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < COLS; c++)
            m = fmax(m, f16_to_f32(hx[(size_t)r * COLS + c]));
        for (int c = 0; c < COLS; c++)
            s += exp(f16_to_f32(hx[(size_t)r * COLS + c]) - m);
        for (int c = 0; c < COLS; c++) {
            double want = exp(f16_to_f32(hx[(size_t)r * COLS + c]) - m) / s;
            double err = fabs(f16_to_f32(hy[(size_t)r * COLS + c]) - want);
            max_err = err <= max_err ? max_err : isnan(err) ? INFINITY : err;
        }
    }
    mem_free(x);
    mem_free(y);
    softmax_unload();
    free(hx);
    free(hy);
    printf("aot_softmax: %d x %d f16, max |error| = %.3g: %s\n", ROWS, COLS, max_err,
           max_err <= 2e-3 ? "ok" : "FAILED");
    return max_err <= 2e-3 ? 0 : 1;
}
