/*
 * verify.c — the IR verifier: every rule docs/ir.md states, checked.
 *
 * The parser, the front end and every pass produce IR; the verifier is what
 * makes a bug in any of them show up at the pass that introduced it instead
 * of as a wrong kernel three passes later. tilec-opt runs it after parsing,
 * the pass manager after every pass in debug builds and under --verify-each.
 *
 * What it checks, per function, in one pre-order walk:
 *
 *   - structure: operand, result and region counts from ops.def, with the
 *     op-specific rules for the variadic ones (load takes 1 to 3 operands,
 *     `for` has one result per init...); every block ends with exactly one
 *     terminator (`return` in a function body, `condition` in region 0 of
 *     a `while`, `yield` in other regions) and
 *     terminators appear nowhere else; parent pointers agree.
 *   - attributes: the required ones of ops.def ("name:kind") are present
 *     with the right kind, and words are from the op's vocabulary; a
 *     kernel's num_warps and num_stages are within the API's limits.
 *   - types: well-formed types (a tile's layout has the tile's rank, a tile
 *     has at most IR_MAX_TILE_ELEMENTS elements), and
 *     each op's typing rule (elementwise shapes and layouts agree, float-only
 *     ops take floats, cmp gives i1, load gives the pointee shaped like the
 *     pointer, dot is MxK by KxN into MxN f32, ...). Where layouts are
 *     present, the ops that only reinterpret a tile keep data in place:
 *     broadcast keeps its operand's layout, expand_dims takes the #slice of
 *     its result's layout, reduce gives the #slice of its operand's, scan
 *     keeps its operand's type; moving data between threads is
 *     convert_layout's job alone. The ops of a scan's combine region
 *     compute scalars and have no side effects.
 *   - dominance: an operand must be defined earlier in its block or in an
 *     enclosing one, or be a parameter or an enclosing block argument.
 *     Control flow is structured, so this is a scope check: a map from
 *     value to "visible" or "out of scope" that a block entry extends and a
 *     block exit retires.
 *
 * Errors name the op in quotes and say what was expected, at the op's
 * location: "'dot' op operand 1 has shape 32x64, expected 64xN". The walk
 * goes on after an error (one bad op rarely hides another), but an op whose
 * operand or result count is wrong gets no type checks, which would only
 * index out of bounds or repeat the same complaint.
 */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct Verifier {
    DiagList *diags;
    const IrModule *m;
    const IrFunc *func;      /* function being checked */
    Arena arena;             /* scope map, scratch strings */
    IrMap scope;             /* IrValue* -> VISIBLE or RETIRED */
    const IrValue **defined; /* values in the order they came into scope */
    size_t num_defined, cap_defined;
    int num_warp_specialize; /* warp_specialize ops of the function */
    int in_combine;          /* scan combine regions the walk is inside */
    bool ok;
} Verifier;

static char visible_tag, retired_tag;
#define VISIBLE ((void *)&visible_tag)
#define RETIRED ((void *)&retired_tag)

/* ---- reporting ---- */

