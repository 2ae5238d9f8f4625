/*
 * axis_info.c — contiguity, divisibility and constancy of integer and
 * pointer values, per dimension (an analysis), and `axis-info-print`, the
 * debug pass that writes the facts onto the IR for lit tests.
 *
 * Coalescing needs to know, for a tile of pointers, along which dimension
 * consecutive elements point to consecutive addresses, how long those runs
 * are, and how well the first address of a run is aligned; vectorizing a
 * masked access also needs to know how long the mask stays constant. This is
 * Triton's AxisInfo analysis (docs/passes.md, "Axis info and coalescing"),
 * with the same three facts per dimension (see AxisInfo in passes.h):
 *
 *     ptrs = x + row * 1024 + arange(0, 256)       x: ptr<f32> {divisibility = 16}
 *         contiguity [256]   divisibility [16]   constancy [1]
 *     mask = arange(0, 256) < n                     n: i32 {divisibility = 8}
 *         contiguity [1]     divisibility [1]    constancy [8]
 *
 * Facts are gathered forward, in program order, from kernel parameters (the
 * `divisibility = N` parameter attribute: bytes for a pointer, the value for
 * an integer; a pointer without it is only known to be aligned to its
 * element), `arange`, constants, and loop induction variables, and carried
 * through each op by the rules below (Triton's, with the sources named).
 * Joins (loop-carried values, `if` results) take gcds. A `for` is visited
 * until its body arguments stop changing (every join only lowers facts, so
 * this ends; after MAX_LOOP_VISITS the arguments are given up as unknown,
 * which is always sound).
 *
 * One refinement over Triton: when an op cuts an operand's runs into shorter
 * ones (a contiguous run of 1024 added to a value with constancy 8 gives
 * runs of 8), the new runs start in the middle of old ones, so the operand
 * contributes gcd(divisibility, new run length) instead of its divisibility
 * (`div_at`). Triton keeps the divisibility there, which overstates it for
 * such mixed operands.
 *
 * Integer division and remainder assume non-negative operands (as Triton
 * does): index arithmetic in kernels is non-negative.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LOOP_VISITS 4 /* per loop; nested loops multiply, so keep it small */

struct AxisInfoMap {
    Arena arena;
    IrMap facts; /* IrValue* -> AxisInfo* */
};

typedef struct Analysis {
    AxisInfoMap *map;
} Analysis;

/* ---- small arithmetic ---- */

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a < 0 ? -a : a;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* The largest power of two dividing v (0 is divisible by everything). */
static int64_t pow2_divisor(int64_t v) {
    if (v == 0)
        return AXIS_MAX_DIVISIBILITY;
    uint64_t u = (uint64_t)v;
    uint64_t p = u & (~u + 1);
    return p >= (uint64_t)AXIS_MAX_DIVISIBILITY ? AXIS_MAX_DIVISIBILITY : (int64_t)p;
}

static int64_t mul_div(int64_t a, int64_t b) {
    /* both at most 2^30: the product fits */
    int64_t p = a * b;
    return p > AXIS_MAX_DIVISIBILITY ? AXIS_MAX_DIVISIBILITY : p;
}

/* ---- facts ---- */

static int ndims(const AxisInfo *a) {
    return a->rank ? a->rank : 1;
}

static int64_t dim_size(const IrType *t, int d) {
    return t && t->kind == IR_TILE ? t->shape[d] : 1;
}

static void set_unknown(AxisInfo *a, const IrType *t) {
    memset(a, 0, sizeof *a);
    a->rank = t && t->kind == IR_TILE ? t->rank : 0;
    for (int d = 0; d < ndims(a); d++)
        a->contiguity[d] = a->divisibility[d] = a->constancy[d] = 1;
}

/* Facts of a value equal to `value` everywhere. */
static void set_const(AxisInfo *a, const IrType *t, int64_t value) {
    set_unknown(a, t);
    a->is_const = true;
    a->const_value = value;
    for (int d = 0; d < ndims(a); d++) {
        a->constancy[d] = dim_size(t, d);
        a->divisibility[d] = pow2_divisor(value);
    }
}

static bool is_const_eq(const AxisInfo *a, int64_t v) {
    return a->is_const && a->const_value == v;
}

/* The whole dimension is one contiguous run / one constant run. */
static bool contiguous_dim(const AxisInfo *a, const IrType *t, int d) {
    return a->contiguity[d] == dim_size(t, d);
}
static bool constant_dim(const AxisInfo *a, const IrType *t, int d) {
    return a->constancy[d] == dim_size(t, d);
}

