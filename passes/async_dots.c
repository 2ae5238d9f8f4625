/*
 * async_dots.c — the pass `async-dots`: warp_group_dots are issued as early
 * as their operands allow and complete only where something needs them, so
 * that the work between runs while the tensor cores compute (docs/passes.md,
 * "Asynchronous dots").
 *
 * A synchronous warp_group_dot issues its wgmmas and waits for them at once
 * (wgmma.wait_group 0): the warpgroup's CUDA cores idle while its tensor
 * cores work, and the other way round. A block with several dots, some
 * independent of the others' results, loses twice: attention's backward
 * computes S^T = K Q^T, then P^T = exp2(S^T - LSE) on the CUDA cores, then
 * dV += P^T dO, and only then dP^T = V dO^T, which needs none of that.
 *
 * In each block of a kernel without asynchronous dots already (their waits
 * count the groups in flight: one more would change what they wait for;
 * in a kernel with a producer warpgroup, without any anywhere: those of
 * overlap-dots and pingpong are theirs to schedule), the pass
 *
 *  1. hoists each synchronous warp_group_dot, and the shared-memory views
 *     and constants it reads, above the ops before it that it may pass:
 *     ops that compute in registers (pure ops, `if`s of pure ops), loads
 *     from global or shared memory, local_allocs and other dots, stopping at
 *     an op that defines one of its operands. Barriers, mbarrier waits,
 *     stores and copies stay ahead of it (they order the memory it reads);
 *  2. issues every warp_group_dot async and, before the first op that reads
 *     its result or may not run while it is in flight, inserts
 *
 *         %r.1, %s.1 = warp_group_dot_wait %r, %s {pending = N}
 *
 *     over the dots issued up to the one needed (wgmma groups complete in
 *     order), N the dots issued after it, and the later ops read %r.1. A dot
 *     whose wait would come right after it stays synchronous. What may run
 *     under dots in flight: the ops of 1., stores to global memory (a wgmma
 *     reads registers and shared memory only), writes into buffers that no
 *     dot in flight reads (a ring's stages count as the ring; a buffer a
 *     loop argument carries may be any), fences, TMA stores and their
 *     waits. Not a barrier (past it another warp may write what the dots
 *     read, in this iteration or a later one), not the terminator.
 *  3. keeps the new accumulators in flight (dots that start from zeros)
 *     within FRESH_BUDGET registers a thread: a dot that would pass it is
 *     issued after the earlier ones complete. Two such dots in flight pin
 *     both sets of registers while neither can be read; at the backward's
 *     head dim 64 ([128, 128] S^T and dP^T, 64 registers each) ptxas then
 *     spilled 200 bytes and the causal kernels lost 20-30%.
 *
 * The backward's loop becomes: the next stage's copies, S^T and dP^T issued
 * back to back; wait for S^T (pending 1) and compute P^T under dP^T; dV
 * issued; wait for dP^T (pending 1) and compute dS^T under dV; dQ and dK
 * issued (dK, carried to the next iteration, after dQ, which this one
 * stores); wait for dQ (pending 1) and store it under dK; wait for dK
 * before the barrier that hands dQ's buffer to the TMA reduction.
 *
 * Shared memory a dot in flight reads stays live until its wait
 * (allocate-shared), so no scratch in between takes its bytes. The wgmma A
 * fragments in registers are ptxas's to keep until the wait, as for the
 * dots in flight of the pipeline and overlap-dots.
 */
#include "passes.h"

enum {
    MAX_IN_FLIGHT = 7, /* warp_group_dot_wait's pending is 0..7 */
    FRESH_BUDGET = 64, /* registers per thread of new accumulators in flight at once */
};

/* A pure op, or an `if` of pure ops (a causal mask applied in some
 * iterations only). */
static bool pure_tree(const IrOp *op) {
    if (op->opc == IR_OP_IF) {
        for (int r = 0; r < op->num_regions; r++)
            for (const IrOp *o = op->regions[r]->first; o; o = o->next)
                if (o->opc != IR_OP_YIELD && !pure_tree(o))
                    return false;
        return true;
    }
    return (ir_op_info[op->opc].flags & OPF_PURE) && op->num_regions == 0;
}

