/*
 * tilec_tune.c — `tilec tune`: time a kernel's @autotune configurations on
 * the GPU (tc_autotune, include/tilec/runtime.h) and print each one's time
 * and the choice, which goes into the tuning table.
 *
 *     tilec tune lib/softmax.tile --kernel softmax_fwd -D T=f16 \
 *         --arg y=buffer:268435456 --arg x=buffer:268435456 \
 *         --arg stride_y=8192 --arg stride_x=8192 --arg n_cols=8192 --grid 16384
 *
 * Every runtime parameter gets an --arg: a pointer `buffer:BYTES` (device
 * memory filled with small random values of its element type) or
 * `same:NAME` (the buffer of pointer parameter NAME, for a kernel that
 * writes over its input), or a scalar.
 * --grid gives the launch's x[,y[,z]], each an integer expression over the
 * scalar arguments and the configuration's constexprs (+ - * / %, cdiv,
 * min, max, parentheses).
 */
#include "tilec/runtime.h"
#include "tilec/tilec.h"
#include "tool_options.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 128
#define MAX_DEFINES 64

typedef struct Arg {
    const char *name;
    const char *value; /* as given */
    bool is_buffer;
    const char *same; /* same:NAME: the buffer of pointer parameter NAME (an output over an input) */
    size_t bytes;
    CUdeviceptr ptr;
    unsigned char scalar[8]; /* the value, as the parameter's type */
    int64_t ival;            /* integers: the value, for --grid */
} Arg;

typedef struct Grid {
    const char *dims[3];
    int num_dims;
    const Arg *args;
    size_t num_args;
    bool failed;
} Grid;

/* ---- --grid: a small expression evaluator ---- */

typedef struct Expr {
    const char *s;
    const tc_constexpr *cx;
    size_t num_cx;
    Grid *g;
    bool bad;
} Expr;

static int64_t expr_sum(Expr *e);

static void skip(Expr *e) {
    while (isspace((unsigned char)*e->s))
        e->s++;
}

static int64_t name_value(Expr *e, const char *name, size_t n) {
    for (size_t i = 0; i < e->num_cx; i++)
        if (strlen(e->cx[i].name) == n && strncmp(e->cx[i].name, name, n) == 0 && e->cx[i].kind != TC_CONSTEXPR_FLOAT)
            return e->cx[i].i;
    for (size_t i = 0; i < e->g->num_args; i++)
        if (strlen(e->g->args[i].name) == n && strncmp(e->g->args[i].name, name, n) == 0 && !e->g->args[i].is_buffer)
            return e->g->args[i].ival;
    if (!e->g->failed)
        fprintf(stderr, "tilec tune: --grid uses '%.*s', which is neither a constexpr nor a scalar --arg\n", (int)n,
                name);
    e->bad = true;
    return 1;
}

static int64_t expr_atom(Expr *e) {
    skip(e);
    if (*e->s == '(') {
        e->s++;
        int64_t v = expr_sum(e);
        skip(e);
        if (*e->s != ')') {
            e->bad = true;
            return 1;
        }
        e->s++;
        return v;
    }
    if (isdigit((unsigned char)*e->s)) {
        char *end;
        long long v = strtoll(e->s, &end, 10);
        e->s = end;
        return v;
    }
    if (isalpha((unsigned char)*e->s) || *e->s == '_') {
        const char *name = e->s;
        while (isalnum((unsigned char)*e->s) || *e->s == '_')
            e->s++;
        size_t n = (size_t)(e->s - name);
        skip(e);
        if (*e->s == '(') {
            e->s++;
            int64_t a = expr_sum(e);
            skip(e);
            if (*e->s != ',') {
                e->bad = true;
                return 1;
            }
            e->s++;
            int64_t b = expr_sum(e);
            skip(e);
            if (*e->s != ')') {
                e->bad = true;
                return 1;
            }
            e->s++;
            if (n == 4 && strncmp(name, "cdiv", 4) == 0)
                return b > 0 ? (a + b - 1) / b : (e->bad = true, 1);
            if (n == 3 && strncmp(name, "min", 3) == 0)
                return a < b ? a : b;
            if (n == 3 && strncmp(name, "max", 3) == 0)
                return a > b ? a : b;
            e->bad = true;
            return 1;
        }
        return name_value(e, name, n);
    }
    e->bad = true;
    return 1;
}