/* The divisibility a contributes to runs of length g cut from its own runs:
 * a run that starts inside one of a's contiguous runs starts g*k after its
 * first element. */
static int64_t div_at(const AxisInfo *a, int d, int64_t g) {
    return a->contiguity[d] > g ? gcd64(a->divisibility[d], g) : a->divisibility[d];
}

static bool info_equal(const AxisInfo *a, const AxisInfo *b) {
    if (a->rank != b->rank || a->is_const != b->is_const || (a->is_const && a->const_value != b->const_value))
        return false;
    for (int d = 0; d < ndims(a); d++)
        if (a->contiguity[d] != b->contiguity[d] || a->divisibility[d] != b->divisibility[d] ||
            a->constancy[d] != b->constancy[d])
            return false;
    return true;
}

/* The facts that hold for a value that is either a or b. */
static AxisInfo join(const AxisInfo *a, const AxisInfo *b) {
    AxisInfo r = *a;
    if (a->rank != b->rank) {
        for (int d = 0; d < ndims(&r); d++)
            r.contiguity[d] = r.divisibility[d] = r.constancy[d] = 1;
        r.is_const = false;
        return r;
    }
    for (int d = 0; d < ndims(&r); d++) {
        int64_t g = gcd64(a->contiguity[d], b->contiguity[d]);
        r.contiguity[d] = g;
        r.divisibility[d] = gcd64(div_at(a, d, g), div_at(b, d, g));
        r.constancy[d] = gcd64(a->constancy[d], b->constancy[d]);
    }
    r.is_const = a->is_const && b->is_const && a->const_value == b->const_value;
    return r;
}

/* ---- the map ---- */

static AxisInfo *slot(Analysis *an, const IrValue *v) {
    AxisInfo *a = ir_map_get(&an->map->facts, v);
    if (!a) {
        a = ARENA_NEW(&an->map->arena, AxisInfo);
        set_unknown(a, v->type);
        ir_map_put(&an->map->facts, v, a);
    }
    return a;
}

static const AxisInfo *get(Analysis *an, const IrValue *v) {
    return slot(an, v);
}

static void put(Analysis *an, const IrValue *v, const AxisInfo *a) {
    *slot(an, v) = *a;
}

/* ---- parameters ---- */

static void param_facts(Analysis *an, IrValue *p) {
    AxisInfo a;
    set_unknown(&a, p->type);
    if (p->type->kind == IR_PTR || ir_type_is_int(p->type)) {
        const IrAttr *div = ir_attr_get(p->num_attrs, p->attrs, "divisibility");
        if (div && div->kind == IR_ATTR_INT && div->i > 0)
            a.divisibility[0] = pow2_divisor(div->i);
        else if (p->type->kind == IR_PTR)
            a.divisibility[0] = pow2_divisor(ir_type_bytes(p->type->elem)); /* natural alignment */
    }
    put(an, p, &a);
}

/* ---- transfer functions ---- */

/* add, sub, addptr: a contiguous run plus a constant run stays contiguous. */
static void visit_add(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    const IrType *t = op->results[0]->type;
    bool is_ptr = op->opc == IR_OP_ADDPTR;
    int64_t scale = is_ptr ? ir_type_bytes(ir_type_elem(t)->elem) : 1;
    for (int d = 0; d < ndims(r); d++) {
        int64_t c = gcd64(a->contiguity[d], b->constancy[d]);
        if (op->opc != IR_OP_SUB) /* constant - contiguous runs downwards */
            c = max64(c, gcd64(a->constancy[d], b->contiguity[d]));
        r->contiguity[d] = c;
        int64_t db = div_at(b, d, c);
        r->divisibility[d] = gcd64(div_at(a, d, c), is_ptr ? mul_div(db, scale) : db);
        r->constancy[d] = gcd64(a->constancy[d], b->constancy[d]);
    }
}

static void visit_mul(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    for (int d = 0; d < ndims(r); d++) {
        r->contiguity[d] = is_const_eq(b, 1) ? a->contiguity[d] : is_const_eq(a, 1) ? b->contiguity[d] : 1;
        /* Only the first element of a contiguous run has its divisibility. */
        int64_t da = a->contiguity[d] > 1 && !is_const_eq(b, 1) ? 1 : a->divisibility[d];
        int64_t db = b->contiguity[d] > 1 && !is_const_eq(a, 1) ? 1 : b->divisibility[d];
        r->divisibility[d] = mul_div(da, db);
        r->constancy[d] = gcd64(a->constancy[d], b->constancy[d]);
    }
}

