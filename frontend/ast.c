/*
 * ast.c — AST nodes: construction, names, and the `--emit=ast` dump.
 *
 * Nodes are plain structs in the caller's arena (see frontend.h for which
 * fields each kind uses). Lists (call arguments, block statements,
 * parameters...) grow by doubling inside the arena; the capacity is not
 * stored but implied by the count: 4 slots, then the next power of two. So
 * `items` must only ever be grown with ast_push, or replaced together with
 * its count by an array that ast_push could have built (the parser moves
 * whole lists from node to node, which keeps the rule).
 *
 * The dump prints one node per line, indented two spaces per level, with the
 * node's kind, its key fields and its position. For
 *
 *     kernel k(f16* out, constexpr i32 B = 64) {
 *         let row = program_id(0);
 *         if (c) { } else { }
 *         for (i in range(0, n)) { }
 *     }
 *
 * it prints
 *
 *     kernel k @1:1
 *       param out: f16* @1:10
 *       param B: constexpr i32 @1:20
 *         int 64 @1:38                      <- the default value
 *       block @1:42
 *         let row @2:5
 *           call @2:15
 *             ident program_id @2:15
 *             int 0 @2:26
 *         if @3:5
 *           ident c @3:9
 *           block @3:12
 *           else                            <- introduces the else branch
 *             block @3:21
 *         for i @4:5
 *           range                           <- the range() arguments
 *             int 0 @4:21
 *             ident n @4:24
 *           block @4:28
 *
 * The other lines: `int 42`, `float 1.5` (numbers as the IR prints them),
 * `bool true`, `string "..."`, `type f32`, `unary -`, `binary <=`,
 * `ternary`, `index`, `slice`, `none`, `list`, `var acc`, `assign acc +=`,
 * `expr` (an expression statement), `return`, `static_assert "message"`,
 * `func silu`; every node ends with @line:col.
 *
 * Children come in the order they appear in the source (a call's callee,
 * then its arguments; an index's base, then its items). The format is meant
 * for people and for FileCheck tests, and is kept stable.
 */
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

AstNode *ast_new(Arena *a, AstKind kind, SrcLoc loc) {
    AstNode *n = ARENA_NEW(a, AstNode);
    n->kind = kind;
    n->loc = loc;
    return n;
}

void ast_push(Arena *a, AstNode *owner, AstNode *item) {
    int n = owner->num_items;
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        size_t cap = n == 0 ? 4 : (size_t)n * 2;
        owner->items = arena_grow(a, owner->items, sizeof(AstNode *) * (size_t)n, sizeof(AstNode *) * cap);
    }
    owner->items[owner->num_items++] = item;
}

const char *ast_kind_name(AstKind k) {
    switch (k) {
    case AST_INT_LIT: return "int";
    case AST_FLOAT_LIT: return "float";
    case AST_BOOL_LIT: return "bool";
    case AST_STRING_LIT: return "string";
    case AST_IDENT: return "ident";
    case AST_TYPE: return "type";
    case AST_UNARY: return "unary";
    case AST_BINARY: return "binary";
    case AST_TERNARY: return "ternary";
    case AST_CALL: return "call";
    case AST_INDEX: return "index";
    case AST_SLICE: return "slice";
    case AST_NONE: return "none";
    case AST_LIST: return "list";
    case AST_NAMED: return "named";
    case AST_LET: return "let";
    case AST_VAR: return "var";
    case AST_ASSIGN: return "assign";
    case AST_EXPR_STMT: return "expr";
    case AST_BLOCK: return "block";
    case AST_IF: return "if";
    case AST_FOR: return "for";
    case AST_RETURN: return "return";
    case AST_WHILE: return "while";
    case AST_BREAK: return "break";
    case AST_CONTINUE: return "continue";
    case AST_STATIC_ASSERT: return "static_assert";
    case AST_PARAM: return "param";
    case AST_KERNEL: return "kernel";
    case AST_FUNC: return "func";
    }
    return "?";
}

const char *ast_op_spelling(AstOp op) {
    switch (op) {
    case AST_OP_ADD: return "+";
    case AST_OP_SUB: return "-";
    case AST_OP_MUL: return "*";
    case AST_OP_DIV: return "/";
    case AST_OP_MOD: return "%";
    case AST_OP_SHL: return "<<";
    case AST_OP_SHR: return ">>";
    case AST_OP_LT: return "<";
    case AST_OP_LE: return "<=";
    case AST_OP_GT: return ">";
    case AST_OP_GE: return ">=";
    case AST_OP_EQ: return "==";
    case AST_OP_NE: return "!=";
    case AST_OP_BITAND: return "&";
    case AST_OP_BITOR: return "|";
    case AST_OP_BITXOR: return "^";
    case AST_OP_LAND: return "&&";
    case AST_OP_LOR: return "||";
    case AST_OP_NEG: return "-";
    case AST_OP_PLUS: return "+";
    case AST_OP_NOT: return "!";
    case AST_OP_BITNOT: return "~";
    case AST_OP_ASSIGN: return "=";
    }
    return "?";
}

