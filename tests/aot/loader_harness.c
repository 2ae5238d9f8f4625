/*
 * Compiles driver/aot/loader.c as the generated launchers do (the
 * definitions it expects, then the file) and runs it: under tests/gpu's
 * fake libcuda it loads, picks the image for the device, launches and
 * unloads; without a driver it must say so; with a kernel that asks for more
 * shared memory than any device has (BIG_SHARED), the load must refuse it.
 *
 *   loader_harness fake|nodriver
 */
#include <tilec/runtime.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define tcaot_NUM_KERNELS 1
#define tcaot_TARGETS "sm_90a (PTX), sm_80 (PTX)"

static const char *const tcaot_kernel_names[tcaot_NUM_KERNELS] = {"empty"};
static const char tcaot_ptx_90[] = ".version 8.0\n.target sm_90a\n.visible .entry empty()\n{\n\tret;\n}\n";
static const char tcaot_ptx_80[] = ".version 7.0\n.target sm_80\n.visible .entry empty()\n{\n\tret;\n}\n";

struct tcaot_image_desc {
    const char *what;
    int cc;
    int exact;
    int is_cubin;
    const void *image;
    unsigned block[tcaot_NUM_KERNELS];
    unsigned shared[tcaot_NUM_KERNELS];
};

#ifdef BIG_SHARED
#define SHARED 0xFFFFFFF0u /* with any static shared memory, a 32-bit sum would wrap */
#else
#define SHARED 0u
#endif

static const struct tcaot_image_desc tcaot_images[] = {
    {"sm_90a PTX", 90, 1, 0, tcaot_ptx_90, {128}, {SHARED}},
    {"sm_80 PTX", 80, 0, 0, tcaot_ptx_80, {128}, {SHARED}},
};

#include "driver/aot/loader.c"

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s (last error: %s)\n", what, tcaot_last_error());
        failures++;
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    tc_dim3 grid = {3, 1, 1};
    if (strcmp(mode, "nodriver") == 0) {
        check(tcaot_load(NULL) == TC_ERROR_NO_DRIVER, "load without a driver is TC_ERROR_NO_DRIVER");
        check(strstr(tcaot_last_error(), "libcuda.so.1") != NULL, "the error names libcuda.so.1");
    } else if (strcmp(mode, "fake") == 0) {
#ifdef BIG_SHARED
        check(tcaot_launch(0, "empty", grid, NULL, NULL) == TC_ERROR_INVALID_ARGUMENT, "launch before load");
        check(tcaot_load(NULL) == TC_ERROR_UNSUPPORTED, "a kernel over the device's shared memory is refused");
        check(strstr(tcaot_last_error(), "shared memory") != NULL, "the error says why");
        check(strcmp(tcaot_image(), "") == 0, "nothing is loaded");
#else
        check(tcaot_launch(0, "empty", grid, NULL, NULL) == TC_ERROR_INVALID_ARGUMENT, "launch before load");
        check(strstr(tcaot_last_error(), "tcaot_load has not been called") != NULL, "the error says why");
        check(tcaot_load(NULL) == TC_OK, "load");
        check(strcmp(tcaot_image(), "sm_90a PTX") == 0, "the sm_90a image serves compute capability 9.0");
        check(tcaot_load(NULL) == TC_OK, "a second load into the same context");
        check(tcaot_launch(0, "empty", grid, NULL, NULL) == TC_OK, "launch");
        check(tcaot_launch(0, "empty", (tc_dim3){0, 1, 1}, NULL, NULL) == TC_OK, "an empty grid");
        check(tcaot_unload() == TC_OK, "unload");
        check(tcaot_unload() == TC_OK, "unload twice");
        check(tcaot_launch(0, "empty", grid, NULL, NULL) == TC_ERROR_INVALID_ARGUMENT, "launch after unload");
#endif
    } else {
        fprintf(stderr, "usage: loader_harness fake|nodriver\n");
        return 2;
    }
    printf("loader_harness %s: %s\n", mode, failures ? "FAILED" : "ok");
    return failures != 0;
}
