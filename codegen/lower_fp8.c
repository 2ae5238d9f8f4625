/*
 * lower_fp8.c — casts from and to the 8-bit floats f8e4m3 (OCP E4M3FN: no
 * infinities, NaN S.1111.111, max 448) and f8e5m2 (IEEE-like: infinities,
 * max 57344), which codegen holds as i8: their bits.
 *
 * To fp8, as PTX's cvt.rn.satfinite does: round to nearest even, saturate
 * anything past the finite maximum (infinities included) to it, keep NaN.
 * The value first becomes an f32: exactly from f16, bf16 and the other fp8
 * format; integers round once to f32, and where that rounding matters the
 * result saturates anyway (f32 holds every integer below 2^24, and both
 * maxima are far below); f64 rounds to odd (truncate, then set the lowest
 * bit if inexact), so that rounding once more to fp8's 2 or 3 mantissa bits
 * gives the correctly rounded result.
 *
 * From fp8: exact, to f16 (e4m3 in software: to f32), then as a cast from
 * that type (floats widen or narrow exactly, integers convert with the
 * IR's saturating float-to-int semantics, i1 is `!= 0`).
 *
 * sm_90 and sm_90a (PTX ISA 7.8, sm_89 and later) convert two elements per
 * instruction, registers r and r + 1 of a tile together:
 *
 *   cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32  d16, a, b   a -> high byte, b -> low
 *   cvt.rn.f16x2.{e4m3x2,e5m2x2}          d32, a16    high byte -> high half
 *
 * as inline asm (LLVM 19 has no NVVM intrinsics for them; pure, so LLVM may
 * still merge and drop them). sm_80 has neither; integer code does the same:
 *
 *   e5m2 -> f16   the byte is the high byte of an f16 (same exponent field)
 *   e4m3 -> f32   normal: bits << 20 with the exponent rebiased (+120);
 *                 subnormal: k * 2^-9; 0x7F / 0xFF: NaN
 *   f32 -> fp8    |x| normal in fp8: add half a unit of the last kept place
 *                 (minus one, plus the kept lowest bit: ties to even) to the
 *                 rebiased bits and shift, then saturate with an unsigned
 *                 min (which also turns infinity into the maximum);
 *                 subnormal in fp8: x + 2^14 (e4m3) or 2^7 (e5m2) in f32,
 *                 whose unit in the last place is fp8's subnormal step, so
 *                 the FPU rounds to nearest even; NaN: 0x7F
 *
 * The GPU test tests/gpu/test_fp8.c checks both against a C reference over
 * every fp8 code and many f32s (on Hopper also with TILEC_ARCH=sm_80).
 */
#include "lower.h"

#include <string.h>

/* Does this target convert fp8 in hardware (cvt ...e4m3x2, sm_89+)? */
static bool hw_fp8(const Cg *cg) {
    return cg->target->sm >= 89;
}

static bool is_e4m3(const IrType *t) {
    return t->kind == IR_F8E4M3;
}

/* ---- fp8 -> a wider type ---- */

/* A pair of fp8 bytes (lo, hi) as the i16 (lo in the low byte) that the
 * packed conversions take. */
static LLVMValueRef byte_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi) {
    LLVMBuilderRef b = cg->b;
    LLVMValueRef l = LLVMBuildZExt(b, lo, cg->t_i16, "");
    LLVMValueRef h = LLVMBuildShl(b, LLVMBuildZExt(b, hi, cg->t_i16, ""), LLVMConstInt(cg->t_i16, 8, 0), "");
    return LLVMBuildOr(b, l, h, "");
}

/* Two fp8 values (lo, hi) to f16, exactly, in one cvt.rn.f16x2. */
static void hw_decode_pair(Cg *cg, const IrType *from, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef *out) {
    LLVMValueRef pair = byte_pair(cg, lo, hi);
    const char *text = is_e4m3(from) ? "cvt.rn.f16x2.e4m3x2 $0, $1;" : "cvt.rn.f16x2.e5m2x2 $0, $1;";
    LLVMValueRef w = cg_asm(cg, cg->t_i32, text, "=r,h", &pair, 1, false);
    LLVMValueRef v = LLVMBuildBitCast(cg->b, w, LLVMVectorType(cg->t_f16, 2), "");
    out[0] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, 0), "");
    out[1] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, 1), "");
}

/* One fp8 value, exactly, without fp8 instructions: e5m2 as f16, e4m3 as
 * f32. */
