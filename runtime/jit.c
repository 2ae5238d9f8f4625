/*
 * jit.c — tc_jit: compile a kernel at run time, once per process and once
 * per machine.
 *
 * Three levels, fastest first:
 *
 *  1. The context's in-memory table. A request's base key (source bytes and
 *     name, kernel, constexpr values, options, target, compiler version and
 *     build id) selects a family, which holds the kernel's runtime
 *     signature; the argument facts (each pointer 16-byte aligned or not,
 *     each integer divisible by 16 or not) select a variant of it. A hit
 *     costs a hash of the source and a few comparisons.
 *  2. The disk cache (cache.c): the variant's cubin, keyed by the PTX key
 *     plus the device's compute capability and the driver's version, loads
 *     with no compile at all; else its PTX (keyed by the PTX key) skips
 *     tilec but not the driver's PTX compiler. The directory is used only
 *     if cache.c trusts it (the user's own, not writable by others); else
 *     the context logs why, once, and caches in memory only. Cached PTX
 *     that the driver does not link is deleted and compiled again, once.
 *  3. A compile: tc_compile to PTX (driver/kernel_meta.c's bridge), stored; then the
 *     driver's linker makes the cubin (cuLink*), stored too.
 *
 * A family miss does not know the signature, which the argument facts and
 * so the keys of levels 2 and 3 need: it starts the compile of level 3 at
 * once, and the compile's specialize hook (family_miss_facts, through
 * rt_jit_build_ptx's facts_hook) gets the signature right after the front
 * end, keeps it for the family, derives the facts, and does the lookups of
 * level 2; a hit there ends the compile, a miss lets it go on with the
 * facts. Either way the source is parsed once per miss.
 *
 * Every compile is logged ("tilec: compiled softmax_fwd (key 3fa4…) in 9.1
 * ms") to the context's callback, or to stderr with TILEC_LOG=1, so that no
 * recompile is silent; a rejected cache entry is logged the same way, and
 * with TILEC_LOG=2 so are hits.
 *
 * The table and the compiles run under the context's JIT lock: two threads
 * asking for the same kernel compile it once. Two processes may compile the
 * same key at once; both write complete entries atomically (cache.c).
 *
 * When tc_options grows a field that changes the generated code, it must be
 * added to rt_jit_base_key, or kernels compiled with different values would
 * share a cache entry.
 */
#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JIT_KEY_VERSION "tilec-jit-key-1"

/* ---- keys ---- */

static int cmp_constexpr(const tc_constexpr *a, const tc_constexpr *b) {
    return strcmp(a->name, b->name);
}

void rt_jit_base_key(const RtJitInputs *in, uint8_t key[32]) {
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_field_str(&h, "version", JIT_KEY_VERSION);
    rt_sha256_field_str(&h, "compiler", tc_version());
    rt_sha256_field_str(&h, "build", rt_build_id()); /* a rebuilt tilec of the same version may emit other code */
    rt_sha256_field_str(&h, "source-name", in->source->name);
    rt_sha256_field(&h, "source", in->source->text, in->source->text ? in->source->len : 0);
    rt_sha256_field_str(&h, "kernel", in->kernel);
    rt_sha256_field_str(&h, "arch", in->arch);
    /* constexpr values in name order: the order of -D flags does not matter */
    size_t n = in->num_constexprs;
    const tc_constexpr *sorted[256];
    size_t m = n < 256 ? n : 256;
    for (size_t i = 0; i < m; i++) {
        const tc_constexpr *c = &in->constexprs[i];
        size_t j = i;
        while (j > 0 && cmp_constexpr(sorted[j - 1], c) > 0) {
            sorted[j] = sorted[j - 1];
            j--;
        }
        sorted[j] = c;
    }
    rt_sha256_field_i64(&h, "constexprs", (int64_t)n);
    for (size_t i = 0; i < n; i++) {
        const tc_constexpr *c = i < m ? sorted[i] : &in->constexprs[i];
        uint64_t fbits;
        memcpy(&fbits, &c->f, sizeof fbits);
        rt_sha256_field_str(&h, "cx-name", c->name);
        rt_sha256_field_i64(&h, "cx-kind", (int64_t)c->kind);
        rt_sha256_field_i64(&h, "cx-i", c->kind == TC_CONSTEXPR_FLOAT ? 0 : c->i);
        rt_sha256_field_i64(&h, "cx-f", c->kind == TC_CONSTEXPR_FLOAT ? (int64_t)fbits : 0);
    }
    /* options that change the code (emit and the print options do not) */
    const tc_options *o = in->options;
    rt_sha256_field_i64(&h, "num_warps", o->num_warps > 0 ? o->num_warps : TC_DEFAULT_NUM_WARPS);
    rt_sha256_field_i64(&h, "num_stages", o->num_stages > 0 ? o->num_stages : TC_DEFAULT_NUM_STAGES);
    rt_sha256_field_i64(&h, "llvm_o3", o->llvm_o3 != 0);
    rt_sha256_field_i64(&h, "warp_specialize", o->warp_specialize != 0);
    rt_sha256_field_i64(&h, "persistent", o->persistent != 0);
    rt_sha256_field_i64(&h, "min_programs_per_sm", o->min_programs_per_sm);
    rt_sha256_field_i64(&h, "line_info", o->line_info != 0); /* the same code, but .loc directives in the PTX */
    rt_sha256_field_i64(&h, "option-params", (int64_t)o->num_params);
    for (size_t i = 0; i < o->num_params && o->params; i++) {
        rt_sha256_field_str(&h, "op-name", o->params[i].name);
        rt_sha256_field_i64(&h, "op-div", o->params[i].divisibility);
    }
    rt_sha256_final(&h, key);
}

