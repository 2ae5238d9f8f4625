/*
 * builtins.c — the builtins of the tile language: for each, its type rule
 * and its lowering to IR ops.
 *
 * One table lists every builtin with its argument count and the function
 * that lowers it; several builtins share a function and differ by the IR
 * opcode or kind word in their entry (the math ops, the reductions, the
 * atomics). A builtin receives the call node and lowers its arguments
 * itself, because some arguments are not values: shapes and permutations
 * are lists of constants (`[BM, D]`), dtypes are type names (`f32`), axes
 * must be constexpr.
 *
 * Rules worth knowing (the language summary in frontend.h lists them all):
 *   - full/zeros with a constant value give one splat `constant` op; with a
 *     runtime scalar, a `splat`. The dtype of full defaults to the value's,
 *     that of zeros to f32.
 *   - min/max/sum of a tile reduce along an axis (negative counts from the
 *     end; no axis reduces every axis down to a scalar); min/max of a scalar
 *     first argument are elementwise, as minimum/maximum. argmax/argmin are
 *     reduce kinds with i32 results; without an axis, 1-D tiles only.
 *   - cumsum/cumprod/scan build a `scan` op whose combine region adds,
 *     multiplies, or calls the func that scan's third argument names
 *     (lower_combine_func checks it); `reverse` is a constexpr flag.
 *   - float-only math on integers converts them to f32 first (as Triton);
 *     all-constant math folds with the C library.
 *   - load/store/atomics: mask and pointer broadcast against each other; the
 *     value (store) or `other` (load) is converted to the pointee type and
 *     broadcast to the pointer's shape. Writing through a pointer derived
 *     from a `const T*` parameter is an error.
 *   - dot: 2-D operands of one dtype among f16, bf16, f32, K equal, M, N and
 *     K at least 16; the accumulator is f32, zeros when absent. fp8
 *     operands (f8e4m3, f8e5m2, mixed too) are cast to f16 first.
 *   - fp8 values are never computed on: math, fma, reductions and atomics
 *     on them are errors (lower_reject_fp8), as are arithmetic operators.
 */
#include "ast_to_ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct Builtin Builtin;
typedef Val (*BuiltinFn)(Lower *L, const AstNode *call, const Builtin *bi);

struct Builtin {
    const char *name; /* as called */
    int min_args;     /* fewest arguments */
    int max_args;     /* most arguments */
    BuiltinFn lower;  /* type rule and lowering */
    IrOpcode opc;     /* the IR op, for the builtins that map to one */
    const char *kind; /* reduce and atomic kind word */
};

static bool is_value(const Val *v) {
    return v->kind == VAL_CONST || v->kind == VAL_IR;
}
static const AstNode *arg(const AstNode *call, int i) {
    return i < call->num_items ? call->items[i] : NULL;
}

/* ---- argument helpers ---- */

/* A shape argument: a list of constant integers, each a power of two. */
static bool shape_arg(Lower *L, const AstNode *n, const char *fname, Shape *out) {
    if (n->kind != AST_LIST) {
        lower_error(L, n, "shape of '%s' must be a list like [64, 32]", fname);
        return false;
    }
    memset(out, 0, sizeof *out);
    if (n->num_items < 1 || n->num_items > IR_MAX_RANK) {
        lower_error(L, n, "tiles have 1 to %d dimensions, not %d", IR_MAX_RANK, n->num_items);
        return false;
    }
    out->rank = n->num_items;
    for (int i = 0; i < n->num_items; i++)
        if (!lower_const_int(L, n->items[i], "a dimension of a shape", &out->dim[i]))
            return false;
    return lower_check_shape(L, out, n);
}

/* A dtype argument: a scalar type name. */
static bool dtype_arg(Lower *L, const AstNode *n, const char *fname, const IrType **out) {
    const AstNode *t = lower_as_type(L, n);
    if (!t || t->type.is_pointer) {
        lower_error(L, n, "dtype of '%s' must be a scalar type name such as f32", fname);
        return false;
    }
    *out = lower_scalar(L, t->type.scalar);
    return true;
}

/* An axis argument for a value of rank `rank` (insert: rank + 1 positions). */
static bool axis_arg(Lower *L, const AstNode *n, const char *fname, int rank, bool insert, int *out) {
    char what[64];
    snprintf(what, sizeof what, "axis of '%s'", fname);
    int64_t a;
    if (!lower_const_int(L, n, what, &a))
        return false;
    int64_t lim = insert ? rank + 1 : rank;
    if (a < -lim || a >= lim) {
        lower_error(L, n, "axis %lld of '%s' is out of range for a value of rank %d", (long long)a, fname, rank);
        return false;
    }
    *out = (int)(a < 0 ? a + lim : a);
    return true;
}

static Val need_tile(Lower *L, Val x, const AstNode *n, const char *fname) {
    if (is_value(&x) && val_shape(&x).rank == 0) {
        lower_error(L, n, "'%s' needs a tile, got %s", fname, lower_val_str(L, &x));
        return val_error();
    }
    return x;
}

static Val need_number(Lower *L, Val x, const AstNode *n, const char *fname) {
    if (is_value(&x) && val_is_ptr(&x)) {
        lower_error(L, n, "argument of '%s' must be a number, got %s", fname, lower_val_str(L, &x));
        return val_error();
    }
    return x;
}

/* ---- indices ---- */

static Val b_program_id(Lower *L, const AstNode *call, const Builtin *bi) {
    char what[64];
    snprintf(what, sizeof what, "axis of '%s'", bi->name);
    int64_t axis;
    if (!lower_const_int(L, arg(call, 0), what, &axis))
        return val_error();
    if (axis < 0 || axis > 2) {
        lower_error(L, arg(call, 0), "axis of '%s' must be 0, 1 or 2, got %lld", bi->name, (long long)axis);
        return val_error();
    }
    lower_at(L, call);
    IrValue *v = ir_build(&L->b, bi->opc, lower_scalar(L, IR_I32), 0, NULL);
    ir_op_set_int(L->m, v->def, "axis", axis);
    return val_ir(v);
}