static LLVMValueRef sw_decode(Cg *cg, const IrType *from, LLVMValueRef c) {
    LLVMBuilderRef b = cg->b;
    if (!is_e4m3(from)) {
        LLVMValueRef h = LLVMBuildShl(b, LLVMBuildZExt(b, c, cg->t_i16, ""), LLVMConstInt(cg->t_i16, 8, 0), "");
        return LLVMBuildBitCast(b, h, cg->t_f16, "");
    }
    LLVMValueRef x = LLVMBuildZExt(b, c, cg->t_i32, "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, cg_i32(cg, 0x80), ""), cg_i32(cg, 24), "");
    LLVMValueRef m = LLVMBuildAnd(b, x, cg_i32(cg, 0x7F), "");
    LLVMValueRef normal = LLVMBuildAdd(b, LLVMBuildShl(b, m, cg_i32(cg, 20), ""), cg_i32(cg, 120 << 23), "");
    LLVMValueRef sub = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, cg->t_f32, ""), LLVMConstReal(cg->t_f32, 0x1p-9), "");
    LLVMValueRef is_sub = LLVMBuildICmp(b, LLVMIntULT, m, cg_i32(cg, 8), "");
    LLVMValueRef bits = LLVMBuildSelect(b, is_sub, LLVMBuildBitCast(b, sub, cg->t_i32, ""), normal, "");
    bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, m, cg_i32(cg, 0x7F), ""), cg_i32(cg, 0x7FC00000), bits, "");
    return LLVMBuildBitCast(b, LLVMBuildOr(b, bits, sign, ""), cg->t_f32, "");
}

/* The IR type of an LLVM float value that sw_decode or hw_decode_pair made. */
static const IrType *decoded_type(Cg *cg, LLVMValueRef v) {
    return ir_type_scalar(cg->m, LLVMTypeOf(v) == cg->t_f16 ? IR_F16 : IR_F32);
}

/* ---- a wider type -> fp8 ---- */

/* v (of IR type from, not fp8) as an f32 from which one more rounding to
 * fp8 is correct (see the top of the file). */
static LLVMValueRef to_f32(Cg *cg, LLVMValueRef v, const IrType *from) {
    if (from->kind != IR_F64)
        return cg_cast(cg, v, from, ir_type_scalar(cg->m, IR_F32));
    LLVMBuilderRef b = cg->b;
    LLVMValueRef t = cg_intrinsic(cg, "llvm.nvvm.d2f.rz", NULL, 0, &v, 1);
    LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealUNE, LLVMBuildFPExt(b, t, cg->t_f64, ""), v, "");
    LLVMValueRef bits =
        LLVMBuildOr(b, LLVMBuildBitCast(b, t, cg->t_i32, ""), LLVMBuildZExt(b, inexact, cg->t_i32, ""), "");
    return LLVMBuildBitCast(b, bits, cg->t_f32, "");
}

/* Two f32 (lo, hi) to fp8 in one cvt.rn.satfinite; out[0] = lo's byte. */
static void hw_encode_pair(Cg *cg, const IrType *to, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef *out) {
    const char *text =
        is_e4m3(to) ? "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;" : "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $2;";
    LLVMValueRef args[2] = {hi, lo};
    LLVMValueRef pair = cg_asm(cg, cg->t_i16, text, "=h,f,f", args, 2, false);
    out[0] = LLVMBuildTrunc(cg->b, pair, cg->t_i8, "");
    out[1] = LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, pair, LLVMConstInt(cg->t_i16, 8, 0), ""), cg->t_i8, "");
}

LLVMValueRef cg_fp8_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi) {
    if (!LLVMIsATruncInst(lo) || !LLVMIsATruncInst(hi) || LLVMTypeOf(lo) != cg->t_i8)
        return NULL;
    LLVMValueRef pair = LLVMGetOperand(lo, 0), shr = LLVMGetOperand(hi, 0);
    if (LLVMTypeOf(pair) != cg->t_i16 || !LLVMIsAInstruction(shr) || LLVMGetInstructionOpcode(shr) != LLVMLShr ||
        LLVMGetOperand(shr, 0) != pair || !LLVMIsAConstantInt(LLVMGetOperand(shr, 1)) ||
        LLVMConstIntGetZExtValue(LLVMGetOperand(shr, 1)) != 8)
        return NULL;
    return pair;
}

