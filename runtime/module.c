/*
 * module.c — contexts, modules, kernels and launches.
 *
 * The launch path is the one that matters for speed: a serving loop calls
 * tc_launch thousands of times a second, and the driver's own cuLaunchKernel
 * costs a few microseconds. So everything a launch needs is computed when
 * the module is loaded — the CUfunction, the block size, the dynamic shared
 * memory (and the opt-in above 48 KB, done once with cuFuncSetAttribute),
 * the indices of pointer parameters — and tc_launch itself only compares
 * the argument count, checks the pointer arguments for 0, and calls the
 * driver: no allocation, no lock, no context call. A kernel with hidden
 * parameters leaves that path for launch_hidden: a persistent kernel's grid
 * (three int32 extents after the arguments; the launch itself starts only
 * the programs the device holds at once, counted at load), and tensor maps
 * (TMA), which it builds on its stack from the arguments (tensor_map.c) and
 * passes after them.
 *
 * Contexts: the driver launches into the calling thread's current context.
 * tc_context_create makes the primary context current on the creating
 * thread, as the CUDA runtime API would. If a launch fails because another
 * context (or none) is current on the calling thread, tc_launch makes the
 * kernel's context current (none was) or pushes it around one more attempt
 * (another was): correct from any thread, and free where the user keeps
 * the context current. Cold paths (loading, memory helpers) push and pop.
 */
#include "runtime/runtime.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_LOG_SIZE 16384

const char *rt_arch_for_cc(int cc) {
    if (cc == 90)
        return "sm_90a"; /* Hopper: wgmma, TMA */
    if (cc >= 80 && cc < 90)
        return "sm_80";
    if (cc > 90)
        return "sm_90"; /* newer GPUs: sm_90 PTX, compiled forward by the driver */
    return "";
}

const char *rt_arch_override_check(const char *arch, int cc) {
    if (strcmp(arch, "sm_80") == 0)
        return cc >= 80 ? NULL : "the device is older than sm_80";
    if (strcmp(arch, "sm_90") == 0)
        return cc >= 90 ? NULL : "the device is older than sm_90";
    if (strcmp(arch, "sm_90a") == 0)
        return cc == 90 ? NULL : "sm_90a code runs on compute capability 9.0 only";
    return "not sm_80, sm_90 or sm_90a";
}

/* ---- contexts ---- */

tc_status rt_ctx_push(tc_context *ctx) {
    return rt_cuda_check(rt_cu.cuCtxPushCurrent(ctx->cu), "cuCtxPushCurrent");
}

void rt_ctx_pop(tc_context *ctx) {
    CUcontext popped;
    (void)ctx;
    rt_cu.cuCtxPopCurrent(&popped);
}

static tc_status attr(CUdevice dev, int which, int *value, const char *what) {
    return rt_cuda_check(rt_cu.cuDeviceGetAttribute(value, which, dev), what);
}

/* $name: unset or empty leaves *out at -1, "0" or "1" sets it; anything
 * else fails (false, tc_last_error set). */
static bool env_switch(const char *name, int *out) {
    const char *v = secure_getenv(name);
    *out = -1;
    if (!v || !*v)
        return true;
    if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s=%.32s: must be 0 or 1", name, v);
        return false;
    }
    *out = v[0] == '1';
    return true;
}

/* Fills the device facts of a context whose cu and device are set. */
static tc_status context_init(tc_context *ctx) {
    int major = 0, minor = 0;
    tc_status st;
    if ((st = attr(ctx->device, RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major, "cuDeviceGetAttribute")) ||
        (st = attr(ctx->device, RT_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor, "cuDeviceGetAttribute")) ||
        (st = attr(ctx->device, RT_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &ctx->max_shared_optin,
                   "cuDeviceGetAttribute")) ||
        (st = attr(ctx->device, RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &ctx->multiprocessors,
                   "cuDeviceGetAttribute")) ||
        (st = rt_cuda_check(rt_cu.cuDriverGetVersion(&ctx->driver_version), "cuDriverGetVersion")))
        return st;
    ctx->cc = major * 10 + minor;
    ctx->host = rt_cu.host;
    /* the device's name, printable and without tabs (the tuning table's
     * GPU column); a driver without the call names the capability */
    char name[256] = "";
    if (ctx->host)
        snprintf(name, sizeof name, "tilec interpreter");
    else if (!rt_cu.cuDeviceGetName || rt_cu.cuDeviceGetName(name, (int)sizeof name, ctx->device) != RT_CUDA_SUCCESS)
        name[0] = 0;
    name[sizeof name - 1] = 0;
    for (char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
            *c = ' ';
    if (!name[0])
        snprintf(name, sizeof name, "GPU of compute capability %d.%d", major, minor);
    snprintf(ctx->name, sizeof ctx->name, "%s", name);
    snprintf(ctx->arch, sizeof ctx->arch, "%s", rt_arch_for_cc(ctx->cc));
    const char *forced = secure_getenv("TILEC_ARCH");
    if (forced && *forced) {
        const char *why = rt_arch_override_check(forced, ctx->cc);
        if (why)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "TILEC_ARCH=%.32s: %s", forced, why);
        snprintf(ctx->arch, sizeof ctx->arch, "%s", forced);
    }
    /* the standard library's kernels with or without a producer warpgroup,
     * as persistent programs or not (tests/gpu/run.sh runs the tests each
     * way); line info for every tc_jit compile */
    if (!env_switch("TILEC_WARP_SPECIALIZE", &ctx->warp_specialize) ||
        !env_switch("TILEC_PERSISTENT", &ctx->persistent) || !env_switch("TILEC_LINE_INFO", &ctx->line_info))
        return TC_ERROR_INVALID_ARGUMENT;
    if (pthread_mutex_init(&ctx->lock, NULL) != 0)
        return rt_fail(TC_ERROR_INTERNAL, "pthread_mutex_init failed");
    if (pthread_mutex_init(&ctx->jit_lock, NULL) != 0) {
        pthread_mutex_destroy(&ctx->lock);
        return rt_fail(TC_ERROR_INTERNAL, "pthread_mutex_init failed");
    }
    if (pthread_mutex_init(&ctx->log_lock, NULL) != 0) {
        pthread_mutex_destroy(&ctx->lock);
        pthread_mutex_destroy(&ctx->jit_lock);
        return rt_fail(TC_ERROR_INTERNAL, "pthread_mutex_init failed");
    }
    return TC_OK;
}