static Val b_arange(Lower *L, const AstNode *call, const Builtin *bi) {
    int64_t start, end;
    if (!lower_const_int(L, arg(call, 0), "start of 'arange'", &start) ||
        !lower_const_int(L, arg(call, 1), "end of 'arange'", &end))
        return val_error();
    if (start < INT32_MIN || end > (int64_t)INT32_MAX + 1) {
        lower_error(L, call, "arange bounds %lld, %lld do not fit in i32", (long long)start, (long long)end);
        return val_error();
    }
    if (end <= start) {
        lower_error(L, call, "arange end %lld must be greater than start %lld", (long long)end, (long long)start);
        return val_error();
    }
    int64_t len = end - start;
    if (len & (len - 1)) {
        lower_error(L, call, "arange length %lld is not a power of two", (long long)len);
        return val_error();
    }
    if (len > LOWER_MAX_NUMEL) {
        lower_error(L, call, "arange length %lld is more than %lld elements", (long long)len,
                    (long long)LOWER_MAX_NUMEL);
        return val_error();
    }
    Shape s = {1, {len}};
    lower_at(L, call);
    IrValue *v = ir_build(&L->b, IR_OP_ARANGE, lower_tile_type(L, lower_scalar(L, IR_I32), &s), 0, NULL);
    ir_op_set_int(L->m, v->def, "start", start);
    ir_op_set_int(L->m, v->def, "end", end);
    return val_ir(v);
}

/* ---- creation and shape ---- */

/* full(shape, value [, dtype]) and zeros(shape [, dtype]). */
static Val b_full(Lower *L, const AstNode *call, const Builtin *bi) {
    bool zeros = strcmp(bi->name, "zeros") == 0;
    Shape s;
    if (!shape_arg(L, arg(call, 0), bi->name, &s))
        return val_error();
    Val x = zeros ? val_weak_int(L, 0) : lower_expr(L, arg(call, 1));
    const AstNode *dt = arg(call, zeros ? 1 : 2);
    const IrType *elem = NULL;
    if (dt && !dtype_arg(L, dt, bi->name, &elem))
        return val_error();
    if (!is_value(&x))
        return val_error();
    if (val_shape(&x).rank > 0 || val_is_ptr(&x)) {
        lower_error(L, arg(call, 1), "value of 'full' must be a number scalar, got %s", lower_val_str(L, &x));
        return val_error();
    }
    if (!elem)
        elem = zeros ? lower_scalar(L, IR_F32) : val_type(&x);
    x = lower_convert(L, x, elem, call);
    lower_at(L, call);
    return lower_broadcast(L, x, &s, call, bi->name);
}

