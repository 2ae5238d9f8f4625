/*
 * tune.c — tunes the standard library's matmul and attention forward on the
 * GPU (tc_autotune over the kernels' @autotune spaces), measures the cost
 * model, and writes the tuned configurations as the library's table.
 *
 *     tune [--family matmul|attention] [--dtype f16|bf16] [--dim D] [--top-k K] [--quick] [--library]
 *
 * (--dim: attention at that head dim only; --library: only step 3)
 *
 * For each task (a kernel specialization, as the library makes it, and a
 * shape):
 *   1. exhaustive: every configuration of the space, timed in a fresh
 *      context with the JIT's disk cache off, so that the tuning time counts
 *      every compile (the "tuning s" column);
 *   2. the cost model: in another fresh context, tc_autotune with top_k K
 *      (default 8), whose model is fitted to the measurements of the other
 *      tasks of the same kernel specialization (other shapes): the
 *      configuration it picks, its time in step 1 as a share of step 1's best
 *      ("model pick"), and its tuning time;
 *   3. the library call itself (tc_matmul, tc_attention_fwd) before and
 *      after: with TILEC_TUNED=0 the family's own plan; run this program
 *      twice (tests/gpu/run.sh does) to see both.
 *
 * The tuned choices go to the user's table (tuning.tsv in $TILEC_CACHE_DIR),
 * which the library then uses; its best lines, with the build column made
 * *, are lib/tuning.tsv (bench/RESULTS.md, "Autotuning", has the command).
 * Inputs are standard normal values (never zeros); each configuration's
 * median of 10 timed launches, each from a cold L2 cache, counts, and those
 * within 3% of the best are timed again (tc_autotune's close finish). Exit 77 without a GPU.
 */
#include <tilec/runtime.h>
#include <tilec/stdlib.h>

#include "f16.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CONFIGS 4096

typedef struct Task {
    const char *family; /* "matmul", "attention" */
    tc_dtype dtype;
    int64_t m, n, k;            /* matmul */
    int64_t b, h, s, d, causal; /* attention */
} Task;

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double uniform01(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* A standard normal value (Box-Muller), as the Python benchmarks draw
 * theirs (torch.randn): the tensor cores' power, and so the clock, depends
 * on the data. */
static uint16_t rand_half(tc_dtype t) {
    float f = (float)(sqrt(-2 * log(uniform01())) * cos(6.283185307179586 * uniform01()));
    return t == TC_DTYPE_BF16 ? f32_to_bf16(f) : f32_to_f16(f);
}

static int fill(tc_context *ctx, CUdeviceptr p, size_t elems, tc_dtype t) {
    uint16_t *h = malloc(elems * 2);
    if (!h)
        return -1;
    for (size_t i = 0; i < elems; i++)
        h[i] = rand_half(t);
    int rc = tc_memcpy_htod(ctx, p, h, elems * 2) == TC_OK ? 0 : -1;
    free(h);
    return rc;
}

/* ---- the kernels' requests, as the library makes them ---- */

typedef struct Req {
    tc_jit_request jit;
    tc_constexpr cx[24];
    size_t num_cx;
    void *args[32];
    CUdeviceptr ptrs[8];
    int64_t i64s[16];
    int32_t i32s[8];
    float f32s[2];
    size_t num_args;
    const char *src;
    size_t src_len;
    int64_t grid_y;
} Req;

static void cx_add(Req *r, const char *name, tc_constexpr_kind kind, int64_t v) {
    r->cx[r->num_cx++] = (tc_constexpr){name, kind, v, 0};
}

/* the identity constexprs of a plan: all but the tuned ones and skip[] */
static void cx_from_plan(Req *r, const tc_constexpr *cx, size_t n, const char *const *skip) {
    for (size_t i = 0; i < n; i++) {
        bool s = false;
        for (const char *const *q = skip; *q; q++)
            s |= strcmp(*q, cx[i].name) == 0;
        if (!s)
            r->cx[r->num_cx++] = cx[i];
    }
}

static tc_dim3 matmul_grid(void *user, const tc_constexpr *cx, size_t n) {
    const Task *t = user;
    int64_t bm = 128, bn = 128;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cx[i].name, "BM") == 0)
            bm = cx[i].i;
        if (strcmp(cx[i].name, "BN") == 0)
            bn = cx[i].i;
    }
    return (tc_dim3){(unsigned)(((t->m + bm - 1) / bm) * ((t->n + bn - 1) / bn)), 1, 1};
}

