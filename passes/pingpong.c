/*
 * pingpong.c — the pass `pingpong`: two consumer warpgroups of a
 * warp-specialized loop take turns on the tensor cores (docs/passes.md,
 * "Ping-pong").
 *
 * Precondition: the pipeline pass has given the kernel a producer
 * warpgroup (a `warp_specialize` op, docs/passes.md "Warp specialization").
 * With 8 consumer warps the two warpgroups each own half of every tile's
 * rows, and without ordering they issue their dots together and then run
 * the softmax together, so that the tensor cores idle during it. When the
 * consumer loop (the top-level loop that gives stages back with
 * `mbarrier_arrive`) holds a chain of two or more `warp_group_dot`s
 * (attention's Q K^T then P V), each warpgroup waits for its turn before
 * each group of dots it issues together and hands the turn to the other
 * right after the group, on named barriers 2 (warpgroup 0's turn) and 3
 * (warpgroup 1's) of 256 threads. A group runs from a dot to the last dot
 * before the next wait or read of a dot's result: after overlap-dots,
 * Q K^T of block i and the late P V of block i - 1; without it, each dot,
 * issued async and waited for after the hand-over:
 *
 *     %wg = warp_group_id
 *     %mine = add %wg, 2 ; %other = sub 3, %wg
 *     if %wg == 1 { named_barrier_arrive 2 }      // warpgroup 0 starts
 *     for ... {
 *       ... mbarrier_wait %full ...
 *       named_barrier_wait %mine
 *       %qk = warp_group_dot ... {async = 1}
 *       %pv = warp_group_dot %p.prev, ... {async = 1}
 *       named_barrier_arrive %other
 *       %qk.1 = warp_group_dot_wait %qk {pending = 1}
 *       ... softmax: under P V and the other warpgroup's dots ...
 *       %acc = warp_group_dot_wait %pv {pending = 0}
 *     }
 *     if %wg == 0 { named_barrier_wait 2 }        // warpgroup 1's last hand-over
 *
 * Every arrival is matched: warpgroup 1 arrives on barrier 2 once more
 * than the loop has turns (the first turn), which the wait after the loop
 * consumes, so the barriers end as they began whatever the trip count
 * (0 included). A loop that synchronizes its warps otherwise (a `barrier`,
 * an op with shared-memory scratch, which codegen fences with barriers, a
 * cp.async) would deadlock against the turns and is left alone, as are
 * loops that carry a dot in flight to the next iteration (a matmul's) or
 * hold dots nested in regions.
 */
#include "passes.h"

#include "target/target.h"

/* Does op (or an op nested in it) synchronize the consumer warps? */
static bool syncs_warps(const IrOp *op, int num_warps) {
    switch (op->opc) {
    case IR_OP_BARRIER:
    case IR_OP_LOCAL_STORE:
    case IR_OP_ASYNC_COPY:
    case IR_OP_ASYNC_WAIT:
    case IR_OP_NAMED_BARRIER_WAIT:
    case IR_OP_NAMED_BARRIER_ARRIVE: return true;
    case IR_OP_LOCAL_ALLOC:
        if (op->num_operands)
            return true;
        break;
    default: break;
    }
    if (tg_scratch_bytes(op, num_warps) > 0)
        return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const IrOp *q = op->regions[r]->first; q; q = q->next)
            if (syncs_warps(q, num_warps))
                return true;
    return false;
}

/* The consumer loop of a warp-specialized kernel fit for turns, or NULL:
 * in the kernel's body, or in the body of a persistent program's tile loop
 * (pass persistent), whose every tile then takes the same turns. */
static IrOp *turn_loop(IrBlock *blk, int num_warps) {
    for (IrOp *loop = blk->first; loop; loop = loop->next) {
        if (loop->opc != IR_OP_FOR)
            continue;
        if (ir_op_get_int(loop, "persistent", 0))
            return turn_loop(loop->regions[0], num_warps);
        int dots = 0;
        bool releases = false, ok = true;
        for (const IrOp *op = loop->regions[0]->first; op && ok; op = op->next) {
            releases |= op->opc == IR_OP_MBARRIER_ARRIVE;
            dots += op->opc == IR_OP_WARP_GROUP_DOT;
            ok = !syncs_warps(op, num_warps);
            for (int r = 0; r < op->num_regions && ok; r++)
                for (const IrOp *q = op->regions[r]->first; q && ok; q = q->next)
                    ok = q->opc != IR_OP_WARP_GROUP_DOT;
        }
        /* a dot in flight across iterations (a matmul's) has no turn to end */
        IrOp *yield = loop->regions[0]->last;
        for (int i = 0; yield && i < yield->num_operands && ok; i++) {
            const IrOp *d = yield->operands[i]->def;
            ok = !d || d->opc != IR_OP_WARP_GROUP_DOT_WAIT || ir_op_get_int(d, "pending", 0) == 0;
        }
        if (releases)
            return ok && dots >= 2 ? loop : NULL;
    }
    return NULL;
}

