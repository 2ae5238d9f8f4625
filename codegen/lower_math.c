/*
 * lower_math.c — constants, elementwise arithmetic, casts and math functions.
 *
 * Elementwise ops are lowered register by register: register r of the result
 * combines register r of every tile operand (the verifier guarantees one
 * layout for all of them) with the scalar operands, which are the same in
 * every register. Integer semantics follow docs/language.md and never reach
 * LLVM's undefined behaviour: division by zero and INT_MIN / -1 give a value
 * (not poison), shifts by the width or more saturate as PTX's do, float to int
 * conversion saturates (NaN gives 0).
 *
 * Math functions use the GPU's fast approximations where they are accurate
 * enough, and short polynomials elsewhere; docs/codegen.md lists every choice
 * with its error bound:
 *
 *   exp(x)   ex2.approx.f32(x * log2(e))        ~2 ulp + the rounding of x*log2(e)
 *   exp2(x)  ex2.approx.ftz.f32(x)              ~2 ulp, subnormal results flushed
 *   log(x)   lg2.approx.f32(x) * ln(2)          ~2^-22 absolute
 *   log2(x)  lg2.approx.f32(x)
 *   sqrt     sqrt.rn (correctly rounded); rsqrt: rsqrt.approx.f32 (~2^-22.9 rel)
 *   sin/cos  sin.approx / cos.approx (~2^-20.9 absolute on [-pi, pi])
 *   tanh     f32: x*P(x^2) below 0.5625, else 1 - 2/(2^(2|x|log2 e) + 1)
 *            (<= 2e-7 relative, measured); f16/bf16: tanh.approx.f32
 *   sigmoid  1 / (1 + ex2.approx(-x * log2(e)))
 *   erf      x*P(x^2) below 1, else 1 - exp(Q(|x|)) with Q fitted to
 *            log(erfc) on [1, 4] (<= 1.8e-7 relative, measured)
 *   floor, ceil, abs, fma, min, max (minnum/maxnum: a NaN operand loses)
 *
 * f16 and bf16 math functions compute in f32 and round once; f64 math other
 * than sqrt, rsqrt, floor, ceil, abs and fma also computes in f32 (the GPU
 * has no fast f64 transcendentals; documented as such).
 */
#include "lower.h"

#include <float.h>
#include <string.h>

static bool is_float_type(const IrType *t) {
    return ir_type_is_float(t);
}

static LLVMValueRef fconst(Cg *cg, LLVMTypeRef t, double v) {
    return LLVMConstReal(t, v);
}

/* ---- constants ---- */

static LLVMValueRef scalar_const(Cg *cg, const IrType *t, const IrAttr *a) {
    LLVMTypeRef lt = cg_type(cg, t);
    double f = a->kind == IR_ATTR_FLOAT ? a->f : (double)a->i;
    if (ir_type_is_fp8(t))
        return LLVMConstInt(lt, ir_f8_bits(t->kind, f), 0);
    if (is_float_type(t))
        return fconst(cg, lt, f);
    int64_t i = a->kind == IR_ATTR_INT ? a->i : (int64_t)f;
    if (t->kind == IR_I1)
        i = i != 0;
    return LLVMConstInt(lt, (unsigned long long)i, 1);
}

bool cg_lower_constant(Cg *cg, IrOp *op) {
    const IrType *t = op->results[0]->type;
    const IrAttr *a = ir_op_attr(op, "value");
    if (!a || (a->kind != IR_ATTR_INT && a->kind != IR_ATTR_FLOAT))
        return cg_error(cg, op, "internal error: constant without a numeric value");
    const LinearLayout *ll = NULL;
    int n = 1;
    if (t->kind == IR_TILE) {
        if (!(ll = cg_ll(cg, t, op)))
            return false;
        n = ll_num_regs(ll);
    }
    CgVal *v = cg_new_val(cg, n, ll);
    LLVMValueRef c = scalar_const(cg, ir_type_elem(t), a);
    for (int r = 0; r < n; r++)
        v->v[r] = c;
    cg_set(cg, op->results[0], v);
    return true;
}