static tc_dim3 attention_grid(void *user, const tc_constexpr *cx, size_t n) {
    const Task *t = user;
    int64_t bm = 128;
    for (size_t i = 0; i < n; i++)
        if (strcmp(cx[i].name, "BM") == 0)
            bm = cx[i].i;
    return (tc_dim3){(unsigned)((t->s + bm - 1) / bm), (unsigned)(t->b * t->h), 1};
}

/* Allocates the task's tensors and builds its request; -1 on failure. */
static int make_request(tc_context *ctx, const Task *t, Req *r) {
    memset(r, 0, sizeof *r);
    tc_jit_request_init(&r->jit);
    r->jit.no_disk_cache = 1;
    size_t na = 0;
    if (strcmp(t->family, "matmul") == 0) {
        tc_matmul_plan p;
        if (tc_matmul_plan_for(t->dtype, t->m, t->n, t->k, t->k, 1, t->n, 1, t->n, 1, 0, TC_ACTIVATION_NONE, &p) !=
            TC_OK)
            return -1;
        static const char *const skip[] = {"BM", "BN", "BK", "EVEN_K", NULL};
        cx_from_plan(r, p.constexprs, p.num_constexprs, skip);
        cx_add(r, "EVEN_K", TC_CONSTEXPR_BOOL, 1); /* K is a multiple of every BK of the space */
        if (tc_stdlib_source("matmul.tile", &r->src, &r->src_len) != TC_OK)
            return -1;
        r->jit.kernel = "matmul";
        size_t sizes[3] = {(size_t)(t->m * t->n), (size_t)(t->m * t->k), (size_t)(t->k * t->n)};
        for (int i = 0; i < 3; i++)
            if (tc_mem_alloc(ctx, sizes[i] * 2, &r->ptrs[i]) != TC_OK || fill(ctx, r->ptrs[i], sizes[i], t->dtype))
                return -1;
        r->ptrs[3] = r->ptrs[0]; /* bias: never read */
        for (int i = 0; i < 4; i++)
            r->args[na++] = &r->ptrs[i];
        r->i32s[0] = (int32_t)t->m, r->i32s[1] = (int32_t)t->n, r->i32s[2] = (int32_t)t->k;
        for (int i = 0; i < 3; i++)
            r->args[na++] = &r->i32s[i];
        int64_t strides[6] = {t->k, 1, t->n, 1, t->n, 1};
        for (int i = 0; i < 6; i++) {
            r->i64s[i] = strides[i];
            r->args[na++] = &r->i64s[i];
        }
    } else {
        tc_attention_plan p;
        if (tc_attention_plan_for(t->dtype, t->b, t->h, t->h, t->s, t->s, t->d, (int)t->causal, 0, &p) != TC_OK)
            return -1;
        static const char *const skip[] = {"BM", "BN", "EVEN_N", NULL};
        cx_from_plan(r, p.constexprs, p.num_constexprs, skip);
        /* EVEN_N as the library sets it: the lengths are multiples of every BN */
        bool even_n = t->causal || p.block_d <= 64 || (p.block_d <= 128 && t->s <= 2048);
        cx_add(r, "EVEN_N", TC_CONSTEXPR_BOOL, even_n);
        if (tc_stdlib_source("attention.tile", &r->src, &r->src_len) != TC_OK)
            return -1;
        r->jit.kernel = "attention_fwd";
        size_t elems = (size_t)(t->b * t->h * t->s * t->d);
        for (int i = 0; i < 4; i++) /* O, Q, K, V */
            if (tc_mem_alloc(ctx, elems * 2, &r->ptrs[i]) != TC_OK || fill(ctx, r->ptrs[i], elems, t->dtype))
                return -1;
        if (tc_mem_alloc(ctx, (size_t)(t->b * t->h * t->s) * 4, &r->ptrs[4]) != TC_OK)
            return -1;
        CUdeviceptr *o = &r->ptrs[0], *lse = &r->ptrs[4];
        r->args[na++] = o;
        r->args[na++] = lse;
        for (int i = 1; i < 4; i++)
            r->args[na++] = &r->ptrs[i];
        r->args[na++] = lse; /* cu_seqlens: never read */
        r->args[na++] = lse;
        /* heads, kv_group, seqlen_q, seqlen_k, and head_group 1: each configuration timed in the grid's own
         * order (tc_attention_fwd orders causal programs by groups of heads at launch) */
        r->i32s[0] = (int32_t)t->h, r->i32s[1] = 1, r->i32s[2] = (int32_t)t->s, r->i32s[3] = (int32_t)t->s;
        r->i32s[4] = 1;
        for (int i = 0; i < 5; i++)
            r->args[na++] = &r->i32s[i];
        for (int i = 0; i < 4; i++) { /* [b, h, s, d] strides of q, k, v, o */
            r->i64s[3 * i + 0] = t->h * t->s * t->d;
            r->i64s[3 * i + 1] = t->s * t->d;
            r->i64s[3 * i + 2] = t->d;
            for (int j = 0; j < 3; j++)
                r->args[na++] = &r->i64s[3 * i + j];
        }
        r->f32s[0] = 1.0f / sqrtf((float)t->d);
        r->args[na++] = &r->f32s[0];
    }
    r->num_args = na;
    r->jit.source = r->src;
    r->jit.source_len = r->src_len;
    r->jit.path = strcmp(t->family, "matmul") == 0 ? "matmul.tile" : "attention.tile";
    r->jit.constexprs = r->cx;
    r->jit.num_constexprs = r->num_cx;
    r->jit.args = r->args;
    r->jit.num_args = na;
    return 0;
}