static void op_error(Verifier *v, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void op_error(Verifier *v, const IrOp *op, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(v->diags, op->loc, "'%s' op %s", ir_op_info[op->opc].name, msg);
    v->ok = false;
}

static void func_error(Verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void func_error(Verifier *v, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(v->diags, v->func->loc, "%s @%s: %s", v->func->kind == IR_FUNC_KERNEL ? "kernel" : "func", v->func->name,
               msg);
    v->ok = false;
}

/* Text of a type, for messages (lives in the verifier's arena). */
static const char *type_str(Verifier *v, const IrType *t) {
    if (!t)
        return "<no type>";
    Buf b;
    buf_init(&b);
    ir_print_type(&b, t);
    char *s = arena_strdup(&v->arena, b.data ? b.data : "");
    buf_free(&b);
    return s;
}

/* "32x64" for a tile or smem, "scalar" otherwise. */
static const char *shape_str(Verifier *v, const IrType *t) {
    if (!t || (t->kind != IR_TILE && t->kind != IR_SMEM))
        return "scalar";
    Buf b;
    buf_init(&b);
    for (int i = 0; i < t->rank; i++)
        buf_printf(&b, "%s%lld", i ? "x" : "", (long long)t->shape[i]);
    char *s = arena_strdup(&v->arena, b.data ? b.data : "");
    buf_free(&b);
    return s;
}

/* ---- type predicates (local: the verifier must not trust type.c's
 * constructors to have produced what it checks) ---- */

static bool is_int(const IrType *t) {
    return t && t->kind <= IR_I64;
}
static bool is_fp8(const IrType *t) {
    return t && (t->kind == IR_F8E4M3 || t->kind == IR_F8E5M2);
}
static bool is_float(const IrType *t) {
    return t && ((t->kind >= IR_F16 && t->kind <= IR_F64) || is_fp8(t));
}
static bool is_number(const IrType *t) {
    return is_int(t) || is_float(t);
}
static bool is_ptr(const IrType *t) {
    return t && t->kind == IR_PTR;
}
static bool is_scalar(const IrType *t) {
    return is_number(t) || is_ptr(t);
}
static bool is_tile(const IrType *t) {
    return t && t->kind == IR_TILE;
}
static bool is_smem(const IrType *t) {
    return t && t->kind == IR_SMEM;
}
static const IrType *elem_of(const IrType *t) {
    return (is_tile(t) || is_smem(t)) ? t->elem : t;
}
static bool is_i1(const IrType *t) {
    return t && t->kind == IR_I1;
}

static bool same_shape(const IrType *a, const IrType *b) {
    bool ta = is_tile(a) || is_smem(a), tb = is_tile(b) || is_smem(b);
    if (ta != tb)
        return false;
    if (!ta)
        return true;
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

/* Same shape and, for tiles, the same layout. */
static bool same_form(const IrType *a, const IrType *b) {
    return same_shape(a, b) && (!is_tile(a) || a->layout == b->layout);
}

/* ---- well-formed types ---- */

/* Checks a type written on a result or block argument. `what` is e.g.
 * "result 0"; op is NULL for function parameters. */
static void check_type(Verifier *v, const IrOp *op, const char *what, const IrType *t) {
    char msg[256];
    msg[0] = 0;
    if (!t) {
        snprintf(msg, sizeof msg, "%s has no type", what);
    } else if (t->kind == IR_TENSORMAP) {
        if (op || strncmp(what, "parameter", 9) != 0 || v->func->kind != IR_FUNC_KERNEL)
            snprintf(msg, sizeof msg, "%s: a tensormap can only be a kernel parameter", what);
    } else if (t->kind == IR_PTR) {
        if (!is_scalar(t->elem))
            snprintf(msg, sizeof msg, "%s: pointee of a pointer must be a scalar type", what);
    } else if (t->kind == IR_TILE || t->kind == IR_SMEM) {
        const char *kind = t->kind == IR_TILE ? "tile" : "smem";
        if (t->rank < 1 || t->rank > IR_MAX_RANK) {
            snprintf(msg, sizeof msg, "%s: %s rank %d is outside 1..%d", what, kind, t->rank, IR_MAX_RANK);
        } else if (!(t->kind == IR_TILE ? is_scalar(t->elem) : is_number(t->elem))) {
            snprintf(msg, sizeof msg, "%s: bad element type of a %s", what, kind);
        } else {
            int64_t numel = 1;
            for (int i = 0; i < t->rank; i++) {
                if (t->shape[i] < 1) {
                    snprintf(msg, sizeof msg, "%s: %s dimension %d has size %lld", what, kind, i,
                             (long long)t->shape[i]);
                    break;
                }
                /* numel stays <= IR_MAX_TILE_ELEMENTS, so the product cannot overflow */
                if (t->kind == IR_TILE && t->shape[i] > IR_MAX_TILE_ELEMENTS / numel) {
                    snprintf(msg, sizeof msg, "%s: tile of shape %s has more than %lld elements", what,
                             shape_str(v, t), (long long)IR_MAX_TILE_ELEMENTS);
                    break;
                }
                numel *= t->shape[i];
            }
            const Layout *l = t->layout;
            if (!msg[0] && l) {
                bool shared = l->kind == LAYOUT_SHARED || l->kind == LAYOUT_NVMMA_SHARED;
                if (t->kind == IR_TILE && shared)
                    snprintf(msg, sizeof msg, "%s: a tile cannot have a #%s layout", what,
                             ir_layout_kind_name(l->kind));
                else if (t->kind == IR_SMEM && !shared)
                    snprintf(msg, sizeof msg, "%s: shared memory needs a #shared or #nvmma_shared layout, not #%s", what,
                             ir_layout_kind_name(l->kind));
                else if (t->kind == IR_TILE && l->rank != t->rank)
                    snprintf(msg, sizeof msg, "%s: layout #%s has rank %d, but the tile has rank %d", what,
                             ir_layout_kind_name(l->kind), l->rank, t->rank);
                else if (t->kind == IR_SMEM && l->rank != t->rank && l->rank != t->rank - 1)
                    snprintf(msg, sizeof msg, "%s: layout #%s has rank %d, but the buffer has rank %d", what,
                             ir_layout_kind_name(l->kind), l->rank, t->rank);
                else if (l->kind == LAYOUT_DOT_OP && l->dot_op.parent->kind != LAYOUT_MMA)
                    snprintf(msg, sizeof msg, "%s: the parent of a #dot_op layout must be #mma, not #%s", what,
                             ir_layout_kind_name(l->dot_op.parent->kind));
                else if (l->kind == LAYOUT_DOT_OP && l->dot_op.parent->mma.version == 3 && l->dot_op.idx != 0)
                    snprintf(msg, sizeof msg,
                             "%s: #dot_op<idx = 1> of an #mma version 3 layout: wgmma reads B from shared memory only",
                             what);
            }
        }
    } else if (t->kind > IR_F8E5M2) {
        snprintf(msg, sizeof msg, "%s has an invalid type", what);
    }
    if (!msg[0])
        return;
    if (op)
        op_error(v, op, "%s", msg);
    else
        func_error(v, "%s", msg);
}

/* ---- attributes ---- */

/* Checks the "name:kind ..." list of ops.def. */
static void check_required_attrs(Verifier *v, const IrOp *op) {
    const char *p = ir_op_info[op->opc].attrs;
    while (p && *p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *colon = strchr(p, ':');
        tc_assert(colon != NULL);
        char name[64];
        size_t n = (size_t)(colon - p);
        tc_assert(n < sizeof name);
        memcpy(name, p, n);
        name[n] = 0;
        char kind = colon[1];
        p = colon + 2;
        const IrAttr *a = ir_op_attr(op, name);
        if (!a) {
            op_error(v, op, "requires attribute '%s'", name);
            continue;
        }
        bool good;
        const char *want;
        switch (kind) {
        case 'i':
            good = a->kind == IR_ATTR_INT;
            want = "an integer";
            break;
        case 'n':
            good = a->kind == IR_ATTR_INT || a->kind == IR_ATTR_FLOAT;
            want = "a number";
            break;
        case 'w':
            good = a->kind == IR_ATTR_WORD;
            want = "a word";
            break;
        case 'l':
            good = a->kind == IR_ATTR_INTS;
            want = "a list of integers";
            break;
        case 's':
            good = a->kind == IR_ATTR_SYMBOL;
            want = "a symbol (@name)";
            break;
        case 't':
            good = a->kind == IR_ATTR_STRING;
            want = "a string";
            break;
        default: tc_unreachable("bad attribute kind '%c' in ops.def", kind);
        }
        if (!good)
            op_error(v, op, "attribute '%s' must be %s", name, want);
    }
}

/* Checks that word attribute `name` (already known present) is one of the
 * space-separated `words`. */
static void check_word(Verifier *v, const IrOp *op, const char *name, const char *words) {
    const IrAttr *a = ir_op_attr(op, name);
    if (!a || a->kind != IR_ATTR_WORD || !a->s)
        return;
    size_t n = strlen(a->s);
    for (const char *p = words; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, a->s, n) == 0)
            return;
        if (!e)
            break;
        p = e + 1;
    }
    op_error(v, op, "attribute '%s' is '%s', expected one of: %s", name, a->s, words);
}

static bool int_attr(const IrOp *op, const char *name, int64_t *out) {
    const IrAttr *a = ir_op_attr(op, name);
    if (!a || a->kind != IR_ATTR_INT)
        return false;
    *out = a->i;
    return true;
}

/* ---- counts ---- */

/* Checks counts; returns false if they are wrong (no further checks then). */
static bool check_counts(Verifier *v, const IrOp *op) {
    const IrOpInfo *info = &ir_op_info[op->opc];
    int lo = info->num_operands, hi = info->num_operands;
    switch (op->opc) {
    case IR_OP_LOAD: lo = 1, hi = 3; break;
    case IR_OP_STORE: lo = 2, hi = 3; break;
    case IR_OP_ATOMIC: lo = 2, hi = 3; break;
    case IR_OP_FOR: lo = 3, hi = -1; break;
    case IR_OP_WHILE: lo = 0, hi = -1; break;
    case IR_OP_LOCAL_ALLOC: lo = 0, hi = 1; break;
    case IR_OP_ASYNC_COPY: lo = 2, hi = 4; break;
    case IR_OP_ASYNC_TMA_COPY: lo = 6, hi = 5 + IR_MAX_TMAP_RANK; break;
    case IR_OP_ASYNC_TMA_STORE: lo = 4, hi = 3 + IR_MAX_TMAP_RANK; break;
    case IR_OP_ASYNC_TMA_STORE_WAIT: lo = 0, hi = -1; break;
    case IR_OP_WARP_GROUP_DOT_WAIT: lo = 1, hi = -1; break;
    case IR_OP_PRINT: lo = 3, hi = -1; break;
    case IR_OP_YIELD:
    case IR_OP_RETURN:
    case IR_OP_CALL: lo = 0, hi = -1; break;
    default: break;
    }
    bool ok = true;
    int n = op->num_operands;
    if (n < lo || (hi >= 0 && n > hi)) {
        if (lo == hi)
            op_error(v, op, "expects %d operand%s, got %d", lo, lo == 1 ? "" : "s", n);
        else if (hi < 0)
            op_error(v, op, "expects at least %d operands, got %d", lo, n);
        else if (lo == 0)
            op_error(v, op, "expects at most %d operand%s, got %d", hi, hi == 1 ? "" : "s", n);
        else
            op_error(v, op, "expects %d to %d operands, got %d", lo, hi, n);
        ok = false;
    }
    if (info->num_results >= 0 && op->num_results != info->num_results) {
        op_error(v, op, "expects %d result%s, got %d", info->num_results, info->num_results == 1 ? "" : "s",
                 op->num_results);
        ok = false;
    }
    if (op->opc == IR_OP_FOR && ok && op->num_results != n - 3) {
        op_error(v, op, "expects %d result%s (one per init value), got %d", n - 3, n - 3 == 1 ? "" : "s",
                 op->num_results);
        ok = false;
    }
    if (op->opc == IR_OP_WHILE && ok && op->num_results != n) {
        op_error(v, op, "expects %d result%s (one per init value), got %d", n, n == 1 ? "" : "s", op->num_results);
        ok = false;
    }
    if (op->num_regions != info->num_regions) {
        op_error(v, op, "expects %d region%s, got %d", info->num_regions, info->num_regions == 1 ? "" : "s",
                 op->num_regions);
        ok = false;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (!op->operands || !op->operands[i]) {
            op_error(v, op, "operand %d is missing", i);
            ok = false;
        }
    for (int i = 0; i < op->num_results; i++) {
        if (!op->results || !op->results[i]) {
            op_error(v, op, "result %d is missing", i);
            ok = false;
        } else if (op->results[i]->def != op || op->results[i]->index != i) {
            op_error(v, op, "result %d does not point back to its op", i);
            ok = false;
        }
    }
    for (int r = 0; r < op->num_regions; r++)
        if (!op->regions || !op->regions[r] || op->regions[r]->parent_op != op) {
            op_error(v, op, "region %d does not point back to its op", r);
            ok = false;
        }
    return ok;
}

/* ---- per-op typing rules ---- */

#define OPND(i) (op->operands[(i)]->type)
#define RES(i) (op->results[(i)]->type)

/* Operand i must have the result's shape (and layout) when it is a tile;
 * a tile result needs tile operands of its shape, a scalar result scalar
 * operands. Elementwise ops take scalars or tiles (docs/ir.md). */
static void check_elementwise_shape(Verifier *v, const IrOp *op) {
    const IrType *r = RES(0);
    for (int i = 0; i < op->num_operands; i++) {
        const IrType *t = OPND(i);
        if (is_tile(t) && !is_tile(r))
            op_error(v, op, "operand %d is a tile (%s) but the result is a scalar", i, type_str(v, t));
        else if (is_tile(t) && !same_shape(t, r))
            op_error(v, op, "operand %d has shape %s, expected %s (the result's shape)", i, shape_str(v, t),
                     shape_str(v, r));
        else if (is_tile(t) && t->layout != r->layout)
            op_error(v, op, "operand %d has type %s, expected the result's layout (%s)", i, type_str(v, t),
                     type_str(v, r));
        else if (is_smem(t))
            op_error(v, op, "operand %d is shared memory; load it first", i);
    }
    if (is_tile(r)) {
        bool any_tile = false;
        for (int i = 0; i < op->num_operands; i++)
            any_tile |= is_tile(OPND(i));
        if (!any_tile && op->num_operands > 0)
            op_error(v, op, "result is a tile but every operand is a scalar (use splat)");
    } else if (!is_scalar(r)) {
        op_error(v, op, "result must be a scalar or a tile, got %s", type_str(v, r));
    }
}

/* Operand i has element type `want` (the message names the rule). */
static void check_elem_eq(Verifier *v, const IrOp *op, int i, const IrType *want) {
    const IrType *e = elem_of(OPND(i));
    if (e != want)
        op_error(v, op, "operand %d has element type %s, expected %s", i, type_str(v, e), type_str(v, want));
}

/* fp8 values are converted, moved, selected and multiplied by dot, never
 * computed on: an op that would is reported (the front end casts first). */
static void check_not_fp8(Verifier *v, const IrOp *op, const IrType *e) {
    if (is_fp8(e))
        op_error(v, op, "has %s operands: fp8 values are not computed on (cast them to f16 or f32 first)",
                 type_str(v, e));
}

static void verify_elementwise(Verifier *v, const IrOp *op) {
    check_elementwise_shape(v, op);
    const IrType *re = elem_of(RES(0));
    unsigned flags = ir_op_info[op->opc].flags;
    if (op->opc != IR_OP_SELECT && op->opc != IR_OP_CAST && op->num_operands > 0)
        check_not_fp8(v, op, elem_of(OPND(0)));
    switch (op->opc) {
    case IR_OP_CMP: {
        const IrType *e0 = elem_of(OPND(0));
        if (!is_scalar(e0))
            op_error(v, op, "operands must be numbers or pointers");
        check_elem_eq(v, op, 1, e0);
        if (!is_i1(re))
            op_error(v, op, "result must have element type i1, got %s", type_str(v, re));
        check_word(v, op, "pred", "eq ne lt le gt ge");
        return;
    }
    case IR_OP_SELECT:
        if (!is_i1(elem_of(OPND(0))))
            op_error(v, op, "operand 0 (the condition) must be i1, got %s", type_str(v, elem_of(OPND(0))));
        check_elem_eq(v, op, 1, re);
        check_elem_eq(v, op, 2, re);
        return;
    case IR_OP_CAST:
        if (!is_number(elem_of(OPND(0))))
            op_error(v, op, "operand 0 must be a number, got %s", type_str(v, elem_of(OPND(0))));
        if (!is_number(re))
            op_error(v, op, "result must be a number, got %s", type_str(v, re));
        return;
    case IR_OP_ADDPTR:
        if (!is_ptr(elem_of(OPND(0))))
            op_error(v, op, "operand 0 must be a pointer, got %s", type_str(v, elem_of(OPND(0))));
        if (!is_int(elem_of(OPND(1))) || is_i1(elem_of(OPND(1))))
            op_error(v, op, "operand 1 (the offset) must be an integer, got %s", type_str(v, elem_of(OPND(1))));
        check_elem_eq(v, op, 0, re);
        return;
    case IR_OP_AND:
    case IR_OP_OR:
    case IR_OP_XOR:
    case IR_OP_NOT:
    case IR_OP_SHL:
    case IR_OP_SHR:
        if (!is_int(re))
            op_error(v, op, "operands must be integers, got %s", type_str(v, re));
        break;
    case IR_OP_UMULHI:
        if (!is_int(re) || is_i1(re))
            op_error(v, op, "operands must be integers wider than i1, got %s", type_str(v, re));
        break;
    case IR_OP_FMA:
        if (!is_float(re))
            op_error(v, op, "operands must be floats, got %s", type_str(v, re));
        break;
    default:
        if ((flags & OPF_FLOAT_ONLY) && !is_float(re))
            op_error(v, op, "operands must be floats, got %s", type_str(v, re));
        else if (!is_number(re))
            op_error(v, op, "operands must be numbers, got %s", type_str(v, re));
        break;
    }
    for (int i = 0; i < op->num_operands; i++)
        check_elem_eq(v, op, i, re);
}

static void verify_constant(Verifier *v, const IrOp *op) {
    const IrType *t = RES(0);
    const IrType *e = elem_of(t);
    if (!is_number(e) || !(is_tile(t) || is_scalar(t)))
        op_error(v, op, "result must be a number or a tile of numbers, got %s", type_str(v, t));
    const IrAttr *a = ir_op_attr(op, "value");
    if (a && a->kind == IR_ATTR_FLOAT && is_int(e))
        op_error(v, op, "float value for integer type %s", type_str(v, e));
}

/* trans and memdesc_trans: perm (a->list.n == s->rank entries) is a
 * permutation and result dimension i has operand dimension perm[i]'s size;
 * to_new gets, for each operand dimension, its result dimension. */
static bool check_perm(Verifier *v, const IrOp *op, const IrAttr *a, const IrType *s, const IrType *r, int *to_new) {
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < s->rank; i++) {
        int64_t p = a->list.v[i];
        if (p < 0 || p >= s->rank || seen[p]) {
            op_error(v, op, "perm is not a permutation of 0..%d", s->rank - 1);
            return false;
        }
        seen[p] = true;
        to_new[p] = i;
        if (r->shape[i] != s->shape[p]) {
            op_error(v, op, "result dimension %d has size %lld, expected %lld (operand dimension %lld)", i,
                     (long long)r->shape[i], (long long)s->shape[p], (long long)p);
            return false;
        }
    }
    return true;
}

static void verify_shape_op(Verifier *v, const IrOp *op) {
    const IrType *s = OPND(0), *r = RES(0);
    if (op->opc == IR_OP_SPLAT) {
        if (!is_scalar(s))
            op_error(v, op, "operand must be a scalar, got %s", type_str(v, s));
        else if (!is_tile(r))
            op_error(v, op, "result must be a tile, got %s", type_str(v, r));
        else if (r->elem != s)
            op_error(v, op, "result element type %s differs from the operand type %s", type_str(v, r->elem),
                     type_str(v, s));
        return;
    }
    if (!is_tile(s) || !is_tile(r)) {
        op_error(v, op, "takes and returns tiles, got %s -> %s", type_str(v, s), type_str(v, r));
        return;
    }
    if (s->elem != r->elem) {
        op_error(v, op, "result element type %s differs from the operand's %s", type_str(v, r->elem),
                 type_str(v, s->elem));
        return;
    }
    switch (op->opc) {
    case IR_OP_BROADCAST: {
        bool good = s->rank == r->rank;
        for (int i = 0; good && i < s->rank; i++)
            good = s->shape[i] == r->shape[i] || s->shape[i] == 1;
        if (!good)
            op_error(v, op, "cannot broadcast shape %s to %s (only size-1 dimensions widen)", shape_str(v, s),
                     shape_str(v, r));
        else if (s->layout && r->layout && s->layout != r->layout)
            op_error(v, op, "operand has type %s, expected the result's layout (%s)", type_str(v, s),
                     type_str(v, r));
        break;
    }
    case IR_OP_EXPAND_DIMS: {
        int64_t axis;
        if (!int_attr(op, "axis", &axis))
            break;
        if (axis < 0 || axis > s->rank) {
            op_error(v, op, "axis %lld is out of range for a rank-%d tile", (long long)axis, s->rank);
            break;
        }
        bool good = r->rank == s->rank + 1 && r->shape[axis] == 1;
        for (int i = 0, j = 0; good && i < r->rank; i++) {
            if (i == axis)
                continue;
            good = r->shape[i] == s->shape[j++];
        }
        if (!good) {
            op_error(v, op, "result shape %s is not %s with a size-1 dimension at %lld", shape_str(v, r),
                     shape_str(v, s), (long long)axis);
            break;
        }
        const Layout *sl = s->layout, *rl = r->layout;
        if (sl && rl && !(sl->kind == LAYOUT_SLICE && sl->slice.dim == axis && sl->slice.parent == rl))
            op_error(v, op, "operand layout must be #slice<dim = %lld> of the result's layout", (long long)axis);
        break;
    }
    case IR_OP_RESHAPE: {
        int64_t ns = 1, nr = 1;
        for (int i = 0; i < s->rank; i++)
            ns *= s->shape[i];
        for (int i = 0; i < r->rank; i++)
            nr *= r->shape[i];
        if (ns != nr)
            op_error(v, op, "cannot reshape %s (%lld elements) to %s (%lld elements)", shape_str(v, s), (long long)ns,
                     shape_str(v, r), (long long)nr);
        break;
    }
    case IR_OP_TRANS: {
        const IrAttr *a = ir_op_attr(op, "perm");
        if (!a || a->kind != IR_ATTR_INTS)
            break;
        if (a->list.n != s->rank || r->rank != s->rank) {
            op_error(v, op, "perm has %d entries for a rank-%d tile", a->list.n, s->rank);
            break;
        }
        int to_new[IR_MAX_RANK];
        check_perm(v, op, a, s, r, to_new);
        break;
    }
    case IR_OP_CONVERT_LAYOUT:
        if (!same_shape(s, r))
            op_error(v, op, "changes the shape from %s to %s", shape_str(v, s), shape_str(v, r));
        break;
    default: tc_unreachable("not a shape op");
    }
}

/* ptr (operand 0) and mask (operand mask_index, when present): the result of
 * a load, the value of a store or atomic, has the pointee type shaped like ptr. */
/* A store or an atomic must not write through a `readonly` pointer: the
 * parameter promises that nothing writes its memory while the kernel runs,
 * and passes rely on it (CSE merges loads of it, the pipeline reads it
 * again for later iterations). */
static void check_writable(Verifier *v, const IrOp *op) {
    if (op->num_operands > 0 && ir_points_to_readonly(op->operands[0]))
        op_error(v, op, "writes through a pointer into a readonly parameter (nothing may write its memory)");
}

static void check_memory_access(Verifier *v, const IrOp *op, const IrType *value, const char *value_what,
                                int mask_index) {
    const IrType *p = OPND(0);
    const IrType *pe = elem_of(p);
    if (!is_ptr(pe) || !(is_tile(p) || is_scalar(p))) {
        op_error(v, op, "operand 0 must be a pointer or a tile of pointers, got %s", type_str(v, p));
        return;
    }
    if (elem_of(value) != pe->elem || !same_form(value, p))
        op_error(v, op, "%s has type %s, expected %s shaped like the pointer %s", value_what, type_str(v, value),
                 type_str(v, pe->elem), type_str(v, p));
    if (mask_index < op->num_operands) {
        const IrType *mk = OPND(mask_index);
        if (!is_i1(elem_of(mk)) || !same_form(mk, p))
            op_error(v, op, "operand %d (the mask) has type %s, expected i1 shaped like the pointer %s", mask_index,
                     type_str(v, mk), type_str(v, p));
    }
}

static void verify_reduce(Verifier *v, const IrOp *op) {
    const IrType *s = OPND(0), *r = RES(0);
    check_word(v, op, "kind", "sum max min argmax argmin");
    bool arg = ir_reduce_is_arg(op);
    if (!is_tile(s) || !is_number(s->elem)) {
        op_error(v, op, "operand must be a tile of numbers, got %s", type_str(v, s));
        return;
    }
    check_not_fp8(v, op, s->elem);
    int64_t axis;
    if (!int_attr(op, "axis", &axis))
        return;
    if (axis < 0 || axis >= s->rank) {
        op_error(v, op, "axis %lld is out of range for a rank-%d tile", (long long)axis, s->rank);
        return;
    }
    if (arg && !(elem_of(r) && elem_of(r)->kind == IR_I32)) {
        op_error(v, op, "%s gives i32 indices, got %s", ir_op_get_word(op, "kind"), type_str(v, elem_of(r)));
        return;
    }
    if (!arg && elem_of(r) != s->elem) {
        op_error(v, op, "result element type %s differs from the operand's %s", type_str(v, elem_of(r)),
                 type_str(v, s->elem));
        return;
    }
    if (s->rank == 1) {
        if (is_tile(r))
            op_error(v, op, "reducing a 1-D tile gives a scalar, got %s", type_str(v, r));
        return;
    }
    bool good = is_tile(r) && r->rank == s->rank - 1;
    for (int i = 0, j = 0; good && i < s->rank; i++) {
        if (i == axis)
            continue;
        good = r->shape[j++] == s->shape[i];
    }
    if (!good) {
        op_error(v, op, "result shape %s is not %s without dimension %lld", shape_str(v, r), shape_str(v, s),
                 (long long)axis);
        return;
    }
    const Layout *sl = s->layout, *rl = r->layout;
    if (sl && rl && !(rl->kind == LAYOUT_SLICE && rl->slice.parent == sl && rl->slice.dim == axis))
        op_error(v, op, "result layout must be #slice<dim = %lld> of the operand's layout", (long long)axis);
}

/* scan: a tile of numbers, the result of its type, a combine region of two
 * scalar arguments of the element type yielding one (check_yield), and an
 * optional reverse of 0 or 1. The region's own ops are checked as the walk
 * reaches them (check_combine_op). */
static void verify_scan(Verifier *v, const IrOp *op) {
    const IrType *s = OPND(0), *r = RES(0);
    if (!is_tile(s) || !is_number(s->elem)) {
        op_error(v, op, "operand must be a tile of numbers, got %s", type_str(v, s));
        return;
    }
    int64_t axis;
    if (int_attr(op, "axis", &axis) && (axis < 0 || axis >= s->rank))
        op_error(v, op, "axis %lld is out of range for a rank-%d tile", (long long)axis, s->rank);
    const IrAttr *rev = ir_op_attr(op, "reverse");
    if (rev && (rev->kind != IR_ATTR_INT || (rev->i != 0 && rev->i != 1)))
        op_error(v, op, "attribute 'reverse' must be 0 or 1");
    if (r != s)
        op_error(v, op, "result type %s differs from the operand's %s", type_str(v, r), type_str(v, s));
    const IrBlock *body = op->regions[0];
    if (body->num_args != 2) {
        op_error(v, op, "combine region has %d argument%s, expected 2", body->num_args,
                 body->num_args == 1 ? "" : "s");
        return;
    }
    for (int i = 0; i < 2; i++)
        if (body->args[i] && body->args[i]->type != s->elem)
            op_error(v, op, "combine region argument %d has type %s, expected %s (the element type)", i,
                     type_str(v, body->args[i]->type), type_str(v, s->elem));
}

/* An op inside a scan's combine region runs once per combination in every
 * thread: scalars only, and nothing that writes, synchronizes or would run
 * a varying number of times (calls are allowed until inline removes them). */
static void check_combine_op(Verifier *v, const IrOp *op) {
    if ((ir_op_info[op->opc].flags & OPF_SIDE_EFFECT) && op->opc != IR_OP_CALL)
        op_error(v, op, "has side effects and cannot be in the combine region of a 'scan'");
    for (int i = 0; i < op->num_results; i++)
        if (RES(i) && !is_scalar(RES(i)))
            op_error(v, op, "result %d has type %s; the combine region of a 'scan' computes scalars", i,
                     type_str(v, RES(i)));
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i] && OPND(i) && !is_scalar(OPND(i)))
            op_error(v, op, "operand %d has type %s; the combine region of a 'scan' computes scalars", i,
                     type_str(v, OPND(i)));
}

