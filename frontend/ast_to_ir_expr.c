/*
 * ast_to_ir_expr.c — expressions: values, types, promotion, broadcasting,
 * operators, indexing.
 *
 * Lowering an expression gives a Val (ast_to_ir.h): a compile-time scalar or an
 * IR value. Everything that can be folded in the front end is: constexpr
 * parameters and every operator whose operands are constants, so that shapes
 * (`arange(0, 2 * BLOCK)`), constexpr `if`s, ternaries and static_asserts
 * just work. A constant becomes an IR `constant` op only when a runtime
 * operation needs it, at that point, with that operation's type; when it
 * meets a tile it becomes a splat constant of the tile's type directly
 * (`constant {value = 0.0} : tile<64xf32>`), not a scalar plus a splat.
 *
 * Types follow the tile language's rules (frontend.h):
 *
 *   promotion   int with int -> the wider; float with float -> the wider,
 *               f16 with bf16 -> f32, f8e4m3 with f8e5m2 -> f16; int with
 *               float -> the float. An operation that would compute on
 *               fp8 (after promotion) is an error: cast first.
 *   weak        a literal (or an expression of literals only) has no type of
 *               its own: next to a typed operand it takes that operand's
 *               type (an int literal next to an i1 becomes i32, a float
 *               literal next to an int becomes f32); alone it is i32 (i64 if
 *               it does not fit) or f32. Two weak operands fold in 64-bit
 *               integers or doubles and stay weak.
 *   broadcast   NumPy's: shapes align on the right, each dimension equal or
 *               1; a scalar goes anywhere. The IR has no implicit
 *               broadcasting, so every step is an op: a scalar is `splat`,
 *               a lower rank gets `expand_dims` at axis 0 until the ranks
 *               match, and size-1 dimensions widen with one `broadcast`.
 *   pointers    ptr + int and int + ptr are `addptr` (any integer type for
 *               the offset, element units); ptr - int adds the negated
 *               offset; pointers compare with pointers of the same type.
 *
 * Element type first, then shape: a scalar is converted before it is
 * splatted, so a cast touches one element rather than a whole tile.
 *
 * Errors are reported once, where they happen; the result is then a
 * VAL_ERROR, which every later operation passes through silently, so one
 * mistake gives one message.
 */
#include "ast_to_ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- values ---- */

Val val_error(void) {
    Val v;
    memset(&v, 0, sizeof v);
    v.kind = VAL_ERROR;
    return v;
}

Val val_void(const char *what) {
    Val v = val_error();
    v.kind = VAL_VOID;
    v.what = what;
    return v;
}

Val val_ir(IrValue *x) {
    Val v = val_error();
    v.kind = VAL_IR;
    v.v = x;
    v.type = x->type;
    return v;
}

Val val_int(const IrType *type, int64_t i) {
    Val v = val_error();
    v.kind = VAL_CONST;
    v.type = type;
    v.i = ir_int_wrap(i, ir_type_bits(type));
    return v;
}

Val val_float(const IrType *type, double f) {
    Val v = val_error();
    v.kind = VAL_CONST;
    v.type = type;
    v.f = ir_float_round(type->kind, f);
    return v;
}

Val val_weak_int(Lower *L, int64_t i) {
    Val v = val_error();
    v.kind = VAL_CONST;
    v.weak = true;
    v.i = i;
    v.type = lower_scalar(L, (i >= INT32_MIN && i <= INT32_MAX) ? IR_I32 : IR_I64);
    return v;
}

Val val_weak_float(Lower *L, double f) {
    Val v = val_error();
    v.kind = VAL_CONST;
    v.weak = true;
    v.f = f;
    v.type = lower_scalar(L, IR_F32);
    return v;
}

const IrType *val_type(const Val *x) {
    return (x->kind == VAL_CONST || x->kind == VAL_IR) ? x->type : NULL;
}

const IrType *val_elem(const Val *x) {
    const IrType *t = val_type(x);
    return t ? ir_type_elem(t) : NULL;
}

Shape val_shape(const Val *x) {
    Shape s;
    memset(&s, 0, sizeof s);
    const IrType *t = val_type(x);
    if (t && t->kind == IR_TILE) {
        s.rank = t->rank;
        for (int i = 0; i < t->rank; i++)
            s.dim[i] = t->shape[i];
    }
    return s;
}

bool val_is_ptr(const Val *x) {
    const IrType *e = val_elem(x);
    return e && e->kind == IR_PTR;
}

bool val_truthy(const Val *x) {
    if (x->kind != VAL_CONST)
        return false;
    return ir_type_is_float(x->type) ? x->f != 0 : x->i != 0;
}

