/*
 * parse.c — reads the text form of the IR (docs/ir.md) back into a module.
 *
 * A hand-written recursive-descent parser over a small on-demand lexer.
 * The input is untrusted: IR text comes from users, from tests and from the
 * fuzzer, so the source may hold any bytes (NULs, invalid UTF-8), may stop
 * anywhere, and may nest without end. The parser therefore
 *
 *   - never reads past src->len and never needs a terminating NUL;
 *   - bounds every recursion: regions nest at most MAX_REGION_DEPTH deep and
 *     layout literals MAX_LAYOUT_DEPTH deep; types cannot nest by
 *     construction (a pointer holds a scalar, a tile a scalar or a pointer);
 *   - checks what the IR constructors assert (ir_type_ptr wants a scalar
 *     pointee, layouts need ranks 1..4 and order permutations), so that bad
 *     input is a diagnostic and never a tc_fatal.
 *
 * Errors. Each error is reported at the token where it was noticed, as
 * file:line:col (1-based, columns count bytes), with "expected X to close Y
 * at L:C, saw Z" wording where something is left open. A parse error inside
 * a function abandons that function: the parser longjmps to the top-level
 * loop, skips to the next `kernel`/`func` keyword followed by `@name` (or to
 * the next `#alias =` line), and goes on, so one run reports the first
 * error of each function. When anything was reported, ir_parse frees the
 * module and returns NULL.
 *
 * Scoping. Values are looked up by name in a table that holds exactly the
 * names visible at the current point: the function's parameters and every
 * earlier value of each enclosing block. A region records the table's size
 * when it opens and pops back to it when it closes, so values defined inside
 * a region are gone after its '}'. An op's results are defined after its
 * regions (they are not visible inside them). Because removals are always of
 * the newest entries, the table is a chained hash whose entries form a
 * stack: the entry being popped is always at the head of its bucket. Defining
 * a name that is visible is an error ("redefinition of value %x"); a name
 * whose scope has closed may be defined again.
 *
 * The two places where the grammar needs more than one token of lookahead:
 *   - An op's operand list is VALUE (',' VALUE)*. A value list that is
 *     directly followed by '=' is the result list of the *next* op, so
 *     `yield` followed on the next line by `%a, %b = for ...` gives yield no
 *     operands. The parser scans the list ahead once to decide.
 *   - After the operands, '{' starts an attribute dictionary when the op has
 *     no regions, or when it is followed by IDENT '='; otherwise it is the
 *     op's first region (so `if %c {}` is an if with an empty then-region;
 *     the printer never prints an empty dictionary).
 *
 * Tile shapes (`64x32xf16`) are scanned byte by byte, since the general
 * lexer would read `x32xf16` as one identifier.
 *
 * Locations. An op or a function written with `loc("file":line:col)` gets
 * that location, in a Source of that name that the module's arena holds
 * (one per distinct name, with no text); with `loc(unknown)` it gets none
 * (line 0); without either, its own position in the IR text. So IR printed
 * with locations (ir_print_module_locs) keeps pointing at the .tile source
 * through any number of tilec-opt runs.
 */
#include "ir.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_REGION_DEPTH = IR_MAX_REGION_DEPTH, /* nested regions */
    MAX_LAYOUT_DEPTH = 32,  /* nested layout literals (slice of dot_op of ...) */
    MAX_ATTRS = 256,        /* attributes in one dictionary */
    MAX_LAYOUT_PARAM = 65536,
};
#define MAX_TILE_ELEMS ((int64_t)INT32_MAX) /* elements of one tile or smem buffer */

/* ==== lexer ==== */

typedef enum {
    T_BOF, /* before the first token */
    T_EOF,
    T_ERROR, /* a bad byte or an unterminated string; p->lex_error says which */
    T_IDENT,
    T_VALUE,  /* %name */
    T_SYMBOL, /* @name or @"name" */
    T_HASH,   /* #name */
    T_CARET,  /* ^name */
    T_INT,
    T_FLOAT,
    T_STRING,
    T_LPAREN,
    T_RPAREN,
    T_LBRACE,
    T_RBRACE,
    T_LBRACKET,
    T_RBRACKET,
    T_LT,
    T_GT,
    T_COMMA,
    T_COLON,
    T_EQUAL,
    T_ARROW,
} TokKind;

typedef struct {
    TokKind kind;
    const char *s; /* first byte in the source */
    size_t n;      /* length in bytes */
    int line, col;
} Tok;

/* Where the lexer stands: the byte after the current token. */
typedef struct {
    size_t pos;
    int line;
    size_t line_start; /* offset of the first byte of `line` */
} LexState;

/* ==== the scoped name table ==== */

typedef struct {
    const char *s; /* name bytes, in the source (without the sigil) */
    size_t n;
    void *val;
    SrcLoc loc; /* where it was defined */
    int next;   /* next entry in the same bucket, or -1 */
} Entry;

typedef struct {
    Entry *entries; /* a stack: newest last */
    int count, cap;
    int *buckets; /* head entry per bucket, or -1 */
    int nbuckets; /* a power of two */
} NameTable;

/* ==== parser state ==== */

/* A function's loc(...). Until the parse is over, a function's loc is its
 * place in the IR text: a "previous definition" note may point at it, and a
 * note must not name a Source in the arena of a module that a later error
 * destroys. */
typedef struct {
    IrFunc *f;
    SrcLoc loc;
} FuncLoc;

typedef struct Parser {
    const Source *src;
    DiagList *diags;
    IrModule *m;
    LexState lex;
    Tok tok;
    const char *lex_error;  /* message for a T_ERROR token */
    jmp_buf fail;           /* back to the top-level loop */
    const char *item_start; /* first token of the top-level item being parsed */
    IrFunc *cur_func;       /* function being parsed, removed again if it fails */
    int region_depth;
    int errors;
    NameTable values;  /* visible values: IrValue * */
    NameTable aliases; /* layout aliases: const Layout * */
    NameTable files;   /* file names of loc(...): Source *, in the module arena */
    /* scratch stacks, reused; nested ops push above their parent's marks */
    IrValue **vals;
    size_t nvals, cap_vals;
    const IrType **types;
    size_t ntypes, cap_types;
    Tok *names;
    size_t nnames, cap_names;
    IrAttr *attrs;
    size_t nattrs, cap_attrs;
    int64_t *ints;
    size_t nints, cap_ints;
    char *str; /* decoded string or NUL-terminated copy of a name */
    size_t cap_str;
    FuncLoc *func_locs; /* the functions' loc(...), set when the parse succeeds */
    size_t nfunc_locs, cap_func_locs;
} Parser;

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return p;
    size_t cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *q = realloc(p, cap2 * elem);
    if (!q)
        tc_oom();
    *cap = cap2;
    return q;
}

#define PUSH(p, arr, n, cap, v)                                                                                        \
    do {                                                                                                               \
        (p)->arr = grow((p)->arr, &(p)->cap, (p)->n + 1, sizeof *(p)->arr);                                            \
        (p)->arr[(p)->n++] = (v);                                                                                      \
    } while (0)

/* ---- name table ---- */