static void verify_dot(Verifier *v, const IrOp *op) {
    const IrType *a = OPND(0), *b = OPND(1), *c = OPND(2), *r = RES(0);
    for (int i = 0; i < 3; i++)
        if (!is_tile(OPND(i)) || (OPND(i)->rank != 2 && OPND(i)->rank != 3)) {
            op_error(v, op, "operand %d must be a 2-D (or batched 3-D) tile, got %s", i, type_str(v, OPND(i)));
            return;
        }
    if (a->rank != b->rank || a->rank != c->rank) {
        op_error(v, op, "operands have ranks %d, %d and %d", a->rank, b->rank, c->rank);
        return;
    }
    int k = a->rank - 2; /* index of M (a), K (b) */
    if (k == 1 && (b->shape[0] != a->shape[0] || c->shape[0] != a->shape[0])) {
        op_error(v, op, "batch sizes differ: %lld, %lld, %lld", (long long)a->shape[0], (long long)b->shape[0],
                 (long long)c->shape[0]);
        return;
    }
    int64_t M = a->shape[k], K = a->shape[k + 1], N = b->shape[k + 1];
    if (b->shape[k] != K) {
        op_error(v, op, "operand 1 has shape %s, expected %s%lldxN", shape_str(v, b), k ? "Bx" : "", (long long)K);
        return;
    }
    if (c->shape[k] != M || c->shape[k + 1] != N) {
        op_error(v, op, "operand 2 has shape %s, expected %s%lldx%lld", shape_str(v, c), k ? "Bx" : "", (long long)M,
                 (long long)N);
        return;
    }
    if (!is_float(a->elem) || a->elem != b->elem)
        op_error(v, op, "operands 0 and 1 must be floats of one type, got %s and %s", type_str(v, a->elem),
                 type_str(v, b->elem));
    else if (is_fp8(a->elem))
        op_error(v, op, "has %s operands: a dot of fp8 values takes them converted to f16", type_str(v, a->elem));
    if (c->elem->kind != IR_F32)
        op_error(v, op, "the accumulator (operand 2) must be f32, got %s", type_str(v, c->elem));
    if (r != c)
        op_error(v, op, "result type %s differs from the accumulator's %s", type_str(v, r), type_str(v, c));
    /* Tensor cores: an #mma result takes #dot_op<idx = i, parent = that
     * #mma> operands (and, above, an accumulator of the result's type); a
     * #dot_op operand needs that result. Other layouts are the FMA path. */
    const Layout *rl = r->layout;
    if (rl && rl->kind == LAYOUT_MMA && rl->mma.version == 3) {
        op_error(v, op, "a dot with an #mma version 3 result must be a warp_group_dot (wgmma)");
        return;
    }
    for (int i = 0; i < 2; i++) {
        const Layout *l = OPND(i)->layout;
        bool is_op = l && l->kind == LAYOUT_DOT_OP;
        if ((is_op || (l && rl && rl->kind == LAYOUT_MMA)) &&
            (!is_op || l->dot_op.idx != i || l->dot_op.parent != rl || !rl || rl->kind != LAYOUT_MMA))
            op_error(v, op, "operand %d layout must be #dot_op<idx = %d> of the result's #mma layout, got %s", i, i,
                     type_str(v, OPND(i)));
    }
}

