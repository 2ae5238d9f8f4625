/*
 * lower_dot.c — dot(a[MxK], b[KxN], acc[MxN] f32): on tensor cores with
 * mma.sync when the layouts are the instruction's fragments, else with FMA
 * instructions.
 *
 * Tensor cores. A dot whose result has an #mma (version 2) layout and whose
 * operands have the matching #dot_op layouts becomes mma.sync.aligned
 * .m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 (f16, bf16 operands,
 * kwidth 2) or .m16n8k8...tf32.tf32 (f32 operands, kwidth 1; the hardware
 * reads the upper 19 bits of each f32), as inline PTX. Nothing here assumes
 * how the layouts order their registers: each operand's LinearLayout is
 * matched against the instruction's fragment as the PTX ISA defines it
 * (Fragment below: which element each lane holds), giving a table from
 * (instruction tile, fragment element) to register (TgFragTable). A layout
 * fits when its lanes move elements exactly as the fragment's lanes do and
 * its warps move them by whole instruction tiles, so any warps per CTA and
 * any repetition order work. Then, for each k step and each m16 x n8 tile
 * the thread's result holds: A's 8 f16 registers packed into 4 b32 (pairs,
 * lower K in the low half), B's 4 into 2, C's 4 f32, one mma whose outputs
 * replace C's registers. The dot needs no shared memory and no barrier
 * (tg_dot_uses_mma tells scratch.c so).
 *
 * FMA path, for dots that do not use tensor cores (other layouts: #blocked,
 * or #mma/#dot_op combinations that do not match the fragments), for any
 * layouts of the three operands: correct and simple rather than fast.
 *
 *   barrier (the scratch may still be read by its previous user)
 *   every thread stores its registers of A transposed, at [k][m], and of B
 *   at [k][n], in scratch (each padded like any scratch tile: scratch.c), so
 *   that for one k the lanes of a warp read consecutive m (or n) and lanes
 *   that need the same element read the same address (a broadcast)
 *   barrier
 *   for k in 0 .. K-1 (an LLVM loop; -O3 unrolls it when it pays):
 *     load A[k][m] once per distinct row m among the thread's result
 *     registers, B[k][n] once per distinct column n, converted to f32;
 *     acc[r] = fma(A[k][m_r], B[k][n_r], acc[r]) for every result register r
 *
 * Distinct rows are found from the constant (register) part of each result
 * register's row: registers with the same constant part are in the same row
 * in every thread. The result has the accumulator's layout.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t round16(int64_t v) {
    return (v + 15) & ~(int64_t)15;
}

/* Stores every register of an operand at scratch [k][x], x = m (A) or n (B). */
static void store_operand(Cg *cg, const CgVal *v, const LinearLayout *ll, int kdim, int64_t row, const IrType *elem,
                          TgPadding pad, int64_t base) {
    int eb = ir_type_bytes(elem);
    for (int r = 0; r < v->n; r++) {
        LLVMValueRef k = cg_coord(cg, ll, r, kdim), x = cg_coord(cg, ll, r, 1 - kdim);
        LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, k, cg_i32(cg, row), ""), x, "");
        LLVMValueRef off = cg_padded(cg, pad, LLVMBuildMul(cg->b, idx, cg_i32(cg, eb), ""));
        cg_smem_store(cg, v->v[r], elem, LLVMBuildAdd(cg->b, off, cg_i32(cg, base), ""));
    }
}

static LLVMValueRef load_f32(Cg *cg, LLVMValueRef k, LLVMValueRef x, int64_t row, const IrType *elem, TgPadding pad,
                             int64_t base) {
    int eb = ir_type_bytes(elem);
    LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, k, cg_i32(cg, row), ""), x, "");
    LLVMValueRef off = cg_padded(cg, pad, LLVMBuildMul(cg->b, idx, cg_i32(cg, eb), ""));
    LLVMValueRef v = cg_smem_load(cg, elem, LLVMBuildAdd(cg->b, off, cg_i32(cg, base), ""));
    return LLVMBuildFPCast(cg->b, v, cg->t_f32, "");
}

