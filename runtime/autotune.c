/*
 * autotune.c — tc_autotune and tc_autotune_lookup (include/tilec/runtime.h,
 * docs/autotune.md): time a kernel's @autotune configurations, keep the
 * fastest in the tuning table, and rank the space with the cost model
 * (tune_model.c) so that only the most promising are timed.
 *
 * The table (tune_table.c) is one per process, loaded from tuning.tsv in
 * the JIT's cache directory on first use and written back after each
 * tuning; a directory or file that is not the user's own is not used (the
 * call goes on in memory and logs why once).
 *
 * Features of the model, for a configuration and the key values: log2 of
 * each key value, then for each tuned name of the space (the constexprs in
 * the order the space first names them, then num_warps, num_stages,
 * warp_specialize and min_programs_per_sm) its value and log2 of it. Its
 * target is the log of the time over the best time measured for the same
 * key values, so that it
 * learns how configurations compare, not how long a shape takes.
 */
#include "runtime/runtime.h"
#include "runtime/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TUNE_FILE "tuning.tsv"
enum {
    TUNE_DEFAULT_REPS = 10,
    TUNE_WARMUP = 2,
    TUNE_MAX_CX = 64,
    /* the model is used once this many measurements of the kernel exist,
     * from at least two other key values */
    TUNE_MODEL_MIN_RECORDS = 16,
    TUNE_MODEL_MIN_TASKS = 2,
    TUNE_MAX_FEATURES = RT_TUNE_MAX_KEYS + 2 * (RT_TUNE_MAX_FIELDS + 3),
    TUNE_CLOSE_MAX = 4, /* configurations timed again when close to the best */
};
#define TUNE_CLOSE 0.03 /* within 3% of the best */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t table_generation; /* bumped at every change of the table */
static RtTuneTable table;  /* under table_lock */
static bool table_loaded;  /* tuning.tsv was read (or found missing, or refused) */
static bool table_on_disk; /* its directory is usable */
static char table_dir[4096];

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Loads the file once, under table_lock. */
static void load_locked(const RtLogger *log) {
    if (table_loaded)
        return;
    table_loaded = true;
    size_t base;
    if (rt_cache_dir(table_dir, sizeof table_dir, &base) != TC_OK || rt_cache_prepare(table_dir, base) != TC_OK) {
        rt_log(log, 1, "tilec: %s; the tuning table stays in memory", tc_last_error());
        return;
    }
    RtTuneTable t = {0};
    bool found = false;
    if (rt_tune_table_load_file(table_dir, TUNE_FILE, &t, &found) != TC_OK) {
        rt_log(log, 1, "tilec: %s; the tuning table stays in memory", tc_last_error());
        return;
    }
    table_on_disk = true;
    if (found && rt_tune_table_merge(&table, &t) != TC_OK)
        rt_log(log, 1, "tilec: %s", tc_last_error());
    table_generation++;
    rt_tune_table_free(&t);
}

/* ---- the request ---- */

/* The source text of req (its string, or its file read now). */
static tc_status request_source(const tc_jit_request *req, tc_source *src, bool *owned) {
    *owned = false;
    if (req->source) {
        src->name = req->path;
        src->text = req->source;
        src->len = req->source_len ? req->source_len : strlen(req->source);
        return TC_OK;
    }
    if (!req->path)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune: the request has neither source nor path");
    tc_status st = tc_source_read_file(req->path, src);
    *owned = st == TC_OK;
    return st;
}

static int cmp_cx(const void *a, const void *b) {
    return strcmp(((const tc_constexpr *)a)->name, ((const tc_constexpr *)b)->name);
}

void rt_tune_source_digest(const char *text, size_t len, uint8_t digest[32]) { rt_sha256(text, len, digest); }

