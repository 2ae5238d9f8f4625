/*
 * fake_libcuda.h — what the fake libcuda.so.1 (fake_libcuda.c) records of
 * the tensor maps it encodes and of the launches it runs, for the tests
 * that check what the runtime and the AOT launchers pass the driver. A test
 * finds the recorder with dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)
 * and dlsym(handle, "fake_cuda_last_launch").
 */
#ifndef TILEC_FAKE_LIBCUDA_H
#define TILEC_FAKE_LIBCUDA_H

#include <stdint.h>
#include <string.h>

#define FAKE_TMAP_MAGIC 0x70616d74u /* "tmap" */
#define FAKE_MAX_PARAMS 80

/* The arguments of a cuTensorMapEncodeTiled call, as the fake writes them
 * into the 128 bytes of the map it encodes. */
typedef struct FakeTensorMap {
    uint32_t magic; /* FAKE_TMAP_MAGIC */
    uint8_t dtype, rank, interleave, swizzle, l2_promotion, oob_fill;
    uint8_t element_strides[5];
    uint64_t address;
    uint64_t dim[5];
    uint64_t stride[4]; /* bytes */
    uint32_t box[5];
} FakeTensorMap;

/* The last launch: its kernel, and the parameters its PTX entry declares. */
typedef struct FakeLaunch {
    char kernel[128];
    unsigned grid[3], block, shared;
    int num_params;                  /* in the entry's PTX declaration */
    void *params[FAKE_MAX_PARAMS];   /* the addresses the launch passed */
    int is_map[FAKE_MAX_PARAMS];     /* declared `.param .align 64 .b8 NAME[128]`: a tensor map, copied below */
    FakeTensorMap map[FAKE_MAX_PARAMS];
    long launches;                   /* launches so far */
    long encodes;                    /* cuTensorMapEncodeTiled calls so far */
    long ptx_loads;                  /* cuModuleLoadDataEx of PTX (not of a linked image) so far */
    int line_info;                   /* the last PTX compile (cuLinkCreate, cuModuleLoadDataEx of PTX) had
                                        CU_JIT_GENERATE_LINE_INFO = 1 */
} FakeLaunch;

typedef const FakeLaunch *(*FakeLastLaunchFn)(void);

/* The record of a cuTensorMapEncodeTiled call (its arguments as the driver
 * takes them; enums as ints): what the fake writes into a map. */
static inline FakeTensorMap fake_tensor_map_of(int dtype, uint32_t rank, const void *address, const uint64_t *dim,
                                               const uint64_t *strides, const uint32_t *box,
                                               const uint32_t *element_strides, int interleave, int swizzle,
                                               int l2_promotion, int oob_fill) {
    FakeTensorMap t;
    uint32_t i;
    memset(&t, 0, sizeof t);
    t.magic = FAKE_TMAP_MAGIC;
    t.dtype = (uint8_t)dtype, t.rank = (uint8_t)rank, t.interleave = (uint8_t)interleave;
    t.swizzle = (uint8_t)swizzle, t.l2_promotion = (uint8_t)l2_promotion, t.oob_fill = (uint8_t)oob_fill;
    t.address = (uint64_t)(uintptr_t)address;
    for (i = 0; i < rank && i < 5; i++) {
        t.element_strides[i] = (uint8_t)element_strides[i];
        t.dim[i] = dim[i];
        t.box[i] = box[i];
        if (i > 0)
            t.stride[i - 1] = strides[i - 1];
    }
    return t;
}

#endif