void rt_jit_ptx_key(const uint8_t base[32], const uint8_t *div16, size_t num_params, uint8_t key[32]) {
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_field(&h, "base", base, 32);
    rt_sha256_field(&h, "div16", div16, num_params);
    rt_sha256_final(&h, key);
}

void rt_jit_cubin_key(const uint8_t ptx_key[32], int compute_capability, int driver_version, uint8_t key[32]) {
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_field(&h, "ptx-key", ptx_key, 32);
    rt_sha256_field_i64(&h, "cc", compute_capability);
    rt_sha256_field_i64(&h, "driver", driver_version);
    rt_sha256_final(&h, key);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the driver-free half: PTX from the cache or the compiler ---- */

void rt_jit_build_free(RtJitBuild *b) {
    rt_bytes_free(&b->ptx);
    rt_meta_free(&b->meta);
}

/* The PTX key of inputs whose facts are known. */
static void ptx_key_of(const RtJitInputs *in, uint8_t key[32]) {
    uint8_t base[32];
    rt_jit_base_key(in, base);
    rt_jit_ptx_key(base, in->div16, in->num_params, key);
}

/* Level 2 for PTX: out->ptx and out->meta from the entry of out->key, if the
 * disk has a good one (a bad one is logged and deleted). */
static bool load_cached_ptx(const RtJitInputs *in, RtJitBuild *out) {
    if (!in->cache_dir || in->no_cache_load)
        return false;
    char hex[65];
    rt_hex(out->key, 32, hex);
    RtCacheEntry e;
    bool hit;
    char why[256];
    tc_status st = rt_cache_load(in->cache_dir, out->key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why);
    if (st != TC_OK) {
        rt_log(in->log, 1, "tilec: cache: %s", tc_last_error());
        return false;
    }
    if (hit) {
        if (rt_meta_decode(e.meta, e.meta_len, &out->meta) && rt_bytes_append(&out->ptx, e.payload, e.payload_len)) {
            rt_cache_entry_free(&e);
            rt_log(in->log, 2, "tilec: cache hit %s (key %.16s, PTX)", in->kernel, hex);
            return true;
        }
        rt_bytes_free(&out->ptx);
        rt_meta_free(&out->meta);
        rt_cache_entry_free(&e);
        snprintf(why, sizeof why, "bad kernel metadata");
        rt_cache_remove(in->cache_dir, out->key);
    }
    if (why[0])
        rt_log(in->log, 1, "tilec: rejected cache entry %s/%s.entry: %s; rebuilding", in->cache_dir, hex, why);
    return false;
}

/* The compile's specialize hook when the facts wait for the signature:
 * asks in->facts for them, then looks for the variant's PTX on the disk; a
 * variant found either way ends the compile. */
typedef struct FactsHook {
    const RtJitInputs *in;
    RtJitInputs known; /* *in with the facts filled */
    RtJitBuild found;  /* the key, and the cached PTX or done (the compile owns its own outputs until it returns) */
    bool stopped;      /* found holds the cached PTX, or found.done */
} FactsHook;

static tc_status facts_hook(void *user, const RtMeta *sig, const tc_param_spec **specs, size_t *num_specs,
                            bool *stop) {
    FactsHook *h = user;
    RtJitFacts f = {0};
    bool done = false;
    tc_status st = h->in->facts(h->in->facts_user, sig, &f, &done);
    if (st != TC_OK)
        return st;
    if (done) {
        h->found.done = h->stopped = *stop = true;
        return TC_OK;
    }
    h->known.facts = NULL;
    h->known.div16 = f.div16;
    h->known.num_params = f.num_params;
    h->known.specs = f.specs;
    h->known.num_specs = f.num_specs;
    ptx_key_of(&h->known, h->found.key);
    if (load_cached_ptx(&h->known, &h->found)) {
        h->stopped = *stop = true;
        return TC_OK;
    }
    *specs = f.specs;
    *num_specs = f.num_specs;
    return TC_OK;
}

tc_status rt_jit_build_ptx(const RtJitInputs *in, RtJitBuild *out) {
    memset(out, 0, sizeof *out);
    FactsHook hook = {.in = in, .known = *in};
    if (!in->facts) {
        ptx_key_of(in, out->key);
        if (load_cached_ptx(in, out))
            return TC_OK;
    }
    /* With in->facts, the caller's own facts go in before the front end
     * (checked against the source as tc_compile checks them) and the rest
     * through the hook. */
    RtCompileRequest req = {in->source,
                            in->kernel,
                            in->constexprs,
                            in->num_constexprs,
                            in->options,
                            in->arch,
                            in->facts ? in->options->params : in->specs,
                            in->facts ? in->options->num_params : in->num_specs,
                            in->facts ? facts_hook : NULL,
                            &hook};
    RtCompileFn compile = in->compile ? in->compile : rt_compile_ptx;
    double t0 = now_ms();
    tc_status st = compile(in->compile_user, &req, &out->ptx, &out->meta, in->diags);
    if (st != TC_OK || hook.stopped) {
        rt_jit_build_free(out);
        if (st == TC_OK)
            *out = hook.found;
        else
            rt_jit_build_free(&hook.found);
        return st;
    }
    if (in->facts)
        memcpy(out->key, hook.found.key, 32);
    out->compiled = true;
    char hex[65];
    rt_hex(out->key, 32, hex);
    rt_log(in->log, 1, "tilec: compiled %s (key %.16s) in %.1f ms", in->kernel, hex, now_ms() - t0);
    if (in->cache_dir) {
        RtBytes meta = {0};
        st = rt_meta_encode(&out->meta, &meta)
                 ? rt_cache_store(in->cache_dir, out->key, RT_PAYLOAD_PTX, meta.data, meta.len, out->ptx.data,
                                  out->ptx.len)
                 : rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory encoding kernel metadata");
        rt_bytes_free(&meta);
        if (st != TC_OK)
            rt_log(in->log, 1, "tilec: cache: %s", tc_last_error()); /* the kernel still works */
    }
    return TC_OK;
}

/* PTX from the disk that passed its checksum and still does not link or
 * load (written by a compiler with a bug since fixed under the same build
 * id, or for a driver since replaced): without this, every call would load
 * it and fail again. Deleted and compiled afresh (and stored) into *b; the
 * caller tries once more, and a fresh PTX that fails too is the error. */
static tc_status rebuild_cached_ptx(const RtJitInputs *in, RtJitBuild *b, const char *what) {
    char hex[65];
    rt_hex(b->key, 32, hex);
    rt_log(in->log, 1, "tilec: cached PTX %s/%s.entry does not %s (%s); rebuilding", in->cache_dir, hex, what,
           tc_last_error());
    rt_cache_remove(in->cache_dir, b->key);
    rt_jit_build_free(b);
    RtJitInputs fresh = *in;
    fresh.no_cache_load = true;
    return rt_jit_build_ptx(&fresh, b);
}

tc_status rt_jit_build_cubin(const RtJitInputs *in, RtLinkFn link, void *link_user, RtJitBuild *b, RtBytes *cubin) {
    tc_status st = rt_jit_build_ptx(in, b);
    if (st != TC_OK || b->done)
        return st;
    st = link(link_user, (const char *)b->ptx.data, b->ptx.len, cubin);
    if (st == TC_OK)
        return TC_OK;
    if (b->compiled || !in->cache_dir) {
        rt_jit_build_free(b);
        return st;
    }
    if ((st = rebuild_cached_ptx(in, b, "link")) != TC_OK)
        return st;
    rt_bytes_free(cubin);
    if ((st = link(link_user, (const char *)b->ptx.data, b->ptx.len, cubin)) != TC_OK)
        rt_jit_build_free(b);
    return st;
}

/* ---- the in-memory table ---- */

typedef struct JitVariant JitVariant;
typedef struct JitFamily JitFamily;

struct JitVariant {
    tc_kernel *kernel;
    JitVariant *next;
    uint8_t div16[]; /* the family's num_params entries */
};

struct JitFamily {
    uint8_t base[32];
    RtMeta sig; /* one kernel: the runtime signature */
    JitVariant *variants;
    JitFamily *next;
};

struct RtJitTable {
    JitFamily *buckets[256]; /* by the base key's first byte */
    bool disk_warned;        /* the context logged why it has no disk cache */
};

void rt_jit_table_free(RtJitTable *t) {
    if (!t)
        return;
    for (int b = 0; b < 256; b++)
        while (t->buckets[b]) {
            JitFamily *f = t->buckets[b];
            t->buckets[b] = f->next;
            while (f->variants) {
                JitVariant *v = f->variants;
                f->variants = v->next;
                free(v);
            }
            rt_meta_free(&f->sig);
            free(f);
        }
    free(t);
}

void tc_jit_request_init(tc_jit_request *req) {
    if (req)
        memset(req, 0, sizeof *req);
}

static bool is_integer(tc_dtype t) {
    return t >= TC_DTYPE_I8 && t <= TC_DTYPE_I64;
}

/* The argument facts of a request, per runtime parameter of sig. */
static tc_status argument_facts(const tc_jit_request *req, const tc_kernel_desc *sig, uint8_t *div16) {
    size_t n = sig->num_params;
    memset(div16, 0, n ? n : 1);
    if (req->divisibility) {
        if (req->num_divisibility != n)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: %s has %zu runtime parameters, divisibility has %zu",
                           sig->name, n, req->num_divisibility);
        for (size_t i = 0; i < n; i++) {
            const tc_param_desc *p = &sig->params[i];
            int64_t d = req->divisibility[i];
            div16[i] = (p->is_pointer || is_integer(p->dtype)) && d != 0 && d % 16 == 0;
        }
        return TC_OK;
    }
    if (!req->args)
        return TC_OK;
    if (req->num_args != n)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: %s takes %zu arguments, got %zu", sig->name, n,
                       req->num_args);
    for (size_t i = 0; i < n; i++) {
        const tc_param_desc *p = &sig->params[i];
        const void *a = req->args[i];
        if (!a)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: %s: args[%zu] (%s) is NULL", sig->name, i, p->name);
        uint64_t v;
        if (p->is_pointer) {
            v = *(const CUdeviceptr *)a;
        } else if (is_integer(p->dtype)) {
            switch (p->dtype) {
            case TC_DTYPE_I8: v = (uint64_t) * (const int8_t *)a; break;
            case TC_DTYPE_I16: v = (uint64_t) * (const int16_t *)a; break;
            case TC_DTYPE_I32: v = (uint64_t) * (const int32_t *)a; break;
            default: v = (uint64_t) * (const int64_t *)a; break;
            }
        } else {
            continue;
        }
        div16[i] = v % 16 == 0;
    }
    return TC_OK;
}