void rt_tune_kernel_hash(const uint8_t source_digest[32], const char *kernel, const tc_constexpr *constexprs,
                         size_t num_constexprs, const tc_options *o, const char *arch, char hex[65]) {
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_field_str(&h, "tune", "1");
    rt_sha256_field(&h, "source", source_digest, 32);
    rt_sha256_field_str(&h, "kernel", kernel);
    rt_sha256_field_str(&h, "arch", arch);
    size_t n = num_constexprs < TUNE_MAX_CX ? num_constexprs : TUNE_MAX_CX;
    tc_constexpr cx[TUNE_MAX_CX];
    if (n)
        memcpy(cx, constexprs, n * sizeof cx[0]);
    qsort(cx, n, sizeof cx[0], cmp_cx);
    for (size_t i = 0; i < n; i++) {
        rt_sha256_field_str(&h, "cx", cx[i].name);
        rt_sha256_field_i64(&h, "kind", cx[i].kind);
        rt_sha256_field_i64(&h, "i", cx[i].kind == TC_CONSTEXPR_FLOAT ? 0 : cx[i].i);
        double f = cx[i].kind == TC_CONSTEXPR_FLOAT ? cx[i].f : 0;
        rt_sha256_field(&h, "f", &f, sizeof f);
    }
    rt_sha256_field_i64(&h, "num_warps", o ? o->num_warps : 0);
    rt_sha256_field_i64(&h, "num_stages", o ? o->num_stages : 0);
    rt_sha256_field_i64(&h, "warp_specialize", o ? o->warp_specialize : 0);
    rt_sha256_field_i64(&h, "persistent", o ? o->persistent : 0);
    rt_sha256_field_i64(&h, "llvm_o3", o ? o->llvm_o3 : 0);
    if (o && o->min_programs_per_sm) /* absent from the identities of the tables made before it */
        rt_sha256_field_i64(&h, "min_programs_per_sm", o->min_programs_per_sm);
    uint8_t d[32];
    rt_sha256_final(&h, d);
    rt_hex(d, 32, hex);
    hex[64] = 0;
}

/* Configuration c as the table's fields. */
static void config_fields(const tc_tune_config *c, RtTuneEntry *e) {
    e->num_fields = 0;
    for (size_t i = 0; i < c->num_constexprs && e->num_fields < RT_TUNE_MAX_FIELDS; i++) {
        RtTuneField *f = &e->fields[e->num_fields++];
        snprintf(f->name, sizeof f->name, "%s", c->constexprs[i].name);
        f->value = c->constexprs[i].i;
        f->is_bool = false;
    }
    if (c->num_warps > 0 && e->num_fields < RT_TUNE_MAX_FIELDS)
        e->fields[e->num_fields++] = (RtTuneField){"num_warps", c->num_warps, false};
    if (c->num_stages > 0 && e->num_fields < RT_TUNE_MAX_FIELDS)
        e->fields[e->num_fields++] = (RtTuneField){"num_stages", c->num_stages, false};
    if (c->warp_specialize >= 0 && e->num_fields < RT_TUNE_MAX_FIELDS)
        e->fields[e->num_fields++] = (RtTuneField){"warp_specialize", c->warp_specialize, false};
    if (c->min_programs_per_sm > 0 && e->num_fields < RT_TUNE_MAX_FIELDS)
        e->fields[e->num_fields++] = (RtTuneField){"min_programs_per_sm", c->min_programs_per_sm, false};
}

static bool same_fields(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->num_fields != b->num_fields)
        return false;
    for (size_t i = 0; i < a->num_fields; i++) {
        size_t j = 0;
        while (j < b->num_fields && strcmp(a->fields[i].name, b->fields[j].name) != 0)
            j++;
        if (j == b->num_fields || a->fields[i].value != b->fields[j].value)
            return false;
    }
    return true;
}

/* Everything one call works with. */
typedef struct Tuning {
    CUdeviceptr flush;   /* written before each timed launch (0: none) */
    size_t flush_bytes;
    tc_context *ctx;
    const tc_jit_request *req;
    const tc_tune_space *space;
    const char *arch;
    RtTuneEntry key; /* gpu, build, hash, kernel, bucketed keys */
    RtLogger log;
} Tuning;

