/*
 * software_pipeline.c — the pass `pipeline`: software pipelining of the global loads
 * that feed dots through shared memory (docs/passes.md, "Software
 * pipelining": the cp.async form).
 *
 * Precondition: stage-shared has run, so a matmul or attention loop body
 * holds, for each operand tile,
 *
 *     %a = load %ptrs, %mask, %zero {vec = 8} : tile<128x64xf16, #blocked>
 *     %a_smem = local_alloc %a : smem<128x64xf16, #shared>
 *     %a1 = local_load %a_smem : tile<128x64xf16, #dot_op<idx = 0, ...>>
 *     %acc.2 = dot %a1, %b1, %acc.1
 *
 * With S = num_stages (the kernel's `num_stages` attribute, else
 * PassOptions.num_stages; S <= 1 disables the pass) every such load whose
 * pointers allow copies of 4 bytes or more (vec * element bytes >= 4, the
 * width coalesce chose) becomes an asynchronous copy into a ring of S - 1
 * stages issued S - 1 iterations ahead:
 *
 *     barrier                                   // earlier readers of these bytes
 *     %a_ring = local_alloc : smem<2x128x64xf16, #shared>
 *     for s in 0 .. S-2:                        // the prologue, unrolled
 *       async_copy ptrs(lb + s*step), %a_ring[s], mask(lb + s*step) & (lb + s*step < ub)
 *       async_commit
 *     %acc, %stage = for %lb, %ub, %step, %acc0, 0 {
 *     ^bb(%k, %acc.1, %stage.1):
 *       async_wait {num = (S-2) * loads}        // iteration k's groups are complete
 *       barrier                                 // ... in every thread
 *       %a1 = local_load %a_ring[%stage.1]
 *       %acc.2 = dot %a1, %b1, %acc.1
 *       barrier                                 // every warp is done reading the stage
 *       async_copy ptrs(k + (S-1)*step), %a_ring[%stage.1], mask(...) & (k + (S-1)*step < ub)
 *       async_commit
 *       yield %acc.2, (%stage.1 + 1) mod (S-1)
 *     }
 *     async_wait {num = 0}
 *
 * Design choices:
 *   - Addresses and masks for iteration k + s*step are rematerialized: the
 *     ops of the body that compute the load's pointer and mask from the
 *     induction variable and loop invariants (pure, no regions, no other
 *     loop-carried value; or loads of `readonly` memory, such as a paged
 *     cache's block table, which get the copies' predicate in their mask)
 *     are cloned with the induction variable replaced.
 *     A load whose address depends on another loop-carried value (a pointer
 *     advanced by `p += BK`) stays synchronous.
 *   - Iteration i + S - 1 lands in stage (i + S - 1) mod (S - 1) = i mod
 *     (S - 1): the stage iteration i has just read. So one stage index is
 *     both the insert and the extract index (one i32 iter arg), and the
 *     copies are issued after the body's reads, behind a barrier: codegen
 *     defers a dot's ldmatrix to the dot, so "after the reads" is "after
 *     the last op of the body that is not the yield".
 *   - A chain of dots (a dot after the first dot that follows the first
 *     ring read: attention's Q K^T then P V) with S >= 3 is scheduled
 *     differently: the copies run S - 2 iterations ahead and go right after
 *     the first dot (right before it when it is a warp_group_dot, so that
 *     async-dots can issue the chain's next dots while it computes: a copy
 *     between them would need it complete), into stage
 *     (i + S - 2) mod (S - 1) = (i - 1) mod (S - 1), the one iteration
 *     i - 1 read. Every warp is past those reads
 *     once it has passed the barrier at the top of iteration i, so the end
 *     barrier goes: one barrier per iteration instead of two, for one
 *     iteration less of prefetch, the copies still in flight behind the
 *     rest of the chain (the softmax and P V). The prologue holds S - 2
 *     iterations and the in-loop wait leaves (S - 3) * loads groups pending
 *     (num_stages 3: 2 prologue copies for K and V, wait 0). Attention
 *     gains from the barrier it saves; a matmul (one dot) loses with the
 *     same schedule, its copies then having only one short iteration to
 *     land, so single dots keep the first (bench/RESULTS.md has both
 *     measurements).
 *   - A body whose only dot is a warp_group_dot (wgmma, sm_90a) reading
 *     the rings, whose result only the yield carries (a matmul), keeps that
 *     dot in flight across iterations (docs/hopper.md §2.2): the dot gets
 *     `async = 1` and is followed by `warp_group_dot_wait {pending = 1}`,
 *     which the yield carries instead, so the wgmma of iteration i runs
 *     while iteration i + 1 waits for its data and issues its own; after
 *     the loop `warp_group_dot_wait {pending = 0}` completes the last one
 *     before anything reads the accumulator. The ring then has S + 1
 *     stages and the copies, still S - 1 iterations ahead, go between the
 *     dot and its wait, into stage (i + S - 1) mod (S + 1) = (i - 2) mod
 *     (S + 1): the stage of iteration i - 2, whose dot every warpgroup has
 *     waited for (pending = 1 in iteration i - 1) before the barrier at the
 *     top of iteration i. One barrier per iteration:
 *
 *       async_wait {num = (S - 2) * loads}; fence_async_shared; barrier
 *       %acc.2 = warp_group_dot %a_ring[i mod (S+1)], %b_ring[...], %acc.1 {async = 1}
 *       async_copy ... into stage (i - 2) mod (S + 1); async_commit ...
 *       %acc.3 = warp_group_dot_wait %acc.2 {pending = 1}
 *       yield %acc.3, ...
 *   - Warp specialization (PassOptions' target.warp_specialize, or the
 *     kernel attribute warp_specialize; sm_90a): when every ring of a loop
 *     of the kernel's body is fed by TMA, the copies move to a producer
 *     warpgroup (docs/passes.md, "Warp specialization"). The rings, a
 *     `full` and an `empty` barrier per stage and a barrier go before the
 *     split point, the first op that lays a tile over the threads (the
 *     producer threads lie beyond every layout); there `warp_specialize`
 *     holds the producer: the scalars its copies need recomputed, then a
 *     loop over the same bounds that waits for `empty[stage]` (phase xor 1:
 *     the first round passes) and issues the iteration's copies (their
 *     coordinates, a paged cache's block table entries among them, are
 *     computed before the first wait, so that the loads' latency hides
 *     under it). The consumer loop has no prologue and no copies, S
 *     stages (S + 1 with a
 *     dot in flight), no barrier after its `full` wait, and gives each
 *     stage back with `mbarrier_arrive empty` once its reads are done:
 *     after the last synchronous dot that reads it (at the end of the
 *     body when a local_load reads it), or, for a dot in flight, the
 *     previous iteration's stage after `warp_group_dot_wait {pending = 1}`.
 *     With synchronous dots each first reader gets a barrier pair of its
 *     own (attention: %full / %empty for K, read by Q K^T, and %v_full /
 *     %v_empty for V, read by P V): the consumers wait for V right before
 *     P V and give K back right after Q K^T, and the producer waits for
 *     and fills each pair on its own, so that a K stage is refilled while
 *     P V still reads the V stage beside it (overlap-dots, which runs P V
 *     one iteration late, depends on it: with one pair the next copies
 *     would wait for the late P V). One loop per kernel.
 *   - Row vectors (add_row_vectors): in a loop that gets a producer, a
 *     1-D float load whose layout is a slice of the dots' (each thread
 *     holds its columns' elements, several threads the same ones:
 *     attention backward's LSE and Delta, one value a query row), whose
 *     pointer is a box of a tensor (tma_access.c, 1-D tiles) and whose
 *     `other` is zero, is staged too: the producer copies the box into an
 *     unswizzled 1-D ring (#shared, vec 1) beside the dot operands', and
 *     the consumers read their elements with a local_load right before
 *     the first user. The row vectors share one barrier pair, waited for
 *     before the first of their readers and given back at the end of the
 *     body. Without them each consumer thread loads its columns from
 *     global memory in every iteration and waits for them between the
 *     dots (the backward's dK/dV kernel: 5-15% of its time on the H200).
 *     A loop that gets no producer keeps the loads (drop_row_vectors): a
 *     TMA ring of them beside cp.async or plain TMA rings measured slower
 *     than the loads (bench/RESULTS.md).
 *   - One commit group per copy (per load per iteration), as the wait
 *     counts of docs/passes.md assume: the in-loop wait leaves (S - 2) *
 *     loads groups pending
 *     (num_stages 3, A and B: 2 stages, 4 prologue copies, wait 2).
 *   - Copies past the trip count (the prologue of a short loop, the last
 *     S - 1 in-loop ones) are masked off entirely: cp.async with source size
 *     0 reads nothing and zero-fills a stage nobody reads. `wait 0` after
 *     the loop keeps those writes from landing on bytes that later ops
 *     reuse (each later shared-memory writer starts with a barrier).
 *   - cp.async zero-fills masked elements; a load with a non-zero `other`
 *     gets `select(mask, local_load, other)` in the dot operand's layout
 *     (the mask converted with convert_layout), docs/passes.md lit case 14.
 *   - A load before the loop, in its block, whose only use is a local_alloc
 *     whose buffer only local_loads read (attention's Q, loaded once and
 *     read by every iteration's first dot) becomes a copy into that buffer
 *     where the load was, committed as a group of its own (copy_init_loads):
 *     no registers hold Q on its way to shared memory and no thread stores
 *     it. Before the first op that reads the buffer (its local_load, or the
 *     loop when the dot reloads it each iteration) a wait leaves pending
 *     only the groups committed after it (the prologue's), then a barrier.
 *     A barrier goes before the copy when shared memory may be in use
 *     before it.
 *   - With a producer, such a load before the first warp-specialized loop
 *     whose buffer only wgmma reads and which is a box of a tensor whose
 *     origin the producer can compute (attention's Q; not with packed
 *     sequences, whose row bound is a load) is the producer's too
 *     (find_init_tma): its buffer and a barrier `q_full` (one arrival) go
 *     before the split beside the rings; the producer announces its bytes
 *     and copies it before its first loop's copies; the consumers wait on
 *     `q_full` before the buffer's first reader. In a persistent tile
 *     loop the buffer lives through the whole loop (it must fit beside
 *     the rings and the tile's largest scratch, else the consumers keep
 *     their cp.async): a second barrier `q_empty` (an arrival per consumer
 *     warp) gives it back right after its last reader (before the last
 *     P V that overlap-dots moves after the loop), the producer waits for
 *     it (the parity before the consumers') before each tile's copy, and
 *     both tile loops carry the copy's phase, so the next tile's Q loads
 *     under this tile's last P V and epilogue.
 *   - The barrier, the rings and the prologue go right before the loop,
 *     then move up past the ops before it that compute nothing they read
 *     and touch no memory but to load, or to fill and read a buffer
 *     (hoist_prologue), but not past a copy: Q's copy is then in flight
 *     together with the first stages' copies, and committed before them.
 *   - Nested loops: each loop is handled on its own, inner first; the ring
 *     and the prologue sit before the loop, in its block, so an inner loop
 *     gets its prologue once per outer iteration. The barrier before the prologue
 *     keeps the copies from overwriting bytes other warps still read (the
 *     previous outer iteration's last stage, scratch placed on the same
 *     bytes before the ring's live range).
 */
#include "passes.h"

#include "target/target.h"

#include <math.h>
#include <string.h>

typedef struct Candidate {
    IrOp *load;    /* the global load (removed) */
    IrOp *alloc;   /* the local_alloc it initializes (removed) */
    IrValue *ring; /* the ring local_alloc before the loop */
    bool select;   /* other is not zero: select after each local_load */
    /* a TMA copy (NULL: cp.async): the tensor map parameter, and the
     * tile's origin per dimension, computed in the body before the load:
     * coords[box * rank + d], one origin per box of `rows` rows of gathered
     * rows (a paged cache; rows 0: one box of the whole tile) */
    IrValue *map;
    IrValue **coords;
    int rank;
    int64_t rows;
    int boxes;
    /* with a producer: the barrier pair its stages complete on and are
     * given back through (one per first reader, see the essay) */
    int group;
    /* a row vector's local_load (add_row_vectors), or NULL */
    IrOp *row_read;
} Candidate;

enum { MAX_GROUPS = 4, MAX_RINGS = 8 };