/* May a warp_group_dot be issued before op, or stay in flight while op
 * runs? Ops that compute in registers or read memory; a local_alloc writes
 * a buffer of its own, which allocate-shared keeps apart from the dot's. */
static bool dot_may_pass(const IrOp *op) {
    switch (op->opc) {
    case IR_OP_LOAD:
    case IR_OP_LOCAL_LOAD:
    case IR_OP_LOCAL_ALLOC:
    case IR_OP_WARP_GROUP_DOT: return true;
    default: return pure_tree(op);
    }
}

static bool defines_operand(const IrOp *def, const IrOp *op) {
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i]->def == def)
            return true;
    return false;
}

/* May shared-memory values a and b be the same buffer? Roots that are not
 * local_allocs (a loop's argument carrying a buffer) may be any. */
static bool may_alias(const IrValue *a, const IrValue *b) {
    const IrValue *ra = ir_buffer_root(a), *rb = ir_buffer_root(b);
    bool known = ra->def && ra->def->opc == IR_OP_LOCAL_ALLOC && rb->def && rb->def->opc == IR_OP_LOCAL_ALLOC;
    return ra == rb || !known;
}

/* Does one of the dots fl[0..n) read shared memory that buf may be? */
static bool dots_read(IrOp *const *fl, int n, const IrValue *buf) {
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 2; i++)
            if (fl[k]->operands[i]->type->kind == IR_SMEM && may_alias(fl[k]->operands[i], buf))
                return true;
    return false;
}

/* May the dots fl[0..n) stay in flight while op runs? Besides the ops a dot
 * may pass: writes to global memory (a wgmma reads registers and shared
 * memory only), fences, TMA stores and their waits, and writes into other
 * buffers than theirs. Not a barrier: past it another warp may go on to
 * write what the dots read (it orders the reads before it, in every warp,
 * before the writes after it, here or in a later iteration), nor the
 * terminator. */
static bool may_stay_in_flight(const IrOp *op, IrOp *const *fl, int n) {
    if (dot_may_pass(op))
        return true;
    switch (op->opc) {
    case IR_OP_STORE:
    case IR_OP_ATOMIC:
    case IR_OP_FENCE_ASYNC_SHARED:
    case IR_OP_ASYNC_TMA_STORE:
    case IR_OP_ASYNC_TMA_STORE_WAIT:
    case IR_OP_ASYNC_COMMIT:
    case IR_OP_ASYNC_WAIT:
    case IR_OP_MBARRIER_EXPECT:
    case IR_OP_MBARRIER_WAIT: return true;
    case IR_OP_LOCAL_STORE:
    case IR_OP_ASYNC_COPY:
    case IR_OP_ASYNC_TMA_COPY: return !dots_read(fl, n, op->operands[1]);
    default: return false;
    }
}

static bool is_view(const IrOp *op) {
    return op->opc == IR_OP_MEMDESC_TRANS || op->opc == IR_OP_MEMDESC_INDEX || op->opc == IR_OP_CONSTANT;
}

/* Is the dot's result read in its block only by the terminator (an
 * accumulator that the next iteration goes on with)? */
static bool only_carried(const IrOp *dot) {
    const IrValue *r = dot->results[0];
    for (const IrOp *op = dot->next; op; op = op->next)
        if (op->opc != IR_OP_YIELD && pass_op_uses(op, r))
            return false;
    return true;
}

/* May dot go above `at`? Only if at is no dot, or if dot could also go
 * above what stops the run of dots that ends at `at` (dots already hoisted
 * as far as they go): dots ready at the same point keep their order, and a
 * dot that waits for a result (attention's dV for P) lets the ones that do
 * not go first. A dot whose result only the next iteration reads stays
 * after one whose result this iteration reads (attention's dK after dQ,
 * which the iteration stores: it completes first and dK runs under the
 * store). */
static bool passes_dots(const IrOp *at, const IrOp *dot) {
    bool carried = only_carried(dot);
    for (; at && at->opc == IR_OP_WARP_GROUP_DOT; at = at->prev)
        if (defines_operand(at, dot) || (carried && !only_carried(at)))
            return false;
    return at && !defines_operand(at, dot) && dot_may_pass(at);
}

/* Moves a dot up its block past the ops it may pass (dot_may_pass),
 * together with the views and constants it reads that it meets on the way
 * (they go right before it, in their order). */