/* For each register of the result, the index of its distinct constant part
 * along dim; returns the number of distinct parts, first[i] the first
 * register with part i. */
static int distinct(const LinearLayout *ll, int dim, int n, int *index, int *first) {
    int count = 0;
    for (int r = 0; r < n; r++) {
        int64_t c[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, r, c);
        int found = -1;
        for (int i = 0; i < count && found < 0; i++) {
            int64_t o[IR_MAX_RANK];
            ll_apply_in(ll, LL_REG, first[i], o);
            if (o[dim] == c[dim])
                found = i;
        }
        if (found < 0) {
            first[count] = r;
            found = count++;
        }
        index[r] = found;
    }
    return count;
}

/* ---- tensor cores: mma.sync ---- */


/* The b32 word w when lo and hi are elements 0 and 1 of bitcast(w) to a
 * vector of two (how ldmatrix results are split into elements), else NULL. */
static LLVMValueRef unsplit_word(LLVMValueRef lo, LLVMValueRef hi) {
    if (!LLVMIsAExtractElementInst(lo) || !LLVMIsAExtractElementInst(hi))
        return NULL;
    LLVMValueRef vec = LLVMGetOperand(lo, 0), i0 = LLVMGetOperand(lo, 1), i1 = LLVMGetOperand(hi, 1);
    if (LLVMGetOperand(hi, 0) != vec || !LLVMIsAConstantInt(i0) || !LLVMIsAConstantInt(i1) ||
        LLVMConstIntGetZExtValue(i0) != 0 || LLVMConstIntGetZExtValue(i1) != 1 || !LLVMIsABitCastInst(vec))
        return NULL;
    LLVMValueRef w = LLVMGetOperand(vec, 0);
    return LLVMGetTypeKind(LLVMTypeOf(w)) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(LLVMTypeOf(w)) == 32 ? w
                                                                                                            : NULL;
}

/* Two 16-bit elements as one b32 register, the first in the low half: the
 * word they were split from when they come straight from one (ldmatrix), so
 * that LLVM is not handed a split and a re-pack to fold away. */
