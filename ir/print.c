/*
 * print.c — the text form of the IR (docs/ir.md).
 *
 * The printer is the inverse of parse.c: what it writes, the parser reads
 * back to an equal module, and printing that module again gives the same
 * bytes, print(parse(print(m))) == print(m). Everything below serves that
 * one property and readability; nothing here changes the module.
 *
 * Names. Values carry only a name hint. The printer names each function's
 * values afresh in print order: a value without a hint gets the next number
 * (%0, %1, ...), a value with one gets the hint, or hint.1, hint.2, ... when
 * an earlier value of the same function took it. A hint is never all digits
 * (ir_value_set_name drops those), so numbers and hints cannot collide.
 * Idempotence follows: the first print makes every name unique, the parser
 * keeps unique names as hints, and the second print hands each hint back to
 * its own value. Characters that a value name cannot hold are printed as
 * '_'. Names live in a map from value to name, not in IrValue.id, so that
 * ir_print_op can be called for debugging in the middle of a pass that uses
 * the id field.
 *
 * Layouts. ir_print_module defines one alias per distinct layout at the top
 * (`#blocked = #blocked<...>`), named after its kind with a per-kind counter
 * (#blocked, #blocked1, ...), in the order the layouts are first met in a
 * walk over the module's types: parameters, function results, then op
 * results and block arguments in print order; a slice or dot_op layout's
 * parent is met just before the layout itself, so parents are defined
 * first. Layouts are interned, so the walk finds the same layouts in the same
 * order after a round trip. ir_print_func, ir_print_op and ir_print_type
 * print layouts inline (no alias table), which makes their output
 * self-contained.
 *
 * Locations. ir_print_module_locs also prints each op's and each
 * function's SrcLoc, as ` loc("file":line:col)` or ` loc(unknown)` after
 * the result types (an op) or the attributes (a function); ir_print_module
 * prints none, so that its text does not depend on where the IR came from.
 * Since the parser takes a printed location as the op's location,
 * print(parse(print(m))) == print(m) holds with locations too.
 *
 * Numbers. Integer attributes print as plain integers; floats as the
 * shortest of %.15g, %.16g, %.17g that strtod reads back to the same double,
 * with ".0" appended when the text would otherwise look like an integer.
 *
 * The tables (IrMap for pointers, a string table for names taken) are open
 * addressing in a private arena that is freed when printing ends: printing
 * is linear in the size of the module.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a string table: name -> int (pointer maps are IrMap, clone.c) ---- */

typedef struct {
    const char *key;
    int val;
} StrSlot;

typedef struct {
    StrSlot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t count;
} StrMap;

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

/* Returns the slot of key, or NULL. */
static StrSlot *strmap_find(const StrMap *m, const char *key) {
    if (!m->cap)
        return NULL;
    for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->slots[i].key)
            return NULL;
        if (strcmp(m->slots[i].key, key) == 0)
            return &m->slots[i];
    }
}

/* Sets key (which must outlive the map) to val. */
static void strmap_put(Arena *a, StrMap *m, const char *key, int val) {
    StrSlot *s = strmap_find(m, key);
    if (s) {
        s->val = val;
        return;
    }
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        StrSlot *slots = ARENA_ARRAY(a, StrSlot, cap);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].key)
                continue;
            size_t j = hash_str(m->slots[i].key) & (cap - 1);
            while (slots[j].key)
                j = (j + 1) & (cap - 1);
            slots[j] = m->slots[i];
        }
        m->slots = slots;
        m->cap = cap;
    }
    size_t j = hash_str(key) & (m->cap - 1);
    while (m->slots[j].key)
        j = (j + 1) & (m->cap - 1);
    m->slots[j].key = key;
    m->slots[j].val = val;
    m->count++;
}

/* ---- printer state ---- */

