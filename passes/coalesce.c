/*
 * coalesce.c — `coalesce`: a #blocked layout for each global memory access
 * that makes a warp's accesses contiguous, with vectors of up to 16 bytes
 * per thread where the axis info proves them safe.
 *
 * Precondition: every tile has a layout (assign-layouts). Afterwards every
 * load, store and atomic on a tile of pointers carries `vec`, and its
 * operands (and result) are in its chosen layout, with convert_layouts from
 * and back to the layouts around it: remove-layout-conversions then moves
 * the rest of the kernel into the access's layout.
 *
 * For each access, from the axis info of its pointer (docs/passes.md, "Axis
 * info and coalescing", as Triton's Coalesce.cpp does it):
 *
 *   order      dimensions by descending contiguity, ties to the later
 *              dimension (so nothing known gives the row-major default);
 *   own        min(divisibility / element bytes, contiguity, 16 / element
 *              bytes) along order[0]: the widest aligned vector this
 *              access allows by itself;
 *   per thread the largest `own` among the accesses of the function with the
 *              same shape and order (so the loads and stores of one row share
 *              a layout), at most max(1, elements / threads) (no thread
 *              idles while another holds several repetitions); stores and
 *              atomics also at most their own `own`, so that each thread
 *              writes whole 16-byte vectors with no gaps.
 *
 * The layout is ll_blocked_layout with per_thread elements along order[0].
 * `vec`, the elements per memory instruction codegen may use, is the largest
 * power of two at most min(per thread, divisibility / element bytes, 16 /
 * element bytes) that divides the contiguity and the mask's constancy along
 * order[0] (runs of either start at multiples of their length, so such a
 * vector lies in one): the IR carries the decision and the proof, and
 * codegen only reads it. When the mask's constancy alone
 * makes it narrower than the pointer allows (a row of odd length: `cols < n`
 * may change at any element), a load or store also gets `vec_masked`, the
 * width without the mask: a thread whose mask is true for all its elements
 * then uses vectors of that width, the others `vec` (codegen's split, in
 * lower_memory.c).
 *
 * Example: a 1024-element f32 load from `x + row * stride + arange` with x
 * and stride divisible by 16 gets 4 per thread (tpw [32], wpc [4]) and vec 4;
 * the same in f16 gets 8; with nothing known about x's alignment, 1.
 */
#include "passes.h"

#include <string.h>

typedef struct Access {
    IrOp *op;
    int order[IR_MAX_RANK]; /* dims by descending pointer contiguity */
    int own;                /* widest vector this access allows by itself */
    int vec;                /* elements per memory instruction */
} Access;

typedef struct Coalesce {
    IrModule *m;
    LayoutRewrite rw;
    AxisInfoMap *info;
    Access *acc;
    int num_acc, cap_acc;
    IrMap subst; /* replaced load/atomic results -> conversions of the new ones */
} Coalesce;

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static bool is_tile_access(const IrOp *op) {
    if (op->opc != IR_OP_LOAD && op->opc != IR_OP_STORE && op->opc != IR_OP_ATOMIC)
        return false;
    const IrType *p = op->operands[0]->type;
    return p->kind == IR_TILE && p->layout != NULL;
}

static void collect(IrOp *op, void *ctx) {
    Coalesce *c = ctx;
    if (!is_tile_access(op))
        return;
    if (c->num_acc == c->cap_acc) {
        int cap = c->cap_acc ? c->cap_acc * 2 : 16;
        c->acc = arena_grow(&c->m->arena, c->acc, sizeof(Access) * (size_t)c->num_acc, sizeof(Access) * (size_t)cap);
        c->cap_acc = cap;
    }
    Access *a = &c->acc[c->num_acc++];
    memset(a, 0, sizeof *a);
    a->op = op;
    const IrType *p = op->operands[0]->type;
    const AxisInfo *info = axis_info_get(c->info, op->operands[0]);
    /* Stable sort of the dims, last dim first, by descending contiguity. */
    int rank = p->rank;
    for (int i = 0; i < rank; i++)
        a->order[i] = rank - 1 - i;
    for (int i = 1; i < rank; i++)
        for (int j = i; j > 0 && info->contiguity[a->order[j]] > info->contiguity[a->order[j - 1]]; j--) {
            int t = a->order[j];
            a->order[j] = a->order[j - 1];
            a->order[j - 1] = t;
        }
    int d = a->order[0];
    int bytes = ir_type_bytes(p->elem->elem);
    int64_t multiple = info->divisibility[d] / bytes;
    if (multiple < 1)
        multiple = 1;
    int64_t contig = min64(info->contiguity[d], p->shape[d]);
    a->own = (int)min64(min64(multiple, contig), 16 / bytes > 0 ? 16 / bytes : 1);
    if (a->own < 1)
        a->own = 1;
}

static bool same_group(const Access *a, const Access *b) {
    const IrType *x = a->op->operands[0]->type, *y = b->op->operands[0]->type;
    if (x->rank != y->rank)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (x->shape[d] != y->shape[d] || a->order[d] != b->order[d])
            return false;
    return true;
}

