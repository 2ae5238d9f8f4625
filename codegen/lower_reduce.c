/*
 * lower_reduce.c — reduce {kind = sum|max|min|argmax|argmin, axis} on any
 * distributed layout, read off its LinearLayout.
 *
 * Each basis of the operand's layout either moves the element along the axis
 * (then the elements it pairs must be combined) or does not touch the axis
 * (then it survives into the result). Three steps, from cheap to expensive:
 *
 *   1. registers: for each register bit along the axis, register r combines
 *      with r | bit (a tree, so f32 sums keep their accuracy); the registers
 *      with every axis bit clear hold the thread's partials.
 *   2. lanes: for each lane bit along the axis, a butterfly
 *      shfl.sync.bfly with that bit as the XOR mask (16-bit and smaller
 *      values travel as 32 bits, 64-bit ones as two shuffles); afterwards
 *      every lane of a group holds the group's value.
 *   3. warps, only if some warp bit moves along the axis: barrier (left out
 *      when every earlier access of the scratch's bytes is already behind a
 *      barrier: cg_reduce_scratch_fenced, and allocate-shared gives
 *      consecutive reductions distinct bytes); every
 *      thread stores its partials into scratch at [k][c], k the warp's index
 *      among the 2^w warps of the axis (its axis warp bits, compressed), c
 *      the row-major index of the result coordinate (copies store the same
 *      value to the same address); barrier; every thread loads the 2^w
 *      partials of each of its results and combines them in order k = 0, 1 ...
 *      (so every thread gets bitwise the same value).
 *
 * The partials are then a layout with the axis removed: the operand's bases
 * without the axis coordinate, minus the reduced register bits, which is what
 * #slice<dim = axis> of the operand's layout describes; ll_same_thread_map
 * gives the register order of the result's layout. A 1-D operand reduces to
 * a scalar that every thread holds.
 *
 * argmax and argmin carry (value, index) pairs through the same steps: each
 * register starts with its coordinate along the axis (cg_coord), shuffles
 * and scratch move both (the indices as i32 after the values), and a
 * combination keeps the pair that wins: the larger (smaller) value, a NaN
 * beating any number, and on a tie (equal values, or two NaNs) the smaller
 * index. That order is total, so the result is the first extreme element
 * whatever the order of the combinations.
 *
 * cluster_reduce (at the end of the file) combines one scalar per program of
 * a thread-block cluster through distributed shared memory.
 *
 * Worked example: 64x64 f32, #blocked<spt = [1, 4], tpw = [2, 16],
 * wpc = [4, 1], order = [1, 0]>, sum over axis 1. Registers (0,1) (0,2)
 * (8,0) (16,0) (32,0): bits 0, 1 are along the axis, so 32 registers become
 * 8 partials (rows r, r+8, ... r+56). Lanes (0,4) (0,8) (0,16) (0,32) (1,0):
 * four butterflies, masks 1, 2, 4, 8. Warps (2,0) (4,0) do not touch the
 * axis: no shared memory. The result #slice<dim = 1> has registers (8) (16)
 * (32) and lane (1) (and four zero lane bases: copies).
 */
#include "lower.h"

#include <string.h>

/* i1: does (b, ib) win over (a, ia) for argmax (max) or argmin? */
static LLVMValueRef arg_wins(Cg *cg, bool max, const IrType *elem, LLVMValueRef a, LLVMValueRef ia, LLVMValueRef b,
                             LLVMValueRef ib) {
    LLVMBuilderRef bd = cg->b;
    LLVMValueRef better, tie;
    if (ir_type_is_float(elem)) {
        LLVMValueRef a_nan = LLVMBuildFCmp(bd, LLVMRealUNO, a, a, "");
        LLVMValueRef b_nan = LLVMBuildFCmp(bd, LLVMRealUNO, b, b, "");
        /* unordered-or-greater: b is NaN or above a; a NaN a is beaten by nothing */
        better = LLVMBuildFCmp(bd, max ? LLVMRealUGT : LLVMRealULT, b, a, "");
        better = LLVMBuildAnd(bd, better, LLVMBuildNot(bd, a_nan, ""), "");
        tie = LLVMBuildOr(bd, LLVMBuildFCmp(bd, LLVMRealOEQ, a, b, ""), LLVMBuildAnd(bd, a_nan, b_nan, ""), "");
    } else {
        bool u = elem->kind == IR_I1; /* true is 1 */
        better = LLVMBuildICmp(bd, max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT), b, a, "");
        tie = LLVMBuildICmp(bd, LLVMIntEQ, a, b, "");
    }
    LLVMValueRef first = LLVMBuildICmp(bd, LLVMIntSLT, ib, ia, "");
    return LLVMBuildOr(bd, better, LLVMBuildAnd(bd, tie, first, ""), "");
}

