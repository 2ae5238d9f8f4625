/*
 * lower.c — tile IR with layouts -> LLVM IR: kernels, values, thread
 * coordinates, control flow, and the entry point cg_compile_module.
 *
 * One LLVM function per kernel, calling convention PTX_Kernel (an `.entry`),
 * with `maxntid` = 32 * num_warps in nvvm.annotations (LLVM 19 reads the
 * launch bounds from there, not from function attributes). Parameters keep
 * their types: ptr<T> becomes `ptr addrspace(1)`, f16 `half`, bf16 `bfloat`,
 * f8e4m3 and f8e5m2 `i8` (their bits).
 * The dynamic shared memory is one external array, @global_smem, that every
 * op with scratch indexes at its scratch_offset.
 *
 * The entry block computes the thread id (tid.x: programs are 1-D blocks of
 * 32 * num_warps threads), the lane (tid & 31) and the warp (tid >> 5), and
 * then every thread-dependent part of a coordinate that some op asks for
 * (cg_thread_coord), so those values dominate every block of the kernel and
 * are computed once however many ops use the same layout. The IR is lowered
 * into the blocks after it.
 *
 * Coordinates: register r of the thread (lane, warp) holds the element at
 * reg(r) ^ lane_part(lane) ^ warp_part(warp) (see ir/linear_layout.c). reg(r)
 * is a constant; the thread part is computed with bit operations from lane
 * and warp; when the register part's bits cannot overlap the thread part's
 * (every layout built from #blocked, #slice, #mma, #dot_op), XOR is an add,
 * which LLVM folds into addressing.
 *
 * Control flow is structured: `for` becomes header / body / exit blocks with
 * one phi per register of each loop-carried value (signed `iv < ub`, step
 * positive as the front end guarantees), `while` the same with its
 * condition region in the header, `if` a branch on a uniform i1 and a
 * phi per register of each result. A scan's combine region is lowered anew
 * for every combination (cg_lower_combine), its arguments bound to that
 * combination's values: there its scalars differ from thread to thread.
 *
 * Errors: IR that the passes should not have produced (a tile without a
 * layout, a call left after inlining, more shared memory than the target
 * has, which allocate-shared reports) is reported at the op's location as
 * an internal error and makes cg_compile_module return false.
 */
#include "lower.h"
#include "emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- errors, types, values ---- */

bool cg_error(Cg *cg, const IrOp *op, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(cg->diags, op ? op->loc : cg->f->loc, "%s", msg);
    cg->failed = true;
    return false;
}

LLVMTypeRef cg_type(Cg *cg, const IrType *t) {
    switch (t->kind) {
    case IR_I1: return cg->t_i1;
    case IR_I8: return cg->t_i8;
    case IR_I16: return cg->t_i16;
    case IR_I32: return cg->t_i32;
    case IR_I64: return cg->t_i64;
    case IR_F16: return cg->t_f16;
    case IR_BF16: return cg->t_bf16;
    case IR_F32: return cg->t_f32;
    case IR_F64: return cg->t_f64;
    case IR_F8E4M3:
    case IR_F8E5M2: return cg->t_i8; /* the bits (lower_fp8.c converts) */
    case IR_PTR: return cg->t_gptr;
    default: tc_unreachable("cg_type of a non-scalar type");
    }
}

LLVMTypeRef cg_mem_type(Cg *cg, const IrType *t) {
    return t->kind == IR_I1 ? cg->t_i8 : cg_type(cg, t);
}

CgVal *cg_new_val(Cg *cg, int n, const LinearLayout *ll) {
    CgVal *v = ARENA_NEW(&cg->arena, CgVal);
    v->n = n;
    v->v = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    v->ll = ll;
    return v;
}

CgVal *cg_get(Cg *cg, const IrValue *v) {
    CgVal *val = ir_map_get(&cg->vals, v);
    if (!val)
        tc_unreachable("codegen: value used before it was lowered");
    return val;
}

void cg_set(Cg *cg, const IrValue *v, CgVal *val) {
    ir_map_put(&cg->vals, v, val);
}

bool cg_is_used(Cg *cg, const IrValue *v) {
    return ir_map_get(&cg->used, v) != NULL;
}

LLVMValueRef cg_reg(const CgVal *v, int i) {
    return v->n == 1 ? v->v[0] : v->v[i];
}

const LinearLayout *cg_ll(Cg *cg, const IrType *t, const IrOp *op) {
    LinearLayout *ll = ir_map_get(&cg->lls, t);
    if (ll)
        return ll;
    Buf tb;
    buf_init(&tb);
    if (t->kind != IR_TILE || !t->layout) {
        ir_print_type(&tb, t);
        cg_error(cg, op, "internal error: codegen needs a layout on every tile, got %s (run the layout passes)",
                 tb.data ? tb.data : "?");
        buf_free(&tb);
        return NULL;
    }
    ll = ARENA_NEW(&cg->arena, LinearLayout);
    const char *why = "?";
    if (!ll_of_type(t, cg->num_warps, ll, &why)) {
        ir_print_type(&tb, t);
        cg_error(cg, op, "internal error: cannot lower %s with %d warps: %s", tb.data ? tb.data : "?", cg->num_warps,
                 why);
        buf_free(&tb);
        return NULL;
    }
    buf_free(&tb);
    ir_map_put(&cg->lls, t, ll);
    return ll;
}

LLVMValueRef cg_i32(Cg *cg, int64_t v) {
    return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1);
}
LLVMValueRef cg_i64(Cg *cg, int64_t v) {
    return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1);
}

LLVMBasicBlockRef cg_block(Cg *cg, const char *name) {
    return LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

LLVMBasicBlockRef cg_begin_if(Cg *cg, LLVMValueRef pred, const char *name) {
    char end[64];
    snprintf(end, sizeof end, "%s.end", name);
    LLVMBasicBlockRef then = cg_block(cg, name), cont = cg_block(cg, end);
    LLVMBuildCondBr(cg->b, pred, then, cont);
    LLVMPositionBuilderAtEnd(cg->b, then);
    return cont;
}

void cg_end_if(Cg *cg, LLVMBasicBlockRef cont) {
    LLVMBuildBr(cg->b, cont);
    LLVMPositionBuilderAtEnd(cg->b, cont);
}

LLVMBasicBlockRef cg_begin_issuer(Cg *cg, LLVMValueRef pred, const char *name) {
    LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, cg->issuer), "");
    if (pred)
        c = LLVMBuildAnd(cg->b, c, pred, "");
    return cg_begin_if(cg, c, name);
}

LLVMValueRef cg_contract(LLVMValueRef inst) {
    if (LLVMIsAInstruction(inst) && LLVMCanValueUseFastMathFlags(inst))
        LLVMSetFastMathFlags(inst, LLVMFastMathAllowContract);
    return inst;
}