static Val b_reshape(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_tile(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    Shape s;
    if (!shape_arg(L, arg(call, 1), bi->name, &s) || !is_value(&x))
        return val_error();
    const IrType *t = val_type(&x);
    int64_t numel = 1;
    for (int i = 0; i < s.rank; i++)
        numel *= s.dim[i];
    if (numel != ir_type_numel(t)) {
        lower_error(L, call, "cannot reshape %s (%lld elements) to %s (%lld elements)", lower_type_str(L, t),
                    (long long)ir_type_numel(t), lower_shape_str(L, &s), (long long)numel);
        return val_error();
    }
    const IrType *rt = lower_tile_type(L, ir_type_elem(t), &s);
    if (rt == t)
        return x;
    lower_at(L, call);
    Val r = val_ir(ir_build_unary(&L->b, IR_OP_RESHAPE, rt, x.v));
    r.const_param = x.const_param;
    return r;
}

static Val b_broadcast_to(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = lower_expr(L, arg(call, 0));
    Shape s;
    if (!shape_arg(L, arg(call, 1), bi->name, &s) || !is_value(&x))
        return val_error();
    lower_at(L, call);
    return lower_broadcast(L, x, &s, call, bi->name);
}

static Val b_trans(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_tile(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    if (!is_value(&x))
        return val_error();
    Shape s = val_shape(&x);
    int64_t perm[IR_MAX_RANK];
    const AstNode *p = arg(call, 1);
    if (p) {
        if (p->kind != AST_LIST) {
            lower_error(L, p, "permutation of 'trans' must be a list like [1, 0]");
            return val_error();
        }
        if (p->num_items != s.rank) {
            lower_error(L, p, "permutation of 'trans' has %d entries but the tile has rank %d", p->num_items, s.rank);
            return val_error();
        }
        bool seen[IR_MAX_RANK] = {false};
        for (int i = 0; i < s.rank; i++) {
            if (!lower_const_int(L, p->items[i], "an entry of a permutation", &perm[i]))
                return val_error();
            if (perm[i] < 0 || perm[i] >= s.rank || seen[perm[i]]) {
                lower_error(L, p->items[i], "permutation of 'trans' must list each of 0..%d once", s.rank - 1);
                return val_error();
            }
            seen[perm[i]] = true;
        }
    } else {
        for (int i = 0; i < s.rank; i++)
            perm[i] = s.rank - 1 - i;
    }
    Shape r = s;
    bool identity = true;
    for (int i = 0; i < s.rank; i++) {
        r.dim[i] = s.dim[perm[i]];
        identity &= perm[i] == i;
    }
    if (identity)
        return x;
    lower_at(L, call);
    IrValue *v = ir_build_unary(&L->b, IR_OP_TRANS, lower_tile_type(L, val_elem(&x), &r), lower_ir(L, &x));
    ir_op_set_ints(L->m, v->def, "perm", s.rank, perm);
    Val out = val_ir(v);
    out.const_param = x.const_param;
    return out;
}

static Val b_expand_dims(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = lower_expr(L, arg(call, 0));
    if (!is_value(&x))
        return val_error();
    Shape s = val_shape(&x);
    int axis;
    if (!axis_arg(L, arg(call, 1), bi->name, s.rank, true, &axis))
        return val_error();
    if (s.rank + 1 > IR_MAX_RANK) {
        lower_error(L, call, "'expand_dims' gives %d dimensions; tiles have at most %d", s.rank + 1, IR_MAX_RANK);
        return val_error();
    }
    memmove(&s.dim[axis + 1], &s.dim[axis], sizeof(int64_t) * (size_t)(s.rank - axis));
    s.dim[axis] = 1;
    s.rank++;
    lower_at(L, call);
    if (s.rank == 1)
        return lower_broadcast(L, x, &s, call, bi->name);
    IrValue *v = ir_build_unary(&L->b, IR_OP_EXPAND_DIMS, lower_tile_type(L, val_elem(&x), &s), x.v);
    ir_op_set_int(L->m, v->def, "axis", axis);
    Val out = val_ir(v);
    out.const_param = x.const_param;
    return out;
}

/* ---- elementwise ---- */

static Val b_where(Lower *L, const AstNode *call, const Builtin *bi) {
    Val c = lower_expr(L, arg(call, 0));
    Val a = lower_expr(L, arg(call, 1));
    Val b = lower_expr(L, arg(call, 2));
    return lower_select(L, call, c, a, b, bi->name);
}

static Val b_minmax2(Lower *L, const AstNode *call, const Builtin *bi) {
    Val a = need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    Val b = need_number(L, lower_expr(L, arg(call, 1)), arg(call, 1), bi->name);
    return lower_arith(L, call, bi->opc, NULL, bi->name, a, b);
}

/* cluster_sum / cluster_max / cluster_min / cluster_logsumexp(x, C): a
 * scalar combined over the C programs of a thread-block cluster along axis 0.
 * Floats become f32, integers i32 (i64 is refused: the op moves 32 bits;
 * cluster_logsumexp takes floats only); C a constant 1..8,
 * the same for every cluster op of the kernel (its num_ctas). */
static Val b_cluster_reduce(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    char what[64];
    snprintf(what, sizeof what, "cluster size of '%s'", bi->name);
    int64_t ctas;
    if (!lower_const_int(L, arg(call, 1), what, &ctas) || !is_value(&x))
        return val_error();
    if (ctas < 1 || ctas > IR_MAX_CLUSTER_CTAS) {
        lower_error(L, arg(call, 1), "cluster size of '%s' must be from 1 to %d, got %lld", bi->name,
                    IR_MAX_CLUSTER_CTAS, (long long)ctas);
        return val_error();
    }
    if (val_shape(&x).rank != 0) {
        lower_error(L, arg(call, 0), "'%s' takes a scalar (reduce a tile with sum, max or min first), got %s",
                    bi->name, lower_val_str(L, &x));
        return val_error();
    }
    const IrType *e = val_elem(&x);
    if (lower_reject_fp8(L, e, call, bi->name))
        return val_error();
    if (strcmp(bi->kind, "logsumexp") == 0 && !ir_type_is_float(e)) {
        lower_error(L, arg(call, 0), "'%s' takes a float, got %s", bi->name, lower_val_str(L, &x));
        return val_error();
    }
    if (e->kind == IR_I64 || e->kind == IR_I1) {
        lower_error(L, arg(call, 0), "'%s' takes an i32 or a float, got %s", bi->name, lower_val_str(L, &x));
        return val_error();
    }
    if (L->fn->kind != IR_FUNC_KERNEL) {
        lower_error(L, call, "'%s' may only be used in a kernel, not in a func", bi->name);
        return val_error();
    }
    int64_t have = ir_func_get_int(L->fn, "num_ctas", 0);
    if (have && have != ctas) {
        lower_error(L, arg(call, 1), "cluster size %lld differs from the kernel's earlier cluster ops' %lld",
                    (long long)ctas, (long long)have);
        return val_error();
    }
    ir_func_set_int(L->fn, "num_ctas", ctas);
    x = lower_convert(L, x, lower_scalar(L, ir_type_is_int(e) ? IR_I32 : IR_F32), call);
    lower_at(L, call);
    IrValue *v = lower_ir(L, &x);
    IrValue *r = ir_build(&L->b, IR_OP_CLUSTER_REDUCE, v->type, 1, &v);
    ir_op_set_word(L->m, r->def, "kind", bi->kind);
    ir_op_set_int(L->m, r->def, "ctas", ctas);
    return val_ir(r);
}

/* exp, log, sqrt... (float only: integers become f32) and abs (any number). */
static Val b_math(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    if (!is_value(&x))
        return val_error();
    const IrType *e = val_elem(&x);
    if (bi->opc == IR_OP_ABS && ir_type_is_int(e)) {
        if (x.kind == VAL_CONST) {
            int64_t v = x.i < 0 ? (int64_t)(0 - (uint64_t)x.i) : x.i;
            return x.weak ? val_weak_int(L, v) : val_int(x.type, v);
        }
        lower_at(L, call);
        return val_ir(ir_build_unary(&L->b, IR_OP_ABS, x.v->type, x.v));
    }
    if (lower_reject_fp8(L, e, call, bi->name))
        return val_error();
    bool weak = x.kind == VAL_CONST && x.weak;
    if (ir_type_is_int(e))
        x = lower_convert(L, x, lower_scalar(L, IR_F32), call);
    if (x.kind == VAL_CONST) {
        double r = x.f;
        ir_fold_math(bi->opc, x.f, &r);
        return weak ? val_weak_float(L, r) : val_float(x.type, r);
    }
    lower_at(L, call);
    return val_ir(ir_build_unary(&L->b, bi->opc, x.v->type, x.v));
}

static Val b_fma(Lower *L, const AstNode *call, const Builtin *bi) {
    Val v[3];
    for (int i = 0; i < 3; i++)
        v[i] = need_number(L, lower_expr(L, arg(call, i)), arg(call, i), bi->name);
    for (int i = 0; i < 3; i++)
        if (!is_value(&v[i]))
            return val_error();
    if (!lower_unify(L, v, 3, true, call, bi->name) || lower_reject_fp8(L, val_elem(&v[0]), call, bi->name))
        return val_error();
    if (ir_type_is_int(val_elem(&v[0])))
        for (int i = 0; i < 3; i++)
            v[i] = lower_convert(L, v[i], lower_scalar(L, IR_F32), call);
    if (v[0].kind == VAL_CONST && v[1].kind == VAL_CONST && v[2].kind == VAL_CONST)
        return val_float(v[0].type, fma(v[0].f, v[1].f, v[2].f));
    lower_at(L, call);
    IrValue *ops[3] = {lower_ir(L, &v[0]), lower_ir(L, &v[1]), lower_ir(L, &v[2])};
    return val_ir(ir_build(&L->b, IR_OP_FMA, ops[0]->type, 3, ops));
}

/* cdiv(a, b) = (a + b - 1) / b, on integers. */
static Val b_cdiv(Lower *L, const AstNode *call, const Builtin *bi) {
    Val a = lower_expr(L, arg(call, 0));
    Val b = lower_expr(L, arg(call, 1));
    if (!is_value(&a) || !is_value(&b))
        return val_error();
    if (!ir_type_is_int(val_elem(&a)) || !ir_type_is_int(val_elem(&b))) {
        lower_error(L, call, "operands of 'cdiv' must be integers, got %s and %s", lower_val_str(L, &a),
                    lower_val_str(L, &b));
        return val_error();
    }
    if (b.kind == VAL_CONST && b.i == 0) {
        lower_error(L, arg(call, 1), "division by zero in 'cdiv'");
        return val_error();
    }
    Val t = lower_arith(L, call, IR_OP_ADD, NULL, "cdiv", a, b);
    t = lower_arith(L, call, IR_OP_SUB, NULL, "cdiv", t, val_weak_int(L, 1));
    return lower_arith(L, call, IR_OP_DIV, NULL, "cdiv", t, b);
}

/* Does the literal x fit `bits` bits, read as signed or as unsigned? */
static bool literal_fits(const Val *x, int bits) {
    return bits >= 64 || (x->i >= -((int64_t)1 << (bits - 1)) && x->i < (int64_t)1 << bits);
}

/* umulhi(a, b): the high half of the unsigned product of two integers. A
 * literal takes the other operand's type when it fits its bits read as
 * unsigned (0xD2511F53 with an i32); two literals are i32 when both fit 32
 * bits so, else i64. */
static Val b_umulhi(Lower *L, const AstNode *call, const Builtin *bi) {
    Val v[2] = {lower_expr(L, arg(call, 0)), lower_expr(L, arg(call, 1))};
    if (!is_value(&v[0]) || !is_value(&v[1]))
        return val_error();
    const IrType *e[2] = {val_elem(&v[0]), val_elem(&v[1])};
    if (!ir_type_is_int(e[0]) || !ir_type_is_int(e[1]) || e[0]->kind == IR_I1 || e[1]->kind == IR_I1) {
        lower_error(L, call, "operands of 'umulhi' must be integers, got %s and %s", lower_val_str(L, &v[0]),
                    lower_val_str(L, &v[1]));
        return val_error();
    }
    bool weak[2] = {v[0].kind == VAL_CONST && v[0].weak, v[1].kind == VAL_CONST && v[1].weak};
    if (weak[0] && weak[1]) {
        const IrType *t = lower_scalar(L, literal_fits(&v[0], 32) && literal_fits(&v[1], 32) ? IR_I32 : IR_I64);
        v[0] = val_int(t, v[0].i);
        v[1] = val_int(t, v[1].i);
    }
    for (int i = 0; i < 2; i++)
        if (weak[i] && !weak[1 - i] && literal_fits(&v[i], ir_type_bits(e[1 - i])))
            v[i] = val_int(e[1 - i], v[i].i);
    return lower_arith(L, call, IR_OP_UMULHI, NULL, bi->name, v[0], v[1]);
}

static Val b_random(Lower *L, const AstNode *call, const Builtin *bi) {
    return lower_random(L, call, bi->name);
}

/* ---- reductions ---- */

/* reduce {kind, axis} of x, giving elements of type relem. */
static Val reduce_axis(Lower *L, const AstNode *call, const Builtin *bi, Val x, int axis, const IrType *relem) {
    Shape s = val_shape(&x);
    memmove(&s.dim[axis], &s.dim[axis + 1], sizeof(int64_t) * (size_t)(s.rank - axis - 1));
    s.rank--;
    lower_at(L, call);
    IrValue *v = ir_build_unary(&L->b, IR_OP_REDUCE, lower_tile_type(L, relem, &s), lower_ir(L, &x));
    ir_op_set_word(L->m, v->def, "kind", bi->kind);
    ir_op_set_int(L->m, v->def, "axis", axis);
    return val_ir(v);
}

/* sum(x [, axis]), and min/max: reductions of a tile, elementwise on scalars. */
static Val b_reduce(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name);
    if (!is_value(&x))
        return val_error();
    Shape s = val_shape(&x);
    if (s.rank == 0) {
        if (bi->opc == IR_OP_REDUCE || call->num_items != 2) {
            lower_error(L, arg(call, 0), "'%s' needs a tile%s, got %s", bi->name,
                        bi->opc == IR_OP_REDUCE ? "" : " (or two scalars)", lower_val_str(L, &x));
            return val_error();
        }
        Val b = need_number(L, lower_expr(L, arg(call, 1)), arg(call, 1), bi->name);
        return lower_arith(L, call, bi->opc, NULL, bi->name, x, b);
    }
    if (lower_reject_fp8(L, val_elem(&x), call, bi->name))
        return val_error();
    if (strcmp(bi->kind, "sum") == 0 && val_elem(&x)->kind == IR_I1)
        x = lower_convert(L, x, lower_scalar(L, IR_I32), call);
    if (call->num_items == 2) {
        int axis;
        if (!axis_arg(L, arg(call, 1), bi->name, s.rank, false, &axis))
            return val_error();
        return reduce_axis(L, call, bi, x, axis, val_elem(&x));
    }
    while (val_shape(&x).rank > 0)
        x = reduce_axis(L, call, bi, x, 0, val_elem(&x));
    return x;
}

/* argmax(x [, axis]), argmin: the i32 index along the axis of the first
 * largest (smallest) element, NaN counting as the extreme; the axis may be
 * left out for a 1-D tile only. */
static Val b_argreduce(Lower *L, const AstNode *call, const Builtin *bi) {
    Val x = need_tile(L, need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name), arg(call, 0), bi->name);
    if (!is_value(&x))
        return val_error();
    Shape s = val_shape(&x);
    int axis = 0;
    if (call->num_items == 2 && !axis_arg(L, arg(call, 1), bi->name, s.rank, false, &axis))
        return val_error();
    if (call->num_items == 1 && s.rank > 1) {
        lower_error(L, call, "'%s' of a tile of rank %d needs an axis: %s(x, axis)", bi->name, s.rank, bi->name);
        return val_error();
    }
    return reduce_axis(L, call, bi, x, axis, lower_scalar(L, IR_I32));
}