/* Reads the key values from the request's args, typed as the space says. */
static tc_status key_values(Tuning *t) {
    const tc_tune_space *s = t->space;
    size_t nk = tc_tune_space_num_keys(s);
    if (nk > RT_TUNE_MAX_KEYS)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune: more than %d keys", RT_TUNE_MAX_KEYS);
    t->key.num_keys = nk;
    for (size_t i = 0; i < nk; i++) {
        size_t p = tc_tune_space_key_param(s, i);
        if (!t->req->args || p >= t->req->num_args || !t->req->args[p])
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "tc_autotune: the request needs the launch's args: key %s is runtime parameter %zu",
                           tc_tune_space_key(s, i), p);
        const void *a = t->req->args[p];
        tc_dtype d = tc_tune_space_key_dtype(s, i);
        int64_t v = d == TC_DTYPE_I64   ? *(const int64_t *)a
                    : d == TC_DTYPE_I32 ? *(const int32_t *)a
                    : d == TC_DTYPE_I16 ? *(const int16_t *)a
                                        : *(const int8_t *)a;
        t->key.keys[i] = rt_tune_bucket(v);
    }
    return TC_OK;
}

static tc_status tuning_init(Tuning *t, tc_context *ctx, const tc_jit_request *req, size_t num_derived,
                             const tc_tune_space *space, const char *fn) {
    memset(t, 0, sizeof *t);
    if (!ctx || !req || !space)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                       !ctx ? "ctx" : !req ? "the request" : "the space");
    if (!req->kernel)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: the request names no kernel", fn);
    if (tc_tune_space_num_configs(space) == 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: the space has no configuration (no @autotune on %.200s?)", fn,
                       req->kernel);
    if (req->num_constexprs > TUNE_MAX_CX)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: more than %d constexprs", fn, TUNE_MAX_CX);
    if (num_derived > req->num_constexprs)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: num_derived (%zu) is more than the request's %zu constexprs", fn,
                       num_derived, req->num_constexprs);
    t->ctx = ctx;
    t->req = req;
    t->space = space;
    t->arch = req->arch ? req->arch : tc_context_arch(ctx);
    t->log.fn = NULL;
    tc_source src = {0};
    bool owned = false;
    tc_status st = request_source(req, &src, &owned);
    if (st != TC_OK)
        return st;
    t->key.kind = RT_TUNE_BEST;
    snprintf(t->key.gpu, sizeof t->key.gpu, "%s", tc_context_device_name(ctx));
    snprintf(t->key.build, sizeof t->key.build, "%s", rt_build_id()[0] ? rt_build_id() : "0");
    snprintf(t->key.kernel, sizeof t->key.kernel, "%s", req->kernel);
    uint8_t digest[32];
    rt_tune_source_digest(src.text, src.len, digest);
    rt_tune_kernel_hash(digest, req->kernel, req->constexprs, req->num_constexprs - num_derived, req->options, t->arch,
                        t->key.hash);
    if (owned)
        tc_source_free(&src);
    return key_values(t);
}

/* The index of the space's configuration that entry e names, or SIZE_MAX. */
static size_t config_of(const tc_tune_space *s, const RtTuneEntry *e) {
    size_t n = tc_tune_space_num_configs(s);
    for (size_t i = 0; i < n; i++) {
        tc_tune_config c;
        tc_tune_space_config(s, i, &c);
        RtTuneEntry x;
        config_fields(&c, &x);
        if (same_fields(&x, e))
            return i;
    }
    return SIZE_MAX;
}

/* The table's best entry for this tuning (a copy in *out). */
static bool lookup(Tuning *t, bool disk, RtTuneEntry *out) {
    pthread_mutex_lock(&table_lock);
    if (disk)
        load_locked(&t->log);
    const RtTuneEntry *e = rt_tune_table_find(&table, t->key.gpu, t->key.build, t->key.hash, t->key.keys,
                                              t->key.num_keys);
    if (e)
        *out = *e;
    pthread_mutex_unlock(&table_lock);
    return e != NULL;
}