tc_status tc_context_create(int device, tc_context **out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_context_create: out is NULL");
    *out = NULL;
    tc_status st = rt_cuda_load();
    if (st != TC_OK)
        return st;
    int count = 0;
    if ((st = rt_cuda_check(rt_cu.cuDeviceGetCount(&count), "cuDeviceGetCount")) != TC_OK)
        return st;
    if (device < 0 || device >= count)
        return rt_fail(TC_ERROR_NO_DEVICE, "no CUDA device %d: the driver sees %d", device, count);
    tc_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
    if ((st = rt_cuda_check(rt_cu.cuDeviceGet(&ctx->device, device), "cuDeviceGet")) != TC_OK ||
        (st = rt_cuda_check(rt_cu.cuDevicePrimaryCtxRetain(&ctx->cu, ctx->device), "cuDevicePrimaryCtxRetain")) !=
            TC_OK) {
        free(ctx);
        return st;
    }
    ctx->owns_primary = true;
    if ((st = rt_cuda_check(rt_cu.cuCtxSetCurrent(ctx->cu), "cuCtxSetCurrent")) != TC_OK ||
        (st = context_init(ctx)) != TC_OK) {
        rt_cu.cuDevicePrimaryCtxRelease(ctx->device);
        free(ctx);
        return st;
    }
    *out = ctx;
    return TC_OK;
}

tc_status tc_context_create_from(CUcontext cu, tc_context **out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_context_create_from: out is NULL");
    *out = NULL;
    tc_status st = rt_cuda_load();
    if (st != TC_OK)
        return st;
    if (!cu && (st = rt_cuda_check(rt_cu.cuCtxGetCurrent(&cu), "cuCtxGetCurrent")) != TC_OK)
        return st;
    if (!cu)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_context_create_from: no CUDA context is current on this thread");
    tc_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory creating a context");
    ctx->cu = cu;
    if ((st = rt_ctx_push(ctx)) != TC_OK) {
        free(ctx);
        return st;
    }
    st = rt_cuda_check(rt_cu.cuCtxGetDevice(&ctx->device), "cuCtxGetDevice");
    rt_ctx_pop(ctx);
    if (st == TC_OK)
        st = context_init(ctx);
    if (st != TC_OK) {
        free(ctx);
        return st;
    }
    *out = ctx;
    return TC_OK;
}

static void module_free(tc_module *m);

tc_status tc_context_destroy(tc_context *ctx) {
    if (!ctx)
        return TC_OK;
    tc_status st = TC_OK;
    bool pushed = rt_ctx_push(ctx) == TC_OK;
    while (ctx->modules) {
        tc_module *m = ctx->modules;
        ctx->modules = m->next;
        tc_status s = rt_cuda_check(rt_cu.cuModuleUnload(m->cu), "cuModuleUnload");
        st = st ? st : s;
        module_free(m);
    }
    CUdeviceptr zero = atomic_load(&ctx->zero_buf);
    if (zero && pushed) {
        tc_status s = rt_cuda_check(rt_cu.cuMemFree(zero), "cuMemFree (the tensor maps' zero buffer)");
        st = st ? st : s;
    }
    if (pushed)
        rt_ctx_pop(ctx);
    rt_jit_table_free(ctx->jit);
    if (ctx->attached_free)
        ctx->attached_free(atomic_load(&ctx->attached));
    if (ctx->owns_primary) {
        tc_status s = rt_cuda_check(rt_cu.cuDevicePrimaryCtxRelease(ctx->device), "cuDevicePrimaryCtxRelease");
        st = st ? st : s;
    }
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->jit_lock);
    pthread_mutex_destroy(&ctx->log_lock);
    free(ctx);
    return st;
}

tc_status tc_context_make_current(tc_context *ctx) {
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_context_make_current: ctx is NULL");
    return rt_cuda_check(rt_cu.cuCtxSetCurrent(ctx->cu), "cuCtxSetCurrent");
}

CUcontext tc_context_cuda(const tc_context *ctx) {
    return ctx ? ctx->cu : NULL;
}
CUdevice tc_context_device(const tc_context *ctx) {
    return ctx ? ctx->device : -1;
}
int tc_context_compute_capability(const tc_context *ctx) {
    return ctx ? ctx->cc : 0;
}
const char *tc_context_device_name(const tc_context *ctx) { return ctx ? ctx->name : ""; }

const char *tc_context_arch(const tc_context *ctx) {
    return ctx ? ctx->arch : "";
}
int tc_context_multiprocessors(const tc_context *ctx) {
    return ctx ? ctx->multiprocessors : 0;
}
int tc_context_interpreted(const tc_context *ctx) {
    return ctx && ctx->host;
}

