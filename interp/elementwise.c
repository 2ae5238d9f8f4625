/*
 * elementwise.c — constants and the elementwise ops: arithmetic, bitwise
 * ops, comparisons, select, casts, addptr and the math functions.
 *
 * The rules are codegen/lower_math.c's, element by element: integer ops
 * wrap at the width; x / 0 is x and x % 0 is 0, INT_MIN / -1 wraps; shl by
 * the width or more gives 0 and shr (arithmetic) saturates its amount at
 * width - 1, both reading the amount as unsigned; comparisons of i1 and
 * pointers are unsigned; min and max of floats return the other operand
 * of a NaN (minnum), of i1 are unsigned. Float ops compute in double and
 * round to their type once, which is the correctly rounded result the GPU
 * gives for f16, bf16 and f32 add, sub, mul, div, sqrt and fma. The math
 * functions use libm where the GPU uses approximations (a few ulp apart,
 * docs/interpreter.md); f64 math other than sqrt, rsqrt, floor, ceil, abs
 * and fma computes in f32, as on the GPU.
 */
#include "interp.h"

#include <math.h>
#include <string.h>

/* The result of op: a new value of its type's element count. */
static IVal *result_for(Run *r, const IrOp *op) {
    const IrType *t = op->results[0]->type;
    return ival_new(r, interp_kind_is_float(ir_type_elem(t)->kind), ir_type_numel(t));
}

bool interp_constant(Run *r, IrOp *op) {
    const IrType *t = op->results[0]->type;
    IrTypeKind k = ir_type_elem(t)->kind;
    const IrAttr *a = ir_op_attr(op, "value");
    if (!a || (a->kind != IR_ATTR_INT && a->kind != IR_ATTR_FLOAT))
        return interp_fail(r, RUN_ERROR, op, "constant without a numeric value");
    IVal *v = result_for(r, op);
    if (!v)
        return false;
    if (v->fl) {
        double f = interp_round(k, a->kind == IR_ATTR_FLOAT ? a->f : (double)a->i);
        for (int64_t i = 0; i < v->n; i++)
            v->f[i] = f;
    } else {
        int64_t x = a->kind == IR_ATTR_INT ? a->i : (int64_t)a->f;
        x = k == IR_I1 ? x != 0 : interp_wrap(k, x);
        for (int64_t i = 0; i < v->n; i++)
            v->i[i] = x;
    }
    interp_set(r, op->results[0], v);
    return true;
}

/* ---- integers ---- */

/* x as an unsigned number of `bits` bits. */
static uint64_t unsigned_of(int64_t x, int bits) {
    return bits == 64 ? (uint64_t)x : (uint64_t)x & (((uint64_t)1 << bits) - 1);
}

/* ir_fold_int_binary's arithmetic, and where it declines (division by
 * zero, shifts by the width or more) what the generated code gives. */
static int64_t int_binary(IrOpcode opc, IrTypeKind k, int64_t a, int64_t b) {
    int bits = interp_kind_bits(k);
    int64_t r;
    if (k != IR_I1 && ir_fold_int_binary(opc, bits, a, b, &r))
        return r;
    switch (opc) {
    case IR_OP_DIV: return b == 0 ? a : 0;
    case IR_OP_REM: return 0;
    case IR_OP_SHL: {
        uint64_t s = unsigned_of(b, bits);
        return s >= (uint64_t)bits ? 0 : interp_wrap(k, (int64_t)((uint64_t)a << s));
    }
    case IR_OP_SHR: {
        uint64_t s = unsigned_of(b, bits);
        return a >> (s > (uint64_t)bits - 1 ? (uint64_t)bits - 1 : s); /* a is sign-extended */
    }
    default: /* i1: 0 and 1, whose results wrap to the low bit; shr of one bit shifts by 0 */
        if (opc == IR_OP_SHR)
            return a;
        if (ir_fold_int_binary(opc, 64, a, b, &r))
            return r & 1;
        return opc == IR_OP_DIV ? a : 0;
    }
}

