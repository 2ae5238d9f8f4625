/*
 * lower_dot.c — dot(a[MxK], b[KxN], acc[MxN] f32) with FMA instructions.
 *
 * The path for dots that do not use tensor cores, for any layouts of the
 * three operands: correct and simple rather than fast.
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

static int64_t round16(int64_t v) {
    return (v + 15) & ~(int64_t)15;
}

/* Stores every register of an operand at scratch [k][x], x = m (A) or n (B). */
static void store_operand(Cg *cg, const CgVal *v, const LinearLayout *ll, int kdim, int64_t row, const IrType *elem,
                          CgPadding pad, int64_t base) {
    int eb = cg_elem_bytes(elem);
    for (int r = 0; r < v->n; r++) {
        LLVMValueRef k = cg_coord(cg, ll, r, kdim), x = cg_coord(cg, ll, r, 1 - kdim);
        LLVMValueRef idx = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, k, cg_i32(cg, row), ""), x, "");
        LLVMValueRef off = cg_padded(cg, pad, LLVMBuildMul(cg->b, idx, cg_i32(cg, eb), ""));
        cg_smem_store(cg, v->v[r], elem, LLVMBuildAdd(cg->b, off, cg_i32(cg, base), ""));
    }
}

static LLVMValueRef load_f32(Cg *cg, LLVMValueRef k, LLVMValueRef x, int64_t row, const IrType *elem, CgPadding pad,
                             int64_t base) {
    int eb = cg_elem_bytes(elem);
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

bool cg_lower_dot(Cg *cg, IrOp *op) {
    const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type, *tc = op->operands[2]->type;
    if (ta->rank != 2)
        return cg_error(cg, op, "batched (3-D) dot is not supported by codegen yet");
    const LinearLayout *la = cg_ll(cg, ta, op), *lb = la ? cg_ll(cg, tb, op) : NULL;
    const LinearLayout *lc = lb ? cg_ll(cg, tc, op) : NULL;
    if (!lc)
        return false;
    int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
    int ea = cg_elem_bytes(ta->elem), eb = cg_elem_bytes(tb->elem);
    CgPadding pa = cg_scratch_padding(M * ea, ea), pb = cg_scratch_padding(N * eb, eb);
    int64_t base_a = cg_scratch_base(op);
    int64_t base_b = base_a + round16(cg_padded_offset(pa, K * M * ea));
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