tc_status tc_context_set_log(tc_context *ctx, tc_log_fn fn, void *user) {
    if (!ctx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_context_set_log: ctx is NULL");
    pthread_mutex_lock(&ctx->log_lock);
    ctx->log.fn = fn;
    ctx->log.user = user;
    pthread_mutex_unlock(&ctx->log_lock);
    return TC_OK;
}

void rt_context_log_flush(tc_context *ctx, RtBytes *queue) {
    if (!queue->len) {
        rt_bytes_free(queue);
        return;
    }
    pthread_mutex_lock(&ctx->log_lock);
    tc_log_fn fn = ctx->log.fn;
    void *user = ctx->log.user;
    pthread_mutex_unlock(&ctx->log_lock);
    rt_log_deliver(queue, fn, user);
}

bool rt_context_logs(tc_context *ctx, int level) {
    pthread_mutex_lock(&ctx->log_lock);
    bool fn = ctx->log.fn != NULL;
    pthread_mutex_unlock(&ctx->log_lock);
    return fn || rt_log_env_wants(level);
}

/* ---- modules ---- */

static void module_free(tc_module *m) {
    while (m->raw) {
        RtRawKernel *r = m->raw;
        m->raw = r->next;
        free(r);
    }
    rt_meta_free(&m->meta);
    free(m->kernels);
    free(m->ptr_index);
    free(m);
}

bool rt_ptx_has_line_info(const char *ptx, size_t len) {
    const char *end = ptx + len;
    for (const char *p = ptx; (p = memmem(p, (size_t)(end - p), ".loc", 4)); p += 4) {
        bool starts = p == ptx || p[-1] == '\t' || p[-1] == ' ' || p[-1] == '\n';
        if (starts && p + 4 < end && (p[4] == '\t' || p[4] == ' '))
            return true;
    }
    return false;
}

/* The driver's options for a load or link: info and error buffers, and
 * line info for PTX that has it. */
typedef struct JitLog {
    int options[6];
    void *values[6];
    unsigned num_options;
    char *info, *error;
} JitLog;

static bool jit_log_init(JitLog *l, bool line_info) {
    l->info = calloc(1, JIT_LOG_SIZE);
    l->error = calloc(1, JIT_LOG_SIZE);
    if (!l->info || !l->error) {
        free(l->info);
        free(l->error);
        return false;
    }
    int opts[5] = {RT_CU_JIT_INFO_LOG_BUFFER, RT_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, RT_CU_JIT_ERROR_LOG_BUFFER,
                   RT_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, RT_CU_JIT_LOG_VERBOSE};
    void *vals[5] = {l->info, (void *)(uintptr_t)JIT_LOG_SIZE, l->error, (void *)(uintptr_t)JIT_LOG_SIZE,
                     (void *)(uintptr_t)0};
    memcpy(l->options, opts, sizeof opts);
    memcpy(l->values, vals, sizeof vals);
    l->num_options = 5;
    if (line_info) {
        l->options[l->num_options] = RT_CU_JIT_GENERATE_LINE_INFO;
        l->values[l->num_options++] = (void *)(uintptr_t)1;
    }
    return true;
}

/* Appends the driver's logs to the last error (after a failure). */
static void jit_log_report(const JitLog *l) {
    if (l->error[0]) {
        rt_fail_append("\ndriver JIT error log:\n", 23);
        rt_fail_append(l->error, strnlen(l->error, JIT_LOG_SIZE));
    }
    if (l->info[0]) {
        rt_fail_append("\ndriver JIT info log:\n", 22);
        rt_fail_append(l->info, strnlen(l->info, JIT_LOG_SIZE));
    }
}

static void jit_log_free(JitLog *l) {
    free(l->info);
    free(l->error);
}

/* How many programs of persistent kernel d (function fn, its dynamic shared
 * memory opted in already) the device holds at once: its multiprocessors
 * times the programs the driver's occupancy calculator fits on one for the
 * kernel's block and dynamic shared memory. That is how many a launch
 * starts: more would run in a second wave, each program after the first
 * paying its start-up again (what persistence saves), fewer would leave
 * multiprocessors idle. A kernel of which none fits could never run. Runs
 * with the context pushed. */
static tc_status resident_programs(tc_context *ctx, CUfunction fn, const tc_kernel_desc *d, uint32_t *out) {
    int sms = 0, per_sm = 0, threads = 32 * d->num_warps;
    tc_status st = attr(ctx->device, RT_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms,
                        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    if (st != TC_OK)
        return st;
    char what[300];
    snprintf(what, sizeof what, "cuOccupancyMaxActiveBlocksPerMultiprocessor(%s, %d threads, %zu bytes)", d->name,
             threads, d->shared_bytes);
    st = rt_cuda_check(rt_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, d->shared_bytes), what);
    if (st != TC_OK)
        return st;
    if (sms < 1 || per_sm < 1)
        return rt_fail(TC_ERROR_UNSUPPORTED,
                       "persistent kernel %s: the device holds none of its programs at once (%d multiprocessors, "
                       "%d programs of %d threads and %zu bytes of dynamic shared memory on each)",
                       d->name, sms, per_sm, threads, d->shared_bytes);
    uint64_t n = (uint64_t)sms * (uint64_t)per_sm;
    *out = n > TC_MAX_GRID_X ? TC_MAX_GRID_X : (uint32_t)n;
    return TC_OK;
}

/* Resolves one kernel with metadata: its function, launch constants,
 * shared-memory opt-in and, if persistent, its resident programs. Runs
 * with the context pushed. */
static tc_status kernel_init(tc_module *m, tc_kernel *k, const tc_kernel_desc *d, uint32_t *ptr_index) {
    tc_context *ctx = m->ctx;
    char what[300];
    snprintf(what, sizeof what, "cuModuleGetFunction(%s)", d->name);
    tc_status st = rt_cuda_check(rt_cu.cuModuleGetFunction(&k->fn, m->cu, d->name), what);
    if (st != TC_OK)
        return st;
    if (d->num_warps < 1 || d->num_warps > TC_MAX_NUM_WARPS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "kernel %s: num_warps %d is not from 1 to %d", d->name,
                       d->num_warps, TC_MAX_NUM_WARPS);
    if (d->num_tensor_maps > TC_MAX_TENSOR_MAPS) /* tc_launch keeps them on its stack */
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "kernel %s: %zu tensor maps, more than %d", d->name,
                       d->num_tensor_maps, TC_MAX_TENSOR_MAPS);
    if (d->persistent != 0 && d->persistent != 1)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "kernel %s: persistent is %d, not 0 or 1", d->name, d->persistent);
    int static_shared = 0;
    snprintf(what, sizeof what, "cuFuncGetAttribute(%s, SHARED_SIZE_BYTES)", d->name);
    if ((st = rt_cuda_check(rt_cu.cuFuncGetAttribute(&static_shared, RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->fn),
                            what)) != TC_OK)
        return st;
    /* Compared without adding: shared_bytes comes from the caller and may be
     * anything up to SIZE_MAX, and the sum must not wrap. */
    size_t optin = ctx->max_shared_optin > 0 ? (size_t)ctx->max_shared_optin : 0;
    size_t stat = static_shared > 0 ? (size_t)static_shared : 0;
    if (stat > optin || d->shared_bytes > optin - stat)
        return rt_fail(TC_ERROR_UNSUPPORTED,
                       "kernel %s needs %zu dynamic + %zu static bytes of shared memory; this device allows %zu in all",
                       d->name, d->shared_bytes, stat, optin);
    if (d->shared_bytes + stat > RT_DEFAULT_MAX_SHARED) {
        snprintf(what, sizeof what, "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %zu)", d->name,
                 d->shared_bytes);
        st = rt_cuda_check(
            rt_cu.cuFuncSetAttribute(k->fn, RT_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)d->shared_bytes),
            what);
        if (st != TC_OK)
            return st;
    }
    k->programs = 0;
    if (d->persistent && (st = resident_programs(ctx, k->fn, d, &k->programs)) != TC_OK)
        return st;
    k->launch = rt_cu.cuLaunchKernel;
    k->num_params = d->num_params;
    k->block = 32u * (unsigned)d->num_warps;
    k->shared = (unsigned)d->shared_bytes;
    k->ptr_params = ptr_index;
    k->num_ptr_params = 0;
    for (size_t i = 0; i < d->num_params; i++)
        if (d->params[i].is_pointer)
            ptr_index[k->num_ptr_params++] = (uint32_t)i;
    k->module = m;
    k->desc = d;
    k->name = d->name;
    k->num_maps = (uint32_t)d->num_tensor_maps;
    k->encode = rt_cu.cuTensorMapEncodeTiled;
    return TC_OK;
}

