/*
 * loader.c — the part of every launcher that `tilec --aot` generates which
 * is the same for all of them: the CUDA driver opened with dlopen, loading
 * the best image for the device, and the launch with its context handling,
 * the grid a persistent kernel takes and the tensor maps it builds (by the
 * rules of tilec's runtime: tc_kernel_desc and tc_tensor_map_desc in
 * include/tilec/runtime.h).
 *
 * It is written here as C and compiled as C (tests/aot/loader_harness.c
 * compiles and runs it under the fake driver); the build embeds it into
 * libtilec as text (cmake/embed_text.cmake), and driver/aot.c copies it
 * into each generated NAME.c from the marker line below on, with every
 * "tcaot" replaced by NAME. What it uses, the generated code defines before
 * it: tilec/runtime.h (tc_status, tc_dim3, the CUDA handle types), the
 * includes <dlfcn.h>, <stdarg.h>, <stddef.h>, <stdio.h>, <string.h>, and
 *
 *     #define tcaot_NUM_KERNELS n
 *     #define tcaot_TARGETS "sm_90a (PTX, cubin), ..."
 *     #define tcaot_MAX_MAPS m   (the most tensor maps a launch builds; at least 1)
 *     #define tcaot_LINE_INFO 0 or 1 (1: the PTX has line info, which the driver keeps)
 *     static const char *const tcaot_kernel_names[tcaot_NUM_KERNELS];
 *     struct tcaot_tensor_map { base_name, base, dtype, elem_bytes, rank, dim_arg[5],
 *                               dim_bytes[5], dim[5], stride_arg[5], stride_bytes[5],
 *                               stride[5], box[5], swizzle };
 *     struct tcaot_image_desc { what, cc, exact, is_cubin, image, block[], shared[],
 *                               num_maps[], maps[], persistent[] };
 *     static const struct tcaot_image_desc tcaot_images[];
 *
 * It must stay plain C11 with no other dependency, clean under -Wall
 * -Wextra -pedantic: a deployed program compiles it with its own flags.
 */

/* ---- the CUDA driver, opened with dlopen on first load ---- */

typedef int tcaot_CUresult;

struct tcaot_driver {
    void *lib;
    tcaot_CUresult (*init)(unsigned);
    tcaot_CUresult (*ctx_get_current)(CUcontext *);
    tcaot_CUresult (*ctx_set_current)(CUcontext);
    tcaot_CUresult (*ctx_push)(CUcontext);
    tcaot_CUresult (*ctx_pop)(CUcontext *);
    tcaot_CUresult (*ctx_get_device)(CUdevice *);
    tcaot_CUresult (*device_get)(CUdevice *, int);
    tcaot_CUresult (*device_get_attribute)(int *, int, CUdevice);
    tcaot_CUresult (*primary_retain)(CUcontext *, CUdevice);
    tcaot_CUresult (*primary_release)(CUdevice);
    tcaot_CUresult (*module_load)(CUmodule *, const void *, unsigned, int *, void **);
    tcaot_CUresult (*module_unload)(CUmodule);
    tcaot_CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    tcaot_CUresult (*func_get_attribute)(int *, int, CUfunction);
    tcaot_CUresult (*func_set_attribute)(CUfunction, int, int);
    tcaot_CUresult (*occupancy)(int *, CUfunction, int, size_t);
    tcaot_CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          CUstream, void **, void **);
    tcaot_CUresult (*error_name)(tcaot_CUresult, const char **);
    tcaot_CUresult (*error_string)(tcaot_CUresult, const char **);
    tcaot_CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    tcaot_CUresult (*mem_free)(CUdeviceptr);
    tcaot_CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    tcaot_CUresult (*stream_synchronize)(CUstream);
    /* optional (CUDA 12.0): only images with tensor maps need it */
    tcaot_CUresult (*tensor_map_encode)(void *, int, unsigned, void *, const unsigned long long *,
                                     const unsigned long long *, const unsigned *, const unsigned *, int, int, int,
                                     int);
};

static struct tcaot_driver tcaot_cu;

static struct {
    CUcontext ctx;   /* where the module is loaded */
    CUmodule module; /* NULL: not loaded */
    int retained;    /* tcaot_load retained device `device`'s primary context */
    CUdevice device;
    const struct tcaot_image_desc *image;
    CUfunction fn[tcaot_NUM_KERNELS];
    unsigned programs[tcaot_NUM_KERNELS]; /* a persistent kernel's programs resident at once on the device */
    CUdeviceptr zero; /* 16 zeroed bytes: what the tensor maps of a fully masked tensor cover */
} tcaot_state;