/* ---- dump ---- */

/* A string literal's value, quoted, with control and non-ASCII bytes escaped. */
static void put_string(Buf *out, const char *s) {
    buf_puts(out, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            buf_printf(out, "\\%c", *c);
        else if (*c == '\n')
            buf_puts(out, "\\n");
        else if (*c == '\t')
            buf_puts(out, "\\t");
        else if (*c < 0x20 || *c >= 0x7f)
            buf_printf(out, "\\x%02x", *c);
        else
            buf_append(out, (const char *)c, 1);
    }
    buf_puts(out, "\"");
}

static void put_type(Buf *out, const AstTypeSpec *t) {
    if (t->is_constexpr)
        buf_puts(out, "constexpr ");
    if (t->is_const)
        buf_puts(out, "const ");
    buf_puts(out, ir_scalar_name(t->scalar));
    if (t->is_pointer)
        buf_puts(out, "*");
}

static void indent(Buf *out, int level) {
    for (int i = 0; i < level; i++)
        buf_puts(out, "  ");
}

static void dump(const AstNode *n, int level, Buf *out);

static void dump_items(const AstNode *n, int level, Buf *out) {
    for (int i = 0; i < n->num_items; i++)
        dump(n->items[i], level, out);
}

/* A line with no node of its own ("else", "range") that groups children. */
static void label(const char *what, int level, Buf *out) {
    indent(out, level);
    buf_printf(out, "%s\n", what);
}

static void dump(const AstNode *n, int level, Buf *out) {
    if (!n)
        return;
    indent(out, level);
    buf_puts(out, ast_kind_name(n->kind));
    switch (n->kind) {
    case AST_INT_LIT: buf_printf(out, " %lld", (long long)n->ival); break;
    case AST_FLOAT_LIT:
        buf_puts(out, " ");
        ir_print_number(out, n->fval);
        break; /* as the IR prints it */
    case AST_BOOL_LIT: buf_puts(out, n->ival ? " true" : " false"); break;
    case AST_STRING_LIT:
        buf_puts(out, " ");
        put_string(out, n->str ? n->str : "");
        break;
    case AST_TYPE: buf_printf(out, " %s", ir_scalar_name(n->type.scalar)); break;
    case AST_UNARY:
    case AST_BINARY: buf_printf(out, " %s", ast_op_spelling(n->op)); break;
    case AST_IDENT:
    case AST_LET:
    case AST_VAR:
    case AST_FOR:
    case AST_NAMED:
    case AST_KERNEL:
    case AST_FUNC: buf_printf(out, " %s", n->name); break;
    case AST_ASSIGN:
        buf_printf(out, " %s %s%s", n->name, n->op == AST_OP_ASSIGN ? "" : ast_op_spelling(n->op), "=");
        break;
    case AST_PARAM:
        buf_printf(out, " %s: ", n->name);
        put_type(out, &n->type);
        break;
    case AST_STATIC_ASSERT:
        if (n->str) {
            buf_puts(out, " ");
            put_string(out, n->str);
        }
        break;
    default: break;
    }
    if (n->loc.line > 0)
        buf_printf(out, " @%d:%d", n->loc.line, n->loc.col);
    buf_puts(out, "\n");

    int in = level + 1;
    switch (n->kind) {
    case AST_UNARY: dump(n->lhs, in, out); break;
    case AST_BINARY:
        dump(n->lhs, in, out);
        dump(n->rhs, in, out);
        break;
    case AST_TERNARY:
        dump(n->cond, in, out);
        dump(n->lhs, in, out);
        dump(n->rhs, in, out);
        break;
    case AST_CALL:
    case AST_INDEX:
        dump(n->lhs, in, out);
        dump_items(n, in, out);
        break;
    case AST_LIST:
    case AST_BLOCK: dump_items(n, in, out); break;
    case AST_LET:
    case AST_VAR:
    case AST_ASSIGN:
    case AST_PARAM:
    case AST_NAMED: dump(n->rhs, in, out); break;
    case AST_EXPR_STMT:
    case AST_RETURN: dump(n->lhs, in, out); break;
    case AST_STATIC_ASSERT: dump(n->cond, in, out); break;
    case AST_IF:
        dump(n->cond, in, out);
        dump(n->body, in, out);
        if (n->els) {
            label("else", in, out);
            dump(n->els, in + 1, out);
        }
        break;
    case AST_WHILE:
        dump(n->cond, in, out);
        dump(n->body, in, out);
        break;
    case AST_FOR:
        label("range", in, out);
        dump_items(n, in + 1, out);
        dump(n->body, in, out);
        break;
    case AST_KERNEL:
    case AST_FUNC:
        if (n->lhs) {
            label("autotune", in, out);
            dump_items(n->lhs, in + 1, out);
        }
        dump_items(n, in, out);
        dump(n->body, in, out);
        break;
    default: break;
    }
}

void fe_dump_ast(const AstFile *f, Buf *out) {
    for (int i = 0; i < f->num_decls; i++)
        dump(f->decls[i], 0, out);
}