tc_status tc_autotune_lookup(tc_context *ctx, const tc_jit_request *req, const tc_tune_space *space, int *found,
                             size_t *config) {
    if (found)
        *found = 0;
    if (!found || !config)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune_lookup: %s is NULL", !found ? "found" : "config");
    Tuning t;
    tc_status st = tuning_init(&t, ctx, req, 0, space, "tc_autotune_lookup");
    if (st != TC_OK)
        return st;
    RtTuneEntry e;
    if (lookup(&t, !req->no_disk_cache, &e)) {
        size_t i = config_of(space, &e);
        if (i != SIZE_MAX) {
            *found = 1;
            *config = i;
        }
    }
    return TC_OK;
}

uint64_t rt_tune_generation(void) { return table_generation; }

bool rt_tune_find(tc_context *ctx, const char *hash, const int64_t *keys, size_t num_keys, const RtTuneTable *shipped,
                  RtTuneEntry *out) {
    int64_t b[RT_TUNE_MAX_KEYS];
    if (num_keys > RT_TUNE_MAX_KEYS)
        return false;
    for (size_t i = 0; i < num_keys; i++)
        b[i] = rt_tune_bucket(keys[i]);
    const char *build = rt_build_id()[0] ? rt_build_id() : "0";
    pthread_mutex_lock(&table_lock);
    if (!ctx->host) {
        RtLogger log = {0};
        load_locked(&log);
    }
    const RtTuneEntry *e = rt_tune_table_find(&table, ctx->name, build, hash, b, num_keys);
    if (!e && shipped)
        e = rt_tune_table_find(shipped, ctx->name, build, hash, b, num_keys);
    if (e)
        *out = *e;
    pthread_mutex_unlock(&table_lock);
    return e != NULL;
}

/* ---- features and the model ---- */

typedef struct Features {
    const char *names[RT_TUNE_MAX_FIELDS]; /* the space's tuned names, in order */
    size_t num_names;
    size_t num_keys;
    size_t d; /* features per sample */
} Features;

static void features_init(Features *f, const tc_tune_space *s, size_t num_keys) {
    memset(f, 0, sizeof *f);
    f->num_keys = num_keys;
    size_t n = tc_tune_space_num_configs(s);
    for (size_t i = 0; i < n; i++) {
        tc_tune_config c;
        tc_tune_space_config(s, i, &c);
        RtTuneEntry x;
        config_fields(&c, &x);
        for (size_t j = 0; j < x.num_fields; j++) {
            size_t k = 0;
            while (k < f->num_names && strcmp(f->names[k], x.fields[j].name) != 0)
                k++;
            if (k == f->num_names && f->num_names < RT_TUNE_MAX_FIELDS) {
                /* the names live in the space, or among the options' names:
                 * find the same string there */
                static const char *const options[] = {"num_warps", "num_stages", "warp_specialize",
                                                      "min_programs_per_sm"};
                const char *nm = NULL;
                for (size_t q = 0; q < c.num_constexprs && !nm; q++)
                    if (strcmp(c.constexprs[q].name, x.fields[j].name) == 0)
                        nm = c.constexprs[q].name;
                for (size_t q = 0; q < sizeof options / sizeof options[0] && !nm; q++)
                    if (strcmp(options[q], x.fields[j].name) == 0)
                        nm = options[q];
                f->names[f->num_names++] = nm;
            }
        }
    }
    f->d = num_keys + 2 * f->num_names;
}

static double lg(double v) { return v > 0 ? log2(v) : -1; }

static void featurize(const Features *f, const int64_t *keys, const RtTuneEntry *cfg, double *out) {
    size_t k = 0;
    for (size_t i = 0; i < f->num_keys; i++)
        out[k++] = lg((double)keys[i]);
    for (size_t i = 0; i < f->num_names; i++) {
        double v = 0;
        bool set = false;
        for (size_t j = 0; j < cfg->num_fields; j++)
            if (strcmp(cfg->fields[j].name, f->names[i]) == 0) {
                v = (double)cfg->fields[j].value;
                set = true;
            }
        out[k++] = set ? v : -1;
        out[k++] = set ? lg(v) : -2;
    }
}