/* ---- thread coordinates ---- */

static CgThreadMap *thread_map(Cg *cg, const LinearLayout *ll) {
    for (CgThreadMap *t = cg->thread_maps; t; t = t->next)
        if (ll_equal(&t->ll, ll))
            return t;
    CgThreadMap *t = ARENA_NEW(&cg->arena, CgThreadMap);
    t->ll = *ll;
    for (int d = 0; d < ll->rank; d++)
        for (int in = LL_LANE; in <= LL_WARP; in++)
            for (int k = 0; k < ll->num_bits[in]; k++)
                t->bits[d] |= ll->bases[in][k][d];
    t->next = cg->thread_maps;
    cg->thread_maps = t;
    return t;
}

LLVMValueRef cg_thread_coord(Cg *cg, const LinearLayout *ll, int dim) {
    CgThreadMap *tm = thread_map(cg, ll);
    if (tm->coord[dim])
        return tm->coord[dim];
    LLVMBuilderRef b = cg->entry_b;
    /* Disjoint powers of two (every layout tilec builds): shift each lane or
     * warp bit into place and OR; otherwise multiply and XOR. */
    bool disjoint = true;
    int64_t seen = 0;
    for (int in = LL_LANE; in <= LL_WARP; in++)
        for (int k = 0; k < ll->num_bits[in]; k++) {
            int64_t c = ll->bases[in][k][dim];
            if (!c)
                continue;
            if (!tc_is_pow2(c) || (seen & c))
                disjoint = false;
            seen |= c;
        }
    LLVMValueRef acc = NULL;
    for (int in = LL_LANE; in <= LL_WARP; in++) {
        LLVMValueRef src = in == LL_LANE ? cg->lane : cg->warp;
        for (int k = 0; k < ll->num_bits[in]; k++) {
            int64_t c = ll->bases[in][k][dim];
            if (!c)
                continue;
            LLVMValueRef t = LLVMBuildAnd(b, src, cg_i32(cg, (int64_t)1 << k), "");
            if (disjoint) {
                int s = tc_log2i(c);
                if (s > k)
                    t = LLVMBuildShl(b, t, cg_i32(cg, s - k), "");
                else if (s < k)
                    t = LLVMBuildLShr(b, t, cg_i32(cg, k - s), "");
                acc = acc ? LLVMBuildOr(b, acc, t, "") : t;
            } else {
                t = LLVMBuildLShr(b, t, cg_i32(cg, k), "");
                t = LLVMBuildMul(b, t, cg_i32(cg, c), "");
                acc = acc ? LLVMBuildXor(b, acc, t, "") : t;
            }
        }
    }
    tm->coord[dim] = acc ? acc : cg_i32(cg, 0);
    return tm->coord[dim];
}

LLVMValueRef cg_coord(Cg *cg, const LinearLayout *ll, int reg, int dim) {
    int64_t c[IR_MAX_RANK];
    ll_apply_in(ll, LL_REG, reg, c);
    LLVMValueRef t = cg_thread_coord(cg, ll, dim);
    if (c[dim] == 0)
        return t;
    CgThreadMap *tm = thread_map(cg, ll);
    if ((c[dim] & tm->bits[dim]) == 0) {
        LLVMValueRef r = LLVMBuildAdd(cg->b, t, cg_i32(cg, c[dim]), "");
        if (LLVMIsAInstruction(r)) {
            LLVMSetNUW(r, 1);
            LLVMSetNSW(r, 1);
        }
        return r;
    }
    return LLVMBuildXor(cg->b, t, cg_i32(cg, c[dim]), "");
}

LLVMValueRef cg_owner(Cg *cg, const LinearLayout *ll) {
    CgThreadMap *tm = thread_map(cg, ll);
    if (tm->owner)
        return tm->owner;
    unsigned lm = ll_broadcast_mask(ll, LL_LANE), wm = ll_broadcast_mask(ll, LL_WARP);
    LLVMBuilderRef b = cg->entry_b;
    LLVMValueRef p = LLVMConstInt(cg->t_i1, 1, 0);
    if (lm)
        p = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, cg->lane, cg_i32(cg, lm), ""), cg_i32(cg, 0), "");
    if (wm) {
        LLVMValueRef q = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, cg->warp, cg_i32(cg, wm), ""), cg_i32(cg, 0), "");
        p = lm ? LLVMBuildAnd(b, p, q, "") : q;
    }
    tm->owner = p;
    return p;
}

LLVMValueRef cg_linear_index(Cg *cg, int rank, const int64_t *shape, LLVMValueRef *c) {
    LLVMValueRef lin = NULL;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        LLVMValueRef t = c[d];
        if (stride > 1) {
            t = LLVMBuildShl(cg->b, t, cg_i32(cg, tc_log2i(stride)), "");
            if (LLVMIsAInstruction(t)) {
                LLVMSetNUW(t, 1);
                LLVMSetNSW(t, 1);
            }
        }
        if (lin) {
            lin = LLVMBuildAdd(cg->b, lin, t, "");
            if (LLVMIsAInstruction(lin)) {
                LLVMSetNUW(lin, 1);
                LLVMSetNSW(lin, 1);
            }
        } else {
            lin = t;
        }
        stride *= shape[d];
    }
    return lin ? lin : cg_i32(cg, 0);
}

/* ---- calls, inline PTX, shared memory, shuffles ---- */

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int num_over, LLVMValueRef *args, int num_args) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id)
        tc_unreachable("unknown LLVM intrinsic %s", name);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, over, (size_t)num_over);
    LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, over, (size_t)num_over);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)num_args, "");
}

LLVMValueRef cg_warp_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int num_over, LLVMValueRef *args,
                               int num_args) {
    LLVMValueRef call = cg_intrinsic(cg, name, over, num_over, args, num_args);
    unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
    return call;
}

LLVMValueRef cg_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints, LLVMValueRef *args,
                    int num_args, bool side_effect) {
    LLVMTypeRef *tys = ARENA_ARRAY(&cg->arena, LLVMTypeRef, num_args > 0 ? num_args : 1);
    for (int i = 0; i < num_args; i++)
        tys[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, tys, (unsigned)num_args, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), side_effect, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)num_args, "");
}

/* Are lo and hi f16 or bf16 values rounded from f32 (see cg_convert_pair)? */
static bool is_convert_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi) {
    if (!LLVMIsAFPTruncInst(lo) || !LLVMIsAFPTruncInst(hi))
        return false;
    LLVMTypeRef to = LLVMTypeOf(lo);
    return LLVMTypeOf(LLVMGetOperand(hi, 0)) == cg->t_f32 && LLVMTypeOf(LLVMGetOperand(lo, 0)) == cg->t_f32 &&
           LLVMTypeOf(hi) == to && (to == cg->t_f16 || to == cg->t_bf16);
}