static void hoist(IrOp *dot) {
    IrOp *group[16];
    int n = 0;
    group[n++] = dot;
    IrOp *at = dot->prev;
    for (; at; at = at->prev) {
        bool feeds = false;
        for (int k = 0; k < n && !feeds; k++)
            feeds = defines_operand(at, group[k]);
        if (feeds && is_view(at) && n < 16)
            group[n++] = at;
        else if (feeds || !dot_may_pass(at) || (at->opc == IR_OP_WARP_GROUP_DOT && !passes_dots(at, dot)))
            break;
    }
    IrBlock *b = dot->parent;
    for (int k = n - 1; k >= 0; k--) { /* program order: the earliest view first */
        ir_op_unlink(group[k]);
        if (at)
            ir_op_insert_after(at, group[k]);
        else
            ir_op_insert_before(b->first, group[k]);
        at = group[k];
    }
}

/* Waits before op for in-flight dots fl[0..need] (the earlier ones complete
 * with it); the rest stay pending. Returns the dots still in flight. */
static int wait_for(IrModule *m, IrBlock *b, IrOp *op, IrOp **fl, int n, int need) {
    IrValue *vals[MAX_IN_FLIGHT];
    const IrType *types[MAX_IN_FLIGHT];
    for (int k = 0; k <= need; k++)
        vals[k] = fl[k]->results[0], types[k] = vals[k]->type;
    IrOp *w = ir_op_create(m, IR_OP_WARP_GROUP_DOT_WAIT, need + 1, vals, need + 1, types);
    w->loc = fl[need]->loc;
    ir_op_set_int(m, w, "pending", n - 1 - need);
    ir_op_insert_before(op, w);
    for (int k = 0; k <= need; k++) {
        w->results[k]->name = vals[k]->name;
        ir_replace_all_uses(b, vals[k], w->results[k]);
        ir_op_set_operand(w, k, vals[k]);
    }
    for (int k = need + 1; k < n; k++)
        fl[k - need - 1] = fl[k];
    return n - need - 1;
}

/* A wait right after the one dot it waits for, with nothing pending: the
 * dot stays synchronous. */
static void undo_trivial(IrBlock *b, IrOp *w) {
    IrOp *d = w->prev;
    if (!d || d->opc != IR_OP_WARP_GROUP_DOT || w->num_operands != 1 || w->operands[0] != d->results[0] ||
        ir_op_get_int(w, "pending", -1) != 0)
        return;
    ir_replace_all_uses(b, w->results[0], d->results[0]);
    ir_op_unlink(w);
    ir_op_remove_attr(d, "async");
}

static bool has_async(const IrBlock *b) {
    for (const IrOp *op = b->first; op; op = op->next)
        if (op->opc == IR_OP_WARP_GROUP_DOT_WAIT || (op->opc == IR_OP_WARP_GROUP_DOT && ir_op_get_int(op, "async", 0)))
            return true;
    return false;
}

/* Registers per thread of the accumulator dot starts from zeros (a
 * constant), 0 when it adds to a value. */
static int64_t fresh_registers(const IrOp *dot, int num_warps) {
    const IrOp *acc = dot->operands[2]->def;
    if (!acc || acc->opc != IR_OP_CONSTANT)
        return 0;
    return tg_value_regs(dot->results[0]->type, num_warps);
}

/* In a warp-specialized kernel, moves an mbarrier_wait (a stage of a
 * ring, filled by the producer) up its block past ops that compute in
 * registers, views, loads and dots, to the op that defines an operand or
 * the wait before it (the waits keep their order): waiting earlier is
 * always correct, and the dots after it may then be issued together (the
 * backward's S^T and dP^T, whose stages the pipeline waits for right
 * before each; the producer fills them together). Never above an arrival
 * (the producer may need it to fill the stage), a barrier or a store. */
static void hoist_wait(IrOp *w) {
    IrOp *at = w->prev;
    while (at && !defines_operand(at, w) &&
           (at->opc == IR_OP_WARP_GROUP_DOT || at->opc == IR_OP_LOAD || at->opc == IR_OP_LOCAL_LOAD || is_view(at) ||
            pure_tree(at)))
        at = at->prev;
    if (at == w->prev)
        return;
    IrBlock *b = w->parent;
    ir_op_unlink(w);
    if (at)
        ir_op_insert_after(at, w);
    else
        ir_op_insert_before(b->first, w);
}