static JitFamily *find_family(RtJitTable *t, const uint8_t base[32]) {
    for (JitFamily *f = t->buckets[base[0]]; f; f = f->next)
        if (memcmp(f->base, base, 32) == 0)
            return f;
    return NULL;
}

static tc_kernel *find_variant(const JitFamily *f, const uint8_t *div16) {
    size_t n = f->sig.kernels[0].num_params;
    for (JitVariant *v = f->variants; v; v = v->next)
        if (memcmp(v->div16, div16, n) == 0)
            return v->kernel;
    return NULL;
}

/* Loads a cubin entry for the key, if the cache has a good one. */
static tc_status load_cached_cubin(tc_context *ctx, const RtJitInputs *in, const uint8_t key[32], tc_module **mod) {
    *mod = NULL;
    RtCacheEntry e;
    bool hit;
    char why[256], hex[65];
    rt_hex(key, 32, hex);
    tc_status st = rt_cache_load(in->cache_dir, key, RT_PAYLOAD_CUBIN, &e, &hit, why, sizeof why);
    if (st != TC_OK) {
        rt_log(in->log, 1, "tilec: cache: %s", tc_last_error());
        return TC_OK;
    }
    if (!hit) {
        if (why[0])
            rt_log(in->log, 1, "tilec: rejected cache entry %s/%s.entry: %s; rebuilding", in->cache_dir, hex, why);
        return TC_OK;
    }
    RtMeta meta;
    if (!rt_meta_decode(e.meta, e.meta_len, &meta)) {
        rt_cache_remove(in->cache_dir, key);
        rt_log(in->log, 1, "tilec: rejected cache entry %s/%s.entry: bad kernel metadata; rebuilding", in->cache_dir,
               hex);
        rt_cache_entry_free(&e);
        return TC_OK;
    }
    st = rt_module_load(ctx, e.payload, false, &meta, mod);
    rt_cache_entry_free(&e);
    if (st == TC_OK)
        rt_log(in->log, 2, "tilec: cache hit %s (key %.16s, cubin)", in->kernel, hex);
    else /* a cubin this driver refuses: fall back to the PTX */
        rt_log(in->log, 1, "tilec: cached cubin %s/%s.entry does not load (%s); rebuilding", in->cache_dir, hex,
               tc_last_error());
    return TC_OK;
}