LLVMValueRef cg_convert_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi) {
    if (!is_convert_pair(cg, lo, hi))
        return NULL;
    LLVMTypeRef to = LLVMTypeOf(lo);
    LLVMValueRef args[2] = {LLVMGetOperand(hi, 0), LLVMGetOperand(lo, 0)}; /* cvt.rn.f16x2.f32 d, a, b: cvt(a) in the upper half, cvt(b) in the lower */
    LLVMValueRef w =
        cg_intrinsic(cg, to == cg->t_f16 ? "llvm.nvvm.ff2f16x2.rn" : "llvm.nvvm.ff2bf16x2.rn", NULL, 0, args, 2);
    return LLVMBuildBitCast(cg->b, w, cg->t_i32, "");
}

void cg_barrier(Cg *cg) {
    if (!cg->barrier_threads) {
        cg_intrinsic(cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
        return;
    }
    /* after a warp_specialize: the consumer warps alone, on named barrier 1
     * (the producer warps never reach it); inside its region, one warp */
    if (cg->barrier_threads == 32) {
        LLVMValueRef all = cg_i32(cg, -1);
        cg_intrinsic(cg, "llvm.nvvm.bar.warp.sync", NULL, 0, &all, 1);
        return;
    }
    LLVMValueRef args[2] = {cg_i32(cg, 1), cg_i32(cg, cg->barrier_threads)};
    cg_intrinsic(cg, "llvm.nvvm.barrier.sync.cnt", NULL, 0, args, 2);
}

LLVMValueRef cg_smem_ptr(Cg *cg, LLVMValueRef offset) {
    return LLVMBuildInBoundsGEP2(cg->b, cg->t_i8, cg->smem, &offset, 1, "");
}

int64_t cg_scratch_base(const IrOp *op) {
    return ir_op_get_int(op, "scratch_offset", 0);
}

LLVMValueRef cg_padded(Cg *cg, TgPadding p, LLVMValueRef offset) {
    LLVMValueRef rows = LLVMBuildLShr(cg->b, offset, cg_i32(cg, tc_log2i(p.interval)), "");
    LLVMValueRef pad = LLVMBuildMul(cg->b, rows, cg_i32(cg, p.pad), "");
    LLVMValueRef r = LLVMBuildAdd(cg->b, offset, pad, "");
    if (LLVMIsAInstruction(r)) {
        LLVMSetNUW(r, 1);
        LLVMSetNSW(r, 1);
    }
    return r;
}

void cg_smem_store(Cg *cg, LLVMValueRef v, const IrType *elem, LLVMValueRef offset) {
    if (elem->kind == IR_I1)
        v = LLVMBuildZExt(cg->b, v, cg->t_i8, "");
    LLVMValueRef st = LLVMBuildStore(cg->b, v, cg_smem_ptr(cg, offset));
    LLVMSetAlignment(st, (unsigned)ir_type_bytes(elem));
}

LLVMValueRef cg_smem_load(Cg *cg, const IrType *elem, LLVMValueRef offset) {
    LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_mem_type(cg, elem), cg_smem_ptr(cg, offset), "");
    LLVMSetAlignment(v, (unsigned)ir_type_bytes(elem));
    if (elem->kind == IR_I1)
        v = LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "");
    return v;
}

/* The LLVM type of an access of `bytes`: i32 words (a vector of them above
 * 4 bytes), or one i16 / i8. */
static LLVMTypeRef access_type(Cg *cg, int bytes) {
    if (bytes >= 4)
        return bytes == 4 ? cg->t_i32 : LLVMVectorType(cg->t_i32, (unsigned)bytes / 4);
    return LLVMIntTypeInContext(cg->ctx, (unsigned)bytes * 8);
}

void cg_smem_store_vec(Cg *cg, LLVMValueRef *vals, int g, const IrType *elem, LLVMValueRef offset) {
    if (g == 1) {
        cg_smem_store(cg, vals[0], elem, offset);
        return;
    }
    int bytes = g * ir_type_bytes(elem);
    bool pairs = bytes == 2 * g;
    for (int j = 0; pairs && j < g; j += 2)
        pairs = is_convert_pair(cg, vals[j], vals[j + 1]);
    LLVMValueRef v;
    if (pairs) { /* f32 rounded to f16 or bf16: one cvt per pair of elements */
        v = g == 2 ? NULL : LLVMGetUndef(access_type(cg, bytes));
        for (int j = 0; j < g; j += 2) {
            LLVMValueRef w = cg_convert_pair(cg, vals[j], vals[j + 1]);
            v = g == 2 ? w : LLVMBuildInsertElement(cg->b, v, w, cg_i32(cg, j / 2), "");
        }
    } else {
        v = LLVMGetUndef(LLVMVectorType(cg_type(cg, elem), (unsigned)g));
        for (int j = 0; j < g; j++)
            v = LLVMBuildInsertElement(cg->b, v, vals[j], cg_i32(cg, j), "");
        v = LLVMBuildBitCast(cg->b, v, access_type(cg, bytes), "");
    }
    LLVMValueRef st = LLVMBuildStore(cg->b, v, cg_smem_ptr(cg, offset));
    LLVMSetAlignment(st, (unsigned)bytes);
}

void cg_smem_load_vec(Cg *cg, LLVMValueRef *out, int g, const IrType *elem, LLVMValueRef offset) {
    if (g == 1) {
        out[0] = cg_smem_load(cg, elem, offset);
        return;
    }
    int bytes = g * ir_type_bytes(elem);
    LLVMValueRef v = LLVMBuildLoad2(cg->b, access_type(cg, bytes), cg_smem_ptr(cg, offset), "");
    LLVMSetAlignment(v, (unsigned)bytes);
    v = LLVMBuildBitCast(cg->b, v, LLVMVectorType(cg_type(cg, elem), (unsigned)g), "");
    for (int j = 0; j < g; j++)
        out[j] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, j), "");
}

LLVMValueRef cg_thread_offset(Cg *cg, const int64_t off[2][LL_MAX_BITS], bool xor) {
    for (CgOffsetMemo *m = cg->offset_memos; m; m = m->next)
        if (m->xor == xor && memcmp(m->off, off, sizeof m->off) == 0)
            return m->v;
    LLVMBuilderRef b = cg->entry_b;
    LLVMValueRef v = cg_i32(cg, 0);
    for (int in = 0; in < 2; in++) {
        LLVMValueRef src = in == 0 ? cg->lane : cg->warp;
        for (int k = 0; k < LL_MAX_BITS; k++) {
            if (!off[in][k])
                continue;
            LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, src, cg_i32(cg, k), ""), cg_i32(cg, 1), "");
            bit = LLVMBuildMul(b, bit, cg_i32(cg, off[in][k]), "");
            v = xor ? LLVMBuildXor(b, v, bit, "") : LLVMBuildAdd(b, v, bit, "");
        }
    }
    CgOffsetMemo *m = ARENA_NEW(&cg->arena, CgOffsetMemo);
    memcpy(m->off, off, sizeof m->off);
    m->xor = xor;
    m->v = v;
    m->next = cg->offset_memos;
    cg->offset_memos = m;
    return v;
}