tc_status rt_module_load(tc_context *ctx, const void *image, bool is_ptx, RtMeta *meta, tc_module **out) {
    *out = NULL;
    tc_module *m = calloc(1, sizeof *m);
    size_t np = 0;
    for (size_t k = 0; k < meta->num_kernels; k++)
        np += meta->kernels[k].num_params;
    if (m) {
        m->meta = *meta;
        memset(meta, 0, sizeof *meta);
        m->ctx = ctx;
        m->kernels = calloc(m->meta.num_kernels ? m->meta.num_kernels : 1, sizeof *m->kernels);
        m->ptr_index = calloc(np ? np : 1, sizeof *m->ptr_index);
    }
    JitLog log;
    bool line_info = is_ptx && rt_ptx_has_line_info(image, strlen(image));
    if (!m || !m->kernels || !m->ptr_index || !jit_log_init(&log, line_info)) {
        if (m)
            module_free(m);
        else
            rt_meta_free(meta);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory loading a module");
    }
    tc_status st = rt_ctx_push(ctx);
    if (st != TC_OK) {
        jit_log_free(&log);
        module_free(m);
        return st;
    }
    st = rt_cuda_check(rt_cu.cuModuleLoadDataEx(&m->cu, image, log.num_options, log.options, log.values),
                       is_ptx ? "cuModuleLoadDataEx (PTX)" : "cuModuleLoadDataEx (cubin)");
    if (st != TC_OK) {
        jit_log_report(&log);
        jit_log_free(&log);
        rt_ctx_pop(ctx);
        module_free(m);
        return st;
    }
    jit_log_free(&log);
    size_t off = 0;
    for (size_t k = 0; k < m->meta.num_kernels && st == TC_OK; k++) {
        st = kernel_init(m, &m->kernels[k], &m->meta.kernels[k], m->ptr_index + off);
        off += m->meta.kernels[k].num_params;
    }
    if (st != TC_OK) {
        rt_cu.cuModuleUnload(m->cu);
        rt_ctx_pop(ctx);
        module_free(m);
        return st;
    }
    rt_ctx_pop(ctx);
    pthread_mutex_lock(&ctx->lock);
    m->next = ctx->modules;
    if (ctx->modules)
        ctx->modules->prev = m;
    ctx->modules = m;
    pthread_mutex_unlock(&ctx->lock);
    *out = m;
    return TC_OK;
}

tc_status tc_module_load(tc_context *ctx, const tc_binary *bin, tc_module **out) {
    if (out)
        *out = NULL;
    if (!ctx || !bin || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_module_load: %s is NULL", !ctx ? "ctx" : !bin ? "bin" : "out");
    size_t len;
    const char *ptx = tc_binary_text(bin, &len); /* NUL-terminated */
    if (!strstr(ptx, ".target") || !strstr(ptx, ".entry"))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_module_load: the binary holds no PTX (compile it with emit = TC_EMIT_PTX)");
    RtMeta meta;
    tc_status st = rt_meta_from_binary(bin, &meta);
    if (st != TC_OK)
        return st;
    return rt_module_load(ctx, ptx, true, &meta, out);
}

/* What tc_module_load_ptx and _cubin take on trust from the caller's
 * kernel descriptions (tc_kernel_desc in include/tilec/runtime.h gives the
 * rules): names, counts, enum values and sizes, so that no later sum or
 * product (the metadata's storage, the launch's shared memory) can wrap. */
static tc_status check_descs(const char *fn, const tc_kernel_desc *kernels, size_t num_kernels) {
    if (num_kernels && !kernels)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels is NULL with num_kernels %zu", fn, num_kernels);
    if (num_kernels > TC_MAX_KERNEL_DESCS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: num_kernels %zu is more than %d", fn, num_kernels,
                       TC_MAX_KERNEL_DESCS);
    for (size_t k = 0; k < num_kernels; k++) {
        const tc_kernel_desc *d = &kernels[k];
        if (!d->name || !*d->name)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu].name is %s", fn, k, d->name ? "empty" : "NULL");
        if (d->num_warps < 1 || d->num_warps > TC_MAX_NUM_WARPS)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): num_warps %d is not from 1 to %d", fn,
                           k, d->name, d->num_warps, TC_MAX_NUM_WARPS);
        if (d->shared_bytes > TC_MAX_SHARED_BYTES)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): shared_bytes %zu is more than %d", fn, k,
                           d->name, d->shared_bytes, TC_MAX_SHARED_BYTES);
        if (d->num_params > TC_MAX_KERNEL_PARAMS)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): num_params %zu is more than %d", fn, k,
                           d->name, d->num_params, TC_MAX_KERNEL_PARAMS);
        if (d->num_params && !d->params)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): params is NULL with num_params %zu", fn,
                           k, d->name, d->num_params);
        for (size_t p = 0; p < d->num_params; p++) {
            const tc_param_desc *q = &d->params[p];
            if (!q->name)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): params[%zu].name is NULL", fn, k,
                               d->name, p);
            if ((int)q->dtype < (int)TC_DTYPE_I1 || (int)q->dtype > (int)TC_DTYPE_F8E5M2)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                               "%s: kernels[%zu] (%s): params[%zu] (%s): dtype %d is not a tc_dtype", fn, k, d->name,
                               p, q->name, (int)q->dtype);
        }
        if (d->num_tensor_maps > TC_MAX_TENSOR_MAPS)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): num_tensor_maps %zu is more than %d", fn,
                           k, d->name, d->num_tensor_maps, TC_MAX_TENSOR_MAPS);
        if (d->persistent != 0 && d->persistent != 1)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): persistent %d is not 0 or 1", fn, k,
                           d->name, d->persistent);
        if (d->num_tensor_maps && !d->tensor_maps)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: kernels[%zu] (%s): tensor_maps is NULL with num_tensor_maps %zu", fn, k, d->name,
                           d->num_tensor_maps);
        char why[160];
        for (size_t i = 0; i < d->num_tensor_maps; i++)
            if (!rt_tensor_map_check(d, &d->tensor_maps[i], why, sizeof why))
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernels[%zu] (%s): tensor_maps[%zu]: %s", fn, k,
                               d->name, i, why);
    }
    return TC_OK;
}