/* ---- scans ---- */

/* A constexpr flag argument (true, false, or an integer: nonzero is true). */
static bool flag_arg(Lower *L, const AstNode *n, const char *what, const char *fname, bool *out) {
    Val v = lower_expr(L, n);
    if (v.kind == VAL_ERROR)
        return false;
    if (v.kind != VAL_CONST || !ir_type_is_int(v.type)) {
        lower_error(L, n, "%s of '%s' must be a constant bool (true or false), got %s", what, fname,
                    lower_val_str(L, &v));
        return false;
    }
    *out = val_truthy(&v);
    return true;
}

/* cumsum(x, axis [, reverse]), cumprod(x, axis [, reverse]) and
 * scan(x, axis, f [, reverse]): an inclusive scan along the axis, as a
 * `scan` op whose combine region adds, multiplies, or calls the func f
 * (which inline then replaces by its body). cumsum and cumprod count bools
 * in i32, as sum does; other element types stay. */
static Val b_scan(Lower *L, const AstNode *call, const Builtin *bi) {
    bool user = bi->opc == IR_OP_SCAN;
    Val x = need_tile(L, need_number(L, lower_expr(L, arg(call, 0)), arg(call, 0), bi->name), arg(call, 0), bi->name);
    if (!is_value(&x))
        return val_error();
    Shape s = val_shape(&x);
    int axis;
    bool reverse = false;
    const AstNode *rev = arg(call, user ? 3 : 2);
    if (!axis_arg(L, arg(call, 1), bi->name, s.rank, false, &axis) ||
        (rev && !flag_arg(L, rev, "reverse", bi->name, &reverse)))
        return val_error();
    if (!user && val_elem(&x)->kind == IR_I1)
        x = lower_convert(L, x, lower_scalar(L, IR_I32), call);
    const IrType *elem = val_elem(&x);
    FuncInst *inst = NULL;
    if (user && !(inst = lower_combine_func(L, arg(call, 2), bi->name, elem, 2)))
        return val_error();
    lower_at(L, call);
    IrValue *in = lower_ir(L, &x);
    IrOp *op = ir_build_op(&L->b, IR_OP_SCAN, 1, &in, 1, &in->type);
    ir_op_set_int(L->m, op, "axis", axis);
    if (reverse)
        ir_op_set_int(L->m, op, "reverse", 1);
    IrBlock *body = op->regions[0];
    IrValue *ab[2] = {ir_block_add_arg(L->m, body, elem, "a"), ir_block_add_arg(L->m, body, elem, "b")};
    IrBuilder in_body;
    ir_builder_at_end(&in_body, L->m, body);
    in_body.loc = L->b.loc;
    IrValue *r;
    if (user) {
        IrOp *c = ir_build_op(&in_body, IR_OP_CALL, 2, ab, 1, &elem);
        ir_op_set_symbol(L->m, c, "callee", inst->ir->name);
        r = c->results[0];
    } else {
        r = ir_build_binary(&in_body, bi->opc, elem, ab[0], ab[1]);
    }
    ir_build(&in_body, IR_OP_YIELD, NULL, 1, &r);
    return val_ir(op->results[0]);
}

