/*
 * Compiles driver/aot/loader.c as the generated launchers do (the
 * definitions it expects, then the file) and runs it: under tests/gpu's
 * fake libcuda it loads, picks the image for the device, launches (a kernel
 * with a tensor map in the sm_90a image too: the maps the fake driver
 * records are checked, the zero buffer and the refused arguments; and one
 * that is persistent in the sm_90a image: the programs launched, the grid
 * passed, the grids refused, a kernel no program of which fits) and
 * unloads; without a driver it must say so; with a kernel that asks for more
 * shared memory than any device has (BIG_SHARED), the load must refuse it.
 *
 *   loader_harness fake|nodriver
 */
#include <tilec/runtime.h>

#include "tests/gpu/fake_libcuda.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define tcaot_NUM_KERNELS 3
#define tcaot_TARGETS "sm_90a (PTX), sm_80 (PTX)"
#define tcaot_MAX_MAPS 1
#define tcaot_LINE_INFO 0

static const char *const tcaot_kernel_names[tcaot_NUM_KERNELS] = {"empty", "empty_tmap", "empty_persistent"};
/* empty_tmap(f16* a, i32 m, i32 k, i64 s): on sm_90a with A's tensor map after its arguments;
 * empty_persistent(the same): on sm_90a persistent, the grid after the arguments, then the map */
static const char tcaot_ptx_90[] = ".version 8.0\n.target sm_90a\n.visible .entry empty()\n{\n\tret;\n}\n"
                                   ".visible .entry empty_tmap(.param .u64 a, .param .u32 m, .param .u32 k, "
                                   ".param .u64 s, .param .align 64 .b8 a_tmap[128])\n{\n\tret;\n}\n"
                                   ".visible .entry empty_persistent(.param .u64 a, .param .u32 m, .param .u32 k, "
                                   ".param .u64 s, .param .u32 gx, .param .u32 gy, .param .u32 gz, "
                                   ".param .align 64 .b8 a_tmap[128])\n{\n\tret;\n}\n";
static const char tcaot_ptx_80[] = ".version 7.0\n.target sm_80\n.visible .entry empty()\n{\n\tret;\n}\n"
                                   ".visible .entry empty_tmap(.param .u64 a, .param .u32 m, .param .u32 k, "
                                   ".param .u64 s)\n{\n\tret;\n}\n"
                                   ".visible .entry empty_persistent(.param .u64 a, .param .u32 m, .param .u32 k, "
                                   ".param .u64 s)\n{\n\tret;\n}\n";

struct tcaot_tensor_map {
    const char *base_name;
    int base;
    int dtype;
    unsigned elem_bytes;
    unsigned rank;
    int dim_arg[5];
    unsigned dim_bytes[5];
    long long dim[5];
    int stride_arg[5];
    unsigned stride_bytes[5];
    long long stride[5];
    unsigned box[5];
    int swizzle;
};

/* A: f16 [m, k] rows s apart, 128x64 boxes, the 128-byte swizzle (CUtensorMapSwizzle 3) */
static const struct tcaot_tensor_map tcaot_maps_0_1[] = {
    {"a", 0, 6, 2, 2, {2, 1}, {4, 4}, {0, 0}, {-1, 3}, {0, 8}, {0, 0}, {64, 128}, 3},
};

struct tcaot_image_desc {
    const char *what;
    int cc;
    int exact;
    int is_cubin;
    const void *image;
    unsigned block[tcaot_NUM_KERNELS];
    unsigned shared[tcaot_NUM_KERNELS];
    unsigned num_maps[tcaot_NUM_KERNELS];
    const struct tcaot_tensor_map *maps[tcaot_NUM_KERNELS];
    unsigned persistent[tcaot_NUM_KERNELS];
};

#ifdef BIG_SHARED
#define SHARED 0xFFFFFFF0u /* with any static shared memory, a 32-bit sum would wrap */
#else
#define SHARED 0u
#endif

static const struct tcaot_image_desc tcaot_images[] = {
    {"sm_90a PTX", 90, 1, 0, tcaot_ptx_90, {128, 128, 128}, {SHARED, 0, 0}, {0, 1, 1},
     {NULL, tcaot_maps_0_1, tcaot_maps_0_1}, {0, 0, 1}},
    {"sm_80 PTX", 80, 0, 0, tcaot_ptx_80, {128, 128, 128}, {SHARED, 0, 0}, {0, 0, 0}, {NULL, NULL, NULL}, {0, 0, 0}},
};

#include "driver/aot/loader.c"