static unsigned hash_name(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void table_free(NameTable *t) {
    free(t->entries);
    free(t->buckets);
    memset(t, 0, sizeof *t);
}

static void table_clear(NameTable *t) {
    t->count = 0;
    for (int i = 0; i < t->nbuckets; i++)
        t->buckets[i] = -1;
}

static Entry *table_find(const NameTable *t, const char *s, size_t n) {
    if (!t->nbuckets)
        return NULL;
    for (int i = t->buckets[hash_name(s, n) & (unsigned)(t->nbuckets - 1)]; i >= 0; i = t->entries[i].next)
        if (t->entries[i].n == n && memcmp(t->entries[i].s, s, n) == 0)
            return &t->entries[i];
    return NULL;
}

static void table_link(NameTable *t, int i) {
    unsigned b = hash_name(t->entries[i].s, t->entries[i].n) & (unsigned)(t->nbuckets - 1);
    t->entries[i].next = t->buckets[b];
    t->buckets[b] = i;
}

static void table_add(NameTable *t, const char *s, size_t n, void *val, SrcLoc loc) {
    if (t->count == t->cap) {
        size_t cap = (size_t)t->cap;
        t->entries = grow(t->entries, &cap, (size_t)t->count + 1, sizeof *t->entries);
        t->cap = (int)cap;
    }
    if (t->count >= t->nbuckets) {
        /* Rehash in entry order, which keeps newer entries ahead of older
         * ones in every bucket. */
        int nb = t->nbuckets ? t->nbuckets * 2 : 64;
        int *b = malloc(sizeof(int) * (size_t)nb);
        if (!b)
            tc_oom();
        free(t->buckets);
        t->buckets = b;
        t->nbuckets = nb;
        for (int i = 0; i < nb; i++)
            b[i] = -1;
        for (int i = 0; i < t->count; i++)
            table_link(t, i);
    }
    Entry *e = &t->entries[t->count];
    e->s = s;
    e->n = n;
    e->val = val;
    e->loc = loc;
    table_link(t, t->count++);
}

/* Removes the entries added after the table had `mark` entries. */
static void table_pop(NameTable *t, int mark) {
    while (t->count > mark) {
        Entry *e = &t->entries[--t->count];
        unsigned b = hash_name(e->s, e->n) & (unsigned)(t->nbuckets - 1);
        t->buckets[b] = e->next; /* the newest entry heads its bucket */
    }
}

/* ---- lexing ---- */

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
static bool is_ident_char(char c) {
    return is_ident_start(c) || is_digit(c);
}
static bool is_name_char(char c) {
    return is_ident_char(c) || c == '.' || c == '$' || c == '-';
}

static char peek_at(const Parser *p, size_t pos) {
    return pos < p->src->len ? p->src->text[pos] : 0;
}
static bool at_end(const Parser *p, size_t pos) {
    return pos >= p->src->len;
}

static void skip_space(Parser *p) {
    LexState *l = &p->lex;
    const char *t = p->src->text;
    size_t len = p->src->len;
    while (l->pos < len) {
        char c = t[l->pos];
        if (c == '\n') {
            l->pos++;
            l->line++;
            l->line_start = l->pos;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            l->pos++;
        } else if (c == '/' && l->pos + 1 < len && t[l->pos + 1] == '/') {
            while (l->pos < len && t[l->pos] != '\n')
                l->pos++;
        } else {
            break;
        }
    }
}

/* Scans a quoted string starting at pos (the '"'); returns the offset after
 * the closing quote, or 0 when the string is not terminated on its line. */
static size_t scan_string(const Parser *p, size_t pos) {
    pos++;
    while (!at_end(p, pos)) {
        char c = peek_at(p, pos);
        if (c == '"')
            return pos + 1;
        if (c == '\n')
            return 0;
        if (c == '\\') {
            pos++;
            if (at_end(p, pos) || peek_at(p, pos) == '\n')
                return 0;
        }
        pos++;
    }
    return 0;
}

static size_t scan_names(const Parser *p, size_t pos) {
    while (!at_end(p, pos) && is_name_char(peek_at(p, pos)))
        pos++;
    return pos;
}

/* -?digits[.digits*][(e|E)[+-]digits]; returns the end, sets *is_float. */
static size_t scan_number(const Parser *p, size_t pos, bool *is_float) {
    *is_float = false;
    if (peek_at(p, pos) == '-')
        pos++;
    while (!at_end(p, pos) && is_digit(peek_at(p, pos)))
        pos++;
    if (peek_at(p, pos) == '.' && !at_end(p, pos)) {
        *is_float = true;
        pos++;
        while (!at_end(p, pos) && is_digit(peek_at(p, pos)))
            pos++;
    }
    char e = peek_at(p, pos);
    if ((e == 'e' || e == 'E') && !at_end(p, pos)) {
        size_t q = pos + 1;
        if (peek_at(p, q) == '+' || peek_at(p, q) == '-')
            q++;
        if (!at_end(p, q) && is_digit(peek_at(p, q))) {
            *is_float = true;
            pos = q;
            while (!at_end(p, pos) && is_digit(peek_at(p, pos)))
                pos++;
        }
    }
    return pos;
}

/* Lexes the next token into p->tok; never reports (T_ERROR carries the
 * message in p->lex_error) and always consumes at least one byte unless at
 * the end. */
static void lex(Parser *p) {
    skip_space(p);
    LexState *l = &p->lex;
    const char *t = p->src->text;
    size_t start = l->pos;
    Tok *k = &p->tok;
    k->s = t + start;
    k->line = l->line;
    k->col = (int)(start - l->line_start) + 1;
    if (at_end(p, start)) {
        k->kind = T_EOF;
        k->n = 0;
        return;
    }
    char c = t[start];
    char c1 = peek_at(p, start + 1);
    size_t end = start + 1;
    TokKind kind = T_ERROR;
    p->lex_error = NULL;
    switch (c) {
    case '(': kind = T_LPAREN; break;
    case ')': kind = T_RPAREN; break;
    case '{': kind = T_LBRACE; break;
    case '}': kind = T_RBRACE; break;
    case '[': kind = T_LBRACKET; break;
    case ']': kind = T_RBRACKET; break;
    case '<': kind = T_LT; break;
    case '>': kind = T_GT; break;
    case ',': kind = T_COMMA; break;
    case ':': kind = T_COLON; break;
    case '=': kind = T_EQUAL; break;
    case '%':
    case '#':
    case '^':
        end = scan_names(p, start + 1);
        if (end == start + 1)
            p->lex_error = c == '%'   ? "expected a value name after '%'"
                           : c == '#' ? "expected a layout name after '#'"
                                      : "expected a block name after '^'";
        else
            kind = c == '%' ? T_VALUE : c == '#' ? T_HASH : T_CARET;
        break;
    case '@':
        if (c1 == '"' && !at_end(p, start + 1)) {
            size_t e = scan_string(p, start + 1);
            if (e) {
                end = e;
                kind = T_SYMBOL;
            } else {
                p->lex_error = "unterminated string";
            }
        } else {
            end = scan_names(p, start + 1);
            if (end == start + 1)
                p->lex_error = "expected a function name after '@'";
            else
                kind = T_SYMBOL;
        }
        break;
    case '"': {
        size_t e = scan_string(p, start);
        if (e) {
            end = e;
            kind = T_STRING;
        } else {
            p->lex_error = "unterminated string";
        }
        break;
    }
    case '-':
        if (c1 == '>' && !at_end(p, start + 1)) {
            end = start + 2;
            kind = T_ARROW;
        } else if (is_digit(c1) && !at_end(p, start + 1)) {
            bool f;
            end = scan_number(p, start, &f);
            kind = f ? T_FLOAT : T_INT;
        } else if (start + 4 <= p->src->len && memcmp(t + start + 1, "inf", 3) == 0 &&
                   !(start + 4 < p->src->len && is_ident_char(t[start + 4]))) {
            end = start + 4;
            kind = T_FLOAT;
        } else {
            p->lex_error = "unexpected character '-'";
        }
        break;
    default:
        if (is_digit(c)) {
            bool f;
            end = scan_number(p, start, &f);
            kind = f ? T_FLOAT : T_INT;
        } else if (is_ident_start(c)) {
            while (!at_end(p, end) && is_ident_char(t[end]))
                end++;
            kind = T_IDENT;
        } else {
            p->lex_error = "unexpected character";
        }
        break;
    }
    k->kind = kind;
    k->n = end - start;
    l->pos = end;
}

/* ---- errors ---- */

static SrcLoc loc_of(const Parser *p, const Tok *t) {
    SrcLoc l = {p->src, t->line, t->col};
    return l;
}

/* The token as the user wrote it, for "saw ..." (at most 24 bytes,
 * non-printable bytes as '?'). */
static const char *tok_text(const Parser *p, const Tok *t, char *buf, size_t size) {
    if (t->kind == T_EOF)
        return "end of file";
    size_t n = t->n ? t->n : 1;
    if (n > 24)
        n = 24;
    if (n + 3 > size)
        n = size - 3;
    size_t j = 0;
    buf[j++] = '\'';
    for (size_t i = 0; i < n && t->s + i < p->src->text + p->src->len; i++) {
        unsigned char c = (unsigned char)t->s[i];
        buf[j++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[j++] = '\'';
    buf[j] = 0;
    return buf;
}

static _Noreturn void fail(Parser *p) {
    p->errors++;
    longjmp(p->fail, 1);
}

#define ERROR_AT(p, tokp, ...)                                                                                         \
    do {                                                                                                               \
        diag_error((p)->diags, loc_of((p), (tokp)), __VA_ARGS__);                                                      \
        fail(p);                                                                                                       \
    } while (0)

/* "expected X, saw Y" at the current token. */
static _Noreturn void expected(Parser *p, const char *what) {
    char buf[32];
    diag_error(p->diags, loc_of(p, &p->tok), "expected %s, saw %s", what, tok_text(p, &p->tok, buf, sizeof buf));
    fail(p);
}

/* Moves to the next token; a lexical error is reported here. */
static void advance(Parser *p) {
    lex(p);
    if (p->tok.kind == T_ERROR) {
        if (p->lex_error && strcmp(p->lex_error, "unexpected character") == 0) {
            unsigned char c = (unsigned char)p->tok.s[0];
            if (c >= 0x20 && c < 0x7f)
                ERROR_AT(p, &p->tok, "unexpected character '%c'", c);
            ERROR_AT(p, &p->tok, "unexpected byte 0x%02x", c);
        }
        ERROR_AT(p, &p->tok, "%s", p->lex_error ? p->lex_error : "bad token");
    }
}

/* The token after the current one (errors show up as T_ERROR). */
static Tok peek(Parser *p, int ahead) {
    LexState save = p->lex;
    Tok cur = p->tok;
    const char *err = p->lex_error;
    for (int i = 0; i < ahead; i++)
        lex(p);
    Tok t = p->tok;
    p->lex = save;
    p->tok = cur;
    p->lex_error = err;
    return t;
}

static bool tok_is(const Tok *t, TokKind kind, const char *text) {
    return t->kind == kind && strlen(text) == t->n && memcmp(t->s, text, t->n) == 0;
}

static void expect(Parser *p, TokKind kind, const char *what) {
    if (p->tok.kind != kind)
        expected(p, what);
    advance(p);
}

/* Expects the token closing `open`, as in "expected ')' to close '(' at 3:9, saw ';'". */
static void expect_close(Parser *p, TokKind kind, const char *close, const Tok *open) {
    if (p->tok.kind == kind) {
        advance(p);
        return;
    }
    char buf[32];
    diag_error(p->diags, loc_of(p, &p->tok), "expected '%s' to close '%.*s' at %d:%d, saw %s", close, (int)open->n,
               open->s, open->line, open->col, tok_text(p, &p->tok, buf, sizeof buf));
    fail(p);
}

/* ---- scratch strings ---- */

static char *scratch(Parser *p, size_t n) {
    p->str = grow(p->str, &p->cap_str, n + 1, 1);
    return p->str;
}

/* A NUL-terminated copy of s[0..n) in the scratch string. */
static const char *cstr(Parser *p, const char *s, size_t n) {
    char *d = scratch(p, n);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes the quoted string starting at t->s + skip into the scratch
 * string, its length in *len: escapes \\ \" \n \t \XX (two hex digits,
 * not 00, so the result holds no NUL). */
static const char *decode_string_scratch(Parser *p, const Tok *t, size_t skip, size_t *len) {
    const char *s = t->s + skip + 1, *end = t->s + t->n - 1;
    char *d = scratch(p, (size_t)(end - s));
    size_t j = 0;
    while (s < end) {
        char c = *s++;
        if (c != '\\') {
            d[j++] = c;
            continue;
        }
        char e = *s++;
        if (e == '\\' || e == '"') {
            d[j++] = e;
        } else if (e == 'n') {
            d[j++] = '\n';
        } else if (e == 't') {
            d[j++] = '\t';
        } else {
            int h = hexval(e), l = s < end ? hexval(*s) : -1;
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                ERROR_AT(p, t, "bad escape in string (use \\\\, \\\", \\n, \\t or two hex digits other than 00)");
            s++;
            d[j++] = (char)(h * 16 + l);
        }
    }
    d[j] = 0;
    *len = j;
    return d;
}

/* The decoded string of t (see decode_string_scratch) in the module arena. */
static const char *decode_string(Parser *p, const Tok *t, size_t skip) {
    size_t n;
    const char *d = decode_string_scratch(p, t, skip, &n);
    return arena_strndup(&p->m->arena, d, n);
}

/* The name of a T_SYMBOL token, in the module arena. */
static const char *symbol_name(Parser *p, const Tok *t) {
    if (t->n > 1 && t->s[1] == '"')
        return decode_string(p, t, 1);
    return arena_strndup(&p->m->arena, t->s + 1, t->n - 1);
}

/* ---- numbers ---- */

static int64_t int_value(Parser *p, const Tok *t) {
    const char *s = cstr(p, t->s, t->n);
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end)
        ERROR_AT(p, t, "integer %s does not fit in 64 bits", s);
    return (int64_t)v;
}

static double float_value(Parser *p, const Tok *t) {
    if (tok_is(t, T_FLOAT, "-inf"))
        return -(double)INFINITY;
    return strtod(cstr(p, t->s, t->n), NULL); /* out of range gives +-inf or 0: fine */
}

/* An integer in [lo, hi] at the current token; `what` names it in messages
 * ("'dim'", "an entry of 'spt'"). */
static int small_int(Parser *p, int lo, int hi, const char *what) {
    if (p->tok.kind != T_INT) {
        char buf[96];
        snprintf(buf, sizeof buf, "an integer for %s", what);
        expected(p, buf);
    }
    int64_t v = int_value(p, &p->tok);
    if (v < lo || v > hi)
        ERROR_AT(p, &p->tok, "%s must be in %d..%d, got %lld", what, lo, hi, (long long)v);
    advance(p);
    return (int)v;
}

/* ==== types and layouts ==== */

static const Layout *parse_layout(Parser *p, int depth);

/* int-list ::= '[' [INT (',' INT)*] ']'   (at most IR_MAX_RANK entries, each in lo..hi) */
static int parse_small_list(Parser *p, int *out, int max, int lo, int hi, const char *field) {
    Tok open = p->tok;
    expect(p, T_LBRACKET, "'['");
    int n = 0;
    if (p->tok.kind != T_RBRACKET) {
        for (;;) {
            if (n == max)
                ERROR_AT(p, &p->tok, "'%s' has more than %d entries", field, max);
            char what[64];
            snprintf(what, sizeof what, "an entry of '%s'", field);
            out[n++] = small_int(p, lo, hi, what);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
    }
    expect_close(p, T_RBRACKET, "]", &open);
    return n;
}

static bool is_permutation(const int *v, int n) {
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]])
            return false;
        seen[v[i]] = true;
    }
    return true;
}