/* The producer warpgroup of a kernel and the rings it fills: the first
 * warp-specialized loop sets them up; a later loop of the same block whose
 * operands have the same shapes (attention's masked loop after the
 * unmasked one) takes its stages from the same rings, its producer loop
 * and its consumer loop each starting where the previous one stopped. */
typedef struct Producer {
    IrOp *ws;              /* the warp_specialize op; NULL: none yet */
    IrBlock *block;        /* the block of the consumer loops */
    IrOp *tile;            /* the persistent tile loop holding them, or NULL */
    IrOp *prod_tile;       /* the producer's tile loop, or NULL */
    IrValue *prod_tile_iv; /* its induction variable */
    IrValue *prod[2];      /* stage and phase where the producer's next loop starts */
    IrValue *cons[2];      /* stage and phase where the consumers' next loop starts */
    int num_rings;
    const IrType *types[MAX_RINGS]; /* each ring's stage */
    IrValue *rings[MAX_RINGS];
    int group[MAX_RINGS];
    int groups;
    IrValue *fulls[MAX_GROUPS], *empties[MAX_GROUPS];
    bool async_dot;
    IrOp *teardown[3 + 2 * MAX_GROUPS]; /* without a tile loop: after the last consumer loop */
    int num_teardown;
} Producer;

typedef struct Pipe {
    IrModule *m;
    IrFunc *f;
    bool tma; /* the target has TMA (sm_90a) */
    bool ws;  /* warp specialization asked for (and not yet done in this kernel) */
    /* while the producer region is built: values of the kernel's body the
     * region recomputes (its clones), NULL otherwise */
    IrMap *imports;
    /* while issue_copies clones addresses for an iteration: the predicate
     * of its copies (guard_load) */
    IrValue *copy_pred;
    int num_stages;
    int num_warps;
    int64_t min_programs; /* the kernel attribute min_programs_per_sm; 0 without it */
    int64_t smem_limit;   /* bytes of shared memory a program may take (tg_shared_limit) */
    Candidate *cands;
    int num_cands, cap_cands;
    Producer prod;
} Pipe;

/* Is v defined inside block b (in it or in a region nested in it)? */
static bool defined_in(const IrValue *v, const IrBlock *b) {
    const IrBlock *blk = v->def ? v->def->parent : v->block;
    while (blk) {
        if (blk == b)
            return true;
        blk = blk->parent_op ? blk->parent_op->parent : NULL;
    }
    return false;
}

/* Can v be recomputed for another iteration from the induction variable and
 * loop invariants alone (see the essay)? Loads of read-only memory count:
 * re-reading them for another iteration reads what that iteration would
 * (a paged cache's block table, which gives the copies' addresses). */
static bool rematerializable(const IrValue *v, const IrBlock *body, int depth) {
    if (!defined_in(v, body))
        return true;
    if (v == body->args[0])
        return true;
    if (!v->def || v->def->parent != body || depth > 64)
        return false;
    const IrOp *op = v->def;
    bool ro_load = op->opc == IR_OP_LOAD && ir_points_to_readonly(op->operands[0]);
    if (!(ir_op_info[op->opc].flags & OPF_PURE || ro_load) || op->num_regions)
        return false;
    for (int i = 0; i < op->num_operands; i++)
        if (!rematerializable(op->operands[i], body, depth + 1))
            return false;
    return true;
}

/* A read-only load cloned for another iteration reads only where that
 * iteration's copies are issued (p->copy_pred: past the trip count the
 * program would not have read it, and its addresses may be out of range):
 * its mask gets `and` the predicate, its other value 0 if it had none. */
static void guard_load(Pipe *p, IrOp *load) {
    IrBuilder b;
    ir_builder_before(&b, load);
    b.loc = load->loc;
    const IrType *rt = load->results[0]->type;
    IrValue *pred = p->copy_pred;
    if (rt->kind == IR_TILE)
        pred = ir_build_unary(&b, IR_OP_SPLAT, ir_type_with_elem(p->m, rt, ir_type_scalar(p->m, IR_I1)), pred);
    IrValue *ops[3] = {load->operands[0], pred, NULL};
    if (load->num_operands > 1)
        ops[1] = ir_build_binary(&b, IR_OP_AND, pred->type, load->operands[1], pred);
    if (load->num_operands > 2) {
        ops[2] = load->operands[2];
    } else {
        ops[2] = ir_type_is_float(ir_type_elem(rt)) ? ir_build_const_float(&b, rt, 0.0) : ir_build_const_int(&b, rt, 0);
    }
    ir_op_set_operands(p->m, load, 3, ops);
}

/* v for the iteration whose induction variable is map[iv]: clones the
 * body's ops v depends on before b's position (map records the clones). */
static IrValue *clone_at(Pipe *p, IrBuilder *b, IrValue *v, const IrBlock *body, IrMap *map) {
    if (!defined_in(v, body)) {
        IrValue *imported = p->imports ? ir_map_get(p->imports, v) : NULL;
        if (imported) /* the clones below read it through map */
            ir_map_put(map, v, imported);
        return imported ? imported : v;
    }
    IrValue *done = ir_map_get(map, v);
    if (done)
        return done;
    IrOp *op = v->def;
    for (int i = 0; i < op->num_operands; i++)
        clone_at(p, b, op->operands[i], body, map);
    IrOp *copy = ir_op_clone(p->m, op, map);
    copy->loc = b->loc;
    if (b->before)
        ir_op_insert_before(b->before, copy);
    else
        ir_block_append(b->block, copy);
    if (op->opc == IR_OP_LOAD && p->copy_pred)
        guard_load(p, copy);
    return ir_map_get(map, v);
}

static int64_t vec_bytes(const IrOp *load) {
    const IrType *t = load->results[0]->type;
    return ir_op_get_int(load, "vec", 1) * ir_type_bits(t->elem) / 8;
}

static bool is_nvmma(const IrValue *buf) {
    return buf->type->layout && buf->type->layout->kind == LAYOUT_NVMMA_SHARED;
}

/* Is other absent or +0 (what cp.async's zero fill gives)? */
static bool zero_other(const IrOp *load) {
    if (load->num_operands < 3)
        return true;
    double d;
    return ir_value_const_number(load->operands[2], &d) && d == 0 && !signbit(d);
}

/* The local_alloc in body that stores v, when it is v's only use. */
static IrOp *alloc_of(IrBlock *body, IrValue *v) {
    if (ir_count_uses(body, v) != 1)
        return NULL;
    for (IrOp *op = body->first; op; op = op->next)
        if (op->opc == IR_OP_LOCAL_ALLOC && op->num_operands == 1 && op->operands[0] == v)
            return op;
    return NULL;
}

/* Is v an operand (A or B) of op, a warp_group_dot? */
static bool wgmma_operand(const IrOp *op, const IrValue *v) {
    return op->opc == IR_OP_WARP_GROUP_DOT && (op->operands[0] == v || op->operands[1] == v);
}

/* Does op, a warp_group_dot, read buf (directly or through a view)? */
static bool wgmma_reads(const IrOp *op, const IrValue *buf) {
    return op->opc == IR_OP_WARP_GROUP_DOT &&
           (ir_view_buffer(op->operands[0]) == buf || ir_view_buffer(op->operands[1]) == buf);
}

/* Does op read buf (a local_load or a warp_group_dot), or make a view of
 * it (memdesc_trans, which goes with its readers: it is before them)? */
static bool reads_buffer(const IrOp *op, const IrValue *buf) {
    return (op->opc == IR_OP_LOCAL_LOAD && ir_view_buffer(op->operands[0]) == buf) || wgmma_reads(op, buf) ||
           (op->opc == IR_OP_MEMDESC_TRANS && op->operands[0] == buf);
}

static bool feeds_dot(IrBlock *body, IrValue *buf);

/* Is v (a local_load of a narrow operand's stage) cast, and the cast staged
 * for a dot (stage-shared's narrow operands)? */
static bool cast_feeds_dot(IrBlock *body, const IrValue *v) {
    for (IrOp *u = body->first; u; u = u->next) {
        if (u->opc != IR_OP_CAST || u->operands[0] != v)
            continue;
        for (IrOp *a = u->next; a; a = a->next)
            if (a->opc == IR_OP_LOCAL_ALLOC && a->num_operands == 1 && a->operands[0] == u->results[0] &&
                feeds_dot(body, a->results[0]))
                return true;
    }
    return false;
}

/* Are all uses of the buffer local_loads of body, one of them feeding a dot
 * of body (directly, or cast and staged again: cast_feeds_dot), operands of
 * warp_group_dots of body (which read shared memory themselves), or
 * memdesc_trans views that only warp_group_dots read? */
static bool feeds_dot(IrBlock *body, IrValue *buf) {
    int loads = 0;
    bool dot = false;
    for (IrOp *op = body->first; op; op = op->next) {
        if (op->opc == IR_OP_MEMDESC_TRANS && op->operands[0] == buf) {
            int readers = 0;
            for (IrOp *u = op->next; u; u = u->next)
                readers += wgmma_operand(u, op->results[0]);
            if (readers != ir_count_uses(body, op->results[0]))
                return false;
            loads++;
            dot |= readers > 0;
            continue;
        }
        if (wgmma_operand(op, buf)) {
            loads++;
            dot = true;
            continue;
        }
        if (op->opc != IR_OP_LOCAL_LOAD || op->operands[0] != buf)
            continue;
        loads++;
        IrValue *r = op->results[0];
        for (IrOp *u = op->next; u; u = u->next)
            if (u->opc == IR_OP_DOT && (u->operands[0] == r || u->operands[1] == r))
                dot = true;
        dot |= cast_feeds_dot(body, r);
    }
    return dot && loads == ir_count_uses(body, buf);
}

static void add_candidate(Pipe *p, IrOp *load, IrOp *alloc) {
    if (p->num_cands == p->cap_cands) {
        int cap = p->cap_cands ? 2 * p->cap_cands : 4;
        p->cands = arena_grow(&p->m->arena, p->cands, sizeof(Candidate) * (size_t)p->num_cands,
                              sizeof(Candidate) * (size_t)cap);
        p->cap_cands = cap;
    }
    p->cands[p->num_cands++] = (Candidate){load, alloc, NULL, !zero_other(load), NULL, NULL, 0, 0, 0, 0, NULL};
}

/* Makes c a TMA copy when the target has TMA, its ring is read by wgmma
 * (#nvmma_shared: the layout TMA writes) and the load is a box of a tensor
 * (tma_access.c): the box is one swizzle width along the contiguous axis
 * (at most 256 elements along the other), as many boxes as tile the
 * buffer; the origin's coordinates are computed before the load, where the
 * copies for other iterations clone them from. Gathered rows (a paged
 * cache) take one copy per run of rows, each with its own origin: runs of
 * whole swizzle atoms (8 rows), at most MAX_ROW_BOXES of them. */
enum { MAX_ROW_BOXES = 32 };

/* The plan of a TMA copy of `load` into a buffer of type bt (see above):
 * false when it is not a box of a tensor, or its boxes do not tile the
 * buffer; else *a holds the map and *boxes the copies per buffer. Builds
 * nothing. */
static bool tma_plan(Pipe *p, AxisInfoMap *ai, const IrOp *load, const IrType *bt, TmaAccess *a, int *boxes) {
    const Layout *l = bt->layout;
    if (!p->tma || !l || l->kind != LAYOUT_NVMMA_SHARED || bt->rank != 2)
        return false;
    if (!tma_match_load(p->f, ai, load, l->nvmma.order[0], a))
        return false;
    int eb = ir_type_bytes(bt->elem), ca = a->contig_axis;
    int64_t inner = l->nvmma.swizzle / eb;
    a->map.box[0] = bt->shape[ca] < inner ? bt->shape[ca] : inner;
    a->map.box[1] = a->rows ? a->rows : bt->shape[1 - ca] < 256 ? bt->shape[1 - ca] : 256;
    *boxes = a->rows ? (int)(bt->shape[1 - ca] / a->rows) : 1;
    int64_t atom = 8 * (l->nvmma.swizzle ? l->nvmma.swizzle : 16);
    if (a->rows && ((a->rows * a->map.box[0] * eb) % atom || *boxes > MAX_ROW_BOXES))
        return false;
    for (int d = 2; d < a->map.rank; d++)
        a->map.box[d] = 1;
    a->map.swizzle = l->nvmma.swizzle;
    return bt->shape[ca] % a->map.box[0] == 0 && bt->shape[1 - ca] % a->map.box[1] == 0 &&
           (a->map.box[0] * eb) % 16 == 0;
}