static int failures;
/* what the launchers of kernels without arguments pass: room for the hidden ones */
static void *no_args[4];

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s (last error: %s)\n", what, tcaot_last_error());
        failures++;
    }
}

#ifndef BIG_SHARED
/* empty_tmap's launches, and the maps the fake driver saw. */
static void check_tensor_maps(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = cuda ? dlsym(cuda, "fake_cuda_last_launch") : NULL;
    FakeLastLaunchFn last_fn;
    const FakeLaunch *l;
    const FakeTensorMap *m;
    void *a = (void *)(size_t)0x10000;
    int32_t rows = 100, cols = 64;
    int64_t stride = 72;
    void *args[5] = {&a, &rows, &cols, &stride, NULL}; /* room for the map */
    tc_dim3 grid = {2, 1, 1};
    unsigned long long zero;
    check(sym != NULL, "the fake driver's recorder");
    if (!sym)
        return;
    memcpy(&last_fn, &sym, sizeof last_fn);
    l = last_fn();
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_OK, "launch with a tensor map");
    check(strcmp(l->kernel, "empty_tmap") == 0 && l->num_params == 5, "the sm_90a kernel takes 5 parameters");
    check(l->params[0] == &a && l->params[3] == &stride && l->is_map[4] && !l->is_map[3], "the map after the arguments");
    m = &l->map[4];
    check(m->magic == FAKE_TMAP_MAGIC && m->dtype == 6 && m->rank == 2 && m->address == 0x10000, "map: f16, rank 2, a");
    check(m->dim[0] == 64 && m->dim[1] == 100 && m->stride[0] == 144, "map: dims {k, m}, the row stride in bytes");
    check(m->box[0] == 64 && m->box[1] == 128 && m->swizzle == 3 && m->l2_promotion == 2 && m->oob_fill == 0 &&
              m->interleave == 0 && m->element_strides[0] == 1 && m->element_strides[1] == 1,
          "map: box, swizzle, L2 promotion, zero fill, element strides");
    rows = 0; /* every element masked: the zero buffer's map */
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_OK, "launch with an empty tensor");
    zero = l->map[4].address;
    check(zero != 0 && zero != 0x10000 && zero % 16 == 0 && l->map[4].dim[0] == 1 && l->map[4].dim[1] == 1 &&
              l->map[4].stride[0] == 16,
          "an empty tensor's map covers the zero buffer");
    check(*(const unsigned long long *)(size_t)zero == 0 && ((const unsigned long long *)(size_t)zero)[1] == 0,
          "the zero buffer holds zeros");
    rows = -3;
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_OK && l->map[4].address == zero,
          "a negative extent: the same zero buffer");
    rows = 100;
    stride = 68;
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_ERROR_INVALID_ARGUMENT &&
              strstr(tcaot_last_error(), "16-byte aligned strides") != NULL,
          "a stride of 136 bytes is refused");
    stride = 72;
    a = (void *)(size_t)0x10008;
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_ERROR_INVALID_ARGUMENT &&
              strstr(tcaot_last_error(), "a = 0x10008 is not 16-byte aligned") != NULL,
          "a misaligned base is refused");
    a = (void *)(size_t)0x10000;
    rows = 1 << 30;
    stride = (int64_t)1 << 39; /* 2^40 bytes */
    check(tcaot_launch(1, "empty_tmap", grid, NULL, args, 4) == TC_ERROR_INVALID_ARGUMENT, "a stride of 2^40 bytes");
    dlclose(cuda);
}

/* empty_persistent's launches: the programs the device holds at once (the
 * fake's 132 multiprocessors hold 2 each), the grid after the arguments. */