/* ---- dot ---- */

static Val b_dot(Lower *L, const AstNode *call, const Builtin *bi) {
    Val a = lower_expr(L, arg(call, 0));
    Val b = lower_expr(L, arg(call, 1));
    Val acc = arg(call, 2) ? lower_expr(L, arg(call, 2)) : val_void("none");
    if (!is_value(&a) || !is_value(&b) || acc.kind == VAL_ERROR)
        return val_error();
    Shape sa = val_shape(&a), sb = val_shape(&b);
    if (sa.rank != 2 || sb.rank != 2) {
        lower_error(L, call, "operands of 'dot' must be 2-D tiles, got %s and %s", lower_val_str(L, &a),
                    lower_val_str(L, &b));
        return val_error();
    }
    const IrType *ea = val_elem(&a), *eb = val_elem(&b);
    if (ir_type_is_fp8(ea) && ir_type_is_fp8(eb)) {
        /* fp8 operands (e4m3 and e5m2 may mix) are exact in f16, which every
         * target's dot takes: the dot runs on f16 operands converted in
         * registers, accumulating in f32 */
        const IrType *f16 = lower_scalar(L, IR_F16);
        lower_at(L, call);
        a = lower_convert(L, a, f16, call);
        b = lower_convert(L, b, f16, call);
        ea = eb = f16;
    }
    if (ea != eb) {
        lower_error(L, call, "operands of 'dot' must have the same element type, got %s and %s", lower_val_str(L, &a),
                    lower_val_str(L, &b));
        return val_error();
    }
    if (ea->kind != IR_F16 && ea->kind != IR_BF16 && ea->kind != IR_F32) {
        lower_error(L, call, "operands of 'dot' must be f16, bf16, f32 or fp8 (f8e4m3, f8e5m2), got %s",
                    lower_type_str(L, ea));
        return val_error();
    }
    int64_t M = sa.dim[0], K = sa.dim[1], N = sb.dim[1];
    if (sb.dim[0] != K) {
        lower_error(L, call, "inner dimensions of 'dot' differ: %s @ %s", lower_shape_str(L, &sa),
                    lower_shape_str(L, &sb));
        return val_error();
    }
    if (M < 16 || N < 16 || K < 16) {
        lower_error(L, call, "'dot' needs M, N and K of at least 16, got %s @ %s", lower_shape_str(L, &sa),
                    lower_shape_str(L, &sb));
        return val_error();
    }
    Shape so = {2, {M, N}};
    const IrType *f32 = lower_scalar(L, IR_F32);
    const IrType *rt = lower_tile_type(L, f32, &so);
    lower_at(L, call);
    IrValue *accv;
    if (acc.kind == VAL_VOID) {
        accv = ir_build_const_float(&L->b, rt, 0.0);
    } else {
        bool weak = acc.kind == VAL_CONST && acc.weak;
        if (val_is_ptr(&acc) || (val_elem(&acc) != f32 && !weak)) {
            lower_error(L, arg(call, 2), "accumulator of 'dot' must be f32, got %s", lower_val_str(L, &acc));
            return val_error();
        }
        acc = lower_convert(L, acc, f32, arg(call, 2));
        acc = lower_broadcast(L, acc, &so, arg(call, 2), "accumulator of 'dot'");
        if (acc.kind == VAL_ERROR)
            return acc;
        lower_at(L, call);
        accv = lower_ir(L, &acc);
    }
    IrValue *ops[3] = {a.v, b.v, accv};
    return val_ir(ir_build(&L->b, IR_OP_DOT, rt, 3, ops));
}