/* warp_group_dot: A from #nvmma_shared memory or a #dot_op<idx = 0> tile of
 * the result's #mma v3, B from #nvmma_shared memory, an f32 accumulator of
 * the result's type with an #mma version 3 layout: whole warpgroups along M
 * (wpc[0] a multiple of 4), instr [64, n, 16] with n a power of two in
 * 8..256; f16 or bf16 operands. */
static void verify_warp_group_dot(Verifier *v, const IrOp *op) {
    const IrType *a = OPND(0), *b = OPND(1), *c = OPND(2), *r = RES(0);
    if ((!is_tile(a) && !is_smem(a)) || a->rank != 2 || !is_smem(b) || b->rank != 2 || !is_tile(c) || c->rank != 2) {
        op_error(v, op, "expects A (2-D smem or tile), B (2-D smem) and a 2-D accumulator tile, got %s, %s, %s",
                 type_str(v, a), type_str(v, b), type_str(v, c));
        return;
    }
    if (r != c)
        op_error(v, op, "result type %s differs from the accumulator's %s", type_str(v, r), type_str(v, c));
    if ((a->elem->kind != IR_F16 && a->elem->kind != IR_BF16) || a->elem != b->elem)
        op_error(v, op, "operands 0 and 1 must both be f16 or both bf16, got %s and %s", type_str(v, a->elem),
                 type_str(v, b->elem));
    if (c->elem->kind != IR_F32)
        op_error(v, op, "the accumulator (operand 2) must be f32, got %s", type_str(v, c->elem));
    int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
    if (b->shape[0] != K || c->shape[0] != M || c->shape[1] != N) {
        op_error(v, op, "shapes %s x %s -> %s do not multiply", shape_str(v, a), shape_str(v, b), shape_str(v, c));
        return;
    }
    const Layout *rl = c->layout;
    if (!rl || rl->kind != LAYOUT_MMA || rl->mma.version != 3) {
        op_error(v, op, "the accumulator needs an #mma version 3 layout, got %s", type_str(v, c));
        return;
    }
    int n = rl->mma.instr[1];
    if (rl->mma.wpc[0] % 4 || rl->mma.instr[0] != 64 || rl->mma.instr[2] != 16 || n < 8 || n > 256 || (n & (n - 1)))
        op_error(v, op, "#mma version 3 needs wpc[0] a multiple of 4 and instr [64, n, 16] with n a power of two in "
                        "8..256");
    if (M % 64 || K % 16 || N % n)
        op_error(v, op, "the %lldx%lldx%lld dot does not divide into the m64 n%d k16 instructions", (long long)M,
                 (long long)K, (long long)N, n);
    if (is_tile(a) && (!a->layout || a->layout->kind != LAYOUT_DOT_OP || a->layout->dot_op.idx != 0 ||
                       a->layout->dot_op.parent != rl))
        op_error(v, op, "operand 0 in registers needs #dot_op<idx = 0> of the result's #mma layout, got %s",
                 type_str(v, a));
    for (int i = 0; i < 2; i++) {
        const IrType *t = OPND(i);
        if (is_smem(t) && (!t->layout || t->layout->kind != LAYOUT_NVMMA_SHARED))
            op_error(v, op, "operand %d in shared memory needs an #nvmma_shared layout, got %s", i, type_str(v, t));
    }
}