static LLVMValueRef shfl_i32(Cg *cg, LLVMValueRef v, int mask) {
    LLVMValueRef args[4] = {cg_i32(cg, -1), v, cg_i32(cg, mask), cg_i32(cg, 0x1f)};
    bool f = LLVMTypeOf(v) == cg->t_f32;
    return cg_intrinsic(cg, f ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
}

LLVMValueRef cg_shfl_xor(Cg *cg, LLVMValueRef v, int mask) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMBuilderRef b = cg->b;
    if (t == cg->t_i32 || t == cg->t_f32)
        return shfl_i32(cg, v, mask);
    if (t == cg->t_i1 || t == cg->t_i8 || t == cg->t_i16)
        return LLVMBuildTrunc(b, shfl_i32(cg, LLVMBuildZExt(b, v, cg->t_i32, ""), mask), t, "");
    if (t == cg->t_f16 || t == cg->t_bf16) {
        LLVMValueRef i = LLVMBuildZExt(b, LLVMBuildBitCast(b, v, cg->t_i16, ""), cg->t_i32, "");
        return LLVMBuildBitCast(b, LLVMBuildTrunc(b, shfl_i32(cg, i, mask), cg->t_i16, ""), t, "");
    }
    /* 64 bits: two 32-bit shuffles. */
    LLVMValueRef i = t == cg->t_gptr ? LLVMBuildPtrToInt(b, v, cg->t_i64, "") : LLVMBuildBitCast(b, v, cg->t_i64, "");
    LLVMValueRef lo = LLVMBuildTrunc(b, i, cg->t_i32, "");
    LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, i, cg_i64(cg, 32), ""), cg->t_i32, "");
    lo = LLVMBuildZExt(b, shfl_i32(cg, lo, mask), cg->t_i64, "");
    hi = LLVMBuildZExt(b, shfl_i32(cg, hi, mask), cg->t_i64, "");
    LLVMValueRef r = LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, cg_i64(cg, 32), ""), "");
    return t == cg->t_gptr ? LLVMBuildIntToPtr(b, r, t, "") : LLVMBuildBitCast(b, r, t, "");
}

/* ---- ops ---- */

static bool lower_block(Cg *cg, IrBlock *blk, IrOp **terminator);

static bool lower_sreg(Cg *cg, IrOp *op, const char *what) {
    int64_t axis = ir_op_get_int(op, "axis", 0);
    if (axis < 0 || axis > 2)
        return cg_error(cg, op, "%s axis must be 0, 1 or 2, got %lld", ir_op_info[op->opc].name, (long long)axis);
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s.%c", what, "xyz"[axis]);
    CgVal *v = cg_new_val(cg, 1, NULL);
    v->v[0] = cg_intrinsic(cg, name, NULL, 0, NULL, 0);
    cg_set(cg, op->results[0], v);
    return true;
}

/* New CgVal of phis with the types of `like`'s registers. */
static CgVal *phis_like(Cg *cg, const CgVal *like) {
    CgVal *p = cg_new_val(cg, like->n, like->ll);
    for (int r = 0; r < like->n; r++)
        p->v[r] = LLVMBuildPhi(cg->b, LLVMTypeOf(like->v[r]), "");
    return p;
}

static void add_incoming(CgVal *phis, const CgVal *vals, LLVMBasicBlockRef from) {
    for (int r = 0; r < phis->n; r++) {
        LLVMValueRef v = cg_reg(vals, r);
        LLVMAddIncoming(phis->v[r], &v, &from, 1);
    }
}

/* The carried values of a loop (its operands from `first` on), as phis in
 * the header being built, with their inits coming from `pre`. */
static CgVal **loop_phis(Cg *cg, IrOp *op, int first, LLVMBasicBlockRef pre) {
    int n = op->num_results;
    CgVal **args = ARENA_ARRAY(&cg->arena, CgVal *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        CgVal *init = cg_get(cg, op->operands[first + i]);
        args[i] = phis_like(cg, init);
        add_incoming(args[i], init, pre);
    }
    return args;
}

/* The end of a loop's body (the builder in its latch): back to the header,
 * the yield's values into the phis; after it, the exit block holds the
 * results. */
static void close_loop(Cg *cg, IrOp *op, CgVal **args, const IrOp *yield, LLVMBasicBlockRef header,
                       LLVMBasicBlockRef exit) {
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, header);
    for (int i = 0; i < op->num_results; i++)
        add_incoming(args[i], cg_get(cg, yield->operands[i]), latch);
    LLVMPositionBuilderAtEnd(cg->b, exit);
    for (int i = 0; i < op->num_results; i++)
        cg_set(cg, op->results[i], args[i]);
}

static bool lower_for(Cg *cg, IrOp *op) {
    LLVMValueRef lb = cg_get(cg, op->operands[0])->v[0];
    LLVMValueRef ub = cg_get(cg, op->operands[1])->v[0];
    LLVMValueRef step = cg_get(cg, op->operands[2])->v[0];
    int n = op->num_results;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef header = cg_block(cg, "for.header"), body = cg_block(cg, "for.body"),
                      exit = cg_block(cg, "for.exit");
    LLVMBuildBr(cg->b, header);
    LLVMPositionBuilderAtEnd(cg->b, header);
    LLVMValueRef iv = LLVMBuildPhi(cg->b, LLVMTypeOf(lb), "iv");
    CgVal **args = loop_phis(cg, op, 3, pre);
    LLVMValueRef cond = LLVMBuildICmp(cg->b, LLVMIntSLT, iv, ub, "");
    LLVMBuildCondBr(cg->b, cond, body, exit);

    LLVMPositionBuilderAtEnd(cg->b, body);
    IrBlock *region = op->regions[0];
    CgVal *ivv = cg_new_val(cg, 1, NULL);
    ivv->v[0] = iv;
    cg_set(cg, region->args[0], ivv);
    for (int i = 0; i < n; i++)
        cg_set(cg, region->args[1 + i], args[i]);
    IrOp *yield = NULL;
    if (!lower_block(cg, region, &yield))
        return false;
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMValueRef next = LLVMBuildAdd(cg->b, iv, step, "iv.next");
    LLVMSetNSW(next, 1);
    LLVMAddIncoming(iv, &lb, &pre, 1);
    LLVMAddIncoming(iv, &next, &latch, 1);
    close_loop(cg, op, args, yield, header, exit);
    return true;
}