static bool same_keys(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->num_keys != b->num_keys)
        return false;
    for (size_t i = 0; i < a->num_keys; i++)
        if (a->keys[i] != b->keys[i])
            return false;
    return true;
}

/* Fits the model to the table's measurements of this kernel (same gpu and
 * hash, other key values); NULL when there are too few. */
static RtGbt *fit_model(Tuning *t, const Features *f) {
    pthread_mutex_lock(&table_lock);
    size_t n = 0, tasks = 0;
    const RtTuneEntry **rows = malloc((table.count ? table.count : 1) * sizeof *rows);
    const RtTuneEntry **task_of = malloc((table.count ? table.count : 1) * sizeof *task_of);
    double *best = malloc((table.count ? table.count : 1) * sizeof *best);
    if (!rows || !task_of || !best) {
        pthread_mutex_unlock(&table_lock);
        free(rows);
        free(task_of);
        free(best);
        return NULL;
    }
    size_t *row_task = malloc((table.count ? table.count : 1) * sizeof *row_task);
    for (size_t i = 0; row_task && i < table.count; i++) {
        const RtTuneEntry *e = &table.entries[i];
        if (e->kind != RT_TUNE_TIME || strcmp(e->gpu, t->key.gpu) != 0 || strcmp(e->hash, t->key.hash) != 0 ||
            same_keys(e, &t->key) || e->num_keys != t->key.num_keys)
            continue;
        size_t k = 0;
        while (k < tasks && !same_keys(task_of[k], e))
            k++;
        if (k == tasks) {
            task_of[tasks] = e;
            best[tasks++] = e->ms;
        } else if (e->ms < best[k]) {
            best[k] = e->ms;
        }
        row_task[n] = k;
        rows[n++] = e;
    }
    RtGbt *m = NULL;
    if (row_task && n >= TUNE_MODEL_MIN_RECORDS && tasks >= TUNE_MODEL_MIN_TASKS) {
        double *x = malloc(n * f->d * sizeof *x), *y = malloc(n * sizeof *y);
        if (x && y) {
            for (size_t i = 0; i < n; i++) {
                featurize(f, rows[i]->keys, rows[i], x + i * f->d);
                y[i] = log(rows[i]->ms / best[row_task[i]]);
            }
            if (rt_gbt_train(x, y, n, f->d, NULL, &m) != TC_OK)
                m = NULL;
        }
        free(x);
        free(y);
    }
    pthread_mutex_unlock(&table_lock);
    free(rows);
    free(task_of);
    free(best);
    free(row_task);
    return m;
}

typedef struct Ranked {
    size_t config;
    double score;
} Ranked;

static int cmp_ranked(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return x->config < y->config ? -1 : x->config > y->config;
}

/* ---- timing ---- */

/* The request for configuration c: the fixed constexprs, then c's, and
 * its options. */
typedef struct ConfigRequest {
    tc_jit_request req;
    tc_options opt;
    tc_constexpr cx[2 * TUNE_MAX_CX];
    size_t num_cx;
} ConfigRequest;

