/*
 * canonicalize.c — constant folding, algebraic identities, and folding of
 * control flow whose condition is known.
 *
 * Precondition: a verified module (calls may remain; they are left alone).
 *
 * One walk per function visits ops in pre-order. Before an op is looked at,
 * its operands are rewritten through the substitution map of the values
 * replaced so far (rewrite.c), so a fold that enables another fold later in
 * the same block is seen in the same walk: `c = 2 + 3; d = c * 4` folds to
 * 20 at once. Walks repeat until nothing changes (a walk catches almost
 * everything; the bound is only a guard). Finally pure ops left without
 * uses are removed, so that the constants a fold consumed do not linger.
 *
 * What folds:
 *   - every elementwise op whose operands are all constants (scalars or
 *     splat tiles: a tile constant is a splat, so its value folds like a
 *     scalar and the result is a constant of the op's result type). Integer
 *     arithmetic wraps at the type's width through ir_fold_int_binary and
 *     ir_int_wrap; division by zero and out-of-range float-to-int casts are
 *     not folded; float results are rounded to the result type's precision
 *     with ir_float_round (an f16 sum is an f16 value). i1 is 0 or 1.
 *   - splat, broadcast, expand_dims, reshape, trans and convert_layout of a
 *     constant: a constant of the result type. reduce min/max of a constant
 *     is the constant, an integer sum is value * extent, argmax and
 *     argmin of a constant are 0 (every element ties: the first wins).
 *   - identities: x+0, x-0, x*1, x/1, x<<0, x>>0, x|0, x^0, x&-1, and/or/
 *     min/max of x with itself; for integers also x*0, x-x, x^x, x&0,
 *     x rem 1. Floats only where the identity is exact in IEEE arithmetic:
 *     x + -0.0 and x - +0.0, not x + 0.0 (which turns -0.0 into +0.0).
 *   - neg(neg x) and not(not x) are x; cast and convert_layout to the
 *     operand's own type are the operand; convert_layout of convert_layout
 *     converts the original value once.
 *   - select with a constant condition, or with equal arms.
 *   - commutative ops get their constant operand on the right, so that
 *     identities have one form to match and CSE sees one order.
 *   - a `for` whose constant bounds give zero trips (lb >= ub, step > 0) is
 *     replaced by its init values; an `if` on a constant condition by the
 *     ops of the taken region, its results by what that region yields; an
 *     i1 result of an `if` that both branches yield as constants by the
 *     condition, its negation or the constant.
 *
 * A replaced op is unlinked at once (its results are remapped for every
 * later use). New constants are inserted just before the op they replace,
 * with its location and its result's name hint.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

typedef struct Const {
    bool is_float; /* value in f, else in i */
    int64_t i;     /* integers: wrapped to the width; i1 is 0 or 1 */
    double f;
} Const;

typedef struct Canon {
    IrModule *m;
    IrMap subst;  /* replaced value -> replacement */
    bool changed; /* this walk changed something */
} Canon;

/* ---- types and constants ---- */

static const IrType *elem_of(const IrType *t) {
    return (t->kind == IR_TILE || t->kind == IR_SMEM) ? t->elem : t;
}

static bool is_int(const IrType *e) {
    return e->kind <= IR_I64;
}
static bool is_float(const IrType *e) {
    return ir_type_is_float(e); /* fp8 too: casts of fp8 constants fold (ir_float_round saturates) */
}

static int int_bits(const IrType *e) {
    switch (e->kind) {
    case IR_I1: return 1;
    case IR_I8: return 8;
    case IR_I16: return 16;
    case IR_I32: return 32;
    case IR_I64: return 64;
    default: tc_unreachable("not an integer type");
    }
}

static int64_t norm_int(int64_t v, int bits) {
    return bits == 1 ? (v & 1) : ir_int_wrap(v, bits);
}

static double round_to(const IrType *e, double v) {
    return e->kind == IR_F64 ? v : ir_float_round(e->kind, v);
}