/* An arrival (a ring's stage given back to the producer) that dots in
 * flight may still read, put off until they complete (in kernels with a
 * producer, whose rings the pipeline gives back once per stage an
 * iteration: a stage filled in iteration i needs the arrivals of
 * iteration i - stages, made by then). */
typedef struct {
    IrOp *op;
    IrOp *last; /* the last dot in flight when it came */
} Deferred;

static void schedule_block(IrModule *m, IrBlock *b, int num_warps, bool producer) {
    for (IrOp *op = b->first; op; op = op->next)
        for (int r = 0; r < op->num_regions; r++)
            schedule_block(m, op->regions[r], num_warps, producer);
    int dots = 0;
    for (IrOp *op = b->first; op; op = op->next)
        dots += op->opc == IR_OP_WARP_GROUP_DOT;
    if (!dots || has_async(b))
        return;
    for (IrOp *op = b->first, *next; op && producer; op = next) {
        next = op->next;
        if (op->opc == IR_OP_MBARRIER_WAIT)
            hoist_wait(op);
    }
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        if (op->opc == IR_OP_WARP_GROUP_DOT)
            hoist(op);
    }
    IrOp *fl[MAX_IN_FLIGHT];
    int n = 0;
    Deferred deferred[16];
    int num_deferred = 0;
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        if (producer && op->opc == IR_OP_MBARRIER_ARRIVE && n > 0 && num_deferred < 16) {
            /* the consumers give the stage back once the dots that may read
             * it have completed: after the wait that completes them */
            deferred[num_deferred++] = (Deferred){op, fl[n - 1]};
            ir_op_unlink(op);
            continue;
        }
        int need = -1;
        if (!may_stay_in_flight(op, fl, n) || (op->opc == IR_OP_WARP_GROUP_DOT && n == MAX_IN_FLIGHT))
            need = n - 1;
        else
            for (int k = 0; k < n; k++)
                if (pass_op_uses(op, fl[k]->results[0]))
                    need = k;
        int64_t regs = op->opc == IR_OP_WARP_GROUP_DOT ? fresh_registers(op, num_warps) : 0;
        if (regs) {
            /* over the budget, the new accumulators in flight complete first */
            int last = -1;
            for (int k = 0; k < n; k++) {
                int64_t r = fresh_registers(fl[k], num_warps);
                if (r)
                    regs += r, last = k;
            }
            if (regs > FRESH_BUDGET && last > need)
                need = last;
        }
        if (need >= 0) {
            bool done[16] = {false};
            for (int k = 0; k <= need; k++)
                for (int i = 0; i < num_deferred; i++)
                    done[i] |= deferred[i].last == fl[k];
            n = wait_for(m, b, op, fl, n, need);
            /* the arrivals whose dots this wait completes, in their order */
            int kept = 0;
            for (int i = 0; i < num_deferred; i++) {
                if (done[i])
                    ir_op_insert_before(op, deferred[i].op);
                else
                    deferred[kept++] = deferred[i];
            }
            num_deferred = kept;
        }
        if (op->opc == IR_OP_WARP_GROUP_DOT) {
            ir_op_set_int(m, op, "async", 1);
            fl[n++] = op;
        }
    }
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        if (op->opc == IR_OP_WARP_GROUP_DOT_WAIT)
            undo_trivial(b, op);
    }
}

/* Has any block under b dots in flight already? */
static bool any_async(const IrBlock *b) {
    if (has_async(b))
        return true;
    for (const IrOp *op = b->first; op; op = op->next)
        for (int r = 0; r < op->num_regions; r++)
            if (any_async(op->regions[r]))
                return true;
    return false;
}

bool pass_async_dots(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        /* a warp-specialized kernel whose dots overlap-dots, pingpong or
         * the pipeline scheduled is theirs (the forward's peeled first
         * iteration and masked loop keep their synchronous dots) */
        bool producer = ir_func_get_int(f, "producer_warps", 0) != 0;
        if (!producer || !any_async(f->body))
            schedule_block(m, f->body, pass_func_num_warps(f, opts), producer);
    }
    return true;
}