/* Region r of a while, its arguments bound to args: its terminator (an
 * op `want`), or NULL after an error. */
static IrOp *lower_region(Cg *cg, IrOp *op, int r, CgVal **args, IrOpcode want) {
    IrBlock *region = op->regions[r];
    for (int i = 0; i < region->num_args; i++)
        cg_set(cg, region->args[i], args[i]);
    IrOp *term = NULL;
    if (!lower_block(cg, region, &term))
        return NULL;
    if (!term || term->opc != want) {
        cg_error(cg, op, "internal error: 'while' region %d does not end with '%s'", r, ir_op_info[want].name);
        return NULL;
    }
    return term;
}

/* while: a header with one phi per register of each carried value, the
 * condition region, a branch to the body or the exit; the body's yield
 * feeds the phis. The results are the header's values. */
static bool lower_while(Cg *cg, IrOp *op) {
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef header = cg_block(cg, "while.cond"), body = cg_block(cg, "while.body"),
                      exit = cg_block(cg, "while.exit");
    LLVMBuildBr(cg->b, header);
    LLVMPositionBuilderAtEnd(cg->b, header);
    CgVal **args = loop_phis(cg, op, 0, pre);
    IrOp *cond = lower_region(cg, op, 0, args, IR_OP_CONDITION);
    if (!cond)
        return false;
    LLVMBuildCondBr(cg->b, cg_get(cg, cond->operands[0])->v[0], body, exit);

    LLVMPositionBuilderAtEnd(cg->b, body);
    IrOp *yield = lower_region(cg, op, 1, args, IR_OP_YIELD);
    if (!yield)
        return false;
    close_loop(cg, op, args, yield, header, exit);
    return true;
}

static bool lower_if(Cg *cg, IrOp *op) {
    LLVMValueRef cond = cg_get(cg, op->operands[0])->v[0];
    LLVMBasicBlockRef bthen = cg_block(cg, "if.then"), belse = cg_block(cg, "if.else"), merge = cg_block(cg, "if.end");
    LLVMBuildCondBr(cg->b, cond, bthen, belse);
    IrOp *yields[2] = {NULL, NULL};
    LLVMBasicBlockRef ends[2];
    for (int i = 0; i < 2; i++) {
        LLVMPositionBuilderAtEnd(cg->b, i ? belse : bthen);
        if (!lower_block(cg, op->regions[i], &yields[i]))
            return false;
        ends[i] = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, merge);
    }
    LLVMPositionBuilderAtEnd(cg->b, merge);
    for (int r = 0; r < op->num_results; r++) {
        if (!yields[0] || !yields[1])
            return cg_error(cg, op, "internal error: 'if' region without a yield");
        CgVal *a = cg_get(cg, yields[0]->operands[r]);
        CgVal *res = phis_like(cg, a);
        add_incoming(res, a, ends[0]);
        add_incoming(res, cg_get(cg, yields[1]->operands[r]), ends[1]);
        cg_set(cg, op->results[r], res);
    }
    return true;
}

LLVMValueRef cg_lower_combine(Cg *cg, IrOp *op, LLVMValueRef a, LLVMValueRef b) {
    IrBlock *region = op->regions[0];
    LLVMValueRef in[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        CgVal *v = cg_new_val(cg, 1, NULL);
        v->v[0] = in[i];
        cg_set(cg, region->args[i], v);
    }
    IrOp *yield = NULL;
    if (!lower_block(cg, region, &yield))
        return NULL;
    if (!yield || yield->opc != IR_OP_YIELD || yield->num_operands != 1) {
        cg_error(cg, op, "internal error: a combine region must end with a yield of one value");
        return NULL;
    }
    return cg_get(cg, yield->operands[0])->v[0];
}

static void find_setmaxnreg(IrOp *op, void *ctx) {
    if (op->opc == IR_OP_WARP_SPECIALIZE &&
        (ir_op_get_int(op, "producer_regs", 0) || ir_op_get_int(op, "consumer_regs", 0)))
        *(bool *)ctx = true;
}

/* warp_specialize (docs/codegen.md, "Warp specialization"): the warps from
 * num_warps on give registers back (setmaxnreg.dec, all of each
 * warpgroup), the first of them runs the region and every one of them
 * returns; the others take registers (setmaxnreg.inc) and go on, their
 * barriers now named barrier 1 of their threads alone. */
static bool lower_warp_specialize(Cg *cg, IrOp *op) {
    int64_t pregs = ir_op_get_int(op, "producer_regs", 0), cregs = ir_op_get_int(op, "consumer_regs", 0);
    LLVMBasicBlockRef prod = cg_block(cg, "producer"), run = cg_block(cg, "producer.run"),
                      idle = cg_block(cg, "producer.idle"), cons = cg_block(cg, "consumer");
    LLVMValueRef first = cg_i32(cg, cg->num_warps);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntUGE, cg->warp, first, ""), prod, cons);
    LLVMPositionBuilderAtEnd(cg->b, prod);
    char text[64];
    if (pregs) {
        snprintf(text, sizeof text, "setmaxnreg.dec.sync.aligned.u32 %lld;", (long long)pregs);
        cg_asm(cg, cg->t_void, text, "~{memory}", NULL, 0, true);
    }
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->warp, first, ""), run, idle);
    LLVMPositionBuilderAtEnd(cg->b, idle);
    LLVMBuildRetVoid(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, run);
    cg->issuer = cg->num_warps * 32;
    cg->barrier_threads = 32;
    IrOp *yield = NULL;
    if (!lower_block(cg, op->regions[0], &yield))
        return false;
    LLVMBuildRetVoid(cg->b);
    cg->issuer = 0;
    cg->barrier_threads = cg->num_warps * 32;
    LLVMPositionBuilderAtEnd(cg->b, cons);
    if (cregs) {
        snprintf(text, sizeof text, "setmaxnreg.inc.sync.aligned.u32 %lld;", (long long)cregs);
        cg_asm(cg, cg->t_void, text, "~{memory}", NULL, 0, true);
    }
    return true;
}

/*
 * Every register of a tile is a separate LLVM value (codegen unrolls tiles
 * per thread), and parts of LLVM's NVPTX back end are superlinear in the
 * size of a function (NVPTXProxyRegErasure, the list scheduler): softmax with
 * BLOCK = 2^17 (1024 registers per thread with 4 warps) compiles in 0.5 s,
 * 2^18 in 1.5 s, 2^20 in over a minute. No GPU holds such tiles in registers
 * anyway, so a tile result needing more than CG_MAX_TILE_REGS registers per
 * thread is an error at the op that makes it.
 */