static _Thread_local char tcaot_error[4096];

const char *tcaot_last_error(void) { return tcaot_error; }

const char *tcaot_image(void) { return tcaot_state.image ? tcaot_state.image->what : ""; }

#ifdef __GNUC__
static tc_status tcaot_fail(tc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif

static tc_status tcaot_fail(tc_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tcaot_error, sizeof tcaot_error, fmt, ap);
    va_end(ap);
    return st;
}

static tc_status tcaot_check(tcaot_CUresult r, const char *what) {
    const char *name = "CUDA error", *text = "no description";
    if (r == 0)
        return TC_OK;
    if (tcaot_cu.error_name)
        tcaot_cu.error_name(r, &name);
    if (tcaot_cu.error_string)
        tcaot_cu.error_string(r, &text);
    tcaot_fail(TC_ERROR_CUDA, "%s: %s %d (%s)", what, name, r, text);
    if (r == 100 || r == 101) /* CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE */
        return TC_ERROR_NO_DEVICE;
    if (r == 34 || r == 803) /* CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH */
        return TC_ERROR_NO_DRIVER;
    return r == 2 ? TC_ERROR_OUT_OF_MEMORY : TC_ERROR_CUDA;
}

static tc_status tcaot_open_driver(void) {
    static const struct {
        size_t offset;
        const char *name;
    } syms[] = {
        {offsetof(struct tcaot_driver, init), "cuInit"},
        {offsetof(struct tcaot_driver, ctx_get_current), "cuCtxGetCurrent"},
        {offsetof(struct tcaot_driver, ctx_set_current), "cuCtxSetCurrent"},
        {offsetof(struct tcaot_driver, ctx_push), "cuCtxPushCurrent_v2"},
        {offsetof(struct tcaot_driver, ctx_pop), "cuCtxPopCurrent_v2"},
        {offsetof(struct tcaot_driver, ctx_get_device), "cuCtxGetDevice"},
        {offsetof(struct tcaot_driver, device_get), "cuDeviceGet"},
        {offsetof(struct tcaot_driver, device_get_attribute), "cuDeviceGetAttribute"},
        {offsetof(struct tcaot_driver, primary_retain), "cuDevicePrimaryCtxRetain"},
        {offsetof(struct tcaot_driver, primary_release), "cuDevicePrimaryCtxRelease_v2"},
        {offsetof(struct tcaot_driver, module_load), "cuModuleLoadDataEx"},
        {offsetof(struct tcaot_driver, module_unload), "cuModuleUnload"},
        {offsetof(struct tcaot_driver, module_get_function), "cuModuleGetFunction"},
        {offsetof(struct tcaot_driver, func_get_attribute), "cuFuncGetAttribute"},
        {offsetof(struct tcaot_driver, func_set_attribute), "cuFuncSetAttribute"},
        {offsetof(struct tcaot_driver, occupancy), "cuOccupancyMaxActiveBlocksPerMultiprocessor"},
        {offsetof(struct tcaot_driver, launch), "cuLaunchKernel"},
        {offsetof(struct tcaot_driver, error_name), "cuGetErrorName"},
        {offsetof(struct tcaot_driver, error_string), "cuGetErrorString"},
        {offsetof(struct tcaot_driver, mem_alloc), "cuMemAlloc_v2"},
        {offsetof(struct tcaot_driver, mem_free), "cuMemFree_v2"},
        {offsetof(struct tcaot_driver, memset_d8), "cuMemsetD8_v2"},
        {offsetof(struct tcaot_driver, stream_synchronize), "cuStreamSynchronize"},
    };
    void *encode;
    struct tcaot_driver cu;
    if (tcaot_cu.lib)
        return TC_OK;
    memset(&cu, 0, sizeof cu);
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib)
        return tcaot_fail(TC_ERROR_NO_DRIVER, "libcuda.so.1 not found: no NVIDIA driver on this machine");
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(cu.lib, syms[i].name);
        if (!p) {
            dlclose(cu.lib);
            return tcaot_fail(TC_ERROR_NO_DRIVER, "libcuda.so.1 has no %s: the NVIDIA driver is too old",
                          syms[i].name);
        }
        memcpy((char *)&cu + syms[i].offset, &p, sizeof p);
    }
    encode = dlsym(cu.lib, "cuTensorMapEncodeTiled");
    memcpy(&cu.tensor_map_encode, &encode, sizeof encode);
    tcaot_CUresult r = cu.init(0);
    if (r != 0) {
        tc_status st;
        tcaot_cu = cu; /* for the error's name */
        st = tcaot_check(r, "cuInit");
        memset(&tcaot_cu, 0, sizeof tcaot_cu);
        dlclose(cu.lib);
        return st;
    }
    tcaot_cu = cu;
    return TC_OK;
}