/* ---- casts ---- */

static LLVMValueRef via_f32(Cg *cg, LLVMValueRef v, LLVMTypeRef to) {
    v = LLVMBuildFPExt(cg->b, v, cg->t_f32, "");
    return LLVMBuildFPTrunc(cg->b, v, to, "");
}

LLVMValueRef cg_cast(Cg *cg, LLVMValueRef v, const IrType *from, const IrType *to) {
    if (from == to)
        return v;
    if (ir_type_is_fp8(from) || ir_type_is_fp8(to)) {
        LLVMValueRef r;
        cg_fp8_cast(cg, &v, &r, 1, from, to);
        return r;
    }
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef lt = cg_type(cg, to);
    bool ff = is_float_type(from), tf = is_float_type(to);
    if (to->kind == IR_I1) {
        if (ff)
            return LLVMBuildFCmp(b, LLVMRealUNE, v, fconst(cg, LLVMTypeOf(v), 0.0), "");
        return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
    }
    if (!ff && !tf) {
        int fb = ir_type_bits(from), tb = ir_type_bits(to);
        if (from->kind == IR_I1)
            return LLVMBuildZExt(b, v, lt, "");
        if (tb > fb)
            return LLVMBuildSExt(b, v, lt, "");
        return LLVMBuildTrunc(b, v, lt, "");
    }
    if (!ff && tf) {
        /* bf16 and f16 through f32: NVPTX converts integers to f32 natively. */
        LLVMTypeRef mid = to->kind == IR_F64 ? lt : cg->t_f32;
        LLVMValueRef f = from->kind == IR_I1 ? LLVMBuildUIToFP(b, v, mid, "") : LLVMBuildSIToFP(b, v, mid, "");
        return mid == lt ? f : LLVMBuildFPTrunc(b, f, lt, "");
    }
    if (ff && !tf) {
        if (from->kind == IR_F16 || from->kind == IR_BF16)
            v = LLVMBuildFPExt(b, v, cg->t_f32, "");
        LLVMTypeRef over[2] = {lt, LLVMTypeOf(v)};
        LLVMValueRef args[1] = {v};
        return cg_intrinsic(cg, "llvm.fptosi.sat", over, 2, args, 1);
    }
    /* float -> float */
    if ((from->kind == IR_F16 && to->kind == IR_BF16) || (from->kind == IR_BF16 && to->kind == IR_F16))
        return via_f32(cg, v, lt);
    if (ir_type_bits(to) > ir_type_bits(from))
        return LLVMBuildFPExt(b, v, lt, "");
    return LLVMBuildFPTrunc(b, v, lt, "");
}

/* ---- integer helpers ---- */

static bool const_int(LLVMValueRef v, int64_t *out) {
    if (!LLVMIsAConstantInt(v))
        return false;
    *out = LLVMConstIntGetSExtValue(v);
    return true;
}

/* x / d and x % d without LLVM's undefined cases (d == 0, INT_MIN / -1). */
static LLVMValueRef int_divrem(Cg *cg, bool rem, LLVMValueRef x, LLVMValueRef d) {
    LLVMBuilderRef b = cg->b;
    int64_t c;
    if (const_int(d, &c) && c != 0 && c != -1)
        return rem ? LLVMBuildSRem(b, x, d, "") : LLVMBuildSDiv(b, x, d, "");
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0), m1 = LLVMConstAllOnes(t);
    LLVMValueRef bad =
        LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntEQ, d, zero, ""), LLVMBuildICmp(b, LLVMIntEQ, d, m1, ""), "");
    LLVMValueRef safe = LLVMBuildSelect(b, bad, one, d, "");
    if (rem)
        return LLVMBuildSRem(b, x, safe, ""); /* x % 1 == 0 == x % -1 */
    LLVMValueRef q = LLVMBuildSDiv(b, x, safe, "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, d, m1, ""), LLVMBuildNeg(b, x, ""), q, "");
}