typedef struct LinkUser {
    tc_context *ctx;
    const RtLogger *log;
    bool whole_program; /* set: not linked, the module loads the PTX itself */
} LinkUser;

/* Does the PTX move registers between warpgroups (setmaxnreg, warp
 * specialization)? The driver's linker compiles PTX as one unit among
 * others and then ignores setmaxnreg (ptxas C7504, "to maintain
 * compatibility across compilation units"), leaving the consumer warps at
 * the launch's register count; loaded as a whole program it is honored. */
static bool moves_registers(const char *ptx, size_t len) {
    return memmem(ptx, len, "setmaxnreg.", strlen("setmaxnreg.")) != NULL;
}

static tc_status link_in_context(void *user, const char *ptx, size_t len, RtBytes *cubin) {
    LinkUser *u = user;
    u->whole_program = moves_registers(ptx, len);
    if (u->whole_program)
        return TC_OK;
    return rt_link_ptx(u->ctx, ptx, len, cubin, u->log);
}

/* A variant being built: its facts (known from the family's signature, or
 * computed from the one the compile's front end gives on a family miss),
 * and what the disk or the compile gave. */
typedef struct JitMiss {
    tc_context *ctx;
    const tc_jit_request *req;
    const RtJitInputs *in; /* the request's inputs, facts aside */
    RtMeta sig;            /* a family miss: the signature, once the front end has run */
    bool have_sig;
    bool checked_cubin; /* the disk's cubin was looked for (once per build) */
    uint8_t *div16;     /* sig's num_params entries */
    size_t num_params;
    tc_param_spec *specs; /* the caller's tc_options.params, then the derived facts */
    size_t num_specs;
    tc_module *mod; /* the cubin from the disk */
} JitMiss;