static tc_status load_raw(tc_context *ctx, const void *image, size_t len, bool is_ptx, const tc_kernel_desc *kernels,
                          size_t num_kernels, tc_module **out) {
    if (out)
        *out = NULL;
    const char *fn = is_ptx ? "tc_module_load_ptx" : "tc_module_load_cubin";
    if (!ctx || !image || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                       !ctx ? "ctx" : !image ? (is_ptx ? "ptx" : "cubin") : "out");
    if (!len || len > TC_MAX_IMAGE_BYTES)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: len %zu must be from 1 to %zu bytes", fn, len,
                       (size_t)TC_MAX_IMAGE_BYTES);
    tc_status st = check_descs(fn, kernels, num_kernels);
    if (st != TC_OK)
        return st;
    RtMeta meta;
    st = rt_meta_copy(kernels, num_kernels, &meta);
    if (st != TC_OK)
        return st;
    if (!is_ptx)
        return rt_module_load(ctx, image, false, &meta, out);
    char *text = malloc(len + 1); /* the driver wants a C string */
    if (!text) {
        rt_meta_free(&meta);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory loading PTX");
    }
    memcpy(text, image, len);
    text[len] = 0;
    st = rt_module_load(ctx, text, true, &meta, out);
    free(text);
    return st;
}

tc_status tc_module_load_ptx(tc_context *ctx, const char *ptx, size_t len, const tc_kernel_desc *kernels,
                             size_t num_kernels, tc_module **out) {
    return load_raw(ctx, ptx, len, true, kernels, num_kernels, out);
}

tc_status tc_module_load_cubin(tc_context *ctx, const void *cubin, size_t len, const tc_kernel_desc *kernels,
                               size_t num_kernels, tc_module **out) {
    return load_raw(ctx, cubin, len, false, kernels, num_kernels, out);
}

tc_status tc_module_unload(tc_module *m) {
    if (!m)
        return TC_OK;
    tc_context *ctx = m->ctx;
    pthread_mutex_lock(&ctx->lock);
    if (m->prev)
        m->prev->next = m->next;
    else
        ctx->modules = m->next;
    if (m->next)
        m->next->prev = m->prev;
    pthread_mutex_unlock(&ctx->lock);
    tc_status st = rt_ctx_push(ctx);
    if (st == TC_OK) {
        st = rt_cuda_check(rt_cu.cuModuleUnload(m->cu), "cuModuleUnload");
        rt_ctx_pop(ctx);
    }
    module_free(m);
    return st;
}

