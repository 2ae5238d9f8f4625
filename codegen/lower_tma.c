/*
 * lower_tma.c — mbarriers and TMA copies (docs/codegen.md, "TMA"):
 * mbarrier_init, mbarrier_inval, mbarrier_expect, mbarrier_wait and
 * async_tma_copy, as inline PTX.
 *
 * A buffer of mbarriers is an smem<S x i64> (its i32 byte offset, as every
 * buffer); barrier i is at offset + 8 i.
 *
 *   mbarrier_init     thread 0: mbarrier.init.shared::cta.b64 [bar], count
 *                     for every barrier, then fence.mbarrier_init (the IR's
 *                     barrier that follows makes them visible to all threads)
 *   mbarrier_inval    thread 0: mbarrier.inval for every barrier
 *   mbarrier_expect   thread 0, if the predicate holds:
 *                     mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes
 *   mbarrier_wait     every thread: mbarrier.try_wait.parity in a loop until
 *                     the phase of that parity has completed
 *   mbarrier_arrive   lane 0 of each warp, after bar.warp.sync, if the
 *                     predicate holds: mbarrier.arrive.shared::cta.b64
 *   async_tma_copy    thread 0, if the predicate holds: one
 *                     cp.async.bulk.tensor.Nd per box of the buffer (the
 *                     tensor map's box: one swizzle width along the
 *                     contiguous axis), box (j, i) at the buffer's own
 *                     offset of tile coordinates (j * box0, i * box1) and at
 *                     tensor coordinates origin + (j * box0, i * box1);
 *                     with `row` and `rows` (gathered rows), only the boxes
 *                     of rows [row, row + rows), at origin + (j * box0,
 *                     (i - row) * box1); a 1-D buffer (a row vector's
 *                     unswizzled stage) takes boxes along dimension 0
 *                     alone, box j at byte j * box0 * element bytes
 *   async_tma_store   thread 0, if the predicate holds: the same boxes the
 *                     other way, cp.async.bulk.tensor.Nd.global.shared::cta
 *                     .tile.bulk_group (kind = store) or
 *                     cp.reduce.async.bulk.tensor...add.tile.bulk_group
 *                     (kind = add), then cp.async.bulk.commit_group
 *   async_tma_store_wait
 *                     thread 0: cp.async.bulk.wait_group.read N (bulk groups
 *                     are per thread: the thread that committed them waits)
 *
 * The tensor map operand is the kernel parameter itself: a byval [128 x i8]
 * marked grid_constant (lower.c), whose address NVPTX takes in the param
 * space (cvta.param), so the map is read where the launch put it.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* The shared pointer to barrier `index` (i32 value) of a buffer. */
static LLVMValueRef barrier_ptr(Cg *cg, const IrValue *bars, LLVMValueRef index) {
    LLVMValueRef base = cg_get(cg, bars)->v[0];
    index = LLVMBuildIntCast2(cg->b, index, cg->t_i32, 1, "");
    return cg_smem_ptr(cg, LLVMBuildAdd(cg->b, base, LLVMBuildMul(cg->b, index, cg_i32(cg, 8), ""), ""));
}

static bool lower_each_barrier(Cg *cg, IrOp *op, const char *text) {
    const IrType *t = op->operands[0]->type;
    LLVMBasicBlockRef cont = cg_begin_issuer(cg, NULL, "thread0");
    for (int64_t i = 0; i < t->shape[0]; i++) {
        LLVMValueRef bar = barrier_ptr(cg, op->operands[0], cg_i32(cg, i));
        cg_asm(cg, cg->t_void, text, "r,~{memory}", &bar, 1, true);
    }
    if (op->opc == IR_OP_MBARRIER_INIT)
        cg_asm(cg, cg->t_void, "fence.mbarrier_init.release.cluster;", "~{memory}", NULL, 0, true);
    cg_end_if(cg, cont);
    return true;
}

static bool lower_wait(Cg *cg, IrOp *op) {
    LLVMValueRef bar = barrier_ptr(cg, op->operands[0], cg_get(cg, op->operands[1])->v[0]);
    LLVMValueRef phase = LLVMBuildIntCast2(cg->b, cg_get(cg, op->operands[2])->v[0], cg->t_i32, 1, "");
    LLVMBasicBlockRef loop = cg_block(cg, "mbar.wait"), done = cg_block(cg, "mbar.done");
    LLVMBuildBr(cg->b, loop);
    LLVMPositionBuilderAtEnd(cg->b, loop);
    LLVMValueRef args[2] = {bar, phase};
    LLVMValueRef ok = cg_asm(cg, cg->t_i32,
                             "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\n"
                             "selp.u32 $0, 1, 0, p;\n}",
                             "=r,r,r,~{memory}", args, 2, true);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntNE, ok, cg_i32(cg, 0), ""), done, loop);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return true;
}