static void jit_miss_free(JitMiss *m) {
    rt_meta_free(&m->sig);
    free(m->div16);
    free(m->specs);
}

/* The facts of the request for signature sig, into m. */
static tc_status miss_facts(JitMiss *m, const tc_kernel_desc *sig) {
    size_t n = sig->num_params;
    const tc_options *opt = m->in->options;
    free(m->div16);
    free(m->specs);
    m->div16 = calloc(n ? n : 1, 1);
    m->specs = calloc(n + opt->num_params + 1, sizeof *m->specs);
    m->num_params = n;
    m->num_specs = 0;
    if (!m->div16 || !m->specs)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    tc_status st = argument_facts(m->req, sig, m->div16);
    if (st != TC_OK)
        return st;
    /* The compiler gets the caller's own facts and the derived ones, by name. */
    for (size_t i = 0; i < opt->num_params && opt->params; i++)
        m->specs[m->num_specs++] = opt->params[i];
    for (size_t i = 0; i < n; i++)
        if (m->div16[i])
            m->specs[m->num_specs++] = (tc_param_spec){sig->params[i].name, 16};
    return TC_OK;
}

static void with_facts(const JitMiss *m, RtJitInputs *in) {
    in->facts = NULL;
    in->div16 = m->div16;
    in->num_params = m->num_params;
    in->specs = m->specs;
    in->num_specs = m->num_specs;
}