tc_status tc_module_get_kernel(tc_module *m, const char *name, tc_kernel **out) {
    if (out)
        *out = NULL;
    if (!m || !name || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_module_get_kernel: %s is NULL",
                       !m ? "the module" : !name ? "name" : "out");
    for (size_t k = 0; k < m->meta.num_kernels; k++)
        if (strcmp(m->kernels[k].name, name) == 0) {
            *out = &m->kernels[k];
            return TC_OK;
        }
    /* No metadata: look the entry up in the driver, once. */
    tc_context *ctx = m->ctx;
    tc_status st = TC_OK;
    pthread_mutex_lock(&ctx->lock);
    for (RtRawKernel *r = m->raw; r; r = r->next)
        if (strcmp(r->name, name) == 0) {
            *out = &r->kernel;
            break;
        }
    if (!*out) {
        size_t n = strlen(name);
        RtRawKernel *r = calloc(1, sizeof *r + n + 1);
        if (!r) {
            st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory looking up a kernel");
        } else if ((st = rt_ctx_push(ctx)) == TC_OK) {
            char what[300];
            snprintf(what, sizeof what, "cuModuleGetFunction(%s)", name);
            RtCuResult cr = rt_cu.cuModuleGetFunction(&r->kernel.fn, m->cu, name);
            rt_ctx_pop(ctx);
            if (cr == RT_CUDA_ERROR_NOT_FOUND)
                st = rt_fail(TC_ERROR_INVALID_ARGUMENT, "the module has no kernel named '%s'", name);
            else
                st = rt_cuda_check(cr, what);
        }
        if (st == TC_OK) {
            memcpy(r->name, name, n + 1);
            r->kernel.launch = rt_cu.cuLaunchKernel;
            r->kernel.num_params = SIZE_MAX;
            r->kernel.module = m;
            r->kernel.name = r->name;
            r->next = m->raw;
            m->raw = r;
            *out = &r->kernel;
        } else {
            free(r);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return st;
}

const tc_kernel_desc *tc_kernel_get_desc(const tc_kernel *k) {
    return k ? k->desc : NULL;
}
CUfunction tc_kernel_function(const tc_kernel *k) {
    return k ? k->fn : NULL;
}

tc_status tc_kernel_get_info(const tc_kernel *k, tc_kernel_info *out) {
    if (!k || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_kernel_get_info: %s is NULL", !k ? "k" : "out");
    memset(out, 0, sizeof *out);
    tc_context *ctx = k->module->ctx;
    tc_status st = rt_ctx_push(ctx);
    if (st != TC_OK)
        return st;
    static const struct {
        int attrib;
        size_t offset;
        const char *what;
    } attrs[] = {
        {RT_CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(tc_kernel_info, registers), "NUM_REGS"},
        {RT_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(tc_kernel_info, local_bytes), "LOCAL_SIZE_BYTES"},
        {RT_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(tc_kernel_info, static_shared_bytes), "SHARED_SIZE_BYTES"},
        {RT_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(tc_kernel_info, max_threads), "MAX_THREADS_PER_BLOCK"},
    };
    char what[300];
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0] && st == TC_OK; i++) {
        snprintf(what, sizeof what, "cuFuncGetAttribute(%s, %s)", k->name, attrs[i].what);
        st = rt_cuda_check(rt_cu.cuFuncGetAttribute((int *)((char *)out + attrs[i].offset), attrs[i].attrib, k->fn),
                           what);
    }
    if (st == TC_OK) {
        snprintf(what, sizeof what, "cuOccupancyMaxActiveBlocksPerMultiprocessor(%s)", k->name);
        st = rt_cuda_check(
            rt_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&out->programs_per_sm, k->fn, (int)k->block, k->shared),
            what);
    }
    rt_ctx_pop(ctx);
    if (st != TC_OK)
        memset(out, 0, sizeof *out);
    return st;
}

/* ---- launches ---- */

static tc_status launch_arg_error(const tc_kernel *k, void **args, size_t num_args) {
    if (!k)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch: kernel is NULL");
    if (k->num_params == SIZE_MAX)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "tc_launch: kernel %s was loaded without metadata; describe it at load time or use "
                       "tc_launch_raw",
                       k->name);
    if (num_args != k->num_params)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch: kernel %s takes %zu arguments, got %zu", k->name,
                       k->num_params, num_args);
    for (size_t i = 0; i < num_args; i++)
        if (!args || !args[i])
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch: kernel %s: args[%zu] (%s) is NULL", k->name, i,
                           k->desc->params[i].name);
    for (uint32_t i = 0; i < k->num_ptr_params; i++) {
        uint32_t p = k->ptr_params[i];
        if (!*(const CUdeviceptr *)args[p])
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch: kernel %s: pointer argument %u (%s) is 0", k->name, p,
                           k->desc->params[p].name);
    }
    return rt_fail(TC_ERROR_INTERNAL, "tc_launch: argument check failed for no reason");
}

static tc_status grid_error(const char *fn, const tc_kernel *k, tc_dim3 grid) {
    return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: kernel %s: grid %ux%ux%u is larger than %ux%ux%u", fn, k->name,
                   grid.x, grid.y, grid.z, TC_MAX_GRID_X, TC_MAX_GRID_YZ, TC_MAX_GRID_YZ);
}

/* After a failed launch: if the kernel's context was not current on this
 * thread, make it current (none was) or push it (another was) and retry. */
static tc_status launch_retry(tc_kernel *k, tc_dim3 grid, tc_dim3 block, unsigned shared, CUstream stream, void **args,
                              RtCuResult r) {
    if ((r == RT_CUDA_ERROR_INVALID_CONTEXT || r == RT_CUDA_ERROR_INVALID_HANDLE) && k->module) {
        tc_context *ctx = k->module->ctx;
        CUcontext cur = NULL;
        rt_cu.cuCtxGetCurrent(&cur);
        if (cur != ctx->cu) {
            if (!cur && rt_cu.cuCtxSetCurrent(ctx->cu) == RT_CUDA_SUCCESS) {
                r = k->launch(k->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, stream, args, NULL);
            } else if (rt_cu.cuCtxPushCurrent(ctx->cu) == RT_CUDA_SUCCESS) {
                r = k->launch(k->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, stream, args, NULL);
                rt_ctx_pop(ctx);
            }
        }
    }
    char what[300];
    snprintf(what, sizeof what, "cuLaunchKernel(%s, grid %ux%ux%u, block %ux%ux%u, shared %u)", k->name, grid.x, grid.y,
             grid.z, block.x, block.y, block.z, shared);
    return rt_cuda_check(r, what);
}

/* Arguments a launch with hidden parameters passes from its stack: the
 * runtime ones, the grid's and the maps' addresses (more take a heap block). */
#define LAUNCH_STACK_ARGS 64

/* tc_launch for a kernel with hidden parameters (a persistent kernel's grid,
 * tensor maps), once the arguments and the grid are checked: the grid's
 * extents and the maps, encoded, on this stack, passed after the arguments
 * in that order. A persistent kernel runs in at most k->programs programs,
 * along x, which loop over the grid's. */