static void config_request(const tc_jit_request *base, const tc_tune_config *c, ConfigRequest *r) {
    r->req = *base;
    if (base->options)
        r->opt = *base->options;
    else
        tc_options_init(&r->opt);
    if (c->num_warps > 0)
        r->opt.num_warps = c->num_warps;
    if (c->num_stages > 0)
        r->opt.num_stages = c->num_stages;
    if (c->warp_specialize >= 0)
        r->opt.warp_specialize = c->warp_specialize;
    if (c->min_programs_per_sm > 0)
        r->opt.min_programs_per_sm = c->min_programs_per_sm;
    r->num_cx = 0;
    for (size_t i = 0; i < base->num_constexprs && r->num_cx < 2 * TUNE_MAX_CX; i++) {
        bool tuned = false;
        for (size_t j = 0; j < c->num_constexprs; j++)
            tuned |= strcmp(c->constexprs[j].name, base->constexprs[i].name) == 0;
        if (!tuned)
            r->cx[r->num_cx++] = base->constexprs[i];
    }
    for (size_t j = 0; j < c->num_constexprs && r->num_cx < 2 * TUNE_MAX_CX; j++)
        r->cx[r->num_cx++] = c->constexprs[j];
    r->req.constexprs = r->cx;
    r->req.num_constexprs = r->num_cx;
    r->req.options = &r->opt;
}