/* Commits a plan of tma_plan for c: the tensor map parameter, and the
 * origins of c's boxes computed right before its load. */
static void tma_commit(Pipe *p, Candidate *c, const TmaAccess *a, int boxes) {
    c->map = tma_map_param(p->m, p->f, &a->map);
    IrBuilder b;
    ir_builder_before(&b, c->load);
    b.loc = c->load->loc;
    c->rank = a->map.rank;
    c->rows = a->rows;
    c->boxes = boxes;
    c->coords = arena_alloc(&p->m->arena, sizeof(IrValue *) * (size_t)(boxes * c->rank));
    for (int x = 0; x < boxes; x++)
        for (int d = 0; d < c->rank; d++)
            c->coords[x * c->rank + d] = tma_build_coord(&b, a, d, x * a->rows);
}

static void plan_tma(Pipe *p, AxisInfoMap *ai, Candidate *c) {
    TmaAccess a;
    int boxes;
    if (tma_plan(p, ai, c->load, c->alloc->results[0]->type, &a, &boxes))
        tma_commit(p, c, &a, boxes);
}

/* ---- row vectors (see the essay) ---- */

/* Is `load` a row vector the pipeline may stage: a 1-D float load of the
 * body in a slice layout (each element in several threads), other zero,
 * its pointer and mask computed from the induction variable and loop
 * invariants? */
static bool row_vector(const IrBlock *body, const IrOp *load) {
    if (load->opc != IR_OP_LOAD)
        return false;
    const IrType *t = load->results[0]->type;
    if (t->kind != IR_TILE || t->rank != 1 || !ir_type_is_float(t->elem) || !t->layout ||
        t->layout->kind != LAYOUT_SLICE || !zero_other(load))
        return false;
    return rematerializable(load->operands[0], body, 0) &&
           (load->num_operands < 2 || rematerializable(load->operands[1], body, 0));
}

/* The row vectors of a loop whose dot operands are pipelined, where a
 * producer is asked for and the target has TMA, become candidates when
 * the load is a box of a tensor whose stage is a multiple of 128 bytes
 * (each stage a TMA destination): a local_alloc of the load into an
 * unswizzled buffer, and a local_load back in the load's layout right
 * before its first user (Candidate.row_read), which the pipeline then
 * reads from the ring. */
static void add_row_vectors(Pipe *p, AxisInfoMap *ai, IrBlock *body) {
    if (!p->ws || !p->tma)
        return;
    IrModule *m = p->m;
    for (IrOp *op = body->first, *next; op; op = next) {
        next = op->next;
        if (!row_vector(body, op))
            continue;
        IrValue *v = op->results[0];
        TmaAccess a;
        int64_t n = v->type->shape[0], eb = ir_type_bytes(v->type->elem);
        /* each stage of the ring a TMA destination: 128-byte aligned (allocate-shared aligns the ring) */
        if (n > 256 || (n * eb) % 128 || !tma_match_load(p->f, ai, op, 0, &a))
            continue;
        Layout plain = {.kind = LAYOUT_SHARED, .rank = 1, .shared = {1, 1, 1, {0}}};
        const IrType *st = ir_type_smem(m, v->type->elem, 1, v->type->shape, ir_layout_intern(m, &plain));
        IrOp *alloc = ir_op_create(m, IR_OP_LOCAL_ALLOC, 1, &v, 1, &st);
        alloc->loc = op->loc;
        ir_op_insert_after(op, alloc);
        IrOp *user = alloc->next;
        while (user && !pass_op_uses(user, v))
            user = user->next;
        IrOp *read = ir_op_create(m, IR_OP_LOCAL_LOAD, 1, &alloc->results[0], 1, &v->type);
        read->loc = op->loc;
        ir_op_insert_before(user ? user : alloc->next, read);
        ir_replace_all_uses(body, v, read->results[0]);
        ir_op_set_operand(alloc, 0, v); /* the alloc's operand was one of those uses */
        read->results[0]->name = v->name;
        add_candidate(p, op, alloc);
        Candidate *c = &p->cands[p->num_cands - 1];
        c->row_read = read;
        for (int d = 0; d < a.map.rank; d++)
            a.map.box[d] = d ? 1 : n;
        a.map.swizzle = 0;
        tma_commit(p, c, &a, 1);
        next = alloc->next;
    }
}

/* Undoes add_row_vectors in a loop that gets no producer: the loads are
 * read directly again (a TMA ring of them outside a producer loop waits
 * with the dots' rings, and costs more than each thread's own loads). */
static void drop_row_vectors(Pipe *p, IrBlock *body) {
    int kept = 0, num_maps = 0;
    IrValue *maps[MAX_RINGS];
    for (int i = 0; i < p->num_cands; i++) {
        Candidate *c = &p->cands[i];
        if (!c->row_read) {
            p->cands[kept++] = *c;
            continue;
        }
        if (num_maps < MAX_RINGS)
            maps[num_maps++] = c->map;
        IrValue *r = c->row_read->results[0], *v = c->load->results[0];
        ir_replace_all_uses(body, r, v);
        ir_op_unlink(c->row_read);
        ir_op_unlink(c->alloc);
    }
    p->num_cands = kept;
    /* their tensor maps, the kernel's last parameters (unless another
     * access shares them), go too: the launch would encode them for nothing */
    IrBlock *params = p->f->body;
    while (params->num_args > 0) {
        IrValue *last = params->args[params->num_args - 1];
        bool dropped = false;
        for (int i = 0; i < num_maps; i++)
            dropped |= maps[i] == last;
        if (!dropped || ir_count_uses(params, last) != 0)
            break;
        params->num_args--;
    }
}

static void find_candidates(Pipe *p, IrBlock *body) {
    p->num_cands = 0;
    AxisInfoMap *ai = p->tma ? axis_info_run(p->f) : NULL; /* gathered rows' proof */
    for (IrOp *op = body->first; op; op = op->next) {
        if (op->opc != IR_OP_LOAD || op->results[0]->type->kind != IR_TILE)
            continue;
        IrOp *alloc = alloc_of(body, op->results[0]);
        if (!alloc || !feeds_dot(body, alloc->results[0]))
            continue;
        if (!zero_other(op) && is_nvmma(alloc->results[0]))
            continue; /* wgmma reads the buffer itself: no select after a local_load can give `other` */
        bool ok = rematerializable(op->operands[0], body, 0) &&
                  (op->num_operands < 2 || rematerializable(op->operands[1], body, 0));
        if (!ok)
            continue;
        /* cp.async needs copies of 4 bytes or more; TMA moves whole boxes
         * whatever the mask (a K tail that is not a multiple of 8) */
        add_candidate(p, op, alloc);
        plan_tma(p, ai, &p->cands[p->num_cands - 1]);
        if (vec_bytes(op) < 4 && !p->cands[p->num_cands - 1].map)
            p->num_cands--;
    }
    if (p->num_cands)
        add_row_vectors(p, ai, body);
    axis_info_free(ai);
}

/* lb + s * step (lb itself for s = 0), before b's position. */
static IrValue *iv_plus(IrBuilder *b, IrValue *base, IrValue *step, int64_t s) {
    if (s == 0)
        return base;
    const IrType *t = base->type;
    IrValue *n = ir_build_const_int(b, t, s);
    return ir_build_binary(b, IR_OP_ADD, t, base, ir_build_binary(b, IR_OP_MUL, t, n, step));
}

/* The TMA coordinates of every candidate's copies for the iteration whose
 * induction variable is iv_s (valid when pred), computed at b into
 * `clones` (which issue_copies then reuses): a paged cache's block
 * table entries are read before the producer waits for a free stage, so
 * that their latency hides under the wait. */
static void clone_coords(Pipe *p, IrBuilder *b, IrBlock *body, IrMap *clones, IrValue *iv_s, IrValue *pred) {
    ir_map_init(clones, &p->m->arena);
    ir_map_put(clones, body->args[0], iv_s);
    p->copy_pred = pred;
    for (int i = 0; i < p->num_cands; i++) {
        Candidate *c = &p->cands[i];
        b->loc = c->load->loc;
        for (int d = 0; c->map && d < c->boxes * c->rank; d++)
            clone_at(p, b, c->coords[d], body, clones);
    }
    p->copy_pred = NULL;
}

/* Issues the copy of every candidate (of `group`; -1: all) for the
 * iteration whose induction variable is iv_s (valid when pred), into stage
 * `stage` of its ring, each followed by a commit; `clones` (or NULL) holds
 * values already computed for that iteration (clone_coords). */