/* ---- memory ---- */

static bool check_ptr(Lower *L, const Val *p, const AstNode *n, const char *fname) {
    if (!is_value(p))
        return false;
    if (!val_is_ptr(p)) {
        lower_error(L, n, "first argument of '%s' must be a pointer, got %s", fname, lower_val_str(L, p));
        return false;
    }
    return true;
}

/* Broadcasts pointer and mask against each other. */
static bool ptr_and_mask(Lower *L, const AstNode *call, const char *fname, Val *p, Val *mask, Shape *s) {
    *s = val_shape(p);
    if (mask->kind == VAL_VOID)
        return true;
    if (!is_value(mask))
        return false;
    if (val_elem(mask)->kind != IR_I1) {
        lower_error(L, arg(call, 2 - (strcmp(fname, "load") == 0)), "mask of '%s' must be bool, got %s", fname,
                    lower_val_str(L, mask));
        return false;
    }
    Shape ms = val_shape(mask);
    if (!lower_broadcast_shapes(s, &ms, s)) {
        lower_error(L, call, "mask of '%s' of shape %s does not broadcast with the pointer of shape %s", fname,
                    lower_shape_str(L, &ms), lower_shape_str(L, s));
        return false;
    }
    *p = lower_broadcast(L, *p, s, call, fname);
    *mask = lower_broadcast(L, *mask, s, call, fname);
    return is_value(p) && is_value(mask);
}

/* A load's or store's last argument may name an eviction policy, as Triton's
 * eviction_policy does: "evict_first" (data used once: out of the caches
 * first), "evict_last" (data used again soon: kept in L2 longest),
 * "evict_normal" (the default). *view is the call without it; *word the IR's
 * `evict` word ("first", "last"), NULL for the default. Atomics take none. */
static bool eviction_policy(Lower *L, const AstNode *call, const Builtin *bi, AstNode *view, const char **word) {
    *view = *call;
    *word = NULL;
    const AstNode *last = call->num_items ? call->items[call->num_items - 1] : NULL;
    int plain_max = bi->max_args - 1; /* the table counts the policy */
    if (!last || last->kind != AST_STRING_LIT) {
        if (call->num_items > plain_max && bi->opc == IR_OP_ATOMIC) {
            lower_error(L, call, "'%s' takes %d to %d arguments, got %d", bi->name, bi->min_args, plain_max,
                        call->num_items);
            return false;
        }
        if (call->num_items > plain_max) {
            lower_error(L, last,
                        "the last argument of '%s' must be its eviction policy: \"evict_first\", "
                        "\"evict_last\" or \"evict_normal\"",
                        bi->name);
            return false;
        }
        return true;
    }
    if (bi->opc == IR_OP_ATOMIC) {
        lower_error(L, last, "'%s' takes no eviction policy", bi->name);
        return false;
    }
    if (call->num_items - 1 < bi->min_args) /* not a policy: the string stands for an operand */
        return true;
    const char *s = last->str ? last->str : "";
    if (strcmp(s, "evict_first") == 0)
        *word = "first";
    else if (strcmp(s, "evict_last") == 0)
        *word = "last";
    else if (strcmp(s, "evict_normal") != 0) {
        lower_error(L, last,
                    "unknown eviction policy \"%s\" of '%s': \"evict_first\", \"evict_last\" or "
                    "\"evict_normal\"",
                    s, bi->name);
        return false;
    }
    view->num_items--;
    return true;
}

static Val b_load(Lower *L, const AstNode *whole, const Builtin *bi) {
    AstNode view;
    const char *evict;
    if (!eviction_policy(L, whole, bi, &view, &evict))
        return val_error();
    const AstNode *call = &view;
    Val p = lower_expr(L, arg(call, 0));
    Val mask = arg(call, 1) ? lower_expr(L, arg(call, 1)) : val_void("none");
    Val other = arg(call, 2) ? need_number(L, lower_expr(L, arg(call, 2)), arg(call, 2), bi->name) : val_void("none");
    if (!check_ptr(L, &p, arg(call, 0), bi->name) || other.kind == VAL_ERROR)
        return val_error();
    Shape s;
    if (!ptr_and_mask(L, call, bi->name, &p, &mask, &s))
        return val_error();
    const IrType *pointee = val_elem(&p)->elem;
    IrValue *ops[3];
    int n = 0;
    ops[n++] = p.v;
    if (mask.kind != VAL_VOID) {
        lower_at(L, call);
        ops[n++] = lower_ir(L, &mask);
    }
    if (other.kind != VAL_VOID) {
        other = lower_convert(L, other, pointee, arg(call, 2));
        other = lower_broadcast(L, other, &s, arg(call, 2), "'other' of 'load'");
        if (other.kind == VAL_ERROR)
            return other;
        lower_at(L, call);
        ops[n++] = lower_ir(L, &other);
    }
    lower_at(L, call);
    IrValue *r = ir_build(&L->b, IR_OP_LOAD, lower_tile_type(L, pointee, &s), n, ops);
    if (evict)
        ir_op_set_word(L->m, r->def, "evict", evict);
    return val_ir(r);
}