static bool compare_int(const char *p, int64_t a, int64_t b, bool is_unsigned) {
    if (is_unsigned) {
        uint64_t x = (uint64_t)a, y = (uint64_t)b;
        switch (p[0] == 'e' ? 0 : p[0] == 'n' ? 1 : p[0] == 'l' ? (p[1] == 't' ? 2 : 3) : (p[1] == 't' ? 4 : 5)) {
        case 0: return x == y;
        case 1: return x != y;
        case 2: return x < y;
        case 3: return x <= y;
        case 4: return x > y;
        default: return x >= y;
        }
    }
    switch (p[0] == 'e' ? 0 : p[0] == 'n' ? 1 : p[0] == 'l' ? (p[1] == 't' ? 2 : 3) : (p[1] == 't' ? 4 : 5)) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    default: return a >= b;
    }
}

/* Ordered comparisons, but `ne` (NaN != x is true). */
static bool compare_float(const char *p, double a, double b) {
    switch (p[0] == 'e' ? 0 : p[0] == 'n' ? 1 : p[0] == 'l' ? (p[1] == 't' ? 2 : 3) : (p[1] == 't' ? 4 : 5)) {
    case 0: return a == b;
    case 1: return !(a == b);
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    default: return a >= b;
    }
}

/* ---- floats ---- */

static double math_f(IrOpcode opc, double x) {
    double r = x;
    ir_fold_math(opc, x, &r);
    return r;
}

/* Math of kind k: f64 computes in f32 but for the exact ops. */
static double math_of(IrOpcode opc, IrTypeKind k, double x) {
    if (k == IR_F64) {
        switch (opc) {
        case IR_OP_SQRT:
        case IR_OP_RSQRT:
        case IR_OP_FLOOR:
        case IR_OP_CEIL:
        case IR_OP_ABS: return math_f(opc, x);
        default: return (double)(float)math_f(opc, (double)(float)x);
        }
    }
    return interp_round(k, math_f(opc, x));
}

static double float_binary(IrOpcode opc, IrTypeKind k, double a, double b) {
    switch (opc) {
    case IR_OP_ADD: return interp_round(k, a + b);
    case IR_OP_SUB: return interp_round(k, a - b);
    case IR_OP_MUL: return interp_round(k, a * b);
    case IR_OP_DIV: return interp_round(k, a / b);
    case IR_OP_REM: return interp_round(k, fmod(a, b));
    case IR_OP_MIN: return fmin(a, b);
    case IR_OP_MAX: return fmax(a, b);
    default: return 0;
    }
}

/* ---- the op ---- */