static __attribute__((noinline)) tc_status launch_hidden(tc_kernel *k, tc_dim3 grid, CUstream stream, void **args,
                                                         size_t num_args) {
    int32_t extents[3];
    size_t num_grid = 0;
    tc_dim3 programs = grid;
    if (k->programs) {
        uint64_t total = (uint64_t)grid.x * grid.y * grid.z;
        if (total > INT32_MAX) /* the kernel numbers its programs with an i32 */
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "tc_launch: persistent kernel %s: grid %ux%ux%u has %llu programs, more than 2^31 - 1",
                           k->name, grid.x, grid.y, grid.z, (unsigned long long)total);
        extents[0] = (int32_t)grid.x, extents[1] = (int32_t)grid.y, extents[2] = (int32_t)grid.z;
        num_grid = 3;
        programs = (tc_dim3){total < k->programs ? (unsigned)total : k->programs, 1, 1};
    }
    if (k->num_maps && !k->encode)
        return rt_fail(TC_ERROR_UNSUPPORTED,
                       "tc_launch: kernel %s takes %u tensor maps (TMA), and this CUDA driver has no "
                       "cuTensorMapEncodeTiled to build them (CUDA 12.0 or newer has)",
                       k->name, k->num_maps);
    RtTensorMapSlot maps[TC_MAX_TENSOR_MAPS];
    void *stack[LAUNCH_STACK_ARGS];
    size_t n = num_args + num_grid + k->num_maps;
    void **all = n <= LAUNCH_STACK_ARGS ? stack : malloc(n * sizeof *all);
    if (!all)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "tc_launch: kernel %s: out of memory for %zu arguments", k->name, n);
    if (num_args)
        memcpy(all, args, num_args * sizeof *all);
    for (size_t i = 0; i < num_grid; i++)
        all[num_args + i] = &extents[i];
    tc_status st = TC_OK;
    for (uint32_t i = 0; i < k->num_maps && st == TC_OK; i++) {
        st = rt_tensor_map_encode(k, i, args, &maps[i]);
        all[num_args + num_grid + i] = maps[i].bytes;
    }
    if (st == TC_OK) {
        RtCuResult r =
            k->launch(k->fn, programs.x, programs.y, programs.z, k->block, 1, 1, k->shared, stream, all, NULL);
        if (r != RT_CUDA_SUCCESS)
            st = launch_retry(k, programs, (tc_dim3){k->block, 1, 1}, k->shared, stream, all, r);
    }
    if (all != stack)
        free(all);
    return st;
}

tc_status tc_launch(tc_kernel *k, tc_dim3 grid, CUstream stream, void **args, size_t num_args) {
    if (__builtin_expect(!k || !k->desc || num_args != k->num_params || (num_args && !args), 0))
        return launch_arg_error(k, args, num_args);
    for (size_t i = 0; i < num_args; i++)
        if (__builtin_expect(!args[i], 0))
            return launch_arg_error(k, args, num_args);
    for (uint32_t i = 0; i < k->num_ptr_params; i++)
        if (__builtin_expect(!*(const CUdeviceptr *)args[k->ptr_params[i]], 0))
            return launch_arg_error(k, args, num_args);
    if (__builtin_expect(grid.x > TC_MAX_GRID_X || grid.y > TC_MAX_GRID_YZ || grid.z > TC_MAX_GRID_YZ, 0))
        return grid_error("tc_launch", k, grid);
    if (!grid.x || !grid.y || !grid.z)
        return TC_OK;
    /* one test for both kinds of hidden parameters: the fast path stays one compare */
    if (__builtin_expect((k->num_maps | k->programs) != 0, 0))
        return launch_hidden(k, grid, stream, args, num_args);
    RtCuResult r = k->launch(k->fn, grid.x, grid.y, grid.z, k->block, 1, 1, k->shared, stream, args, NULL);
    if (__builtin_expect(r != RT_CUDA_SUCCESS, 0))
        return launch_retry(k, grid, (tc_dim3){k->block, 1, 1}, k->shared, stream, args, r);
    return TC_OK;
}

tc_status tc_launch_raw(tc_kernel *k, tc_dim3 grid, tc_dim3 block, unsigned int shared_bytes, CUstream stream,
                        void **args) {
    if (!k)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch_raw: kernel is NULL");
    if (grid.x > TC_MAX_GRID_X || grid.y > TC_MAX_GRID_YZ || grid.z > TC_MAX_GRID_YZ)
        return grid_error("tc_launch_raw", k, grid);
    /* each extent first, so that the product (at most 2^30 then) cannot wrap */
    if (!block.x || !block.y || !block.z || block.x > TC_MAX_BLOCK_THREADS || block.y > TC_MAX_BLOCK_THREADS ||
        block.z > TC_MAX_BLOCK_THREADS || block.x * block.y * block.z > TC_MAX_BLOCK_THREADS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_launch_raw: kernel %s: block %ux%ux%u must have 1 to %d threads",
                       k->name, block.x, block.y, block.z, TC_MAX_BLOCK_THREADS);
    if (!grid.x || !grid.y || !grid.z)
        return TC_OK;
    RtCuResult r =
        k->launch(k->fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream, args, NULL);
    if (r != RT_CUDA_SUCCESS)
        return launch_retry(k, grid, block, shared_bytes, stream, args, r);
    return TC_OK;
}

/* ---- linking PTX to a cubin ---- */

/* The lines of the driver's info log that report a performance loss
 * (ptxas C7510-C7515: wgmma serialized), each as a log line of level 1. */
static void report_losses(const RtLogger *lg, const char *info) {
    for (const char *line = info; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (memmem(line, n, "Performance Loss", 16) || memmem(line, n, "are serialized", 14))
            rt_log(lg, 1, "tilec: ptxas: %.*s", (int)(n > 400 ? 400 : n), line);
        line = end ? end + 1 : NULL;
    }
}

tc_status rt_link_ptx(tc_context *ctx, const char *ptx, size_t len, RtBytes *cubin, const RtLogger *lg) {
    JitLog log;
    if (!jit_log_init(&log, rt_ptx_has_line_info(ptx, len)))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory linking PTX");
    tc_status st = rt_ctx_push(ctx);
    if (st != TC_OK) {
        jit_log_free(&log);
        return st;
    }
    RtCuLinkState link = NULL;
    st = rt_cuda_check(rt_cu.cuLinkCreate(log.num_options, log.options, log.values, &link), "cuLinkCreate");
    if (st == TC_OK)
        st = rt_cuda_check(rt_cu.cuLinkAddData(link, RT_CU_JIT_INPUT_PTX, (void *)ptx, len, "tilec.ptx", 0, NULL, NULL),
                           "cuLinkAddData (PTX)");
    void *image = NULL;
    size_t size = 0;
    if (st == TC_OK)
        st = rt_cuda_check(rt_cu.cuLinkComplete(link, &image, &size), "cuLinkComplete");
    if (st != TC_OK)
        jit_log_report(&log);
    else
        report_losses(lg, log.info);
    if (st == TC_OK && !rt_bytes_append(cubin, image, size))
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory copying a cubin");
    if (link)
        rt_cu.cuLinkDestroy(link);
    rt_ctx_pop(ctx);
    jit_log_free(&log);
    return st;
}