/* Shifts by the width or more give what PTX's shl and shr.s give: 0, or the
 * sign in every bit. */
static LLVMValueRef int_shift(Cg *cg, bool left, LLVMValueRef x, LLVMValueRef s) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    unsigned bits = LLVMGetIntTypeWidth(t);
    int64_t c;
    if (const_int(s, &c) && c >= 0 && c < bits)
        return left ? LLVMBuildShl(b, x, s, "") : LLVMBuildAShr(b, x, s, "");
    LLVMValueRef w = LLVMConstInt(t, bits, 0);
    if (left) {
        LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, s, w, "");
        LLVMValueRef safe = LLVMBuildSelect(b, big, LLVMConstInt(t, 0, 0), s, "");
        return LLVMBuildSelect(b, big, LLVMConstInt(t, 0, 0), LLVMBuildShl(b, x, safe, ""), "");
    }
    LLVMValueRef args[2] = {s, LLVMConstInt(t, bits - 1, 0)};
    LLVMTypeRef over[1] = {t};
    return LLVMBuildAShr(b, x, cg_intrinsic(cg, "llvm.umin", over, 1, args, 2), "");
}

/* The high half of the unsigned double-width product, computed in twice the
 * width (at least 32 bits): NVPTX selects mul.hi.u32 / mul.hi.u64. */
static LLVMValueRef int_umulhi(Cg *cg, LLVMValueRef x, LLVMValueRef y) {
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    unsigned bits = LLVMGetIntTypeWidth(t);
    LLVMTypeRef wide = LLVMIntTypeInContext(cg->ctx, bits < 16 ? 32 : 2 * bits);
    LLVMValueRef p = LLVMBuildMul(b, LLVMBuildZExt(b, x, wide, ""), LLVMBuildZExt(b, y, wide, ""), "");
    return LLVMBuildTrunc(b, LLVMBuildLShr(b, p, LLVMConstInt(wide, bits, 0), ""), t, "");
}

static LLVMValueRef call1(Cg *cg, const char *name, LLVMValueRef x, bool overloaded) {
    LLVMTypeRef over[1] = {LLVMTypeOf(x)};
    return cg_intrinsic(cg, name, over, overloaded ? 1 : 0, &x, 1);
}

static LLVMValueRef call2(Cg *cg, const char *name, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef over[1] = {LLVMTypeOf(x)};
    LLVMValueRef args[2] = {x, y};
    return cg_intrinsic(cg, name, over, 1, args, 2);
}

/* max and min of integers: signed, except i1, whose true (1) is the larger
 * (as a signed 1-bit value it would read as -1). */
static LLVMValueRef int_minmax(Cg *cg, bool max, const IrType *elem, LLVMValueRef a, LLVMValueRef b) {
    bool u = elem->kind == IR_I1;
    return call2(cg, max ? (u ? "llvm.umax" : "llvm.smax") : (u ? "llvm.umin" : "llvm.smin"), a, b);
}

static LLVMValueRef logaddexp(Cg *cg, LLVMValueRef a, LLVMValueRef b);

LLVMValueRef cg_combine(Cg *cg, const char *kind, const IrType *elem, LLVMValueRef a, LLVMValueRef b) {
    bool f = is_float_type(elem);
    if (strcmp(kind, "logsumexp") == 0)
        return logaddexp(cg, a, b);
    if (strcmp(kind, "sum") == 0)
        return f ? LLVMBuildFAdd(cg->b, a, b, "") : LLVMBuildAdd(cg->b, a, b, "");
    bool max = strcmp(kind, "max") == 0;
    if (f)
        return call2(cg, max ? "llvm.maxnum" : "llvm.minnum", a, b);
    return int_minmax(cg, max, elem, a, b);
}

/* ---- f32 math ---- */

#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453

