/*
 * pass_manager.c — finds passes by name and runs them with the services every
 * pass gets for free: the verifier after the pass, IR dumps, timing, and a
 * guard that turns an internal error inside a pass into a diagnostic.
 *
 * The registry is passes.def expanded into a table; adding a pass is a line
 * there plus its file. A list of passes ("inline,canonicalize,cse") is
 * checked whole before anything runs, so a typo in the last name does not
 * leave a half-transformed module behind.
 *
 * Dumps follow MLIR's --mlir-print-ir-after so that tools built for MLIR
 * logs (and people used to them) can read ours:
 *
 *     // -----// IR after canonicalize //----- //
 *     kernel @k(...) { ... }
 *
 * The verifier runs after every pass in builds without NDEBUG and whenever
 * PassOptions.verify_each is set; a pass that breaks the IR is named in an
 * error before the verifier's own messages.
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const PassInfo registry[] = {
#define PASS(id, name, summary) {name, pass_##id, summary},
#include "passes.def"
};

#define NUM_PASSES ((int)(sizeof registry / sizeof registry[0]))

void pass_options_init(PassOptions *opts, DiagList *diags) {
    memset(opts, 0, sizeof *opts);
    opts->diags = diags;
    tg_target_init(&opts->target, "sm_80");
}

const PassInfo *pass_all(int *count) {
    *count = NUM_PASSES;
    return registry;
}

const char *pass_list_text(void) {
    static const char text[] =
#define PASS(id, name, summary) "  " name ": " summary "\n"
#include "passes.def"
        ;
    return text;
}

static const PassInfo *lookup_n(const char *name, size_t n) {
    for (int i = 0; i < NUM_PASSES; i++)
        if (strlen(registry[i].name) == n && memcmp(registry[i].name, name, n) == 0)
            return &registry[i];
    return NULL;
}

const PassInfo *pass_lookup(const char *name) {
    return lookup_n(name, strlen(name));
}

/* Is `name` in the comma-separated `list`? */
static bool in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static void emit(const PassOptions *opts, const Buf *text) {
    if (!text->data)
        return;
    if (opts->print_out)
        buf_append(opts->print_out, text->data, text->len);
    else
        fputs(text->data, stderr);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Calls the pass inside a guard; false if it failed or hit an internal error. */
static bool guarded_call(IrModule *m, const PassInfo *pass, const PassOptions *opts) {
    TcGuard g;
    if (TC_GUARD(g)) {
        diag_error(opts->diags, srcloc_none(), "internal error in pass '%s': %s", pass->name, g.message);
        return false;
    }
    bool ok = pass->fn(m, opts);
    tc_guard_pop(&g);
    return ok;
}

static bool verify_after(IrModule *m, const PassInfo *pass, const PassOptions *opts) {
    DiagList errs;
    diag_init(&errs);
    bool ok = ir_verify(m, &errs);
    if (!ok) {
        diag_error(opts->diags, srcloc_none(), "the IR is invalid after pass '%s':", pass->name);
        for (const Diag *g = errs.head; g; g = g->next)
            diag_error(opts->diags, g->loc, "%s", g->msg);
    }
    diag_free(&errs);
    return ok;
}

bool pass_run_one(IrModule *m, const PassInfo *pass, const PassOptions *opts) {
    double start = opts->time_passes ? now_ms() : 0;
    int errors_before = opts->diags->num_errors;
    bool ok = guarded_call(m, pass, opts) && opts->diags->num_errors == errors_before;
    if (opts->time_passes) {
        Buf b;
        buf_init(&b);
        buf_printf(&b, "// pass %s: %.3f ms\n", pass->name, now_ms() - start);
        emit(opts, &b);
        buf_free(&b);
    }
    if (!ok)
        return false;
#ifdef NDEBUG
    bool verify = opts->verify_each;
#else
    bool verify = true;
#endif
    if (verify && !verify_after(m, pass, opts))
        return false;
    if (opts->print_after_all || in_list(opts->print_after, pass->name)) {
        Buf b;
        buf_init(&b);
        buf_printf(&b, "// -----// IR after %s //----- //\n", pass->name);
        if (opts->print_locs)
            ir_print_module_locs(m, &b);
        else
            ir_print_module(m, &b);
        emit(opts, &b);
        buf_free(&b);
    }
    return true;
}

bool pass_run(IrModule *m, const char *name, const PassOptions *opts) {
    const PassInfo *pass = pass_lookup(name);
    if (!pass)
        tc_unreachable("no pass named '%s'", name);
    return pass_run_one(m, pass, opts);
}

static void unknown_pass(const PassOptions *opts, const char *name, size_t n) {
    Buf b;
    buf_init(&b);
    for (int i = 0; i < NUM_PASSES; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", registry[i].name);
    diag_error(opts->diags, srcloc_none(), "unknown pass '%.*s' (passes: %s)", (int)n, name, b.data);
    buf_free(&b);
}

/* Splits a comma-separated list; spaces around names are ignored and empty
 * entries skipped. Calls fn(pass) for each; stops when fn returns false. */
static bool each_name(const char *names, const PassOptions *opts, bool run, IrModule *m) {
    const char *p = names ? names : "";
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *s = p;
        while (*p && *p != ',')
            p++;
        const char *e = p;
        while (e > s && e[-1] == ' ')
            e--;
        if (e == s)
            continue;
        const PassInfo *pass = lookup_n(s, (size_t)(e - s));
        if (!pass) {
            unknown_pass(opts, s, (size_t)(e - s));
            return false;
        }
        if (run && !pass_run_one(m, pass, opts))
            return false;
    }
    return true;
}

bool pass_run_list(IrModule *m, const char *names, const PassOptions *opts) {
    return each_name(names, opts, false, m) && each_name(names, opts, true, m);
}
