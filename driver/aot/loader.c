/*
 * loader.c — the part of every launcher that `tilec --aot` generates which
 * is the same for all of them: the CUDA driver opened with dlopen, loading
 * the best image for the device, and the launch with its context handling.
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
 *     static const char *const tcaot_kernel_names[tcaot_NUM_KERNELS];
 *     struct tcaot_image_desc { what, cc, exact, is_cubin, image, block[], shared[] };
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
    tcaot_CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          CUstream, void **, void **);
    tcaot_CUresult (*error_name)(tcaot_CUresult, const char **);
    tcaot_CUresult (*error_string)(tcaot_CUresult, const char **);
};

static struct tcaot_driver tcaot_cu;

static struct {
    CUcontext ctx;   /* where the module is loaded */
    CUmodule module; /* NULL: not loaded */
    int retained;    /* tcaot_load retained device `device`'s primary context */
    CUdevice device;
    const struct tcaot_image_desc *image;
    CUfunction fn[tcaot_NUM_KERNELS];
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
        {offsetof(struct tcaot_driver, launch), "cuLaunchKernel"},
        {offsetof(struct tcaot_driver, error_name), "cuGetErrorName"},
        {offsetof(struct tcaot_driver, error_string), "cuGetErrorString"},
    };
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
        int options[] = {5, 6}; /* CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
        void *values[] = {log, (void *)(size_t)sizeof log};
        CUmodule module = NULL;
        tcaot_CUresult r;
        size_t k;
        if (!usable)
            continue;
        log[0] = 0;
        r = tcaot_cu.module_load(&module, img->image, 2, options, values);
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
            if (st != TC_OK)
                break;
        }
        if (st != TC_OK) {
            tcaot_cu.module_unload(module);
            memset(tcaot_state.fn, 0, sizeof tcaot_state.fn);
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
        tcaot_cu.ctx_pop(&popped);
    }
    if (tcaot_state.retained)
        tcaot_cu.primary_release(tcaot_state.device);
    memset(&tcaot_state, 0, sizeof tcaot_state);
    return st;
}

/* Launches kernel k. If its context is not current on this thread, makes
 * it current (none was) or pushes it for the launch (another was). */
static tc_status tcaot_launch(int k, const char *what, tc_dim3 grid, CUstream stream, void **args) {
    const struct tcaot_image_desc *img = tcaot_state.image;
    tcaot_CUresult r;
    if (!tcaot_state.module)
        return tcaot_fail(TC_ERROR_INVALID_ARGUMENT, "%s: tcaot_load has not been called", what);
    if (!grid.x || !grid.y || !grid.z)
        return TC_OK;
    r = tcaot_cu.launch(tcaot_state.fn[k], grid.x, grid.y, grid.z, img->block[k], 1, 1, img->shared[k], stream, args,
                    NULL);
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