static LLVMValueRef fmul(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    return cg_contract(LLVMBuildFMul(cg->b, a, b, ""));
}
static LLVMValueRef fadd(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    return cg_contract(LLVMBuildFAdd(cg->b, a, b, ""));
}

static LLVMValueRef fma3(Cg *cg, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMTypeRef over[1] = {LLVMTypeOf(a)};
    LLVMValueRef args[3] = {a, b, c};
    return cg_intrinsic(cg, "llvm.fma", over, 1, args, 3);
}

static LLVMValueRef horner(Cg *cg, const double *c, int n, LLVMValueRef x) {
    LLVMValueRef r = fconst(cg, cg->t_f32, c[0]);
    for (int i = 1; i < n; i++)
        r = fma3(cg, r, x, fconst(cg, cg->t_f32, c[i]));
    return r;
}

static LLVMValueRef ex2(Cg *cg, LLVMValueRef x, bool ftz) {
    return call1(cg, ftz ? "llvm.nvvm.ex2.approx.ftz.f" : "llvm.nvvm.ex2.approx.f", x, false);
}

static LLVMValueRef copy_sign(Cg *cg, LLVMValueRef mag, LLVMValueRef sign) {
    return call2(cg, "llvm.copysign", mag, sign);
}

/*
 * Coefficients fitted with mpmath.chebyfit (near-minimax) and checked in f32
 * with fma against libm's double erf/tanh over [1e-6, 12] (see
 * docs/codegen.md): highest degree first, for Horner's rule.
 */
static const double ERF_SMALL[] = {/* erf(x)/x as a polynomial in x^2, |x| < 1 */
                                   7.8758750626854883e-5, -0.00080168642871658695, 0.005189087423433974,
                                   -0.026854212010626412, 0.11283594715160218,     -0.37612626666720331,
                                   1.1283791658483509};
static const double ERF_LOG_ERFC[] = {/* log(erfc(x)) as a polynomial in x, 1 <= x <= 4 */
                                      -7.582681969725274e-8,  3.3216845907317219e-6,  -6.2298353251614507e-5,
                                      0.00068583668301150381, -0.0050649469202164848, 0.027099523293990374,
                                      -0.11105501737188004,   -0.63095302981657221,   -1.1306751441818166,
                                      0.0004163292177097496};
static const double TANH_SMALL[] = {/* tanh(x)/x as a polynomial in x^2, |x| < 0.5625 */
                                    -0.006137957362108889, 0.020971384663992898, -0.053826166351217571,
                                    0.13332299457026782,   -0.33333305550040044, 0.99999999878122518};

static LLVMValueRef erf_f32(Cg *cg, LLVMValueRef x) {
    LLVMTypeRef f = cg->t_f32;
    LLVMValueRef ax = call1(cg, "llvm.fabs", x, true);
    LLVMValueRef small = fmul(cg, x, horner(cg, ERF_SMALL, 7, fmul(cg, x, x)));
    LLVMValueRef cx = call2(cg, "llvm.minnum", ax, fconst(cg, f, 4.0));
    LLVMValueRef q = horner(cg, ERF_LOG_ERFC, 10, cx);
    LLVMValueRef e = ex2(cg, fmul(cg, q, fconst(cg, f, LOG2E)), false);
    LLVMValueRef large = copy_sign(cg, LLVMBuildFSub(cg->b, fconst(cg, f, 1.0), e, ""), x);
    LLVMValueRef is_small = LLVMBuildFCmp(cg->b, LLVMRealOLT, ax, fconst(cg, f, 1.0), "");
    return LLVMBuildSelect(cg->b, is_small, small, large, "");
}