static const char *const layout_fields[][4] = {
    [LAYOUT_BLOCKED] = {"spt", "tpw", "wpc", "order"},
    [LAYOUT_SLICE] = {"dim", "parent", NULL, NULL},
    [LAYOUT_MMA] = {"version", "wpc", "instr", NULL},
    [LAYOUT_DOT_OP] = {"idx", "parent", "kwidth", NULL},
    [LAYOUT_SHARED] = {"vec", "per_phase", "max_phase", "order"},
    [LAYOUT_NVMMA_SHARED] = {"swizzle", "order", NULL, NULL},
};

/* layout-lit ::= '#' KIND '<' IDENT '=' field-value (',' IDENT '=' field-value)* '>'
 * (the '#KIND' token is current; fields in any order, each exactly once) */
static const Layout *parse_layout_literal(Parser *p, LayoutKind kind, int depth) {
    Tok start = p->tok;
    const char *kname = ir_layout_kind_name(kind);
    advance(p);
    Tok open = p->tok;
    expect(p, T_LT, "'<'");
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = kind;
    int lists[4][IR_MAX_RANK] = {{0}};
    int list_len[4] = {0, 0, 0, 0};
    bool was_list[4] = {false, false, false, false};
    int ints[4] = {0, 0, 0, 0};
    const Layout *parent = NULL;
    bool seen[4] = {false, false, false, false};
    for (;;) {
        if (p->tok.kind != T_IDENT)
            expected(p, "a layout field name");
        Tok key = p->tok;
        int f = -1;
        for (int i = 0; i < 4; i++)
            if (layout_fields[kind][i] && tok_is(&key, T_IDENT, layout_fields[kind][i]))
                f = i;
        if (f < 0)
            ERROR_AT(p, &key, "unknown field '%.*s' in a #%s layout", (int)key.n, key.s, kname);
        if (seen[f])
            ERROR_AT(p, &key, "duplicate field '%s' in a #%s layout", layout_fields[kind][f], kname);
        seen[f] = true;
        advance(p);
        expect(p, T_EQUAL, "'='");
        const char *fname = layout_fields[kind][f];
        if (strcmp(fname, "parent") == 0)
            parent = parse_layout(p, depth + 1);
        else if ((was_list[f] = p->tok.kind == T_LBRACKET))
            list_len[f] = parse_small_list(p, lists[f], strcmp(fname, "instr") == 0 ? 3 : IR_MAX_RANK, 0,
                                           MAX_LAYOUT_PARAM, fname);
        else {
            char what[32];
            snprintf(what, sizeof what, "'%s'", fname);
            ints[f] = small_int(p, 0, MAX_LAYOUT_PARAM, what);
        }
        if (p->tok.kind != T_COMMA)
            break;
        advance(p);
    }
    Tok close = p->tok;
    expect_close(p, T_GT, ">", &open);
    for (int i = 0; i < 4; i++)
        if (layout_fields[kind][i] && !seen[i])
            ERROR_AT(p, &close, "missing field '%s' in a #%s layout", layout_fields[kind][i], kname);
    /* The fields that are lists, and those that are not, per kind. */
    static const bool is_list[][4] = {
        [LAYOUT_BLOCKED] = {true, true, true, true},
        [LAYOUT_SLICE] = {false, false},
        [LAYOUT_MMA] = {false, true, true},
        [LAYOUT_DOT_OP] = {false, false, false},
        [LAYOUT_SHARED] = {false, false, false, true},
        [LAYOUT_NVMMA_SHARED] = {false, true},
    };
    for (int i = 0; i < 4; i++) {
        const char *fname = layout_fields[kind][i];
        if (!fname || strcmp(fname, "parent") == 0)
            continue;
        if (is_list[kind][i] && list_len[i] == 0)
            ERROR_AT(p, &start, "'%s' of a #%s layout must be a non-empty list", fname, kname);
        if (!is_list[kind][i] && was_list[i])
            ERROR_AT(p, &start, "'%s' of a #%s layout must be an integer", fname, kname);
    }
    switch (kind) {
    case LAYOUT_BLOCKED:
        l.rank = list_len[0];
        for (int i = 1; i < 4; i++)
            if (list_len[i] != l.rank)
                ERROR_AT(p, &start, "'%s' has %d entries but 'spt' has %d", layout_fields[kind][i], list_len[i],
                         l.rank);
        for (int i = 0; i < l.rank; i++) {
            if (lists[0][i] < 1 || lists[1][i] < 1 || lists[2][i] < 1)
                ERROR_AT(p, &start, "'spt', 'tpw' and 'wpc' entries must be at least 1");
            l.blocked.spt[i] = lists[0][i];
            l.blocked.tpw[i] = lists[1][i];
            l.blocked.wpc[i] = lists[2][i];
            l.blocked.order[i] = lists[3][i];
        }
        if (!is_permutation(lists[3], l.rank))
            ERROR_AT(p, &start, "'order' must be a permutation of 0..%d", l.rank - 1);
        break;
    case LAYOUT_SLICE:
        if (parent->kind == LAYOUT_SHARED || parent->kind == LAYOUT_NVMMA_SHARED)
            ERROR_AT(p, &start, "the parent of a #slice layout cannot be a shared-memory layout");
        if (parent->rank < 2)
            ERROR_AT(p, &start, "the parent of a #slice layout must have rank 2 or more");
        if (ints[0] >= parent->rank)
            ERROR_AT(p, &start, "slice dim %d is out of range for a parent of rank %d", ints[0], parent->rank);
        l.rank = parent->rank - 1;
        l.slice.dim = ints[0];
        l.slice.parent = parent;
        break;
    case LAYOUT_MMA:
        if (ints[0] != 2 && ints[0] != 3)
            ERROR_AT(p, &start, "mma version must be 2 or 3");
        if (list_len[2] != 3)
            ERROR_AT(p, &start, "'instr' must be [m, n, k]");
        l.rank = list_len[1];
        l.mma.version = ints[0];
        for (int i = 0; i < l.rank; i++) {
            if (lists[1][i] < 1)
                ERROR_AT(p, &start, "'wpc' entries must be at least 1");
            l.mma.wpc[i] = lists[1][i];
        }
        for (int i = 0; i < 3; i++)
            l.mma.instr[i] = lists[2][i];
        break;
    case LAYOUT_DOT_OP:
        if (ints[0] > 1)
            ERROR_AT(p, &start, "dot_op idx must be 0 (A) or 1 (B)");
        if (parent->kind == LAYOUT_SHARED || parent->kind == LAYOUT_NVMMA_SHARED)
            ERROR_AT(p, &start, "the parent of a #dot_op layout cannot be a shared-memory layout");
        l.rank = parent->rank;
        l.dot_op.idx = ints[0];
        l.dot_op.parent = parent;
        l.dot_op.kwidth = ints[2];
        break;
    case LAYOUT_SHARED:
        if (ints[0] < 1 || ints[1] < 1 || ints[2] < 1)
            ERROR_AT(p, &start, "'vec', 'per_phase' and 'max_phase' must be at least 1");
        l.rank = list_len[3];
        if (!is_permutation(lists[3], l.rank))
            ERROR_AT(p, &start, "'order' must be a permutation of 0..%d", l.rank - 1);
        l.shared.vec = ints[0];
        l.shared.per_phase = ints[1];
        l.shared.max_phase = ints[2];
        for (int i = 0; i < l.rank; i++)
            l.shared.order[i] = lists[3][i];
        break;
    case LAYOUT_NVMMA_SHARED:
        if (ints[0] != 32 && ints[0] != 64 && ints[0] != 128)
            ERROR_AT(p, &start, "'swizzle' of a #nvmma_shared layout must be 32, 64 or 128 (bytes)");
        l.rank = list_len[1];
        if (l.rank < 2 || !is_permutation(lists[1], l.rank))
            ERROR_AT(p, &start, "'order' must be a permutation of 0..%d, of rank 2 or more", l.rank - 1);
        l.nvmma.swizzle = ints[0];
        for (int i = 0; i < l.rank; i++)
            l.nvmma.order[i] = lists[1][i];
        break;
    }
    return ir_layout_intern(p->m, &l);
}