static int64_t expr_product(Expr *e) {
    int64_t v = expr_atom(e);
    for (;;) {
        skip(e);
        char op = *e->s;
        if (op != '*' && op != '/' && op != '%')
            return v;
        e->s++;
        int64_t r = expr_atom(e);
        if (op == '*')
            v *= r;
        else if (r == 0)
            e->bad = true;
        else
            v = op == '/' ? v / r : v % r;
    }
}

static int64_t expr_sum(Expr *e) {
    int64_t v = expr_product(e);
    for (;;) {
        skip(e);
        char op = *e->s;
        if (op != '+' && op != '-')
            return v;
        e->s++;
        int64_t r = expr_product(e);
        v = op == '+' ? v + r : v - r;
    }
}

static tc_dim3 grid_of(void *user, const tc_constexpr *cx, size_t num_cx) {
    Grid *g = user;
    unsigned d[3] = {1, 1, 1};
    for (int i = 0; i < g->num_dims; i++) {
        Expr e = {g->dims[i], cx, num_cx, g, false};
        int64_t v = expr_sum(&e);
        skip(&e);
        if (e.bad || *e.s || v < 0 || v > 0x7fffffff) {
            if (!g->failed && !e.bad)
                fprintf(stderr, "tilec tune: --grid '%s' is not an integer expression of the arguments\n", g->dims[i]);
            g->failed = true;
            v = 0;
        }
        d[i] = (unsigned)v;
    }
    return (tc_dim3){d[0], d[1], d[2]};
}

/* ---- arguments ---- */

/* Bytes of one element of type t (the public tc_param_size of a scalar). */
static size_t dtype_size(tc_dtype t) {
    tc_param_desc d = {"", t, 0, 0};
    return tc_param_size(&d);
}

/* Small random values (in [-1, 1) for floats, 0..7 for integers) of the
 * buffer's element type: inputs that neither overflow nor are all zeros. */
static void fill_random(unsigned char *p, size_t bytes, tc_dtype t, uint64_t *state) {
    size_t es = dtype_size(t);
    for (size_t i = 0; i + es <= bytes; i += es) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        double r = (double)(*state >> 11) / 9007199254740992.0 * 2 - 1;
        if (t == TC_DTYPE_F32) {
            float f = (float)r;
            memcpy(p + i, &f, 4);
        } else if (t == TC_DTYPE_F64) {
            memcpy(p + i, &r, 8);
        } else if (t == TC_DTYPE_F16) {
            /* sign, exponent 14 or 13 and random mantissa: magnitudes in [0.25, 1) */
            uint16_t h = (uint16_t)(((*state >> 20) & 1) << 15 | (uint16_t)(13 + ((*state >> 21) & 1)) << 10 |
                                    (uint16_t)((*state >> 30) & 0x3ff));
            memcpy(p + i, &h, 2);
        } else if (t == TC_DTYPE_BF16) {
            float f = (float)r;
            uint32_t u;
            memcpy(&u, &f, 4);
            uint16_t h = (uint16_t)(u >> 16);
            memcpy(p + i, &h, 2);
        } else if (t == TC_DTYPE_F8E4M3 || t == TC_DTYPE_F8E5M2) {
            p[i] = (unsigned char)(0x30 | ((*state >> 24) & 0x8f));
        } else {
            memset(p + i, 0, es);
            p[i] = (unsigned char)((*state >> 33) & 7);
        }
    }
}