static void issue_copies(Pipe *p, IrBuilder *b, IrBlock *body, IrMap *clones, IrValue *iv_s, IrValue *pred,
                         IrValue *stage, IrValue *bars, int group) {
    IrMap own, *cl = clones;
    if (!cl) {
        cl = &own;
        ir_map_init(cl, &p->m->arena);
        ir_map_put(cl, body->args[0], iv_s);
    }
    p->copy_pred = pred;
    int64_t tma_bytes = 0;
    for (int i = 0; i < p->num_cands; i++)
        if (p->cands[i].map && (group < 0 || p->cands[i].group == group)) {
            const IrType *t = p->cands[i].alloc->results[0]->type;
            tma_bytes += ir_type_size_bytes(t);
        }
    if (tma_bytes) {
        b->loc = body->parent_op->loc;
        IrValue *ops[3] = {bars, stage, pred};
        IrOp *e = ir_build_op(b, IR_OP_MBARRIER_EXPECT, 3, ops, 0, NULL);
        ir_op_set_int(p->m, e, "bytes", tma_bytes);
    }
    for (int i = 0; i < p->num_cands; i++) {
        Candidate *c = &p->cands[i];
        if (group >= 0 && c->group != group)
            continue;
        b->loc = c->load->loc;
        if (c->map) {
            IrValue *ops[5 + IR_MAX_TMAP_RANK] = {c->map, NULL, bars, stage, pred};
            ops[1] = ir_build_binary(b, IR_OP_MEMDESC_INDEX, c->alloc->results[0]->type, c->ring, stage);
            for (int x = 0; x < c->boxes; x++) {
                for (int d = 0; d < c->rank; d++)
                    ops[5 + d] = clone_at(p, b, c->coords[x * c->rank + d], body, cl);
                IrOp *copy = ir_build_op(b, IR_OP_ASYNC_TMA_COPY, 5 + c->rank, ops, 0, NULL);
                if (c->rows) {
                    ir_op_set_int(p->m, copy, "row", x * c->rows);
                    ir_op_set_int(p->m, copy, "rows", c->rows);
                }
            }
            continue;
        }
        IrValue *ptrs = clone_at(p, b, c->load->operands[0], body, cl);
        const IrType *mt = ir_type_with_elem(p->m, ptrs->type, ir_type_scalar(p->m, IR_I1));
        IrValue *mask = ir_build_unary(b, IR_OP_SPLAT, mt, pred);
        if (c->load->num_operands > 1)
            mask = ir_build_binary(b, IR_OP_AND, mt, clone_at(p, b, c->load->operands[1], body, cl), mask);
        IrValue *dst = ir_build_binary(b, IR_OP_MEMDESC_INDEX, c->alloc->results[0]->type, c->ring, stage);
        IrValue *ops[3] = {ptrs, dst, mask};
        IrOp *copy = ir_build_op(b, IR_OP_ASYNC_COPY, 3, ops, 0, NULL);
        ir_op_set_int(p->m, copy, "vec", ir_op_get_int(c->load, "vec", 1)); /* the width coalesce proved */
        ir_build_op(b, IR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    }
    p->copy_pred = NULL;
}

static IrOp *build_wait(IrBuilder *b, int64_t num) {
    IrOp *w = ir_build_op(b, IR_OP_ASYNC_WAIT, 0, NULL, 0, NULL);
    ir_op_set_int(b->m, w, "num", num);
    return w;
}

/* Adds a loop-carried value to `loop`: init, body argument (returned),
 * result; the yield gets `next` later through set_yield_last. */
/* After a local_load of a load with a non-zero `other`: the elements the
 * mask left out get `other` (cp.async wrote zeros there). */
static void select_other(Pipe *p, Candidate *c, IrOp *ll) {
    IrModule *m = p->m;
    IrValue *v = ll->results[0];
    const IrType *t = v->type;
    IrBuilder b;
    ir_builder_before(&b, ll->next);
    b.loc = ll->loc;
    IrValue *mask = c->load->operands[1];
    IrValue *mask_t = ir_build_unary(&b, IR_OP_CONVERT_LAYOUT, ir_type_with_layout(m, mask->type, t->layout), mask);
    IrValue *other = c->load->operands[2], *other_t;
    int64_t iv;
    double d;
    if (ir_type_is_int(t->elem) && ir_value_const_int(other, &iv))
        other_t = ir_build_const_int(&b, t, iv);
    else if (ir_value_const_number(other, &d))
        other_t = ir_build_const_float(&b, t, d);
    else
        other_t = ir_build_unary(&b, IR_OP_CONVERT_LAYOUT, t, other);
    IrValue *ops[3] = {mask_t, v, other_t};
    IrValue *sel = ir_build(&b, IR_OP_SELECT, t, 3, ops);
    ir_replace_all_uses(ll->parent, v, sel);
    ir_op_set_operand(sel->def, 1, v);
}

/* May the prologue [first, last] move above op? When op computes nothing
 * the prologue reads and is a pure op without shared-memory scratch, a
 * global load, a local_alloc that stores a value or a local_load (attention's
 * Q, loaded, stored, read back as the dot operand): the copies then start
 * while those loads are in flight, instead of after the local_alloc has
 * waited for them. Liveness keeps the rings' bytes apart from the buffers
 * they now overlap in time (allocate-shared). */
static bool can_hoist_past(Pipe *p, const IrOp *op, const IrOp *first, const IrOp *last) {
    if (op->num_regions || (ir_op_info[op->opc].flags & OPF_TERMINATOR))
        return false;
    bool init_alloc = op->opc == IR_OP_LOCAL_ALLOC && op->num_operands == 1;
    bool pure = (ir_op_info[op->opc].flags & OPF_PURE) && tg_scratch_bytes(op, p->num_warps) == 0;
    if (!init_alloc && !pure && op->opc != IR_OP_LOAD && op->opc != IR_OP_LOCAL_LOAD)
        return false;
    for (const IrOp *q = first;; q = q->next) {
        for (int i = 0; i < q->num_operands; i++)
            for (int r = 0; r < op->num_results; r++)
                if (q->operands[i] == op->results[r])
                    return false;
        if (q == last)
            break;
    }
    return true;
}

/* Moves the prologue [first, last] up past the ops before it that it may
 * pass (can_hoist_past), keeping their order. */
static void hoist_prologue(Pipe *p, IrOp *first, IrOp *last) {
    IrOp *pos = first->prev;
    while (pos && can_hoist_past(p, pos, first, last))
        pos = pos->prev;
    if (pos == first->prev)
        return;
    IrOp *before = pos ? pos->next : first->parent->first;
    for (IrOp *op = first, *next; op; op = next) {
        next = op == last ? NULL : op->next;
        ir_op_unlink(op);
        ir_op_insert_before(before, op);
    }
}

/* A load before the loop that only initializes a buffer read by local_loads
 * (attention's Q), turned into a copy: its buffer and its commit. */
typedef struct InitCopy {
    IrValue *buf;
    IrOp *commit;
} InitCopy;

static void count_local_loads(IrOp *op, void *ctx) {
    void **c = ctx;
    if ((op->opc == IR_OP_LOCAL_LOAD || op->opc == IR_OP_MEMDESC_TRANS) && op->operands[0] == c[0])
        (*(int *)c[1])++;
    if (op->opc == IR_OP_WARP_GROUP_DOT)
        for (int i = 0; i < 2; i++)
            if (op->operands[i] == c[0])
                (*(int *)c[1])++;
}

/* Is every use of buf in blk (nested regions included) a local_load or a
 * warp_group_dot's shared operand? */
static bool only_local_loads(IrBlock *blk, IrValue *buf) {
    int n = 0;
    void *ctx[2] = {buf, &n};
    ir_walk_block(blk, count_local_loads, ctx);
    return n == ir_count_uses(blk, buf);
}

/* May shared memory be in use before op: a shared-memory op or one with
 * scratch before it in its block, or a block nested in another op? */
static bool shared_used_before(Pipe *p, const IrOp *op) {
    if (op->parent->parent_op)
        return true;
    for (const IrOp *q = op->prev; q; q = q->prev) {
        if (q->num_regions || tg_scratch_bytes(q, p->num_warps) > 0)
            return true;
        switch (q->opc) {
        case IR_OP_LOCAL_ALLOC:
        case IR_OP_LOCAL_LOAD:
        case IR_OP_ASYNC_COPY:
        case IR_OP_MEMDESC_INDEX: return true;
        default: break;
        }
    }
    return false;
}

/* The loads before `loop` in its block whose only use is a local_alloc whose
 * buffer only local_loads read (Q of attention, loaded once and read by
 * every iteration's first dot) become copies into that buffer, each
 * committed as its own group, in place: they are then in flight together
 * with the prologue's copies (issued after them), without registers and
 * without shared-memory stores; not `skip` (the producer copies it). Returns
 * how many; init[] gets them. */
static int copy_init_loads(Pipe *p, IrOp *loop, const IrOp *skip, InitCopy *init, int cap) {
    IrModule *m = p->m;
    IrBlock *blk = loop->parent;
    int n = 0;
    for (IrOp *op = blk->first, *next; op && op != loop && n < cap; op = next) {
        next = op->next;
        if (op == skip || op->opc != IR_OP_LOAD || op->results[0]->type->kind != IR_TILE || vec_bytes(op) < 4 ||
            !zero_other(op))
            continue;
        IrOp *alloc = alloc_of(blk, op->results[0]);
        if (!alloc || !only_local_loads(blk, alloc->results[0]))
            continue;
        IrBuilder b;
        ir_builder_before(&b, op);
        b.loc = op->loc;
        if (shared_used_before(p, op))
            ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL); /* earlier readers of these bytes */
        const IrType *bt = alloc->results[0]->type;
        IrOp *buf = ir_build_op(&b, IR_OP_LOCAL_ALLOC, 0, NULL, 1, &bt);
        buf->loc = alloc->loc;
        if (alloc->results[0]->name)
            ir_value_set_name(m, buf->results[0], alloc->results[0]->name);
        IrValue *ops[3] = {op->operands[0], buf->results[0], op->num_operands > 1 ? op->operands[1] : NULL};
        IrOp *copy = ir_build_op(&b, IR_OP_ASYNC_COPY, ops[2] ? 3 : 2, ops, 0, NULL);
        ir_op_set_int(m, copy, "vec", ir_op_get_int(op, "vec", 1));
        init[n].commit = ir_build_op(&b, IR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
        init[n++].buf = buf->results[0];
        ir_replace_all_uses(blk, alloc->results[0], buf->results[0]);
        if (next == alloc)
            next = alloc->next;
        ir_op_unlink(alloc);
        ir_op_unlink(op);
    }
    return n;
}

/* Before the first op after c's commit that reads c's buffer (a local_load,
 * or the loop whose body does): a wait that leaves pending only the groups
 * committed after c's, and a barrier. */
static void wait_for_init(IrOp *loop, const InitCopy *c) {
    IrOp *use = c->commit->next;
    int64_t later = 0;
    for (; use && use != loop; use = use->next) {
        if (use->opc == IR_OP_ASYNC_COMMIT)
            later++;
        bool reads = false;
        for (int i = 0; i < use->num_operands; i++)
            reads |= use->operands[i] == c->buf;
        for (int r = 0; r < use->num_regions; r++)
            reads |= ir_count_uses(use->regions[r], c->buf) > 0;
        if (reads)
            break;
    }
    IrBuilder b;
    ir_builder_before(&b, use ? use : loop);
    b.loc = c->commit->loc;
    build_wait(&b, later);
    if (is_nvmma(c->buf)) /* read by wgmma, through the async proxy */
        ir_build_op(&b, IR_OP_FENCE_ASYNC_SHARED, 0, NULL, 0, NULL);
    ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
}

/* The dot of body that may stay in flight across iterations: the body's
 * only dot, a warp_group_dot reading a ring, whose result only the yield
 * uses (a matmul's accumulator; *carried is its yield operand), or NULL. */
static IrOp *async_dot_of(Pipe *p, IrBlock *body, int *carried) {
    IrOp *dot = NULL;
    for (IrOp *op = body->first; op; op = op->next) {
        if (op->opc == IR_OP_DOT || (op->opc == IR_OP_WARP_GROUP_DOT && dot))
            return NULL;
        if (op->opc == IR_OP_WARP_GROUP_DOT)
            dot = op;
    }
    if (!dot || ir_op_get_int(dot, "async", 0))
        return NULL;
    bool reads_ring = false;
    for (int i = 0; i < p->num_cands; i++)
        reads_ring |= wgmma_reads(dot, p->cands[i].alloc->results[0]);
    /* every buffer it reads must be a ring: a buffer the body refills
     * (a load kept synchronous) would be overwritten under the dot in flight */
    for (int k = 0; k < 2; k++) {
        const IrValue *opnd = ir_view_buffer(dot->operands[k]);
        bool ring = false;
        for (int i = 0; i < p->num_cands; i++)
            ring |= opnd == p->cands[i].alloc->results[0];
        if (opnd->type->kind == IR_SMEM && !ring)
            return NULL;
    }
    IrOp *yield = body->last;
    if (!reads_ring || !yield || yield->opc != IR_OP_YIELD || ir_count_uses(body, dot->results[0]) != 1)
        return NULL;
    for (int i = 0; i < yield->num_operands; i++)
        if (yield->operands[i] == dot->results[0]) {
            *carried = i;
            return dot;
        }
    return NULL;
}

/* ---- warp specialization ---- */

/* May the producer warps run op before the kernel splits (they compute no
 * tile: their thread ids lie beyond every layout)? Scalar arithmetic and
 * scalar loads, buffers without contents, mbarrier set-up and barriers. */
static bool before_split(const IrOp *op) {
    if (op->num_regions || (ir_op_info[op->opc].flags & OPF_TERMINATOR))
        return false;
    if (op->opc == IR_OP_BARRIER || op->opc == IR_OP_MBARRIER_INIT ||
        (op->opc == IR_OP_LOCAL_ALLOC && op->num_operands == 0))
        return true;
    if (!(ir_op_info[op->opc].flags & OPF_PURE) && op->opc != IR_OP_LOAD)
        return false;
    for (int i = 0; i < op->num_operands; i++)
        if (!ir_type_is_scalar(op->operands[i]->type))
            return false;
    for (int r = 0; r < op->num_results; r++)
        if (!ir_type_is_scalar(op->results[r]->type))
            return false;
    return true;
}

/* Can the producer region recompute v, a value of the kernel's body that
 * `after` (the ops from the split to the loop) may define: a parameter, a
 * value defined before the split, or a scalar op after it (pure, or a
 * scalar load) over such values? */
static bool importable(const IrValue *v, const IrMap *after, int depth) {
    if (!v->def) /* a parameter or the tile loop's induction variable; not a value a loop carries */
        return !v->block || !v->block->parent_op || (v->block->parent_op->opc == IR_OP_FOR && v->index == 0);
    if (!ir_map_get(after, v->def))
        return true;
    const IrOp *op = v->def;
    if (depth > 64 || op->num_results != 1 || !before_split(op) || op->opc == IR_OP_BARRIER ||
        op->opc == IR_OP_LOCAL_ALLOC || op->opc == IR_OP_MBARRIER_INIT)
        return false;
    for (int i = 0; i < op->num_operands; i++)
        if (!importable(op->operands[i], after, depth + 1))
            return false;
    return true;
}

/* Does every value outside the loop body that the copies of iteration iv
 * need (through v, a value of the body or not) pass importable? */
static bool copies_importable(const IrValue *v, const IrBlock *body, const IrMap *after, int depth) {
    if (!defined_in(v, body))
        return importable(v, after, 0);
    if (!v->def) /* the induction variable; not a value the loop carries */
        return v == body->args[0];
    if (depth > 64)
        return true;
    for (int i = 0; i < v->def->num_operands; i++)
        if (!copies_importable(v->def->operands[i], body, after, depth + 1))
            return false;
    return true;
}

/* Clones v (importable) into the producer region at b, its operands first;
 * p->imports records the clones. */
static IrValue *import_value(Pipe *p, IrBuilder *b, IrValue *v, const IrMap *after) {
    IrValue *done = ir_map_get(p->imports, v);
    if (done)
        return done;
    if (!v->def || !ir_map_get(after, v->def))
        return v;
    IrOp *op = v->def;
    for (int i = 0; i < op->num_operands; i++)
        import_value(p, b, op->operands[i], after);
    IrOp *copy = ir_op_clone(p->m, op, p->imports);
    if (b->before)
        ir_op_insert_before(b->before, copy);
    else
        ir_block_append(b->block, copy);
    return ir_map_get(p->imports, v);
}

/* Imports every value outside the body that iteration iv's copies use. */
static void import_copies(Pipe *p, IrBuilder *b, IrValue *v, const IrBlock *body, const IrMap *after) {
    if (!defined_in(v, body)) {
        import_value(p, b, v, after);
        return;
    }
    if (!v->def)
        return;
    for (int i = 0; i < v->def->num_operands; i++)
        import_copies(p, b, v->def->operands[i], body, after);
}

/* The split point of a kernel whose loop gets a producer warpgroup: the
 * first op of the body that the producer warps may not run (before_split),
 * or NULL when the loop cannot be specialized: it is not in the kernel's
 * body, or a value its copies need cannot be recomputed past that point.
 * *after gets the ops from the split to the loop. */
static bool producer_can_run(Pipe *p, IrOp *loop, IrOp *tile, IrOp *from, IrMap *after) {
    IrOp *outer = tile ? tile : loop;
    for (IrOp *op = from;; op = op->next) {
        ir_map_put(after, op, op);
        if (op == outer)
            break;
    }
    /* the tile's ops before the loop: the producer's tile loop recomputes
     * what its copies need of them */
    for (IrOp *op = tile ? tile->regions[0]->first : NULL; op; op = op->next) {
        ir_map_put(after, op, op);
        if (op == loop)
            break;
    }
    IrBlock *body = loop->regions[0];
    for (int i = 0; i < 3; i++)
        if (!importable(loop->operands[i], after, 0) || (tile && !importable(tile->operands[i], after, 0)))
            return false;
    for (int i = 0; i < p->num_cands; i++)
        for (int d = 0; d < p->cands[i].boxes * p->cands[i].rank; d++)
            if (!copies_importable(p->cands[i].coords[d], body, after, 0))
                return false;
    return true;
}

static IrOp *split_point(Pipe *p, IrOp *loop, IrOp *tile, IrMap *after) {
    IrOp *outer = tile ? tile : loop;
    if (outer->parent != p->f->body)
        return NULL;
    IrOp *split = p->f->body->first;
    while (split != outer && before_split(split))
        split = split->next;
    return producer_can_run(p, loop, tile, split, after) ? split : NULL;
}

/* Registers a consumer thread needs for the tiles of the loop's dots: the
 * accumulators the loop carries, the ones its dots start from zeros, and
 * their operands in registers (32-bit registers, over the consumer
 * threads). A rough count of what stays live across the loop's dots. */
static int64_t dot_registers(const IrOp *loop, int num_warps) {
    int64_t regs = 0;
    const IrBlock *body = loop->regions[0];
    for (int i = 0; i < loop->num_results; i++)
        if (loop->results[i]->type->kind == IR_TILE)
            regs += tg_value_regs(loop->results[i]->type, num_warps);
    for (const IrOp *op = body->first; op; op = op->next) {
        if (op->opc != IR_OP_WARP_GROUP_DOT)
            continue;
        const IrOp *acc = op->operands[2]->def;
        if (acc && acc->opc == IR_OP_CONSTANT)
            regs += tg_value_regs(op->results[0]->type, num_warps);
        if (op->operands[0]->type->kind == IR_TILE)
            regs += tg_value_regs(op->operands[0]->type, num_warps);
    }
    return regs;
}

/* The producer region: `warp_specialize` before the split, with the
 * registers moved to the consumers; in a tile loop, a producer tile loop
 * over the same tiles that carries the ring's stage and phase from one
 * tile to the next. Its producer loops come later (producer_loop). */
static void producer_region(Pipe *p, IrOp *loop, IrOp *tile, IrOp *split, const IrMap *after) {
    IrModule *m = p->m;
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrOp *ws = ir_op_create(m, IR_OP_WARP_SPECIALIZE, 0, NULL, 0, NULL);
    ws->loc = loop->loc;
    ir_op_insert_before(split, ws);
    int threads = (p->num_warps + 4) * 32;
    /* min_programs_per_sm (the kernel attribute, tc_options' through the
     * driver; codegen's .minnctapersm): the programs one SM must hold at
     * once, 1 without it */
    int64_t programs = p->min_programs;
    if (programs < 1)
        programs = 1;
    if (threads * programs > 256) {
        /* Registers move from the producer warps to the others. The program
         * holds threads x R registers, R what ptxas can give each thread
         * with `programs` programs per SM (a multiple of 8); setmaxnreg.inc
         * waits until the decrements have freed what it takes, so the two
         * counts must fit in those, not in the SM's 64K (else the consumers
         * wait forever). One program: 8 consumer warps R 168, 40 and 232;
         * 16: R 96, 40 and 104. Two programs of 4 consumer warps: R 128, 40
         * and 216. Consumers whose dots' tiles take more than 224 of their
         * registers (the backward's dK/dV loop: dK, dV, S^T, dP^T, dQ and
         * the P^T and dS^T operands, 256 at head dim 128) get 8 more, the
         * producer keeping 24 (as FlashAttention-3's): at 232 ptxas
         * serialized their wgmmas. Elsewhere 40: the forward at head dim 256
         * measured 1-2% slower with 24 (bench/RESULTS.md). */
        int launch = (int)(65536 / threads / programs / 8 * 8);
        int producer = dot_registers(loop, p->num_warps) > 224 ? 24 : 40;
        int consumer = (threads * launch - 4 * 32 * producer) / (p->num_warps * 32) / 8 * 8;
        if (consumer > 256)
            consumer = 256;
        if (consumer > launch) {
            ir_op_set_int(m, ws, "producer_regs", producer);
            ir_op_set_int(m, ws, "consumer_regs", consumer);
        }
    }
    ir_func_set_int(p->f, "producer_warps", 4);

    Producer *c = &p->prod;
    c->ws = ws;
    IrBuilder b;
    ir_builder_at_end(&b, m, ws->regions[0]);
    b.loc = loop->loc;
    IrValue *zero = ir_build_const_int(&b, i32, 0);
    c->prod[0] = c->prod[1] = zero;
    c->prod_tile = NULL;
    if (tile) {
        IrMap imports;
        ir_map_init(&imports, &m->arena);
        p->imports = &imports;
        IrValue *ops[5] = {NULL, NULL, NULL, zero, zero};
        for (int i = 0; i < 3; i++)
            ops[i] = import_value(p, &b, tile->operands[i], after);
        p->imports = NULL;
        const IrType *types[2] = {i32, i32};
        IrOp *pt = ir_op_create(m, IR_OP_FOR, 5, ops, 2, types);
        pt->loc = tile->loc;
        if (ir_op_get_int(tile, "persistent", 0))
            ir_op_set_int(m, pt, "persistent", 1);
        ir_block_append(ws->regions[0], pt);
        IrBlock *tb = pt->regions[0];
        c->prod_tile_iv = ir_block_add_arg(m, tb, tile->regions[0]->args[0]->type, tile->regions[0]->args[0]->name);
        c->prod[0] = ir_block_add_arg(m, tb, i32, "stage");
        c->prod[1] = ir_block_add_arg(m, tb, i32, "phase");
        ir_builder_at_end(&b, m, tb);
        ir_build_op(&b, IR_OP_YIELD, 2, c->prod, 0, NULL);
        c->prod_tile = pt;
    }
    ir_builder_at_end(&b, m, ws->regions[0]);
    ir_build_op(&b, IR_OP_YIELD, 0, NULL, 0, NULL);
}

/* A producer loop for `loop`, after the region's (or its tile loop's)
 * earlier ones: it runs the loop's trip count again, starting at the stage
 * and phase where the earlier loop stopped, and, for each iteration and
 * each barrier pair, waits until the consumers have released the stage
 * (empty, the phase before the one the consumers wait for on full), then
 * issues the copies that complete on that pair. `after` holds the ops
 * between the split and the loop, which the producer recomputes what it
 * needs of. */
static void producer_loop(Pipe *p, IrOp *loop, const IrMap *after, IrValue *const *full, IrValue *const *empty,
                          int groups, int64_t stages) {
    IrModule *m = p->m;
    Producer *c = &p->prod;
    IrBlock *body = loop->regions[0];
    const IrType *i32 = ir_type_scalar(m, IR_I32), *i1 = ir_type_scalar(m, IR_I1);
    IrBlock *at = c->prod_tile ? c->prod_tile->regions[0] : c->ws->regions[0];
    IrMap imports;
    ir_map_init(&imports, &m->arena);
    p->imports = &imports;
    IrOp *tile = c->tile;
    if (tile)
        ir_map_put(p->imports, tile->regions[0]->args[0], c->prod_tile_iv);
    IrBuilder b;
    ir_builder_before(&b, at->last);
    b.loc = loop->loc;
    IrValue *bounds[3];
    for (int i = 0; i < 3; i++)
        bounds[i] = import_value(p, &b, loop->operands[i], after);
    for (int i = 0; i < p->num_cands; i++)
        for (int d = 0; d < p->cands[i].boxes * p->cands[i].rank; d++)
            import_copies(p, &b, p->cands[i].coords[d], body, after);
    IrValue *ops[5] = {bounds[0], bounds[1], bounds[2], c->prod[0], c->prod[1]};
    const IrType *types[2] = {i32, i32};
    IrOp *pl = ir_op_create(m, IR_OP_FOR, 5, ops, 2, types);
    pl->loc = loop->loc;
    ir_op_insert_before(at->last, pl);
    IrBlock *pb = pl->regions[0];
    IrValue *iv = ir_block_add_arg(m, pb, bounds[0]->type, body->args[0]->name);
    IrValue *stage = ir_block_add_arg(m, pb, i32, "stage");
    IrValue *phase = ir_block_add_arg(m, pb, i32, "phase");
    ir_builder_at_end(&b, m, pb);
    b.loc = loop->loc;
    IrValue *one = ir_build_const_int(&b, i32, 1);
    IrValue *prev = ir_build_binary(&b, IR_OP_XOR, i32, phase, one), *on = ir_build_const_int(&b, i1, 1);
    IrMap clones;
    clone_coords(p, &b, body, &clones, iv, on);
    for (int g = 0; g < groups; g++) {
        b.loc = loop->loc;
        IrValue *wait[3] = {empty[g], stage, prev};
        ir_build_op(&b, IR_OP_MBARRIER_WAIT, 3, wait, 0, NULL);
        issue_copies(p, &b, body, &clones, iv, on, stage, full[g], groups > 1 ? g : -1);
    }
    b.loc = loop->loc;
    IrValue *inc = ir_build_binary(&b, IR_OP_ADD, i32, stage, one);
    IrValue *wrap = ir_build_cmp(&b, "lt", inc, ir_build_const_int(&b, i32, stages));
    IrValue *next[2];
    IrValue *s1[3] = {wrap, inc, ir_build_const_int(&b, i32, 0)};
    next[0] = ir_build(&b, IR_OP_SELECT, i32, 3, s1);
    IrValue *s2[3] = {wrap, phase, ir_build_binary(&b, IR_OP_XOR, i32, phase, one)};
    next[1] = ir_build(&b, IR_OP_SELECT, i32, 3, s2);
    ir_build_op(&b, IR_OP_YIELD, 2, next, 0, NULL);
    c->prod[0] = pl->results[0];
    c->prod[1] = pl->results[1];
    if (c->prod_tile) { /* the tile loop's stage and phase (its first two iteration arguments) */
        ir_op_set_operand(at->last, 0, c->prod[0]);
        ir_op_set_operand(at->last, 1, c->prod[1]);
    }
    p->imports = NULL;
}

/* `n` mbarriers named `name` (a buffer of n i64), initialized at b to
 * `count` arrivals each. */
static IrValue *new_barriers(IrBuilder *b, int64_t n, const char *name, int64_t count) {
    IrModule *m = b->m;
    Layout plain = {.kind = LAYOUT_SHARED, .rank = 1, .shared = {1, 1, 1, {0}}};
    const IrType *t = ir_type_smem(m, ir_type_scalar(m, IR_I64), 1, &n, ir_layout_intern(m, &plain));
    IrValue *bars = ir_build_op(b, IR_OP_LOCAL_ALLOC, 0, NULL, 1, &t)->results[0];
    ir_value_set_name(m, bars, name);
    ir_op_set_int(m, ir_build_op(b, IR_OP_MBARRIER_INIT, 1, &bars, 0, NULL), "count", count);
    return bars;
}

/* ---- an operand loaded once, from the producer ---- */

/* An operand that every iteration of a warp-specialized loop reads and that
 * is loaded once before it (attention's Q), copied by the producer
 * warpgroup: c is its TMA plan (c.ring the buffer, filled whole), full the
 * barrier its copy completes on, empty (in a tile loop) the one the
 * consumers give it back through once their last reader is done. */
typedef struct InitTma {
    Candidate c;
    IrValue *full, *empty;
} InitTma;

/* Does the buffer of `alloc` (type bt), live from the split on (through
 * the whole tile loop in one), fit beside the rings of the loop's
 * candidates (`stages` each), the other buffers of its block and the
 * largest scratch of the ops it is now live across, which could share its
 * bytes before: every op of a tile loop's body, else those from the split
 * to the loop? */
static bool init_fits(Pipe *p, IrOp *loop, IrOp *split, IrOp *tile, const IrOp *alloc, int64_t stages) {
    int64_t bytes = ir_type_size_bytes(alloc->results[0]->type) + 2048; /* barriers, alignment */
    for (int i = 0; i < p->num_cands; i++)
        bytes += stages * ir_type_size_bytes(p->cands[i].alloc->results[0]->type);
    int64_t scratch = 0;
    IrBlock *blk = loop->parent;
    bool live = tile != NULL;
    for (IrOp *op = blk->first; op; op = op->next) {
        live |= op == split;
        if (!live)
            continue;
        bool cand = op == alloc;
        for (int i = 0; i < p->num_cands; i++)
            cand |= op == p->cands[i].alloc;
        if (op->opc == IR_OP_LOCAL_ALLOC && !cand)
            bytes += ir_type_size_bytes(op->results[0]->type);
        int64_t s = tg_largest_scratch(op, p->num_warps);
        scratch = s > scratch ? s : scratch;
        if (op == loop && !tile)
            break;
    }
    int64_t programs = p->min_programs > 1 ? p->min_programs : 1;
    return bytes + scratch <= p->smem_limit / programs;
}

/* Is every top-level use of buf in blk an op that reads it (not a view
 * whose readers come later), and is there one? */
static bool read_directly(IrBlock *blk, const IrValue *buf) {
    int n = 0;
    for (IrOp *op = blk->first; op; op = op->next)
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i] == buf) {
                if (op->opc == IR_OP_MEMDESC_TRANS || op->opc == IR_OP_MEMDESC_INDEX)
                    return false;
                n++;
            }
    for (IrOp *op = blk->first; op; op = op->next)
        for (int r = 0; r < op->num_regions; r++)
            n += ir_count_uses(op->regions[r], buf);
    return n > 0;
}