static LLVMValueRef tanh_f32(Cg *cg, LLVMValueRef x) {
    LLVMTypeRef f = cg->t_f32;
    LLVMValueRef ax = call1(cg, "llvm.fabs", x, true);
    LLVMValueRef small = fmul(cg, x, horner(cg, TANH_SMALL, 6, fmul(cg, x, x)));
    LLVMValueRef e = ex2(cg, fmul(cg, ax, fconst(cg, f, 2 * LOG2E)), false);
    LLVMValueRef y = LLVMBuildFDiv(cg->b, fconst(cg, f, 2.0), fadd(cg, e, fconst(cg, f, 1.0)), "");
    LLVMValueRef large = copy_sign(cg, LLVMBuildFSub(cg->b, fconst(cg, f, 1.0), y, ""), x);
    LLVMValueRef is_small = LLVMBuildFCmp(cg->b, LLVMRealOLT, ax, fconst(cg, f, 0.5625), "");
    return LLVMBuildSelect(cg->b, is_small, small, large, "");
}

/* log(exp(a) + exp(b)) of f32 values, as m + log(1 + exp(-|a - b|)) with m
 * the larger (ex2 and lg2, approximate to a few ulp): an infinite m is the
 * result as it is (both -inf, or one +inf), and a NaN operand gives NaN. */
static LLVMValueRef logaddexp(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef f = cg->t_f32;
    LLVMValueRef m = call2(cg, "llvm.maxnum", a, b);
    LLVMValueRef d = call1(cg, "llvm.fabs", LLVMBuildFSub(cg->b, a, b, ""), true);
    LLVMValueRef e = ex2(cg, fmul(cg, d, fconst(cg, f, -LOG2E)), false);
    LLVMValueRef l = call1(cg, "llvm.nvvm.lg2.approx.f", fadd(cg, e, fconst(cg, f, 1.0)), false);
    LLVMValueRef r = fadd(cg, m, fmul(cg, l, fconst(cg, f, LN2)));
    LLVMValueRef inf = LLVMBuildFCmp(cg->b, LLVMRealOGT, call1(cg, "llvm.fabs", m, true), fconst(cg, f, FLT_MAX), "");
    r = LLVMBuildSelect(cg->b, inf, m, r, "");
    LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, a, b, "");
    return LLVMBuildSelect(cg->b, nan, LLVMBuildFAdd(cg->b, a, b, ""), r, "");
}

/* A math function of an f32 value; `narrow` when the result will be rounded
 * to f16/bf16 (where tanh.approx is accurate enough). */
static LLVMValueRef math_f32(Cg *cg, IrOpcode opc, LLVMValueRef x, bool narrow) {
    LLVMTypeRef f = cg->t_f32;
    switch (opc) {
    case IR_OP_EXP: return ex2(cg, fmul(cg, x, fconst(cg, f, LOG2E)), false);
    case IR_OP_EXP2: return ex2(cg, x, true);
    case IR_OP_LOG: return fmul(cg, call1(cg, "llvm.nvvm.lg2.approx.f", x, false), fconst(cg, f, LN2));
    case IR_OP_LOG2: return call1(cg, "llvm.nvvm.lg2.approx.f", x, false);
    case IR_OP_SQRT: return call1(cg, "llvm.sqrt", x, true);
    case IR_OP_RSQRT: return call1(cg, "llvm.nvvm.rsqrt.approx.f", x, false);
    case IR_OP_SIN: return call1(cg, "llvm.nvvm.sin.approx.f", x, false);
    case IR_OP_COS: return call1(cg, "llvm.nvvm.cos.approx.f", x, false);
    case IR_OP_FLOOR: return call1(cg, "llvm.floor", x, true);
    case IR_OP_CEIL: return call1(cg, "llvm.ceil", x, true);
    case IR_OP_ERF: return erf_f32(cg, x);
    case IR_OP_TANH:
        if (narrow)
            return cg_asm(cg, f, "tanh.approx.f32 $0, $1;", "=f,f", &x, 1, false);
        return tanh_f32(cg, x);
    case IR_OP_SIGMOID: {
        LLVMValueRef e = ex2(cg, fmul(cg, x, fconst(cg, f, -LOG2E)), false);
        return LLVMBuildFDiv(cg->b, fconst(cg, f, 1.0), fadd(cg, e, fconst(cg, f, 1.0)), "");
    }
    default: tc_unreachable("not a math op");
    }
}