/* The value types a yield in `region` must carry. */
static void check_yield(Verifier *v, const IrOp *op) {
    const IrOp *parent = op->parent ? op->parent->parent_op : NULL;
    if (!parent || (parent->opc != IR_OP_FOR && parent->opc != IR_OP_IF && parent->opc != IR_OP_WARP_SPECIALIZE &&
                    parent->opc != IR_OP_SCAN && !(parent->opc == IR_OP_WHILE && parent->regions[1] == op->parent))) {
        op_error(v, op, "must be in the region of a 'for', 'if', 'scan' or 'warp_specialize', or the body of a 'while'");
        return;
    }
    const char *pname = ir_op_info[parent->opc].name;
    if (parent->opc == IR_OP_SCAN) {
        const IrType *want = elem_of(parent->operands[0]->type);
        if (op->num_operands != 1)
            op_error(v, op, "yields %d values, but a 'scan' combine region yields 1", op->num_operands);
        else if (OPND(0) != want)
            op_error(v, op, "operand 0 has type %s, but the enclosing 'scan' combines %s", type_str(v, OPND(0)),
                     type_str(v, want));
        return;
    }
    if (op->num_operands != parent->num_results) {
        op_error(v, op, "yields %d value%s, but the enclosing '%s' has %d result%s", op->num_operands,
                 op->num_operands == 1 ? "" : "s", pname, parent->num_results, parent->num_results == 1 ? "" : "s");
        return;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (parent->results[i] && OPND(i) != parent->results[i]->type)
            op_error(v, op, "operand %d has type %s, but the enclosing '%s' result %d has type %s", i,
                     type_str(v, OPND(i)), pname, i, type_str(v, parent->results[i]->type));
}

static void check_return(Verifier *v, const IrOp *op) {
    if (!op->parent || op->parent->parent_op) {
        op_error(v, op, "must be the last op of a function body, not inside a region");
        return;
    }
    const IrFunc *f = v->func;
    if (f->kind == IR_FUNC_KERNEL) {
        if (op->num_operands)
            op_error(v, op, "in kernel @%s must not return values", f->name);
        return;
    }
    if (op->num_operands != f->num_results) {
        op_error(v, op, "returns %d value%s, but @%s has %d result%s", op->num_operands,
                 op->num_operands == 1 ? "" : "s", f->name, f->num_results, f->num_results == 1 ? "" : "s");
        return;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (OPND(i) != f->result_types[i])
            op_error(v, op, "operand %d has type %s, but @%s returns %s", i, type_str(v, OPND(i)), f->name,
                     type_str(v, f->result_types[i]));
}

static void verify_for(Verifier *v, const IrOp *op) {
    const IrType *lb = OPND(0);
    if (!is_int(lb) || is_i1(lb))
        op_error(v, op, "lower bound must be a scalar integer, got %s", type_str(v, lb));
    for (int i = 1; i < 3; i++)
        if (OPND(i) != lb)
            op_error(v, op, "%s has type %s, expected %s (the lower bound's type)", i == 1 ? "upper bound" : "step",
                     type_str(v, OPND(i)), type_str(v, lb));
    int n = op->num_results;
    for (int i = 0; i < n; i++)
        if (RES(i) != OPND(3 + i))
            op_error(v, op, "result %d has type %s, but its init value has type %s", i, type_str(v, RES(i)),
                     type_str(v, OPND(3 + i)));
    const IrBlock *body = op->regions[0];
    if (body->num_args != 1 + n) {
        op_error(v, op, "body has %d argument%s, expected %d (induction variable and one per init)", body->num_args,
                 body->num_args == 1 ? "" : "s", 1 + n);
        return;
    }
    if (body->args[0]->type != lb)
        op_error(v, op, "induction variable has type %s, expected %s", type_str(v, body->args[0]->type),
                 type_str(v, lb));
    for (int i = 0; i < n; i++)
        if (body->args[1 + i]->type != OPND(3 + i))
            op_error(v, op, "body argument %d has type %s, but its init value has type %s", 1 + i,
                     type_str(v, body->args[1 + i]->type), type_str(v, OPND(3 + i)));
}

static void verify_while(Verifier *v, const IrOp *op) {
    int n = op->num_results;
    for (int i = 0; i < n; i++)
        if (RES(i) != OPND(i))
            op_error(v, op, "result %d has type %s, but its init value has type %s", i, type_str(v, RES(i)),
                     type_str(v, OPND(i)));
    for (int r = 0; r < 2; r++) {
        const IrBlock *b = op->regions[r];
        if (b->num_args != n) {
            op_error(v, op, "region %d has %d argument%s, expected %d (one per init)", r, b->num_args,
                     b->num_args == 1 ? "" : "s", n);
            continue;
        }
        for (int i = 0; i < n; i++)
            if (b->args[i]->type != OPND(i))
                op_error(v, op, "region %d argument %d has type %s, but its init value has type %s", r, i,
                         type_str(v, b->args[i]->type), type_str(v, OPND(i)));
    }
}

static void verify_call(Verifier *v, const IrOp *op) {
    const IrAttr *a = ir_op_attr(op, "callee");
    if (!a || a->kind != IR_ATTR_SYMBOL || !a->s)
        return;
    const IrFunc *f = ir_module_find_func(v->m, a->s);
    if (!f) {
        op_error(v, op, "calls @%s, which is not defined", a->s);
        return;
    }
    if (f->kind == IR_FUNC_KERNEL) {
        op_error(v, op, "calls kernel @%s; only funcs can be called", a->s);
        return;
    }
    const IrBlock *body = f->body;
    int np = body ? body->num_args : 0;
    if (op->num_operands != np) {
        op_error(v, op, "passes %d argument%s, but @%s takes %d", op->num_operands, op->num_operands == 1 ? "" : "s",
                 a->s, np);
        return;
    }
    for (int i = 0; i < np; i++)
        if (OPND(i) != body->args[i]->type)
            op_error(v, op, "argument %d has type %s, but @%s expects %s", i, type_str(v, OPND(i)), a->s,
                     type_str(v, body->args[i]->type));
    if (op->num_results != f->num_results) {
        op_error(v, op, "has %d result%s, but @%s returns %d", op->num_results, op->num_results == 1 ? "" : "s", a->s,
                 f->num_results);
        return;
    }
    for (int i = 0; i < f->num_results; i++)
        if (RES(i) != f->result_types[i])
            op_error(v, op, "result %d has type %s, but @%s returns %s", i, type_str(v, RES(i)), a->s,
                     type_str(v, f->result_types[i]));
}

/* A buffer whose elements a tile moves to or from: its #shared layout (if
 * any) places every dimension, so it has the buffer's rank (a ring's
 * layout may describe one stage, but a ring is not read or written whole). */
static void check_buffer_layout(Verifier *v, const IrOp *op, const IrType *buf) {
    if (buf->layout && buf->layout->rank != buf->rank)
        op_error(v, op, "buffer %s: its #%s layout has rank %d, expected %d", type_str(v, buf),
                 ir_layout_kind_name(buf->layout->kind), buf->layout->rank,
                 buf->rank);
}

static void verify_shared_ops(Verifier *v, const IrOp *op) {
    switch (op->opc) {
    case IR_OP_LOCAL_ALLOC: {
        const IrType *r = RES(0);
        if (!is_smem(r)) {
            op_error(v, op, "result must be shared memory (smem<...>), got %s", type_str(v, r));
            return;
        }
        if (op->num_operands == 1) {
            const IrType *s = OPND(0);
            if (!is_tile(s) || s->elem != r->elem || !same_shape(s, r))
                op_error(v, op, "initial value %s does not match the buffer %s", type_str(v, s), type_str(v, r));
            else
                check_buffer_layout(v, op, r);
        }
        return;
    }
    case IR_OP_LOCAL_LOAD: {
        const IrType *s = OPND(0), *r = RES(0);
        if (!is_smem(s) || !is_tile(r) || s->elem != r->elem || !same_shape(s, r))
            op_error(v, op, "loads %s from %s; expected a tile of the buffer's shape and element type", type_str(v, r),
                     type_str(v, s));
        else
            check_buffer_layout(v, op, s);
        return;
    }
    case IR_OP_LOCAL_STORE: {
        const IrType *t = OPND(0), *s = OPND(1);
        if (!is_tile(t) || !is_smem(s) || t->elem != s->elem || !same_shape(t, s))
            op_error(v, op, "stores %s into %s; expected a tile of the buffer's shape and element type", type_str(v, t),
                     type_str(v, s));
        else
            check_buffer_layout(v, op, s);
        return;
    }
    case IR_OP_MEMDESC_INDEX: {
        const IrType *s = OPND(0), *r = RES(0);
        if (!is_int(OPND(1)) || is_i1(OPND(1)))
            op_error(v, op, "operand 1 (the stage) must be a scalar integer, got %s", type_str(v, OPND(1)));
        bool good = is_smem(s) && is_smem(r) && s->rank >= 2 && r->rank == s->rank - 1 && r->elem == s->elem;
        for (int i = 0; good && i < r->rank; i++)
            good = r->shape[i] == s->shape[i + 1];
        if (!good)
            op_error(v, op, "result %s is not one stage of the ring %s", type_str(v, r), type_str(v, s));
        return;
    }
    case IR_OP_MEMDESC_TRANS: {
        const IrType *s = OPND(0), *r = RES(0);
        const IrAttr *a = ir_op_attr(op, "perm");
        if (!is_smem(s) || !is_smem(r) || r->elem != s->elem || r->rank != s->rank) {
            op_error(v, op, "result %s is not a view of the buffer %s", type_str(v, r), type_str(v, s));
            return;
        }
        if (!a || a->kind != IR_ATTR_INTS || a->list.n != s->rank) {
            op_error(v, op, "perm must list %d dimensions", s->rank);
            return;
        }
        int to_new[IR_MAX_RANK];
        if (!check_perm(v, op, a, s, r, to_new))
            return;
        /* The same bytes: the layout's dimensions renamed, nothing else. */
        const Layout *ls = s->layout, *lr = r->layout;
        bool same = !ls == !lr;
        if (ls && lr) {
            same = ls->kind == lr->kind && ls->rank == lr->rank && ls->rank == s->rank &&
                   (ls->kind == LAYOUT_SHARED || ls->kind == LAYOUT_NVMMA_SHARED);
            for (int i = 0; same && i < ls->rank; i++) {
                if (ls->kind == LAYOUT_SHARED)
                    same = lr->shared.order[i] == to_new[ls->shared.order[i]] && lr->shared.vec == ls->shared.vec &&
                           lr->shared.per_phase == ls->shared.per_phase && lr->shared.max_phase == ls->shared.max_phase;
                else
                    same = lr->nvmma.order[i] == to_new[ls->nvmma.order[i]] && lr->nvmma.swizzle == ls->nvmma.swizzle;
            }
        }
        if (!same)
            op_error(v, op, "the layout of %s is not that of %s with its dimensions permuted", type_str(v, r),
                     type_str(v, s));
        return;
    }
    case IR_OP_ASYNC_COPY: {
        const IrType *p = OPND(0), *s = OPND(1);
        if (!is_tile(p) || !is_ptr(p->elem)) {
            op_error(v, op, "operand 0 must be a tile of pointers, got %s", type_str(v, p));
            return;
        }
        if (!is_smem(s) || s->elem != p->elem->elem || !same_shape(s, p))
            op_error(v, op, "copies %s into %s; expected a buffer of the pointee type and the pointer's shape",
                     type_str(v, p), type_str(v, s));
        if (op->num_operands > 2 && (!is_i1(elem_of(OPND(2))) || !same_form(OPND(2), p)))
            op_error(v, op, "operand 2 (the mask) has type %s, expected i1 shaped like the pointer %s",
                     type_str(v, OPND(2)), type_str(v, p));
        if (op->num_operands > 3 && (elem_of(OPND(3)) != p->elem->elem || !same_form(OPND(3), p)))
            op_error(v, op, "operand 3 (the other value) has type %s, expected %s shaped like the pointer",
                     type_str(v, OPND(3)), type_str(v, p->elem->elem));
        return;
    }
    default: tc_unreachable("not a shared-memory op");
    }
}

/* Is t a buffer of mbarriers: smem<S x i64>? */
static bool is_barriers(const IrType *t) {
    return is_smem(t) && t->rank == 1 && t->elem->kind == IR_I64;
}

static bool is_scalar_kind(const IrType *t, IrTypeKind k) {
    return t && t->kind == k;
}

/* warp_specialize: in a kernel's body, once; its region takes no
 * arguments; the register counts setmaxnreg takes (multiples of 8, 24 to
 * 256). The kernel's attributes are checked with the kernel. */
static void verify_warp_specialize(Verifier *v, const IrOp *op) {
    if (v->func->kind != IR_FUNC_KERNEL || op->parent != v->func->body)
        op_error(v, op, "must be in the body of a kernel, not in a function or a region");
    if (v->num_warp_specialize == 2)
        op_error(v, op, "is the second of the kernel: a kernel has at most one");
    if (op->regions[0]->num_args)
        op_error(v, op, "region must not have arguments");
    static const char *const regs[] = {"producer_regs", "consumer_regs"};
    for (int i = 0; i < 2; i++) {
        const IrAttr *a = ir_attr_get(op->num_attrs, op->attrs, regs[i]);
        if (a && (a->kind != IR_ATTR_INT || a->i < 24 || a->i > 256 || a->i % 8))
            op_error(v, op, "%s must be a multiple of 8 from 24 to 256 (setmaxnreg)", regs[i]);
    }
}

/* The tensor map (operand 0), the buffer (operand 1) and the coordinates
 * (operands `first` on) of async_tma_copy and async_tma_store: false when
 * something was reported. */
static bool verify_tma_box(Verifier *v, const IrOp *op, int first, const char *verb) {
    const IrValue *map = op->operands[0];
    const IrType *buf = OPND(1);
    IrTensorMap tm;
    const char *why;
    if (!is_scalar_kind(OPND(0), IR_TENSORMAP) || map->def || map->block != v->func->body) {
        op_error(v, op, "operand 0 must be a tensormap parameter of the kernel, got %s", type_str(v, OPND(0)));
        return false;
    }
    if (!ir_tensormap_of(v->func, map, &tm, &why))
        return false; /* reported with the parameter */
    if (op->num_operands != first + tm.rank) {
        op_error(v, op, "the tensor map has %d dimensions, so it takes %d coordinates, got %d", tm.rank, tm.rank,
                 op->num_operands - first);
        return false;
    }
    bool ok = true;
    for (int i = first; i < op->num_operands; i++)
        if (!is_scalar_kind(OPND(i), IR_I32)) {
            op_error(v, op, "coordinate %d must be i32, got %s", i - first, type_str(v, OPND(i)));
            ok = false;
        }
    const IrType *elem = v->func->body->args[tm.base]->type->elem;
    const Layout *l = is_smem(buf) ? buf->layout : NULL;
    if (is_smem(buf) && buf->rank == 1 && buf->elem == elem && l && l->kind == LAYOUT_SHARED &&
        l->shared.max_phase == 1 && tm.swizzle == 0) {
        /* a row vector: dimension 0 along the buffer, every other dimension a box of 1 */
        for (int d = 1; d < tm.rank; d++)
            if (tm.box[d] != 1) {
                op_error(v, op, "the map's dimension %d has a box of %lld; a 1-D buffer takes boxes of 1 there", d,
                         (long long)tm.box[d]);
                return false;
            }
        if (buf->shape[0] % tm.box[0]) {
            op_error(v, op, "the map's boxes (%lld) do not tile the buffer %s", (long long)tm.box[0],
                     type_str(v, buf));
            return false;
        }
        return ok;
    }
    if (!is_smem(buf) || buf->rank != 2 || buf->elem != elem || !l || l->kind != LAYOUT_NVMMA_SHARED ||
        l->nvmma.swizzle != tm.swizzle) {
        op_error(v, op,
                 "%s %s; expected a 2-D buffer of %s in #nvmma_shared with the map's swizzle (%d), or a 1-D "
                 "unswizzled #shared one (swizzle 0)",
                 verb,
                 type_str(v, buf), type_str(v, elem), tm.swizzle);
        return false;
    }
    /* the map's dimension 0 is the buffer's contiguous one, dimension 1 the other; the boxes tile the buffer */
    int c = l->nvmma.order[0];
    if (tm.rank < 2 || buf->shape[c] % tm.box[0] || buf->shape[1 - c] % tm.box[1]) {
        op_error(v, op, "the map's boxes (%lld x %lld) do not tile the buffer %s", (long long)tm.box[0],
                 tm.rank > 1 ? (long long)tm.box[1] : 1LL, type_str(v, buf));
        ok = false;
    }
    for (int d = 2; d < tm.rank; d++)
        if (tm.box[d] != 1) {
            op_error(v, op, "the map's dimension %d has a box of %lld; only dimensions 0 and 1 may be wider than 1", d,
                     (long long)tm.box[d]);
            ok = false;
        }
    return ok;
}

/* mbarrier_* and async_tma_copy (docs/ir.md, "TMA"). */
static void verify_tma_ops(Verifier *v, const IrOp *op) {
    int bars = op->opc == IR_OP_ASYNC_TMA_COPY ? 2 : 0;
    if (!is_barriers(OPND(bars))) {
        op_error(v, op, "operand %d must be a buffer of mbarriers, smem<Nxi64>, got %s", bars, type_str(v, OPND(bars)));
        return;
    }
    int64_t x;
    switch (op->opc) {
    case IR_OP_MBARRIER_INIT:
        if (int_attr(op, "count", &x) && (x < 1 || x > 1024))
            op_error(v, op, "count must be 1 to 1024 arrivals, got %lld", (long long)x);
        return;
    case IR_OP_MBARRIER_INVAL: return;
    case IR_OP_MBARRIER_EXPECT:
        if (!is_scalar_kind(OPND(1), IR_I32) || !is_scalar_kind(OPND(2), IR_I1))
            op_error(v, op, "operands 1 and 2 must be the i32 index and the i1 predicate, got %s and %s",
                     type_str(v, OPND(1)), type_str(v, OPND(2)));
        if (int_attr(op, "bytes", &x) && (x < 1 || x >= (1 << 20)))
            op_error(v, op, "bytes must be 1 to 2^20 - 1, got %lld", (long long)x);
        return;
    case IR_OP_MBARRIER_ARRIVE:
        if (!is_scalar_kind(OPND(1), IR_I32) || !is_scalar_kind(OPND(2), IR_I1))
            op_error(v, op, "operands 1 and 2 must be the i32 index and the i1 predicate, got %s and %s",
                     type_str(v, OPND(1)), type_str(v, OPND(2)));
        return;
    case IR_OP_MBARRIER_WAIT:
        if (!is_scalar_kind(OPND(1), IR_I32) || !is_scalar_kind(OPND(2), IR_I32))
            op_error(v, op, "operands 1 and 2 must be the i32 index and the i32 phase, got %s and %s",
                     type_str(v, OPND(1)), type_str(v, OPND(2)));
        return;
    default: break;
    }
    /* async_tma_copy */
    if (!is_scalar_kind(OPND(3), IR_I32) || !is_scalar_kind(OPND(4), IR_I1))
        op_error(v, op, "operands 3 and 4 must be the i32 barrier index and the i1 predicate, got %s and %s",
                 type_str(v, OPND(3)), type_str(v, OPND(4)));
    if (!verify_tma_box(v, op, 5, "copies into"))
        return;
    /* row and rows: the boxes of those rows only (gathered rows), whole boxes of the buffer */
    const IrAttr *row = ir_attr_get(op->num_attrs, op->attrs, "row"), *rows = ir_attr_get(op->num_attrs, op->attrs, "rows");
    IrTensorMap tm;
    const char *why;
    if ((!row && !rows) || !ir_tensormap_of(v->func, op->operands[0], &tm, &why))
        return;
    const IrType *buf = OPND(1);
    if (buf->rank != 2) {
        op_error(v, op, "row and rows (gathered rows) need a 2-D buffer, got %s", type_str(v, buf));
        return;
    }
    int64_t n = buf->shape[1 - buf->layout->nvmma.order[0]];
    bool ok = row && rows && row->kind == IR_ATTR_INT && rows->kind == IR_ATTR_INT && row->i >= 0 && rows->i >= 1 &&
              row->i + rows->i <= n && row->i % tm.box[1] == 0 && rows->i % tm.box[1] == 0;
    if (!ok) {
        op_error(v, op, "row and rows must come together and give whole boxes of %lld rows within the buffer's %lld",
                 (long long)tm.box[1], (long long)n);
        return;
    }
    /* a box that starts at another row than 0 must start on a whole swizzle atom (8 rows of the swizzle width) */
    int64_t bytes = tm.box[1] * tm.box[0] * ir_type_bytes(buf->elem), atom = 8 * (tm.swizzle ? tm.swizzle : 16);
    if (row->i && bytes % atom)
        op_error(v, op, "boxes of %lld x %lld elements from row %lld do not start on a swizzle atom of %lld bytes",
                 (long long)tm.box[0], (long long)tm.box[1], (long long)row->i, (long long)atom);
}

/* async_tma_store and async_tma_store_wait (docs/ir.md, "TMA"). */
static void verify_tma_store_ops(Verifier *v, const IrOp *op) {
    if (op->opc == IR_OP_ASYNC_TMA_STORE_WAIT) {
        int64_t x;
        if (int_attr(op, "pending", &x) && (x < 0 || x > 63))
            op_error(v, op, "pending must be 0 to 63, got %lld", (long long)x);
        for (int i = 0; i < op->num_operands; i++)
            if (!is_smem(OPND(i)))
                op_error(v, op, "operand %d must be a shared-memory buffer, got %s", i, type_str(v, OPND(i)));
        return;
    }
    const char *kind = ir_op_get_word(op, "kind");
    if (kind && strcmp(kind, "store") != 0 && strcmp(kind, "add") != 0)
        op_error(v, op, "kind must be store or add, got %s", kind);
    if (!is_scalar_kind(OPND(2), IR_I1))
        op_error(v, op, "operand 2 must be the i1 predicate, got %s", type_str(v, OPND(2)));
    if (!verify_tma_box(v, op, 3, "stores from"))
        return;
    const IrType *elem = OPND(1)->elem;
    if (kind && strcmp(kind, "add") == 0 && elem->kind != IR_F32 && elem->kind != IR_I32)
        op_error(v, op, "kind = add takes f32 or i32 elements, got %s", type_str(v, elem));
}

/* print: the program ids (three i32 scalars), then scalars or tiles of
 * numbers or pointers. */
static void verify_print(Verifier *v, const IrOp *op) {
    for (int i = 0; i < 3; i++)
        if (!is_scalar(OPND(i)) || OPND(i)->kind != IR_I32)
            op_error(v, op, "operand %d (program id %c) must be i32, got %s", i, "xyz"[i], type_str(v, OPND(i)));
    for (int i = 3; i < op->num_operands; i++) {
        const IrType *t = OPND(i);
        if (!(is_scalar(t) || (is_tile(t) && is_scalar(t->elem))))
            op_error(v, op, "operand %d must be a scalar or a tile, got %s", i, type_str(v, t));
    }
}

static void verify_cluster_reduce(Verifier *v, const IrOp *op) {
    int64_t x;
    check_word(v, op, "kind", "sum max min logsumexp");
    const char *kind = ir_op_get_word(op, "kind");
    if (!is_scalar(OPND(0)) || (OPND(0)->kind != IR_I32 && OPND(0)->kind != IR_F32))
        op_error(v, op, "operand must be a scalar i32 or f32, got %s", type_str(v, OPND(0)));
    else if (kind && strcmp(kind, "logsumexp") == 0 && OPND(0)->kind != IR_F32)
        op_error(v, op, "a logsumexp's operand must be f32, got %s", type_str(v, OPND(0)));
    else if (RES(0) != OPND(0))
        op_error(v, op, "result type %s differs from the operand's %s", type_str(v, RES(0)), type_str(v, OPND(0)));
    if (int_attr(op, "ctas", &x) && (x < 1 || x > IR_MAX_CLUSTER_CTAS))
        op_error(v, op, "ctas must be 1..%d, got %lld", IR_MAX_CLUSTER_CTAS, (long long)x);
    const IrFunc *f = v->func;
    if (f && int_attr(op, "ctas", &x) && ir_func_get_int(f, "num_ctas", 1) != x)
        op_error(v, op, "ctas = %lld differs from the function's num_ctas = %lld", (long long)x,
                 (long long)ir_func_get_int(f, "num_ctas", 1));
}

/* The op's own rule, once counts are known to be right. */
static void verify_op_types(Verifier *v, const IrOp *op) {
    for (int i = 0; i < op->num_results; i++) {
        char what[32];
        snprintf(what, sizeof what, "result %d", i);
        check_type(v, op, what, RES(i));
    }
    for (int i = 0; i < op->num_operands; i++)
        if (!op->operands[i]->type)
            return; /* reported where it was defined */
    for (int i = 0; i < op->num_results; i++)
        if (!RES(i))
            return;
    if (ir_op_info[op->opc].flags & OPF_ELEMENTWISE) {
        verify_elementwise(v, op);
        return;
    }
    int64_t x;
    switch (op->opc) {
    case IR_OP_CONSTANT: verify_constant(v, op); break;
    case IR_OP_PROGRAM_ID:
    case IR_OP_NUM_PROGRAMS:
        if (RES(0)->kind != IR_I32)
            op_error(v, op, "result must be i32, got %s", type_str(v, RES(0)));
        if (int_attr(op, "axis", &x) && (x < 0 || x > 2))
            op_error(v, op, "axis must be 0, 1 or 2, got %lld", (long long)x);
        break;
    case IR_OP_ARANGE: {
        int64_t start, end;
        if (!int_attr(op, "start", &start) || !int_attr(op, "end", &end))
            break;
        const IrType *r = RES(0);
        if (end <= start)
            op_error(v, op, "end (%lld) must be greater than start (%lld)", (long long)end, (long long)start);
        else if (!is_tile(r) || r->rank != 1 || r->elem->kind != IR_I32 || r->shape[0] != end - start)
            op_error(v, op, "result must be tile<%lldxi32>, got %s", (long long)(end - start), type_str(v, r));
        break;
    }
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_RESHAPE:
    case IR_OP_TRANS:
    case IR_OP_CONVERT_LAYOUT: verify_shape_op(v, op); break;
    case IR_OP_LOAD:
        check_memory_access(v, op, RES(0), "result", 1);
        if (op->num_operands == 3 && OPND(2) != RES(0))
            op_error(v, op, "operand 2 (the other value) has type %s, expected the result type %s",
                     type_str(v, OPND(2)), type_str(v, RES(0)));
        break;
    case IR_OP_STORE:
        check_memory_access(v, op, OPND(1), "operand 1 (the value)", 2);
        check_writable(v, op);
        break;
    case IR_OP_ATOMIC:
        check_word(v, op, "kind", "add max min xchg");
        check_writable(v, op);
        check_memory_access(v, op, OPND(1), "operand 1 (the value)", 2);
        if (RES(0) != OPND(1))
            op_error(v, op, "result type %s differs from the value's %s", type_str(v, RES(0)), type_str(v, OPND(1)));
        if (!is_number(elem_of(OPND(1))))
            op_error(v, op, "value must be a number or a tile of numbers");
        check_not_fp8(v, op, elem_of(OPND(1)));
        break;
    case IR_OP_REDUCE: verify_reduce(v, op); break;
    case IR_OP_CLUSTER_REDUCE: verify_cluster_reduce(v, op); break;
    case IR_OP_SCAN: verify_scan(v, op); break;
    case IR_OP_DOT: verify_dot(v, op); break;
    case IR_OP_FOR: verify_for(v, op); break;
    case IR_OP_WHILE: verify_while(v, op); break;
    case IR_OP_CONDITION: {
        const IrOp *parent = op->parent ? op->parent->parent_op : NULL;
        if (!parent || parent->opc != IR_OP_WHILE || parent->regions[0] != op->parent)
            op_error(v, op, "must end region 0 (the condition) of a 'while'");
        if (!is_i1(OPND(0)))
            op_error(v, op, "operand must be a scalar i1, got %s", type_str(v, OPND(0)));
        break;
    }
    case IR_OP_IF:
        if (!is_i1(OPND(0)))
            op_error(v, op, "condition must be a scalar i1, got %s", type_str(v, OPND(0)));
        for (int r = 0; r < 2; r++)
            if (op->regions[r]->num_args)
                op_error(v, op, "region %d must not have arguments", r);
        break;
    case IR_OP_YIELD: check_yield(v, op); break;
    case IR_OP_RETURN: check_return(v, op); break;
    case IR_OP_CALL: verify_call(v, op); break;
    case IR_OP_ASSERT:
        if (!is_i1(elem_of(OPND(0))) || is_smem(OPND(0)))
            op_error(v, op, "condition must be i1 or a tile of i1, got %s", type_str(v, OPND(0)));
        if (ir_op_attr(op, "message") && ir_op_attr(op, "message")->kind != IR_ATTR_STRING)
            op_error(v, op, "attribute 'message' must be a string");
        break;
    case IR_OP_PRINT: verify_print(v, op); break;
    case IR_OP_LOCAL_ALLOC:
    case IR_OP_LOCAL_LOAD:
    case IR_OP_LOCAL_STORE:
    case IR_OP_MEMDESC_INDEX:
    case IR_OP_MEMDESC_TRANS:
    case IR_OP_ASYNC_COPY: verify_shared_ops(v, op); break;
    case IR_OP_ASYNC_WAIT:
        if (int_attr(op, "num", &x) && x < 0)
            op_error(v, op, "num must be >= 0, got %lld", (long long)x);
        break;
    case IR_OP_WARP_GROUP_DOT: verify_warp_group_dot(v, op); break;
    case IR_OP_WARP_GROUP_DOT_WAIT:
        if (int_attr(op, "pending", &x) && (x < 0 || x > 7))
            op_error(v, op, "pending must be in 0..7, got %lld", (long long)x);
        if (op->num_results != op->num_operands)
            op_error(v, op, "has %d results for %d operands; each operand must have its result", op->num_results,
                     op->num_operands);
        for (int i = 0; i < op->num_results && i < op->num_operands; i++)
            if (RES(i) != OPND(i))
                op_error(v, op, "result %d has type %s, operand %d %s", i, type_str(v, RES(i)), i,
                         type_str(v, OPND(i)));
        break;
    case IR_OP_MBARRIER_INIT:
    case IR_OP_MBARRIER_INVAL:
    case IR_OP_MBARRIER_EXPECT:
    case IR_OP_MBARRIER_WAIT:
    case IR_OP_ASYNC_TMA_COPY:
    case IR_OP_MBARRIER_ARRIVE: verify_tma_ops(v, op); break;
    case IR_OP_ASYNC_TMA_STORE:
    case IR_OP_ASYNC_TMA_STORE_WAIT: verify_tma_store_ops(v, op); break;
    case IR_OP_WARP_SPECIALIZE: verify_warp_specialize(v, op); break;
    case IR_OP_WARP_GROUP_ID:
        if (!is_scalar_kind(op->results[0]->type, IR_I32))
            op_error(v, op, "result must be i32, got %s", type_str(v, op->results[0]->type));
        break;
    case IR_OP_NAMED_BARRIER_WAIT:
    case IR_OP_NAMED_BARRIER_ARRIVE: {
        int64_t t;
        if (!is_scalar_kind(OPND(0), IR_I32))
            op_error(v, op, "operand 0 must be the i32 barrier id, got %s", type_str(v, OPND(0)));
        if (int_attr(op, "threads", &t) && (t < 32 || t > 1024 || t % 32))
            op_error(v, op, "threads must be a multiple of 32 from 32 to 1024, got %lld", (long long)t);
        break;
    }
    case IR_OP_FENCE_ASYNC_SHARED:
    case IR_OP_ASYNC_COMMIT:
    case IR_OP_BARRIER: break;
    default: tc_unreachable("verify: unhandled op %s", ir_op_info[op->opc].name);
    }
}

/* ---- scopes and the walk ---- */

static void define(Verifier *v, const IrValue *val) {
    ir_map_put(&v->scope, val, VISIBLE);
    if (v->num_defined == v->cap_defined) {
        size_t cap = v->cap_defined ? v->cap_defined * 2 : 64;
        v->defined = arena_grow(&v->arena, v->defined, sizeof(IrValue *) * v->num_defined, sizeof(IrValue *) * cap);
        v->cap_defined = cap;
    }
    v->defined[v->num_defined++] = val;
}

static void check_operands_in_scope(Verifier *v, const IrOp *op) {
    for (int i = 0; i < op->num_operands; i++) {
        const IrValue *val = op->operands ? op->operands[i] : NULL;
        if (!val)
            continue; /* reported by check_counts */
        void *state = ir_map_get(&v->scope, val);
        if (state == RETIRED)
            op_error(v, op, "operand %d is defined inside a region that does not contain this op", i);
        else if (!state)
            op_error(v, op, "operand %d is used before its definition (or defined in another function)", i);
    }
}

static void verify_block(Verifier *v, const IrBlock *b) {
    size_t mark = v->num_defined;
    /* The terminator: `return` ends a function body, `yield` a region.
     * Checked first, so that messages come out in line order. */
    const IrOp *last = b->last;
    bool cond_region = b->parent_op && b->parent_op->opc == IR_OP_WHILE && b->parent_op->regions[0] == b;
    IrOpcode want = cond_region ? IR_OP_CONDITION : b->parent_op ? IR_OP_YIELD : IR_OP_RETURN;
    if (!last || last->opc != want) {
        if (last && (ir_op_info[last->opc].flags & OPF_TERMINATOR))
            ; /* the wrong terminator: its own check reported it */
        else if (b->parent_op)
            op_error(v, b->parent_op, "region %d must end with '%s'",
                     b->parent_op->num_regions > 1 && b->parent_op->regions[1] == b ? 1 : 0,
                     cond_region ? "condition" : "yield");
        else
            func_error(v, "body must end with 'return'");
    }
    for (int i = 0; i < b->num_args; i++) {
        const IrValue *a = b->args[i];
        if (!a || a->block != b || a->def || a->index != i) {
            if (b->parent_op)
                op_error(v, b->parent_op, "block argument %d does not point back to its block", i);
            else
                func_error(v, "parameter %d does not point back to the body", i);
            continue;
        }
        define(v, a);
        if (b->parent_op) {
            char what[40];
            snprintf(what, sizeof what, "block argument %d", i);
            check_type(v, b->parent_op, what, a->type);
        } else {
            char what[32];
            snprintf(what, sizeof what, "parameter %d", i);
            check_type(v, NULL, what, a->type);
            IrTensorMap tm;
            const char *why;
            if (a->type && a->type->kind == IR_TENSORMAP && v->func->kind == IR_FUNC_KERNEL &&
                !ir_tensormap_of(v->func, a, &tm, &why))
                func_error(v, "tensormap parameter %d: %s", i, why);
        }
    }
    for (const IrOp *op = b->first; op; op = op->next) {
        if (op->parent != b)
            op_error(v, op, "does not point back to its block");
        if ((ir_op_info[op->opc].flags & OPF_TERMINATOR) && op->next)
            op_error(v, op, "must be the last op of its block");
        check_operands_in_scope(v, op);
        check_required_attrs(v, op);
        /* counted here, before its own checks: one that fails them is still the kernel's op */
        v->num_warp_specialize += op->opc == IR_OP_WARP_SPECIALIZE;
        bool counts_ok = check_counts(v, op);
        if (counts_ok)
            verify_op_types(v, op);
        if (counts_ok && v->in_combine)
            check_combine_op(v, op);
        v->in_combine += op->opc == IR_OP_SCAN;
        for (int r = 0; r < op->num_regions; r++)
            if (op->regions && op->regions[r])
                verify_block(v, op->regions[r]);
        v->in_combine -= op->opc == IR_OP_SCAN;
        for (int i = 0; i < op->num_results; i++)
            if (op->results && op->results[i])
                define(v, op->results[i]);
    }
    for (size_t i = mark; i < v->num_defined; i++)
        ir_map_put(&v->scope, v->defined[i], RETIRED);
    v->num_defined = mark;
}

/* The launch attributes of a kernel, when present: integers within the
 * limits the API enforces for tc_options (passes and codegen rely on them). */
static void check_kernel_attrs(Verifier *v, const IrFunc *f) {
    const IrAttr *w = ir_attr_get(f->num_attrs, f->attrs, "num_warps");
    if (w && w->kind != IR_ATTR_INT)
        func_error(v, "attribute 'num_warps' must be an integer");
    else if (w && (w->i < 1 || w->i > IR_MAX_NUM_WARPS || (w->i & (w->i - 1))))
        func_error(v, "attribute 'num_warps' must be a power of two from 1 to %d, got %lld", IR_MAX_NUM_WARPS,
                   (long long)w->i);
    const IrAttr *s = ir_attr_get(f->num_attrs, f->attrs, "num_stages");
    if (s && s->kind != IR_ATTR_INT)
        func_error(v, "attribute 'num_stages' must be an integer");
    else if (s && (s->i < 0 || s->i > IR_MAX_NUM_STAGES))
        func_error(v, "attribute 'num_stages' must be from 0 to %d, got %lld", IR_MAX_NUM_STAGES, (long long)s->i);
    const IrAttr *c = ir_attr_get(f->num_attrs, f->attrs, "num_ctas");
    if (c && (c->kind != IR_ATTR_INT || c->i < 1 || c->i > IR_MAX_CLUSTER_CTAS))
        func_error(v, "attribute 'num_ctas' must be an integer from 1 to %d", IR_MAX_CLUSTER_CTAS);
    const IrAttr *m = ir_attr_get(f->num_attrs, f->attrs, "min_programs_per_sm");
    const IrAttr *p = ir_attr_get(f->num_attrs, f->attrs, "producer_warps");
    if (m && (m->kind != IR_ATTR_INT || m->i < 1 || m->i > TC_MAX_PROGRAMS_PER_SM))
        func_error(v, "attribute 'min_programs_per_sm' must be an integer from 1 to %d", TC_MAX_PROGRAMS_PER_SM);
    else if (m && w && w->kind == IR_ATTR_INT && (!p || p->kind == IR_ATTR_INT)) {
        int64_t threads = (w->i + (p ? p->i : 0)) * 32;
        if (threads > 0 && threads * m->i > IR_MAX_THREADS_PER_SM)
            func_error(v,
                       "attribute 'min_programs_per_sm' %lld: %lld programs of %lld threads exceed the %d an SM "
                       "holds",
                       (long long)m->i, (long long)m->i, (long long)threads, IR_MAX_THREADS_PER_SM);
    }
}

/* producer_warps: the warps a warp_specialize op adds to the kernel's
 * num_warps, whole warpgroups (4 or 8), present exactly when the kernel has
 * that op; num_warps then a multiple of 4 too, so that the producers start
 * a warpgroup. */
static void check_producer_warps(Verifier *v, const IrFunc *f) {
    const IrAttr *p = ir_attr_get(f->num_attrs, f->attrs, "producer_warps");
    if (!p && v->num_warp_specialize)
        func_error(v, "has a 'warp_specialize' op but no attribute 'producer_warps'");
    if (!p)
        return;
    if (p->kind != IR_ATTR_INT || (p->i != 4 && p->i != 8))
        func_error(v, "attribute 'producer_warps' must be 4 or 8 (whole warpgroups)");
    else if (!v->num_warp_specialize)
        func_error(v, "has attribute 'producer_warps' but no 'warp_specialize' op");
    const IrAttr *w = ir_attr_get(f->num_attrs, f->attrs, "num_warps");
    if (w && w->kind == IR_ATTR_INT && w->i % 4)
        func_error(v, "attribute 'num_warps' must be a multiple of 4 with 'producer_warps', got %lld", (long long)w->i);
    else if (w && w->kind == IR_ATTR_INT && p->kind == IR_ATTR_INT && (w->i + p->i) * 32 > 1024)
        func_error(v, "num_warps %lld and producer_warps %lld make more than 1024 threads", (long long)w->i,
                   (long long)p->i);
}

static bool verify_func(Verifier *v, const IrFunc *f) {
    v->func = f;
    if (!f->body) {
        func_error(v, "has no body");
        return false;
    }
    if (f->kind == IR_FUNC_KERNEL)
        check_kernel_attrs(v, f);
    if (f->kind == IR_FUNC_KERNEL && f->num_results)
        func_error(v, "a kernel cannot return values");
    for (int i = 0; i < f->num_results; i++) {
        char what[32];
        snprintf(what, sizeof what, "result type %d", i);
        check_type(v, NULL, what, f->result_types[i]);
    }
    if (f->body->parent_op)
        func_error(v, "body is owned by an op");
    v->num_warp_specialize = 0;
    verify_block(v, f->body);
    if (f->kind == IR_FUNC_KERNEL)
        check_producer_warps(v, f);
    return v->ok;
}

static void verifier_init(Verifier *v, const IrModule *m, DiagList *diags) {
    memset(v, 0, sizeof *v);
    v->diags = diags;
    v->m = m;
    v->ok = true;
    arena_init(&v->arena);
    ir_map_init(&v->scope, &v->arena);
}

bool ir_verify(const IrModule *m, DiagList *diags) {
    Verifier v;
    verifier_init(&v, m, diags);
    for (const IrFunc *f = m->first; f; f = f->next) {
        if (f->name && ir_module_find_func(m, f->name) != f) { /* the index holds the first of a name */
            v.func = f;
            func_error(&v, "is defined twice");
        }
        verify_func(&v, f);
    }
    arena_free(&v.arena);
    return v.ok;
}

bool ir_verify_func(const IrFunc *f, DiagList *diags) {
    Verifier v;
    verifier_init(&v, f->module, diags);
    bool ok = verify_func(&v, f);
    arena_free(&v.arena);
    return ok;
}