static void cubin_key_of(const tc_context *ctx, const RtJitInputs *in, uint8_t key[32]) {
    uint8_t ptx_key[32];
    ptx_key_of(in, ptx_key);
    rt_jit_cubin_key(ptx_key, ctx->cc, ctx->driver_version, key);
}

/* RtJitFactsFn of a family miss: keeps the signature (the family's, added
 * whatever the build's outcome), derives the facts from it, and looks for
 * the variant's cubin on the disk before the compile goes on. */
static tc_status family_miss_facts(void *user, const RtMeta *sig, RtJitFacts *facts, bool *done) {
    JitMiss *m = user;
    if (!m->have_sig) {
        if (sig->num_kernels != 1)
            return rt_fail(TC_ERROR_INTERNAL, "tc_jit: the signature of %s has %zu kernels", m->req->kernel,
                           sig->num_kernels);
        tc_status st = rt_meta_copy(sig->kernels, 1, &m->sig);
        if (st != TC_OK)
            return st;
        m->have_sig = true;
    }
    tc_status st = miss_facts(m, &m->sig.kernels[0]);
    if (st != TC_OK)
        return st;
    *facts = (RtJitFacts){m->div16, m->num_params, m->specs, m->num_specs};
    if (m->in->cache_dir && !m->checked_cubin) {
        m->checked_cubin = true;
        RtJitInputs known = *m->in;
        with_facts(m, &known);
        uint8_t key[32];
        cubin_key_of(m->ctx, &known, key);
        if ((st = load_cached_cubin(m->ctx, &known, key, &m->mod)) != TC_OK)
            return st;
        *done = m->mod != NULL;
    }
    return TC_OK;
}

/* Levels 2 and 3: a module for the variant. With in->facts (a family miss)
 * the facts arrive during the compile, through m; else m has them. */
static tc_status build_module(tc_context *ctx, const RtJitInputs *in, JitMiss *m, tc_module **mod) {
    *mod = NULL;
    uint8_t cubin_key[32];
    if (!in->facts && in->cache_dir) {
        cubin_key_of(ctx, in, cubin_key);
        tc_status st = load_cached_cubin(ctx, in, cubin_key, mod);
        if (st != TC_OK || *mod)
            return st;
    }
    RtJitBuild b;
    RtBytes cubin = {0};
    LinkUser lu = {ctx, in->log, false};
    tc_status st = rt_jit_build_cubin(in, link_in_context, &lu, &b, &cubin);
    if (st != TC_OK || b.done) {
        rt_bytes_free(&cubin);
        *mod = st == TC_OK ? m->mod : NULL;
        m->mod = NULL;
        return st;
    }
    if (lu.whole_program) { /* the PTX, JIT-compiled by the driver as one program; no cubin to store */
        rt_bytes_free(&cubin);
        st = rt_module_load(ctx, b.ptx.data, true, &b.meta, mod);
        if (st != TC_OK && !b.compiled && in->cache_dir && (st = rebuild_cached_ptx(in, &b, "load")) == TC_OK)
            st = rt_module_load(ctx, b.ptx.data, true, &b.meta, mod);
        rt_jit_build_free(&b);
        return st;
    }
    if (in->cache_dir) {
        RtJitInputs known = *in;
        if (in->facts)
            with_facts(m, &known);
        cubin_key_of(ctx, &known, cubin_key);
        RtBytes meta = {0};
        tc_status cs =
            rt_meta_encode(&b.meta, &meta)
                ? rt_cache_store(in->cache_dir, cubin_key, RT_PAYLOAD_CUBIN, meta.data, meta.len, cubin.data, cubin.len)
                : rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory encoding kernel metadata");
        rt_bytes_free(&meta);
        if (cs != TC_OK)
            rt_log(in->log, 1, "tilec: cache: %s", tc_last_error());
    }
    st = rt_module_load(ctx, cubin.data, false, &b.meta, mod);
    rt_bytes_free(&cubin);
    rt_jit_build_free(&b);
    return st;
}

