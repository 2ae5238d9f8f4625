/*
 * allocate_shared.c — `allocate-shared`: an offset in the kernel's shared
 * memory for every buffer and every op's scratch, and the kernel's total.
 *
 * Precondition: every tile has a layout (scratch sizes depend on layouts).
 * Afterwards every op with tg_scratch_bytes > 0 carries `scratch_offset`,
 * every local_alloc carries `offset`, and every kernel `shared_size` (bytes;
 * 0 when it uses none). A kernel that needs more than the target gives one
 * program (tg_shared_limit) is an error.
 *
 * Two kinds of occupants, each with a live interval over the op numbering
 * of a pre-order walk (an op's regions are numbered inside its own span):
 *
 *   - a local_alloc buffer (smem type: elements x element bytes) lives from
 *     its definition to its last use, uses through views included
 *     (memdesc_index results, and `for` body arguments and results carrying
 *     it); an async warp_group_dot uses its operands until its wait (or
 *     its block's end). A use inside a loop that does not contain the definition keeps
 *     the buffer alive through the whole loop: the next iteration uses it
 *     again.
 *   - an op's scratch (a cross-warp reduction, a conversion through shared
 *     memory, an FMA dot...) lives only during that op: an interval of one;
 *     a reduction's, until the next op of its block with scratch when that
 *     is a reduction too (the first of a `for` body's, until the body's
 *     end, when the body's last op with scratch is another reduction), so
 *     that consecutive reductions need no barrier between one's loads and
 *     the next's stores (keep_reduce_scratch).
 *
 * Occupants whose intervals overlap get disjoint bytes; the others may share.
 * Placement is greedy, largest first (ties: earliest start): each takes the
 * lowest offset aligned to 16 bytes — to 8 x swizzle bytes for an
 * #nvmma_shared buffer, the repeat of its pattern, which wgmma's and TMA's
 * address XOR assume — that clears every overlapping occupant already
 * placed. Buffers from stage-shared and the pipeliner, and every
 * op's scratch, fall into the same allocator.
 */
#include "passes.h"

#include "target/target.h"

#include <stdlib.h>
#include <string.h>

typedef struct Occupant {
    IrOp *op;     /* the local_alloc, or the op that uses scratch */
    bool scratch; /* scratch of op (else the buffer op defines) */
    int64_t size; /* bytes */
    int64_t align; /* bytes, a power of two >= 16 */
    int start;    /* first op number live */
    int end;      /* last op number live */
    int64_t offset;
} Occupant;

typedef struct Alloc {
    IrModule *m;
    int num_warps;
    int next_id;
    Occupant *occ;
    int num_occ, cap_occ;
    IrMap buffer_of; /* smem IrValue* -> Occupant index + 1 (as a pointer-sized int) */
} Alloc;

static Occupant *add_occupant(Alloc *a, IrOp *op, bool scratch, int64_t size) {
    if (a->num_occ == a->cap_occ) {
        int cap = a->cap_occ ? a->cap_occ * 2 : 16;
        a->occ =
            arena_grow(&a->m->arena, a->occ, sizeof(Occupant) * (size_t)a->num_occ, sizeof(Occupant) * (size_t)cap);
        a->cap_occ = cap;
    }
    Occupant *o = &a->occ[a->num_occ++];
    memset(o, 0, sizeof *o);
    o->op = op;
    o->scratch = scratch;
    o->size = size;
    o->align = 16;
    o->start = o->end = op->id;
    return o;
}

static void alias(Alloc *a, const IrValue *view, const IrValue *of) {
    void *idx = ir_map_get(&a->buffer_of, of);
    if (idx)
        ir_map_put(&a->buffer_of, view, idx);
}

/* Numbers ops in pre-order, so a region op's span is its own number up to
 * span_end. */
static void number(Alloc *a, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        op->id = a->next_id++;
        for (int r = 0; r < op->num_regions; r++)
            number(a, op->regions[r]);
    }
}

/* The last op number inside op's regions (op's own number if none). */
static int span_end(const IrOp *op) {
    int end = op->id;
    for (int r = 0; r < op->num_regions; r++) {
        const IrOp *last = op->regions[r]->last;
        if (last) {
            int e = span_end(last);
            if (e > end)
                end = e;
        }
    }
    return end;
}

/* A use of buffer o at op `user`: alive until user, or until the end of the
 * outermost loop around user that does not contain o's definition. */
