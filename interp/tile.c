/*
 * tile.c — the ops that move elements between positions: arange, splat,
 * broadcast, expand_dims, reshape and trans; the reductions and scans
 * along an axis; and dot.
 *
 * Tiles are row-major. A reduction combines the elements of each line
 * along its axis as a tree (pairs of neighbours, then pairs of pairs),
 * rounding to the element type at each step as the GPU's register and
 * shuffle steps do; argmax and argmin keep the first extreme element, a
 * NaN beating every number (codegen/lower_reduce.c). A scan runs its
 * combine region along the axis in order. A dot multiplies its operands
 * exactly and accumulates in double, rounding the sum to f32 once per
 * element: the tensor cores' order of additions is not specified, and this
 * is at least as accurate as any of them.
 */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static IVal *result_for(Run *r, const IrOp *op) {
    const IrType *t = op->results[0]->type;
    return ival_new(r, interp_kind_is_float(ir_type_elem(t)->kind), ir_type_numel(t));
}

/* Row-major strides of a tile type (a scalar: rank 0). */
static int rank_strides(const IrType *t, int64_t *strides) {
    if (t->kind != IR_TILE)
        return 0;
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= t->shape[d];
    }
    return t->rank;
}

/* ---- shapes ---- */

bool interp_shape_op(Run *r, IrOp *op) {
    const IrType *rt = op->results[0]->type;
    if (op->opc == IR_OP_EXPAND_DIMS || op->opc == IR_OP_RESHAPE || op->opc == IR_OP_CONVERT_LAYOUT) {
        /* the same elements in the same row-major order */
        interp_set(r, op->results[0], ival_retain(interp_get(r, op->operands[0])));
        return true;
    }
    IVal *v = result_for(r, op);
    if (!v)
        return false;
    int64_t n = v->n;
    switch (op->opc) {
    case IR_OP_ARANGE: {
        int64_t start = ir_op_get_int(op, "start", 0);
        for (int64_t i = 0; i < n; i++)
            v->i[i] = interp_wrap(ir_type_elem(rt)->kind, start + i);
        break;
    }
    case IR_OP_SPLAT: {
        IVal *x = interp_get(r, op->operands[0]);
        for (int64_t i = 0; i < n; i++)
            v->i[i] = x->i[0];
        break;
    }
    case IR_OP_BROADCAST:
    case IR_OP_TRANS: {
        IVal *x = interp_get(r, op->operands[0]);
        const IrType *xt = op->operands[0]->type;
        int64_t xs[IR_MAX_RANK] = {0}, src[IR_MAX_RANK] = {0};
        int rank = rt->rank;
        rank_strides(xt, xs);
        if (op->opc == IR_OP_BROADCAST) {
            for (int d = 0; d < rank; d++)
                src[d] = xt->kind == IR_TILE && xt->shape[d] != 1 ? xs[d] : 0;
        } else {
            const IrAttr *perm = ir_op_attr(op, "perm");
            for (int d = 0; d < rank; d++)
                src[d] = xs[perm->list.v[d]];
        }
        int64_t c[IR_MAX_RANK] = {0}, off = 0;
        for (int64_t i = 0; i < n; i++) {
            v->i[i] = x->i[x->n == 1 ? 0 : off];
            for (int d = rank - 1; d >= 0; d--) { /* the next coordinate, last dimension fastest */
                off += src[d];
                if (++c[d] < rt->shape[d])
                    break;
                off -= src[d] * c[d];
                c[d] = 0;
            }
        }
        break;
    }
    default:
        ival_release(r, v);
        return interp_fail(r, RUN_ERROR, op, "'%s' is not a shape op", ir_op_info[op->opc].name);
    }
    interp_set(r, op->results[0], v);
    return true;
}

/* The lines along `axis` of a tile: `outer` x `inner` of them, each of
 * `len` elements `inner` apart. */
typedef struct Lines {
    int64_t outer, len, inner;
} Lines;

static Lines lines_of(const IrType *t, int axis) {
    Lines l = {1, t->shape[axis], 1};
    for (int d = 0; d < axis; d++)
        l.outer *= t->shape[d];
    for (int d = axis + 1; d < t->rank; d++)
        l.inner *= t->shape[d];
    return l;
}

/* ---- reductions ---- */

typedef enum { R_SUM, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN } RKind;