static bool is_weak(const Val *x) {
    return x->kind == VAL_CONST && x->weak;
}
static bool is_tile(const Val *x) {
    return val_shape(x).rank > 0;
}
static bool elem_is_int(const Val *x) {
    const IrType *e = val_elem(x);
    return e && ir_type_is_int(e);
}
static bool shape_eq(const Shape *a, const Shape *b) {
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

/* ---- types and their names in messages ---- */

const IrType *lower_scalar(Lower *L, IrTypeKind k) {
    if (!L->scalars[k])
        L->scalars[k] = ir_type_scalar(L->m, k);
    return L->scalars[k];
}

const IrType *lower_tile_type(Lower *L, const IrType *elem, const Shape *s) {
    if (s->rank == 0)
        return elem;
    return ir_type_tile(L->m, elem, s->rank, s->dim, NULL);
}

static void type_text(Buf *b, const IrType *t) {
    if (t->kind == IR_PTR) {
        buf_puts(b, "ptr<");
        type_text(b, t->elem);
        buf_puts(b, ">");
    } else if (t->kind == IR_TILE) {
        buf_puts(b, "tile<");
        for (int i = 0; i < t->rank; i++)
            buf_printf(b, "%lldx", (long long)t->shape[i]);
        type_text(b, t->elem);
        buf_puts(b, ">");
    } else {
        buf_puts(b, ir_scalar_name(t->kind));
    }
}

const char *lower_type_str(Lower *L, const IrType *t) {
    if (!t)
        return "?";
    Buf b;
    buf_init(&b);
    type_text(&b, t);
    char *s = arena_strdup(&L->tmp, b.data ? b.data : "");
    buf_free(&b);
    return s;
}

const char *lower_val_str(Lower *L, const Val *x) {
    if (is_weak(x))
        return ir_type_is_float(x->type) ? "a float literal" : "an integer literal";
    return lower_type_str(L, val_type(x));
}

const char *lower_shape_str(Lower *L, const Shape *s) {
    if (s->rank == 0)
        return "scalar";
    Buf b;
    buf_init(&b);
    for (int i = 0; i < s->rank; i++)
        buf_printf(&b, i ? "x%lld" : "%lld", (long long)s->dim[i]);
    char *r = arena_strdup(&L->tmp, b.data);
    buf_free(&b);
    return r;
}

void lower_at(Lower *L, const AstNode *n) {
    if (n)
        L->b.loc = n->loc;
}

void lower_error(Lower *L, const AstNode *n, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(L->diags, n ? n->loc : srcloc_none(), "%s", msg);
}

/* ---- materializing ---- */

/* A constant of any type (scalar or splat tile) with x's value. */
static IrValue *build_const(Lower *L, const Val *x, const IrType *type) {
    if (ir_type_is_float(x->type))
        return ir_build_const_float(&L->b, type, x->f);
    return ir_build_const_int(&L->b, type, x->i);
}

IrValue *lower_ir(Lower *L, const Val *x) {
    if (x->kind == VAL_IR)
        return x->v;
    if (x->kind == VAL_CONST)
        return build_const(L, x, x->type);
    tc_unreachable("lower_ir on a value-less Val");
}

/* ---- conversions ---- */

Val lower_convert(Lower *L, Val x, const IrType *elem, const AstNode *n) {
    if (x.kind != VAL_CONST && x.kind != VAL_IR)
        return x;
    const IrType *from = val_elem(&x);
    if (from == elem) {
        if (x.kind == VAL_CONST && x.weak && ir_type_is_float(elem))
            x.f = ir_float_round(elem->kind, x.f);
        x.weak = false;
        return x;
    }
    if (from->kind == IR_PTR || elem->kind == IR_PTR) {
        lower_error(L, n, "cannot convert %s to %s", lower_val_str(L, &x), lower_type_str(L, elem));
        return val_error();
    }
    if (x.kind == VAL_CONST) {
        if (ir_type_is_float(elem))
            return val_float(elem, ir_type_is_float(from) ? x.f : (double)x.i);
        if (ir_type_is_int(from))
            return val_int(elem, elem->kind == IR_I1 ? x.i != 0 : x.i);
        if (elem->kind == IR_I1)
            return val_int(elem, x.f != 0);
        if (!(x.f > -9.2233720368547758e18 && x.f < 9.2233720368547758e18)) {
            lower_error(L, n, "constant %g cannot be converted to %s", x.f, lower_type_str(L, elem));
            return val_error();
        }
        return val_int(elem, (int64_t)x.f);
    }
    IrValue *v = x.v;
    lower_at(L, n);
    if (elem->kind == IR_I1) {
        /* Casting to bool is a comparison with zero, as in C (fp8 compares
         * as the f32 it converts to exactly). */
        if (ir_type_is_fp8(from)) {
            from = lower_scalar(L, IR_F32);
            v = ir_build_unary(&L->b, IR_OP_CAST, ir_type_with_elem(L->m, v->type, from), v);
        }
        Val zero = ir_type_is_float(from) ? val_float(from, 0) : val_int(from, 0);
        IrValue *z = build_const(L, &zero, v->type);
        return val_ir(ir_build_cmp(&L->b, "ne", v, z));
    }
    return val_ir(ir_build_unary(&L->b, IR_OP_CAST, ir_type_with_elem(L->m, v->type, elem), v));
}

bool lower_broadcast_shapes(const Shape *a, const Shape *b, Shape *out) {
    Shape r;
    memset(&r, 0, sizeof r);
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = i - (r.rank - a->rank), ib = i - (r.rank - b->rank);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        r.dim[i] = da == 1 ? db : da;
    }
    *out = r;
    return true;
}