static LLVMValueRef pack_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi) {
    LLVMValueRef w = unsplit_word(lo, hi);
    if (w)
        return w;
    if ((w = cg_convert_pair(cg, lo, hi)))
        return w;
    LLVMValueRef v = LLVMGetUndef(LLVMVectorType(LLVMTypeOf(lo), 2));
    v = LLVMBuildInsertElement(cg->b, v, lo, cg_i32(cg, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, hi, cg_i32(cg, 1), "");
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* v as the intrinsic's word type (<2 x half> or i32), looking through a
 * bitcast from it. */
static LLVMValueRef as_word(Cg *cg, LLVMValueRef v, LLVMTypeRef word) {
    if (LLVMIsABitCastInst(v) && LLVMTypeOf(LLVMGetOperand(v, 0)) == word)
        return LLVMGetOperand(v, 0);
    return LLVMTypeOf(v) == word ? v : LLVMBuildBitCast(cg->b, v, word, "");
}

/* The b32 registers of one operand fragment, as words of type `word`:
 * pairs of 16-bit elements, or f32 elements as they are (tf32 reads their
 * upper 19 bits). */
static void fragment_words(Cg *cg, const CgVal *v, const int *regs, int elems, bool pairs, LLVMTypeRef word,
                           LLVMValueRef *out) {
    if (pairs) {
        for (int j = 0; j < elems / 2; j++)
            out[j] = as_word(cg, pack_pair(cg, cg_reg(v, regs[2 * j]), cg_reg(v, regs[2 * j + 1])), word);
    } else {
        for (int j = 0; j < elems; j++)
            out[j] = as_word(cg, cg_reg(v, regs[j]), word);
    }
}

/* An operand's registers; *d is set when its local_load was left to the dot
 * (lower_shared.c), whose registers are then loaded on demand. */
static CgVal *operand(Cg *cg, const IrValue *v, CgDeferred **d) {
    *d = NULL;
    if (v->def && cg_local_load_deferred(cg, v->def)) {
        *d = cg_deferred_begin(cg, v->def);
        return cg_deferred_val(*d);
    }
    return cg_get(cg, v);
}

static void need(Cg *cg, CgDeferred *d, const int *regs, int n) {
    for (int i = 0; d && i < n; i++)
        cg_deferred_need(cg, d, regs[i]);
}

/* The dot as mma.sync instructions: for each k step, for each instruction
 * tile (m16 x n8) the thread's result holds, one mma whose A, B and C
 * registers are found through the fragment tables (see mma_plan). Deferred
 * operands are loaded per k step, just before its instructions. */
static bool lower_mma(Cg *cg, IrOp *op, const TgMmaPlan *p) {
    const LinearLayout *lc = cg_ll(cg, op->results[0]->type, op);
    if (!lc)
        return false;
    CgDeferred *da, *db;
    CgVal *a = operand(cg, op->operands[0], &da), *b = operand(cg, op->operands[1], &db);
    CgVal *c = cg_get(cg, op->operands[2]);
    bool pairs = op->operands[0]->type->elem->kind != IR_F32;
    int tiles_m = p->c.tiles[0], tiles_n = p->c.tiles[1];
    CgVal *res = cg_new_val(cg, c->n, lc);
    for (int r = 0; r < c->n; r++)
        res->v[r] = cg_reg(c, r);
    /* f16 operands are <2 x half> words to the intrinsic, bf16 and tf32 ones i32 */
    LLVMTypeRef word = op->operands[0]->type->elem->kind == IR_F16 ? LLVMVectorType(cg->t_f16, 2) : cg->t_i32;
    LLVMValueRef *aw = ARENA_ARRAY(&cg->arena, LLVMValueRef, 4 * tiles_m);
    LLVMValueRef *bw = ARENA_ARRAY(&cg->arena, LLVMValueRef, 2 * tiles_n);
    for (int k = 0; k < p->ksteps; k++) {
        for (int tm = 0; tm < tiles_m; tm++) {
            const int *ra = tg_frag_regs(&p->a, tm, k);
            need(cg, da, ra, ra ? p->a.elems : 0);
            if (ra)
                fragment_words(cg, a, ra, p->a.elems, pairs, word, aw + 4 * tm);
        }
        for (int tn = 0; tn < tiles_n; tn++) {
            const int *rb = tg_frag_regs(&p->b, k, tn);
            need(cg, db, rb, rb ? p->b.elems : 0);
            if (rb)
                fragment_words(cg, b, rb, p->b.elems, pairs, word, bw + 2 * tn);
        }
        for (int tm = 0; tm < tiles_m; tm++)
            for (int tn = 0; tn < tiles_n; tn++) {
                const int *rc = tg_frag_regs(&p->c, tm, tn);
                if (!rc)
                    continue; /* not this thread's tile */
                LLVMValueRef args[10] = {aw[4 * tm], aw[4 * tm + 1], aw[4 * tm + 2], aw[4 * tm + 3],
                                         bw[2 * tn], bw[2 * tn + 1]};
                for (int j = 0; j < 4; j++)
                    args[6 + j] = res->v[rc[j]];
                LLVMValueRef d = cg_warp_intrinsic(cg, p->intrinsic, NULL, 0, args, 10);
                for (int j = 0; j < 4; j++)
                    res->v[rc[j]] = LLVMBuildExtractValue(cg->b, d, (unsigned)j, "");
            }
    }
    cg_set(cg, op->results[0], res);
    return true;
}

/* ---- Hopper: wgmma (docs/hopper.md, target/wgmma.c) ---- */

/* The shared-window address (i32) of the dynamic shared memory: computed
 * once per kernel, in the entry block. */
static LLVMValueRef smem_window(Cg *cg) {
    if (!cg->smem_window) {
        LLVMValueRef p = LLVMBuildPtrToInt(cg->entry_b, cg->smem, cg->t_i64, "");
        cg->smem_window = LLVMBuildTrunc(cg->entry_b, p, cg->t_i32, "smem.window");
    }
    return cg->smem_window;
}

/* A shared operand of one warp_group_dot: its buffer, this thread's
 * warpgroup's part of the offset, and the descriptor's low word at the
 * buffer's start, computed once for every sub-tile the dot reads. */
typedef struct WgOperand {
    const TgWgmmaOperand *o;
    LLVMValueRef base; /* the buffer's byte offset in the dynamic shared memory */
    LLVMValueRef wg;   /* this warpgroup's rows (A) or columns (B): XORed in */
    int64_t wg_bits;   /* every bit wg may set */
    LLVMValueRef lo;   /* low word of the descriptor at base ^ wg, or NULL */
} WgOperand;

/* Operand o of a dot, in the buffer at byte offset base. The run-time part
 * of its offset is this thread's warpgroup's rows (A: dim 0 of the result)
 * or columns (B: dim 1), the XOR of the offsets of the result's warp bases
 * beyond the first two. */
static void wg_operand(Cg *cg, const TgWgmmaPlan *p, WgOperand *w, const TgWgmmaOperand *o, LLVMValueRef base,
                       int dim, bool b_operand) {
    int64_t off[2][LL_MAX_BITS];
    memset(off, 0, sizeof off);
    memset(w, 0, sizeof *w);
    w->o = o;
    w->base = base;
    for (int k = 2; k < p->lc.num_bits[LL_WARP]; k++) {
        int64_t x = p->lc.bases[LL_WARP][k][dim];
        off[1][k] = b_operand ? tg_wgmma_byte_offset(o, 0, x) : tg_wgmma_byte_offset(o, x, 0);
        w->wg_bits |= off[1][k];
    }
    w->wg = cg_thread_offset(cg, off, true);
}

/* The descriptor's start address field (bits 4..17 of the shared-window
 * address window + base + off), as an i32. */
static LLVMValueRef start_field(Cg *cg, LLVMValueRef window, LLVMValueRef base, LLVMValueRef off) {
    LLVMBuilderRef b = cg->b;
    LLVMValueRef addr = LLVMBuildAdd(b, LLVMBuildAdd(b, window, base, ""), off, "");
    return LLVMBuildLShr(b, LLVMBuildAnd(b, addr, cg_i32(cg, 0x3FFFF), ""), cg_i32(cg, 4), "");
}

/* The descriptor (i64) of a shared operand whose sub-tile starts at
 * constant element (r, c) XOR the warpgroup part. When the sub-tile's
 * offset shares no bit with the warpgroup part (XOR is then addition) and
 * is a multiple of 16 bytes, the descriptor is the buffer's low word,
 * computed once per dot, plus offset / 16: one add per wgmma instead of
 * the whole encoding (shared addresses stay below 2^18, so the add never
 * carries out of the start address field). Otherwise the address is
 * encoded in full. */
static LLVMValueRef descriptor(Cg *cg, WgOperand *w, LLVMValueRef window, int64_t r, int64_t c) {
    LLVMBuilderRef b = cg->b;
    int64_t off = tg_wgmma_byte_offset(w->o, r, c);
    uint64_t fixed = tg_wgmma_desc(w->o, 0);
    LLVMValueRef lo;
    if ((off & w->wg_bits) == 0 && off % 16 == 0) {
        if (!w->lo)
            w->lo = LLVMBuildOr(b, start_field(cg, window, w->base, w->wg),
                                cg_i32(cg, (int32_t)(uint32_t)(fixed & 0xFFFFFFFF)), "desc.lo");
        lo = LLVMBuildAdd(b, w->lo, cg_i32(cg, (int32_t)(off / 16)), "");
        fixed &= ~(uint64_t)0xFFFFFFFF; /* the low word is in lo */
    } else {
        lo = start_field(cg, window, w->base, LLVMBuildXor(b, w->wg, cg_i32(cg, (int32_t)off), ""));
    }
    return LLVMBuildOr(b, LLVMBuildZExt(b, lo, cg->t_i64, ""), cg_i64(cg, (int64_t)fixed), "");
}

/* The inline PTX `text` (with no operands of its own) with every value of
 * vals[0..n) passed through it, tied in and out (f32 and i32 values; vals
 * gets the outputs), so that LLVM reads them only after it:
 * wgmma.wait_group before anything reads a wgmma's result. */
static void tied_asm(Cg *cg, const char *text, LLVMValueRef *vals, int n) {
    if (n == 0) {
        cg_asm(cg, cg->t_void, text, "~{memory}", NULL, 0, true);
        return;
    }
    Buf cons;
    buf_init(&cons);
    LLVMTypeRef *tys = ARENA_ARRAY(&cg->arena, LLVMTypeRef, n);
    for (int i = 0; i < n; i++) {
        tys[i] = LLVMTypeOf(vals[i]);
        tc_assert(tys[i] == cg->t_f32 || tys[i] == cg->t_i32);
        buf_printf(&cons, "%s=%s", i ? "," : "", tys[i] == cg->t_f32 ? "f" : "r");
    }
    for (int i = 0; i < n; i++)
        buf_printf(&cons, ",%d", i);
    buf_puts(&cons, ",~{memory}");
    LLVMTypeRef st = LLVMStructTypeInContext(cg->ctx, tys, (unsigned)n, 0);
    LLVMValueRef res = cg_asm(cg, st, text, cons.data, vals, n, true);
    for (int i = 0; i < n; i++)
        vals[i] = LLVMBuildExtractValue(cg->b, res, (unsigned)i, "");
    buf_free(&cons);
}

/* `wgmma.wait_group pending` with every f32 and i32 register of vals
 * passed through (a wgmma's results are f32; other values, which no wgmma
 * writes, need no ordering and stay as they are). */
static void wait_group(Cg *cg, int pending, CgVal **vals, int num_vals) {
    int total = 0;
    for (int i = 0; i < num_vals; i++)
        total += vals[i]->n;
    LLVMValueRef *flat = ARENA_ARRAY(&cg->arena, LLVMValueRef, total > 0 ? total : 1);
    int n = 0;
    for (int i = 0; i < num_vals; i++)
        for (int r = 0; r < vals[i]->n; r++) {
            LLVMValueRef x = cg_reg(vals[i], r);
            if (LLVMTypeOf(x) == cg->t_f32 || LLVMTypeOf(x) == cg->t_i32)
                flat[n++] = x;
        }
    char text[64];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
    tied_asm(cg, text, flat, n);
    int k = 0;
    for (int i = 0; i < num_vals; i++)
        for (int r = 0; r < vals[i]->n; r++) {
            LLVMValueRef x = cg_reg(vals[i], r);
            if (LLVMTypeOf(x) == cg->t_f32 || LLVMTypeOf(x) == cg->t_i32)
                vals[i]->v[r] = flat[k++];
        }
}

bool cg_lower_warp_group_dot(Cg *cg, IrOp *op) {
    int cap = tg_wgmma_plan_cap(op);
    TgWgmmaPlan *p = ARENA_NEW(&cg->arena, TgWgmmaPlan);
    int *storage = ARENA_ARRAY(&cg->arena, int, 2 * (size_t)(cap > 0 ? cap : 1));
    const char *why = "not a 2-D dot";
    if (!cap || !tg_wgmma_plan(op, cg->num_warps, p, storage, cap, &why))
        return cg_error(cg, op, "internal error: warp_group_dot does not fit wgmma: %s", why);
    const LinearLayout *lc = cg_ll(cg, op->results[0]->type, op);
    if (!lc)
        return false;
    CgVal *c = cg_get(cg, op->operands[2]);
    CgVal *res = cg_new_val(cg, c->n, lc);
    for (int r = 0; r < c->n; r++)
        res->v[r] = cg_reg(c, r);
    LLVMValueRef window = smem_window(cg);
    WgOperand wa, wb;
    wg_operand(cg, p, &wb, &p->sb, cg_get(cg, op->operands[1])->v[0], 1, true);
    CgVal *a = NULL;
    if (p->a_regs) {
        a = cg_get(cg, op->operands[0]);
    } else {
        wg_operand(cg, p, &wa, &p->sa, cg_get(cg, op->operands[0])->v[0], 0, false);
    }
    int per = p->n / 2;
    /* A in registers: every fragment word of the (k step, tile) pairs. */
    bool zero = ir_value_is_zero(op->operands[2]);
    int na = p->a_regs ? 4 * p->ksteps * p->tiles_m : 0;
    LLVMValueRef *aw = ARENA_ARRAY(&cg->arena, LLVMValueRef, na > 0 ? na : 1);
    for (int i = 0; i < na; i++)
        aw[i] = NULL;
    if (p->a_regs)
        for (int ks = 0; ks < p->ksteps; ks++)
            for (int tm = 0; tm < p->tiles_m; tm++) {
                const int *ra = tg_frag_regs(&p->a, tm * 4, ks);
                if (ra)
                    fragment_words(cg, a, ra, 8, true, cg->t_i32, aw + 4 * (ks * p->tiles_m + tm));
            }
    /* The whole dot is one inline asm: wgmma.fence, every (k step, tile)
     * wgmma in order, commit_group. Its operands: this warpgroup's
     * accumulator registers as outputs, tied to inputs unless the
     * accumulator is zero (the first k step then computes D = A B,
     * scale-d 0, and nothing is read), then each instruction's A (4
     * registers or a descriptor) and B descriptor. Being inputs of the
     * asm, the A fragments and the accumulator are written before the
     * fence, as wgmma requires (else ptxas adds fences of its own,
     * C7519). One statement instead of one per instruction and two
     * pass-through fences: LLVM's code generator handles each asm
     * operand once, and the accumulator of a long k loop is not copied
     * from statement to statement (a third of the back end's time on
     * attention at head dim 256). */
    int *slot = ARENA_ARRAY(&cg->arena, int, res->n > 0 ? res->n : 1); /* register -> output operand, or -1 */
    int *order = ARENA_ARRAY(&cg->arena, int, res->n > 0 ? res->n : 1);
    int nout = 0;
    for (int r = 0; r < res->n; r++)
        slot[r] = -1;
    for (int t = 0; t < p->tiles_m * p->tiles_n; t++) {
        const int *acc = p->acc + t * per;
        if (acc[0] < 0)
            continue; /* another warpgroup's tile */
        for (int i = 0; i < per; i++)
            if (slot[acc[i]] < 0)
                order[nout] = acc[i], slot[acc[i]] = nout++;
    }
    int cap_args = (zero ? 0 : nout) + p->ksteps * p->tiles_m * p->tiles_n * 5;
    LLVMValueRef *args = ARENA_ARRAY(&cg->arena, LLVMValueRef, cap_args > 0 ? cap_args : 1);
    int nargs = 0;
    Buf text, cons;
    buf_init(&text);
    buf_init(&cons);
    buf_puts(&text, "wgmma.fence.sync.aligned;\n");
    for (int i = 0; i < nout; i++)
        buf_printf(&cons, "%s=f", i ? "," : "");
    if (!zero)
        for (int i = 0; i < nout; i++) {
            args[nargs++] = res->v[order[i]];
            buf_printf(&cons, ",%d", i);
        }
    bool ok = true;
    for (int ks = 0; ks < p->ksteps && ok; ks++)
        for (int tm = 0; tm < p->tiles_m && ok; tm++)
            for (int tn = 0; tn < p->tiles_n; tn++) {
                const int *acc = p->acc + (tm * p->tiles_n + tn) * per;
                if (acc[0] < 0)
                    continue;
                buf_printf(&text, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {", p->n, p->dtype, p->dtype);
                for (int i = 0; i < per; i++)
                    buf_printf(&text, "%s$%d", i ? ", " : "", slot[acc[i]]);
                int first = nout + nargs;
                if (p->a_regs) {
                    LLVMValueRef *w = aw + 4 * (ks * p->tiles_m + tm);
                    if (!(ok = w[0] != NULL))
                        break;
                    for (int j = 0; j < 4; j++)
                        args[nargs++] = w[j];
                    buf_puts(&cons, ",r,r,r,r");
                    buf_printf(&text, "}, {$%d, $%d, $%d, $%d}, $%d, %d, 1, 1, %d;\n", first, first + 1, first + 2,
                               first + 3, first + 4, zero && ks == 0 ? 0 : 1, p->sb.mn_major);
                } else {
                    args[nargs++] = descriptor(cg, &wa, window, (int64_t)tm * 64, (int64_t)ks * 16);
                    buf_puts(&cons, ",l");
                    buf_printf(&text, "}, $%d, $%d, %d, 1, 1, %d, %d;\n", first, first + 1, zero && ks == 0 ? 0 : 1,
                               p->sa.mn_major, p->sb.mn_major);
                }
                args[nargs++] = descriptor(cg, &wb, window, (int64_t)ks * 16, (int64_t)tn * p->n);
                buf_puts(&cons, ",l");
            }
    buf_puts(&text, "wgmma.commit_group.sync.aligned;");
    buf_puts(&cons, ",~{memory}");
    if (ok) {
        LLVMTypeRef *outs = ARENA_ARRAY(&cg->arena, LLVMTypeRef, nout > 0 ? nout : 1);
        for (int i = 0; i < nout; i++)
            outs[i] = cg->t_f32;
        LLVMTypeRef st = LLVMStructTypeInContext(cg->ctx, outs, (unsigned)nout, 0);
        /* No output (no tile of this warpgroup's) means no operand either:
         * cons is then ",~{memory}", without its leading comma. */
        LLVMValueRef d = cg_asm(cg, nout ? st : cg->t_void, text.data, cons.data + (nout ? 0 : 1), args, nargs, true);
        for (int i = 0; i < nout; i++)
            res->v[order[i]] = LLVMBuildExtractValue(cg->b, d, (unsigned)i, "");
    }
    buf_free(&text);
    buf_free(&cons);
    if (!ok)
        return cg_error(cg, op, "internal error: wgmma A fragment missing");
    if (ir_op_get_int(op, "async", 0) == 0)
        wait_group(cg, 0, &res, 1);
    cg_set(cg, op->results[0], res);
    return true;
}

bool cg_lower_warp_group_dot_wait(Cg *cg, IrOp *op) {
    CgVal **vals = ARENA_ARRAY(&cg->arena, CgVal *, op->num_operands);
    for (int i = 0; i < op->num_operands; i++) {
        CgVal *v = cg_get(cg, op->operands[i]);
        vals[i] = cg_new_val(cg, v->n, v->ll);
        for (int r = 0; r < v->n; r++)
            vals[i]->v[r] = cg_reg(v, r);
    }
    wait_group(cg, (int)ir_op_get_int(op, "pending", 0), vals, op->num_operands);
    for (int i = 0; i < op->num_results; i++)
        cg_set(cg, op->results[i], vals[i]);
    return true;
}

bool cg_lower_dot(Cg *cg, IrOp *op) {
    const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->operands[2]->type;
    if (ta->rank != 2)
        return cg_error(cg, op, "batched (3-D) dot is not supported by codegen yet");
    int cap = tg_mma_plan_cap(op);
    if (cap) {
        TgMmaPlan *p = ARENA_NEW(&cg->arena, TgMmaPlan);
        int *storage = ARENA_ARRAY(&cg->arena, int, 3 * (size_t)cap);
        if (tg_mma_plan(op, cg->num_warps, p, storage, cap))
            return lower_mma(cg, op, p);
    }
    const LinearLayout *la = cg_ll(cg, ta, op), *lb = la ? cg_ll(cg, tb, op) : NULL;
    const LinearLayout *lc = lb ? cg_ll(cg, tc, op) : NULL;
    if (!lc)
        return false;
    int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
    int ea = ir_type_bytes(ta->elem), eb = ir_type_bytes(tb->elem);
    TgPadding pa = tg_scratch_padding(M * ea, ea), pb = tg_scratch_padding(N * eb, eb);
    int64_t base_a = cg_scratch_base(op);
    int64_t base_b = base_a + round16(tg_padded_offset(pa, K * M * ea));
    CgVal *a = cg_get(cg, op->operands[0]), *b = cg_get(cg, op->operands[1]), *c = cg_get(cg, op->operands[2]);

    cg_barrier(cg);
    store_operand(cg, a, la, 1, M, ta->elem, pa, base_a);
    store_operand(cg, b, lb, 0, N, tb->elem, pb, base_b);
    cg_barrier(cg);

    int n = c->n;
    int *mi = ARENA_ARRAY(&cg->arena, int, n), *ni = ARENA_ARRAY(&cg->arena, int, n);
    int *mf = ARENA_ARRAY(&cg->arena, int, n), *nf = ARENA_ARRAY(&cg->arena, int, n);
    int nm = distinct(lc, 0, n, mi, mf), nn = distinct(lc, 1, n, ni, nf);
    LLVMValueRef *ms = ARENA_ARRAY(&cg->arena, LLVMValueRef, nm), *ns = ARENA_ARRAY(&cg->arena, LLVMValueRef, nn);
    for (int i = 0; i < nm; i++)
        ms[i] = cg_coord(cg, lc, mf[i], 0);
    for (int i = 0; i < nn; i++)
        ns[i] = cg_coord(cg, lc, nf[i], 1);

    LLVMBuilderRef bld = cg->b;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(bld), loop = cg_block(cg, "dot.k"), exit = cg_block(cg, "dot.end");
    LLVMBuildBr(bld, loop);
    LLVMPositionBuilderAtEnd(bld, loop);
    LLVMValueRef k = LLVMBuildPhi(bld, cg->t_i32, "k");
    LLVMValueRef *acc = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    for (int r = 0; r < n; r++)
        acc[r] = LLVMBuildPhi(bld, cg->t_f32, "");
    LLVMValueRef *av = ARENA_ARRAY(&cg->arena, LLVMValueRef, nm), *bv = ARENA_ARRAY(&cg->arena, LLVMValueRef, nn);
    for (int i = 0; i < nm; i++)
        av[i] = load_f32(cg, k, ms[i], M, ta->elem, pa, base_a);
    for (int i = 0; i < nn; i++)
        bv[i] = load_f32(cg, k, ns[i], N, tb->elem, pb, base_b);
    CgVal *res = cg_new_val(cg, n, lc);
    LLVMTypeRef over[1] = {cg->t_f32};
    for (int r = 0; r < n; r++) {
        LLVMValueRef args[3] = {av[mi[r]], bv[ni[r]], acc[r]};
        res->v[r] = cg_intrinsic(cg, "llvm.fma", over, 1, args, 3);
    }
    LLVMValueRef k1 = LLVMBuildAdd(bld, k, cg_i32(cg, 1), "");
    LLVMSetNUW(k1, 1);
    LLVMSetNSW(k1, 1);
    LLVMBuildCondBr(bld, LLVMBuildICmp(bld, LLVMIntSLT, k1, cg_i32(cg, K), ""), loop, exit);
    LLVMValueRef zero = cg_i32(cg, 0);
    LLVMAddIncoming(k, &zero, &pre, 1);
    LLVMAddIncoming(k, &k1, &loop, 1);
    for (int r = 0; r < n; r++) {
        LLVMValueRef init = c->v[r];
        LLVMAddIncoming(acc[r], &init, &pre, 1);
        LLVMAddIncoming(acc[r], &res->v[r], &loop, 1);
    }
    LLVMPositionBuilderAtEnd(bld, exit);
    cg_set(cg, op->results[0], res);
    return true;
}