#define CG_MAX_TILE_REGS 1024

static bool check_tile_regs(Cg *cg, IrOp *op) {
    for (int i = 0; i < op->num_results; i++) {
        const IrType *t = op->results[i]->type;
        if (t->kind != IR_TILE || !t->layout)
            continue;
        const LinearLayout *ll = cg_ll(cg, t, op);
        if (!ll)
            return false;
        int regs = ll_num_regs(ll);
        if (regs <= CG_MAX_TILE_REGS)
            continue;
        int64_t numel = 1;
        for (int d = 0; d < t->rank; d++)
            numel *= t->shape[d];
        Buf tb;
        buf_init(&tb);
        ir_print_type(&tb, ir_type_tile(cg->m, t->elem, t->rank, t->shape, NULL));
        cg_error(cg, op,
                 "'%s' makes a %s of %lld elements, which needs %d registers per thread with %d warp%s; at most %d "
                 "(use more warps or a smaller tile)",
                 ir_op_info[op->opc].name, tb.data ? tb.data : "tile", (long long)numel, regs, cg->num_warps,
                 cg->num_warps == 1 ? "" : "s", CG_MAX_TILE_REGS);
        buf_free(&tb);
        return false;
    }
    return true;
}

/* The ops only Hopper has: an error at the op that names it and the
 * target, rather than PTX that ptxas refuses (IR written by hand for
 * tilec-opt; the passes create these only for targets that have them):
 * the ops ops.def marks OPF_SM90A (wgmma, setmaxnreg) and OPF_SM90
 * (mbarriers, TMA, the async-proxy fence), and a local_alloc that fills an
 * #nvmma_shared buffer (fenced for that proxy: sm_90). */
static bool check_target(Cg *cg, const IrOp *op) {
    unsigned flags = ir_op_info[op->opc].flags;
    const Layout *l = op->opc == IR_OP_LOCAL_ALLOC ? op->results[0]->type->layout : NULL;
    bool filled_nvmma = op->num_operands == 1 && l && l->kind == LAYOUT_NVMMA_SHARED; /* fenced for the async proxy */
    if ((flags & OPF_SM90A) && !cg->target->arch_a)
        return cg_error(cg, op, "'%s' needs sm_90a (wgmma, setmaxnreg), not %s", ir_op_info[op->opc].name,
                        tg_target_cpu(cg->target));
    if (((flags & OPF_SM90) || filled_nvmma) && cg->target->sm < 90)
        return cg_error(cg, op, "'%s'%s needs sm_90 or later, not %s", ir_op_info[op->opc].name,
                        filled_nvmma ? " of an #nvmma_shared buffer" : "", tg_target_cpu(cg->target));
    return true;
}

static bool lower_op(Cg *cg, IrOp *op) {
    if (!check_tile_regs(cg, op) || !check_target(cg, op))
        return false;
    switch (op->opc) {
    case IR_OP_CONSTANT: return cg_lower_constant(cg, op);
    case IR_OP_PROGRAM_ID: return lower_sreg(cg, op, "ctaid");
    case IR_OP_NUM_PROGRAMS: return lower_sreg(cg, op, "nctaid");
    case IR_OP_ARANGE: return cg_lower_arange(cg, op);
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_RESHAPE:
    case IR_OP_TRANS:
    case IR_OP_CONVERT_LAYOUT: return cg_lower_shape(cg, op);
    case IR_OP_LOAD: return cg_lower_load(cg, op);
    case IR_OP_STORE: return cg_lower_store(cg, op);
    case IR_OP_ATOMIC: return cg_lower_atomic(cg, op);
    case IR_OP_REDUCE: return cg_lower_reduce(cg, op);
    case IR_OP_CLUSTER_REDUCE: return cg_lower_cluster_reduce(cg, op);
    case IR_OP_SCAN: return cg_lower_scan(cg, op);
    case IR_OP_DOT: return cg_lower_dot(cg, op);
    case IR_OP_WARP_GROUP_DOT: return cg_lower_warp_group_dot(cg, op);
    case IR_OP_WARP_GROUP_DOT_WAIT: return cg_lower_warp_group_dot_wait(cg, op);
    case IR_OP_MBARRIER_INIT:
    case IR_OP_MBARRIER_INVAL:
    case IR_OP_MBARRIER_EXPECT:
    case IR_OP_MBARRIER_WAIT:
    case IR_OP_MBARRIER_ARRIVE:
    case IR_OP_ASYNC_TMA_COPY:
    case IR_OP_ASYNC_TMA_STORE:
    case IR_OP_ASYNC_TMA_STORE_WAIT: return cg_lower_tma(cg, op);
    case IR_OP_FENCE_ASYNC_SHARED:
        cg_asm(cg, cg->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0, true);
        return true;
    case IR_OP_FOR: return lower_for(cg, op);
    case IR_OP_WHILE: return lower_while(cg, op);
    case IR_OP_IF: return lower_if(cg, op);
    case IR_OP_WARP_SPECIALIZE: return lower_warp_specialize(cg, op);
    case IR_OP_WARP_GROUP_ID: {
        CgVal *v = cg_new_val(cg, 1, NULL);
        v->v[0] = LLVMBuildLShr(cg->b, cg->warp, cg_i32(cg, 2), "warpgroup");
        cg_set(cg, op->results[0], v);
        return true;
    }
    case IR_OP_NAMED_BARRIER_WAIT:
    case IR_OP_NAMED_BARRIER_ARRIVE: {
        LLVMValueRef args[2] = {cg_get(cg, op->operands[0])->v[0], cg_i32(cg, ir_op_get_int(op, "threads", 0))};
        cg_asm(cg, cg->t_void, op->opc == IR_OP_NAMED_BARRIER_WAIT ? "bar.sync $0, $1;" : "bar.arrive $0, $1;",
               "r,n,~{memory}", args, 2, true);
        return true;
    }
    case IR_OP_ASSERT: return cg_lower_assert(cg, op);
    case IR_OP_PRINT: return cg_lower_print(cg, op);
    case IR_OP_BARRIER: cg_barrier(cg); return true;
    case IR_OP_LOCAL_ALLOC:
    case IR_OP_MEMDESC_INDEX:
    case IR_OP_MEMDESC_TRANS:
    case IR_OP_LOCAL_LOAD:
    case IR_OP_LOCAL_STORE:
    case IR_OP_ASYNC_COPY:
    case IR_OP_ASYNC_COMMIT:
    case IR_OP_ASYNC_WAIT: return cg_lower_shared(cg, op);
    case IR_OP_RETURN: LLVMBuildRetVoid(cg->b); return true;
    case IR_OP_CALL:
        return cg_error(cg, op, "internal error: call of @%s reached codegen (run the inline pass)",
                        ir_op_get_word(op, "callee") ? ir_op_get_word(op, "callee") : "?");
    default:
        if (ir_op_has_flag(op, OPF_ELEMENTWISE))
            return cg_lower_elementwise(cg, op);
        return cg_error(cg, op, "'%s' is not supported by codegen yet", ir_op_info[op->opc].name);
    }
}