/* x / c: runs of consecutive values aligned to gcd(div x, div c) share a
 * quotient (c is a multiple of it, so quotients change only at its
 * multiples). */
static void visit_div(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    const IrType *t = op->results[0]->type;
    for (int d = 0; d < ndims(r); d++) {
        r->contiguity[d] = is_const_eq(b, 1) ? a->contiguity[d] : 1;
        int64_t k = gcd64(a->constancy[d], b->constancy[d]);
        if (contiguous_dim(a, t, d) && constant_dim(b, t, d))
            k = max64(k, gcd64(a->contiguity[d], gcd64(a->divisibility[d], b->divisibility[d])));
        r->constancy[d] = k;
        r->divisibility[d] = is_const_eq(a, 0) || is_const_eq(b, 1) ? a->divisibility[d] : 1;
    }
}

/* x % c: consecutive runs wrap at multiples of c. */
static void visit_rem(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    const IrType *t = op->results[0]->type;
    for (int d = 0; d < ndims(r); d++) {
        int64_t c = 1;
        if (contiguous_dim(a, t, d) && constant_dim(b, t, d))
            c = gcd64(a->contiguity[d], gcd64(a->divisibility[d], b->divisibility[d]));
        r->contiguity[d] = c;
        r->divisibility[d] = gcd64(div_at(a, d, c), div_at(b, d, c));
        r->constancy[d] = gcd64(a->constancy[d], b->constancy[d]);
    }
}

/* shl/shr by a constant: a multiplication or division by 2^k. */
static void visit_shift(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    bool known = b->is_const && b->const_value >= 0 && b->const_value < 31;
    int64_t k = known ? b->const_value : 0;
    for (int d = 0; d < ndims(r); d++) {
        r->constancy[d] = gcd64(a->constancy[d], b->constancy[d]);
        if (!known)
            continue;
        r->contiguity[d] = k == 0 ? a->contiguity[d] : 1;
        int64_t da = a->contiguity[d] > 1 && k ? 1 : a->divisibility[d];
        if (op->opc == IR_OP_SHL)
            r->divisibility[d] = mul_div(da, (int64_t)1 << k);
        else
            r->divisibility[d] = max64(1, da >> k);
    }
}

/* The Triton rule for comparisons: `x < n` with x a contiguous run starting
 * at a multiple of D and n a multiple of D is constant on runs of D. */
static void visit_cmp(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    const IrType *t = op->results[0]->type;
    const char *pred = ir_op_get_word(op, "pred");
    bool gt_le = pred && (strcmp(pred, "gt") == 0 || strcmp(pred, "le") == 0);
    bool lt_ge = pred && (strcmp(pred, "lt") == 0 || strcmp(pred, "ge") == 0);
    for (int d = 0; d < ndims(r); d++) {
        int64_t k = gcd64(a->constancy[d], b->constancy[d]);
        if (gt_le && constant_dim(a, t, d))
            k = max64(k, gcd64(b->contiguity[d], gcd64(a->divisibility[d], b->divisibility[d])));
        else if (lt_ge && constant_dim(b, t, d))
            k = max64(k, gcd64(a->contiguity[d], gcd64(a->divisibility[d], b->divisibility[d])));
        r->constancy[d] = k;
    }
}

static void visit_select(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *c = get(an, op->operands[0]);
    const AxisInfo *a = get(an, op->operands[1]), *b = get(an, op->operands[2]);
    if (c->is_const) {
        *r = c->const_value ? *a : *b;
        return;
    }
    if (op->operands[0]->type->kind != IR_TILE) { /* one of the two, whole */
        *r = join(a, b);
        return;
    }
    for (int d = 0; d < ndims(r); d++) {
        int64_t g = gcd64(c->constancy[d], gcd64(a->contiguity[d], b->contiguity[d]));
        r->contiguity[d] = g;
        r->divisibility[d] = gcd64(div_at(a, d, g), div_at(b, d, g));
        r->constancy[d] = gcd64(c->constancy[d], gcd64(a->constancy[d], b->constancy[d]));
    }
    r->is_const = a->is_const && b->is_const && a->const_value == b->const_value;
    r->const_value = a->const_value;
}

/* min, max, neg, abs: values move between positions, so only per-element
 * facts survive. */