/* The value of v if a `constant` defines it, normalized to v's type. */
static bool get_const(const IrValue *v, Const *k) {
    if (!v->def || v->def->opc != IR_OP_CONSTANT)
        return false;
    const IrAttr *a = ir_op_attr(v->def, "value");
    const IrType *e = elem_of(v->type);
    if (!a)
        return false;
    memset(k, 0, sizeof *k);
    if (is_float(e)) {
        if (a->kind != IR_ATTR_INT && a->kind != IR_ATTR_FLOAT)
            return false;
        k->is_float = true; /* the value the type can hold: f16 `0.1` is 0.0999755859375 */
        k->f = round_to(e, a->kind == IR_ATTR_INT ? (double)a->i : a->f);
        return true;
    }
    if (is_int(e) && a->kind == IR_ATTR_INT) {
        k->i = norm_int(a->i, int_bits(e));
        return true;
    }
    return false;
}

/* A new constant of `type` holding k, just before `op`. */
static IrValue *make_const(Canon *c, IrOp *op, const IrType *type, Const k, const char *name) {
    IrBuilder b;
    ir_builder_before(&b, op);
    b.m = c->m; /* ir_builder_before knows the block, not the module */
    b.loc = op->loc;
    const IrType *e = elem_of(type);
    IrValue *v;
    if (is_float(e))
        v = ir_build_const_float(&b, type, round_to(e, k.is_float ? k.f : (double)k.i));
    else
        v = ir_build_const_int(&b, type, norm_int(k.i, int_bits(e)));
    if (name)
        ir_value_set_name(c->m, v, name);
    return v;
}

static IrValue *make_int(Canon *c, IrOp *op, const IrType *type, int64_t i) {
    Const k = {false, i, 0};
    return make_const(c, op, type, k, op->results[0]->name);
}

/* ---- folding constants ---- */

static bool fold_int(IrOpcode opc, int bits, int64_t a, int64_t b, int64_t *out) {
    if (bits == 1) { /* i1 as bits: and/or/xor; add and sub are xor, mul is and */
        a &= 1, b &= 1;
        switch (opc) {
        case IR_OP_AND:
        case IR_OP_MUL: *out = a & b; return true;
        case IR_OP_OR: *out = a | b; return true;
        case IR_OP_XOR:
        case IR_OP_ADD:
        case IR_OP_SUB: *out = a ^ b; return true;
        default: return false;
        }
    }
    if (!ir_fold_int_binary(opc, bits, a, b, out))
        return false;
    *out = ir_int_wrap(*out, bits);
    return true;
}

static bool fold_float_binary(IrOpcode opc, double a, double b, double *out) {
    switch (opc) {
    case IR_OP_ADD: *out = a + b; return true;
    case IR_OP_SUB: *out = a - b; return true;
    case IR_OP_MUL: *out = a * b; return true;
    case IR_OP_DIV: *out = a / b; return true;
    case IR_OP_REM: *out = fmod(a, b); return true;
    case IR_OP_MIN:
    case IR_OP_MAX:
        /* NaN and signed zeros differ between min flavours: leave them. */
        if (isnan(a) || isnan(b) || (a == 0 && b == 0 && signbit(a) != signbit(b)))
            return false;
        *out = opc == IR_OP_MIN ? fmin(a, b) : fmax(a, b);
        return true;
    default: return false;
    }
}

/* cast of a constant from element type `from` to `to`. Casts to i1 are not
 * folded (truncation and "!= 0" disagree); i1 widens as 0 or 1. */
static bool fold_cast(const IrType *from, const IrType *to, Const a, Const *out) {
    memset(out, 0, sizeof *out);
    if (is_int(to)) {
        int bits = int_bits(to);
        if (bits == 1)
            return false;
        if (is_int(from)) {
            out->i = ir_int_wrap(int_bits(from) == 1 ? (a.i & 1) : a.i, bits);
            return true;
        }
        if (isnan(a.f))
            return false;
        double t = trunc(a.f), lim = ldexp(1.0, bits - 1);
        if (t < -lim || t >= lim) /* out of range: undefined on the device too */
            return false;
        out->i = (int64_t)t;
        return true;
    }
    out->is_float = true;
    if (is_int(from)) {
        int64_t i = int_bits(from) == 1 ? (a.i & 1) : a.i;
        if (to->kind == IR_F32)
            out->f = (double)(float)i; /* one rounding, straight from the integer */
        else
            out->f = round_to(to, (double)i);
        return true;
    }
    out->f = round_to(to, a.f);
    return true;
}