/* *a = *a kind b; for argmax and argmin (ia not NULL) the indices go along. */
static void combine(Cg *cg, const char *kind, const IrType *elem, LLVMValueRef *a, LLVMValueRef *ia, LLVMValueRef b,
                    LLVMValueRef ib) {
    if (!ia) {
        *a = cg_combine(cg, kind, elem, *a, b);
        return;
    }
    LLVMValueRef w = arg_wins(cg, strcmp(kind, "argmax") == 0, elem, *a, *ia, b, ib);
    *a = LLVMBuildSelect(cg->b, w, b, *a, "");
    *ia = LLVMBuildSelect(cg->b, w, ib, *ia, "");
}

static int32_t nonaxis(const LinearLayout *ll, int in, int b, int axis) {
    int32_t any = 0;
    for (int d = 0; d < ll->rank; d++)
        if (d != axis)
            any |= ll->bases[in][b][d];
    return any;
}

bool cg_lower_reduce(Cg *cg, IrOp *op) {
    const IrType *st = op->operands[0]->type, *rt = op->results[0]->type;
    const IrType *elem = st->elem;
    int axis = (int)ir_op_get_int(op, "axis", 0);
    const char *kind = ir_op_get_word(op, "kind");
    if (!kind || (strcmp(kind, "sum") && strcmp(kind, "max") && strcmp(kind, "min") && strcmp(kind, "argmax") &&
                  strcmp(kind, "argmin")))
        return cg_error(cg, op, "unknown reduce kind '%s' (sum, max, min, argmax, argmin)", kind ? kind : "?");
    bool arg = ir_reduce_is_arg(op);
    const LinearLayout *ll = cg_ll(cg, st, op);
    if (!ll)
        return false;
    unsigned along[LL_NUM_IN] = {0, 0, 0};
    for (int in = 0; in < LL_NUM_IN; in++)
        for (int b = 0; b < ll->num_bits[in]; b++) {
            if (!ll->bases[in][b][axis])
                continue;
            if (nonaxis(ll, in, b, axis))
                return cg_error(cg, op,
                                "internal error: reduce over a layout whose bases move the axis and another "
                                "dimension at once");
            along[in] |= 1u << b;
        }
    CgVal *src = cg_get(cg, op->operands[0]);
    int n = src->n;
    LLVMValueRef *vals = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    memcpy(vals, src->v, sizeof(LLVMValueRef) * (size_t)n);
    LLVMValueRef *ivals = NULL; /* argmax, argmin: the index of each value along the axis */
    if (arg) {
        ivals = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
        for (int r = 0; r < n; r++)
            ivals[r] = cg_coord(cg, ll, r, axis);
    }

    /* 1. in-thread */
    unsigned done = 0;
    for (int b = 0; b < ll->num_bits[LL_REG]; b++) {
        if (!(along[LL_REG] >> b & 1))
            continue;
        for (int r = 0; r < n; r++)
            if (!(r >> b & 1) && !(r & done))
                combine(cg, kind, elem, &vals[r], arg ? &ivals[r] : NULL, vals[r | 1 << b],
                        arg ? ivals[r | 1 << b] : NULL);
        done |= 1u << b;
    }
    int np = 0;
    int *kept = ARENA_ARRAY(&cg->arena, int, n);
    for (int r = 0; r < n; r++)
        if (!(r & along[LL_REG]))
            kept[np++] = r;
    LLVMValueRef *part = ARENA_ARRAY(&cg->arena, LLVMValueRef, np);
    LLVMValueRef *ipart = ARENA_ARRAY(&cg->arena, LLVMValueRef, np);
    for (int i = 0; i < np; i++) {
        part[i] = vals[kept[i]];
        ipart[i] = arg ? ivals[kept[i]] : NULL;
    }

    /* 2. across lanes */
    for (int b = 0; b < ll->num_bits[LL_LANE]; b++)
        if (along[LL_LANE] >> b & 1)
            for (int i = 0; i < np; i++) {
                LLVMValueRef o = cg_shfl_xor(cg, part[i], 1 << b);
                LLVMValueRef io = arg ? cg_shfl_xor(cg, ipart[i], 1 << b) : NULL;
                combine(cg, kind, elem, &part[i], arg ? &ipart[i] : NULL, o, io);
            }

    /* 3. across warps, through scratch */
    int64_t num_out = rt->kind == IR_TILE ? ir_type_numel(rt) : 1;
    if (along[LL_WARP]) {
        LLVMBuilderRef b = cg->b;
        int eb = ir_type_bytes(elem);
        int64_t base = cg_scratch_base(op);
        LLVMValueRef k = cg_i32(cg, 0);
        int nk = 0;
        for (int w = 0; w < ll->num_bits[LL_WARP]; w++) {
            if (!(along[LL_WARP] >> w & 1))
                continue;
            LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, cg->warp, cg_i32(cg, w), ""), cg_i32(cg, 1), "");
            k = LLVMBuildOr(b, k, LLVMBuildShl(b, bit, cg_i32(cg, nk), ""), "");
            nk++;
        }
        LLVMValueRef *lin = ARENA_ARRAY(&cg->arena, LLVMValueRef, np);
        int64_t oshape[IR_MAX_RANK];
        int orank = 0;
        for (int d = 0; d < ll->rank; d++)
            if (d != axis)
                oshape[orank++] = ll->shape[d];
        for (int i = 0; i < np; i++) {
            LLVMValueRef c[IR_MAX_RANK];
            for (int d = 0, o = 0; d < ll->rank; d++)
                if (d != axis)
                    c[o++] = cg_coord(cg, ll, kept[i], d);
            lin[i] = cg_linear_index(cg, orank, oshape, c);
        }
        /* argmax, argmin: the i32 indices after the values */
        int64_t ibase = base + tg_reduce_index_offset(((int64_t)1 << nk) * num_out, eb);
        if (!cg_reduce_scratch_fenced(op, cg->num_warps)) /* an earlier read of these bytes may still run */
            cg_barrier(cg);
        LLVMValueRef kbase = LLVMBuildMul(b, k, cg_i32(cg, num_out), "");
        for (int i = 0; i < np; i++) {
            LLVMValueRef idx = LLVMBuildAdd(b, kbase, lin[i], "");
            LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, idx, cg_i32(cg, eb), ""), cg_i32(cg, base), "");
            cg_smem_store(cg, part[i], elem, off);
            if (arg)
                cg_smem_store(cg, ipart[i], ir_type_elem(rt),
                              LLVMBuildAdd(b, LLVMBuildMul(b, idx, cg_i32(cg, 4), ""), cg_i32(cg, ibase), ""));
        }
        cg_barrier(cg);
        for (int i = 0; i < np; i++) {
            LLVMValueRef acc = NULL, iacc = NULL;
            for (int kk = 0; kk < 1 << nk; kk++) {
                LLVMValueRef idx = LLVMBuildAdd(b, cg_i32(cg, kk * num_out), lin[i], "");
                LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, idx, cg_i32(cg, eb), ""), cg_i32(cg, base), "");
                LLVMValueRef v = cg_smem_load(cg, elem, off);
                LLVMValueRef iv = NULL;
                if (arg)
                    iv = cg_smem_load(cg, ir_type_elem(rt),
                                      LLVMBuildAdd(b, LLVMBuildMul(b, idx, cg_i32(cg, 4), ""), cg_i32(cg, ibase), ""));
                if (!acc) {
                    acc = v;
                    iacc = iv;
                } else {
                    combine(cg, kind, elem, &acc, arg ? &iacc : NULL, v, iv);
                }
            }
            part[i] = acc;
            ipart[i] = iacc;
        }
    }
    if (arg) /* the result is the indices */
        memcpy(part, ipart, sizeof(LLVMValueRef) * (size_t)np);

    /* 4. the result's register order */
    if (rt->kind != IR_TILE) {
        if (np != 1)
            return cg_error(cg, op, "internal error: reducing to a scalar left %d partials", np);
        CgVal *res = cg_new_val(cg, 1, NULL);
        res->v[0] = part[0];
        cg_set(cg, op->results[0], res);
        return true;
    }
    const LinearLayout *rl = cg_ll(cg, rt, op);
    if (!rl)
        return false;
    LinearLayout mid;
    memset(&mid, 0, sizeof mid);
    mid.rank = ll->rank - 1;
    for (int d = 0, o = 0; d < ll->rank; d++)
        if (d != axis)
            mid.shape[o++] = ll->shape[d];
    for (int in = 0; in < LL_NUM_IN; in++)
        for (int b = 0; b < ll->num_bits[in]; b++) {
            if (in == LL_REG && (along[LL_REG] >> b & 1))
                continue;
            int32_t *dst = mid.bases[in][mid.num_bits[in]++];
            for (int d = 0, o = 0; d < ll->rank; d++)
                if (d != axis)
                    dst[o++] = ll->bases[in][b][d];
        }
    int nr = ll_num_regs(rl);
    int *map = ARENA_ARRAY(&cg->arena, int, nr);
    bool keep[IR_MAX_RANK] = {true, true, true, true};
    if (!ll_same_thread_map(&mid, rl, keep, map))
        return cg_error(cg, op,
                        "internal error: the reduce result's layout is not the operand's layout sliced at "
                        "the axis");
    CgVal *res = cg_new_val(cg, nr, rl);
    for (int r = 0; r < nr; r++)
        res->v[r] = part[map[r]];
    cg_set(cg, op->results[0], res);
    return true;
}