typedef struct Printer {
    Buf *out;
    Arena arena;                       /* names and tables; freed by printer_done */
    IrMap values;                      /* IrValue * -> its name, without '%' */
    StrMap used;                       /* names taken in the current function */
    StrMap suffix;                     /* hint -> next suffix to try for it */
    int next_number;                   /* next number for a value without a hint */
    bool aliases;                      /* print layouts by alias (module printing) */
    bool locs;                         /* print loc(...) on ops and functions */
    IrMap layouts;                     /* Layout * -> alias name, without '#' */
    int kind_count[LAYOUT_NVMMA_SHARED + 1]; /* aliases made per layout kind */
    const Layout **alias_order;        /* layouts in definition order */
    size_t num_aliases, cap_aliases;
} Printer;

static void printer_init(Printer *p, Buf *out) {
    memset(p, 0, sizeof *p);
    p->out = out;
    arena_init(&p->arena);
    ir_map_init(&p->values, &p->arena);
    ir_map_init(&p->layouts, &p->arena);
}

static void printer_done(Printer *p) {
    arena_free(&p->arena);
}

/* Forgets the names of the previous function: names are unique per function. */
static void reset_names(Printer *p) {
    memset(&p->used, 0, sizeof p->used);
    memset(&p->suffix, 0, sizeof p->suffix);
    p->next_number = 0;
}

static void indent(Printer *p, int level) {
    for (int i = 0; i < level; i++)
        buf_puts(p->out, "  ");
}

/* ---- names ---- */

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '$' || c == '-';
}

static bool is_plain_name(const char *s) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_name_char(*s))
            return false;
    return true;
}

static bool all_digits(const char *s) {
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Gives v its name in the current function (see the essay at the top). */
static const char *assign_name(Printer *p, const IrValue *v) {
    char *hint = NULL;
    if (v->name && *v->name) {
        hint = arena_strdup(&p->arena, v->name);
        for (char *c = hint; *c; c++)
            if (!is_name_char(*c))
                *c = '_';
        if (all_digits(hint))
            hint = NULL; /* cannot happen through ir_value_set_name */
    }
    const char *name;
    if (!hint) {
        name = arena_printf(&p->arena, "%d", p->next_number++);
    } else if (!strmap_find(&p->used, hint)) {
        name = hint;
    } else {
        StrSlot *s = strmap_find(&p->suffix, hint);
        int k = s ? s->val : 1;
        char *cand;
        for (;; k++) {
            cand = arena_printf(&p->arena, "%s.%d", hint, k);
            if (!strmap_find(&p->used, cand))
                break;
        }
        strmap_put(&p->arena, &p->suffix, hint, k + 1);
        name = cand;
    }
    strmap_put(&p->arena, &p->used, name, 1);
    ir_map_put(&p->values, v, (void *)name);
    return name;
}

static const char *value_name(Printer *p, const IrValue *v) {
    const char *n = ir_map_get(&p->values, v);
    return n ? n : assign_name(p, v);
}

static void print_value(Printer *p, const IrValue *v) {
    if (!v) {
        buf_puts(p->out, "%<null>"); /* broken IR in a debugging dump */
        return;
    }
    buf_printf(p->out, "%%%s", value_name(p, v));
}

/* Names a block's values in print order without printing them. */
static void name_block(Printer *p, const IrBlock *b) {
    for (int i = 0; i < b->num_args; i++)
        value_name(p, b->args[i]);
    for (const IrOp *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_results; i++)
            value_name(p, op->results[i]);
        for (int r = 0; r < op->num_regions; r++)
            name_block(p, op->regions[r]);
    }
}

/* ---- numbers, strings, symbols ---- */