static LLVMValueRef math(Cg *cg, IrOpcode opc, LLVMValueRef x, const IrType *t) {
    if (t->kind == IR_F32)
        return math_f32(cg, opc, x, false);
    if (t->kind == IR_F64) {
        switch (opc) {
        case IR_OP_SQRT: return call1(cg, "llvm.sqrt", x, true);
        case IR_OP_RSQRT: return call1(cg, "llvm.nvvm.rsqrt.approx.d", x, false);
        case IR_OP_FLOOR: return call1(cg, "llvm.floor", x, true);
        case IR_OP_CEIL: return call1(cg, "llvm.ceil", x, true);
        default: break;
        }
    }
    LLVMValueRef y = math_f32(cg, opc, LLVMBuildFPCast(cg->b, x, cg->t_f32, ""), t->kind != IR_F64);
    return LLVMBuildFPCast(cg->b, y, cg_type(cg, t), "");
}

/* ---- one element ---- */

static LLVMIntPredicate int_pred(const char *p, bool is_unsigned) {
    if (strcmp(p, "eq") == 0)
        return LLVMIntEQ;
    if (strcmp(p, "ne") == 0)
        return LLVMIntNE;
    if (strcmp(p, "lt") == 0)
        return is_unsigned ? LLVMIntULT : LLVMIntSLT;
    if (strcmp(p, "le") == 0)
        return is_unsigned ? LLVMIntULE : LLVMIntSLE;
    if (strcmp(p, "gt") == 0)
        return is_unsigned ? LLVMIntUGT : LLVMIntSGT;
    return is_unsigned ? LLVMIntUGE : LLVMIntSGE;
}

static LLVMRealPredicate float_pred(const char *p) {
    if (strcmp(p, "eq") == 0)
        return LLVMRealOEQ;
    if (strcmp(p, "ne") == 0)
        return LLVMRealUNE; /* NaN != x is true */
    if (strcmp(p, "lt") == 0)
        return LLVMRealOLT;
    if (strcmp(p, "le") == 0)
        return LLVMRealOLE;
    if (strcmp(p, "gt") == 0)
        return LLVMRealOGT;
    return LLVMRealOGE;
}

/* Element op: a are the operands' values, et the first operand's element
 * type (the second's for select), rt the result's element type. */