/* The load before `loop` (in its block, after the split) whose only use is
 * a local_alloc that only wgmma reads, when it is a box of a tensor (not
 * gathered rows), its origin is something the producer can compute
 * (`after`: the ops from the split to the loop, to which the origin's ops
 * are added) and its buffer fits (init_fits). Commits its map and origin
 * into q->c. */
static bool find_init_tma(Pipe *p, IrOp *loop, IrOp *tile, IrOp *split, IrMap *after, int64_t stages, InitTma *q) {
    IrBlock *blk = loop->parent;
    AxisInfoMap *ai = NULL;
    bool found = false;
    for (IrOp *op = blk->first; op && op != loop && !found; op = op->next) {
        if (op->opc != IR_OP_LOAD || op->results[0]->type->kind != IR_TILE || !zero_other(op) || op == split)
            continue;
        IrOp *alloc = alloc_of(blk, op->results[0]);
        if (!alloc || alloc == split || !is_nvmma(alloc->results[0]) || !only_local_loads(blk, alloc->results[0]) ||
            !read_directly(blk, alloc->results[0]))
            continue;
        ai = ai ? ai : axis_info_run(p->f);
        TmaAccess a;
        int boxes;
        const IrType *bt = alloc->results[0]->type;
        if (!tma_plan(p, ai, op, bt, &a, &boxes) || a.rows || !init_fits(p, loop, split, tile, alloc, stages))
            continue;
        bool ok = true;
        for (int d = 0; d < a.map.rank && ok; d++)
            for (int t = 0; t < a.num_atoms[d] && ok; t++)
                ok = ir_type_is_scalar(a.atoms[d][t]->type) && importable(a.atoms[d][t], after, 0);
        if (!ok)
            continue;
        memset(q, 0, sizeof *q);
        q->c.load = op;
        q->c.alloc = alloc;
        IrOp *before = op->prev; /* the origin's ops go between it and the load */
        tma_commit(p, &q->c, &a, boxes);
        for (IrOp *o = before ? before->next : blk->first; o != op; o = o->next)
            ir_map_put(after, o, o);
        found = true;
    }
    axis_info_free(ai);
    return found;
}