bool lower_check_shape(Lower *L, const Shape *s, const AstNode *n) {
    if (s->rank < 1 || s->rank > IR_MAX_RANK) {
        lower_error(L, n, "tiles have 1 to %d dimensions, not %d", IR_MAX_RANK, s->rank);
        return false;
    }
    int64_t numel = 1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->dim[i];
        if (d < 1) {
            lower_error(L, n, "tile dimension %lld is not positive", (long long)d);
            return false;
        }
        if (d & (d - 1)) {
            lower_error(L, n, "tile dimension %lld is not a power of two", (long long)d);
            return false;
        }
        if (d > LOWER_MAX_NUMEL || numel * d > LOWER_MAX_NUMEL) {
            lower_error(L, n, "tile of shape %s has more than %lld elements", lower_shape_str(L, s),
                        (long long)LOWER_MAX_NUMEL);
            return false;
        }
        numel *= d;
    }
    return true;
}

Val lower_broadcast(Lower *L, Val x, const Shape *s, const AstNode *n, const char *what) {
    if (x.kind != VAL_CONST && x.kind != VAL_IR)
        return x;
    Shape xs = val_shape(&x), r;
    if (shape_eq(&xs, s))
        return x;
    if (xs.rank > s->rank || !lower_broadcast_shapes(&xs, s, &r) || !shape_eq(&r, s)) {
        lower_error(L, n, "%s: cannot broadcast %s to shape %s", what, lower_val_str(L, &x), lower_shape_str(L, s));
        return val_error();
    }
    const IrType *elem = val_elem(&x);
    const IrType *target = lower_tile_type(L, elem, s);
    const AstNode *cp = x.const_param;
    lower_at(L, n);
    Val out;
    if (xs.rank == 0) {
        if (x.kind == VAL_CONST)
            out = val_ir(build_const(L, &x, target));
        else
            out = val_ir(ir_build_unary(&L->b, IR_OP_SPLAT, target, x.v));
    } else {
        IrValue *v = x.v;
        Shape cur = xs;
        while (cur.rank < s->rank) {
            memmove(&cur.dim[1], &cur.dim[0], sizeof(int64_t) * (size_t)cur.rank);
            cur.dim[0] = 1;
            cur.rank++;
            v = ir_build_unary(&L->b, IR_OP_EXPAND_DIMS, lower_tile_type(L, elem, &cur), v);
            ir_op_set_int(L->m, v->def, "axis", 0);
        }
        if (!shape_eq(&cur, s))
            v = ir_build_unary(&L->b, IR_OP_BROADCAST, target, v);
        out = val_ir(v);
    }
    out.const_param = cp;
    return out;
}

/* ---- promotion ---- */

/* Promotion of two typed element types (both numbers). */
static const IrType *promote_typed(Lower *L, const IrType *a, const IrType *b) {
    if (a == b)
        return a;
    bool ai = ir_type_is_int(a), bi = ir_type_is_int(b);
    if (ai && bi)
        return ir_type_bits(a) >= ir_type_bits(b) ? a : b;
    if (!ai && !bi) {
        if (ir_type_bits(a) == ir_type_bits(b)) /* f16 with bf16; f8e4m3 with f8e5m2: f16 holds both */
            return lower_scalar(L, ir_type_bits(a) == 8 ? IR_F16 : IR_F32);
        return ir_type_bits(a) > ir_type_bits(b) ? a : b;
    }
    return ai ? b : a;
}

/* The element type a weak literal takes next to typed elements `t`. An
 * integer literal that does not fit t keeps its own type (i32 or i64), so
 * that promotion widens rather than wraps: i8 + 300 is i32, i32 + 2^32 is
 * i64. */
static const IrType *adapt_weak(Lower *L, const Val *w, const IrType *t) {
    if (ir_type_is_float(w->type))
        return ir_type_is_float(t) ? t : lower_scalar(L, IR_F32);
    if (t->kind == IR_I1)
        return lower_scalar(L, IR_I32);
    if (ir_type_is_int(t) && ir_int_wrap(w->i, ir_type_bits(t)) != w->i)
        return w->type;
    return t;
}

/* Common element type of n number values, or NULL if some value is not a
 * number (the caller reports). */
static const IrType *common_elem(Lower *L, const Val *vals, int n) {
    const IrType *typed = NULL;
    bool weak_float = false, weak_wide = false;
    for (int i = 0; i < n; i++) {
        const IrType *e = val_elem(&vals[i]);
        if (!e || e->kind == IR_PTR)
            return NULL;
        if (is_weak(&vals[i])) {
            weak_float |= ir_type_is_float(e);
            weak_wide |= e->kind == IR_I64;
        } else {
            typed = typed ? promote_typed(L, typed, e) : e;
        }
    }
    if (!typed)
        return lower_scalar(L, weak_float ? IR_F32 : weak_wide ? IR_I64 : IR_I32);
    for (int i = 0; i < n; i++)
        if (is_weak(&vals[i]))
            typed = promote_typed(L, typed, adapt_weak(L, &vals[i], typed));
    return typed;
}

