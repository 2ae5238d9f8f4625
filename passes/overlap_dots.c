/*
 * overlap_dots.c — the pass `overlap-dots`: in a consumer loop of a
 * warp-specialized kernel, the second dot of a chain runs one iteration
 * late, so that it computes while the warpgroup works on the first dot's
 * next result (docs/passes.md, "Overlapped dots").
 *
 * Precondition: the pipeline pass has given the kernel a producer
 * warpgroup, so the consumer loop waits for its stages on `full` barriers
 * and gives them back with `mbarrier_arrive` (it issues no copies). When
 * that loop holds a chain of two synchronous warp_group_dots, the second
 * reading what the first computed (attention: S = Q K^T, the softmax, then
 * O = P V + O * alpha), and the second's result is only carried to the next
 * iteration, iteration i of the rotated loop issues the first dot of
 * iteration i, then the second dot of iteration i - 1, and waits for the
 * first alone (pending = 1): the softmax of block i runs on the CUDA cores
 * while the tensor cores compute P V of block i - 1. The second dot is
 * waited for right before the first op that reads its result (the rescale
 * by alpha), and the stage it read goes back to the producer then.
 *
 *     %r = if lb < ub {                 // iteration lb, without a dot late
 *       head(lb) with the accumulator's initial value
 *       yield carried values, the late dot's operands
 *     } else { yield initial values, placeholders }
 *     %s = for lb + step, ub, step, carried..., late operands... {
 *       mbarrier_wait %full, ...
 *       %qk = warp_group_dot ... {async = 1}
 *       %pv = warp_group_dot %p.prev, %v_ring[%stage.prev], %acc.prev {async = 1}
 *       %qk.1 = warp_group_dot_wait %qk {pending = 1}
 *       ... softmax of %qk.1 ...
 *       %acc = warp_group_dot_wait %pv {pending = 0}
 *       mbarrier_arrive %empty, %stage.prev, ...
 *       ... the rescale reads %acc ...
 *       yield carried values, this iteration's late operands
 *     }
 *     %acc = if lb < ub {               // the last iteration's late dot
 *       %pv = warp_group_dot %s.p, %v_ring[%s.stage], %s.acc
 *       mbarrier_arrive %empty, %s.stage, ...
 *       yield %pv
 *     } else { yield the accumulator's initial value }
 *
 * The values the late dot and its arrivals read are carried from the
 * iteration that computed them (P, the rescaled accumulator, the stage
 * index); shared-memory views and constants are recomputed where they are
 * read instead. The accumulator itself is no longer carried: the
 * iteration that reads it is the one that completes it. The pingpong
 * pass, which runs next, hands turns around both dots' issue.
 */
#include "passes.h"

#include <string.h>

typedef struct Rot {
    IrModule *m;
    IrOp *loop;
    IrBlock *body;
    IrOp *d1, *d2; /* the chain's dots */
    int acc;       /* the yield operand (and iter arg) d2's result is */
    IrOp *tail[8]; /* d2 and the stage releases after it, in order */
    int num_tail;
    IrValue *late[16]; /* values of the body the tail reads, carried */
    int num_late;
    IrMap remat; /* ops the tail recomputes instead (views, constants) */
} Rot;

static bool in_tail(const Rot *r, const IrOp *op) {
    for (int i = 0; i < r->num_tail; i++)
        if (r->tail[i] == op)
            return true;
    return false;
}

static bool defined_in_body(const Rot *r, const IrValue *v) {
    return v->def ? v->def->parent == r->body : v->block == r->body;
}

/* Does v depend (within the body) on `on`? */
static bool depends(const Rot *r, const IrValue *v, const IrValue *on, int depth) {
    if (v == on)
        return true;
    if (!v->def || v->def->parent != r->body || depth > 256)
        return false;
    for (int i = 0; i < v->def->num_operands; i++)
        if (depends(r, v->def->operands[i], on, depth + 1))
            return true;
    return false;
}

/* Records what the tail needs of v: nothing (defined outside the body), a
 * recomputation (a constant, or a shared-memory view over such values), or
 * a carried value. False when it cannot be carried. */