/* Folds an elementwise op whose operands are all constants. */
static bool fold_elementwise(const IrOp *op, const Const *k, Const *out) {
    const IrType *e = elem_of(op->operands[0]->type);
    const IrType *re = elem_of(op->results[0]->type);
    memset(out, 0, sizeof *out);
    switch (op->opc) {
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_REM:
    case IR_OP_MIN:
    case IR_OP_MAX:
    case IR_OP_AND:
    case IR_OP_OR:
    case IR_OP_XOR:
    case IR_OP_SHL:
    case IR_OP_SHR:
    case IR_OP_UMULHI:
        if (is_float(e)) {
            out->is_float = true;
            if (!fold_float_binary(op->opc, k[0].f, k[1].f, &out->f))
                return false;
            out->f = round_to(e, out->f);
            return true;
        }
        return fold_int(op->opc, int_bits(e), k[0].i, k[1].i, &out->i);
    case IR_OP_NEG:
    case IR_OP_ABS:
        if (is_float(e))
            break;
        if (op->opc == IR_OP_ABS && k[0].i >= 0) {
            out->i = k[0].i;
            return true;
        }
        if (int_bits(e) == 1) { /* -x and |x| of a 1-bit value are x */
            out->i = k[0].i;
            return true;
        }
        return fold_int(IR_OP_SUB, int_bits(e), 0, k[0].i, &out->i);
    case IR_OP_NOT: out->i = norm_int(~k[0].i, int_bits(e)); return true;
    case IR_OP_CMP: {
        const char *pred = ir_op_get_word(op, "pred");
        bool is_i = is_int(e);
        if (!pred || (is_i && int_bits(e) == 1 && strcmp(pred, "eq") != 0 && strcmp(pred, "ne") != 0))
            return false; /* ordering of i1 (signed: true < false) is not folded */
        out->i = ir_fold_cmp(pred, k[0].f, k[1].f, is_i, k[0].i, k[1].i) ? 1 : 0;
        return true;
    }
    case IR_OP_CAST: return fold_cast(e, re, k[0], out);
    case IR_OP_FMA:
        out->is_float = true;
        out->f = round_to(e, fma(k[0].f, k[1].f, k[2].f));
        return true;
    default: break;
    }
    if (!is_float(e) || op->num_operands != 1)
        return false;
    out->is_float = true;
    if (!ir_fold_math(op->opc, k[0].f, &out->f))
        return false;
    out->f = round_to(e, out->f);
    return true;
}

/* ---- identities ---- */

static bool is_all_ones(Const k, const IrType *e) {
    return k.i == (int_bits(e) == 1 ? 1 : -1);
}

/* x itself if it can stand for the result (same type), else NULL. */
static IrValue *same(const IrOp *op, IrValue *x) {
    return x->type == op->results[0]->type ? x : NULL;
}

static IrValue *identity(Canon *c, IrOp *op, const bool *isk, const Const *k) {
    const IrType *rt = op->results[0]->type;
    const IrType *e = elem_of(rt);
    IrValue *x = op->operands[0];
    IrValue *y = op->num_operands > 1 ? op->operands[1] : NULL;
    bool ints = is_int(e);
    bool k1 = op->num_operands > 1 && isk[1];
    switch (op->opc) {
    case IR_OP_ADD:
        if (k1 && (ints ? k[1].i == 0 : (k[1].f == 0 && signbit(k[1].f))))
            return same(op, x);
        break;
    case IR_OP_SUB:
        if (k1 && (ints ? k[1].i == 0 : (k[1].f == 0 && !signbit(k[1].f))))
            return same(op, x);
        if (ints && x == y)
            return make_int(c, op, rt, 0);
        break;
    case IR_OP_MUL:
        if (k1 && (ints ? k[1].i == 1 : k[1].f == 1.0))
            return same(op, x);
        if (k1 && ints && k[1].i == 0)
            return make_int(c, op, rt, 0);
        break;
    case IR_OP_DIV:
        if (k1 && (ints ? k[1].i == 1 && int_bits(e) > 1 : k[1].f == 1.0))
            return same(op, x);
        break;
    case IR_OP_REM:
        if (k1 && ints && int_bits(e) > 1 && (k[1].i == 1 || k[1].i == -1))
            return make_int(c, op, rt, 0);
        break;
    case IR_OP_AND:
        if (x == y)
            return same(op, x);
        if (k1 && k[1].i == 0)
            return make_int(c, op, rt, 0);
        if (k1 && is_all_ones(k[1], e))
            return same(op, x);
        break;
    case IR_OP_OR:
        if (x == y)
            return same(op, x);
        if (k1 && k[1].i == 0)
            return same(op, x);
        if (k1 && is_all_ones(k[1], e))
            return make_int(c, op, rt, -1);
        break;
    case IR_OP_XOR:
        if (x == y)
            return make_int(c, op, rt, 0);
        if (k1 && k[1].i == 0)
            return same(op, x);
        break;
    case IR_OP_MIN:
    case IR_OP_MAX:
        if (x == y)
            return same(op, x);
        break;
    case IR_OP_SHL:
    case IR_OP_SHR:
    case IR_OP_ADDPTR:
        if (k1 && k[1].i == 0)
            return same(op, x);
        break;
    case IR_OP_NEG:
    case IR_OP_NOT:
        if (x->def && x->def->opc == op->opc)
            return same(op, x->def->operands[0]);
        break;
    case IR_OP_CAST: return same(op, x);
    default: break;
    }
    return NULL;
}