/* One f32 to fp8 with integer code (see the top of the file). */
static LLVMValueRef sw_encode(Cg *cg, const IrType *to, LLVMValueRef x) {
    LLVMBuilderRef b = cg->b;
    bool e4 = is_e4m3(to);
    int mant = e4 ? 3 : 2, bias = e4 ? 7 : 15, drop = 23 - mant;
    int max_code = e4 ? 0x7E : 0x7B;
    uint32_t min_normal = (uint32_t)(127 + 1 - bias) << 23;     /* f32 bits of 2^(1 - bias) */
    uint32_t magic = (uint32_t)((127 - bias) + drop + 1) << 23; /* 2^14 or 2^7: ulp = fp8's subnormal step */
    LLVMValueRef u = LLVMBuildBitCast(b, x, cg->t_i32, "");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, cg_i32(cg, 24), ""), cg_i32(cg, 0x80), "");
    LLVMValueRef a = LLVMBuildAnd(b, u, cg_i32(cg, 0x7FFFFFFF), "");
    /* normal: rebias, round half to even at bit `drop`, shift, saturate */
    LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, a, cg_i32(cg, drop), ""), cg_i32(cg, 1), "");
    int64_t adjust = (int64_t)(uint32_t)((uint32_t)(bias - 127) << 23) + ((1 << (drop - 1)) - 1);
    LLVMValueRef n = LLVMBuildAdd(b, LLVMBuildAdd(b, a, cg_i32(cg, adjust), ""), odd, "");
    n = LLVMBuildLShr(b, n, cg_i32(cg, drop), "");
    LLVMTypeRef over[1] = {cg->t_i32};
    LLVMValueRef mm[2] = {n, cg_i32(cg, max_code)};
    n = cg_intrinsic(cg, "llvm.umin", over, 1, mm, 2);
    /* subnormal (or zero): the FPU rounds |x| + magic */
    LLVMValueRef ax = LLVMBuildBitCast(b, a, cg->t_f32, "");
    LLVMValueRef s = LLVMBuildFAdd(b, ax, LLVMBuildBitCast(b, cg_i32(cg, magic), cg->t_f32, ""), "");
    s = LLVMBuildSub(b, LLVMBuildBitCast(b, s, cg->t_i32, ""), cg_i32(cg, magic), "");
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, a, cg_i32(cg, min_normal), ""), s, n, "");
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, cg_i32(cg, 0x7F800000), ""), cg_i32(cg, 0x7F), r, "");
    return LLVMBuildTrunc(b, LLVMBuildOr(b, r, sign, ""), cg->t_i8, "");
}

/* ---- the cast ---- */

/* n values through a conversion: one at a time (sm_80), or two at a time
 * with a packed instruction (sm_90; an odd last one converts with itself). */
typedef void (*PairFn)(Cg *cg, const IrType *fp8, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef *out);
typedef LLVMValueRef (*OneFn)(Cg *cg, const IrType *fp8, LLVMValueRef v);
static void convert_all(Cg *cg, const IrType *fp8, PairFn pair, OneFn one, const LLVMValueRef *in, LLVMValueRef *out,
                        int n) {
    for (int r = 0; r < n; r++) {
        if (!hw_fp8(cg)) {
            out[r] = one(cg, fp8, in[r]);
        } else if (r + 1 < n) {
            pair(cg, fp8, in[r], in[r + 1], &out[r]);
            r++;
        } else {
            LLVMValueRef two[2];
            pair(cg, fp8, in[r], in[r], two);
            out[r] = two[0];
        }
    }
}

void cg_fp8_cast(Cg *cg, const LLVMValueRef *in, LLVMValueRef *out, int n, const IrType *from, const IrType *to) {
    const IrType *f32 = ir_type_scalar(cg->m, IR_F32);
    LLVMValueRef *mid = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    if (ir_type_is_fp8(from)) {
        convert_all(cg, from, hw_decode_pair, sw_decode, in, mid, n); /* f16 or f32 (decoded_type) */
        for (int r = 0; r < n; r++)
            mid[r] = cg_cast(cg, mid[r], decoded_type(cg, mid[r]), ir_type_is_fp8(to) ? f32 : to);
        if (!ir_type_is_fp8(to)) {
            memcpy(out, mid, sizeof(LLVMValueRef) * (size_t)n);
            return;
        }
    } else {
        for (int r = 0; r < n; r++)
            mid[r] = to_f32(cg, in[r], from);
    }
    convert_all(cg, to, hw_encode_pair, sw_encode, mid, out, n);
}