static bool need(Rot *r, IrValue *v) {
    if (!defined_in_body(r, v))
        return true;
    for (int i = 0; i < r->num_late; i++)
        if (r->late[i] == v)
            return true;
    IrOp *def = v->def;
    if (def && (def->opc == IR_OP_CONSTANT ||
                (v->type->kind == IR_SMEM && ir_op_has_flag(def, OPF_PURE) && !def->num_regions))) {
        ir_map_put(&r->remat, def, def);
        for (int i = 0; i < def->num_operands; i++)
            if (!need(r, def->operands[i]))
                return false;
        return true;
    }
    if (!(ir_type_is_scalar(v->type) && v->type->kind != IR_PTR) && !ir_type_is_tile(v->type))
        return false;
    if (r->num_late == (int)(sizeof r->late / sizeof r->late[0]))
        return false;
    r->late[r->num_late++] = v;
    return true;
}

static bool match(Rot *r) {
    IrBlock *body = r->body;
    IrOp *yield = body->last;
    if (!yield || yield->opc != IR_OP_YIELD)
        return false;
    bool releases = false;
    for (IrOp *op = body->first; op; op = op->next) {
        switch (op->opc) {
        case IR_OP_WARP_GROUP_DOT:
            if (ir_op_get_int(op, "async", 0) || r->d2)
                return false;
            if (r->d1)
                r->d2 = op;
            else
                r->d1 = op;
            break;
        case IR_OP_DOT:
        case IR_OP_WARP_GROUP_DOT_WAIT:
        case IR_OP_ASYNC_COPY:
        case IR_OP_ASYNC_TMA_COPY:
        case IR_OP_ASYNC_TMA_STORE:
        case IR_OP_ASYNC_TMA_STORE_WAIT:
        case IR_OP_ASYNC_WAIT:
        case IR_OP_BARRIER:
        case IR_OP_NAMED_BARRIER_WAIT:
        case IR_OP_NAMED_BARRIER_ARRIVE: return false;
        case IR_OP_MBARRIER_ARRIVE: releases = true; break;
        default: break;
        }
        if (op->num_regions)
            return false;
    }
    if (!releases || !r->d2)
        return false;
    /* a chain: the second dot reads what the first computed */
    IrValue *s = r->d1->results[0], *acc = r->d2->results[0];
    bool chained = false;
    for (int i = 0; i < r->d2->num_operands; i++)
        chained |= depends(r, r->d2->operands[i], s, 0);
    if (!chained || ir_count_uses(body, acc) != 1)
        return false;
    r->acc = -1;
    for (int i = 0; i < yield->num_operands; i++)
        if (yield->operands[i] == acc)
            r->acc = i;
    if (r->acc < 0)
        return false;
    IrValue *acc_arg = body->args[r->acc + 1];
    /* the first dot reads nothing of the accumulator, and nothing before it does */
    for (IrOp *op = body->first; op != r->d1->next; op = op->next)
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i] == acc_arg)
                return false;
    if (depends(r, s, acc_arg, 0))
        return false;
    /* the tail: d2 and the releases after it; nothing else after d2 may
     * touch memory or synchronize */
    r->tail[r->num_tail++] = r->d2;
    for (IrOp *op = r->d2->next; op != yield; op = op->next) {
        if (op->opc == IR_OP_MBARRIER_ARRIVE) {
            if (r->num_tail == (int)(sizeof r->tail / sizeof r->tail[0]))
                return false;
            r->tail[r->num_tail++] = op;
        } else if (!ir_op_has_flag(op, OPF_PURE)) {
            return false;
        }
    }
    ir_map_init(&r->remat, &r->m->arena);
    for (int t = 0; t < r->num_tail; t++)
        for (int i = 0; i < r->tail[t]->num_operands; i++)
            if (!need(r, r->tail[t]->operands[i]))
                return false;
    return true;
}

/* op at b's position. */
static void put(IrBuilder *b, IrOp *op) {
    if (b->before)
        ir_op_insert_before(b->before, op);
    else
        ir_block_append(b->block, op);
}