static void extend(Occupant *o, const IrOp *user) {
    int end = user->id;
    const IrBlock *def_block = o->op->parent;
    for (const IrOp *p = user->parent ? user->parent->parent_op : NULL; p;
         p = p->parent ? p->parent->parent_op : NULL) {
        /* p contains the definition if the definition's block is inside p. */
        bool contains = false;
        for (const IrBlock *b = def_block; b && b->parent_op; b = b->parent_op->parent)
            if (b->parent_op == p)
                contains = true;
        if (contains)
            break;
        if (p->opc == IR_OP_FOR || p->opc == IR_OP_WHILE) {
            int e = span_end(p);
            if (e > end)
                end = e;
        }
    }
    if (end > o->end)
        o->end = end;
}

/* The op until which an async warp_group_dot reads its buffers: the wait
 * for its result, or its block's end. */
static const IrOp *read_until(const IrOp *dot) {
    const IrOp *op = dot->next;
    for (; op && op->next; op = op->next)
        if (op->opc == IR_OP_WARP_GROUP_DOT_WAIT)
            for (int i = 0; i < op->num_operands; i++)
                if (op->operands[i] == dot->results[0])
                    return op;
    return op ? op : dot;
}

/* A buffer yielded out of a region: the op's result names it from then
 * on. An `if` result not yet aliased takes it; a result that already names
 * another buffer (a `for` or `while` result names its initial value, an
 * `if` result the other branch's) cannot name both, so the yielded buffer
 * stays live to the kernel's end. */
static void yielded(Alloc *a, const IrOp *yield) {
    const IrOp *owner = yield->parent ? yield->parent->parent_op : NULL;
    if (!owner)
        return;
    for (int i = 0; i < yield->num_operands && i < owner->num_results; i++) {
        void *idx = ir_map_get(&a->buffer_of, yield->operands[i]);
        if (!idx)
            continue;
        void *ridx = ir_map_get(&a->buffer_of, owner->results[i]);
        if (!ridx && owner->opc == IR_OP_IF)
            ir_map_put(&a->buffer_of, owner->results[i], idx);
        else if (ridx != idx && a->next_id - 1 > a->occ[(intptr_t)idx - 1].end)
            a->occ[(intptr_t)idx - 1].end = a->next_id - 1;
    }
}

static void collect(Alloc *a, IrBlock *b) {
    for (IrOp *op = b->first; op; op = op->next) {
        bool in_flight = op->opc == IR_OP_WARP_GROUP_DOT && ir_op_get_int(op, "async", 0);
        for (int i = 0; i < op->num_operands; i++) {
            void *idx = ir_map_get(&a->buffer_of, op->operands[i]);
            if (idx)
                extend(&a->occ[(intptr_t)idx - 1], in_flight ? read_until(op) : op);
        }
        if (op->opc == IR_OP_LOCAL_ALLOC && op->results[0]->type->kind == IR_SMEM) {
            const IrType *t = op->results[0]->type;
            int bits = ir_type_bits(t->elem);
            int64_t size = ir_type_numel(t) * (bits >= 8 ? bits / 8 : 1);
            Occupant *o = add_occupant(a, op, false, size);
            if (t->layout && t->layout->kind == LAYOUT_NVMMA_SHARED)
                o->align = 8 * (int64_t)t->layout->nvmma.swizzle; /* the swizzle pattern's repeat */
            else if (t->layout && t->layout->kind == LAYOUT_SHARED && t->layout->rank == 1 && t->rank <= 2 &&
                     ir_type_is_float(t->elem))
                o->align = 128; /* a row vector's stages: a TMA destination starts on 128 bytes */
            ir_map_put(&a->buffer_of, op->results[0], (void *)(intptr_t)a->num_occ);
        } else if (op->opc == IR_OP_MEMDESC_INDEX || op->opc == IR_OP_MEMDESC_TRANS) {
            alias(a, op->results[0], op->operands[0]);
        } else if (op->opc == IR_OP_FOR) {
            for (int i = 0; i < op->num_results; i++) {
                alias(a, op->regions[0]->args[1 + i], op->operands[3 + i]);
                alias(a, op->results[i], op->operands[3 + i]);
            }
        } else if (op->opc == IR_OP_WHILE) {
            for (int i = 0; i < op->num_results; i++) {
                for (int r = 0; r < 2; r++)
                    alias(a, op->regions[r]->args[i], op->operands[i]);
                alias(a, op->results[i], op->operands[i]);
            }
        } else if (op->opc == IR_OP_YIELD) {
            yielded(a, op);
        }
        int64_t scratch = tg_scratch_bytes(op, a->num_warps);
        if (scratch > 0)
            add_occupant(a, op, true, scratch);
        for (int r = 0; r < op->num_regions; r++)
            collect(a, op->regions[r]);
    }
}