/* The consumers' side of q, at b (before the split): its buffer and
 * barriers; then in the loop's block, instead of the load and its
 * local_alloc, a wait for the copy before the first op that reads the
 * buffer and, in a tile loop, the buffer given back after the last one.
 * `phase` is the parity of the copy of this tile (0 without a tile loop). */
static void consume_init_tma(Pipe *p, IrBuilder *b, InitTma *q, IrValue *phase, bool tiled) {
    IrModule *m = p->m;
    Candidate *c = &q->c;
    IrBlock *blk = c->load->parent;
    IrValue *old = c->alloc->results[0];
    const IrType *bt = old->type;
    IrOp *buf = ir_build_op(b, IR_OP_LOCAL_ALLOC, 0, NULL, 1, &bt);
    buf->loc = c->alloc->loc;
    if (old->name)
        ir_value_set_name(m, buf->results[0], old->name);
    c->ring = buf->results[0];
    const char *name = c->load->results[0]->name ? c->load->results[0]->name : "init";
    q->full = new_barriers(b, 1, arena_printf(&m->arena, "%s_full", name), 1);
    if (tiled) /* the buffer goes back once per tile */
        q->empty = new_barriers(b, 1, arena_printf(&m->arena, "%s_empty", name), p->num_warps);
    IrOp *first = NULL, *last = NULL;
    for (IrOp *op = blk->first; op; op = op->next) {
        bool reads = false;
        for (int i = 0; i < op->num_operands; i++)
            reads |= op->operands[i] == old;
        for (int r = 0; r < op->num_regions; r++)
            reads |= ir_count_uses(op->regions[r], old) > 0;
        if (reads) {
            first = first ? first : op;
            last = op;
        }
    }
    ir_replace_all_uses(blk, old, c->ring);
    ir_op_unlink(c->alloc);
    ir_op_unlink(c->load);
    IrBuilder at;
    ir_builder_before(&at, first);
    at.loc = c->load->loc;
    IrValue *zero = ir_build_const_int(&at, ir_type_scalar(m, IR_I32), 0);
    IrValue *on = ir_build_const_int(&at, ir_type_scalar(m, IR_I1), 1);
    IrValue *ops[3] = {q->full, zero, phase};
    ir_build_op(&at, IR_OP_MBARRIER_WAIT, 3, ops, 0, NULL);
    if (q->empty) { /* right after the reader (overlap-dots keeps it in front of a late dot) */
        if (last->next)
            ir_builder_before(&at, last->next);
        else
            ir_builder_at_end(&at, m, blk);
        at.loc = c->load->loc;
        IrValue *give[3] = {q->empty, zero, on};
        ir_build_op(&at, IR_OP_MBARRIER_ARRIVE, 3, give, 0, NULL);
    }
}

/* The producer's copy of q, at the start of its region or of each tile
 * (before its loops): in a tile loop it first waits until the consumers
 * have given the buffer back (the parity before the one they wait for; a
 * phase the producer's tile loop carries), then announces the bytes and
 * issues the boxes. */
static void produce_init_tma(Pipe *p, const InitTma *q, const IrMap *after) {
    IrModule *m = p->m;
    Producer *c = &p->prod;
    const Candidate *qc = &q->c;
    const IrType *i32 = ir_type_scalar(m, IR_I32), *i1 = ir_type_scalar(m, IR_I1);
    IrBlock *at = c->prod_tile ? c->prod_tile->regions[0] : c->ws->regions[0];
    IrMap imports;
    ir_map_init(&imports, &m->arena);
    p->imports = &imports;
    if (c->prod_tile)
        ir_map_put(p->imports, c->tile->regions[0]->args[0], c->prod_tile_iv);
    IrBuilder b;
    ir_builder_before(&b, at->last);
    b.loc = qc->load->loc;
    IrValue *coords[IR_MAX_TMAP_RANK];
    for (int d = 0; d < qc->rank; d++)
        coords[d] = import_value(p, &b, qc->coords[d], after);
    p->imports = NULL;
    IrValue *zero = ir_build_const_int(&b, i32, 0), *on = ir_build_const_int(&b, i1, 1);
    if (q->empty) {
        IrValue *phase = pass_add_iter_arg(m, c->prod_tile, c->prod_tile->operands[3], "q_phase");
        IrValue *prev = ir_build_binary(&b, IR_OP_XOR, i32, phase, ir_build_const_int(&b, i32, 1));
        IrValue *wait[3] = {q->empty, zero, prev};
        ir_build_op(&b, IR_OP_MBARRIER_WAIT, 3, wait, 0, NULL);
        pass_append_yield(m, at->last, prev); /* the next tile's copy is the next phase */
    }
    IrValue *ops[3] = {q->full, zero, on};
    IrOp *e = ir_build_op(&b, IR_OP_MBARRIER_EXPECT, 3, ops, 0, NULL);
    ir_op_set_int(m, e, "bytes", ir_type_size_bytes(qc->ring->type));
    IrValue *cops[5 + IR_MAX_TMAP_RANK] = {qc->map, qc->ring, q->full, zero, on};
    for (int d = 0; d < qc->rank; d++)
        cops[5 + d] = coords[d];
    ir_build_op(&b, IR_OP_ASYNC_TMA_COPY, 5 + qc->rank, cops, 0, NULL);
}

/* The barrier pairs of a loop's rings (p->cands[i].group): with `grouped`,
 * one per first reader of the stages (see the essay), each with its first
 * and last reader and whether a local_load reads it (its stage then goes
 * back at the end of the body); else, or with more than MAX_GROUPS first
 * readers, one pair for all, first read by first_read. The number of
 * pairs. */
static int assign_groups(Pipe *p, IrBlock *body, bool grouped, IrOp *first_read, IrOp **group_first, IrOp **group_last,
                         bool *group_late) {
    int groups = 0;
    for (int i = 0; grouped && i < p->num_cands; i++) {
        bool row = p->cands[i].row_read != NULL;
        IrOp *first = NULL, *last = NULL;
        bool late = false;
        for (IrOp *op = body->first; op; op = op->next)
            for (int j = 0; j < p->num_cands; j++) {
                /* the row vectors share one pair: their first reader is the first reader of any */
                IrValue *other = p->cands[j].alloc->results[0];
                if ((j == i || (row && p->cands[j].row_read)) && reads_buffer(op, other)) {
                    first = first ? first : op;
                    if (op->opc != IR_OP_MEMDESC_TRANS)
                        last = op;
                    late |= op->opc == IR_OP_LOCAL_LOAD;
                }
            }
        int g = 0;
        while (g < groups && group_first[g] != first)
            g++;
        if (g == MAX_GROUPS) {
            grouped = false; /* one pair for all, below */
        } else if (g == groups) {
            group_first[g] = first, group_last[g] = last, group_late[g] = late;
            groups++;
        } else { /* the same first reader: the later last reader */
            for (const IrOp *q = group_last[g]; q; q = q->next)
                if (q == last)
                    group_last[g] = last;
            group_late[g] |= late;
        }
        p->cands[i].group = g;
    }
    if (!grouped || groups <= 1) {
        groups = 1;
        for (int i = 0; i < p->num_cands; i++)
            p->cands[i].group = 0;
        group_first[0] = first_read, group_last[0] = NULL, group_late[0] = true;
    }
    return groups;
}