/* Clones the tail's recomputed ops that `v` needs, then returns v's image. */
static IrValue *tail_value(Rot *r, IrBuilder *b, IrValue *v, IrMap *map) {
    IrValue *img = ir_map_get(map, v);
    if (img)
        return img;
    if (!defined_in_body(r, v))
        return v;
    IrOp *def = v->def;
    if (!def || !ir_map_get(&r->remat, def))
        return v; /* cannot happen: carried values are in map */
    for (int i = 0; i < def->num_operands; i++)
        tail_value(r, b, def->operands[i], map);
    put(b, ir_op_clone(r->m, def, map));
    return ir_map_get(map, v);
}

/* The tail at b, its carried values in map: the late dot when `dot`
 * (async when `async`), the releases when `releases`. Returns the dot. */
static IrOp *build_tail(Rot *r, IrBuilder *b, IrMap *map, bool dot_too, bool async, bool releases) {
    IrOp *dot = NULL;
    for (int t = 0; t < r->num_tail; t++) {
        IrOp *op = r->tail[t];
        if (op == r->d2 ? !dot_too : !releases)
            continue;
        for (int i = 0; i < op->num_operands; i++)
            tail_value(r, b, op->operands[i], map);
        IrOp *copy = ir_op_clone(r->m, op, map);
        put(b, copy);
        if (op == r->d2) {
            dot = copy;
            if (async)
                ir_op_set_int(r->m, copy, "async", 1);
        }
    }
    return dot;
}

/* `warp_group_dot_wait v {pending}` at b. */
static IrValue *wait_for(IrBuilder *b, IrValue *v, int64_t pending) {
    IrOp *w = pass_dot_wait(b->m, v, pending, b->loc);
    put(b, w);
    return w->results[0];
}

/* The name of the carried copy of v: its own without a numeric suffix, then _prev. */
static const char *prev_name(IrModule *m, const IrValue *v) {
    if (!v->name)
        return NULL;
    size_t n = strlen(v->name);
    for (size_t i = n; i > 0; i--)
        if (v->name[i - 1] == '.') {
            n = i - 1;
            break;
        } else if (v->name[i - 1] < '0' || v->name[i - 1] > '9') {
            break;
        }
    return arena_printf(&m->arena, "%.*s_prev", (int)n, v->name);
}

/* A value of type t for a branch that never reaches the loop. */
static IrValue *placeholder(IrBuilder *b, const IrType *t) {
    return ir_type_is_float(ir_type_elem(t)) ? ir_build_const_float(b, t, 0.0) : ir_build_const_int(b, t, 0);
}

/* What an iteration of the rotated loop carries, as map gives it: the
 * loop's yield operands but the accumulator's, then the late values. */
static IrValue **carried(Rot *r, IrMap *map, int nk) {
    IrOp *yield = r->body->last;
    IrValue **outs = ARENA_ARRAY(&r->m->arena, IrValue *, (size_t)nk);
    int k = 0;
    for (int j = 0; j < yield->num_operands; j++)
        if (j != r->acc)
            outs[k++] = pass_subst_value(map, yield->operands[j]);
    for (int i = 0; i < r->num_late; i++)
        outs[k++] = pass_subst_value(map, r->late[i]);
    return outs;
}

/* Does op read a result of loop? */
static bool uses_results(const IrOp *op, const IrOp *loop) {
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i]->def == loop)
            return true;
    return false;
}

/* Does the late dot read a buffer defined outside the body (not a ring's
 * stage, whose view the body computes)? Such a buffer may be what an
 * arrival after the loop gives back. */
static bool reads_outer_buffer(const Rot *r) {
    for (int k = 0; k < 2 && k < r->d2->num_operands; k++) {
        const IrValue *v = r->d2->operands[k];
        if (v->type->kind == IR_SMEM && !defined_in_body(r, v))
            return true;
    }
    return false;
}