static bool lower_expect(Cg *cg, IrOp *op) {
    int64_t bytes = ir_op_get_int(op, "bytes", 0);
    LLVMValueRef pred = cg_get(cg, op->operands[2])->v[0];
    LLVMBasicBlockRef cont = cg_begin_issuer(cg, pred, "thread0");
    LLVMValueRef bar = barrier_ptr(cg, op->operands[0], cg_get(cg, op->operands[1])->v[0]);
    char text[96];
    snprintf(text, sizeof text, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], %lld;", (long long)bytes);
    cg_asm(cg, cg->t_void, text, "r,~{memory}", &bar, 1, true);
    cg_end_if(cg, cont);
    return true;
}

/* Lane 0 of each warp, once the warp's lanes are all here (their reads of
 * the stage done), if the predicate holds. */
static bool lower_arrive(Cg *cg, IrOp *op) {
    LLVMValueRef all = cg_i32(cg, -1);
    cg_intrinsic(cg, "llvm.nvvm.bar.warp.sync", NULL, 0, &all, 1);
    LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->lane, cg_i32(cg, 0), "");
    c = LLVMBuildAnd(cg->b, c, cg_get(cg, op->operands[2])->v[0], "");
    LLVMBasicBlockRef then = cg_block(cg, "lane0"), cont = cg_block(cg, "lane0.end");
    LLVMBuildCondBr(cg->b, c, then, cont);
    LLVMPositionBuilderAtEnd(cg->b, then);
    LLVMValueRef bar = barrier_ptr(cg, op->operands[0], cg_get(cg, op->operands[1])->v[0]);
    cg_asm(cg, cg->t_void, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", &bar, 1, true);
    LLVMBuildBr(cg->b, cont);
    LLVMPositionBuilderAtEnd(cg->b, cont);
    return true;
}

/*
 * One instruction per box of an async_tma_copy (tensor to buffer,
 * completing on `bar`) or an async_tma_store (buffer to tensor, bar NULL),
 * whose tensor coordinates start at operand `first`. `head` is the opcode
 * with %d for the rank (and, for a copy, its destination); operands: the
 * box's smem pointer $0, the map $1, the coordinates from $2, the barrier
 * last (a copy's last bracket; a store's is its source, $0).
 */