static void visit_per_element(Analysis *an, IrOp *op, AxisInfo *r) {
    for (int d = 0; d < ndims(r); d++) {
        int64_t div = 0, k = 0;
        for (int i = 0; i < op->num_operands; i++) {
            const AxisInfo *a = get(an, op->operands[i]);
            div = gcd64(div, div_at(a, d, 1));
            k = gcd64(k, a->constancy[d]);
        }
        r->divisibility[d] = div ? div : 1;
        r->constancy[d] = k ? k : 1;
    }
}

/* Any other elementwise op: equal inputs give equal outputs. */
static void visit_constancy_only(Analysis *an, IrOp *op, AxisInfo *r) {
    for (int d = 0; d < ndims(r); d++) {
        int64_t k = 0;
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i]->type->kind == IR_TILE || r->rank == 0)
                k = gcd64(k, get(an, op->operands[i])->constancy[d]);
        r->constancy[d] = k ? k : dim_size(op->results[0]->type, d);
    }
}

static void visit_cast(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]);
    const IrType *from = ir_type_elem(op->operands[0]->type), *to = ir_type_elem(op->results[0]->type);
    if (ir_type_is_int(from) && ir_type_is_int(to)) {
        *r = *a;
        if (r->is_const)
            r->const_value = ir_int_wrap(r->const_value, ir_type_bits(to));
        return;
    }
    for (int d = 0; d < ndims(r); d++)
        r->constancy[d] = a->constancy[d];
}

static void visit_broadcast(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]);
    const IrType *s = op->operands[0]->type, *t = op->results[0]->type;
    for (int d = 0; d < ndims(r); d++) {
        bool widened = s->shape[d] == 1 && t->shape[d] > 1;
        r->contiguity[d] = widened ? 1 : a->contiguity[d];
        r->divisibility[d] = a->divisibility[d];
        r->constancy[d] = widened ? t->shape[d] : a->constancy[d];
    }
    r->is_const = a->is_const;
    r->const_value = a->const_value;
}

static void visit_expand_dims(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]);
    int axis = (int)ir_op_get_int(op, "axis", 0);
    /* Along the new size-1 dimension every element starts a run. */
    int64_t div = 0;
    for (int d = 0; d < ndims(a); d++)
        div = gcd64(div, a->contiguity[d] > 1 ? 1 : a->divisibility[d]);
    if (a->is_const)
        div = pow2_divisor(a->const_value);
    for (int d = 0, s = 0; d < r->rank; d++) {
        if (d == axis) {
            r->contiguity[d] = r->constancy[d] = 1;
            r->divisibility[d] = div ? div : 1;
            continue;
        }
        r->contiguity[d] = a->contiguity[s];
        r->divisibility[d] = a->divisibility[s];
        r->constancy[d] = a->constancy[s];
        s++;
    }
    r->is_const = a->is_const;
    r->const_value = a->const_value;
}

static void visit_trans(Analysis *an, IrOp *op, AxisInfo *r) {
    const AxisInfo *a = get(an, op->operands[0]);
    const IrAttr *perm = ir_op_attr(op, "perm");
    if (!perm || perm->kind != IR_ATTR_INTS || perm->list.n != r->rank)
        return;
    for (int d = 0; d < r->rank; d++) {
        int64_t p = perm->list.v[d];
        r->contiguity[d] = a->contiguity[p];
        r->divisibility[d] = a->divisibility[p];
        r->constancy[d] = a->constancy[p];
    }
    r->is_const = a->is_const;
    r->const_value = a->const_value;
}

/* Constant folding of integer facts, so that `c * 4` with a known c keeps
 * its exact divisibility. */
static bool fold_const(Analysis *an, IrOp *op, AxisInfo *r) {
    const IrType *t = op->results[0]->type;
    const IrType *e = ir_type_elem(t);
    if (!ir_type_is_int(e) || op->num_operands != 2)
        return false;
    const AxisInfo *a = get(an, op->operands[0]), *b = get(an, op->operands[1]);
    if (!a->is_const || !b->is_const)
        return false;
    int64_t v;
    if (op->opc == IR_OP_CMP) {
        const char *pred = ir_op_get_word(op, "pred");
        if (!pred)
            return false;
        v = ir_fold_cmp(pred, 0, 0, true, a->const_value, b->const_value);
    } else if (!ir_fold_int_binary(op->opc, ir_type_bits(e), a->const_value, b->const_value, &v)) {
        return false;
    }
    set_const(r, t, v);
    return true;
}

static void visit_block(Analysis *an, IrBlock *b);