const IrType *lower_promote(Lower *L, const Val *a, const Val *b, const AstNode *n, const char *op) {
    Val v[2] = {*a, *b};
    const IrType *t = common_elem(L, v, 2);
    if (!t)
        lower_error(L, n, "operands of '%s' must be numbers, got %s and %s", op, lower_val_str(L, a),
                    lower_val_str(L, b));
    return t;
}

bool lower_reject_fp8(Lower *L, const IrType *e, const AstNode *n, const char *op) {
    if (!e || !ir_type_is_fp8(e))
        return false;
    lower_error(L, n, "'%s' on %s values: fp8 is for storage, casts and dot; cast to f16 or f32 first", op,
                ir_scalar_name(e->kind));
    return true;
}

/* Common shape of n values; reports incompatible shapes naming `op`. */
static bool common_shape(Lower *L, const Val *vals, int n, const AstNode *node, const char *op, Shape *out) {
    Shape s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < n; i++) {
        Shape vs = val_shape(&vals[i]), r;
        if (!lower_broadcast_shapes(&s, &vs, &r)) {
            lower_error(L, node, "operands of '%s' have incompatible shapes %s and %s", op, lower_shape_str(L, &s),
                        lower_shape_str(L, &vs));
            return false;
        }
        s = r;
    }
    if (s.rank > 0) {
        int64_t numel = 1;
        for (int i = 0; i < s.rank; i++)
            numel *= s.dim[i];
        if (numel > LOWER_MAX_NUMEL) {
            lower_error(L, node, "result of '%s' of shape %s has more than %lld elements", op, lower_shape_str(L, &s),
                        (long long)LOWER_MAX_NUMEL);
            return false;
        }
    }
    *out = s;
    return true;
}

bool lower_unify(Lower *L, Val *vals, int n, bool same_elem, const AstNode *node, const char *op) {
    for (int i = 0; i < n; i++)
        if (vals[i].kind != VAL_CONST && vals[i].kind != VAL_IR)
            return false;
    if (same_elem) {
        const IrType *e = common_elem(L, vals, n);
        if (!e) {
            /* Pointers unify only with pointers of the same type. */
            const IrType *p = NULL;
            for (int i = 0; i < n; i++) {
                const IrType *ei = val_elem(&vals[i]);
                if (ei->kind != IR_PTR || (p && p != ei)) {
                    if (n == 2)
                        lower_error(L, node, "operands of '%s' have incompatible types %s and %s", op,
                                    lower_val_str(L, &vals[0]), lower_val_str(L, &vals[1]));
                    else
                        lower_error(L, node, "operands of '%s' have incompatible types", op);
                    return false;
                }
                p = ei;
            }
            e = p;
        }
        for (int i = 0; i < n; i++) {
            vals[i] = lower_convert(L, vals[i], e, node);
            if (vals[i].kind == VAL_ERROR)
                return false;
        }
    }
    Shape s;
    if (!common_shape(L, vals, n, node, op, &s))
        return false;
    for (int i = 0; i < n; i++) {
        vals[i] = lower_broadcast(L, vals[i], &s, node, op);
        if (vals[i].kind == VAL_ERROR)
            return false;
    }
    return true;
}

/* ---- operators ---- */

static IrOpcode ast_op_opcode(AstOp op, const char **pred) {
    *pred = NULL;
    switch (op) {
    case AST_OP_ADD: return IR_OP_ADD;
    case AST_OP_SUB: return IR_OP_SUB;
    case AST_OP_MUL: return IR_OP_MUL;
    case AST_OP_DIV: return IR_OP_DIV;
    case AST_OP_MOD: return IR_OP_REM;
    case AST_OP_SHL: return IR_OP_SHL;
    case AST_OP_SHR: return IR_OP_SHR;
    case AST_OP_BITAND:
    case AST_OP_LAND: return IR_OP_AND;
    case AST_OP_BITOR:
    case AST_OP_LOR: return IR_OP_OR;
    case AST_OP_BITXOR: return IR_OP_XOR;
    case AST_OP_LT: *pred = "lt"; return IR_OP_CMP;
    case AST_OP_LE: *pred = "le"; return IR_OP_CMP;
    case AST_OP_GT: *pred = "gt"; return IR_OP_CMP;
    case AST_OP_GE: *pred = "ge"; return IR_OP_CMP;
    case AST_OP_EQ: *pred = "eq"; return IR_OP_CMP;
    case AST_OP_NE: *pred = "ne"; return IR_OP_CMP;
    default: return IR_OP_ADD;
    }
}