static int parse_scalar(Arg *a, const tc_param_desc *d) {
    char *end;
    if (d->dtype == TC_DTYPE_F32 || d->dtype == TC_DTYPE_F64) {
        double v = strtod(a->value, &end);
        if (*end || end == a->value)
            return -1;
        if (d->dtype == TC_DTYPE_F32) {
            float f = (float)v;
            memcpy(a->scalar, &f, 4);
        } else {
            memcpy(a->scalar, &v, 8);
        }
        return 0;
    }
    if (d->dtype == TC_DTYPE_F16 || d->dtype == TC_DTYPE_BF16 || d->dtype == TC_DTYPE_F8E4M3 ||
        d->dtype == TC_DTYPE_F8E5M2)
        return -1;
    long long v = strtoll(a->value, &end, 0);
    if (*end || end == a->value)
        return -1;
    a->ival = v;
    memcpy(a->scalar, &v, 8); /* little-endian: the low bytes are the narrower types' value */
    return 0;
}

static void tune_usage(FILE *out) {
    fputs("usage: tilec tune FILE.tile --kernel NAME --arg NAME=VALUE... --grid X[,Y[,Z]] [options]\n"
          "\n"
          "Times the configurations of the kernel's @autotune clause on GPU 0 and keeps the fastest\n"
          "in the tuning table (tuning.tsv in the JIT's cache directory).\n"
          "\n"
          "options:\n"
          "  --kernel NAME       the kernel (required)\n"
          "  -D NAME=VALUE       a constexpr the configurations do not choose\n"
          "  --arg NAME=VALUE    a runtime parameter: buffer:BYTES for a pointer (random values of its\n"
          "                      element type) or same:NAME (the buffer of pointer parameter NAME: a\n"
          "                      kernel that writes over its input), a number otherwise; every\n"
          "                      parameter needs one\n"
          "  --grid X[,Y[,Z]]    the launch's programs: integer expressions of the scalar --args and\n"
          "                      the constexprs (+ - * / %, cdiv(a, b), min, max, parentheses)\n"
          "  --divisible NAME=N  parameter NAME is a multiple of N (a power of two), a fact every\n"
          "                      configuration is compiled with, as the library passes them: an\n"
          "                      integer's --arg must be one; buffers are 256-byte aligned\n"
          "  --top-k N           time only the cost model's N best (every one while the model has\n"
          "                      too little data); default: time every configuration\n"
          "  --reps N            timed launches per configuration (the median counts); default 10\n"
          "  --force             tune even when the table has an entry for these key values\n"
          "  --verbose           also print every configuration timed, fastest first, with its time\n"
          "                      and its ratio to the best\n"
          "  --arch ARCH         compile for ARCH instead of the device's\n",
          out);
}

/* --verbose: the configurations timed, fastest first (the order of the
 * space among equal times), each with its median and its ratio to the best. */
static void print_timed(const tc_tune_space *space, const double *ms, size_t n, double best) {
    size_t *order = malloc(n * sizeof *order);
    if (!order)
        return;
    size_t timed = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(ms[i]))
            order[timed++] = i;
    for (size_t i = 1; i < timed; i++) { /* insertion sort: stable, and spaces are small */
        size_t c = order[i], j = i;
        for (; j > 0 && ms[order[j - 1]] > ms[c]; j--)
            order[j] = order[j - 1];
        order[j] = c;
    }
    for (size_t r = 0; r < timed; r++) {
        tc_tune_config cfg;
        char text[1024];
        tc_tune_space_config(space, order[r], &cfg);
        tc_tune_config_format(&cfg, text, sizeof text);
        printf("  %-60s %10.4f ms  %6.3fx\n", text, ms[order[r]], best > 0 ? ms[order[r]] / best : 1.0);
    }
    free(order);
}