/* Can `loop` take its stages from the rings of the kernel's producer (a
 * later loop of the same block whose operands have the stage shapes and
 * the barrier pairs of the first, both with synchronous dots: a dot in
 * flight would leave its last stage to give back between the loops), and
 * the producer compute what its copies need? *after gets the ops from the
 * producer region to the loop. */
static bool chains(Pipe *p, IrOp *loop, IrOp *tile, bool async_dot, IrOp *first_read, IrMap *after) {
    const Producer *c = &p->prod;
    if (loop->parent != c->block || async_dot || c->async_dot || p->num_cands != c->num_rings)
        return false;
    for (int i = 0; i < p->num_cands; i++)
        if (p->cands[i].alloc->results[0]->type != c->types[i])
            return false;
    IrOp *first[MAX_GROUPS], *last[MAX_GROUPS];
    bool late[MAX_GROUPS];
    if (assign_groups(p, loop->regions[0], !async_dot, first_read, first, last, late) != c->groups)
        return false;
    for (int i = 0; i < p->num_cands; i++)
        if (p->cands[i].group != c->group[i])
            return false;
    return producer_can_run(p, loop, tile, c->ws->next, after);
}

/* The loop of the kernel's body whose body holds loop (the persistent
 * pass's tile loop, or a loop of the kernel's own: the backward's GQA
 * group), or NULL: a producer runs across it, its rings outliving each
 * of its iterations. */
static IrOp *tile_loop_of(const Pipe *p, const IrOp *loop) {
    IrOp *t = loop->parent->parent_op;
    return t && t->opc == IR_OP_FOR && t->parent == p->f->body ? t : NULL;
}

/* The candidates TMA copies (the others are cp.async's). */
static int count_tma(const Pipe *p) {
    int n = 0;
    for (int i = 0; i < p->num_cands; i++)
        n += p->cands[i].map != NULL;
    return n;
}

/* The first op of body that reads a candidate's buffer. */
static IrOp *first_ring_read(const Pipe *p, IrBlock *body) {
    for (IrOp *op = body->first; op; op = op->next)
        for (int i = 0; i < p->num_cands; i++)
            if (reads_buffer(op, p->cands[i].alloc->results[0]))
                return op;
    return NULL;
}