/* ---- one op ---- */

/* The value that replaces op's single result, or NULL. May modify op in
 * place (setting c->changed). */
static IrValue *simplify(Canon *c, IrOp *op) {
    const IrType *rt = op->results[0]->type;
    const char *name = op->results[0]->name;
    unsigned flags = ir_op_info[op->opc].flags;
    Const k[3];
    bool isk[3] = {false, false, false};
    bool all = op->num_operands <= 3;
    for (int i = 0; i < op->num_operands && i < 3; i++) {
        isk[i] = get_const(op->operands[i], &k[i]);
        all &= isk[i];
    }
    IrValue *x = op->num_operands ? op->operands[0] : NULL;

    if ((flags & OPF_COMMUTATIVE) && isk[0] && !isk[1]) {
        IrValue *y = op->operands[1];
        ir_op_set_operand(op, 0, y);
        ir_op_set_operand(op, 1, x);
        x = y;
        isk[1] = true, isk[0] = false;
        k[1] = k[0];
        c->changed = true;
    }

    /* convert_layout(convert_layout(v)) converts v once. */
    if (op->opc == IR_OP_CONVERT_LAYOUT && x->def && x->def->opc == IR_OP_CONVERT_LAYOUT) {
        ir_op_set_operand(op, 0, x->def->operands[0]);
        x = op->operands[0];
        isk[0] = get_const(x, &k[0]);
        c->changed = true;
    }

    switch (op->opc) {
    case IR_OP_CONVERT_LAYOUT:
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_RESHAPE:
    case IR_OP_TRANS:
        if (isk[0])
            return make_const(c, op, rt, k[0], name);
        if (x->type == rt && op->opc != IR_OP_TRANS)
            return x;
        if (x->type == rt && op->opc == IR_OP_TRANS) {
            const IrAttr *perm = ir_op_attr(op, "perm");
            for (int i = 0; perm && i < perm->list.n; i++)
                if (perm->list.v[i] != i)
                    return NULL;
            return x;
        }
        return NULL;
    case IR_OP_REDUCE: {
        const char *kind = ir_op_get_word(op, "kind");
        if (!isk[0] || !kind)
            return NULL;
        if (strcmp(kind, "min") == 0 || strcmp(kind, "max") == 0)
            return make_const(c, op, rt, k[0], name);
        if (ir_reduce_is_arg(op)) /* all equal: the first */
            return make_const(c, op, rt, (Const){false, 0, 0}, name);
        const IrType *e = elem_of(rt);
        int64_t axis = ir_op_get_int(op, "axis", 0);
        Const sum = {false, 0, 0};
        if (strcmp(kind, "sum") == 0 && is_int(e) && int_bits(e) > 1 &&
            fold_int(IR_OP_MUL, int_bits(e), k[0].i, x->type->shape[axis], &sum.i))
            return make_const(c, op, rt, sum, name);
        return NULL;
    }
    case IR_OP_SELECT:
        if (isk[0]) {
            IrValue *pick = k[0].i ? op->operands[1] : op->operands[2];
            Const kp;
            if (pick->type == rt)
                return pick;
            if (get_const(pick, &kp))
                return make_const(c, op, rt, kp, name);
            return NULL;
        }
        if (op->operands[1] == op->operands[2])
            return same(op, op->operands[1]);
        return NULL;
    default: break;
    }
    if (!(flags & OPF_ELEMENTWISE))
        return NULL;
    Const out;
    if (all && fold_elementwise(op, k, &out))
        return make_const(c, op, rt, out, name);
    return identity(c, op, isk, k);
}