static void check_persistent(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = cuda ? dlsym(cuda, "fake_cuda_last_launch") : NULL;
    FakeLastLaunchFn last_fn;
    const FakeLaunch *l;
    void *a = (void *)(size_t)0x10000;
    int32_t rows = 100, cols = 64, g[3] = {0, 0, 0};
    int64_t stride = 72;
    void *args[8] = {&a, &rows, &cols, &stride, NULL, NULL, NULL, NULL}; /* room for the grid and the map */
    tc_dim3 grid = {40, 30, 1};
    int i;
    check(sym != NULL, "the fake driver's recorder");
    if (!sym)
        return;
    memcpy(&last_fn, &sym, sizeof last_fn);
    l = last_fn();
    check(tcaot_state.programs[2] == 264 && tcaot_state.programs[1] == 0, "264 programs at once, if persistent");
    check(tcaot_launch(2, "empty_persistent", grid, NULL, args, 4) == TC_OK, "a persistent launch");
    check(strcmp(l->kernel, "empty_persistent") == 0 && l->num_params == 8, "the sm_90a kernel takes 8 parameters");
    check(l->grid[0] == 264 && l->grid[1] == 1 && l->grid[2] == 1, "as many programs as the device holds");
    for (i = 0; i < 3; i++)
        if (l->params[4 + i])
            memcpy(&g[i], l->params[4 + i], sizeof g[i]);
    check(g[0] == 40 && g[1] == 30 && g[2] == 1, "the grid after the arguments");
    check(l->params[3] == &stride && l->is_map[7] && l->map[7].address == 0x10000, "then the map");
    grid.x = 7, grid.y = 2;
    check(tcaot_launch(2, "empty_persistent", grid, NULL, args, 4) == TC_OK && l->grid[0] == 14,
          "a grid smaller than the device: one program each");
    grid.x = 1u << 16, grid.y = 1u << 15;
    check(tcaot_launch(2, "empty_persistent", grid, NULL, args, 4) == TC_ERROR_INVALID_ARGUMENT &&
              strstr(tcaot_last_error(), "grid 65536x32768x1 has 2147483648 programs, more than 2^31 - 1") != NULL,
          "a grid of 2^31 programs is refused");
    grid.x = 0;
    check(tcaot_launch(2, "empty_persistent", grid, NULL, args, 4) == TC_OK && l->grid[0] == 14, "an empty grid");
    dlclose(cuda);
}
#endif

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    tc_dim3 grid = {3, 1, 1};
    if (strcmp(mode, "nodriver") == 0) {
        check(tcaot_load(NULL) == TC_ERROR_NO_DRIVER, "load without a driver is TC_ERROR_NO_DRIVER");
        check(strstr(tcaot_last_error(), "libcuda.so.1") != NULL, "the error names libcuda.so.1");
    } else if (strcmp(mode, "fake") == 0) {
#ifdef BIG_SHARED
        check(tcaot_launch(0, "empty", grid, NULL, no_args, 0) == TC_ERROR_INVALID_ARGUMENT, "launch before load");
        check(tcaot_load(NULL) == TC_ERROR_UNSUPPORTED, "a kernel over the device's shared memory is refused");
        check(strstr(tcaot_last_error(), "shared memory") != NULL, "the error says why");
        check(strcmp(tcaot_image(), "") == 0, "nothing is loaded");
#else
        check(tcaot_launch(0, "empty", grid, NULL, no_args, 0) == TC_ERROR_INVALID_ARGUMENT, "launch before load");
        check(strstr(tcaot_last_error(), "tcaot_load has not been called") != NULL, "the error says why");
        check(tcaot_load(NULL) == TC_OK, "load");
        check(strcmp(tcaot_image(), "sm_90a PTX") == 0, "the sm_90a image serves compute capability 9.0");
        check(tcaot_state.zero != 0, "an image with tensor maps has its zero buffer");
        check(tcaot_load(NULL) == TC_OK, "a second load into the same context");
        check(tcaot_launch(0, "empty", grid, NULL, no_args, 0) == TC_OK, "launch");
        check(tcaot_launch(0, "empty", (tc_dim3){0, 1, 1}, NULL, no_args, 0) == TC_OK, "an empty grid");
        check_tensor_maps();
        check_persistent();
        check(tcaot_unload() == TC_OK, "unload");
        check(tcaot_state.zero == 0, "unload frees the zero buffer");
        check(tcaot_unload() == TC_OK, "unload twice");
        check(tcaot_launch(0, "empty", grid, NULL, no_args, 0) == TC_ERROR_INVALID_ARGUMENT, "launch after unload");
        setenv("TILEC_FAKE_CUDA_OCCUPANCY", "0", 1);
        check(tcaot_load(NULL) == TC_ERROR_UNSUPPORTED &&
                  strstr(tcaot_last_error(), "tcaot: persistent kernel empty_persistent: the device holds none of "
                                             "its programs at once (132 multiprocessors, 0 programs of 128") != NULL,
              "a persistent kernel no program of which fits is refused");
        check(strcmp(tcaot_image(), "") == 0 && tcaot_state.programs[2] == 0, "nothing is loaded");
        unsetenv("TILEC_FAKE_CUDA_OCCUPANCY");
#endif
    } else {
        fprintf(stderr, "usage: loader_harness fake|nodriver\n");
        return 2;
    }
    printf("loader_harness %s: %s\n", mode, failures ? "FAILED" : "ok");
    return failures != 0;
}