void ir_print_number(Buf *out, double v) {
    if (isnan(v)) {
        buf_puts(out, "nan");
        return;
    }
    if (isinf(v)) {
        buf_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    char s[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    buf_puts(out, s);
    if (!strpbrk(s, ".e"))
        buf_puts(out, ".0");
}

/* A quoted string: \\ \" \n \t, other bytes outside 0x20..0x7e as \XX. */
static void print_string(Buf *out, const char *s) {
    buf_puts(out, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(out, "\\%c", c);
        else if (c == '\n')
            buf_puts(out, "\\n");
        else if (c == '\t')
            buf_puts(out, "\\t");
        else if (c < 0x20 || c >= 0x7f)
            buf_printf(out, "\\%02X", c);
        else
            buf_append(out, (const char *)&c, 1);
    }
    buf_puts(out, "\"");
}

/* @name, or @"name" when the name holds other characters. */
static void print_symbol(Buf *out, const char *name) {
    buf_puts(out, "@");
    if (name && is_plain_name(name))
        buf_puts(out, name);
    else
        print_string(out, name ? name : "");
}

/* ` loc("file":line:col)` when p prints locations and l names a file and a
 * line, ` loc(unknown)` for any other location: printing nothing would give
 * the op its place in the IR text when the text is parsed again. A column
 * the parser would refuse (0: none known) prints as 1, so that what is
 * printed always reads back. */
static void print_loc(Printer *p, SrcLoc l) {
    if (!p->locs)
        return;
    if (!l.src || !l.src->name || l.line <= 0) {
        buf_puts(p->out, " loc(unknown)");
        return;
    }
    buf_puts(p->out, " loc(");
    print_string(p->out, l.src->name);
    buf_printf(p->out, ":%d:%d)", l.line, l.col > 0 ? l.col : 1);
}

/* ---- layouts and types ---- */

static void print_layout(Printer *p, Buf *out, const Layout *l);

static void print_parent_layout(void *p, Buf *out, const Layout *parent) {
    print_layout(p, out, parent);
}

/* The literal form of l (layout.c); parents by alias when p prints aliases. */
static void print_layout_literal(Printer *p, Buf *out, const Layout *l) {
    ir_layout_print_with(out, l, print_parent_layout, p);
}

static void print_layout(Printer *p, Buf *out, const Layout *l) {
    if (!l) {
        buf_puts(out, "#<null>");
        return;
    }
    const char *alias = p && p->aliases ? ir_map_get(&p->layouts, l) : NULL;
    if (alias)
        buf_printf(out, "#%s", alias);
    else
        print_layout_literal(p, out, l);
}

static void print_type_to(Printer *p, Buf *out, const IrType *t) {
    if (!t) {
        buf_puts(out, "<null>");
        return;
    }
    switch (t->kind) {
    case IR_PTR:
        buf_puts(out, "ptr<");
        print_type_to(p, out, t->elem);
        buf_puts(out, ">");
        return;
    case IR_TILE:
    case IR_SMEM:
        buf_puts(out, t->kind == IR_TILE ? "tile<" : "smem<");
        for (int i = 0; i < t->rank; i++)
            buf_printf(out, "%" PRId64 "x", t->shape[i]);
        print_type_to(p, out, t->elem);
        if (t->layout) {
            buf_puts(out, ", ");
            print_layout(p, out, t->layout);
        }
        buf_puts(out, ">");
        return;
    case IR_TENSORMAP: buf_puts(out, "tensormap"); return;
    default: buf_puts(out, ir_scalar_name(t->kind)); return;
    }
}

void ir_print_type(Buf *out, const IrType *t) {
    print_type_to(NULL, out, t);
}

/* ---- layout aliases (module printing) ---- */

static void collect_layout(Printer *p, const Layout *l) {
    if (!l || ir_map_get(&p->layouts, l))
        return;
    if (l->kind == LAYOUT_SLICE)
        collect_layout(p, l->slice.parent);
    else if (l->kind == LAYOUT_DOT_OP)
        collect_layout(p, l->dot_op.parent);
    int k = p->kind_count[l->kind]++;
    const char *kind = ir_layout_kind_name(l->kind);
    const char *name = k ? arena_printf(&p->arena, "%s%d", kind, k) : kind;
    ir_map_put(&p->layouts, l, (void *)name);
    if (p->num_aliases == p->cap_aliases) {
        size_t cap = p->cap_aliases ? p->cap_aliases * 2 : 16;
        p->alias_order =
            arena_grow(&p->arena, p->alias_order, sizeof(Layout *) * p->cap_aliases, sizeof(Layout *) * cap);
        p->cap_aliases = cap;
    }
    p->alias_order[p->num_aliases++] = l;
}

static void collect_type(Printer *p, const IrType *t) {
    if (t && (t->kind == IR_TILE || t->kind == IR_SMEM))
        collect_layout(p, t->layout);
}

static void collect_block(Printer *p, const IrBlock *b) {
    for (int i = 0; i < b->num_args; i++)
        collect_type(p, b->args[i]->type);
    for (const IrOp *op = b->first; op; op = op->next) {
        for (int i = 0; i < op->num_results; i++)
            collect_type(p, op->results[i]->type);
        for (int r = 0; r < op->num_regions; r++)
            collect_block(p, op->regions[r]);
    }
}

static void collect_func(Printer *p, const IrFunc *f) {
    for (int i = 0; i < f->body->num_args; i++)
        collect_type(p, f->body->args[i]->type);
    for (int i = 0; i < f->num_results; i++)
        collect_type(p, f->result_types[i]);
    collect_block(p, f->body);
}

/* ---- attributes ---- */

static void print_attr_value(Buf *out, const IrAttr *a) {
    switch (a->kind) {
    case IR_ATTR_INT: buf_printf(out, "%" PRId64, a->i); break;
    case IR_ATTR_FLOAT: ir_print_number(out, a->f); break;
    case IR_ATTR_WORD: buf_puts(out, a->s ? a->s : ""); break;
    case IR_ATTR_STRING: print_string(out, a->s ? a->s : ""); break;
    case IR_ATTR_SYMBOL: print_symbol(out, a->s); break;
    case IR_ATTR_INTS:
        buf_puts(out, "[");
        for (int i = 0; i < a->list.n; i++)
            buf_printf(out, "%s%" PRId64, i ? ", " : "", a->list.v[i]);
        buf_puts(out, "]");
        break;
    }
}

/* {a = 1, b = [1, 2]} in stored order; nothing when there are none. */
static void print_attr_dict(Buf *out, int n, const IrAttr *attrs) {
    if (n == 0)
        return;
    buf_puts(out, " {");
    for (int i = 0; i < n; i++) {
        buf_printf(out, "%s%s = ", i ? ", " : "", attrs[i].name);
        print_attr_value(out, &attrs[i]);
    }
    buf_puts(out, "}");
}

/* ---- operations, blocks, functions ---- */

static void print_op_at(Printer *p, const IrOp *op, int level);

/* A region: " {", the block head when the block has arguments (at the
 * level of the op that owns it), the ops one level deeper, "}". */
static void print_region(Printer *p, const IrBlock *b, int level) {
    Buf *out = p->out;
    buf_puts(out, " {\n");
    if (b->num_args > 0) {
        indent(p, level);
        buf_puts(out, "^bb(");
        for (int i = 0; i < b->num_args; i++) {
            if (i)
                buf_puts(out, ", ");
            print_value(p, b->args[i]);
            buf_puts(out, ": ");
            print_type_to(p, out, b->args[i]->type);
        }
        buf_puts(out, "):\n");
    }
    for (const IrOp *op = b->first; op; op = op->next)
        print_op_at(p, op, level + 1);
    indent(p, level);
    buf_puts(out, "}");
}

/* [results =] name [operands] [attrs] [: result types] [loc] [regions] */
static void print_op_at(Printer *p, const IrOp *op, int level) {
    Buf *out = p->out;
    indent(p, level);
    for (int i = 0; i < op->num_results; i++) {
        if (i)
            buf_puts(out, ", ");
        print_value(p, op->results[i]);
    }
    if (op->num_results > 0)
        buf_puts(out, " = ");
    buf_puts(out, (unsigned)op->opc < IR_NUM_OPS ? ir_op_info[op->opc].name : "<bad-opcode>");
    for (int i = 0; i < op->num_operands; i++) {
        buf_puts(out, i ? ", " : " ");
        print_value(p, op->operands[i]);
    }
    print_attr_dict(out, op->num_attrs, op->attrs);
    for (int i = 0; i < op->num_results; i++) {
        buf_puts(out, i ? ", " : " : ");
        print_type_to(p, out, op->results[i] ? op->results[i]->type : NULL);
    }
    print_loc(p, op->loc);
    for (int r = 0; r < op->num_regions; r++)
        print_region(p, op->regions[r], level);
    buf_puts(out, "\n");
}

static void print_func_in(Printer *p, const IrFunc *f) {
    Buf *out = p->out;
    reset_names(p);
    buf_puts(out, f->kind == IR_FUNC_KERNEL ? "kernel " : "func ");
    print_symbol(out, f->name);
    buf_puts(out, "(");
    const IrBlock *body = f->body;
    for (int i = 0; i < body->num_args; i++) {
        const IrValue *v = body->args[i];
        if (i)
            buf_puts(out, ", ");
        print_value(p, v);
        buf_puts(out, ": ");
        print_type_to(p, out, v->type);
        print_attr_dict(out, v->num_attrs, v->attrs);
    }
    buf_puts(out, ")");
    if (f->kind == IR_FUNC_FUNC || f->num_results > 0) {
        buf_puts(out, " -> (");
        for (int i = 0; i < f->num_results; i++) {
            if (i)
                buf_puts(out, ", ");
            print_type_to(p, out, f->result_types[i]);
        }
        buf_puts(out, ")");
    }
    if (f->num_attrs > 0) {
        buf_puts(out, " attrs");
        print_attr_dict(out, f->num_attrs, f->attrs);
    }
    print_loc(p, f->loc);
    buf_puts(out, " {\n");
    for (const IrOp *op = body->first; op; op = op->next)
        print_op_at(p, op, 1);
    buf_puts(out, "}\n");
}

static void print_module(const IrModule *m, Buf *out, bool locs) {
    Printer p;
    printer_init(&p, out);
    p.aliases = true;
    p.locs = locs;
    for (const IrFunc *f = m->first; f; f = f->next)
        collect_func(&p, f);
    for (size_t i = 0; i < p.num_aliases; i++) {
        const Layout *l = p.alias_order[i];
        buf_printf(out, "#%s = ", (const char *)ir_map_get(&p.layouts, l));
        print_layout_literal(&p, out, l);
        buf_puts(out, "\n");
    }
    for (const IrFunc *f = m->first; f; f = f->next) {
        if (f != m->first || p.num_aliases > 0)
            buf_puts(out, "\n");
        print_func_in(&p, f);
    }
    if (!out->data)
        buf_append(out, "", 0); /* an empty module still gives a NUL-terminated text */
    printer_done(&p);
}

void ir_print_module(const IrModule *m, Buf *out) {
    print_module(m, out, false);
}

void ir_print_module_locs(const IrModule *m, Buf *out) {
    print_module(m, out, true);
}

void ir_print_func(const IrFunc *f, Buf *out) {
    Printer p;
    printer_init(&p, out);
    print_func_in(&p, f);
    printer_done(&p);
}

void ir_print_op(const IrOp *op, Buf *out) {
    Printer p;
    printer_init(&p, out);
    /* Name the whole function first, so that the op's values print with the
     * names a full dump of the function would give them. */
    const IrFunc *f = ir_op_func(op);
    if (f)
        name_block(&p, f->body);
    print_op_at(&p, op, 0);
    printer_done(&p);
}