/* Folds a binary op on two constants of element type `t` (NULL: both weak). */
static Val fold_binary(Lower *L, const AstNode *n, IrOpcode opc, const char *pred, const char *spelling, Val a, Val b) {
    bool weak = a.weak && b.weak;
    const IrType *t = NULL;
    if (!weak) {
        t = common_elem(L, (Val[]){a, b}, 2);
        a = lower_convert(L, a, t, n);
        b = lower_convert(L, b, t, n);
        if (a.kind == VAL_ERROR || b.kind == VAL_ERROR)
            return val_error();
    }
    bool is_int = weak ? !ir_type_is_float(a.type) && !ir_type_is_float(b.type) : ir_type_is_int(t);
    if (is_int) {
        if (opc == IR_OP_CMP)
            return val_int(lower_scalar(L, IR_I1), ir_fold_cmp(pred, 0, 0, true, a.i, b.i));
        int bits = weak ? 64 : ir_type_bits(t);
        int64_t r;
        if (!ir_fold_int_binary(opc, bits, a.i, b.i, &r)) {
            if (opc == IR_OP_DIV || opc == IR_OP_REM)
                lower_error(L, n, "division by zero in a constant expression");
            else
                lower_error(L, n, "shift amount %lld is out of range for %s", (long long)b.i,
                            weak ? "a 64-bit literal" : lower_type_str(L, t));
            return val_error();
        }
        return weak ? val_weak_int(L, r) : val_int(t, r);
    }
    double x = ir_type_is_float(a.type) ? a.f : (double)a.i, y = ir_type_is_float(b.type) ? b.f : (double)b.i, r;
    switch (opc) {
    case IR_OP_CMP: return val_int(lower_scalar(L, IR_I1), ir_fold_cmp(pred, x, y, false, 0, 0));
    case IR_OP_ADD: r = x + y; break;
    case IR_OP_SUB: r = x - y; break;
    case IR_OP_MUL: r = x * y; break;
    case IR_OP_DIV: r = x / y; break;
    case IR_OP_REM: r = fmod(x, y); break;
    case IR_OP_MIN: r = fmin(x, y); break;
    case IR_OP_MAX: r = fmax(x, y); break;
    default: lower_error(L, n, "operands of '%s' must be integers", spelling); return val_error();
    }
    return weak ? val_weak_float(L, r) : val_float(t, r);
}

/* Elementwise op on numbers: promotion, broadcasting, folding. */
Val lower_arith(Lower *L, const AstNode *n, IrOpcode opc, const char *pred, const char *spelling, Val a, Val b) {
    if ((a.kind != VAL_CONST && a.kind != VAL_IR) || (b.kind != VAL_CONST && b.kind != VAL_IR))
        return val_error();
    const IrType *t = lower_promote(L, &a, &b, n, spelling);
    if (!t || lower_reject_fp8(L, t, n, spelling))
        return val_error();
    if (a.kind == VAL_CONST && b.kind == VAL_CONST)
        return fold_binary(L, n, opc, pred, spelling, a, b);
    Val v[2] = {a, b};
    if (!lower_unify(L, v, 2, true, n, spelling))
        return val_error();
    lower_at(L, n);
    IrValue *x = lower_ir(L, &v[0]), *y = lower_ir(L, &v[1]);
    if (opc == IR_OP_CMP)
        return val_ir(ir_build_cmp(&L->b, pred, x, y));
    return val_ir(ir_build_binary(&L->b, opc, x->type, x, y));
}

/* ptr + int, int + ptr, ptr - int, and pointer comparisons. */
static Val pointer_binop(Lower *L, const AstNode *n, AstOp op, Val a, Val b) {
    const char *sp = ast_op_spelling(op);
    bool pa = val_is_ptr(&a), pb = val_is_ptr(&b);
    const char *pred;
    IrOpcode opc = ast_op_opcode(op, &pred);
    if (opc == IR_OP_CMP) {
        if (!pa || !pb || val_elem(&a) != val_elem(&b)) {
            lower_error(L, n, "cannot compare %s and %s", lower_val_str(L, &a), lower_val_str(L, &b));
            return val_error();
        }
        Val v[2] = {a, b};
        if (!lower_unify(L, v, 2, true, n, sp))
            return val_error();
        lower_at(L, n);
        return val_ir(ir_build_cmp(&L->b, pred, lower_ir(L, &v[0]), lower_ir(L, &v[1])));
    }
    if (op != AST_OP_ADD && op != AST_OP_SUB) {
        lower_error(L, n, "operands of '%s' must be numbers, got %s and %s", sp, lower_val_str(L, &a),
                    lower_val_str(L, &b));
        return val_error();
    }
    if (pa && pb) {
        lower_error(L, n, "cannot %s two pointers", op == AST_OP_ADD ? "add" : "subtract");
        return val_error();
    }
    if (pb && op == AST_OP_SUB) {
        lower_error(L, n, "cannot subtract a pointer from %s", lower_val_str(L, &a));
        return val_error();
    }
    Val p = pa ? a : b, off = pa ? b : a;
    if (!elem_is_int(&off) || val_elem(&off)->kind == IR_I1) {
        lower_error(L, n, "pointer offset must be an integer, got %s", lower_val_str(L, &off));
        return val_error();
    }
    if (is_weak(&off))
        off = lower_convert(L, off, off.type, n);
    if (op == AST_OP_SUB) {
        if (off.kind == VAL_CONST) {
            off = val_int(off.type, (int64_t)(0 - (uint64_t)off.i));
        } else {
            lower_at(L, n);
            off = val_ir(ir_build_unary(&L->b, IR_OP_NEG, off.v->type, off.v));
        }
    }
    Val v[2] = {p, off};
    if (!lower_unify(L, v, 2, false, n, sp))
        return val_error();
    lower_at(L, n);
    IrValue *pv = lower_ir(L, &v[0]), *ov = lower_ir(L, &v[1]);
    Val r = val_ir(ir_build_binary(&L->b, IR_OP_ADDPTR, pv->type, pv, ov));
    r.const_param = p.const_param;
    return r;
}