/* layout ::= layout-lit | '#' NAME   (an alias defined earlier) */
static const Layout *parse_layout(Parser *p, int depth) {
    if (p->tok.kind != T_HASH)
        expected(p, "a layout");
    if (depth > MAX_LAYOUT_DEPTH)
        ERROR_AT(p, &p->tok, "layouts nested more than %d deep", MAX_LAYOUT_DEPTH);
    Tok t = p->tok;
    const char *name = t.s + 1;
    size_t n = t.n - 1;
    if (peek(p, 1).kind == T_LT) {
        for (int k = LAYOUT_BLOCKED; k <= LAYOUT_NVMMA_SHARED; k++)
            if (strlen(ir_layout_kind_name((LayoutKind)k)) == n &&
                memcmp(ir_layout_kind_name((LayoutKind)k), name, n) == 0)
                return parse_layout_literal(p, (LayoutKind)k, depth);
        ERROR_AT(p, &t, "unknown layout kind '#%.*s' (expected blocked, slice, mma, dot_op, shared or nvmma_shared)", (int)n, name);
    }
    Entry *e = table_find(&p->aliases, name, n);
    if (!e)
        ERROR_AT(p, &t, "undefined layout alias '#%.*s'", (int)n, name);
    advance(p);
    return e->val;
}