/* lower_op with the op's source location on what it emits (line info). */
static bool lower_op_at(Cg *cg, IrOp *op) {
    if (!cg->line_info)
        return lower_op(cg, op);
    LLVMMetadataRef outer = cg_line_info_enter(cg, op);
    bool ok = lower_op(cg, op);
    LLVMSetCurrentDebugLocation2(cg->b, outer);
    return ok;
}

/* Lowers a block's ops; a terminator (yield, return) ends it and is returned
 * in *terminator (a yield's operands are read by the region's owner). */
static bool lower_block(Cg *cg, IrBlock *blk, IrOp **terminator) {
    for (IrOp *op = blk->first; op; op = op->next) {
        if (op->opc == IR_OP_YIELD || op->opc == IR_OP_CONDITION) {
            *terminator = op;
            return true;
        }
        if (!lower_op_at(cg, op))
            return false;
        if (op->opc == IR_OP_RETURN) {
            *terminator = op;
            return true;
        }
    }
    *terminator = NULL;
    return true;
}

static void mark_uses(IrOp *op, void *ctx) {
    Cg *cg = ctx;
    for (int i = 0; i < op->num_operands; i++)
        ir_map_put(&cg->used, op->operands[i], (void *)1);
}

/* ---- kernels ---- */

static LLVMMetadataRef md_i32(Cg *cg, int v) {
    return LLVMValueAsMetadata(cg_i32(cg, v));
}

static LLVMMetadataRef md_str(Cg *cg, const char *s) {
    return LLVMMDStringInContext2(cg->ctx, s, strlen(s));
}

static void init_types(Cg *cg) {
    LLVMContextRef c = cg->ctx;
    cg->t_void = LLVMVoidTypeInContext(c);
    cg->t_i1 = LLVMInt1TypeInContext(c);
    cg->t_i8 = LLVMInt8TypeInContext(c);
    cg->t_i16 = LLVMInt16TypeInContext(c);
    cg->t_i32 = LLVMInt32TypeInContext(c);
    cg->t_i64 = LLVMInt64TypeInContext(c);
    cg->t_f16 = LLVMHalfTypeInContext(c);
    cg->t_bf16 = LLVMBFloatTypeInContext(c);
    cg->t_f32 = LLVMFloatTypeInContext(c);
    cg->t_f64 = LLVMDoubleTypeInContext(c);
    cg->t_gptr = LLVMPointerTypeInContext(c, 1);
    cg->t_sptr = LLVMPointerTypeInContext(c, 3);
}

/* PTX identifiers: [a-zA-Z][a-zA-Z0-9_$]* or [_$%][a-zA-Z0-9_$]+ (no '%'
 * here). NVPTX would rename anything else, and the launcher would not find it. */
static bool ptx_identifier(const char *s) {
    if (!s[0] || (s[0] >= '0' && s[0] <= '9') || ((s[0] == '_' || s[0] == '$') && !s[1]))
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '$'))
            return false;
    return true;
}

/* Tensor map parameters (docs/codegen.md, "TMA"): `ptr byval([128 x i8])
 * align 64`, listed as grid_constant in nvvm.annotations, so that NVPTX
 * hands out the address of the parameter itself (cvta.param) instead of a
 * local copy: cp.async.bulk.tensor reads the map there. */
static void tensor_map_params(Cg *cg) {
    IrBlock *body = cg->f->body;
    LLVMMetadataRef idx[64];
    int n = 0;
    LLVMTypeRef map = LLVMArrayType2(cg->t_i8, 128);
    for (int i = 0; i < body->num_args && n < 64; i++) {
        if (body->args[i]->type->kind != IR_TENSORMAP)
            continue;
        unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
        unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
        LLVMAddAttributeAtIndex(cg->fn, (unsigned)i + 1, LLVMCreateTypeAttribute(cg->ctx, byval, map));
        LLVMAddAttributeAtIndex(cg->fn, (unsigned)i + 1, LLVMCreateEnumAttribute(cg->ctx, align, 64));
        idx[n++] = md_i32(cg, i + 1);
    }
    if (!n)
        return;
    LLVMMetadataRef ann[3] = {LLVMValueAsMetadata(cg->fn), md_str(cg, "grid_constant"),
                              LLVMMDNodeInContext2(cg->ctx, idx, (size_t)n)};
    LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, ann, 3)));
}