Val lower_binop(Lower *L, const AstNode *n, AstOp op, Val a, Val b) {
    if ((a.kind != VAL_CONST && a.kind != VAL_IR) || (b.kind != VAL_CONST && b.kind != VAL_IR))
        return val_error();
    if (val_is_ptr(&a) || val_is_ptr(&b))
        return pointer_binop(L, n, op, a, b);
    const char *sp = ast_op_spelling(op), *pred;
    IrOpcode opc = ast_op_opcode(op, &pred);
    switch (op) {
    case AST_OP_LAND:
    case AST_OP_LOR:
        if (val_elem(&a)->kind != IR_I1 || val_elem(&b)->kind != IR_I1) {
            lower_error(L, n, "operands of '%s' must be bool, got %s and %s", sp, lower_val_str(L, &a),
                        lower_val_str(L, &b));
            return val_error();
        }
        break;
    case AST_OP_BITAND:
    case AST_OP_BITOR:
    case AST_OP_BITXOR:
    case AST_OP_SHL:
    case AST_OP_SHR:
        if (!elem_is_int(&a) || !elem_is_int(&b)) {
            lower_error(L, n, "operands of '%s' must be integers, got %s and %s", sp, lower_val_str(L, &a),
                        lower_val_str(L, &b));
            return val_error();
        }
        break;
    default: break;
    }
    return lower_arith(L, n, opc, pred, sp, a, b);
}

static Val lower_unary(Lower *L, const AstNode *n) {
    Val x = lower_expr(L, n->lhs);
    if (x.kind == VAL_ERROR)
        return x;
    const IrType *e = val_elem(&x);
    switch (n->op) {
    case AST_OP_PLUS:
    case AST_OP_NEG:
        if (e->kind == IR_PTR) {
            lower_error(L, n, "operand of unary '%s' must be a number, got %s", n->op == AST_OP_NEG ? "-" : "+",
                        lower_val_str(L, &x));
            return val_error();
        }
        if (n->op == AST_OP_PLUS)
            return x;
        if (lower_reject_fp8(L, e, n, "-"))
            return val_error();
        if (x.kind == VAL_CONST) {
            if (ir_type_is_float(x.type)) {
                x.f = -x.f;
                return x;
            }
            int64_t neg = (int64_t)(0 - (uint64_t)x.i);
            return x.weak ? val_weak_int(L, neg) : val_int(x.type, neg);
        }
        lower_at(L, n);
        return val_ir(ir_build_unary(&L->b, IR_OP_NEG, x.v->type, x.v));
    case AST_OP_NOT:
        if (e->kind != IR_I1) {
            lower_error(L, n, "operand of '!' must be bool, got %s", lower_val_str(L, &x));
            return val_error();
        }
        if (x.kind == VAL_CONST)
            return val_int(x.type, !x.i);
        lower_at(L, n);
        return val_ir(ir_build_unary(&L->b, IR_OP_NOT, x.v->type, x.v));
    case AST_OP_BITNOT:
        if (!ir_type_is_int(e)) {
            lower_error(L, n, "operand of '~' must be an integer, got %s", lower_val_str(L, &x));
            return val_error();
        }
        if (x.kind == VAL_CONST)
            return x.weak ? val_weak_int(L, ~x.i) : val_int(x.type, ~x.i);
        lower_at(L, n);
        return val_ir(ir_build_unary(&L->b, IR_OP_NOT, x.v->type, x.v));
    default: lower_error(L, n, "unknown unary operator"); return val_error();
    }
}

Val lower_condition(Lower *L, Val c, const AstNode *n, const char *what) {
    if (c.kind != VAL_CONST && c.kind != VAL_IR)
        return c;
    const IrType *e = val_elem(&c);
    if (is_tile(&c)) {
        lower_error(L, n, "%s must be a scalar, got %s", what, lower_val_str(L, &c));
        return val_error();
    }
    if (e->kind == IR_PTR) {
        lower_error(L, n, "%s must be bool, got %s", what, lower_val_str(L, &c));
        return val_error();
    }
    if (c.kind == VAL_CONST || e->kind == IR_I1)
        return c;
    return lower_convert(L, c, lower_scalar(L, IR_I1), n);
}