/* scalar ::= 'i1' | 'i8' | 'i16' | 'i32' | 'i64' | 'f16' | 'bf16' | 'f32' | 'f64' */
static const IrType *parse_scalar(Parser *p, const char *what) {
    IrTypeKind k;
    if (p->tok.kind != T_IDENT || !ir_scalar_from_name(p->tok.s, p->tok.n, &k))
        expected(p, what);
    advance(p);
    return ir_type_scalar(p->m, k);
}

/* elem-type ::= scalar | 'ptr' '<' scalar '>' */
static const IrType *parse_elem_type(Parser *p) {
    if (tok_is(&p->tok, T_IDENT, "ptr")) {
        advance(p);
        Tok open = p->tok;
        expect(p, T_LT, "'<' after 'ptr'");
        const IrType *t = parse_scalar(p, "a scalar type (i1 .. f64) as the pointee");
        expect_close(p, T_GT, ">", &open);
        return ir_type_ptr(p->m, t);
    }
    return parse_scalar(p, "a type");
}

/* shaped ::= ('tile' | 'smem') '<' INT ('x' INT)* 'x' elem-type [',' layout] '>'
 * The shape is scanned byte by byte: no spaces inside `64x32xf16`. */
static const IrType *parse_shaped(Parser *p, IrTypeKind kind) {
    advance(p);
    Tok open = p->tok;
    expect(p, T_LT, kind == IR_TILE ? "'<' after 'tile'" : "'<' after 'smem'");
    if (p->tok.kind != T_INT || p->tok.s[0] == '-')
        expected(p, "a shape such as 64x32xf16");
    Tok first = p->tok;
    size_t pos = (size_t)(first.s - p->src->text);
    int64_t shape[IR_MAX_RANK];
    int rank = 0;
    int64_t numel = 1;
    for (;;) {
        Tok at = first;
        at.col = first.col + (int)(pos - (size_t)(first.s - p->src->text));
        at.s = p->src->text + pos;
        at.n = 1;
        if (at_end(p, pos) || !is_digit(peek_at(p, pos)))
            ERROR_AT(p, &at, "expected a tile dimension");
        int64_t d = 0;
        while (!at_end(p, pos) && is_digit(peek_at(p, pos))) {
            d = d * 10 + (peek_at(p, pos) - '0');
            if (d > MAX_TILE_ELEMS)
                ERROR_AT(p, &at, "tile dimension too large");
            pos++;
        }
        if (d < 1)
            ERROR_AT(p, &at, "tile dimensions must be at least 1");
        if (rank == IR_MAX_RANK)
            ERROR_AT(p, &at, "tiles have at most %d dimensions", IR_MAX_RANK);
        numel *= d;
        if (numel > MAX_TILE_ELEMS)
            ERROR_AT(p, &at, "tile has more than %lld elements", (long long)MAX_TILE_ELEMS);
        shape[rank++] = d;
        if (peek_at(p, pos) != 'x' || at_end(p, pos)) {
            at.col = first.col + (int)(pos - (size_t)(first.s - p->src->text));
            at.s = p->src->text + pos;
            ERROR_AT(p, &at, "expected 'x' after a tile dimension");
        }
        pos++;
        if (at_end(p, pos) || !is_digit(peek_at(p, pos)))
            break;
    }
    /* Resume the lexer after the last 'x' (the shape is on one line). */
    p->lex.pos = pos;
    advance(p);
    const IrType *elem = parse_elem_type(p);
    const Layout *layout = NULL;
    if (p->tok.kind == T_COMMA) {
        advance(p);
        layout = parse_layout(p, 0);
    }
    expect_close(p, T_GT, ">", &open);
    return kind == IR_TILE ? ir_type_tile(p->m, elem, rank, shape, layout)
                           : ir_type_smem(p->m, elem, rank, shape, layout);
}