/* Allocates and zeroes tcaot_state.zero. The context is current. */
static tc_status tcaot_zero_buffer(void) {
    CUdeviceptr p = 0;
    tc_status st = tcaot_check(tcaot_cu.mem_alloc(&p, 16), "cuMemAlloc (the tensor maps' zero buffer)");
    if (st == TC_OK)
        st = tcaot_check(tcaot_cu.memset_d8(p, 0, 16), "cuMemsetD8 (the tensor maps' zero buffer)");
    if (st == TC_OK) /* on the legacy stream, which a non-blocking stream does not wait for */
        st = tcaot_check(tcaot_cu.stream_synchronize(NULL), "cuStreamSynchronize");
    if (st == TC_OK)
        tcaot_state.zero = p;
    else if (p)
        tcaot_cu.mem_free(p);
    return st;
}

/* How many programs of persistent kernel k of img the device holds at once,
 * into tcaot_state.programs[k]: its multiprocessors times the programs the
 * occupancy calculator fits on one. A launch starts that many, which loop
 * over the grid. The context is current; the kernel's dynamic shared
 * memory is opted in. */
static tc_status tcaot_resident_programs(CUdevice dev, size_t k, const struct tcaot_image_desc *img) {
    int sms = 0, per_sm = 0;
    unsigned long long n;
    tc_status st =
        tcaot_check(tcaot_cu.device_get_attribute(&sms, 16, dev), "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    if (st == TC_OK)
        st = tcaot_check(tcaot_cu.occupancy(&per_sm, tcaot_state.fn[k], (int)img->block[k], img->shared[k]),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (st != TC_OK)
        return st;
    if (sms < 1 || per_sm < 1)
        return tcaot_fail(TC_ERROR_UNSUPPORTED,
                          "tcaot: persistent kernel %s: the device holds none of its programs at once (%d "
                          "multiprocessors, %d programs of %u threads and %u bytes of dynamic shared memory on each)",
                          tcaot_kernel_names[k], sms, per_sm, img->block[k], img->shared[k]);
    n = (unsigned long long)sms * (unsigned long long)per_sm;
    tcaot_state.programs[k] = n > 0x7fffffffull ? 0x7fffffffu : (unsigned)n;
    return TC_OK;
}

/* Tries the images that can run on the device, best first. The context is current. */
static tc_status tcaot_load_module(void) {
    CUdevice dev;
    int major = 0, minor = 0, optin = 0, cc;
    tc_status st;
    char log[4096];
    if ((st = tcaot_check(tcaot_cu.ctx_get_device(&dev), "cuCtxGetDevice")) != TC_OK ||
        (st = tcaot_check(tcaot_cu.device_get_attribute(&major, 75, dev), "cuDeviceGetAttribute")) != TC_OK ||
        (st = tcaot_check(tcaot_cu.device_get_attribute(&minor, 76, dev), "cuDeviceGetAttribute")) != TC_OK ||
        (st = tcaot_check(tcaot_cu.device_get_attribute(&optin, 97, dev), "cuDeviceGetAttribute")) != TC_OK)
        return st;
    cc = major * 10 + minor;
    st = tcaot_fail(TC_ERROR_UNSUPPORTED, "tcaot: no code for compute capability %d.%d (this launcher has %s)",
                major, minor, tcaot_TARGETS);
    for (size_t i = 0; i < sizeof tcaot_images / sizeof tcaot_images[0]; i++) {
        const struct tcaot_image_desc *img = &tcaot_images[i];
        int usable = img->exact ? cc == img->cc
                     : img->is_cubin ? cc / 10 == img->cc / 10 && cc >= img->cc
                                     : cc >= img->cc;
        /* CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, and for PTX with line info
         * CU_JIT_GENERATE_LINE_INFO */
        int options[] = {5, 6, 13};
        void *values[] = {log, (void *)(size_t)sizeof log, (void *)(size_t)1};
        unsigned num_options = !img->is_cubin && tcaot_LINE_INFO ? 3 : 2;
        CUmodule module = NULL;
        tcaot_CUresult r;
        size_t k;
        if (!usable)
            continue;
        log[0] = 0;
        r = tcaot_cu.module_load(&module, img->image, num_options, options, values);
        if (r != 0) { /* e.g. a cubin this driver refuses: try the next image */
            size_t n;
            st = tcaot_check(r, img->what);
            n = strlen(tcaot_error);
            snprintf(tcaot_error + n, sizeof tcaot_error - n, "\n%s", log);
            continue;
        }
        st = TC_OK;
        for (k = 0; k < tcaot_NUM_KERNELS; k++) {
            int static_shared = 0;
            st = tcaot_check(tcaot_cu.module_get_function(&tcaot_state.fn[k], module, tcaot_kernel_names[k]),
                         "cuModuleGetFunction");
            if (st == TC_OK)
                st = tcaot_check(tcaot_cu.func_get_attribute(&static_shared, 1, tcaot_state.fn[k]), "cuFuncGetAttribute");
            if (st == TC_OK && (static_shared < 0 || optin < static_shared ||
                                img->shared[k] > (unsigned)(optin - static_shared)))
                st = tcaot_fail(TC_ERROR_UNSUPPORTED,
                                "%s needs %u bytes of dynamic and %d of static shared memory; the device allows %d",
                                tcaot_kernel_names[k], img->shared[k], static_shared, optin);
            if (st == TC_OK && img->shared[k] + (unsigned)static_shared > 48 * 1024) /* no wrap: checked above */
                st = tcaot_check(tcaot_cu.func_set_attribute(tcaot_state.fn[k], 8, (int)img->shared[k]),
                             "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
            if (st == TC_OK && img->persistent[k])
                st = tcaot_resident_programs(dev, k, img);
            if (st != TC_OK)
                break;
        }
        if (st != TC_OK) {
            tcaot_cu.module_unload(module);
            memset(tcaot_state.fn, 0, sizeof tcaot_state.fn);
            memset(tcaot_state.programs, 0, sizeof tcaot_state.programs);
            return st;
        }
        for (k = 0; k < tcaot_NUM_KERNELS && st == TC_OK; k++)
            if (img->num_maps[k] && !tcaot_state.zero)
                st = tcaot_zero_buffer();
        if (st != TC_OK) {
            tcaot_cu.module_unload(module);
            memset(tcaot_state.fn, 0, sizeof tcaot_state.fn);
            memset(tcaot_state.programs, 0, sizeof tcaot_state.programs);
            return st;
        }
        tcaot_state.module = module;
        tcaot_state.image = img;
        return TC_OK;
    }
    return st;
}

tc_status tcaot_load(CUcontext ctx) {
    CUcontext popped;
    CUdevice dev = 0;
    int retained = 0;
    tc_status st = tcaot_open_driver();
    if (st != TC_OK)
        return st;
    if (!ctx && (st = tcaot_check(tcaot_cu.ctx_get_current(&ctx), "cuCtxGetCurrent")) != TC_OK)
        return st;
    if (tcaot_state.module) {
        if (!ctx || ctx == tcaot_state.ctx)
            return TC_OK;
        return tcaot_fail(TC_ERROR_INVALID_ARGUMENT, "tcaot_load: already loaded into another context; "
                                                  "call tcaot_unload first");
    }
    if (!ctx) { /* like the CUDA runtime: device 0's primary context, made current */
        if ((st = tcaot_check(tcaot_cu.device_get(&dev, 0), "cuDeviceGet")) != TC_OK ||
            (st = tcaot_check(tcaot_cu.primary_retain(&ctx, dev), "cuDevicePrimaryCtxRetain")) != TC_OK)
            return st;
        retained = 1;
        if ((st = tcaot_check(tcaot_cu.ctx_set_current(ctx), "cuCtxSetCurrent")) != TC_OK) {
            tcaot_cu.primary_release(dev);
            return st;
        }
    }
    if ((st = tcaot_check(tcaot_cu.ctx_push(ctx), "cuCtxPushCurrent")) == TC_OK) {
        st = tcaot_load_module();
        tcaot_cu.ctx_pop(&popped);
    }
    if (st != TC_OK) {
        if (retained)
            tcaot_cu.primary_release(dev);
        return st;
    }
    tcaot_state.ctx = ctx;
    tcaot_state.retained = retained;
    tcaot_state.device = dev;
    return TC_OK;
}

tc_status tcaot_unload(void) {
    CUcontext popped;
    tc_status st;
    if (!tcaot_state.module)
        return TC_OK;
    st = tcaot_check(tcaot_cu.ctx_push(tcaot_state.ctx), "cuCtxPushCurrent");
    if (st == TC_OK) {
        st = tcaot_check(tcaot_cu.module_unload(tcaot_state.module), "cuModuleUnload");
        if (tcaot_state.zero) {
            tc_status freed = tcaot_check(tcaot_cu.mem_free(tcaot_state.zero), "cuMemFree");
            st = st != TC_OK ? st : freed;
        }
        tcaot_cu.ctx_pop(&popped);
    }
    if (tcaot_state.retained)
        tcaot_cu.primary_release(tcaot_state.device);
    memset(&tcaot_state, 0, sizeof tcaot_state);
    return st;
}

/* An integer argument an extent or a stride is read from. */
static long long tcaot_int_arg(void **args, int i, unsigned bytes) {
    int64_t v64;
    int32_t v32;
    if (bytes == 8) {
        memcpy(&v64, args[i], sizeof v64);
        return (long long)v64;
    }
    memcpy(&v32, args[i], sizeof v32);
    return v32;
}

/* Encodes map m of a launch into slot (128 bytes, 64-byte aligned), by
 * the rules of tilec's runtime: an extent of 0 (unbounded) or above 2^31
 * is 2^31 (TMA coordinates are signed 32-bit; an extent of 2^32 faults the
 * copy); an extent <= 0 makes every element masked, and the map then
 * covers the zero buffer; the base and the strides in bytes must be
 * 16-byte aligned, the strides below 2^40 bytes. */
static tc_status tcaot_encode_map(const char *what, int i, const struct tcaot_tensor_map *m, void **args,
                                  void *slot) {
    static const unsigned ones[5] = {1, 1, 1, 1, 1};
    const unsigned long long two31 = 1ull << 31;
    unsigned long long dim[5], stride[4], address;
    int zero = 0;
    unsigned d;
    void *base;
    tcaot_CUresult r;
    char text[512];
    for (d = 0; d < m->rank; d++) {
        long long e = m->dim_arg[d] < 0 ? (m->dim[d] ? m->dim[d] : (long long)two31)
                                        : tcaot_int_arg(args, m->dim_arg[d], m->dim_bytes[d]);
        zero |= e <= 0;
        dim[d] = e <= 0 ? 1 : (unsigned long long)e > two31 ? two31 : (unsigned long long)e;
    }
    memcpy(&base, args[m->base], sizeof base);
    address = zero ? (unsigned long long)tcaot_state.zero : (unsigned long long)(size_t)base;
    for (d = 0; zero && d < m->rank; d++) {
        dim[d] = 1;
        if (d > 0)
            stride[d - 1] = 16;
    }
    if (!zero && address % 16)
        return tcaot_fail(TC_ERROR_INVALID_ARGUMENT,
                          "%s: %s = 0x%llx is not 16-byte aligned: the kernel was specialized for 16-byte aligned "
                          "pointers (its tensor map %d reads it)",
                          what, m->base_name, address, i);
    for (d = 1; !zero && d < m->rank; d++) {
        long long s = m->stride_arg[d] < 0 ? m->stride[d] : tcaot_int_arg(args, m->stride_arg[d], m->stride_bytes[d]);
        if (s < 0 || s >= (1ll << 40) / (long long)m->elem_bytes || s * (long long)m->elem_bytes % 16)
            return tcaot_fail(TC_ERROR_INVALID_ARGUMENT,
                              "%s: the stride of dimension %u of %s's tensor map (map %d) is %lld elements of %u "
                              "bytes: the kernel was specialized for 16-byte aligned strides below 2^40 bytes",
                              what, d, m->base_name, i, s, m->elem_bytes);
        stride[d - 1] = (unsigned long long)s * m->elem_bytes;
    }
    if (!tcaot_cu.tensor_map_encode)
        return tcaot_fail(TC_ERROR_UNSUPPORTED,
                          "%s: this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer has), which the "
                          "kernel's tensor maps need",
                          what);
    r = tcaot_cu.tensor_map_encode(slot, m->dtype, m->rank, (void *)(size_t)address, dim, stride, m->box, ones, 0,
                                   m->swizzle, 2 /* L2 promotion 128B */, 0 /* out of bounds: zeros */);
    if (r == 0)
        return TC_OK;
    snprintf(text, sizeof text,
             "cuTensorMapEncodeTiled (%s, tensor map %d over %s: data type %d, rank %u, address 0x%llx, dims "
             "{%llu, %llu, ...}, box {%u, ...})",
             what, i, m->base_name, m->dtype, m->rank, address, dim[0], m->rank > 1 ? dim[1] : 1ull, m->box[0]);
    return tcaot_check(r, text);
}

/* The driver's launch, retried with the context made current. If the
 * context is not current on this thread, makes it current (none was) or
 * pushes it for the launch (another was). */
static tc_status tcaot_launch_args(int k, const char *what, tc_dim3 grid, CUstream stream, void **args) {
    const struct tcaot_image_desc *img = tcaot_state.image;
    tcaot_CUresult r = tcaot_cu.launch(tcaot_state.fn[k], grid.x, grid.y, grid.z, img->block[k], 1, 1,
                                       img->shared[k], stream, args, NULL);
    if (r == 201 || r == 400) { /* CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE */
        CUcontext cur = NULL;
        tcaot_cu.ctx_get_current(&cur);
        if (cur != tcaot_state.ctx) {
            if (!cur && tcaot_cu.ctx_set_current(tcaot_state.ctx) == 0) {
                r = tcaot_cu.launch(tcaot_state.fn[k], grid.x, grid.y, grid.z, img->block[k], 1, 1, img->shared[k],
                                stream, args, NULL);
            } else if (tcaot_cu.ctx_push(tcaot_state.ctx) == 0) {
                r = tcaot_cu.launch(tcaot_state.fn[k], grid.x, grid.y, grid.z, img->block[k], 1, 1, img->shared[k],
                                stream, args, NULL);
                tcaot_cu.ctx_pop(&cur);
            }
        }
    }
    return tcaot_check(r, what);
}

/* Launches kernel k with its num_args arguments; args has room after them
 * for what the loaded image's kernel takes besides, which is put there: the
 * grid of a persistent kernel, then its tensor maps, built here. A
 * persistent kernel starts only the programs the device holds at once,
 * along x, and they loop over the grid. */
static tc_status tcaot_launch(int k, const char *what, tc_dim3 grid, CUstream stream, void **args, unsigned num_args) {
    struct {
        _Alignas(64) unsigned char bytes[128];
    } maps[tcaot_MAX_MAPS];
    int32_t extents[3];
    unsigned i, hidden = 0;
    const struct tcaot_image_desc *img = tcaot_state.image;
    if (!tcaot_state.module)
        return tcaot_fail(TC_ERROR_INVALID_ARGUMENT, "%s: tcaot_load has not been called", what);
    if (!grid.x || !grid.y || !grid.z)
        return TC_OK;
    if (img->persistent[k]) {
        unsigned long long total = (unsigned long long)grid.x * grid.y * grid.z;
        if (total > 0x7fffffffull) /* the kernel numbers its programs with an int32_t */
            return tcaot_fail(TC_ERROR_INVALID_ARGUMENT,
                              "%s: grid %ux%ux%u has %llu programs, more than 2^31 - 1 (the kernel is persistent)",
                              what, grid.x, grid.y, grid.z, total);
        extents[0] = (int32_t)grid.x, extents[1] = (int32_t)grid.y, extents[2] = (int32_t)grid.z;
        for (hidden = 0; hidden < 3; hidden++)
            args[num_args + hidden] = &extents[hidden];
        grid.x = total < tcaot_state.programs[k] ? (unsigned)total : tcaot_state.programs[k];
        grid.y = grid.z = 1;
    }
    for (i = 0; i < img->num_maps[k]; i++) {
        tc_status st = tcaot_encode_map(what, (int)i, &img->maps[k][i], args, maps[i].bytes);
        if (st != TC_OK)
            return st;
        args[num_args + hidden + i] = maps[i].bytes;
    }
    return tcaot_launch_args(k, what, grid, stream, args);
}