static void free_request(tc_context *ctx, Req *r) {
    for (int i = 0; i < 8; i++)
        if (r->ptrs[i] && (i != 3 || r->ptrs[3] != r->ptrs[0]))
            tc_mem_free(ctx, r->ptrs[i]);
}

static double flops(const Task *t) {
    if (strcmp(t->family, "matmul") == 0)
        return 2.0 * (double)t->m * (double)t->n * (double)t->k;
    double f = 4.0 * (double)t->b * (double)t->h * (double)t->s * (double)t->s * (double)t->d;
    return t->causal ? f / 2 : f;
}

static void describe(const Task *t, char *out, size_t cap) {
    const char *dt = t->dtype == TC_DTYPE_BF16 ? "bf16" : "f16";
    if (strcmp(t->family, "matmul") == 0)
        snprintf(out, cap, "matmul %s %lldx%lldx%lld", dt, (long long)t->m, (long long)t->n, (long long)t->k);
    else
        snprintf(out, cap, "attention %s B%lld H%lld N%lld D%lld%s", dt, (long long)t->b, (long long)t->h,
                 (long long)t->s, (long long)t->d, t->causal ? " causal" : "");
}

/* The library call's median time over 10 runs after 2 warm-ups. */
static double library_ms(tc_context *ctx, const Task *t, Req *r) {
    tc_timer *tm;
    if (tc_timer_create(ctx, &tm) != TC_OK)
        return NAN;
    float times[10];
    int done = 0;
    for (int rep = -2; rep < 10; rep++) {
        tc_timer_start(tm, NULL);
        tc_status st;
        if (strcmp(t->family, "matmul") == 0)
            st = tc_matmul(ctx, NULL, t->dtype, r->ptrs[0], r->ptrs[1], r->ptrs[2], 0, t->m, t->n, t->k, t->k, 1, t->n,
                           1, t->n, 1, TC_ACTIVATION_NONE);
        else
            st = tc_attention_fwd(ctx, NULL, t->dtype, r->ptrs[0], r->ptrs[4], r->ptrs[1], r->ptrs[2], r->ptrs[3],
                                  t->b, t->h, t->h, t->s, t->s, t->d, t->h * t->s * t->d, t->s * t->d, t->d,
                                  t->h * t->s * t->d, t->s * t->d, t->d, t->h * t->s * t->d, t->s * t->d, t->d,
                                  t->h * t->s * t->d, t->s * t->d, t->d, 0, 0, 1.0f / sqrtf((float)t->d),
                                  (int)t->causal);
        tc_timer_stop(tm, NULL);
        if (st != TC_OK) {
            fprintf(stderr, "tune: library call: %s\n", tc_last_error());
            tc_timer_destroy(tm);
            return NAN;
        }
        if (rep >= 0)
            tc_timer_elapsed_ms(tm, &times[done++]);
        else
            tc_stream_synchronize(ctx, NULL);
    }
    tc_timer_destroy(tm);
    for (int i = 1; i < done; i++)
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            float x = times[j];
            times[j] = times[j - 1];
            times[j - 1] = x;
        }
    return times[done / 2];
}