/* Whether (a, ia) wins over (b, ib) for argmax (max) or argmin. */
static bool arg_wins(bool max, double a, int64_t ia, double b, int64_t ib) {
    bool an = isnan(a), bn = isnan(b);
    if (an || bn)
        return an && (!bn || ia < ib);
    if (a != b)
        return max ? a > b : a < b;
    return ia < ib;
}

static bool arg_wins_int(bool max, int64_t a, int64_t ia, int64_t b, int64_t ib) {
    if (a != b)
        return max ? a > b : a < b;
    return ia < ib;
}

bool interp_reduce(Run *r, IrOp *op) {
    const IrType *t = op->operands[0]->type;
    const char *kw = ir_op_get_word(op, "kind");
    int axis = (int)ir_op_get_int(op, "axis", 0);
    if (!kw || t->kind != IR_TILE || axis < 0 || axis >= t->rank)
        return interp_fail(r, RUN_ERROR, op, "a malformed reduce");
    RKind kind = !strcmp(kw, "sum")      ? R_SUM
                 : !strcmp(kw, "max")    ? R_MAX
                 : !strcmp(kw, "min")    ? R_MIN
                 : !strcmp(kw, "argmax") ? R_ARGMAX
                                         : R_ARGMIN;
    IrTypeKind k = t->elem->kind;
    IVal *x = interp_get(r, op->operands[0]);
    IVal *v = result_for(r, op);
    if (!v)
        return false;
    Lines l = lines_of(t, axis);
    double *fv = malloc((size_t)l.len * sizeof(double));
    int64_t *iv = malloc((size_t)l.len * sizeof(int64_t));
    int64_t *idx = malloc((size_t)l.len * sizeof(int64_t));
    if (!fv || !iv || !idx) {
        free(fv), free(iv), free(idx);
        ival_release(r, v);
        return interp_fail(r, RUN_ERROR, op, "out of memory");
    }
    bool fl = x->fl, arg = kind == R_ARGMAX || kind == R_ARGMIN, max = kind == R_MAX || kind == R_ARGMAX;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t in = 0; in < l.inner; in++) {
            int64_t base = o * l.len * l.inner + in;
            for (int64_t j = 0; j < l.len; j++) {
                if (fl)
                    fv[j] = x->f[base + j * l.inner];
                else
                    iv[j] = x->i[base + j * l.inner];
                idx[j] = j;
            }
            for (int64_t step = 1; step < l.len; step *= 2)
                for (int64_t j = 0; j + step < l.len; j += 2 * step) {
                    int64_t m = j + step;
                    if (arg) {
                        bool second = fl ? arg_wins(max, fv[m], idx[m], fv[j], idx[j])
                                         : arg_wins_int(max, iv[m], idx[m], iv[j], idx[j]);
                        if (second) {
                            fv[j] = fv[m], iv[j] = iv[m];
                            idx[j] = idx[m];
                        }
                    } else if (fl) {
                        fv[j] = kind == R_SUM ? interp_round(k, fv[j] + fv[m]) : max ? fmax(fv[j], fv[m])
                                                                                     : fmin(fv[j], fv[m]);
                    } else {
                        iv[j] = kind == R_SUM ? interp_wrap(k, (int64_t)((uint64_t)iv[j] + (uint64_t)iv[m]))
                                : max         ? (iv[j] > iv[m] ? iv[j] : iv[m])
                                              : (iv[j] < iv[m] ? iv[j] : iv[m]);
                    }
                }
            int64_t out = o * l.inner + in;
            if (arg)
                v->i[out] = idx[0];
            else if (fl)
                v->f[out] = fv[0];
            else
                v->i[out] = iv[0];
        }
    free(fv), free(iv), free(idx);
    interp_set(r, op->results[0], v);
    return true;
}

/* ---- scans ---- */

/* The combine region's single op, when it is one elementwise op of the two
 * arguments in order whose result is yielded: then the scan needs no
 * region runs. */
static IrOpcode simple_combine(const IrBlock *b) {
    const IrOp *f = b->first;
    if (!f || !f->next || f->next->next || f->next->opc != IR_OP_YIELD || f->next->num_operands != 1 ||
        f->next->operands[0] != f->results[0] || f->num_operands != 2 || b->num_args != 2 ||
        f->operands[0] != b->args[0] || f->operands[1] != b->args[1])
        return IR_NUM_OPS;
    switch (f->opc) {
    case IR_OP_ADD:
    case IR_OP_MUL:
    case IR_OP_MAX:
    case IR_OP_MIN: return f->opc;
    default: return IR_NUM_OPS;
    }
}