Val lower_select(Lower *L, const AstNode *n, Val c, Val a, Val b, const char *what) {
    if (c.kind == VAL_ERROR || a.kind == VAL_ERROR || b.kind == VAL_ERROR)
        return val_error();
    if (val_elem(&c)->kind != IR_I1) {
        lower_error(L, n, "condition of '%s' must be bool, got %s", what, lower_val_str(L, &c));
        return val_error();
    }
    if (c.kind == VAL_CONST && a.kind == VAL_CONST && b.kind == VAL_CONST) {
        /* Both arms still unify: where(true, 1, 2.5) is a float. */
        const IrType *t = lower_promote(L, &a, &b, n, what);
        if (!t)
            return val_error();
        Val r = c.i ? a : b;
        if (!a.weak || !b.weak)
            return lower_convert(L, r, t, n);
        return ir_type_is_float(t) && !ir_type_is_float(r.type) ? val_weak_float(L, (double)r.i) : r;
    }
    Val ab[2] = {a, b};
    if (!lower_unify(L, ab, 2, true, n, what))
        return val_error();
    Val v[3] = {c, ab[0], ab[1]};
    if (!lower_unify(L, v, 3, false, n, what))
        return val_error();
    if (c.kind == VAL_CONST) /* a constant condition picks an arm (broadcast) */
        return c.i ? v[1] : v[2];
    lower_at(L, n);
    IrValue *ops[3] = {lower_ir(L, &v[0]), lower_ir(L, &v[1]), lower_ir(L, &v[2])};
    Val r = val_ir(ir_build(&L->b, IR_OP_SELECT, ops[1]->type, 3, ops));
    r.const_param = a.const_param ? a.const_param : b.const_param;
    return r;
}

static Val lower_ternary(Lower *L, const AstNode *n) {
    Val c = lower_expr(L, n->cond);
    if (c.kind == VAL_ERROR) {
        lower_expr(L, n->lhs);
        lower_expr(L, n->rhs);
        return val_error();
    }
    if (c.kind == VAL_CONST) {
        c = lower_condition(L, c, n->cond, "condition of '?:'");
        if (c.kind == VAL_ERROR)
            return c;
        /* A constexpr condition folds: only the taken arm is lowered. */
        return lower_expr(L, val_truthy(&c) ? n->lhs : n->rhs);
    }
    if (!is_tile(&c))
        c = lower_condition(L, c, n->cond, "condition of '?:'");
    Val a = lower_expr(L, n->lhs);
    Val b = lower_expr(L, n->rhs);
    return lower_select(L, n, c, a, b, "?:");
}

/* x[:, None]: each `:` keeps a dimension, each None inserts one of size 1;
 * dimensions left over at the end are kept (x[None] of a 1-D x is 1xN). */
static Val lower_index(Lower *L, const AstNode *n) {
    Val x = lower_expr(L, n->lhs);
    if (x.kind == VAL_ERROR)
        return x;
    Shape s = val_shape(&x);
    int slices = 0;
    for (int i = 0; i < n->num_items; i++) {
        const AstNode *it = n->items[i];
        if (it->kind == AST_SLICE)
            slices++;
        else if (it->kind != AST_NONE) {
            lower_error(L, it, "an index item must be ':' or None");
            return val_error();
        }
    }
    if (slices > s.rank) {
        lower_error(L, n, "index of %s has %d ':' but the value has %d dimension%s", lower_val_str(L, &x), slices,
                    s.rank, s.rank == 1 ? "" : "s");
        return val_error();
    }
    /* As in NumPy, dimensions without a ':' at the end are kept. */
    int rank = s.rank + n->num_items - slices;
    if (rank > IR_MAX_RANK) {
        lower_error(L, n, "indexing gives %d dimensions; tiles have at most %d", rank, IR_MAX_RANK);
        return val_error();
    }
    if (rank == s.rank)
        return x;
    const IrType *elem = val_elem(&x);
    const AstNode *cp = x.const_param;
    lower_at(L, n);
    if (s.rank == 0) {
        Shape ones;
        memset(&ones, 0, sizeof ones);
        ones.rank = rank;
        for (int i = 0; i < ones.rank; i++)
            ones.dim[i] = 1;
        return lower_broadcast(L, x, &ones, n, "index");
    }
    IrValue *v = x.v;
    for (int i = 0; i < n->num_items; i++) {
        if (n->items[i]->kind != AST_NONE)
            continue;
        memmove(&s.dim[i + 1], &s.dim[i], sizeof(int64_t) * (size_t)(s.rank - i));
        s.dim[i] = 1;
        s.rank++;
        v = ir_build_unary(&L->b, IR_OP_EXPAND_DIMS, lower_tile_type(L, elem, &s), v);
        ir_op_set_int(L->m, v->def, "axis", i);
    }
    Val r = val_ir(v);
    r.const_param = cp;
    return r;
}