/* store(ptr, value [, mask]) and atomic_*(ptr, value [, mask]). */
static Val b_store(Lower *L, const AstNode *whole, const Builtin *bi) {
    AstNode view;
    const char *evict;
    if (!eviction_policy(L, whole, bi, &view, &evict))
        return val_error();
    const AstNode *call = &view;
    Val p = lower_expr(L, arg(call, 0));
    Val v = lower_expr(L, arg(call, 1));
    Val mask = arg(call, 2) ? lower_expr(L, arg(call, 2)) : val_void("none");
    if (!check_ptr(L, &p, arg(call, 0), bi->name) || !is_value(&v))
        return val_error();
    if (p.const_param) {
        const AstNode *cp = p.const_param;
        lower_error(L, call, "%s through pointer to const: '%s' is declared 'const %s*'",
                    bi->opc == IR_OP_STORE ? "store" : bi->name, cp->name, ir_scalar_name(cp->type.scalar));
        diag_note(L->diags, cp->loc, "'%s' declared here", cp->name);
        return val_error();
    }
    Shape s;
    if (!ptr_and_mask(L, call, bi->name, &p, &mask, &s))
        return val_error();
    const IrType *pointee = val_elem(&p)->elem;
    if (bi->opc == IR_OP_ATOMIC && lower_reject_fp8(L, pointee, call, bi->name))
        return val_error();
    if (val_is_ptr(&v)) {
        lower_error(L, arg(call, 1), "value of '%s' must be a number, got %s", bi->name, lower_val_str(L, &v));
        return val_error();
    }
    v = lower_convert(L, v, pointee, arg(call, 1));
    Shape vs = val_shape(&v), r;
    if (is_value(&v) && (!lower_broadcast_shapes(&vs, &s, &r) || r.rank != s.rank ||
                         memcmp(r.dim, s.dim, sizeof(int64_t) * (size_t)s.rank) != 0)) {
        lower_error(L, arg(call, 1), "value of '%s' of shape %s does not fit the pointer shape %s", bi->name,
                    lower_shape_str(L, &vs), lower_shape_str(L, &s));
        return val_error();
    }
    lower_at(L, call);
    v = lower_broadcast(L, v, &s, arg(call, 1), bi->name);
    if (v.kind == VAL_ERROR)
        return v;
    lower_at(L, call);
    IrValue *ops[3];
    int n = 0;
    ops[n++] = p.v;
    ops[n++] = lower_ir(L, &v);
    if (mask.kind != VAL_VOID)
        ops[n++] = lower_ir(L, &mask);
    if (bi->opc == IR_OP_STORE) {
        IrOp *st = ir_build_op(&L->b, IR_OP_STORE, n, ops, 0, NULL);
        if (evict)
            ir_op_set_word(L->m, st, "evict", evict);
        return val_void(bi->name);
    }
    IrValue *old = ir_build(&L->b, IR_OP_ATOMIC, lower_tile_type(L, pointee, &s), n, ops);
    ir_op_set_word(L->m, old->def, "kind", bi->kind);
    return val_ir(old);
}

/* ---- debugging ---- */

/* The string literal argument i of a call (NULL, with an error, if it is
 * something else). */
static const char *string_arg(Lower *L, const AstNode *call, int i, const char *what) {
    const AstNode *n = arg(call, i);
    if (n->kind != AST_STRING_LIT || !n->str) {
        lower_error(L, n, "%s of '%s' must be a string literal", what, call->lhs->name);
        return NULL;
    }
    return n->str;
}

/* device_print("label", values...): `print` with the program ids, the label
 * as Triton makes it a prefix (" label: " when there are values). */
static Val b_device_print(Lower *L, const AstNode *call, const Builtin *bi) {
    const char *label = string_arg(L, call, 0, "label");
    int n = call->num_items - 1;
    IrValue **ops = ARENA_ARRAY(&L->tmp, IrValue *, n + 3);
    bool ok = label != NULL;
    for (int i = 0; i < n; i++) {
        Val x = lower_expr(L, arg(call, i + 1));
        if (is_value(&x)) {
            lower_at(L, call);
            ops[3 + i] = lower_ir(L, &x);
        } else {
            ok = false;
        }
    }
    if (!ok)
        return val_error();
    /* Triton's prefix: with values it ends in ": " (a final space becomes
     * one), and one longer than two characters starts with a space */
    size_t len = strlen(label);
    char *prefix = (char *)arena_alloc(&L->tmp, len + 4) + 1; /* room for " " before, ": " after */
    memcpy(prefix, label, len + 1);
    if (n > 0 && (len == 0 || prefix[len - 1] != ' '))
        prefix[len++] = ' ';
    if (n > 0 && !(len >= 2 && prefix[len - 2] == ':')) {
        prefix[len - 1] = ':';
        prefix[len++] = ' ';
    }
    prefix[len] = 0;
    if (len > 2 && prefix[0] != ' ')
        *--prefix = ' ';
    lower_at(L, call);
    for (int axis = 0; axis < 3; axis++) {
        ops[axis] = ir_build(&L->b, IR_OP_PROGRAM_ID, lower_scalar(L, IR_I32), 0, NULL);
        ir_op_set_int(L->m, ops[axis]->def, "axis", axis);
    }
    IrOp *op = ir_build_op(&L->b, IR_OP_PRINT, n + 3, ops, 0, NULL);
    ir_op_set_string(L->m, op, "prefix", prefix);
    return val_void(bi->name);
}

/* device_assert(cond [, "message"]): `assert`; a constant true condition
 * needs none. */
static Val b_device_assert(Lower *L, const AstNode *call, const Builtin *bi) {
    Val c = lower_expr(L, arg(call, 0));
    const char *msg = call->num_items > 1 ? string_arg(L, call, 1, "message") : bi->name;
    if (!is_value(&c) || !msg)
        return val_error();
    if (val_elem(&c)->kind != IR_I1) {
        lower_error(L, arg(call, 0), "condition of '%s' must be bool, got %s", bi->name, lower_val_str(L, &c));
        return val_error();
    }
    if (c.kind == VAL_CONST && c.i)
        return val_void(bi->name);
    lower_at(L, call);
    IrValue *v = lower_ir(L, &c);
    IrOp *op = ir_build_op(&L->b, IR_OP_ASSERT, 1, &v, 0, NULL);
    ir_op_set_string(L->m, op, "message", msg);
    return val_void(bi->name);
}

/* ---- the table ---- */