static bool lower_kernel(Cg *cg) {
    IrFunc *f = cg->f;
    IrBlock *body = f->body;
    int np = body->num_args;
    LLVMTypeRef *ptys = ARENA_ARRAY(&cg->arena, LLVMTypeRef, np ? np : 1);
    for (int i = 0; i < np; i++) {
        const IrType *t = body->args[i]->type;
        if (t->kind == IR_TENSORMAP) {
            ptys[i] = LLVMPointerTypeInContext(cg->ctx, 0);
            continue;
        }
        if (!ir_type_is_scalar(t)) {
            Buf tb;
            buf_init(&tb);
            ir_print_type(&tb, t);
            cg_error(cg, NULL, "kernel @%s: parameter %d has type %s; kernel parameters must be scalars or pointers",
                     f->name, i, tb.data ? tb.data : "?");
            buf_free(&tb);
            return false;
        }
        ptys[i] = cg_type(cg, t);
    }
    if (!ptx_identifier(f->name) || strcmp(f->name, "global_smem") == 0 || LLVMGetNamedFunction(cg->mod, f->name))
        return cg_error(cg, NULL,
                        "kernel @%s: the name is not usable as a PTX entry (letters, digits, '_' and '$'; "
                        "not global_smem; one kernel per name)",
                        f->name);
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, ptys, (unsigned)np, 0);
    cg->fn = LLVMAddFunction(cg->mod, f->name, fty);
    LLVMSetFunctionCallConv(cg->fn, 71 /* PTX_Kernel */);
    int threads = 32 * tg_kernel_launch_warps(f, cg->num_warps);
    LLVMMetadataRef ann[] = {LLVMValueAsMetadata(cg->fn),
                             md_str(cg, "kernel"),
                             md_i32(cg, 1),
                             md_str(cg, "maxntidx"),
                             md_i32(cg, threads),
                             md_str(cg, "maxntidy"),
                             md_i32(cg, 1),
                             md_str(cg, "maxntidz"),
                             md_i32(cg, 1)};
    LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations",
                                LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, ann, 9)));
    bool moves_regs = false;
    ir_walk_func(f, find_setmaxnreg, &moves_regs);
    int64_t programs = ir_func_get_int(f, "min_programs_per_sm", 0);
    if (moves_regs || programs > 0) {
        /* .minnctapersm N, the kernel's min_programs_per_sm (1 without it):
         * ptxas then gives each thread at most 65536 / (N threads) registers,
         * and knows the registers every thread starts with, which setmaxnreg
         * moves; without it a kernel that needs fewer gets warning C7508 and
         * setmaxnreg is ignored */
        LLVMMetadataRef minc[] = {LLVMValueAsMetadata(cg->fn), md_str(cg, "minctasm"),
                                  md_i32(cg, programs > 0 ? (int32_t)programs : 1)};
        LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations",
                                    LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, minc, 3)));
    }
    int64_t ctas = ir_func_get_int(f, "num_ctas", 1);
    if (ctas > 1) {
        /* a cluster of ctas programs along x: LLVM 19 emits no
         * .reqnctapercluster, so the attribute tells cg_emit_module to */
        char text[24];
        int len = snprintf(text, sizeof text, "%lld", (long long)ctas);
        LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(cg->ctx, CG_CLUSTER_ATTR, (unsigned)strlen(CG_CLUSTER_ATTR),
                                                          text, (unsigned)len));
    }
    tensor_map_params(cg);
    if (cg->line_info)
        cg_line_info_kernel(cg);

    LLVMBasicBlockRef entry = cg_block(cg, "entry"), start = cg_block(cg, "start");
    LLVMPositionBuilderAtEnd(cg->b, entry);
    cg->tid = cg_intrinsic(cg, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
    LLVMMetadataRef range[] = {md_i32(cg, 0), md_i32(cg, threads)};
    LLVMSetMetadata(cg->tid, LLVMGetMDKindIDInContext(cg->ctx, "range", 5),
                    LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, range, 2)));
    cg->lane = LLVMBuildAnd(cg->b, cg->tid, cg_i32(cg, 31), "lane");
    /* The warp index broadcast from lane 0 (shfl.sync.idx, every thread
     * converged at the entry): the same value, but one ptxas knows is
     * uniform across the warp, so that what is computed from it alone
     * (a warpgroup's wgmma descriptors, its shared-memory offsets) goes
     * to the uniform datapath instead of every thread's registers. */
    {
        LLVMValueRef w = LLVMBuildLShr(cg->b, cg->tid, cg_i32(cg, 5), "");
        LLVMValueRef args[4] = {cg_i32(cg, -1), w, cg_i32(cg, 0), cg_i32(cg, 0x1f)};
        cg->warp = cg_intrinsic(cg, "llvm.nvvm.shfl.sync.idx.i32", NULL, 0, args, 4);
    }
    LLVMValueRef br = LLVMBuildBr(cg->b, start);
    LLVMPositionBuilderBefore(cg->entry_b, br);
    LLVMPositionBuilderAtEnd(cg->b, start);

    for (int i = 0; i < np; i++) {
        CgVal *v = cg_new_val(cg, 1, NULL);
        v->v[0] = LLVMGetParam(cg->fn, (unsigned)i);
        if (body->args[i]->type->kind == IR_TENSORMAP) {
            /* NVPTX passes a grid_constant parameter used by inline asm as its
             * address in the param space; TMA takes a generic address */
            v->v[0] = cg_asm(cg, cg->t_i64, "cvta.param.u64 $0, $1;", "=l,l", v->v, 1, false);
            cg_set(cg, body->args[i], v);
            continue;
        }
        const char *name = body->args[i]->name;
        if (name)
            LLVMSetValueName2(v->v[0], name, strlen(name));
        cg_set(cg, body->args[i], v);
    }
    ir_walk_func(f, mark_uses, cg);
    IrOp *term = NULL;
    if (!lower_block(cg, body, &term))
        return false;
    if (!term)
        LLVMBuildRetVoid(cg->b);
    return true;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool cg_compile_module(IrModule *m, const TgTarget *t, CgEmit emit, Buf *out, DiagList *diags,
                       CgStats *stats) {
    const char *why = NULL;
    if (!cg_target_init(&why)) {
        diag_error(diags, srcloc_none(), "cannot initialize the NVPTX target: %s", why ? why : "?");
        return false;
    }
    double t0 = now_ms();
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("tilec", ctx);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx), eb = LLVMCreateBuilderInContext(ctx);
    LLVMValueRef smem = NULL;
    CgLineInfo line_info = {0};
    if (t->line_info)
        cg_line_info_begin(&line_info, mod, m);
    bool ok = true;
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        Cg cg;
        memset(&cg, 0, sizeof cg);
        cg.m = m;
        cg.f = f;
        cg.target = t;
        cg.diags = diags;
        arena_init(&cg.arena);
        cg.num_warps = tg_kernel_num_warps(f, t->num_warps);
        cg.loop_regs = -1;
        cg.ctx = ctx;
        cg.mod = mod;
        cg.b = b;
        cg.entry_b = eb;
        cg.line_info = t->line_info ? &line_info : NULL;
        init_types(&cg);
        ir_map_init(&cg.vals, &cg.arena);
        ir_map_init(&cg.lls, &cg.arena);
        ir_map_init(&cg.used, &cg.arena);
        int64_t shared = tg_kernel_shared_bytes(f, cg.num_warps);
        int64_t limit = tg_shared_limit(t);
        if (shared > limit) { /* allocate-shared reports this to the user; IR that skipped it lands here */
            diag_error(diags, f->loc,
                       "internal error: kernel @%s needs %lld bytes of shared memory, more than %s's %lld (run "
                       "allocate-shared)",
                       f->name, (long long)shared, tg_target_cpu(t), (long long)limit);
            ok = false;
        } else {
            if (!smem) {
                LLVMTypeRef arr = LLVMArrayType2(cg.t_i8, 0);
                smem = LLVMAddGlobalInAddressSpace(mod, arr, "global_smem", 3);
                LLVMSetLinkage(smem, LLVMExternalLinkage);
                LLVMSetAlignment(smem, CG_SMEM_ALIGN);
            }
            cg.smem = smem;
            if (!lower_kernel(&cg) || cg.failed)
                ok = false; /* the next kernels still report their errors */
        }
        arena_free(&cg.arena);
    }
    LLVMDisposeBuilder(b);
    LLVMDisposeBuilder(eb);
    cg_line_info_end(&line_info);
    if (stats)
        stats->lower_ms = now_ms() - t0;
    if (ok)
        ok = cg_emit_module(mod, t, emit, out, diags, stats);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    return ok;
}