/* Does op read an in-flight dot's result? */
static bool reads_dot(const IrOp *op) {
    for (int i = 0; i < op->num_operands; i++) {
        const IrOp *d = op->operands[i]->def;
        if (d && d->opc == IR_OP_WARP_GROUP_DOT && op->opc != IR_OP_WARP_GROUP_DOT_WAIT)
            return true;
    }
    return false;
}

/* `if %cond { named_barrier_<kind> %id {threads = 256} }` at b. */
static void turn_if(IrBuilder *b, IrValue *cond, IrOpcode kind, IrValue *id) {
    IrOp *op = ir_build_op(b, IR_OP_IF, 1, &cond, 0, NULL);
    IrBuilder in;
    ir_builder_at_end(&in, b->m, op->regions[0]);
    in.loc = b->loc;
    ir_op_set_int(b->m, ir_build_op(&in, kind, 1, &id, 0, NULL), "threads", 256);
    ir_build_op(&in, IR_OP_YIELD, 0, NULL, 0, NULL);
    ir_builder_at_end(&in, b->m, op->regions[1]);
    ir_build_op(&in, IR_OP_YIELD, 0, NULL, 0, NULL);
}

static void add_turns(IrModule *m, IrOp *loop) {
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrBuilder b;
    ir_builder_before(&b, loop);
    b.loc = loop->loc;
    IrValue *wg = ir_build(&b, IR_OP_WARP_GROUP_ID, i32, 0, NULL);
    ir_value_set_name(m, wg, "wg");
    IrValue *two = ir_build_const_int(&b, i32, 2);
    IrValue *mine = ir_build_binary(&b, IR_OP_ADD, i32, wg, two);
    IrValue *other = ir_build_binary(&b, IR_OP_SUB, i32, ir_build_const_int(&b, i32, 3), wg);
    IrValue *zero = ir_build_const_int(&b, i32, 0), *one = ir_build_const_int(&b, i32, 1);
    turn_if(&b, ir_build_cmp(&b, "eq", wg, one), IR_OP_NAMED_BARRIER_ARRIVE, two);
    IrBlock *body = loop->regions[0];
    /* a synchronous dot is issued async and waited for right after */
    for (IrOp *op = body->first; op; op = op->next) {
        if (op->opc != IR_OP_WARP_GROUP_DOT || ir_op_get_int(op, "async", 0))
            continue;
        ir_op_set_int(m, op, "async", 1);
        op = pass_dot_wait_after(m, op, body, op->results[0], 0)->def;
    }
    /* one turn per group of dots issued together (up to the next wait or
     * read of a dot's result): the other warpgroup's dots queue right
     * behind them, the waits come after the hand-over */
    for (IrOp *op = body->first; op; op = op->next) {
        if (op->opc != IR_OP_WARP_GROUP_DOT)
            continue;
        ir_builder_before(&b, op);
        b.loc = op->loc;
        ir_op_set_int(m, ir_build_op(&b, IR_OP_NAMED_BARRIER_WAIT, 1, &mine, 0, NULL), "threads", 256);
        IrOp *last = op;
        for (IrOp *q = op->next; q && q->opc != IR_OP_WARP_GROUP_DOT_WAIT && !reads_dot(q); q = q->next)
            if (q->opc == IR_OP_WARP_GROUP_DOT)
                last = q;
        ir_builder_before(&b, last->next);
        ir_op_set_int(m, ir_build_op(&b, IR_OP_NAMED_BARRIER_ARRIVE, 1, &other, 0, NULL), "threads", 256);
        op = last;
    }
    if (loop->next)
        ir_builder_before(&b, loop->next);
    else
        ir_builder_at_end(&b, m, loop->parent);
    b.loc = loop->loc;
    turn_if(&b, ir_build_cmp(&b, "eq", wg, zero), IR_OP_NAMED_BARRIER_WAIT, two);
}

bool pass_pingpong(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL || !ir_func_get_int(f, "producer_warps", 0))
            continue;
        int num_warps = pass_func_num_warps(f, opts);
        IrOp *loop = num_warps == 8 ? turn_loop(f->body, num_warps) : NULL;
        if (loop)
            add_turns(m, loop);
    }
    return true;
}