/* The threads of every program of the cluster arrive, then wait for all.
 * An arrive releases and a wait acquires at cluster scope by default (the
 * explicit .release / .acquire need PTX 8.0, sm_90's PTX is 7.8): the
 * shared-memory stores before it are visible to the cluster's loads after. */
static void cluster_sync(Cg *cg) {
    cg_asm(cg, cg->t_void, "barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;", "", NULL, 0, true);
}

/* cluster_reduce {kind, ctas} (sm_90): thread 0 of each program puts its
 * value in the op's scratch; after a cluster barrier every thread reads the
 * ctas values through distributed shared memory (mapa + ld.shared::cluster)
 * in rank order and combines them, so every program gets bitwise the same
 * result; a second barrier keeps each program's scratch (and the program)
 * alive until every program has read it. The barrier before the store
 * orders it after this program's earlier readers of the scratch bytes. */
bool cg_lower_cluster_reduce(Cg *cg, IrOp *op) {
    int64_t ctas = ir_op_get_int(op, "ctas", 1);
    const char *kind = ir_op_get_word(op, "kind");
    const IrType *elem = op->operands[0]->type;
    CgVal *x = cg_get(cg, op->operands[0]);
    CgVal *r = cg_new_val(cg, 1, NULL);
    if (!x)
        return false;
    if (ctas == 1) {
        r->v[0] = cg_reg(x, 0);
        cg_set(cg, op->results[0], r);
        return true;
    }
    if (cg->target->sm < 90)
        return cg_error(cg, op, "cluster_%s over %lld programs needs thread-block clusters (sm_90 or later), not sm_%d",
                        kind, (long long)ctas, cg->target->sm);
    if (cg->barrier_threads)
        return cg_error(cg, op, "cluster_%s cannot be used in a warp-specialized kernel", kind);
    LLVMValueRef off = cg_i32(cg, cg_scratch_base(op));
    cg_barrier(cg);
    LLVMBasicBlockRef cont = cg_begin_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""), "cluster.put");
    cg_smem_store(cg, cg_reg(x, 0), elem, off);
    cg_end_if(cg, cont);
    cluster_sync(cg);
    LLVMValueRef addr = LLVMBuildPtrToInt(cg->b, cg_smem_ptr(cg, off), cg->t_i32, "");
    bool f = elem->kind == IR_F32;
    LLVMTypeRef t = f ? cg->t_f32 : cg->t_i32;
    const char *text = f ? "{\n\t.reg .b32 a;\n\tmapa.shared::cluster.u32 a, $1, $2;\n\tld.shared::cluster.f32 $0, [a];\n\t}"
                         : "{\n\t.reg .b32 a;\n\tmapa.shared::cluster.u32 a, $1, $2;\n\tld.shared::cluster.b32 $0, [a];\n\t}";
    LLVMValueRef acc = NULL;
    for (int64_t rank = 0; rank < ctas; rank++) {
        LLVMValueRef args[2] = {addr, cg_i32(cg, rank)};
        LLVMValueRef v = cg_asm(cg, t, text, f ? "=f,r,r" : "=r,r,r", args, 2, true);
        acc = acc ? cg_combine(cg, kind, elem, acc, v) : v;
    }
    cluster_sync(cg);
    r->v[0] = acc;
    cg_set(cg, op->results[0], r);
    return true;
}