/* The kernel of configuration i, compiled. */
static tc_status jit_config(tc_context *ctx, const tc_jit_request *base, const tc_tune_space *space, size_t i,
                            tc_kernel **kernel) {
    tc_tune_config c;
    tc_tune_space_config(space, i, &c);
    ConfigRequest r;
    config_request(base, &c, &r);
    return tc_jit(ctx, &r.req, kernel);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Compiles and times configuration i: *ms its median (INFINITY when it does
 * not compile, load or launch: *skipped). A failing launch that is a fault
 * of the context (anything but a refusal before the launch) is returned. */
static tc_status time_config(Tuning *t, CUstream stream, const tc_autotune_request *ar, size_t i, double cutoff_ms,
                             double *ms, bool *skipped, tc_kernel **kernel) {
    *ms = INFINITY;
    *skipped = true;
    tc_tune_config c;
    tc_tune_space_config(t->space, i, &c);
    ConfigRequest r;
    config_request(ar->jit, &c, &r);
    char text[512];
    tc_tune_config_format(&c, text, sizeof text);
    tc_kernel *k = NULL;
    tc_status st = tc_jit(t->ctx, &r.req, &k);
    if (st != TC_OK) {
        rt_log(&t->log, 1, "tilec: tune %s: %s skipped: %s", t->key.kernel, text, tc_last_error());
        return st == TC_ERROR_OUT_OF_MEMORY ? st : TC_OK;
    }
    tc_dim3 grid = ar->grid(ar->grid_user, r.cx, r.num_cx);
    if ((uint64_t)grid.x * grid.y * grid.z == 0) {
        rt_log(&t->log, 1, "tilec: tune %s: %s skipped: its grid is empty", t->key.kernel, text);
        return TC_OK;
    }
    int reps = ar->reps > 0 ? ar->reps : TUNE_DEFAULT_REPS;
    float times[256];
    if (reps > 256)
        reps = 256;
    tc_timer *tm = NULL;
    if ((st = tc_timer_create(t->ctx, &tm)) != TC_OK)
        return st;
    int done = 0;
    for (int rep = -TUNE_WARMUP; rep < reps; rep++) {
        if (ar->reset)
            ar->reset(ar->reset_user, stream);
        if (rep >= 0 && t->flush &&
            ((st = tc_memset_d8(t->ctx, t->flush, (unsigned char)rep, t->flush_bytes)) != TC_OK ||
             (st = tc_stream_synchronize(t->ctx, stream)) != TC_OK))
            break;
        if (rep >= 0 && (st = tc_timer_start(tm, stream)) != TC_OK)
            break;
        st = tc_launch(k, grid, stream, ar->jit->args, ar->jit->num_args);
        if (st != TC_OK)
            break;
        if (rep >= 0) {
            if ((st = tc_timer_stop(tm, stream)) != TC_OK || (st = tc_timer_elapsed_ms(tm, &times[done])) != TC_OK)
                break;
            done++;
            /* far slower than the best so far: three runs tell */
            if (done == 3 && cutoff_ms > 0 && times[0] > 4 * cutoff_ms && times[1] > 4 * cutoff_ms &&
                times[2] > 4 * cutoff_ms)
                break;
        } else if ((st = tc_stream_synchronize(t->ctx, stream)) != TC_OK) {
            break;
        }
    }
    tc_timer_destroy(tm);
    if (st == TC_ERROR_INVALID_ARGUMENT || st == TC_ERROR_UNSUPPORTED) {
        /* refused before the launch (its grid, its tensor maps): skip it */
        rt_log(&t->log, 1, "tilec: tune %s: %s skipped: %s", t->key.kernel, text, tc_last_error());
        return TC_OK;
    }
    if (st != TC_OK)
        return st;
    qsort(times, (size_t)done, sizeof times[0], cmp_float);
    *ms = done ? times[done / 2] : INFINITY;
    *skipped = done == 0;
    if (kernel)
        *kernel = k;
    return TC_OK;
}

/* Records a measurement (kind time) or the choice (kind best). */
static void record(Tuning *t, RtTuneKind kind, size_t config, double ms) {
    RtTuneEntry e = t->key;
    e.kind = kind;
    e.ms = ms;
    tc_tune_config c;
    tc_tune_space_config(t->space, config, &c);
    config_fields(&c, &e);
    pthread_mutex_lock(&table_lock);
    rt_tune_table_put(&table, &e);
    table_generation++;
    pthread_mutex_unlock(&table_lock);
}

static void store(Tuning *t) {
    pthread_mutex_lock(&table_lock);
    if (table_on_disk && rt_tune_table_store_file(table_dir, TUNE_FILE, &table) != TC_OK)
        rt_log(&t->log, 1, "tilec: %s; the tuning table stays in memory", tc_last_error());
    pthread_mutex_unlock(&table_lock);
}

tc_status tc_autotune(tc_context *ctx, CUstream stream, const tc_autotune_request *ar, const tc_tune_space *space,
                      tc_autotune_result *out, tc_kernel **kernel) {
    double t0 = now_ms();
    if (out)
        memset(out, 0, sizeof *out);
    if (kernel)
        *kernel = NULL;
    if (!ar || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune: %s is NULL", !ar ? "the request" : "out");
    if (!ar->jit || !ar->grid)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune: req->%s is NULL", !ar->jit ? "jit" : "grid");
    if (ar->top_k < 0 || ar->reps < 0)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_autotune: req->%s is negative", ar->top_k < 0 ? "top_k" : "reps");
    Tuning t;
    tc_status st = tuning_init(&t, ctx, ar->jit, ar->num_derived, space, "tc_autotune");
    if (st != TC_OK)
        return st;
    bool disk = !ar->no_disk && !ctx->host;
    size_t n = tc_tune_space_num_configs(space);
    for (size_t i = 0; ar->config_ms && i < n; i++)
        ar->config_ms[i] = INFINITY;
    RtTuneEntry hit;
    if (!ar->force && lookup(&t, disk, &hit)) {
        size_t i = config_of(space, &hit);
        if (i != SIZE_MAX) {
            if (kernel && (st = jit_config(ctx, ar->jit, space, i, kernel)) != TC_OK)
                return st;
            out->config = i;
            out->ms = hit.ms;
            out->from_table = 1;
            out->tuning_ms = now_ms() - t0;
            return TC_OK;
        }
    }
    if (disk) {
        pthread_mutex_lock(&table_lock);
        load_locked(&t.log);
        pthread_mutex_unlock(&table_lock);
    }
    /* the order to time them in: the model's ranking, or the space's */
    Ranked *order = malloc(n * sizeof *order);
    if (!order)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = (Ranked){i, 0};
    size_t to_time = n;
    if (ar->top_k > 0 && (size_t)ar->top_k < n) {
        Features f;
        features_init(&f, space, t.key.num_keys);
        RtGbt *m = fit_model(&t, &f);
        if (m) {
            double x[TUNE_MAX_FEATURES];
            for (size_t i = 0; i < n; i++) {
                tc_tune_config c;
                tc_tune_space_config(space, i, &c);
                RtTuneEntry e;
                config_fields(&c, &e);
                featurize(&f, t.key.keys, &e, x);
                order[i].score = rt_gbt_predict(m, x);
            }
            rt_gbt_free(m);
            qsort(order, n, sizeof *order, cmp_ranked);
            to_time = (size_t)ar->top_k;
            out->used_model = 1;
        }
    }
    double best = INFINITY;
    size_t best_i = SIZE_MAX;
    /* a cold L2 cache for every timed launch: twice its size written first */
    int l2 = 0;
    if (!ar->warm_l2 && !ctx->host &&
        rt_cu.cuDeviceGetAttribute(&l2, RT_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, ctx->device) == RT_CUDA_SUCCESS &&
        l2 > 0) {
        t.flush_bytes = 2 * (size_t)l2;
        if (tc_mem_alloc(ctx, t.flush_bytes, &t.flush) != TC_OK)
            t.flush = 0; /* without it the launches find a warm cache: still a valid comparison */
    }
    /* with the model: down its ranking until top_k have run (a
     * configuration that does not compile or load counts for nothing) */
    Ranked *ran = malloc(n * sizeof *ran); /* what ran, and its time */
    if (!ran) {
        free(order);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    size_t num_ran = 0;
    for (size_t r = 0; r < n && out->timed < to_time; r++) {
        double ms;
        bool skipped;
        st = time_config(&t, stream, ar, order[r].config, best, &ms, &skipped, NULL);
        if (st != TC_OK) {
            free(order);
            free(ran);
            if (t.flush)
                tc_mem_free(ctx, t.flush);
            return st;
        }
        if (skipped) {
            out->failed++;
            continue;
        }
        out->timed++;
        ran[num_ran++] = (Ranked){order[r].config, ms};
        if (ms < best) {
            best = ms;
            best_i = order[r].config;
        }
    }
    free(order);
    /* The close finish: the GPU's clock drifts with its temperature while
     * the configurations are timed one after another, so those within
     * TUNE_CLOSE of the best are timed again, in turn, and each keeps the
     * mean of its two medians. The best is then the lowest score of all
     * (a slow second timing can leave one timed once below the others). */
    qsort(ran, num_ran, sizeof *ran, cmp_ranked);
    size_t close = 0;
    while (close < num_ran && close < TUNE_CLOSE_MAX && ran[close].score <= best * (1 + TUNE_CLOSE))
        close++;
    if (close > 1) {
        for (size_t i = 0; i < close; i++) {
            double ms;
            bool skipped;
            if ((st = time_config(&t, stream, ar, ran[i].config, 0, &ms, &skipped, NULL)) != TC_OK) {
                free(ran);
                if (t.flush)
                    tc_mem_free(ctx, t.flush);
                return st;
            }
            if (!skipped)
                ran[i].score = (ran[i].score + ms) / 2;
        }
        best = INFINITY;
        for (size_t i = 0; i < num_ran; i++)
            if (ran[i].score < best || (ran[i].score == best && ran[i].config < best_i)) {
                best = ran[i].score;
                best_i = ran[i].config;
            }
    }
    for (size_t i = 0; i < num_ran; i++) {
        if (ar->config_ms)
            ar->config_ms[ran[i].config] = ran[i].score;
        if (!ar->dry_run)
            record(&t, RT_TUNE_TIME, ran[i].config, ran[i].score);
    }
    free(ran);
    if (t.flush)
        tc_mem_free(ctx, t.flush);
    if (best_i == SIZE_MAX)
        return rt_fail(TC_ERROR_UNSUPPORTED, "tc_autotune: none of the %zu configurations of %.200s compiled and ran",
                       n, t.key.kernel);
    if (!ar->dry_run) {
        record(&t, RT_TUNE_BEST, best_i, best);
        if (disk)
            store(&t);
    }
    if (kernel && (st = jit_config(ctx, ar->jit, space, best_i, kernel)) != TC_OK)
        return st;
    out->config = best_i;
    out->ms = best;
    out->tuning_ms = now_ms() - t0;
    return TC_OK;
}