static void rotate(Rot *r) {
    IrModule *m = r->m;
    IrOp *loop = r->loop, *yield = r->body->last;
    IrBlock *body = r->body;
    int nargs = yield->num_operands; /* iter args */
    IrValue *lb = loop->operands[0], *ub = loop->operands[1], *step = loop->operands[2];
    IrValue *acc_arg = body->args[r->acc + 1], *acc_init = loop->operands[3 + r->acc];
    int nk = nargs - 1 + r->num_late; /* carried by the rotated loop */
    const IrType **types = ARENA_ARRAY(&m->arena, const IrType *, (size_t)nk);
    int k = 0;
    for (int j = 0; j < nargs; j++)
        if (j != r->acc)
            types[k++] = yield->operands[j]->type;
    for (int i = 0; i < r->num_late; i++)
        types[k++] = r->late[i]->type;

    IrBuilder b;
    ir_builder_before(&b, loop);
    b.loc = loop->loc;
    IrValue *any = ir_build_cmp(&b, "lt", lb, ub);

    /* The first iteration, without a late dot. */
    IrOp *pro = ir_build_op(&b, IR_OP_IF, 1, &any, nk, types);
    {
        IrMap map;
        ir_map_init(&map, &m->arena);
        ir_map_put(&map, body->args[0], lb);
        for (int j = 0; j < nargs; j++)
            ir_map_put(&map, body->args[j + 1], loop->operands[3 + j]);
        IrBlock *then = pro->regions[0];
        for (IrOp *op = body->first; op != yield; op = op->next)
            if (!in_tail(r, op))
                ir_block_append(then, ir_op_clone(m, op, &map));
        IrValue **outs = carried(r, &map, nk);
        IrBuilder in;
        ir_builder_at_end(&in, m, then);
        in.loc = loop->loc;
        ir_build_op(&in, IR_OP_YIELD, nk, outs, 0, NULL);

        ir_builder_at_end(&in, m, pro->regions[1]);
        in.loc = loop->loc;
        k = 0;
        for (int j = 0; j < nargs; j++)
            if (j != r->acc)
                outs[k++] = loop->operands[3 + j];
        for (int i = 0; i < r->num_late; i++) {
            IrValue *v = r->late[i];
            int arg = -1;
            for (int j = 0; j < nargs; j++)
                if (v == body->args[j + 1])
                    arg = j;
            outs[k++] = arg >= 0 ? loop->operands[3 + arg] : placeholder(&in, v->type);
        }
        ir_build_op(&in, IR_OP_YIELD, nk, outs, 0, NULL);
    }

    /* The rotated loop, from the second iteration. */
    IrValue *lb2 = ir_build_binary(&b, IR_OP_ADD, lb->type, lb, step);
    IrValue **ops = ARENA_ARRAY(&m->arena, IrValue *, (size_t)nk + 3);
    ops[0] = lb2, ops[1] = ub, ops[2] = step;
    for (int i = 0; i < nk; i++)
        ops[3 + i] = pro->results[i];
    IrOp *nl = ir_op_create(m, IR_OP_FOR, nk + 3, ops, nk, types);
    nl->loc = loop->loc;
    ir_op_insert_before(loop, nl);
    IrBlock *nb = nl->regions[0];
    IrMap map, tmap; /* the head's values; the tail's (carried from the iteration before) */
    ir_map_init(&map, &m->arena);
    ir_map_init(&tmap, &m->arena);
    ir_map_put(&map, body->args[0], ir_block_add_arg(m, nb, body->args[0]->type, body->args[0]->name));
    for (int j = 0; j < nargs; j++)
        if (j != r->acc)
            ir_map_put(&map, body->args[j + 1],
                       ir_block_add_arg(m, nb, body->args[j + 1]->type, body->args[j + 1]->name));
    for (int i = 0; i < r->num_late; i++) /* %stage.1 is carried as %stage_prev */
        ir_map_put(&tmap, r->late[i], ir_block_add_arg(m, nb, r->late[i]->type, prev_name(m, r->late[i])));
    IrBuilder in;
    ir_builder_at_end(&in, m, nb);
    IrOp *late_dot = NULL;
    IrValue *acc_now = NULL;
    for (IrOp *op = body->first; op; op = op->next) {
        if (in_tail(r, op))
            continue;
        bool reads_acc = false;
        for (int i = 0; i < op->num_operands; i++)
            reads_acc |= op->operands[i] == acc_arg;
        if ((reads_acc || op == yield) && !acc_now) {
            /* the late dot completes; its stage goes back */
            in.loc = r->d2->loc;
            acc_now = wait_for(&in, late_dot->results[0], 0);
            ir_map_put(&map, acc_arg, acc_now);
            build_tail(r, &in, &tmap, false, false, true);
        }
        if (op == yield)
            break;
        IrOp *copy = ir_op_clone(m, op, &map);
        put(&in, copy);
        if (op == r->d1) { /* the late dot goes right behind the first */
            ir_op_set_int(m, copy, "async", 1);
            in.loc = r->d2->loc;
            late_dot = build_tail(r, &in, &tmap, true, true, false);
            in.loc = op->loc;
            ir_map_put(&map, r->d1->results[0], wait_for(&in, copy->results[0], 1));
        }
    }
    IrOp *ny = ir_op_create(m, IR_OP_YIELD, nk, carried(r, &map, nk), 0, NULL);
    ny->loc = yield->loc;
    ir_block_append(nb, ny);

    /* After the loop: the last iteration's late dot, behind the arrivals
     * that follow the loop (a buffer the loop's first dot read, given back
     * to the producer: its next contents then load under this dot). */
    IrOp *after = loop->next;
    while (after && after->opc == IR_OP_MBARRIER_ARRIVE && !uses_results(after, loop) && !reads_outer_buffer(r))
        after = after->next;
    if (after)
        ir_builder_before(&b, after);
    else
        ir_builder_at_end(&b, m, loop->parent);
    b.loc = loop->loc;
    IrOp *epi = ir_build_op(&b, IR_OP_IF, 1, &any, 1, &acc_arg->type);
    {
        IrMap fin;
        ir_map_init(&fin, &m->arena);
        for (int i = 0; i < r->num_late; i++)
            ir_map_put(&fin, r->late[i], nl->results[nargs - 1 + i]);
        ir_builder_at_end(&in, m, epi->regions[0]);
        in.loc = loop->loc;
        IrValue *res = build_tail(r, &in, &fin, true, false, true)->results[0];
        ir_build_op(&in, IR_OP_YIELD, 1, &res, 0, NULL);
        ir_builder_at_end(&in, m, epi->regions[1]);
        in.loc = loop->loc;
        ir_build_op(&in, IR_OP_YIELD, 1, &acc_init, 0, NULL);
    }
    ir_value_set_name(m, epi->results[0], loop->results[r->acc]->name);

    /* The old loop's results. */
    IrBlock *scope = loop->parent;
    k = 0;
    for (int j = 0; j < nargs; j++) {
        IrValue *to = j == r->acc ? epi->results[0] : nl->results[k++];
        if (j != r->acc)
            ir_value_set_name(m, to, loop->results[j]->name);
        ir_replace_all_uses(scope, loop->results[j], to);
    }
    ir_op_unlink(loop);
}

/* Rotates the first consumer loop that matches; true once done. */
static bool walk(IrModule *m, IrBlock *blk) {
    for (IrOp *op = blk->first, *next; op; op = next) {
        next = op->next;
        for (int i = 0; i < op->num_regions; i++)
            if (walk(m, op->regions[i]))
                return true;
        if (op->opc != IR_OP_FOR)
            continue;
        Rot r;
        memset(&r, 0, sizeof r);
        r.m = m;
        r.loop = op;
        r.body = op->regions[0];
        if (match(&r)) {
            rotate(&r);
            return true;
        }
    }
    return false;
}

bool pass_overlap_dots(IrModule *m, const PassOptions *opts) {
    (void)opts;
    for (IrFunc *f = m->first; f; f = f->next)
        if (f->kind == IR_FUNC_KERNEL && ir_func_get_int(f, "producer_warps", 0))
            walk(m, f->body);
    return true;
}