/* A for or a while: the carried values (a for's body arguments after the
 * induction variable; a while's arguments of both regions) start as their
 * inits and are joined with the yields until nothing changes. */
static void visit_loop(Analysis *an, IrOp *op) {
    bool is_for = op->opc == IR_OP_FOR;
    int first = is_for ? 3 : 0, arg0 = is_for ? 1 : 0;
    IrBlock *body = op->regions[op->num_regions - 1];
    if (is_for) {
        const AxisInfo *lb = get(an, op->operands[0]), *step = get(an, op->operands[2]);
        AxisInfo iv;
        set_unknown(&iv, body->args[0]->type);
        iv.divisibility[0] = gcd64(lb->divisibility[0], step->divisibility[0]);
        put(an, body->args[0], &iv);
    }
    int n = op->num_results;
    for (int r = 0; r < op->num_regions; r++)
        for (int i = 0; i < n; i++)
            put(an, op->regions[r]->args[arg0 + i], get(an, op->operands[first + i]));
    bool stable = false;
    for (int visit = 0; visit < MAX_LOOP_VISITS && !stable; visit++) {
        for (int r = 0; r < op->num_regions; r++)
            visit_block(an, op->regions[r]);
        stable = true;
        IrOp *yield = body->last;
        for (int i = 0; i < n; i++) {
            AxisInfo j = join(get(an, body->args[arg0 + i]), get(an, yield->operands[i]));
            if (!info_equal(&j, get(an, body->args[arg0 + i]))) {
                for (int r = 0; r < op->num_regions; r++)
                    put(an, op->regions[r]->args[arg0 + i], &j);
                stable = false;
            }
        }
    }
    if (!stable) { /* give up on the carried values: nothing known is sound */
        for (int r = 0; r < op->num_regions; r++)
            for (int i = 0; i < n; i++) {
                AxisInfo u;
                set_unknown(&u, op->regions[r]->args[arg0 + i]->type);
                put(an, op->regions[r]->args[arg0 + i], &u);
            }
        for (int r = 0; r < op->num_regions; r++)
            visit_block(an, op->regions[r]);
    }
    for (int i = 0; i < n; i++)
        put(an, op->results[i], get(an, body->args[arg0 + i]));
}

static void visit_if(Analysis *an, IrOp *op) {
    visit_block(an, op->regions[0]);
    visit_block(an, op->regions[1]);
    const AxisInfo *c = get(an, op->operands[0]);
    IrOp *then_y = op->regions[0]->last, *else_y = op->regions[1]->last;
    for (int i = 0; i < op->num_results; i++) {
        const AxisInfo *a = get(an, then_y->operands[i]), *b = get(an, else_y->operands[i]);
        AxisInfo j = c->is_const ? (c->const_value ? *a : *b) : join(a, b);
        put(an, op->results[i], &j);
    }
}