static Val lower_call(Lower *L, const AstNode *n) {
    const AstNode *callee = n->lhs;
    const AstNode *type = lower_as_type(L, callee);
    if (type)
        return lower_cast_call(L, n, type);
    if (!callee || callee->kind != AST_IDENT || !callee->name) {
        lower_error(L, n, "called object is not a function");
        return val_error();
    }
    Val r;
    if (lower_builtin(L, n, callee->name, &r))
        return r;
    DeclInfo *d = lower_find_decl(L, callee->name);
    if (!d) {
        lower_error(L, callee, "call to undeclared function '%s'", callee->name);
        for (int i = 0; i < n->num_items; i++)
            if (n->items[i]->kind != AST_TYPE && n->items[i]->kind != AST_LIST && n->items[i]->kind != AST_STRING_LIT)
                lower_expr_any(L, n->items[i]);
        return val_error();
    }
    if (d->decl->kind == AST_KERNEL) {
        lower_error(L, callee, "cannot call kernel '%s'; only funcs can be called", callee->name);
        return val_error();
    }
    return lower_call_func(L, n, d);
}

Val lower_expr_any(Lower *L, const AstNode *n) {
    if (!n) {
        /* Only a malformed AST gets here; still never lower it silently. */
        lower_error(L, NULL, "missing expression");
        return val_error();
    }
    if (!lower_stack_ok(L, n))
        return val_error();
    switch (n->kind) {
    case AST_INT_LIT: return val_weak_int(L, n->ival);
    case AST_FLOAT_LIT: return val_weak_float(L, n->fval);
    case AST_BOOL_LIT: return val_int(lower_scalar(L, IR_I1), n->ival != 0);
    case AST_IDENT: {
        if (!n->name) {
            lower_error(L, n, "missing name");
            return val_error();
        }
        Symbol *s = lower_lookup(L, n->name);
        if (s && s->kind == SYM_DTYPE) {
            lower_error(L, n, "type parameter '%s' is not a value; to convert, write %s(x)", n->name, n->name);
            return val_error();
        }
        if (s)
            return s->val;
        DeclInfo *d = lower_find_decl(L, n->name);
        if (d && d->decl->kind == AST_KERNEL)
            lower_error(L, n, "'%s' is a kernel, not a value", n->name);
        else if (d)
            lower_error(L, n, "'%s' is a func; call it with %s(...)", n->name, n->name);
        else if (lower_is_builtin(n->name))
            lower_error(L, n, "'%s' is a builtin; call it with %s(...)", n->name, n->name);
        else
            lower_error(L, n, "use of undeclared identifier '%s'", n->name);
        return val_error();
    }
    case AST_UNARY: return lower_unary(L, n);
    case AST_BINARY: {
        Val a = lower_expr(L, n->lhs);
        Val b = lower_expr(L, n->rhs);
        /* Errors about the operation itself point at its operator. */
        if (n->op_loc.line <= 0)
            return lower_binop(L, n, n->op, a, b);
        AstNode *at = ast_new(&L->tmp, AST_BINARY, n->op_loc);
        *at = *n;
        at->loc = n->op_loc;
        return lower_binop(L, at, n->op, a, b);
    }
    case AST_TERNARY: return lower_ternary(L, n);
    case AST_CALL: return lower_call(L, n);
    case AST_INDEX: return lower_index(L, n);
    case AST_TYPE:
        lower_error(L, n, "type name '%s' is not a value; to convert, write %s(x)", ir_scalar_name(n->type.scalar),
                    ir_scalar_name(n->type.scalar));
        return val_error();
    case AST_STRING_LIT:
        lower_error(L, n, "a string is only allowed as the label of device_print, the message of device_assert or "
                          "static_assert, or the eviction policy of load or store");
        return val_error();
    case AST_LIST:
        lower_error(L, n, "a list like [64, 32] is only allowed as a shape or permutation argument");
        return val_error();
    case AST_SLICE:
    case AST_NONE: lower_error(L, n, "':' and None are only allowed inside an index"); return val_error();
    case AST_NAMED:
        lower_error(L, n, "a named argument '%s = ...' is only allowed in @autotune and its config(...)", n->name);
        return val_error();
    default: lower_error(L, n, "expected an expression, found %s", ast_kind_name(n->kind)); return val_error();
    }
}

Val lower_expr(Lower *L, const AstNode *n) {
    Val v = lower_expr_any(L, n);
    if (v.kind == VAL_VOID) {
        lower_error(L, n, "'%s' does not return a value", v.what);
        return val_error();
    }
    return v;
}

bool lower_const_int(Lower *L, const AstNode *n, const char *what, int64_t *out) {
    Val v = lower_expr(L, n);
    if (v.kind == VAL_ERROR)
        return false;
    if (v.kind != VAL_CONST || !ir_type_is_int(v.type)) {
        lower_error(L, n, "%s must be a constant integer, got %s%s", what, v.kind == VAL_CONST ? "" : "a runtime ",
                    lower_val_str(L, &v));
        return false;
    }
    *out = v.i;
    return true;
}