static bool issue_boxes(Cg *cg, IrOp *op, const char *head, int first, LLVMValueRef bar) {
    const IrValue *map = op->operands[0];
    IrTensorMap tm;
    const char *why;
    if (!ir_tensormap_of(cg->f, map, &tm, &why))
        return cg_error(cg, op, "%s: tensor map: %s", ir_op_info[op->opc].name, why);
    const IrType *buf = op->operands[1]->type;
    const Layout *l = buf->layout;
    bool row = buf->rank == 1; /* a row vector's unswizzled buffer */
    int eb = ir_type_bytes(buf->elem), ca = row ? 0 : l->nvmma.order[0];
    LLVMValueRef base = cg_get(cg, op->operands[1])->v[0];
    LLVMValueRef origin[IR_MAX_TMAP_RANK];
    for (int d = 0; d < tm.rank; d++)
        origin[d] = LLVMBuildIntCast2(cg->b, cg_get(cg, op->operands[first + d])->v[0], cg->t_i32, 1, "");
    char text[256], cons[128];
    int n = snprintf(text, sizeof text, head, tm.rank);
    n += snprintf(text + n, sizeof text - (size_t)n, " [$1, {");
    for (int d = 0; d < tm.rank; d++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s$%d", d ? ", " : "", 2 + d);
    snprintf(text + n, sizeof text - (size_t)n, "}], [$%d];", bar ? 2 + tm.rank : 0);
    n = snprintf(cons, sizeof cons, "r,l");
    for (int d = 0; d < tm.rank + (bar != NULL); d++)
        n += snprintf(cons + n, sizeof cons - (size_t)n, ",r");
    snprintf(cons + n, sizeof cons - (size_t)n, ",~{memory}");
    LLVMValueRef mp = cg_get(cg, map)->v[0];
    int64_t first_row = ir_op_get_int(op, "row", 0);
    int64_t rows = row ? 1 : ir_op_get_int(op, "rows", buf->shape[1 - ca] - first_row);
    for (int64_t i = first_row; i < first_row + rows; i += row ? 1 : tm.box[1])
        for (int64_t j = 0; j < buf->shape[ca]; j += tm.box[0]) {
            int64_t c[2];
            c[ca] = j;
            if (!row)
                c[1 - ca] = i;
            int64_t off = row ? j * eb : ll_nvmma_offset(l, 2, buf->shape, eb, c) * eb;
            LLVMValueRef args[3 + IR_MAX_TMAP_RANK];
            args[0] = cg_smem_ptr(cg, LLVMBuildAdd(cg->b, base, cg_i32(cg, off), ""));
            args[1] = mp;
            for (int d = 0; d < tm.rank; d++)
                args[2 + d] = d == 0 ? LLVMBuildAdd(cg->b, origin[0], cg_i32(cg, j), "")
                              : d == 1 && !row ? LLVMBuildAdd(cg->b, origin[1], cg_i32(cg, i - first_row), "")
                                       : origin[d];
            if (bar)
                args[2 + tm.rank] = bar;
            cg_asm(cg, cg->t_void, text, cons, args, 2 + tm.rank + (bar != NULL), true);
        }
    return true;
}

static bool lower_tma_copy(Cg *cg, IrOp *op) {
    LLVMValueRef pred = cg_get(cg, op->operands[4])->v[0];
    LLVMBasicBlockRef cont = cg_begin_issuer(cg, pred, "thread0");
    LLVMValueRef bar = barrier_ptr(cg, op->operands[2], cg_get(cg, op->operands[3])->v[0]);
    /* cp.async.bulk.tensor.Nd...: [dst], [map, {coords}], [bar] (the destination first) */
    if (!issue_boxes(cg, op, "cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes [$0],",
                     5, bar))
        return false;
    cg_end_if(cg, cont);
    return true;
}

static bool lower_tma_store(Cg *cg, IrOp *op) {
    const char *kind = ir_op_get_word(op, "kind");
    bool add = kind && strcmp(kind, "add") == 0;
    LLVMBasicBlockRef cont = cg_begin_issuer(cg, cg_get(cg, op->operands[2])->v[0], "thread0");
    if (!issue_boxes(cg, op,
                     add ? "cp.reduce.async.bulk.tensor.%dd.global.shared::cta.add.tile.bulk_group"
                         : "cp.async.bulk.tensor.%dd.global.shared::cta.tile.bulk_group",
                     3, NULL))
        return false;
    cg_asm(cg, cg->t_void, "cp.async.bulk.commit_group;", "~{memory}", NULL, 0, true);
    cg_end_if(cg, cont);
    return true;
}

static bool lower_tma_store_wait(Cg *cg, IrOp *op) {
    LLVMBasicBlockRef cont = cg_begin_issuer(cg, NULL, "thread0");
    char text[64];
    snprintf(text, sizeof text, "cp.async.bulk.wait_group.read %lld;", (long long)ir_op_get_int(op, "pending", 0));
    cg_asm(cg, cg->t_void, text, "~{memory}", NULL, 0, true);
    cg_end_if(cg, cont);
    return true;
}

bool cg_lower_tma(Cg *cg, IrOp *op) {
    switch (op->opc) {
    case IR_OP_MBARRIER_INIT: {
        char text[80];
        snprintf(text, sizeof text, "mbarrier.init.shared::cta.b64 [$0], %lld;",
                 (long long)ir_op_get_int(op, "count", 1));
        return lower_each_barrier(cg, op, text);
    }
    case IR_OP_MBARRIER_INVAL: return lower_each_barrier(cg, op, "mbarrier.inval.shared::cta.b64 [$0];");
    case IR_OP_MBARRIER_EXPECT: return lower_expect(cg, op);
    case IR_OP_MBARRIER_WAIT: return lower_wait(cg, op);
    case IR_OP_MBARRIER_ARRIVE: return lower_arrive(cg, op);
    case IR_OP_ASYNC_TMA_COPY: return lower_tma_copy(cg, op);
    case IR_OP_ASYNC_TMA_STORE: return lower_tma_store(cg, op);
    case IR_OP_ASYNC_TMA_STORE_WAIT: return lower_tma_store_wait(cg, op);
    default: tc_unreachable("not a TMA op");
    }
}