/* type ::= elem-type | shaped */
static const IrType *parse_type(Parser *p) {
    if (tok_is(&p->tok, T_IDENT, "tile"))
        return parse_shaped(p, IR_TILE);
    if (tok_is(&p->tok, T_IDENT, "smem"))
        return parse_shaped(p, IR_SMEM);
    if (tok_is(&p->tok, T_IDENT, "tensormap")) {
        advance(p);
        return ir_type_tensormap(p->m);
    }
    return parse_elem_type(p);
}

/* type-list ::= type (',' type)*
 * The types go on p->types (the caller keeps the mark). */
static void parse_type_list(Parser *p) {
    for (;;) {
        const IrType *t = parse_type(p);
        PUSH(p, types, ntypes, cap_types, t);
        if (p->tok.kind != T_COMMA)
            break;
        advance(p);
    }
}

/* ==== attributes ==== */

/* attr-value ::= INT | FLOAT | 'inf' | 'nan' | IDENT | STRING | SYMBOL | '[' [INT (',' INT)*] ']' */
static void parse_attr_value(Parser *p, IrAttr *a) {
    Tok t = p->tok;
    switch (t.kind) {
    case T_INT:
        a->kind = IR_ATTR_INT;
        a->i = int_value(p, &t);
        break;
    case T_FLOAT:
        a->kind = IR_ATTR_FLOAT;
        a->f = float_value(p, &t);
        break;
    case T_IDENT:
        if (tok_is(&t, T_IDENT, "inf") || tok_is(&t, T_IDENT, "nan")) {
            a->kind = IR_ATTR_FLOAT;
            a->f = t.s[0] == 'i' ? (double)INFINITY : (double)NAN;
        } else {
            a->kind = IR_ATTR_WORD;
            a->s = arena_strndup(&p->m->arena, t.s, t.n);
        }
        break;
    case T_STRING:
        a->kind = IR_ATTR_STRING;
        a->s = decode_string(p, &t, 0);
        break;
    case T_SYMBOL:
        a->kind = IR_ATTR_SYMBOL;
        a->s = symbol_name(p, &t);
        break;
    case T_LBRACKET: {
        advance(p);
        p->nints = 0;
        if (p->tok.kind != T_RBRACKET) {
            for (;;) {
                if (p->tok.kind != T_INT)
                    expected(p, "an integer in the list");
                PUSH(p, ints, nints, cap_ints, int_value(p, &p->tok));
                advance(p);
                if (p->tok.kind != T_COMMA)
                    break;
                advance(p);
            }
        }
        expect_close(p, T_RBRACKET, "]", &t);
        if (p->nints > (size_t)INT32_MAX)
            ERROR_AT(p, &t, "list too long");
        a->kind = IR_ATTR_INTS;
        a->list.n = (int)p->nints;
        int64_t *v = ARENA_ARRAY(&p->m->arena, int64_t, p->nints ? p->nints : 1);
        if (p->nints)
            memcpy(v, p->ints, sizeof(int64_t) * p->nints);
        a->list.v = v;
        return;
    }
    default: expected(p, "an attribute value");
    }
    advance(p);
}

/* attr-dict ::= '{' [IDENT '=' attr-value (',' IDENT '=' attr-value)*] '}'
 * The attributes go to *num, *out in the module arena, in written order. */
