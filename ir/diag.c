/*
 * diag.c — diagnostics for the user, and guards for internal errors.
 *
 * User errors are collected, never printed on the spot: the front end and the
 * IR parser keep going where they can, and the caller (a tool, or the public
 * API) renders the list as
 *
 *     softmax.tile:3:17: error: expected ')' to close '(' at 3:9, saw ';'
 *         let v = load(x + cols;
 *                     ^
 *
 * The source line is copied byte for byte except control characters and
 * bytes >= 0x80, which are shown as '?' so that a corrupt file cannot spray
 * terminal escapes; the caret column counts bytes, and tabs in the line are
 * kept in the caret line so that the caret lines up.
 *
 * Internal errors (a broken invariant, malloc failing) longjmp to the
 * innermost TcGuard that the API entry point pushed; see ir.h.
 */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SrcLoc srcloc_none(void) {
    SrcLoc l = {NULL, 0, 0};
    return l;
}

void diag_init(DiagList *d) { memset(d, 0, sizeof *d); }

void diag_free(DiagList *d) {
    Diag *g = d->head;
    while (g) {
        Diag *next = g->next;
        free(g->msg);
        free(g);
        g = next;
    }
    int max = d->max_errors;
    diag_init(d);
    d->max_errors = max;
}

static void add(DiagList *d, DiagLevel level, SrcLoc loc, const char *fmt, va_list ap) {
    int max = d->max_errors > 0 ? d->max_errors : 20;
    if (level == DIAG_ERROR && d->num_errors >= max) {
        d->truncated = true;
        d->num_errors++;
        return;
    }
    if (level == DIAG_NOTE && d->truncated)
        return; /* a note for a dropped error */
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    Diag *g = malloc(sizeof *g);
    char *msg = malloc((size_t)(n < 0 ? 0 : n) + 1);
    if (!g || !msg) {
        free(g);
        free(msg);
        va_end(ap2);
        tc_oom();
    }
    vsnprintf(msg, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    g->level = level;
    g->loc = loc;
    g->msg = msg;
    g->next = NULL;
    if (d->tail)
        d->tail->next = g;
    else
        d->head = g;
    d->tail = g;
    if (level == DIAG_ERROR)
        d->num_errors++;
}

void diag_error(DiagList *d, SrcLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
}

void diag_warning(DiagList *d, SrcLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, DIAG_WARNING, loc, fmt, ap);
    va_end(ap);
}

void diag_note(DiagList *d, SrcLoc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(d, DIAG_NOTE, loc, fmt, ap);
    va_end(ap);
}

bool diag_has_errors(const DiagList *d) { return d->num_errors > 0; }

/* Finds the start of 1-based `line` in src; returns NULL if out of range. */
static const char *line_start(const Source *src, int line, size_t *len) {
    const char *p = src->text, *end = src->text + src->len;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return NULL;
        p = nl + 1;
    }
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r')
        e++;
    *len = (size_t)(e - p);
    return p;
}

void diag_render_one(const Diag *g, Buf *out) {
    static const char *const level_names[] = {"error", "warning", "note"};
    const SrcLoc *l = &g->loc;
    if (l->src && l->line > 0)
        buf_printf(out, "%s:%d:%d: ", l->src->name, l->line, l->col);
    else if (l->src)
        buf_printf(out, "%s: ", l->src->name);
    buf_printf(out, "%s: %s\n", level_names[g->level], g->msg);
    if (!l->src || l->line <= 0 || !l->src->text)
        return;
    size_t len;
    const char *p = line_start(l->src, l->line, &len);
    if (!p)
        return;
    /* Very long lines are shown around the caret only. */
    size_t col = l->col > 0 ? (size_t)l->col - 1 : 0;
    size_t from = 0;
    if (len > 200 && col > 100)
        from = col - 100;
    if (from > len)
        from = len; /* a column past a '\r' that ended the shown line */
    size_t to = len;
    if (to - from > 200)
        to = from + 200;
    buf_puts(out, "  ");
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)p[i];
        char ch = (c == '\t' || (c >= 0x20 && c < 0x7f)) ? (char)c : '?';
        buf_append(out, &ch, 1);
    }
    buf_puts(out, "\n  ");
    for (size_t i = from; i < col && i < to; i++)
        buf_append(out, p[i] == '\t' ? "\t" : " ", 1);
    buf_puts(out, "^\n");
}

void diag_render(const DiagList *d, Buf *out) {
    for (const Diag *g = d->head; g; g = g->next)
        diag_render_one(g, out);
    if (d->truncated) {
        int max = d->max_errors > 0 ? d->max_errors : 20;
        buf_printf(out, "error: too many errors (%d), stopping after the first %d\n", d->num_errors, max);
    }
}

/* ---- guards ---- */

static _Thread_local TcGuard *guard_top;

void tc_guard_push(TcGuard *g) {
    g->prev = guard_top;
    g->code = 0;
    g->message[0] = 0;
    guard_top = g;
}

void tc_guard_pop(TcGuard *g) {
    if (guard_top == g)
        guard_top = g->prev;
}

static _Noreturn void jump(int code, const char *msg) {
    TcGuard *g = guard_top;
    if (!g) {
        fprintf(stderr, "tilec: internal error with no guard: %s\n", msg);
        abort(); /* only reachable through a bug in an entry point */
    }
    guard_top = g->prev;
    g->code = code;
    snprintf(g->message, sizeof g->message, "%s", msg);
    longjmp(g->jb, code);
}

_Noreturn void tc_oom(void) { jump(1, "out of memory"); }

_Noreturn void tc_fatal(const char *file, int line, const char *fmt, ...) {
    char msg[200], full[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "internal error at %s:%d: %s", file, line, msg);
    jump(2, full);
}