static void replace_result(Canon *c, IrOp *op, int i, IrValue *with) {
    ir_map_put(&c->subst, op->results[i], with);
}

/* for with constant bounds and no trips: its results are its inits. */
static bool fold_for(Canon *c, IrOp *op) {
    Const lb, ub, step;
    if (!get_const(op->operands[0], &lb) || !get_const(op->operands[1], &ub) || !get_const(op->operands[2], &step))
        return false;
    if (step.i <= 0 || lb.i < ub.i)
        return false;
    for (int i = 0; i < op->num_results; i++)
        replace_result(c, op, i, op->operands[3 + i]);
    ir_op_unlink(op);
    return true;
}

/* if on a constant: the taken region's ops move before the if, and its
 * yield's operands replace the if's results. *resume is the first moved op,
 * which the walk visits next. */
static bool fold_if(Canon *c, IrOp *op, IrOp **resume) {
    Const cond;
    if (!get_const(op->operands[0], &cond))
        return false;
    IrBlock *taken = op->regions[cond.i ? 0 : 1];
    IrOp *yield = taken->last;
    tc_assert(yield && yield->opc == IR_OP_YIELD);
    *resume = taken->first != yield ? taken->first : NULL;
    for (IrOp *sub = taken->first, *next; sub != yield; sub = next) {
        next = sub->next;
        ir_op_unlink(sub);
        ir_op_insert_before(op, sub);
    }
    for (int i = 0; i < op->num_results; i++)
        replace_result(c, op, i, yield->operands[i]);
    ir_op_unlink(op);
    return true;
}

/* The i1 results of an if on a runtime condition that its branches yield
 * as constants (the front end's exit flags): the condition (true, false),
 * its negation (false, true) or the constant. The if stays for its other
 * results and ops; dce drops the results nothing uses any more. */
static void fold_if_flags(Canon *c, IrOp *op) {
    IrOp *yields[2] = {op->regions[0]->last, op->regions[1]->last};
    for (int i = 0; i < op->num_results; i++) {
        IrValue *res = op->results[i];
        Const a, b;
        if (res->type->kind != IR_I1 || ir_map_get(&c->subst, res) || !get_const(yields[0]->operands[i], &a) ||
            !get_const(yields[1]->operands[i], &b))
            continue;
        IrValue *with = op->operands[0];
        if (a.i == b.i) {
            with = make_const(c, op, res->type, a, res->name);
        } else if (!a.i) {
            IrBuilder bld;
            ir_builder_before(&bld, op);
            bld.m = c->m;
            bld.loc = op->loc;
            with = ir_build_unary(&bld, IR_OP_NOT, res->type, op->operands[0]);
        }
        replace_result(c, op, i, with);
        c->changed = true;
    }
}

/* Returns true if op was removed; *resume, when set, is where to go on. */
static bool visit(Canon *c, IrOp *op, IrOp **resume) {
    if (op->opc == IR_OP_FOR)
        return fold_for(c, op);
    if (op->opc == IR_OP_IF) {
        if (fold_if(c, op, resume))
            return true;
        fold_if_flags(c, op);
        return false;
    }
    if (!(ir_op_info[op->opc].flags & OPF_PURE) || op->num_results != 1 || op->num_regions || op->opc == IR_OP_CONSTANT)
        return false;
    IrValue *with = simplify(c, op);
    if (!with)
        return false;
    replace_result(c, op, 0, with);
    ir_op_unlink(op);
    return true;
}

static void canon_block(Canon *c, IrBlock *b) {
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_subst_operands(&c->subst, op);
        IrOp *resume = NULL;
        if (visit(c, op, &resume)) {
            c->changed = true;
            if (resume)
                next = resume;
            continue;
        }
        for (int r = 0; r < op->num_regions; r++)
            canon_block(c, op->regions[r]);
    }
}

bool pass_canonicalize(IrModule *m, const PassOptions *opts) {
    Canon c;
    c.m = m;
    ir_map_init(&c.subst, &m->arena);
    for (IrFunc *f = m->first; f; f = f->next) {
        for (int walk = 0; walk < 64; walk++) {
            c.changed = false;
            canon_block(&c, f->body);
            if (!c.changed)
                break;
        }
        pass_count_uses(f);
        pass_erase_dead_ops(f);
    }
    return true;
}