/* ---- memory, streams, timers ---- */

#define WITH_CONTEXT(ctx, call, what)                                                                                  \
    do {                                                                                                               \
        if (!(ctx))                                                                                                    \
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: ctx is NULL", what);                                        \
        tc_status st_ = rt_ctx_push(ctx);                                                                              \
        if (st_ != TC_OK)                                                                                              \
            return st_;                                                                                                \
        st_ = rt_cuda_check(call, what);                                                                               \
        rt_ctx_pop(ctx);                                                                                               \
        return st_;                                                                                                    \
    } while (0)

tc_status tc_mem_alloc(tc_context *ctx, size_t bytes, CUdeviceptr *out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_mem_alloc: out is NULL");
    *out = 0;
    WITH_CONTEXT(ctx, rt_cu.cuMemAlloc(out, bytes ? bytes : 1), "cuMemAlloc");
}

tc_status tc_mem_free(tc_context *ctx, CUdeviceptr ptr) {
    if (!ptr)
        return TC_OK;
    WITH_CONTEXT(ctx, rt_cu.cuMemFree(ptr), "cuMemFree");
}

tc_status tc_memcpy_htod(tc_context *ctx, CUdeviceptr dst, const void *src, size_t bytes) {
    if (!bytes)
        return TC_OK;
    if (!dst || !src)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_memcpy_htod: %s", !dst ? "dst is 0" : "src is NULL");
    WITH_CONTEXT(ctx, rt_cu.cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

tc_status tc_memcpy_dtoh(tc_context *ctx, void *dst, CUdeviceptr src, size_t bytes) {
    if (!bytes)
        return TC_OK;
    if (!dst || !src)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_memcpy_dtoh: %s", !dst ? "dst is NULL" : "src is 0");
    WITH_CONTEXT(ctx, rt_cu.cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

tc_status tc_memset_d8(tc_context *ctx, CUdeviceptr dst, unsigned char value, size_t bytes) {
    if (!bytes)
        return TC_OK;
    if (!dst)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_memset_d8: dst is 0");
    WITH_CONTEXT(ctx, rt_cu.cuMemsetD8(dst, value, bytes), "cuMemsetD8");
}

tc_status tc_memset_d8_async(tc_context *ctx, CUstream stream, CUdeviceptr dst, unsigned char value, size_t bytes) {
    if (!bytes)
        return TC_OK;
    if (!dst)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_memset_d8_async: dst is 0");
    WITH_CONTEXT(ctx, rt_cu.cuMemsetD8Async(dst, value, bytes, stream), "cuMemsetD8Async");
}

tc_status tc_stream_create(tc_context *ctx, CUstream *out) {
    if (!out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_stream_create: out is NULL");
    *out = NULL;
    WITH_CONTEXT(ctx, rt_cu.cuStreamCreate(out, 0), "cuStreamCreate");
}

tc_status tc_stream_destroy(tc_context *ctx, CUstream stream) {
    if (!stream)
        return TC_OK;
    WITH_CONTEXT(ctx, rt_cu.cuStreamDestroy(stream), "cuStreamDestroy");
}

tc_status tc_stream_synchronize(tc_context *ctx, CUstream stream) {
    WITH_CONTEXT(ctx, rt_cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
}

struct tc_timer {
    tc_context *ctx;
    CUevent start, stop;
};

tc_status tc_timer_create(tc_context *ctx, tc_timer **out) {
    if (!ctx || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_timer_create: %s is NULL", !ctx ? "ctx" : "out");
    *out = NULL;
    tc_timer *t = calloc(1, sizeof *t);
    if (!t)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory creating a timer");
    t->ctx = ctx;
    tc_status st = rt_ctx_push(ctx);
    if (st == TC_OK) {
        st = rt_cuda_check(rt_cu.cuEventCreate(&t->start, 0), "cuEventCreate");
        if (st == TC_OK)
            st = rt_cuda_check(rt_cu.cuEventCreate(&t->stop, 0), "cuEventCreate");
        if (st != TC_OK && t->start)
            rt_cu.cuEventDestroy(t->start);
        rt_ctx_pop(ctx);
    }
    if (st != TC_OK) {
        free(t);
        return st;
    }
    *out = t;
    return TC_OK;
}

tc_status tc_timer_start(tc_timer *t, CUstream stream) {
    if (!t)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_timer_start: timer is NULL");
    WITH_CONTEXT(t->ctx, rt_cu.cuEventRecord(t->start, stream), "cuEventRecord");
}

tc_status tc_timer_stop(tc_timer *t, CUstream stream) {
    if (!t)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_timer_stop: timer is NULL");
    WITH_CONTEXT(t->ctx, rt_cu.cuEventRecord(t->stop, stream), "cuEventRecord");
}

tc_status tc_timer_elapsed_ms(tc_timer *t, float *ms) {
    if (!t || !ms)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_timer_elapsed_ms: %s is NULL", !t ? "the timer" : "ms");
    *ms = 0;
    tc_status st = rt_ctx_push(t->ctx);
    if (st != TC_OK)
        return st;
    st = rt_cuda_check(rt_cu.cuEventSynchronize(t->stop), "cuEventSynchronize");
    if (st == TC_OK)
        st = rt_cuda_check(rt_cu.cuEventElapsedTime(ms, t->start, t->stop), "cuEventElapsedTime");
    rt_ctx_pop(t->ctx);
    return st;
}

tc_status tc_timer_destroy(tc_timer *t) {
    if (!t)
        return TC_OK;
    tc_status st = rt_ctx_push(t->ctx);
    if (st == TC_OK) {
        rt_cu.cuEventDestroy(t->start);
        rt_cu.cuEventDestroy(t->stop);
        rt_ctx_pop(t->ctx);
    }
    free(t);
    return st;
}