static LLVMValueRef element(Cg *cg, const IrOp *op, LLVMValueRef *a, const IrType *et, const IrType *rt) {
    LLVMBuilderRef b = cg->b;
    bool f = is_float_type(et);
    switch (op->opc) {
    case IR_OP_ADD: return f ? fadd(cg, a[0], a[1]) : LLVMBuildAdd(b, a[0], a[1], "");
    case IR_OP_SUB: return f ? cg_contract(LLVMBuildFSub(b, a[0], a[1], "")) : LLVMBuildSub(b, a[0], a[1], "");
    case IR_OP_MUL: return f ? fmul(cg, a[0], a[1]) : LLVMBuildMul(b, a[0], a[1], "");
    case IR_OP_DIV: return f ? LLVMBuildFDiv(b, a[0], a[1], "") : int_divrem(cg, false, a[0], a[1]);
    case IR_OP_REM: return f ? LLVMBuildFRem(b, a[0], a[1], "") : int_divrem(cg, true, a[0], a[1]);
    case IR_OP_NEG: return f ? LLVMBuildFNeg(b, a[0], "") : LLVMBuildNeg(b, a[0], "");
    case IR_OP_MIN: return f ? call2(cg, "llvm.minnum", a[0], a[1]) : int_minmax(cg, false, et, a[0], a[1]);
    case IR_OP_MAX: return f ? call2(cg, "llvm.maxnum", a[0], a[1]) : int_minmax(cg, true, et, a[0], a[1]);
    case IR_OP_AND: return LLVMBuildAnd(b, a[0], a[1], "");
    case IR_OP_OR: return LLVMBuildOr(b, a[0], a[1], "");
    case IR_OP_XOR: return LLVMBuildXor(b, a[0], a[1], "");
    case IR_OP_NOT: return LLVMBuildNot(b, a[0], "");
    case IR_OP_SHL: return int_shift(cg, true, a[0], a[1]);
    case IR_OP_SHR: return int_shift(cg, false, a[0], a[1]);
    case IR_OP_UMULHI: return int_umulhi(cg, a[0], a[1]);
    case IR_OP_CMP: {
        const char *p = ir_op_get_word(op, "pred");
        if (!p)
            p = "eq";
        if (f)
            return LLVMBuildFCmp(b, float_pred(p), a[0], a[1], "");
        return LLVMBuildICmp(b, int_pred(p, et->kind == IR_PTR || et->kind == IR_I1), a[0], a[1], "");
    }
    case IR_OP_SELECT: return LLVMBuildSelect(b, a[0], a[1], a[2], "");
    case IR_OP_CAST: return cg_cast(cg, a[0], et, rt);
    case IR_OP_FMA: return fma3(cg, a[0], a[1], a[2]);
    case IR_OP_ABS:
        if (f)
            return call1(cg, "llvm.fabs", a[0], true);
        else {
            LLVMTypeRef over[1] = {LLVMTypeOf(a[0])};
            LLVMValueRef args[2] = {a[0], LLVMConstInt(cg->t_i1, 0, 0)};
            return cg_intrinsic(cg, "llvm.abs", over, 1, args, 2);
        }
    case IR_OP_ADDPTR: {
        LLVMValueRef idx = a[1];
        return LLVMBuildGEP2(b, cg_mem_type(cg, et->elem), a[0], &idx, 1, "");
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
    case IR_OP_COS: return math(cg, op->opc, a[0], et);
    default: tc_unreachable("not an elementwise op: %s", ir_op_info[op->opc].name);
    }
}

bool cg_lower_elementwise(Cg *cg, IrOp *op) {
    const IrType *rt = op->results[0]->type;
    const LinearLayout *ll = NULL;
    int n = 1;
    if (rt->kind == IR_TILE) {
        if (!(ll = cg_ll(cg, rt, op)))
            return false;
        n = ll_num_regs(ll);
    }
    int na = op->num_operands;
    if (na > 3)
        return cg_error(cg, op, "internal error: elementwise op with %d operands", na);
    CgVal *ops[3];
    for (int i = 0; i < na; i++) {
        ops[i] = cg_get(cg, op->operands[i]);
        if (ops[i]->n != 1 && ops[i]->n != n)
            return cg_error(cg, op, "internal error: operand %d has %d registers, the result %d", i, ops[i]->n, n);
    }
    const IrType *et = ir_type_elem(op->operands[op->opc == IR_OP_SELECT ? 1 : 0]->type);
    const IrType *ret = ir_type_elem(rt);
    CgVal *res = cg_new_val(cg, n, ll);
    if (op->opc == IR_OP_CAST && et != ret && (ir_type_is_fp8(et) || ir_type_is_fp8(ret))) {
        /* fp8: the registers together, in pairs where the target converts two at once */
        int k = ops[0]->n == 1 ? 1 : n;
        cg_fp8_cast(cg, ops[0]->v, res->v, k, et, ret);
        for (int r = k; r < n; r++)
            res->v[r] = res->v[0];
        cg_set(cg, op->results[0], res);
        return true;
    }
    for (int r = 0; r < n; r++) {
        LLVMValueRef a[3];
        bool same = r > 0;
        for (int i = 0; i < na; i++) {
            a[i] = cg_reg(ops[i], r);
            same &= r > 0 && a[i] == cg_reg(ops[i], r - 1);
        }
        /* Registers of a splat are one value: compute it once. */
        res->v[r] = same ? res->v[r - 1] : element(cg, op, a, et, ret);
    }
    cg_set(cg, op->results[0], res);
    return true;
}