/* Elements per thread along order[0] for access i. */
static int per_thread(Coalesce *c, int i, int threads) {
    const Access *a = &c->acc[i];
    int n = a->own;
    for (int j = 0; j < c->num_acc; j++)
        if (j != i && same_group(a, &c->acc[j]) && c->acc[j].own > n)
            n = c->acc[j].own;
    int64_t numel = ir_type_numel(a->op->operands[0]->type);
    int64_t cap = numel / threads > 1 ? numel / threads : 1;
    if (n > cap)
        n = (int)cap;
    if (a->op->opc != IR_OP_LOAD && n > a->own)
        n = a->own;
    return n;
}

/* The vector width codegen may use for access a in a layout with spt
 * elements per thread along order[0]. */
static int vector_width(Coalesce *c, const Access *a, int spt) {
    const IrOp *op = a->op;
    const IrType *p = op->operands[0]->type;
    const AxisInfo *info = axis_info_get(c->info, op->operands[0]);
    int d = a->order[0];
    int bytes = ir_type_bytes(p->elem->elem);
    int64_t v = spt;
    v = min64(v, info->divisibility[d] / bytes > 0 ? info->divisibility[d] / bytes : 1);
    v = min64(v, 16 / bytes > 0 ? 16 / bytes : 1);
    /* a power of two that divides the contiguity: runs of c start at
     * multiples of c, so such a vector never straddles two of them */
    int w = 1;
    while (w * 2 <= v)
        w *= 2;
    while (w > 1 && info->contiguity[d] % w)
        w /= 2;
    return w;
}

/* The widest vector, at most `width` (a power of two), over which access
 * a's mask is proven constant: runs of constancy k start at multiples of k,
 * so a vector of width w lies in one run when w divides k. */
static int mask_constancy(Coalesce *c, const Access *a, int width) {
    const IrOp *op = a->op;
    int mask_index = op->opc == IR_OP_LOAD ? 1 : 2;
    if (op->num_operands <= mask_index)
        return width;
    int64_t k = axis_info_get(c->info, op->operands[mask_index])->constancy[a->order[0]];
    int w = width;
    while (w > 1 && (k < w || k % w))
        w /= 2;
    return w;
}

/* Puts access a in layout l: operands converted in, the result (a new op
 * of the same kind) converted back to its old layout. */
static void rewrite_access(Coalesce *c, Access *a, const Layout *l) {
    IrOp *op = a->op;
    pass_subst_operands(&c->subst, op); /* operands that were results of rewritten accesses */
    if (op->operands[0]->type->layout == l)
        return;
    if (op->opc == IR_OP_STORE) {
        for (int i = 0; i < op->num_operands; i++)
            ir_op_set_operand(op, i, pass_convert_to(&c->rw, op->operands[i], l));
        return;
    }
    IrMap none;
    ir_map_init(&none, &c->m->arena);
    IrOp *copy = ir_op_clone(c->m, op, &none);
    for (int i = 0; i < copy->num_operands; i++)
        ir_op_set_operand(copy, i, pass_convert_to(&c->rw, op->operands[i], l));
    IrValue *old = op->results[0];
    copy->results[0]->type = ir_type_with_layout(c->m, old->type, l);
    ir_op_insert_before(op, copy);
    ir_op_unlink(op);
    a->op = copy;
    ir_map_put(&c->subst, old, pass_convert_to(&c->rw, copy->results[0], old->type->layout));
}

static void substitute(IrOp *op, void *ctx) {
    Coalesce *c = ctx;
    pass_subst_operands(&c->subst, op);
}

bool pass_coalesce(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next) {
        int num_warps = pass_func_num_warps(f, opts);
        int threads = num_warps * opts->target.threads_per_warp;
        Coalesce c;
        memset(&c, 0, sizeof c);
        c.m = m;
        pass_layout_rewrite_init(&c.rw, m, f, num_warps);
        ir_map_init(&c.subst, &m->arena);
        c.info = axis_info_run(f);
        ir_walk_func(f, collect, &c);
        int *spt = ARENA_ARRAY(&m->arena, int, c.num_acc + 1);
        for (int i = 0; i < c.num_acc; i++)
            spt[i] = per_thread(&c, i, threads);
        for (int i = 0; i < c.num_acc; i++) {
            Access *a = &c.acc[i];
            const IrType *p = a->op->operands[0]->type;
            int sizes[IR_MAX_RANK];
            for (int d = 0; d < p->rank; d++)
                sizes[d] = 1;
            sizes[a->order[0]] = spt[i];
            const Layout *l = ll_blocked_layout(m, p->rank, p->shape, sizes, a->order, num_warps);
            int width = vector_width(&c, a, spt[i]);
            a->vec = mask_constancy(&c, a, width);
            rewrite_access(&c, a, l);
            ir_op_set_int(m, a->op, "vec", a->vec);
            if (width > a->vec && a->op->opc != IR_OP_ATOMIC)
                ir_op_set_int(m, a->op, "vec_masked", width);
        }
        if (c.subst.count)
            ir_walk_func(f, substitute, &c);
        axis_info_free(c.info);
    }
    return true;
}