bool interp_scan(Run *r, IrOp *op) {
    const IrType *t = op->operands[0]->type;
    int axis = (int)ir_op_get_int(op, "axis", 0);
    bool reverse = ir_op_get_int(op, "reverse", 0) != 0;
    if (t->kind != IR_TILE || axis < 0 || axis >= t->rank)
        return interp_fail(r, RUN_ERROR, op, "a malformed scan");
    IrTypeKind k = t->elem->kind;
    IVal *x = interp_get(r, op->operands[0]);
    IVal *v = result_for(r, op);
    if (!v)
        return false;
    Lines l = lines_of(t, axis);
    IrBlock *f = op->regions[0];
    IrOpcode simple = simple_combine(f);
    bool fl = x->fl;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t in = 0; in < l.inner; in++) {
            int64_t base = o * l.len * l.inner + in;
            int64_t prev = -1;
            for (int64_t s = 0; s < l.len; s++) {
                int64_t j = base + (reverse ? l.len - 1 - s : s) * l.inner;
                if (prev < 0) {
                    v->i[j] = x->i[j];
                } else if (simple != IR_NUM_OPS && fl) {
                    double a = v->f[prev], b = x->f[j];
                    v->f[j] = simple == IR_OP_ADD   ? interp_round(k, a + b)
                              : simple == IR_OP_MUL ? interp_round(k, a * b)
                              : simple == IR_OP_MAX ? fmax(a, b)
                                                    : fmin(a, b);
                } else if (simple != IR_NUM_OPS) {
                    int64_t a = v->i[prev], b = x->i[j];
                    v->i[j] = simple == IR_OP_ADD   ? interp_wrap(k, (int64_t)((uint64_t)a + (uint64_t)b))
                              : simple == IR_OP_MUL ? interp_wrap(k, (int64_t)((uint64_t)a * (uint64_t)b))
                              : simple == IR_OP_MAX ? (a > b ? a : b)
                                                    : (a < b ? a : b);
                } else {
                    IVal *args[2] = {ival_new(r, fl, 1), ival_new(r, fl, 1)}, *res = NULL;
                    if (!args[0] || !args[1]) {
                        ival_release(r, args[0]);
                        ival_release(r, args[1]);
                        ival_release(r, v);
                        return false;
                    }
                    args[0]->i[0] = v->i[prev];
                    args[1]->i[0] = x->i[j];
                    bool returned = false;
                    bool ok = interp_block(r, f, args, &res, 1, &returned);
                    ival_release(r, args[0]);
                    ival_release(r, args[1]);
                    if (!ok) {
                        ival_release(r, v);
                        return false;
                    }
                    v->i[j] = res->i[0];
                    ival_release(r, res);
                }
                prev = j;
            }
        }
    interp_set(r, op->results[0], v);
    return true;
}

/* ---- dot ---- */

bool interp_dot(Run *r, IrOp *op) {
    const IrType *at = op->operands[0]->type, *bt = op->operands[1]->type;
    IVal *a = interp_get(r, op->operands[0]), *b = interp_get(r, op->operands[1]),
         *c = interp_get(r, op->operands[2]);
    int k0 = at->rank - 2;
    int64_t batch = k0 ? at->shape[0] : 1, M = at->shape[k0], K = at->shape[k0 + 1], N = bt->shape[k0 + 1];
    IVal *v = result_for(r, op);
    double *acc = malloc((size_t)N * sizeof(double));
    if (!v || !acc) {
        free(acc);
        ival_release(r, v);
        return v ? interp_fail(r, RUN_ERROR, op, "out of memory") : false;
    }
    for (int64_t z = 0; z < batch; z++) {
        const double *A = a->f + z * M * K, *B = b->f + z * K * N;
        const double *Cin = c->f + (c->n == 1 ? 0 : z * M * N);
        double *out = v->f + z * M * N;
        for (int64_t m = 0; m < M; m++) {
            for (int64_t n = 0; n < N; n++)
                acc[n] = Cin[c->n == 1 ? 0 : m * N + n];
            for (int64_t k = 0; k < K; k++) {
                double x = A[m * K + k];
                const double *row = B + k * N;
                for (int64_t n = 0; n < N; n++)
                    acc[n] += x * row[n];
            }
            for (int64_t n = 0; n < N; n++)
                out[m * N + n] = (double)(float)acc[n];
        }
    }
    free(acc);
    interp_set(r, op->results[0], v);
    return true;
}