bool interp_elementwise(Run *r, IrOp *op) {
    int na = op->num_operands;
    IVal *x[3] = {0};
    for (int i = 0; i < na && i < 3; i++)
        x[i] = interp_get(r, op->operands[i]);
    IrTypeKind et = ir_type_elem(op->operands[op->opc == IR_OP_SELECT ? 1 : 0]->type)->kind;
    IrTypeKind rk = ir_type_elem(op->results[0]->type)->kind;
    IVal *v = result_for(r, op);
    if (!v)
        return false;
    int64_t n = v->n;
    IVal *a = x[0], *b = x[1], *c = x[2];
#define A(i) ival_at(a, i)
#define B(i) ival_at(b, i)
#define C(i) ival_at(c, i)
    switch (op->opc) {
    case IR_OP_ADD:
    case IR_OP_SUB:
    case IR_OP_MUL:
    case IR_OP_DIV:
    case IR_OP_REM:
    case IR_OP_MIN:
    case IR_OP_MAX:
        if (v->fl) {
            if (op->opc == IR_OP_ADD && rk == IR_F32)
                for (int64_t i = 0; i < n; i++)
                    v->f[i] = (double)(float)(a->f[A(i)] + b->f[B(i)]);
            else if (op->opc == IR_OP_MUL && rk == IR_F32)
                for (int64_t i = 0; i < n; i++)
                    v->f[i] = (double)(float)(a->f[A(i)] * b->f[B(i)]);
            else
                for (int64_t i = 0; i < n; i++)
                    v->f[i] = float_binary(op->opc, rk, a->f[A(i)], b->f[B(i)]);
        } else {
            for (int64_t i = 0; i < n; i++)
                v->i[i] = int_binary(op->opc, rk, a->i[A(i)], b->i[B(i)]);
        }
        break;
    case IR_OP_AND:
    case IR_OP_OR:
    case IR_OP_XOR:
    case IR_OP_SHL:
    case IR_OP_SHR:
    case IR_OP_UMULHI:
        for (int64_t i = 0; i < n; i++)
            v->i[i] = int_binary(op->opc, rk, a->i[A(i)], b->i[B(i)]);
        break;
    case IR_OP_NEG:
        if (v->fl)
            for (int64_t i = 0; i < n; i++)
                v->f[i] = -a->f[A(i)];
        else
            for (int64_t i = 0; i < n; i++)
                v->i[i] = interp_wrap(rk, (int64_t)(0 - (uint64_t)a->i[A(i)]));
        break;
    case IR_OP_NOT:
        for (int64_t i = 0; i < n; i++)
            v->i[i] = interp_wrap(rk, ~a->i[A(i)]);
        break;
    case IR_OP_ABS:
        if (v->fl)
            for (int64_t i = 0; i < n; i++)
                v->f[i] = fabs(a->f[A(i)]);
        else
            for (int64_t i = 0; i < n; i++)
                v->i[i] = interp_wrap(rk, a->i[A(i)] < 0 ? (int64_t)(0 - (uint64_t)a->i[A(i)]) : a->i[A(i)]);
        break;
    case IR_OP_CMP: {
        const char *p = ir_op_get_word(op, "pred");
        if (!p)
            p = "eq";
        if (a->fl)
            for (int64_t i = 0; i < n; i++)
                v->i[i] = compare_float(p, a->f[A(i)], b->f[B(i)]);
        else {
            bool u = et == IR_PTR || et == IR_I1;
            for (int64_t i = 0; i < n; i++)
                v->i[i] = compare_int(p, a->i[A(i)], b->i[B(i)], u);
        }
        break;
    }
    case IR_OP_SELECT:
        if (v->fl)
            for (int64_t i = 0; i < n; i++)
                v->f[i] = a->i[A(i)] ? b->f[B(i)] : c->f[C(i)];
        else
            for (int64_t i = 0; i < n; i++)
                v->i[i] = a->i[A(i)] ? b->i[B(i)] : c->i[C(i)];
        break;
    case IR_OP_CAST: interp_cast_all(et, a, rk, v); break;
    case IR_OP_FMA:
        if (rk == IR_F32)
            for (int64_t i = 0; i < n; i++)
                v->f[i] = fmaf((float)a->f[A(i)], (float)b->f[B(i)], (float)c->f[C(i)]);
        else if (rk == IR_F64)
            for (int64_t i = 0; i < n; i++)
                v->f[i] = fma(a->f[A(i)], b->f[B(i)], c->f[C(i)]);
        else
            for (int64_t i = 0; i < n; i++)
                v->f[i] = interp_round(rk, fma(a->f[A(i)], b->f[B(i)], c->f[C(i)]));
        break;
    case IR_OP_ADDPTR: {
        int64_t size = ir_type_bytes(ir_type_elem(op->operands[0]->type)->elem);
        for (int64_t i = 0; i < n; i++)
            v->i[i] = (int64_t)((uint64_t)a->i[A(i)] + (uint64_t)b->i[B(i)] * (uint64_t)size);
        break;
    }
    case IR_OP_EXP:
    case IR_OP_EXP2:
    case IR_OP_LOG:
    case IR_OP_LOG2:
    case IR_OP_SQRT:
    case IR_OP_RSQRT:
    case IR_OP_ERF:
    case IR_OP_TANH:
    case IR_OP_SIGMOID:
    case IR_OP_FLOOR:
    case IR_OP_CEIL:
    case IR_OP_SIN:
    case IR_OP_COS:
        for (int64_t i = 0; i < n; i++)
            v->f[i] = math_of(op->opc, rk, a->f[A(i)]);
        break;
    default:
        ival_release(r, v);
        return interp_fail(r, RUN_ERROR, op, "'%s' is not an elementwise op", ir_op_info[op->opc].name);
    }
#undef A
#undef B
#undef C
    interp_set(r, op->results[0], v);
    return true;
}