static void visit_op(Analysis *an, IrOp *op) {
    if (op->opc == IR_OP_FOR || op->opc == IR_OP_WHILE) {
        visit_loop(an, op);
        return;
    }
    if (op->opc == IR_OP_IF) {
        visit_if(an, op);
        return;
    }
    if (op->num_results != 1) {
        for (int i = 0; i < op->num_results; i++)
            slot(an, op->results[i]);
        return;
    }
    const IrType *t = op->results[0]->type;
    AxisInfo r;
    set_unknown(&r, t);
    unsigned flags = ir_op_info[op->opc].flags;
    if ((flags & OPF_ELEMENTWISE) && fold_const(an, op, &r)) {
        put(an, op->results[0], &r);
        return;
    }
    switch (op->opc) {
    case IR_OP_CONSTANT: {
        const IrAttr *v = ir_op_attr(op, "value");
        if (v && v->kind == IR_ATTR_INT && ir_type_is_int(ir_type_elem(t)))
            set_const(&r, t, v->i);
        else
            visit_constancy_only(an, op, &r);
        break;
    }
    case IR_OP_ARANGE: {
        int64_t start = ir_op_get_int(op, "start", 0);
        r.contiguity[0] = dim_size(t, 0);
        r.divisibility[0] = pow2_divisor(start);
        break;
    }
    case IR_OP_SPLAT: {
        const AxisInfo *s = get(an, op->operands[0]);
        for (int d = 0; d < ndims(&r); d++) {
            r.divisibility[d] = s->divisibility[0];
            r.constancy[d] = dim_size(t, d);
        }
        r.is_const = s->is_const;
        r.const_value = s->const_value;
        break;
    }
    case IR_OP_BROADCAST: visit_broadcast(an, op, &r); break;
    case IR_OP_EXPAND_DIMS: visit_expand_dims(an, op, &r); break;
    case IR_OP_TRANS: visit_trans(an, op, &r); break;
    case IR_OP_CONVERT_LAYOUT: r = *get(an, op->operands[0]); break;
    case IR_OP_RESHAPE:
        if (get(an, op->operands[0])->is_const)
            set_const(&r, t, get(an, op->operands[0])->const_value);
        break;
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_ADDPTR: visit_add(an, op, &r); break;
    case IR_OP_MUL: visit_mul(an, op, &r); break;
    case IR_OP_DIV: visit_div(an, op, &r); break;
    case IR_OP_REM: visit_rem(an, op, &r); break;
    case IR_OP_SHL:
    case IR_OP_SHR: visit_shift(an, op, &r); break;
    case IR_OP_CMP: visit_cmp(an, op, &r); break;
    case IR_OP_SELECT: visit_select(an, op, &r); break;
    case IR_OP_CAST: visit_cast(an, op, &r); break;
    case IR_OP_MIN:
    case IR_OP_MAX:
    case IR_OP_NEG:
    case IR_OP_ABS: visit_per_element(an, op, &r); break;
    case IR_OP_LOAD: /* equal addresses (and masks, and others) read equal values */
        if (r.rank)
            visit_constancy_only(an, op, &r);
        break;
    default:
        if (flags & OPF_ELEMENTWISE)
            visit_constancy_only(an, op, &r);
        break; /* reductions, dots, program ids...: nothing known */
    }
    /* Floats carry only constancy. */
    if (ir_type_is_float(ir_type_elem(t))) {
        for (int d = 0; d < ndims(&r); d++)
            r.contiguity[d] = r.divisibility[d] = 1;
        r.is_const = false;
    }
    put(an, op->results[0], &r);
}

static void visit_block(Analysis *an, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next)
        visit_op(an, op);
}

/* ---- API ---- */

AxisInfoMap *axis_info_run(IrFunc *f) {
    AxisInfoMap *map = calloc(1, sizeof *map);
    if (!map)
        tc_oom();
    arena_init(&map->arena);
    ir_map_init(&map->facts, &map->arena);
    Analysis an = {map};
    for (int i = 0; i < f->body->num_args; i++)
        param_facts(&an, f->body->args[i]);
    visit_block(&an, f->body);
    return map;
}

void axis_info_free(AxisInfoMap *map) {
    if (!map)
        return;
    arena_free(&map->arena);
    free(map);
}

const AxisInfo *axis_info_get(AxisInfoMap *map, const IrValue *v) {
    Analysis an = {map};
    return get(&an, v);
}

static void print_list(Buf *out, const int64_t *v, int n) {
    buf_puts(out, "[");
    for (int i = 0; i < n; i++)
        buf_printf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
    buf_puts(out, "]");
}

void axis_info_print(Buf *out, const AxisInfo *info) {
    int n = ndims(info);
    buf_puts(out, "{contiguity = ");
    print_list(out, info->contiguity, n);
    buf_puts(out, ", divisibility = ");
    print_list(out, info->divisibility, n);
    buf_puts(out, ", constancy = ");
    print_list(out, info->constancy, n);
    buf_puts(out, "}");
}

/* ---- axis-info-print ---- */

typedef struct Annotate {
    IrModule *m;
    AxisInfoMap *map;
} Annotate;

/* Ops whose first result is a tile, or an integer or pointer scalar. */
static void annotate_op(IrOp *op, void *ctx) {
    Annotate *an = ctx;
    if (op->num_results != 1 || op->num_regions)
        return;
    const IrType *t = op->results[0]->type;
    if (t->kind != IR_TILE && !ir_type_is_int(t) && t->kind != IR_PTR)
        return;
    const AxisInfo *a = axis_info_get(an->map, op->results[0]);
    int n = ndims(a);
    ir_op_set_ints(an->m, op, "contiguity", n, a->contiguity);
    ir_op_set_ints(an->m, op, "divisibility", n, a->divisibility);
    ir_op_set_ints(an->m, op, "constancy", n, a->constancy);
}

/* Precondition: a verified module. Writes the facts of every tile, integer
 * or pointer op result as attributes (debugging and lit tests only). */
bool pass_axis_info_print(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        Annotate an = {m, axis_info_run(f)};
        ir_walk_func(f, annotate_op, &an);
        axis_info_free(an.map);
    }
    return true;
}