/* Does op, or an op in its regions, use scratch? */
static bool scratch_within(const IrOp *op, int num_warps) {
    if (tg_scratch_bytes(op, num_warps) > 0)
        return true;
    for (int r = 0; r < op->num_regions; r++)
        for (const IrOp *o = op->regions[r]->first; o; o = o->next)
            if (scratch_within(o, num_warps))
                return true;
    return false;
}

/* The first op from op on (forward) or back (else) in its block that uses
 * scratch, or NULL. */
static const IrOp *scratch_from(const IrOp *op, bool forward, int num_warps) {
    while (op && !scratch_within(op, num_warps))
        op = forward ? op->next : op->prev;
    return op;
}

/* A cross-warp reduction's scratch stays live until the next op of its
 * block that uses scratch when that op is a reduction, and the first one
 * of a `for` body until the body's end when the body's last op with
 * scratch is another reduction, so that consecutive reductions (around the
 * loop too) get distinct bytes: codegen then leaves out the barrier before
 * a reduction's stores when the reduction before it, whose own barrier
 * every warp has passed, used other bytes (cg_reduce_scratch_fenced). Only
 * a reduction can leave out its barrier, so no other op keeps them. */
static void keep_reduce_scratch(Alloc *a) {
    for (int i = 0; i < a->num_occ; i++) {
        Occupant *o = &a->occ[i];
        if (!o->scratch || o->op->opc != IR_OP_REDUCE)
            continue;
        const IrOp *next = scratch_from(o->op->next, true, a->num_warps);
        if (next && next->opc == IR_OP_REDUCE && next->id > o->end)
            o->end = next->id;
        const IrBlock *b = o->op->parent;
        if (!b || !b->parent_op || b->parent_op->opc != IR_OP_FOR)
            continue;
        const IrOp *last = scratch_from(b->last, false, a->num_warps);
        if (scratch_from(b->first, true, a->num_warps) == o->op && last != o->op && last->opc == IR_OP_REDUCE &&
            span_end(b->last) > o->end)
            o->end = span_end(b->last);
    }
}

static int by_size(const void *x, const void *y) {
    const Occupant *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->scratch - b->scratch;
}

/* Greedy placement; returns the total bytes. */
static int64_t place(Alloc *a) {
    if (a->num_occ > 1)
        qsort(a->occ, (size_t)a->num_occ, sizeof(Occupant), by_size);
    int64_t total = 0;
    for (int i = 0; i < a->num_occ; i++) {
        Occupant *o = &a->occ[i];
        int64_t offset = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < i; j++) {
                const Occupant *p = &a->occ[j];
                bool live_together = p->start <= o->end && o->start <= p->end;
                bool bytes_overlap = p->offset < offset + o->size && offset < p->offset + p->size;
                if (live_together && bytes_overlap) {
                    offset = (p->offset + p->size + o->align - 1) & ~(o->align - 1);
                    moved = true;
                }
            }
        }
        o->offset = offset;
        if (offset + o->size > total)
            total = offset + o->size;
    }
    return total;
}

bool pass_allocate_shared(IrModule *m, const PassOptions *opts) {
    bool ok = true;
    for (IrFunc *f = m->first; f; f = f->next) {
        if (f->kind != IR_FUNC_KERNEL)
            continue;
        Alloc a;
        memset(&a, 0, sizeof a);
        a.m = m;
        a.num_warps = pass_func_num_warps(f, opts);
        ir_map_init(&a.buffer_of, &m->arena);
        number(&a, f->body);
        collect(&a, f->body);
        keep_reduce_scratch(&a);
        int64_t total = place(&a);
        for (int i = 0; i < a.num_occ; i++)
            ir_op_set_int(m, a.occ[i].op, a.occ[i].scratch ? "scratch_offset" : "offset", a.occ[i].offset);
        ir_func_set_int(f, "shared_size", total);
        int64_t limit = tg_shared_limit(&opts->target); /* the number codegen asserts */
        if (total > limit) {
            diag_error(opts->diags, f->loc, "kernel @%s needs %lld bytes of shared memory, the target has %lld",
                       f->name, (long long)total, (long long)limit);
            ok = false;
        }
    }
    return ok;
}