static const Builtin builtins[] = {
    {"program_id", 1, 1, b_program_id, IR_OP_PROGRAM_ID, NULL},
    {"num_programs", 1, 1, b_program_id, IR_OP_NUM_PROGRAMS, NULL},
    {"arange", 2, 2, b_arange, IR_OP_ARANGE, NULL},
    {"full", 2, 3, b_full, IR_OP_CONSTANT, NULL},
    {"zeros", 1, 2, b_full, IR_OP_CONSTANT, NULL},
    {"reshape", 2, 2, b_reshape, IR_OP_RESHAPE, NULL},
    {"broadcast_to", 2, 2, b_broadcast_to, IR_OP_BROADCAST, NULL},
    {"trans", 1, 2, b_trans, IR_OP_TRANS, NULL},
    {"expand_dims", 2, 2, b_expand_dims, IR_OP_EXPAND_DIMS, NULL},
    {"where", 3, 3, b_where, IR_OP_SELECT, NULL},
    {"minimum", 2, 2, b_minmax2, IR_OP_MIN, NULL},
    {"maximum", 2, 2, b_minmax2, IR_OP_MAX, NULL},
    {"min", 1, 2, b_reduce, IR_OP_MIN, "min"},
    {"max", 1, 2, b_reduce, IR_OP_MAX, "max"},
    {"sum", 1, 2, b_reduce, IR_OP_REDUCE, "sum"},
    {"argmax", 1, 2, b_argreduce, IR_OP_REDUCE, "argmax"},
    {"cluster_sum", 2, 2, b_cluster_reduce, IR_OP_CLUSTER_REDUCE, "sum"},
    {"cluster_max", 2, 2, b_cluster_reduce, IR_OP_CLUSTER_REDUCE, "max"},
    {"cluster_min", 2, 2, b_cluster_reduce, IR_OP_CLUSTER_REDUCE, "min"},
    {"cluster_logsumexp", 2, 2, b_cluster_reduce, IR_OP_CLUSTER_REDUCE, "logsumexp"},
    {"argmin", 1, 2, b_argreduce, IR_OP_REDUCE, "argmin"},
    {"cumsum", 2, 3, b_scan, IR_OP_ADD, NULL},
    {"cumprod", 2, 3, b_scan, IR_OP_MUL, NULL},
    {"scan", 3, 4, b_scan, IR_OP_SCAN, NULL},
    {"exp", 1, 1, b_math, IR_OP_EXP, NULL},
    {"exp2", 1, 1, b_math, IR_OP_EXP2, NULL},
    {"log", 1, 1, b_math, IR_OP_LOG, NULL},
    {"log2", 1, 1, b_math, IR_OP_LOG2, NULL},
    {"sqrt", 1, 1, b_math, IR_OP_SQRT, NULL},
    {"rsqrt", 1, 1, b_math, IR_OP_RSQRT, NULL},
    {"abs", 1, 1, b_math, IR_OP_ABS, NULL},
    {"erf", 1, 1, b_math, IR_OP_ERF, NULL},
    {"tanh", 1, 1, b_math, IR_OP_TANH, NULL},
    {"sigmoid", 1, 1, b_math, IR_OP_SIGMOID, NULL},
    {"floor", 1, 1, b_math, IR_OP_FLOOR, NULL},
    {"ceil", 1, 1, b_math, IR_OP_CEIL, NULL},
    {"sin", 1, 1, b_math, IR_OP_SIN, NULL},
    {"cos", 1, 1, b_math, IR_OP_COS, NULL},
    {"fma", 3, 3, b_fma, IR_OP_FMA, NULL},
    {"cdiv", 2, 2, b_cdiv, IR_OP_DIV, NULL},
    {"umulhi", 2, 2, b_umulhi, IR_OP_UMULHI, NULL},
    {"rand", 2, 2, b_random, IR_OP_UMULHI, NULL},
    {"randn", 2, 2, b_random, IR_OP_UMULHI, NULL},
    {"randint", 2, 2, b_random, IR_OP_UMULHI, NULL},
    {"dot", 2, 3, b_dot, IR_OP_DOT, NULL},
    {"load", 1, 4, b_load, IR_OP_LOAD, NULL}, /* a last string: the eviction policy */
    {"store", 2, 4, b_store, IR_OP_STORE, NULL},
    {"atomic_add", 2, 4, b_store, IR_OP_ATOMIC, "add"}, /* 4: to say that atomics take no policy */
    {"atomic_max", 2, 4, b_store, IR_OP_ATOMIC, "max"},
    {"atomic_min", 2, 4, b_store, IR_OP_ATOMIC, "min"},
    {"atomic_xchg", 2, 4, b_store, IR_OP_ATOMIC, "xchg"},
    {"device_print", 1, 64, b_device_print, IR_OP_PRINT, NULL},
    {"device_assert", 1, 2, b_device_assert, IR_OP_ASSERT, NULL},
};

static const Builtin *find_builtin(const char *name) {
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

bool lower_is_builtin(const char *name) {
    return find_builtin(name) != NULL;
}

bool lower_builtin(Lower *L, const AstNode *call, const char *name, Val *out) {
    const Builtin *bi = find_builtin(name);
    if (!bi)
        return false;
    int n = call->num_items;
    if (n < bi->min_args || n > bi->max_args) {
        if (bi->min_args == bi->max_args)
            lower_error(L, call, "'%s' takes %d argument%s, got %d", name, bi->min_args, bi->min_args == 1 ? "" : "s",
                        n);
        else
            lower_error(L, call, "'%s' takes %d to %d arguments, got %d", name, bi->min_args, bi->max_args, n);
        *out = val_error();
        return true;
    }
    *out = bi->lower(L, call, bi);
    return true;
}

const AstNode *lower_as_type(Lower *L, const AstNode *n) {
    if (n && n->kind == AST_TYPE)
        return n;
    if (!n || n->kind != AST_IDENT || !n->name)
        return NULL;
    Symbol *s = lower_lookup(L, n->name);
    if (!s || s->kind != SYM_DTYPE || !s->type)
        return NULL;
    AstNode *t = ast_new(&L->tmp, AST_TYPE, n->loc);
    t->type.scalar = s->type->kind;
    return t;
}

Val lower_cast_call(Lower *L, const AstNode *call, const AstNode *t) {
    const IrType *elem = lower_scalar(L, t->type.scalar);
    if (t->type.is_pointer) {
        lower_error(L, call, "cannot cast to a pointer type");
        return val_error();
    }
    if (call->num_items != 1) {
        lower_error(L, call, "cast to %s takes 1 argument, got %d", ir_scalar_name(t->type.scalar), call->num_items);
        return val_error();
    }
    Val x = lower_expr(L, call->items[0]);
    if (!is_value(&x))
        return val_error();
    if (val_is_ptr(&x)) {
        lower_error(L, call, "cannot cast %s to %s", lower_val_str(L, &x), ir_scalar_name(t->type.scalar));
        return val_error();
    }
    lower_at(L, call);
    return lower_convert(L, x, elem, call);
}