int tune_main(int argc, char **argv) {
    const char *path = NULL, *kernel = NULL, *arch = NULL;
    tc_constexpr cx[MAX_DEFINES];
    char cx_names[MAX_DEFINES][128];
    size_t num_cx = 0;
    Arg args[MAX_ARGS];
    size_t num_given = 0;
    Grid grid = {0};
    tc_autotune_request ar = {0};
    tc_param_spec facts[MAX_DEFINES];
    char fact_names[MAX_DEFINES][128];
    size_t num_facts = 0;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            tune_usage(stdout);
            return 0;
        } else if (strcmp(a, "--kernel") == 0 && v) {
            kernel = argv[++i];
        } else if (strcmp(a, "--arch") == 0 && v) {
            arch = argv[++i];
        } else if (strncmp(a, "-D", 2) == 0) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def || num_cx == MAX_DEFINES ||
                tc_constexpr_parse(def, &cx[num_cx], cx_names[num_cx], sizeof cx_names[num_cx]) != TC_OK) {
                fprintf(stderr, "tilec tune: bad -D '%s': expected NAME=VALUE\n", def ? def : "");
                return 2;
            }
            num_cx++;
        } else if (strcmp(a, "--divisible") == 0 && v) {
            int64_t n; /* at most 256: the buffers' alignment */
            if (num_facts == MAX_DEFINES || !tool_parse_fact(v, 256, fact_names[num_facts], sizeof fact_names[0], &n)) {
                fprintf(stderr, "tilec tune: bad --divisible '%s': expected NAME=N with N a power of two up to 256\n",
                        v);
                return 2;
            }
            facts[num_facts] = (tc_param_spec){fact_names[num_facts], n};
            num_facts++;
            i++;
        } else if (strcmp(a, "--arg") == 0 && v) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v || num_given == MAX_ARGS) {
                fprintf(stderr, "tilec tune: bad --arg '%s': expected NAME=VALUE\n", v);
                return 2;
            }
            Arg *g = &args[num_given++];
            memset(g, 0, sizeof *g);
            g->name = strndup(v, (size_t)(eq - v));
            g->value = eq + 1;
            if (strncmp(g->value, "buffer:", 7) == 0) {
                char *end;
                unsigned long long n = strtoull(g->value + 7, &end, 10);
                if (*end || n == 0 || n > ((unsigned long long)1 << 40)) {
                    fprintf(stderr, "tilec tune: bad --arg '%s': buffer:BYTES with 1 <= BYTES <= 2^40\n", v);
                    return 2;
                }
                g->is_buffer = true;
                g->bytes = (size_t)n;
            } else if (strncmp(g->value, "same:", 5) == 0) {
                g->is_buffer = true;
                g->same = g->value + 5;
            }
            i++;
        } else if (strcmp(a, "--grid") == 0 && v) {
            char *s = strdup(argv[++i]);
            /* split at the commas outside parentheses */
            int depth = 0;
            grid.dims[grid.num_dims++] = s;
            for (char *c = s; *c; c++) {
                depth += *c == '(' ? 1 : *c == ')' ? -1 : 0;
                if (*c == ',' && depth == 0) {
                    if (grid.num_dims == 3) {
                        fprintf(stderr, "tilec tune: --grid has at most three dimensions\n");
                        return 2;
                    }
                    *c = 0;
                    grid.dims[grid.num_dims++] = c + 1;
                }
            }
        } else if ((strcmp(a, "--top-k") == 0 || strcmp(a, "--reps") == 0) && v) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 100000) {
                fprintf(stderr, "tilec tune: %s takes a positive integer\n", a);
                return 2;
            }
            *(strcmp(a, "--top-k") == 0 ? &ar.top_k : &ar.reps) = (int)n;
        } else if (strcmp(a, "--force") == 0) {
            ar.force = 1;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            verbose = true;
        } else if (a[0] == '-') {
            fprintf(stderr, "tilec tune: unknown option '%s' (see tilec tune --help)\n", a);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "tilec tune: more than one input file\n");
            return 2;
        }
    }
    if (!path || !kernel || grid.num_dims == 0) {
        tune_usage(stderr);
        return 2;
    }
    tc_source src;
    if (tc_source_read_file(path, &src) != TC_OK) {
        fprintf(stderr, "tilec tune: cannot read '%s'\n", path);
        return 2;
    }
    int rc = 1;
    tc_diagnostics *diags = NULL;
    tc_diagnostics_create(&diags);
    tc_tune_space *space = NULL;
    tc_context *ctx = NULL;
    tc_binary *sig = NULL;
    tc_compiler *cc = NULL;
    void *argv_ptrs[MAX_ARGS];
    Arg ordered[MAX_ARGS] = {{0}};
    size_t np = 0;
    if (tc_tune_space_create(&src, kernel, cx, num_cx, &space, diags) != TC_OK) {
        fprintf(stderr, "%s%s\n", tc_diagnostics_text(diags), tc_last_error());
        goto done;
    }
    if (!tc_tune_space_declared(space)) {
        fprintf(stderr, "tilec tune: kernel '%s' has no @autotune clause\n", kernel);
        goto done;
    }
    /* the signature, for the arguments' types */
    tc_target target = {arch};
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_SIGNATURE;
    tc_tune_config c0;
    tc_tune_space_config(space, 0, &c0);
    tc_constexpr all[2 * MAX_DEFINES];
    size_t nall = 0;
    for (size_t i = 0; i < num_cx; i++)
        all[nall++] = cx[i];
    for (size_t i = 0; i < c0.num_constexprs && nall < 2 * MAX_DEFINES; i++)
        all[nall++] = c0.constexprs[i];
    if (tc_compiler_create(&target, &cc) != TC_OK ||
        tc_compile(cc, &src, kernel, all, nall, &opt, &sig, diags) != TC_OK) {
        fprintf(stderr, "%s%s\n", tc_diagnostics_text(diags), tc_last_error());
        goto done;
    }
    if (tc_context_create(0, &ctx) != TC_OK) {
        fprintf(stderr, "tilec tune: %s\n", tc_last_error());
        goto done;
    }
    np = tc_binary_kernel_num_params(sig, 0);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (size_t p = 0; p < np && p < MAX_ARGS; p++) {
        tc_param_desc d;
        tc_binary_kernel_param(sig, 0, p, &d);
        size_t j = 0;
        while (j < num_given && strcmp(args[j].name, d.name) != 0)
            j++;
        if (j == num_given) {
            fprintf(stderr, "tilec tune: parameter '%s' has no --arg\n", d.name);
            goto done;
        }
        ordered[p] = args[j];
        Arg *g = &ordered[p];
        if (d.is_pointer != g->is_buffer) {
            fprintf(stderr, "tilec tune: --arg %s=%s: %s\n", g->name, g->value,
                    d.is_pointer ? "a pointer takes buffer:BYTES or same:NAME" : "a scalar takes a number");
            goto done;
        }
        if (g->same) {
            argv_ptrs[p] = &g->ptr; /* set once every buffer is allocated, below */
        } else if (g->is_buffer) {
            unsigned char *host = malloc(g->bytes);
            if (!host || tc_mem_alloc(ctx, g->bytes, &g->ptr) != TC_OK) {
                free(host);
                fprintf(stderr, "tilec tune: --arg %s: cannot allocate %zu bytes: %s\n", g->name, g->bytes,
                        tc_last_error());
                goto done;
            }
            fill_random(host, g->bytes, d.dtype, &state);
            tc_status st = tc_memcpy_htod(ctx, g->ptr, host, g->bytes);
            free(host);
            if (st != TC_OK) {
                fprintf(stderr, "tilec tune: %s\n", tc_last_error());
                goto done;
            }
            argv_ptrs[p] = &g->ptr;
        } else {
            if (parse_scalar(g, &d) != 0) {
                fprintf(stderr, "tilec tune: --arg %s=%s is not a value of its type\n", g->name, g->value);
                goto done;
            }
            argv_ptrs[p] = g->scalar;
        }
    }
    for (size_t p = 0; p < np && p < MAX_ARGS; p++) {
        Arg *g = &ordered[p];
        if (!g->same)
            continue;
        size_t q = 0;
        while (q < np && (strcmp(ordered[q].name, g->same) != 0 || !ordered[q].is_buffer || ordered[q].same))
            q++;
        if (q == np) {
            fprintf(stderr, "tilec tune: --arg %s=%s: '%s' is not a parameter given as buffer:BYTES\n", g->name,
                    g->value, g->same);
            goto done;
        }
        g->ptr = ordered[q].ptr;
        g->bytes = ordered[q].bytes;
    }
    /* the facts: each a parameter's, true of its --arg */
    for (size_t f = 0; f < num_facts; f++) {
        size_t p = 0;
        while (p < np && strcmp(ordered[p].name, facts[f].name) != 0)
            p++;
        if (p == np) {
            fprintf(stderr, "tilec tune: --divisible %s: the kernel has no such parameter\n", facts[f].name);
            goto done;
        }
        tc_param_desc d;
        tc_binary_kernel_param(sig, 0, p, &d);
        if (!d.is_pointer && (d.dtype == TC_DTYPE_F16 || d.dtype == TC_DTYPE_BF16 || d.dtype == TC_DTYPE_F32 ||
                              d.dtype == TC_DTYPE_F64 || d.dtype == TC_DTYPE_F8E4M3 || d.dtype == TC_DTYPE_F8E5M2)) {
            fprintf(stderr, "tilec tune: --divisible %s: a fact is about an integer or a pointer, not a float\n",
                    facts[f].name);
            goto done;
        }
        if (!ordered[p].is_buffer && ordered[p].ival % facts[f].divisibility != 0) {
            fprintf(stderr, "tilec tune: --divisible %s=%lld: --arg %s=%s is not a multiple of it\n", facts[f].name,
                    (long long)facts[f].divisibility, ordered[p].name, ordered[p].value);
            goto done;
        }
    }
    tc_options jit_opt;
    tc_options_init(&jit_opt);
    jit_opt.params = num_facts ? facts : NULL;
    jit_opt.num_params = num_facts;
    grid.args = ordered;
    grid.num_args = np;
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.source = src.text;
    req.source_len = src.len;
    req.path = path;
    req.kernel = kernel;
    req.constexprs = cx;
    req.num_constexprs = num_cx;
    req.arch = arch;
    req.options = &jit_opt;
    req.args = argv_ptrs;
    req.num_args = np;
    req.diags = diags;
    ar.jit = &req;
    ar.grid = grid_of;
    ar.grid_user = &grid;
    size_t num_configs = tc_tune_space_num_configs(space);
    double *config_ms = verbose ? malloc(num_configs * sizeof *config_ms) : NULL;
    if (verbose && !config_ms) {
        fprintf(stderr, "tilec tune: out of memory\n");
        goto done;
    }
    ar.config_ms = config_ms;
    tc_autotune_result res;
    if (tc_autotune(ctx, NULL, &ar, space, &res, NULL) != TC_OK || grid.failed) {
        free(config_ms);
        fprintf(stderr, "tilec tune: %s\n", grid.failed ? "bad --grid" : tc_last_error());
        goto done;
    }
    tc_tune_config best;
    tc_tune_space_config(space, res.config, &best);
    char text[1024];
    tc_tune_config_format(&best, text, sizeof text);
    printf("%s: %s  %.4f ms%s\n", kernel, text, res.ms, res.from_table ? "  (from the tuning table; --force retunes)"
                                                                        : "");
    printf("%zu of %zu configurations timed, %zu skipped%s, in %.1f s\n", res.timed, tc_tune_space_num_configs(space),
           res.failed, res.used_model ? " (ranked by the cost model)" : "", res.tuning_ms / 1e3);
    if (config_ms && !res.from_table)
        print_timed(space, config_ms, num_configs, res.ms);
    free(config_ms);
    rc = 0;
done:
    for (size_t p = 0; p < np && p < MAX_ARGS && ctx; p++)
        if (ordered[p].is_buffer && !ordered[p].same && ordered[p].ptr)
            tc_mem_free(ctx, ordered[p].ptr);
    for (size_t i = 0; i < num_given; i++)
        free((char *)args[i].name);
    free((char *)grid.dims[0]);
    tc_context_destroy(ctx);
    tc_binary_destroy(sig);
    tc_compiler_destroy(cc);
    tc_tune_space_destroy(space);
    tc_diagnostics_destroy(diags);
    tc_source_free(&src);
    return rc;
}