static void parse_attr_dict(Parser *p, int *num, IrAttr **out) {
    Tok open = p->tok;
    expect(p, T_LBRACE, "'{'");
    p->nattrs = 0;
    if (p->tok.kind != T_RBRACE) {
        for (;;) {
            if (p->tok.kind != T_IDENT)
                expected(p, "an attribute name");
            Tok key = p->tok;
            for (size_t i = 0; i < p->nattrs; i++)
                if (strlen(p->attrs[i].name) == key.n && memcmp(p->attrs[i].name, key.s, key.n) == 0)
                    ERROR_AT(p, &key, "duplicate attribute '%.*s'", (int)key.n, key.s);
            if (p->nattrs == MAX_ATTRS)
                ERROR_AT(p, &key, "more than %d attributes", MAX_ATTRS);
            advance(p);
            expect(p, T_EQUAL, "'=' after the attribute name");
            IrAttr a;
            memset(&a, 0, sizeof a);
            a.name = arena_strndup(&p->m->arena, key.s, key.n);
            parse_attr_value(p, &a);
            PUSH(p, attrs, nattrs, cap_attrs, a);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
    }
    expect_close(p, T_RBRACE, "}", &open);
    IrAttr *arr = ARENA_ARRAY(&p->m->arena, IrAttr, p->nattrs ? p->nattrs : 1);
    if (p->nattrs)
        memcpy(arr, p->attrs, sizeof(IrAttr) * p->nattrs);
    *num = (int)p->nattrs;
    *out = arr;
}

/* ==== values ==== */

static bool digits_only(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

/* The name hint of a %name token (NULL for %0-style numbers), NUL-terminated
 * in the scratch string. */
static const char *hint_of(Parser *p, const Tok *t) {
    if (digits_only(t->s + 1, t->n - 1))
        return NULL;
    return cstr(p, t->s + 1, t->n - 1);
}

/* Makes the value named by token t (a T_VALUE) visible. */
static void define_value(Parser *p, const Tok *t, IrValue *v) {
    Entry *e = table_find(&p->values, t->s + 1, t->n - 1);
    if (e) {
        diag_error(p->diags, loc_of(p, t), "redefinition of value %.*s", (int)t->n, t->s);
        diag_note(p->diags, e->loc, "previous definition is here");
        fail(p);
    }
    table_add(&p->values, t->s + 1, t->n - 1, v, loc_of(p, t));
}

static IrValue *use_value(Parser *p) {
    Tok t = p->tok;
    if (t.kind != T_VALUE)
        expected(p, "a value");
    Entry *e = table_find(&p->values, t.s + 1, t.n - 1);
    if (!e)
        ERROR_AT(p, &t, "use of undefined value %.*s", (int)t.n, t.s);
    advance(p);
    return e->val;
}

/* ==== locations ==== */

/* The Source of file `name` (n bytes, no NUL) for loc(...): one per distinct
 * name, in the module arena, so that the ops of one file share it as the
 * front end's do (codegen makes one DIFile per Source). It has no text:
 * diagnostics at it print no source line. */
static const Source *file_source(Parser *p, const char *name, size_t n) {
    Entry *e = table_find(&p->files, name, n);
    if (e)
        return e->val;
    Source *src = ARENA_NEW(&p->m->arena, Source);
    src->name = arena_strndup(&p->m->arena, name, n);
    table_add(&p->files, src->name, n, src, srcloc_none());
    return src;
}

/* A line or column of loc(...): an INT in 1..INT_MAX, checked digit by digit
 * so that any length of digits is an error and not an overflow. */
static int loc_number(Parser *p, const char *what) {
    Tok t = p->tok;
    if (t.kind != T_INT) {
        char buf[48];
        snprintf(buf, sizeof buf, "a %s number in 'loc'", what);
        expected(p, buf);
    }
    bool ok = t.s[0] != '-';
    int64_t v = 0;
    for (size_t i = 0; ok && i < t.n; i++) {
        v = v * 10 + (t.s[i] - '0');
        ok = v <= INT_MAX;
    }
    if (!ok || v < 1)
        ERROR_AT(p, &t, "%s number in 'loc' must be in 1..%d, got %.*s%s", what, INT_MAX, (int)(t.n > 24 ? 24 : t.n),
                 t.s, t.n > 24 ? "..." : "");
    advance(p);
    return (int)v;
}

/* loc ::= 'loc' '(' STRING ':' INT ':' INT ')' | 'loc' '(' 'unknown' ')'
 * (at the 'loc'). `unknown` is an op without a location (line 0), which
 * codegen's line info treats as part of the enclosing op. */
static SrcLoc parse_loc(Parser *p) {
    advance(p);
    Tok open = p->tok;
    expect(p, T_LPAREN, "'(' after 'loc'");
    if (tok_is(&p->tok, T_IDENT, "unknown")) {
        advance(p);
        expect_close(p, T_RPAREN, ")", &open);
        return srcloc_none();
    }
    Tok file = p->tok;
    if (file.kind != T_STRING)
        expected(p, "a file name (a string) or 'unknown' in 'loc'");
    size_t n;
    const char *name = decode_string_scratch(p, &file, 0, &n);
    const Source *src = file_source(p, name, n);
    advance(p);
    expect(p, T_COLON, "':' after the file name in 'loc'");
    int line = loc_number(p, "line");
    expect(p, T_COLON, "':' after the line number in 'loc'");
    int col = loc_number(p, "column");
    expect_close(p, T_RPAREN, ")", &open);
    SrcLoc l = {src, line, col};
    return l;
}

/* ==== operations and regions ==== */

static void parse_region(Parser *p, IrBlock *b, bool allow_head);

/* True if the current token starts VALUE (',' VALUE)* '=' — the result list
 * of an op, not an operand list. */
static bool at_result_list(Parser *p) {
    LexState save = p->lex;
    Tok cur = p->tok;
    bool result = false;
    while (p->tok.kind == T_VALUE) {
        lex(p);
        if (p->tok.kind == T_EQUAL) {
            result = true;
            break;
        }
        if (p->tok.kind != T_COMMA)
            break;
        lex(p);
    }
    p->lex = save;
    p->tok = cur;
    return result;
}

static bool at_func_start(Parser *p) {
    return (tok_is(&p->tok, T_IDENT, "kernel") || tok_is(&p->tok, T_IDENT, "func")) && peek(p, 1).kind == T_SYMBOL;
}

/* op ::= [VALUE (',' VALUE)* '='] OPNAME [VALUE (',' VALUE)*] [attr-dict]
 *        [':' type-list] [loc] region*
 * No op is named `loc`, so an IDENT `loc` where the location may stand
 * cannot be the next op's name: it always starts the location. */
static void parse_op(Parser *p, IrBlock *b) {
    Tok first = p->tok;
    size_t name_mark = p->nnames;
    if (p->tok.kind == T_VALUE) {
        for (;;) {
            if (p->tok.kind != T_VALUE)
                expected(p, "a result name");
            PUSH(p, names, nnames, cap_names, p->tok);
            advance(p);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
        expect(p, T_EQUAL, "'=' after the result names");
    }
    size_t num_names = p->nnames - name_mark;
    Tok opname = p->tok;
    IrOpcode opc;
    if (opname.kind != T_IDENT)
        expected(p, "an operation name");
    if (tok_is(&opname, T_IDENT, "loc"))
        ERROR_AT(p, &opname, "unexpected 'loc': an op has one location, after its result types");
    if (!ir_opcode_from_name(opname.s, opname.n, &opc))
        ERROR_AT(p, &opname, "unknown operation '%.*s'", (int)opname.n, opname.s);
    const IrOpInfo *info = &ir_op_info[opc];
    advance(p);

    size_t val_mark = p->nvals;
    if (p->tok.kind == T_VALUE && !at_result_list(p)) {
        for (;;) {
            IrValue *v = use_value(p);
            PUSH(p, vals, nvals, cap_vals, v);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
    }
    int num_attrs = 0;
    IrAttr *attrs = NULL;
    if (p->tok.kind == T_LBRACE) {
        bool dict = info->num_regions == 0;
        if (!dict) {
            Tok t1 = peek(p, 1), t2 = peek(p, 2);
            dict = t1.kind == T_IDENT && t2.kind == T_EQUAL;
        }
        if (dict)
            parse_attr_dict(p, &num_attrs, &attrs);
    }
    size_t type_mark = p->ntypes;
    Tok colon = p->tok;
    if (p->tok.kind == T_COLON) {
        advance(p);
        parse_type_list(p);
    }
    size_t num_types = p->ntypes - type_mark;
    if (num_types != num_names) {
        if (colon.kind != T_COLON)
            ERROR_AT(p, &colon, "expected ':' and %zu result type%s for the %zu named result%s of '%s'", num_names,
                     num_names == 1 ? "" : "s", num_names, num_names == 1 ? "" : "s", info->name);
        ERROR_AT(p, &colon, "'%s' names %zu result%s but lists %zu result type%s", info->name, num_names,
                 num_names == 1 ? "" : "s", num_types, num_types == 1 ? "" : "s");
    }
    if (p->nvals - val_mark > (size_t)INT32_MAX || num_types > (size_t)INT32_MAX)
        ERROR_AT(p, &first, "too many operands or results");
    /* Without loc(...), the op is where it stands in the IR text. */
    SrcLoc loc = tok_is(&p->tok, T_IDENT, "loc") ? parse_loc(p) : loc_of(p, &first);
    size_t num_vals = p->nvals - val_mark;
    IrOp *op = ir_op_create(p->m, opc, (int)num_vals, num_vals ? p->vals + val_mark : NULL, (int)num_types,
                            num_types ? p->types + type_mark : NULL);
    op->loc = loc;
    op->num_attrs = num_attrs;
    op->attrs = attrs;
    ir_block_append(b, op);
    p->nvals = val_mark;
    p->ntypes = type_mark;

    for (int r = 0; r < op->num_regions; r++) {
        if (p->tok.kind != T_LBRACE) {
            char what[64];
            snprintf(what, sizeof what, "'{' to begin region %d of '%s'", r + 1, info->name);
            expected(p, what);
        }
        parse_region(p, op->regions[r], true);
    }
    /* Results become visible after the op, regions included. */
    for (size_t i = 0; i < num_names; i++) {
        Tok name = p->names[name_mark + i];
        IrValue *v = op->results[i];
        ir_value_set_name(p->m, v, hint_of(p, &name));
        define_value(p, &name, v);
    }
    p->nnames = name_mark;
}

/* typed-value ::= VALUE ':' type
 * A block argument or a function parameter: its name token in *name, its
 * type returned. `what` and `colon` say what was expected. */
static const IrType *parse_typed_value(Parser *p, Tok *name, const char *what, const char *colon) {
    *name = p->tok;
    if (name->kind != T_VALUE)
        expected(p, what);
    advance(p);
    expect(p, T_COLON, colon);
    return parse_type(p);
}

/* block-head ::= '^' NAME '(' [typed-value (',' typed-value)*] ')' ':' */
static void parse_block_head(Parser *p, IrBlock *b) {
    advance(p); /* ^name */
    Tok open = p->tok;
    expect(p, T_LPAREN, "'(' after the block name");
    if (p->tok.kind != T_RPAREN) {
        for (;;) {
            Tok name;
            const IrType *t = parse_typed_value(p, &name, "a block argument", "':' after the block argument");
            IrValue *v = ir_block_add_arg(p->m, b, t, hint_of(p, &name));
            define_value(p, &name, v);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
    }
    expect_close(p, T_RPAREN, ")", &open);
    expect(p, T_COLON, "':' after the block arguments");
}

/* region ::= '{' [block-head] op* '}' */
static void parse_region(Parser *p, IrBlock *b, bool allow_head) {
    Tok open = p->tok;
    if (p->region_depth >= MAX_REGION_DEPTH)
        ERROR_AT(p, &open, "regions nested more than %d deep", MAX_REGION_DEPTH);
    p->region_depth++;
    int mark = p->values.count;
    advance(p);
    if (p->tok.kind == T_CARET) {
        if (!allow_head)
            ERROR_AT(p, &p->tok, "a function body has no block head (parameters are in the signature)");
        parse_block_head(p, b);
    }
    while (p->tok.kind != T_RBRACE) {
        if (p->tok.kind == T_EOF || at_func_start(p))
            expect_close(p, T_RBRACE, "}", &open);
        parse_op(p, b);
    }
    advance(p);
    table_pop(&p->values, mark);
    p->region_depth--;
}

/* ==== functions and the module ==== */

/* func ::= ('kernel' | 'func') SYMBOL '(' [param (',' param)*] ')'
 *          ['->' '(' [type-list] ')'] ['attrs' attr-dict] [loc] region
 * param ::= typed-value [attr-dict] */
static void parse_func(Parser *p) {
    Tok kw = p->tok;
    IrFuncKind kind = tok_is(&kw, T_IDENT, "kernel") ? IR_FUNC_KERNEL : IR_FUNC_FUNC;
    advance(p);
    Tok sym = p->tok;
    if (sym.kind != T_SYMBOL)
        expected(p, "a function name (@name)");
    const char *name = symbol_name(p, &sym);
    IrFunc *prev = ir_module_find_func(p->m, name);
    if (prev) {
        diag_error(p->diags, loc_of(p, &sym), "redefinition of function @%s", name);
        diag_note(p->diags, prev->loc, "previous definition is here");
        fail(p);
    }
    IrFunc *f = ir_func_create(p->m, kind, name);
    f->loc = loc_of(p, &kw);
    p->cur_func = f;
    table_clear(&p->values);
    advance(p);
    Tok open = p->tok;
    expect(p, T_LPAREN, "'(' after the function name");
    if (p->tok.kind != T_RPAREN) {
        for (;;) {
            Tok pname;
            const IrType *t = parse_typed_value(p, &pname, "a parameter (%name: type)", "':' after the parameter name");
            IrValue *v = ir_func_add_param(f, t, hint_of(p, &pname));
            define_value(p, &pname, v);
            if (p->tok.kind == T_LBRACE)
                parse_attr_dict(p, &v->num_attrs, &v->attrs);
            if (p->tok.kind != T_COMMA)
                break;
            advance(p);
        }
    }
    expect_close(p, T_RPAREN, ")", &open);
    if (p->tok.kind == T_ARROW) {
        advance(p);
        Tok ropen = p->tok;
        expect(p, T_LPAREN, "'(' after '->'");
        size_t mark = p->ntypes;
        if (p->tok.kind != T_RPAREN)
            parse_type_list(p);
        expect_close(p, T_RPAREN, ")", &ropen);
        size_t n = p->ntypes - mark;
        ir_func_set_results(f, (int)n, n ? p->types + mark : NULL);
        p->ntypes = mark;
    }
    if (tok_is(&p->tok, T_IDENT, "attrs")) {
        advance(p);
        parse_attr_dict(p, &f->num_attrs, &f->attrs);
    }
    if (tok_is(&p->tok, T_IDENT, "loc")) {
        FuncLoc fl = {f, parse_loc(p)};
        PUSH(p, func_locs, nfunc_locs, cap_func_locs, fl);
    }
    if (p->tok.kind != T_LBRACE)
        expected(p, "'{' to begin the function body");
    parse_region(p, f->body, false);
    table_clear(&p->values);
    p->cur_func = NULL;
}

/* alias-def ::= '#' NAME '=' layout */
static void parse_alias_def(Parser *p) {
    Tok t = p->tok;
    Entry *e = table_find(&p->aliases, t.s + 1, t.n - 1);
    if (e) {
        diag_error(p->diags, loc_of(p, &t), "redefinition of layout alias '%.*s'", (int)t.n, t.s);
        diag_note(p->diags, e->loc, "previous definition is here");
        fail(p);
    }
    advance(p);
    expect(p, T_EQUAL, "'=' after the layout alias name");
    const Layout *l = parse_layout(p, 0);
    table_add(&p->aliases, t.s + 1, t.n - 1, (void *)l, loc_of(p, &t));
}

static bool at_sync_point(Parser *p) {
    if (p->tok.kind == T_HASH)
        return peek(p, 1).kind == T_EQUAL;
    return at_func_start(p);
}

/* After an error: skips to the next top-level item, at least one token
 * past the start of the item that failed. Lexical errors are skipped. */
static void recover(Parser *p) {
    p->region_depth = 0;
    p->nvals = p->ntypes = p->nnames = p->nattrs = p->nints = 0;
    table_clear(&p->values);
    if (p->cur_func) /* so that a later @name of the same name is no redefinition */
        ir_func_remove(p->m, p->cur_func);
    p->cur_func = NULL;
    for (;;) {
        if (p->tok.kind == T_EOF)
            return;
        if (p->tok.kind != T_ERROR && p->tok.s != p->item_start && at_sync_point(p))
            return;
        lex(p);
    }
}

/* module ::= (alias-def | func)* */
static void parse_module(Parser *p) {
    for (;;) {
        if (setjmp(p->fail))
            recover(p);
        if (p->tok.kind == T_BOF)
            advance(p);
        if (p->tok.kind == T_EOF)
            return;
        p->item_start = p->tok.s;
        if (p->tok.kind == T_HASH)
            parse_alias_def(p);
        else if (at_func_start(p))
            parse_func(p);
        else
            expected(p, "'kernel', 'func' or a layout alias definition");
    }
}

static void parser_free(Parser *p) {
    table_free(&p->values);
    table_free(&p->aliases);
    table_free(&p->files);
    free(p->vals);
    free(p->types);
    free(p->names);
    free(p->attrs);
    free(p->ints);
    free(p->str);
    free(p->func_locs);
    free(p);
}

IrModule *ir_parse(const Source *src, DiagList *diags) {
    Parser *p = calloc(1, sizeof *p);
    if (!p) {
        diag_error(diags, srcloc_none(), "out of memory");
        return NULL;
    }
    TcGuard g;
    if (TC_GUARD(g)) {
        diag_error(diags, srcloc_none(), "%s", g.message);
        ir_module_destroy(p->m);
        parser_free(p);
        return NULL;
    }
    p->src = src;
    p->diags = diags;
    p->lex.line = 1;
    p->tok.kind = T_BOF;
    p->m = ir_module_create();
    parse_module(p);
    tc_guard_pop(&g);
    IrModule *m = p->m;
    if (p->errors) {
        ir_module_destroy(m);
        m = NULL;
    } else {
        for (size_t i = 0; i < p->nfunc_locs; i++)
            p->func_locs[i].f->loc = p->func_locs[i].loc;
    }
    parser_free(p);
    return m;
}