static void pipeline_loop(Pipe *p, IrOp *loop, int num_stages) {
    IrModule *m = p->m;
    IrBlock *body = loop->regions[0];
    find_candidates(p, body);
    if (!p->num_cands)
        return;
    int num_tma = count_tma(p), num_cp = p->num_cands - num_tma;
    /* A warp_group_dot that can stay in flight (see the essay): copies
     * S - 1 iterations ahead as in the plain schedule, a ring of S + 1
     * stages (the one more is the stage the dot in flight still reads). */
    int carried = -1;
    IrOp *async_dot = async_dot_of(p, body, &carried);
    /* A producer warpgroup issues the copies when every ring is fed by TMA
     * (see the essay): rings of S stages (S + 1 for a dot in flight) that
     * the consumers release through `empty` barriers. */
    IrMap after;
    ir_map_init(&after, &m->arena);
    bool room = p->num_warps % 4 == 0 && p->num_warps + 4 <= IR_MAX_NUM_WARPS; /* whole warpgroups, 1024 threads */
    /* The first read of a ring, and the schedule: a dot after the first
     * one (a chain, as in attention) puts the copies next to the first
     * dot, S - 2 iterations ahead; else at the end, S - 1 ahead. */
    IrOp *first_read = first_ring_read(p, body);
    bool async_proxy = false; /* a ring that cp.async fills and wgmma reads */
    for (int i = 0; i < p->num_cands; i++)
        async_proxy |= is_nvmma(p->cands[i].alloc->results[0]) && !p->cands[i].map;
    /* The first loop that can gets the producer (split: where it goes);
     * a later one of the same block shares it when it can (chained). */
    IrOp *tile = tile_loop_of(p, loop);
    IrOp *split = NULL;
    bool chained = false, can = num_tma && !num_cp && room;
    if (p->prod.ws)
        chained = can && chains(p, loop, tile, async_dot != NULL, first_read, &after);
    else if (p->ws && can)
        split = split_point(p, loop, tile, &after);
    bool ws = split != NULL || chained;
    if (!ws && p->ws) { /* row vectors go through rings only in a producer's loop */
        drop_row_vectors(p, body);
        num_tma = count_tma(p), num_cp = p->num_cands - num_tma;
        first_read = first_ring_read(p, body);
    }
    if (!ws)
        tile = NULL; /* a ring of the tile's own, set up and torn down around its loop */
    /* A kernel that asked for a producer and got none (a ring TMA cannot
     * fill: a stride that is no multiple of 16 bytes, a row bound that is
     * a load): its num_stages counts a producer's stages, S a ring with
     * synchronous dots, which the plain schedule calls num_stages S + 1 (a
     * ring of the same size; with a dot in flight both have S + 1). Not
     * beside a producer of an earlier loop, whose rings hold their shared
     * memory for the whole kernel. */
    if (!ws && p->ws && !p->prod.ws && !async_dot)
        num_stages++;
    int64_t stages = async_dot ? num_stages + 1 : ws ? num_stages : num_stages - 1;
    IrValue *lb = loop->operands[0], *ub = loop->operands[1], *step = loop->operands[2];
    IrOp *first_dot = NULL;
    bool chain = false;
    for (IrOp *op = first_read; op && !chain; op = op->next)
        if (op->opc == IR_OP_DOT || op->opc == IR_OP_WARP_GROUP_DOT) {
            chain = first_dot != NULL;
            first_dot = first_dot ? first_dot : op;
        }
    bool mid = (chain && num_stages >= 3) || async_dot;
    if (async_dot)
        first_dot = async_dot;
    int64_t ahead = async_dot ? stages - 2 : mid ? stages - 1 : stages; /* iterations the copies run ahead */
    /* With a producer and synchronous dots, one barrier pair per first
     * reader (attention: K for Q K^T, V for P V): each operand's stage is
     * waited for right before its dot and given back right after it. */
    IrOp *group_first[MAX_GROUPS], *group_last[MAX_GROUPS];
    bool group_late[MAX_GROUPS]; /* read by a local_load: given back at the end of the body */
    int groups = assign_groups(p, body, ws && !async_dot, first_read, group_first, group_last, group_late);
    /* An operand loaded once before the first warp-specialized loop (Q)
     * whose load is a box of a tensor: the producer copies it too. */
    InitTma q;
    bool q_tma = split && find_init_tma(p, loop, tile, split, &after, stages, &q);
    InitCopy init[8];
    int num_init = copy_init_loads(p, loop, q_tma ? q.c.load : NULL, init, 8);
    const IrType *i32 = ir_type_scalar(m, IR_I32);

    /* Before the loop: barrier, rings, prologue (with a producer: the
     * rings and the barriers before the split, no prologue; a chained loop
     * takes the producer's). */
    IrBuilder b;
    ir_builder_before(&b, split ? split : loop);
    b.loc = loop->loc;
    IrOp *prologue = ws ? NULL : ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    for (int i = 0; i < p->num_cands && chained; i++)
        p->cands[i].ring = p->prod.rings[i];
    for (int i = 0; i < p->num_cands && !chained; i++) {
        Candidate *c = &p->cands[i];
        const IrType *t = c->alloc->results[0]->type;
        int64_t shape[IR_MAX_RANK];
        shape[0] = stages;
        memcpy(shape + 1, t->shape, sizeof(int64_t) * (size_t)t->rank);
        const IrType *rt = ir_type_smem(m, t->elem, t->rank + 1, shape, t->layout);
        IrOp *ring = ir_build_op(&b, IR_OP_LOCAL_ALLOC, 0, NULL, 1, &rt);
        ring->loc = c->alloc->loc;
        if (c->load->results[0]->name)
            ir_value_set_name(m, ring->results[0], arena_printf(&m->arena, "%s_ring", c->load->results[0]->name));
        c->ring = ring->results[0];
    }
    /* TMA copies complete on one mbarrier per stage (one thread arrives,
     * announcing the stage's bytes), initialized before any copy */
    IrValue *fulls[MAX_GROUPS] = {NULL}, *empties[MAX_GROUPS] = {NULL};
    if (chained) {
        memcpy(fulls, p->prod.fulls, sizeof fulls);
        memcpy(empties, p->prod.empties, sizeof empties);
    } else if (num_tma) {
        b.loc = loop->loc;
        for (int g = 0; g < groups; g++) {
            /* the first pair is %full / %empty; the others take the name
             * of their first operand's load: %v_full, %v_empty */
            const char *name = NULL;
            for (int i = 0; i < p->num_cands && g && !name; i++)
                if (p->cands[i].group == g)
                    name = p->cands[i].load->results[0]->name;
            const char *prefix = name ? arena_printf(&m->arena, "%s_", name) : g ? "g_" : "";
            fulls[g] = new_barriers(&b, stages, arena_printf(&m->arena, "%sfull", prefix), 1);
            if (ws) /* every consumer warp releases a stage once */
                empties[g] = new_barriers(&b, stages, arena_printf(&m->arena, "%sempty", prefix), p->num_warps);
        }
        if (q_tma) { /* in a tile loop, each tile's copy is the next phase (the tile loop's first argument) */
            IrValue *qphase = ir_build_const_int(&b, i32, 0);
            if (tile) {
                qphase = pass_add_iter_arg(m, tile, qphase, "q_phase");
                IrOp *ty = tile->regions[0]->last;
                IrBuilder y;
                ir_builder_before(&y, ty);
                y.loc = loop->loc;
                pass_append_yield(m, ty, ir_build_binary(&y, IR_OP_XOR, i32, qphase, ir_build_const_int(&y, i32, 1)));
            }
            consume_init_tma(p, &b, &q, qphase, tile != NULL);
        }
        ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    }
    IrValue *bars = fulls[0], *empty = empties[0];
    for (int64_t s = 0; s < ahead && !ws; s++) {
        b.loc = loop->loc;
        IrValue *iv_s = iv_plus(&b, lb, step, s);
        IrValue *pred = ir_build_cmp(&b, "lt", iv_s, ub);
        issue_copies(p, &b, body, NULL, iv_s, pred, ir_build_const_int(&b, i32, s), bars, -1);
    }
    if (!ws)
        hoist_prologue(p, prologue, loop->prev);
    for (int i = 0; i < num_init; i++)
        wait_for_init(loop, &init[i]);

    /* The stage index, carried (in a tile loop, from tile to tile too:
     * the ring outlives each tile's loop; a chained loop starts where the
     * previous consumer loop stopped). */
    ir_builder_before(&b, tile ? tile : loop);
    b.loc = loop->loc;
    IrValue *ring0[2] = {NULL, NULL};
    if (chained) {
        ring0[0] = p->prod.cons[0], ring0[1] = p->prod.cons[1];
    } else {
        ring0[0] = ir_build_const_int(&b, i32, 0);
        ring0[1] = num_tma ? ir_build_const_int(&b, i32, 0) : NULL;
        if (tile) {
            ring0[0] = pass_add_iter_arg(p->m, tile, ring0[0], "stage");
            ring0[1] = pass_add_iter_arg(p->m, tile, ring0[1], "phase"); /* tile implies a producer: TMA */
            pass_append_yield(m, tile->regions[0]->last, ring0[0]);      /* the tile's last loop's results, below */
            pass_append_yield(m, tile->regions[0]->last, ring0[1]);
        }
    }
    IrValue *stage = pass_add_iter_arg(p->m, loop, ring0[0], "stage");
    int stage_result = loop->num_results - 1;
    /* the parity of the stage's mbarrier phase: iteration i waits for fill
     * i / stages of stage i mod stages */
    IrValue *phase = num_tma ? pass_add_iter_arg(p->m, loop, ring0[1], "phase") : NULL;
    if (ws) {
        /* the next chained loop starts here; the tile loop carries it to
         * the next tile (its yield's last two operands) */
        p->prod.cons[0] = loop->results[stage_result];
        p->prod.cons[1] = loop->results[stage_result + 1];
        if (tile) {
            IrOp *ty = tile->regions[0]->last;
            ir_op_set_operand(ty, ty->num_operands - 2, p->prod.cons[0]);
            ir_op_set_operand(ty, ty->num_operands - 1, p->prod.cons[1]);
        }
    }

    /* In the body: wait + barrier before the first read; reads from the ring. */
    ir_builder_before(&b, first_read);
    b.loc = first_read->loc;
    IrValue **views = ARENA_ARRAY(&m->arena, IrValue *, p->num_cands);
    for (int i = 0; i < p->num_cands; i++)
        views[i] =
            ir_build_binary(&b, IR_OP_MEMDESC_INDEX, p->cands[i].alloc->results[0]->type, p->cands[i].ring, stage);
    if (num_cp)
        build_wait(&b, (ahead - 1) * (int64_t)num_cp);
    if (num_tma) {
        IrValue *ops[3] = {bars, stage, phase};
        ir_build_op(&b, IR_OP_MBARRIER_WAIT, 3, ops, 0, NULL);
        for (int g = 1; g < groups; g++) { /* the later operands: right before their first reader */
            IrBuilder at;
            ir_builder_before(&at, group_first[g]);
            at.loc = group_first[g]->loc;
            IrValue *gops[3] = {fulls[g], stage, phase};
            ir_build_op(&at, IR_OP_MBARRIER_WAIT, 3, gops, 0, NULL);
        }
    }
    if (async_proxy) /* cp.async writes are generic-proxy writes; wgmma reads through the async proxy */
        ir_build_op(&b, IR_OP_FENCE_ASYNC_SHARED, 0, NULL, 0, NULL);
    if (!ws) /* with a producer, the empty barriers keep the stages from being overwritten */
        ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    for (IrOp *op = first_read, *next; op; op = next) {
        next = op->next;
        if (op->opc == IR_OP_WARP_GROUP_DOT || op->opc == IR_OP_MEMDESC_TRANS) {
            for (int i = 0; i < p->num_cands; i++)
                for (int k = 0; k < op->num_operands && k < 2; k++)
                    if (op->operands[k] == p->cands[i].alloc->results[0])
                        ir_op_set_operand(op, k, views[i]);
            continue;
        }
        if (op->opc != IR_OP_LOCAL_LOAD)
            continue;
        for (int i = 0; i < p->num_cands; i++) {
            Candidate *c = &p->cands[i];
            if (op->operands[0] != c->alloc->results[0])
                continue;
            ir_op_set_operand(op, 0, views[i]);
            if (c->select)
                select_other(p, c, op);
        }
    }

    /* The copies `ahead` iterations ahead: next to the first dot, into the
     * stage the previous iteration read (every warp is past it: the barrier
     * above), or at the end of the body, behind a barrier, into the stage
     * this iteration has just read. */
    IrOp *yield = body->last;
    if (async_dot) {
        /* in flight until the next iteration's dot is issued: the wait
         * leaves one group pending; the copies go between the two, into
         * the stage of iteration i - 2, which every warpgroup's dot has
         * finished reading (each waited for it before the barrier above) */
        ir_op_set_int(m, async_dot, "async", 1);
        IrOp *w = pass_dot_wait_after(m, async_dot, body, async_dot->results[0], 1)->def;
        if (ws) { /* the dot of iteration i - 1 is complete: its stage goes back to the producer */
            ir_builder_before(&b, w->next);
            b.loc = loop->loc;
            IrValue *first = ir_build_cmp(&b, "eq", stage, ir_build_const_int(&b, i32, 0));
            IrValue *dec = ir_build_binary(&b, IR_OP_SUB, i32, stage, ir_build_const_int(&b, i32, 1));
            IrValue *sel[3] = {first, ir_build_const_int(&b, i32, stages - 1), dec};
            IrValue *ops[3] = {empty, ir_build(&b, IR_OP_SELECT, i32, 3, sel),
                               ir_build_cmp(&b, "ne", body->args[0], lb)};
            ir_build_op(&b, IR_OP_MBARRIER_ARRIVE, 3, ops, 0, NULL);
        }
    } else if (ws) {
        /* every read of the stage is done after its last synchronous dot
         * (a local_load's ldmatrix may be deferred: at the end of the body) */
        for (int g = 0; g < groups; g++) {
            ir_builder_before(&b, group_late[g] ? yield : group_last[g]->next);
            b.loc = loop->loc;
            IrValue *ops[3] = {empties[g], stage, ir_build_const_int(&b, ir_type_scalar(m, IR_I1), 1)};
            ir_build_op(&b, IR_OP_MBARRIER_ARRIVE, 3, ops, 0, NULL);
        }
    }
    if (mid && !ws) {
        /* after a synchronous mma.sync dot; before a warp_group_dot, so that
         * async-dots can issue the chain's next dots while it computes (a
         * copy between them would need it complete) */
        ir_builder_before(&b, first_dot->opc == IR_OP_WARP_GROUP_DOT && !async_dot ? first_dot : first_dot->next);
        b.loc = loop->loc;
        IrValue *t = ir_build_binary(&b, IR_OP_ADD, i32, stage, ir_build_const_int(&b, i32, ahead));
        IrValue *in = ir_build_cmp(&b, "lt", t, ir_build_const_int(&b, i32, stages));
        IrValue *sel[3] = {in, t, ir_build_binary(&b, IR_OP_SUB, i32, t, ir_build_const_int(&b, i32, stages))};
        IrValue *slot = ir_build(&b, IR_OP_SELECT, i32, 3, sel);
        IrValue *iv_next = iv_plus(&b, body->args[0], step, ahead);
        issue_copies(p, &b, body, NULL, iv_next, ir_build_cmp(&b, "lt", iv_next, ub), slot, bars, -1);
    }
    ir_builder_before(&b, yield);
    b.loc = loop->loc;
    if (!mid && !ws) {
        ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
        IrValue *iv_next = iv_plus(&b, body->args[0], step, stages);
        issue_copies(p, &b, body, NULL, iv_next, ir_build_cmp(&b, "lt", iv_next, ub), stage, bars, -1);
        b.loc = loop->loc;
    }
    IrValue *one = ir_build_const_int(&b, i32, 1);
    IrValue *inc = ir_build_binary(&b, IR_OP_ADD, i32, stage, one);
    IrValue *wrap = ir_build_cmp(&b, "lt", inc, ir_build_const_int(&b, i32, stages));
    IrValue *ops[3] = {wrap, inc, ir_build_const_int(&b, i32, 0)};
    pass_append_yield(m, yield, ir_build(&b, IR_OP_SELECT, i32, 3, ops));
    if (num_tma) {
        IrValue *flip = ir_build_binary(&b, IR_OP_XOR, i32, phase, one);
        IrValue *sel[3] = {wrap, phase, flip};
        pass_append_yield(m, yield, ir_build(&b, IR_OP_SELECT, i32, 3, sel));
    }

    /* The stores and loads that the copies replace. */
    for (int i = 0; i < p->num_cands; i++) {
        ir_op_unlink(p->cands[i].alloc);
        ir_op_unlink(p->cands[i].load);
    }

    /* After the loop (after the tile loop when the ring outlives it):
     * every copy has landed. A chained loop moves the first loop's
     * barrier and invalidations after it. */
    IrOp *end = tile ? tile : loop;
    if (end->next)
        ir_builder_before(&b, end->next);
    else
        ir_builder_at_end(&b, m, end->parent);
    b.loc = loop->loc;
    if (num_cp)
        build_wait(&b, 0);
    if (chained) {
        for (int i = 0; i < p->prod.num_teardown && !tile; i++) {
            ir_op_unlink(p->prod.teardown[i]);
            if (b.before)
                ir_op_insert_before(b.before, p->prod.teardown[i]);
            else
                ir_block_append(b.block, p->prod.teardown[i]);
        }
    } else if (num_tma) {
        /* every issued copy was waited for; once every thread is past its
         * last wait the barriers' bytes may serve anything else */
        Producer *c = &p->prod;
        c->num_teardown = 0;
        c->teardown[c->num_teardown++] = ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
        for (int g = 0; g < groups; g++) {
            c->teardown[c->num_teardown++] = ir_build_op(&b, IR_OP_MBARRIER_INVAL, 1, &fulls[g], 0, NULL);
            if (ws)
                c->teardown[c->num_teardown++] = ir_build_op(&b, IR_OP_MBARRIER_INVAL, 1, &empties[g], 0, NULL);
        }
        if (q_tma)
            c->teardown[c->num_teardown++] = ir_build_op(&b, IR_OP_MBARRIER_INVAL, 1, &q.full, 0, NULL);
        if (q_tma && q.empty)
            c->teardown[c->num_teardown++] = ir_build_op(&b, IR_OP_MBARRIER_INVAL, 1, &q.empty, 0, NULL);
    }
    if (async_dot) { /* the last dot completes before anything reads the accumulator */
        IrOp *w = pass_dot_wait_after(m, loop, loop->parent, loop->results[carried], 0)->def;
        if (tile) {
            /* and, in a tile loop, its stage goes back, which the next
             * tile's loop would otherwise wait for (in the loop, each
             * iteration gives back the previous one's stage) */
            ir_builder_before(&b, w->next);
            b.loc = loop->loc;
            IrValue *last = loop->results[stage_result];
            IrValue *first = ir_build_cmp(&b, "eq", last, ir_build_const_int(&b, i32, 0));
            IrValue *dec = ir_build_binary(&b, IR_OP_SUB, i32, last, ir_build_const_int(&b, i32, 1));
            IrValue *sel[3] = {first, ir_build_const_int(&b, i32, stages - 1), dec};
            IrValue *ops[3] = {empty, ir_build(&b, IR_OP_SELECT, i32, 3, sel), ir_build_cmp(&b, "lt", lb, ub)};
            ir_build_op(&b, IR_OP_MBARRIER_ARRIVE, 3, ops, 0, NULL);
        }
    }
    if (!ws)
        return;
    Producer *c = &p->prod;
    if (!chained) {
        c->block = loop->parent;
        c->tile = tile;
        c->num_rings = p->num_cands;
        for (int i = 0; i < p->num_cands && i < MAX_RINGS; i++) {
            c->types[i] = p->cands[i].alloc->results[0]->type;
            c->rings[i] = p->cands[i].ring;
            c->group[i] = p->cands[i].group;
        }
        if (c->num_rings > MAX_RINGS)
            c->num_rings = -1; /* chains nothing */
        c->groups = groups;
        memcpy(c->fulls, fulls, sizeof fulls);
        memcpy(c->empties, empties, sizeof empties);
        c->async_dot = async_dot != NULL;
        producer_region(p, loop, tile, split, &after);
        if (q_tma)
            produce_init_tma(p, &q, &after);
    }
    producer_loop(p, loop, &after, fulls, empties, groups, stages);
}

static void walk(Pipe *p, IrBlock *blk) {
    for (IrOp *op = blk->first, *next; op; op = next) {
        next = op->next;
        for (int r = 0; r < op->num_regions; r++)
            walk(p, op->regions[r]);
        if (op->opc == IR_OP_FOR && !ir_op_get_int(op, "persistent", 0))
            pipeline_loop(p, op, p->num_stages);
    }
}

bool pass_pipeline(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        Pipe p;
        memset(&p, 0, sizeof p);
        p.m = m;
        p.f = f;
        p.tma = opts->target.arch_a && f->kind == IR_FUNC_KERNEL;
        p.ws = p.tma && ir_func_get_int(f, "warp_specialize", opts->target.warp_specialize) != 0;
        p.num_stages = (int)ir_func_get_int(f, "num_stages", opts->target.num_stages);
        p.num_warps = pass_func_num_warps(f, opts);
        p.min_programs = ir_func_get_int(f, "min_programs_per_sm", 0);
        p.smem_limit = tg_shared_limit(&opts->target);
        if (p.num_stages <= 1)
            continue;
        walk(&p, f->body);
    }
    return true;
}