typedef struct Outcome {
    double *ms; /* the exhaustive run's time of each configuration */
    double best_ms, tune_s, model_pick_ms, model_s, model_ratio, lib_ms;
    size_t configs, timed, failed, model_timed;
    int used_model;
    char best[256], pick[256];
} Outcome;

static int run_task(const Task *t, int top_k, int mode, Outcome *o) {
    tc_context *ctx;
    if (tc_context_create(0, &ctx) != TC_OK)
        return -1;
    Req r;
    int rc = -1;
    tc_tune_space *space = NULL;
    static double mms[MAX_CONFIGS];
    if (make_request(ctx, t, &r) != 0) {
        fprintf(stderr, "tune: %s\n", tc_last_error());
        goto out;
    }
    tc_source src = {r.jit.path, r.src, r.src_len};
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    tc_status st = tc_tune_space_create(&src, r.jit.kernel, r.cx, r.num_cx, &space, diags);
    if (st != TC_OK) {
        fprintf(stderr, "tune: %s%s\n", tc_diagnostics_text(diags), tc_last_error());
        tc_diagnostics_destroy(diags);
        goto out;
    }
    tc_diagnostics_destroy(diags);
    o->configs = tc_tune_space_num_configs(space);
    if (o->configs > MAX_CONFIGS)
        goto out;
    if (!o->ms && !(o->ms = calloc(o->configs, sizeof *o->ms)))
        goto out;
    double *ms = o->ms;
    tc_autotune_request ar = {0};
    ar.jit = &r.jit;
    ar.grid = strcmp(t->family, "matmul") == 0 ? matmul_grid : attention_grid;
    ar.grid_user = (void *)t;
    ar.num_derived = 1;
    tc_autotune_result res;
    tc_tune_config c;
    if (mode == 0) { /* exhaustive: into the table */
        ar.force = 1;
        ar.config_ms = ms;
        if ((st = tc_autotune(ctx, NULL, &ar, space, &res, NULL)) != TC_OK) {
            fprintf(stderr, "tune: %s\n", tc_last_error());
            goto out;
        }
        o->best_ms = res.ms;
        o->tune_s = res.tuning_ms / 1e3;
        o->timed = res.timed;
        o->failed = res.failed;
        tc_tune_space_config(space, res.config, &c);
        tc_tune_config_format(&c, o->best, sizeof o->best);
    } else if (mode == 1) { /* the model's top_k, not written back */
        ar.force = 1;
        ar.dry_run = 1;
        ar.top_k = top_k;
        ar.config_ms = mms;
        if ((st = tc_autotune(ctx, NULL, &ar, space, &res, NULL)) != TC_OK) {
            fprintf(stderr, "tune: %s\n", tc_last_error());
            goto out;
        }
        o->used_model = res.used_model;
        o->model_s = res.tuning_ms / 1e3;
        o->model_timed = res.timed;
        tc_tune_space_config(space, res.config, &c);
        tc_tune_config_format(&c, o->pick, sizeof o->pick);
        /* the pick's time in the exhaustive run, over that run's best */
        o->model_pick_ms = ms[res.config];
        o->model_ratio = isfinite(ms[res.config]) ? o->best_ms / ms[res.config] : 0;
    } else { /* the library call */
        o->lib_ms = library_ms(ctx, t, &r);
    }
    rc = 0;
out:
    tc_tune_space_destroy(space);
    free_request(ctx, &r);
    tc_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv) {
    const char *family = NULL, *dtype = NULL;
    int64_t only_dim = 0;
    int top_k = 8, quick = 0, library_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--family") == 0 && i + 1 < argc)
            family = argv[++i];
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc)
            dtype = argv[++i];
        else if (strcmp(argv[i], "--dim") == 0 && i + 1 < argc)
            only_dim = atoll(argv[++i]);
        else if (strcmp(argv[i], "--top-k") == 0 && i + 1 < argc)
            top_k = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--library") == 0)
            library_only = 1;
        else {
            fprintf(stderr, "usage: tune [--family matmul|attention] [--dtype f16|bf16] [--dim D] [--top-k K] [--quick] [--library]\n");
            return 2;
        }
    }
    int count = 0;
    if (tc_device_count(&count) != TC_OK || count == 0) {
        printf("SKIP: no GPU (%s)\n", tc_last_error());
        return 77;
    }
    Task tasks[96];
    int nt = 0;
    if (!family || strcmp(family, "matmul") == 0) {
        static const int64_t shapes[][3] = {{4096, 4096, 4096},  {8192, 8192, 8192}, {4096, 11008, 4096},
                                            {2048, 2048, 2048},  {1024, 4096, 4096}, {8192, 4096, 1024},
                                            {16384, 4096, 4096}, {512, 8192, 8192},  {4096, 4096, 11008}};
        int ns = quick ? 3 : (int)(sizeof shapes / sizeof shapes[0]);
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < ns; i++) {
                if (d == 1 && i >= 3)
                    break; /* bf16: the three shapes of bench/matmul.py */
                tasks[nt++] = (Task){"matmul", d ? TC_DTYPE_BF16 : TC_DTYPE_F16, shapes[i][0], shapes[i][1],
                                     shapes[i][2], 0, 0, 0, 0, 0};
            }
    }
    if (!family || strcmp(family, "attention") == 0) {
        static const int64_t dims[] = {64, 128, 256};
        static const int64_t seqs[][2] = {{4, 1024}, {4, 4096}, {1, 16384}};
        for (int t = 0; t < 2; t++)
            for (int d = 0; d < 3; d++)
                for (int c = 0; c < 2; c++)
                    for (int s = 0; s < (quick ? 2 : 3); s++)
                        tasks[nt++] = (Task){"attention", t ? TC_DTYPE_BF16 : TC_DTYPE_F16, 0, 0, 0, seqs[s][0], 32,
                                             seqs[s][1], dims[d], c};
    }
    /* --dtype: only the tasks of that element type */
    int kept = 0;
    for (int i = 0; i < nt; i++)
        if ((!dtype || strcmp(dtype, tasks[i].dtype == TC_DTYPE_BF16 ? "bf16" : "f16") == 0) &&
            (!only_dim || tasks[i].d == only_dim))
            tasks[kept++] = tasks[i];
    nt = kept;
    Outcome out[96];
    memset(out, 0, sizeof out);
    char name[128];
    if (library_only) {
        for (int i = 0; i < nt; i++) {
            describe(&tasks[i], name, sizeof name);
            if (run_task(&tasks[i], top_k, 2, &out[i]) != 0)
                return 1;
            printf("tune-library: %-40s %9.4f ms %7.1f TFLOP/s\n", name, out[i].lib_ms,
                   flops(&tasks[i]) / out[i].lib_ms / 1e9);
            fflush(stdout);
        }
        return 0;
    }
    for (int i = 0; i < nt; i++) {
        describe(&tasks[i], name, sizeof name);
        if (run_task(&tasks[i], top_k, 0, &out[i]) != 0)
            return 1;
        printf("tune-exhaustive: %-40s %zu configs (%zu skipped) %7.1f s  best %s %.4f ms %.1f TFLOP/s\n", name,
               out[i].configs, out[i].failed, out[i].tune_s, out[i].best, out[i].best_ms,
               flops(&tasks[i]) / out[i].best_ms / 1e9);
        fflush(stdout);
    }
    for (int i = 0; i < nt; i++) {
        describe(&tasks[i], name, sizeof name);
        if (run_task(&tasks[i], top_k, 1, &out[i]) != 0)
            return 1;
        printf("tune-model: %-40s %s top-%d: %zu timed %6.1f s  pick %s  %.3f of the best\n", name,
               out[i].used_model ? "model" : "no model (too little data)", top_k, out[i].model_timed, out[i].model_s,
               out[i].pick, out[i].model_ratio);
        fflush(stdout);
    }
    printf("\n| task | configs | exhaustive s | best | TFLOP/s | model s | model pick / best |\n|---|---|---|---|---|---|---|\n");
    double sum_full = 0, sum_model = 0, worst = 1;
    for (int i = 0; i < nt; i++) {
        describe(&tasks[i], name, sizeof name);
        printf("| %s | %zu | %.1f | %s | %.1f | %.1f | %.3f |\n", name, out[i].configs, out[i].tune_s, out[i].best,
               flops(&tasks[i]) / out[i].best_ms / 1e9, out[i].model_s, out[i].model_ratio);
        sum_full += out[i].tune_s;
        sum_model += out[i].model_s;
        if (out[i].used_model && out[i].model_ratio < worst)
            worst = out[i].model_ratio;
    }
    printf("tune-summary: exhaustive %.1f s, model top-%d %.1f s, worst model pick %.3f of the best\n", sum_full, top_k,
           sum_model, worst);
    return 0;
}