bool rt_jit_disk_cache(const RtLogger *log, bool *warned, char *dir, size_t cap) {
    size_t base;
    if (rt_cache_dir(dir, cap, &base) == TC_OK && rt_cache_prepare(dir, base) == TC_OK)
        return true;
    if (!*warned)
        rt_log(log, 1, "tilec: %s; caching in memory only", tc_last_error());
    *warned = true;
    return false;
}

/* Everything after the request is read and the lock is held. A family hit
 * knows the signature: its facts select the variant, and a variant miss
 * compiles (one parse) unless the disk has it. A family miss learns the
 * signature from the one compile it starts: family_miss_facts turns it into
 * facts there and looks for the variant on the disk, which ends that compile
 * after its front end on a hit. */
static tc_status jit_locked(tc_context *ctx, const tc_jit_request *req, const tc_source *src, const tc_options *opt,
                            const char *arch, const RtLogger *log, tc_kernel **out) {
    if (!ctx->jit && !(ctx->jit = calloc(1, sizeof *ctx->jit)))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    RtJitInputs in = {0};
    in.source = src;
    in.kernel = req->kernel;
    in.constexprs = req->constexprs;
    in.num_constexprs = req->num_constexprs;
    in.options = opt;
    in.arch = arch;
    in.log = log;
    in.diags = req->diags;
    uint8_t base[32];
    rt_jit_base_key(&in, base);

    JitFamily *fam = find_family(ctx->jit, base);
    if (fam) {
        const tc_kernel_desc *sig = &fam->sig.kernels[0];
        size_t n = sig->num_params;
        uint8_t facts_buf[64], *facts = n <= sizeof facts_buf ? facts_buf : malloc(n);
        if (!facts)
            return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
        tc_status st = argument_facts(req, sig, facts);
        tc_kernel *k = st == TC_OK ? find_variant(fam, facts) : NULL;
        if (facts != facts_buf)
            free(facts);
        if (st != TC_OK || k) { /* the common case: no allocation */
            *out = k;
            return st;
        }
    }
    JitMiss m = {0};
    m.ctx = ctx;
    m.req = req;
    m.in = &in;
    tc_status st = fam ? miss_facts(&m, &fam->sig.kernels[0]) : TC_OK;
    char dir[4096];
    /* the interpreter's IR stays in memory: it compiles in milliseconds, and
     * keys made for GPU code must never name it */
    bool use_disk = st == TC_OK && !req->no_disk_cache && !ctx->host &&
                    rt_jit_disk_cache(log, &ctx->jit->disk_warned, dir, sizeof dir);
    if (ctx->host)
        in.compile = rt_compile_ir;
    in.cache_dir = use_disk ? dir : NULL;
    if (fam) {
        with_facts(&m, &in);
    } else {
        in.facts = family_miss_facts;
        in.facts_user = &m;
    }
    tc_module *mod = NULL;
    if (st == TC_OK)
        st = build_module(ctx, &in, &m, &mod);
    if (!fam && m.have_sig) { /* the signature is kept even when the build failed */
        if (!(fam = calloc(1, sizeof *fam))) {
            tc_module_unload(mod);
            jit_miss_free(&m);
            return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
        }
        memcpy(fam->base, base, 32);
        fam->sig = m.sig;
        memset(&m.sig, 0, sizeof m.sig);
        fam->next = ctx->jit->buckets[base[0]];
        ctx->jit->buckets[base[0]] = fam;
    }
    tc_kernel *k = NULL;
    if (st == TC_OK && (st = tc_module_get_kernel(mod, req->kernel, &k)) != TC_OK) {
        tc_module_unload(mod);
        st = rt_fail(TC_ERROR_INTERNAL, "tc_jit: the compiled module has no kernel named %s", req->kernel);
    }
    JitVariant *v = NULL;
    if (st == TC_OK && !(v = calloc(1, sizeof *v + (m.num_params ? m.num_params : 1)))) {
        tc_module_unload(mod);
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    if (st != TC_OK) {
        jit_miss_free(&m);
        return st;
    }
    memcpy(v->div16, m.div16, m.num_params);
    jit_miss_free(&m);
    v->kernel = k;
    v->next = fam->variants;
    fam->variants = v;
    *out = k;
    tc_kernel_info info;
    if (!ctx->host && rt_context_logs(ctx, 1) && tc_kernel_get_info(k, &info) == TC_OK) /* the driver's queries */
        rt_log(log, 1, "tilec: loaded %s: %d registers and %d bytes of local memory a thread, %d bytes of static "
               "shared memory, %d programs a multiprocessor", req->kernel, info.registers, info.local_bytes,
               info.static_shared_bytes, info.programs_per_sm);
    return TC_OK;
}

tc_status tc_jit(tc_context *ctx, const tc_jit_request *req, tc_kernel **out) {
    if (out)
        *out = NULL;
    if (!ctx || !req || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: %s is NULL", !ctx ? "ctx" : !req ? "req" : "out");
    if (!req->kernel)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: req->kernel is NULL (the kernel to compile is required)");
    if (!req->source && !req->path)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: req->source and req->path are both NULL");
    tc_status cst = rt_check_constexprs("tc_jit", req->constexprs, req->num_constexprs);
    if (cst != TC_OK)
        return cst;
    if (req->num_divisibility && !req->divisibility && !req->args)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: req->divisibility is NULL with num_divisibility %zu",
                       req->num_divisibility);
    for (size_t i = 0; req->divisibility && i < req->num_divisibility; i++)
        if (req->divisibility[i] < 0)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: req->divisibility[%zu] is %lld; it must be >= 0", i,
                           (long long)req->divisibility[i]);
    if (!req->divisibility && req->num_args && !req->args)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_jit: req->args is NULL with num_args %zu", req->num_args);
    const char *arch = req->arch ? req->arch : ctx->arch;
    if (!*arch)
        return rt_fail(TC_ERROR_UNSUPPORTED,
                       "tc_jit: compute capability %d.%d is older than sm_80, tilec's oldest target", ctx->cc / 10,
                       ctx->cc % 10);
    tc_options opt;
    rt_request_options(req->options, &opt);
    opt.emit = TC_EMIT_PTX; /* ignored, as the print options are */
    if (ctx->line_info == 1) /* $TILEC_LINE_INFO=1; in the keys through opt */
        opt.line_info = 1;
    if ((cst = rt_check_options("tc_jit", &opt)) != TC_OK)
        return cst;

    tc_source src = {req->path, req->source, 0};
    tc_source file = {0};
    if (req->source) {
        src.len = req->source_len ? req->source_len : strlen(req->source);
    } else {
        if (tc_source_read_file(req->path, &file) != TC_OK)
            return rt_fail(TC_ERROR_IO, "tc_jit: cannot read %s", req->path);
        src = file;
    }
    /* log lines wait until the lock is released: see RtLogger */
    RtBytes queue = {0};
    RtLogger log = {NULL, NULL, &queue};
    pthread_mutex_lock(&ctx->jit_lock);
    tc_status st = jit_locked(ctx, req, &src, &opt, arch, &log, out);
    pthread_mutex_unlock(&ctx->jit_lock);
    rt_context_log_flush(ctx, &queue);
    tc_source_free(&file);
    return st;
}
