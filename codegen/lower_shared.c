/*
 * lower_shared.c — shared-memory buffers: local_alloc, memdesc_index,
 * local_store, local_load, async_copy, async_commit, async_wait.
 *
 * A buffer (an smem value) is lowered to one uniform i32: its byte offset in
 * the dynamic shared memory. local_alloc takes the `offset` allocate-shared
 * gave it; memdesc_index adds stage * (bytes of one stage).
 *
 * Elements sit where the buffer's #shared<vec, per_phase, max_phase, order>
 * layout puts them (ll_shared_offset, ir/linear_layout.c): dimensions stored
 * row-major in `order` (order[0] fastest); along the fastest dimension,
 * units of `vec` elements are permuted per row: unit u of row r is stored at
 * unit u ^ ((r / per_phase) % max_phase), r being the coordinate along
 * order[1]; max_phase is clamped to the units per row. A 1-D buffer is not
 * swizzled. Worked example: smem<64x64xf16, #shared<vec = 8, per_phase = 1,
 * max_phase = 8, order = [1, 0]>>: element (3, 20) is in unit 20 / 8 = 2 of
 * row 3, stored at unit 2 ^ 3 = 1: byte (3 * 64 + 8 + 4) * 2.
 *
 * Addresses. With power-of-two shapes that map is linear over GF(2): every
 * bit of an element offset is a coordinate bit, or a column bit XOR a row
 * bit (the swizzle), so offset(a ^ b) = offset(a) ^ offset(b). A register's
 * coordinates are reg(r) ^ lane_part ^ warp_part (ir/linear_layout.c), so
 * its offset is a constant, offset(reg(r)), XOR the thread's offset: the XOR
 * of offset(basis) over the thread's set lane and warp bits, computed once
 * in the kernel's entry block (thread_offset). Where the constant's bits
 * cannot meet the thread part's, the XOR is an add that folds into the
 * instruction's immediate offset. In the example above a thread of
 * #blocked<spt = [1, 8], tpw = [4, 8], wpc = [4, 1]> whose lane bit 3 moves
 * one row down adds offset((1, 0)) = 64 ^ 8 = 72 to its part.
 *
 * Stores (local_alloc with a value, local_store) write each thread's
 * registers at their elements' offsets, in vectors of up to 16 bytes where
 * consecutive registers hold consecutive elements of the fastest dimension
 * inside one swizzle unit (the swizzle moves whole units, so such a group
 * stays contiguous): st.shared.v4.b32 for 8 f16 of a row. Copies (lanes or
 * warps holding the same elements) store identical values, harmlessly. On
 * sm_90 a 16-bit tile in a layout ldmatrix could load (below: the #mma
 * accumulator rounded to f16 or bf16, where each thread holds pairs of
 * elements and st.shared moves 4 bytes at a time) is stored with its
 * mirror, stmatrix.sync.aligned.m8n8.{x4,x2,x1}[.trans].shared.b16: up to
 * four 8x8 matrices an instruction, each lane giving one row address
 * (store_stmatrix), that row address computed where the store stands and
 * XORed per instruction (where the XOR stays below the buffer's alignment,
 * else the hoisted addresses of loads), so that no address register lives
 * across a loop.
 *
 * local_load into a layout whose lanes hold what ldmatrix delivers (the
 * #dot_op fragments of mma.sync, the #mma accumulator) is
 * ldmatrix.sync.aligned.m8n8.{x4,x2,x1}[.trans].shared.b16: one instruction
 * loads up to four 8x8 matrices of 16-bit elements (8 rows of 16 bytes);
 * lane l gives the address of row l % 8 of matrix l / 8, and receives per
 * matrix one b32 register: row l / 4, elements 2 * (l % 4) and + 1 (without
 * .trans), or rows 2 * (l % 4) and + 1 of column l / 4 (.trans, for a
 * layout whose register pairs run along the buffer's slow dimension: a B
 * operand stored N-major, K being its slow dimension). The layout is matched
 * by coordinates (ldmatrix_plan), never by kind: the first register bit
 * must form the b32 pair, the lanes must move elements as ldmatrix's do, and
 * every other register and warp basis must move by whole 8x8 matrices. The
 * two register bits that move the least pick the matrices of an x4 (a 16x16
 * block: one m16k16 A fragment, or the B fragments of two n8 tiles), the
 * others enumerate the instructions. 32-bit elements (tf32 operands stored
 * K-contiguous) load the same way as 8x4 matrices, without .trans.
 *
 * Everything else loads element by element, in vectors where the registers
 * allow (as stores do): other layouts (#blocked), element sizes other than 2
 * and 4 bytes, 32-bit elements whose pairs run along the slow dimension (no
 * b32 .trans), swizzled buffers whose unit is under 16 bytes (a matrix row
 * would not be contiguous), and tiles smaller than one 8x8 matrix.
 *
 * Deferred loads. A local_load whose only use is the operand of an mma dot
 * later in the same block, with nothing in between that may write its
 * buffer, is not lowered where it stands: the dot loads each k step's
 * fragments right before that step's mma instructions (cg_deferred_*), so
 * the operands of a whole 128x128x64 dot are never live at once (ptxas
 * otherwise runs out of registers).
 *
 * Barriers. local_alloc with a value is a complete initialization: it
 * synchronizes by itself, so the local_load that follows needs nothing.
 * It is bracketed by bar.sync: one before its stores (earlier readers of
 * the same bytes, such as the previous iteration of a loop, must be done),
 * one after (every thread's stores are visible to every reader). A run of
 * local_allocs with values in one block, separated only by ops that do not
 * touch shared memory, shares one barrier before and one after; the barrier
 * before is left out for a local_alloc at the top level of a kernel before
 * any other use of shared memory, or right after a barrier. local_store,
 * async_copy and local_load add no barriers: code that writes buffers in
 * place (the pipeliner's rings) orders threads with the IR's `barrier` ops.
 *
 * async_copy is cp.async where it can be: groups of `vec` registers (as for
 * global loads) of 4, 8 or 16 bytes whose elements are consecutive along the
 * buffer's fastest dimension and inside one swizzle unit, so that both the
 * global and the shared side of the group are contiguous and aligned.
 * Masked-off groups copy 0 bytes and zero-fill (src-size 0). Otherwise (other
 * widths, an `other` value that is not zero) it is a synchronous copy: a
 * predicated global load and a shared store, which completes before any
 * wait. async_commit and async_wait are cp.async.commit_group and
 * cp.async.wait_group N.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

static CgVal *scalar(Cg *cg, LLVMValueRef v) {
    CgVal *r = cg_new_val(cg, 1, NULL);
    r->v[0] = v;
    return r;
}

/* The #shared layout and shape of a buffer type. */
typedef struct {
    const Layout *layout;
    int rank;
    int64_t shape[IR_MAX_RANK];
    int order[IR_MAX_RANK];
    int vec, max_phase; /* max_phase as the map uses it (clamped to the units of a row) */
    int eb;             /* element bytes */
} Swizzle;

/* NULL when t is a valid buffer type, else what is wrong. */
static const char *swizzle_check(const IrType *t, Swizzle *s) {
    const Layout *l = t->layout;
    if (!l || (l->kind != LAYOUT_SHARED && l->kind != LAYOUT_NVMMA_SHARED) || l->rank != t->rank)
        return "shared memory without a #shared layout of its rank";
    s->layout = l;
    s->rank = t->rank;
    s->eb = ir_type_bytes(t->elem);
    bool nvmma = l->kind == LAYOUT_NVMMA_SHARED;
    for (int d = 0; d < t->rank; d++) {
        s->shape[d] = t->shape[d];
        s->order[d] = nvmma ? l->nvmma.order[d] : l->shared.order[d];
        if (!tc_is_pow2(t->shape[d]))
            return "shared-memory dimensions must be powers of two";
    }
    if (nvmma) {
        /* 16-byte units, swizzled within rows of `swizzle` bytes: as a #shared
         * layout for vector grouping (the blocks are whole units) */
        s->vec = s->eb < 16 ? 16 / s->eb : 1;
        int64_t units = l->nvmma.swizzle / 16, row_units = s->shape[s->order[0]] * s->eb / 16;
        s->max_phase = (int)(units < row_units ? units : row_units);
        if (s->max_phase < 1)
            s->max_phase = 1;
        return NULL;
    }
    s->vec = l->shared.vec;
    if (!tc_is_pow2(s->vec) || !tc_is_pow2(l->shared.per_phase) || !tc_is_pow2(l->shared.max_phase))
        return "#shared vec, per_phase and max_phase must be powers of two";
    s->max_phase = ll_shared_max_phase(l, t->rank, t->shape);
    return NULL;
}

static bool swizzle_of(Cg *cg, const IrOp *op, const IrType *t, Swizzle *s) {
    const char *why = swizzle_check(t, s);
    return why ? cg_error(cg, op, "internal error: %s", why) : true;
}

/* ---- addresses (see the essay: the offset map is linear) ---- */

static int64_t const_offset(const Swizzle *s, const int64_t *c) {
    if (s->layout->kind == LAYOUT_NVMMA_SHARED)
        return ll_nvmma_offset(s->layout, s->rank, s->shape, s->eb, c);
    return ll_shared_offset(s->layout, s->rank, s->shape, c);
}

typedef struct {
    LLVMValueRef v; /* i32: the element offset of the thread's part */
    int64_t bits;   /* OR of every offset it can take */
} ThreadOffset;

/* The XOR of offset(basis) over the set lane and warp bits of this thread. */
static ThreadOffset thread_offset(Cg *cg, const Swizzle *s, const LinearLayout *ll) {
    int64_t off[2][LL_MAX_BITS];
    memset(off, 0, sizeof off);
    ThreadOffset t;
    t.bits = 0;
    for (int in = LL_LANE; in <= LL_WARP; in++)
        for (int k = 0; k < ll->num_bits[in]; k++) {
            int64_t c[IR_MAX_RANK];
            for (int d = 0; d < ll->rank; d++)
                c[d] = ll->bases[in][k][d];
            off[in - LL_LANE][k] = const_offset(s, c);
            t.bits |= off[in - LL_LANE][k];
        }
    t.v = cg_thread_offset(cg, off, true);
    return t;
}

/* Byte offset (i32) in buffer `base` of the element at thread part t XOR
 * constant coordinates c. */
static LLVMValueRef address(Cg *cg, const Swizzle *s, ThreadOffset t, const int64_t *c, LLVMValueRef base) {
    /* the thread part and the constant depend on neither the buffer nor a
     * loop: computed once, in the entry block (where t is), like the memo */
    LLVMBuilderRef b = cg->entry_b;
    int64_t o = const_offset(s, c);
    LLVMValueRef e = t.v;
    if (o && !(o & t.bits)) {
        e = LLVMBuildAdd(b, e, cg_i32(cg, o), "");
        if (LLVMIsAInstruction(e)) {
            LLVMSetNUW(e, 1);
            LLVMSetNSW(e, 1);
        }
    } else if (o) {
        e = LLVMBuildXor(b, e, cg_i32(cg, o), "");
    }
    e = LLVMBuildShl(b, e, cg_i32(cg, tc_log2i(s->eb)), "");
    if (LLVMIsAInstruction(e)) {
        LLVMSetNUW(e, 1);
        LLVMSetNSW(e, 1);
    }
    return LLVMBuildAdd(cg->b, base, e, "");
}

/* Byte offset of the thread part alone: base + t (the row address that
 * constant offsets of registers are added to or XORed into). */
static LLVMValueRef row_address(Cg *cg, const Swizzle *s, ThreadOffset t, LLVMValueRef base) {
    return LLVMBuildAdd(cg->b, base, LLVMBuildShl(cg->b, t.v, cg_i32(cg, tc_log2i(s->eb)), ""), "");
}

/* The address of register r of layout ll (thread part t of ll). */
static LLVMValueRef reg_address(Cg *cg, const Swizzle *s, ThreadOffset t, const LinearLayout *ll, int r,
                                LLVMValueRef base) {
    int64_t c[IR_MAX_RANK];
    ll_apply_in(ll, LL_REG, r, c);
    return address(cg, s, t, c, base);
}

/* The byte alignment every address of buffer `buf` is known to have: that of
 * the dynamic shared memory (CG_SMEM_ALIGN), of the local_alloc's offset and,
 * through memdesc_index, of the stage size (memdesc_trans changes neither). */
static int64_t buffer_align(const IrValue *buf) {
    int64_t a = CG_SMEM_ALIGN;
    const IrOp *def = ir_view_buffer(buf)->def;
    if (def && def->opc == IR_OP_MEMDESC_INDEX) {
        const IrType *stage = def->results[0]->type;
        int64_t bytes = ir_type_size_bytes(stage);
        a = (bytes & -bytes) < a ? bytes & -bytes : a;
        def = def->operands[0]->def;
    }
    const IrAttr *off = def && def->opc == IR_OP_LOCAL_ALLOC ? ir_op_attr(def, "offset") : NULL;
    if (!off || off->kind != IR_ATTR_INT)
        return 1;
    if (off->i)
        a = (off->i & -off->i) < a ? off->i & -off->i : a;
    return a;
}

/* ---- vectors of registers ---- */

/*
 * Registers per vector access to a buffer: the largest power of two g <= 16
 * bytes such that register bases 0 .. log2(g)-1 step 1, 2, 4 ... along the
 * buffer's fastest dimension, every other basis moves that dimension by a
 * multiple of g (so each group starts g-aligned), and, in a swizzled buffer,
 * g <= vec (the group stays inside one unit). 1 for i1 and pointers.
 * Example: #blocked<spt = [1, 8], ...> f16 into #shared<vec = 8, ...,
 * order = [1, 0]>: g = 8, one 16-byte access per row segment.
 */
static int vector_group(const Swizzle *s, const LinearLayout *ll, const IrType *elem) {
    if (elem->kind == IR_I1 || elem->kind == IR_PTR || ll->rank != s->rank)
        return 1;
    int dim = s->order[0];
    int g = 1, k = 0;
    while (k < ll->num_bits[LL_REG] && 2 * g * s->eb <= 16 && (s->max_phase == 1 || 2 * g <= s->vec)) {
        bool ok = true;
        for (int d = 0; d < ll->rank; d++)
            ok &= ll->bases[LL_REG][k][d] == (d == dim ? g : 0);
        for (int in = 0; in < LL_NUM_IN; in++)
            for (int b = in == LL_REG ? k + 1 : 0; b < ll->num_bits[in]; b++)
                ok &= ll->bases[in][b][dim] % (2 * g) == 0;
        if (!ok)
            break;
        g *= 2, k++;
    }
    return g;
}

static bool store_tile(Cg *cg, const IrOp *op, const IrValue *tile, const IrType *buf, LLVMValueRef base);

/* ---- barriers around local_alloc with a value ---- */

static bool is_init_alloc(const IrOp *op) {
    return op && op->opc == IR_OP_LOCAL_ALLOC && op->num_operands == 1;
}

/* The buffer a dot's operand i was loaded from when that local_load may be
 * deferred into the dot (its ldmatrix issued there, past barriers:
 * cg_local_load_deferred), else NULL. */
static const IrValue *dot_loaded_buffer(const IrOp *op, int i) {
    const IrOp *def = op->operands[i]->def;
    return op->opc == IR_OP_DOT && def && def->opc == IR_OP_LOCAL_LOAD ? def->operands[0] : NULL;
}

/* Does op read or write shared memory through an operand? Views only name
 * bytes, and control flow only carries buffers. */
static bool accesses_smem_operand(const IrOp *op) {
    if (op->opc == IR_OP_MEMDESC_INDEX || op->opc == IR_OP_MEMDESC_TRANS || op->opc == IR_OP_YIELD ||
        op->opc == IR_OP_CONDITION || op->num_regions)
        return false;
    for (int i = 0; i < op->num_operands; i++)
        if (op->operands[i]->type->kind == IR_SMEM || dot_loaded_buffer(op, i))
            return true;
    return false;
}

/* Does op (or an op in its regions) use shared memory or synchronize? */
static bool touches_shared(const IrOp *op, int num_warps) {
    switch (op->opc) {
    case IR_OP_LOCAL_ALLOC: return op->num_operands > 0;
    case IR_OP_ASYNC_WAIT:
    case IR_OP_WARP_GROUP_DOT_WAIT: /* completes this warpgroup's wgmma reads only */
    case IR_OP_FENCE_ASYNC_SHARED:
    case IR_OP_ASYNC_TMA_STORE_WAIT:
    case IR_OP_BARRIER: return true;
    default: break;
    }
    if (accesses_smem_operand(op) || tg_scratch_bytes(op, num_warps) > 0)
        return true;
    for (int i = 0; i < op->num_regions; i++)
        for (const IrOp *o = op->regions[i]->first; o; o = o->next)
            if (touches_shared(o, num_warps))
                return true;
    return false;
}

/* The nearest op before (dir < 0) or after op in its block that touches
 * shared memory, or NULL. */
static const IrOp *neighbor(const IrOp *op, int dir, int num_warps) {
    for (const IrOp *o = dir < 0 ? op->prev : op->next; o; o = dir < 0 ? o->prev : o->next)
        if (touches_shared(o, num_warps))
            return o;
    return NULL;
}

/* The bytes [*lo, *hi) of the buffer v is or views (a ring's stage: the
 * whole ring); false when unknown. */
static bool smem_bytes(const IrValue *v, int64_t *lo, int64_t *hi) {
    const IrValue *root = ir_buffer_root(v);
    const IrOp *def = root->def;
    const IrAttr *off = def && def->opc == IR_OP_LOCAL_ALLOC ? ir_op_attr(def, "offset") : NULL;
    if (!off || off->kind != IR_ATTR_INT)
        return false;
    *lo = off->i;
    *hi = off->i + ir_type_size_bytes(root->type);
    return true;
}

static bool overlaps(const IrValue *v, int64_t lo, int64_t hi) {
    int64_t a, b;
    return v->type->kind == IR_SMEM && (!smem_bytes(v, &a, &b) || (a < hi && lo < b));
}

/* May op (or an op in its regions) touch shared memory in [lo, hi)? A
 * wait counts as the dots or copies it completes: they may have been
 * issued before a barrier and read (or land) after it. */
static bool touches_bytes(const IrOp *op, int64_t lo, int64_t hi, int num_warps) {
    if (op->opc == IR_OP_ASYNC_WAIT || op->opc == IR_OP_MBARRIER_WAIT)
        return true;
    if (op->opc == IR_OP_WARP_GROUP_DOT_WAIT) {
        for (int i = 0; i < op->num_operands; i++) {
            const IrOp *dot = op->operands[i]->def;
            if (!dot || dot->opc != IR_OP_WARP_GROUP_DOT || touches_bytes(dot, lo, hi, num_warps))
                return true;
        }
        return false;
    }
    int64_t scratch = tg_scratch_bytes(op, num_warps);
    if (scratch > 0) {
        const IrAttr *off = ir_op_attr(op, "scratch_offset");
        if (!off || off->kind != IR_ATTR_INT || (off->i < hi && lo < off->i + scratch))
            return true;
    }
    for (int i = 0; i < op->num_operands; i++) {
        const IrValue *loaded = dot_loaded_buffer(op, i);
        if (overlaps(op->operands[i], lo, hi) || (loaded && overlaps(loaded, lo, hi)))
            return true;
    }
    for (int i = 0; i < op->num_results; i++)
        if (overlaps(op->results[i], lo, hi))
            return true;
    for (int i = 0; i < op->num_regions; i++)
        for (const IrOp *o = op->regions[i]->first; o; o = o->next)
            if (touches_bytes(o, lo, hi, num_warps))
                return true;
    return false;
}

/* Is there a barrier op before op in its block with nothing between that
 * touches op's bytes? Then every read of them before that barrier is
 * complete in every warp (a dot in flight past it reads other bytes:
 * allocate-shared keeps its buffers live until its wait), and op may write
 * without a barrier of its own. */
static bool fenced_one(const IrOp *op, int num_warps) {
    int64_t lo, hi;
    if (!smem_bytes(op->results[0], &lo, &hi))
        return false;
    for (const IrOp *o = op->prev; o; o = o->prev) {
        if (o->opc == IR_OP_BARRIER)
            return true;
        if (touches_bytes(o, lo, hi, num_warps))
            return false;
    }
    return false;
}

/* The same for op and the local_allocs after it that share its barrier
 * (the run of them, see lower_alloc). */
static bool fenced_before(const IrOp *op, int num_warps) {
    for (const IrOp *o = op; is_init_alloc(o); o = neighbor(o, 1, num_warps))
        if (!fenced_one(o, num_warps))
            return false;
    return true;
}

/* ---- the barrier before a cross-warp reduction's stores ---- */

/* A reduce op whose lowering stores partials to its scratch, then a
 * barrier, then loads them (lower_reduce.c, step 3): every access of shared
 * memory before it in its warps' program order is complete past that
 * barrier. */
static bool is_fencing_reduce(const IrOp *op, int num_warps) {
    return op->opc == IR_OP_REDUCE && tg_scratch_bytes(op, num_warps) > 0;
}

typedef enum { WALK_OPEN, WALK_FENCED, WALK_TOUCHED } WalkEnd;

/* Walks back from `from` (inclusive) to `stop` (exclusive; NULL: the
 * block's start): fenced at a barrier op, or at a fencing reduce that
 * does not touch [lo, hi); touched at any other op that may. */
static WalkEnd walk_back(const IrOp *from, const IrOp *stop, int64_t lo, int64_t hi, int num_warps) {
    for (const IrOp *o = from; o && o != stop; o = o->prev) {
        if (o->opc == IR_OP_BARRIER)
            return WALK_FENCED;
        if (touches_bytes(o, lo, hi, num_warps))
            return WALK_TOUCHED;
        if (is_fencing_reduce(o, num_warps))
            return WALK_FENCED;
    }
    return WALK_OPEN;
}

/* Is every access of [lo, hi) that runs before `at` separated from it by a
 * barrier? Before `at` in its block; at a block's start, the kernel's body
 * has nothing earlier; a `for` body has the rest of the body (the previous
 * iteration, back to `at`) and, for the first iteration, what runs before
 * the `for`; any other region (if, while, a warp-specialized region)
 * counts as unfenced. */
static bool fenced_at(const IrOp *at, int64_t lo, int64_t hi, int num_warps) {
    WalkEnd e = walk_back(at->prev, NULL, lo, hi, num_warps);
    if (e != WALK_OPEN)
        return e == WALK_FENCED;
    const IrBlock *b = at->parent;
    if (!b)
        return false;
    const IrOp *owner = b->parent_op;
    if (!owner) /* the kernel's body */
        return true;
    if (owner->opc != IR_OP_FOR)
        return false;
    if (walk_back(b->last, at, lo, hi, num_warps) != WALK_FENCED)
        return false;
    return fenced_at(owner, lo, hi, num_warps);
}

bool cg_reduce_scratch_fenced(const IrOp *op, int num_warps) {
    const IrAttr *off = ir_op_attr(op, "scratch_offset");
    if (!off || off->kind != IR_ATTR_INT)
        return false;
    return fenced_at(op, off->i, off->i + tg_scratch_bytes(op, num_warps), num_warps);
}

/* True when the last instruction of the current LLVM block is a barrier. */
static bool after_barrier(Cg *cg) {
    LLVMValueRef last = LLVMGetLastInstruction(LLVMGetInsertBlock(cg->b));
    if (!last || !LLVMIsACallInst(last))
        return false;
    LLVMValueRef fn = LLVMGetCalledValue(last);
    size_t len = 0;
    const char *name = fn ? LLVMGetValueName2(fn, &len) : NULL;
    return name && ((len == strlen("llvm.nvvm.barrier0") && memcmp(name, "llvm.nvvm.barrier0", len) == 0) ||
                    (len == strlen("llvm.nvvm.barrier.sync.cnt") &&
                     memcmp(name, "llvm.nvvm.barrier.sync.cnt", len) == 0));
}

static bool lower_alloc(Cg *cg, IrOp *op) {
    const IrAttr *off = ir_op_attr(op, "offset");
    if (!off || off->kind != IR_ATTR_INT)
        return cg_error(cg, op, "internal error: local_alloc has no offset (run allocate-shared)");
    LLVMValueRef base = cg_i32(cg, off->i);
    if (op->num_operands == 1) {
        const IrOp *prev = neighbor(op, -1, cg->num_warps);
        bool first_use = op->parent == cg->f->body && !prev;
        if (!is_init_alloc(prev) && !first_use && !after_barrier(cg) && !fenced_before(op, cg->num_warps))
            cg_barrier(cg);
        if (!store_tile(cg, op, op->operands[0], op->results[0]->type, base))
            return false;
        const Layout *l = op->results[0]->type->layout;
        if (l && l->kind == LAYOUT_NVMMA_SHARED) /* its readers (wgmma) read through the async proxy */
            cg_asm(cg, cg->t_void, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0, true);
        if (!is_init_alloc(neighbor(op, 1, cg->num_warps)))
            cg_barrier(cg);
    }
    cg_set(cg, op->results[0], scalar(cg, base));
    return true;
}

/* ---- local_load: ldmatrix ---- */

/*
 * How a local_load becomes ldmatrix (see the essay above). For a buffer
 * with fastest dimension f and slow dimension s, 16-bit elements, without
 * .trans: register bit 0 moves f by 1 (the b32 pair), lane bits move f by 2,
 * 4 and s by 1, 2, 4; with .trans: register bit 0 moves s by 1, lane bits s
 * by 2, 4 and f by 1, 2, 4. 32-bit elements: no pair bit, lanes f by 1, 2
 * and s by 1, 2, 4 (no .trans). Worked example: #dot_op<idx = 1, parent =
 * #mma<wpc = [4, 1]>, kwidth = 2> on 64x64 f16 (B, K x N) from #shared<...,
 * order = [1, 0]> (N fastest): registers (1,0) (8,0) (16,0) (32,0) (0,8)
 * (0,16) (0,32); register bit 0 moves K, the slow dimension: .trans; the
 * bits moving least, (8,0) and (0,8), pick the four matrices of an x4 (k 0-7
 * and 8-15 of columns 0-7 and 8-15): registers 0, 2, 16, 18 are the low
 * halves of its words 0..3; the other bits (16,0) (32,0) (0,16) (0,32)
 * enumerate 16 instructions.
 */
typedef struct {
    bool trans;
    int word_bits; /* register bits inside one b32: 1 (16-bit elements) or 0 */
    int sel_bits;  /* matrices per instruction: 1 << sel_bits (x4, x2, x1) */
    int sel[2];    /* the register bits that choose the matrix */
    int fixed;     /* mask of word and selecting register bits */
} Ldmatrix;

static bool basis_is(const LinearLayout *ll, int in, int b, int dim, int32_t v) {
    for (int d = 0; d < ll->rank; d++)
        if (ll->bases[in][b][d] != (d == dim ? v : 0))
            return false;
    return true;
}

static bool ldmatrix_lanes(const LinearLayout *ll, int f, int sl, int eb, bool trans) {
    if (ll->num_bits[LL_LANE] != 5)
        return false;
    if (!trans)
        return basis_is(ll, LL_LANE, 0, f, 4 / eb) && basis_is(ll, LL_LANE, 1, f, 8 / eb) &&
               basis_is(ll, LL_LANE, 2, sl, 1) && basis_is(ll, LL_LANE, 3, sl, 2) && basis_is(ll, LL_LANE, 4, sl, 4);
    return basis_is(ll, LL_LANE, 0, sl, 2) && basis_is(ll, LL_LANE, 1, sl, 4) && basis_is(ll, LL_LANE, 2, f, 1) &&
           basis_is(ll, LL_LANE, 3, f, 2) && basis_is(ll, LL_LANE, 4, f, 4);
}

static int32_t reach(const LinearLayout *ll, int b) {
    int32_t m = 0;
    for (int d = 0; d < ll->rank; d++)
        m = ll->bases[LL_REG][b][d] > m ? ll->bases[LL_REG][b][d] : m;
    return m;
}

static bool ldmatrix_plan(const Swizzle *s, const LinearLayout *ll, const IrType *elem, Ldmatrix *p) {
    if (s->rank != 2 || ll->rank != 2 || (s->eb != 2 && s->eb != 4) || elem->kind == IR_I1 || elem->kind == IR_PTR)
        return false;
    for (int d = 0; d < 2; d++)
        if (ll->shape[d] != s->shape[d])
            return false;
    int f = s->order[0], sl = s->order[1], per_row = 16 / s->eb;
    if (s->max_phase > 1 && s->vec * s->eb < 16)
        return false; /* a swizzle unit under 16 bytes splits the matrix rows */
    if (s->shape[f] < per_row || s->shape[sl] < 8)
        return false;
    p->word_bits = s->eb == 2 ? 1 : 0;
    if (ll->num_bits[LL_REG] < p->word_bits)
        return false;
    if (s->eb == 4)
        p->trans = false;
    else if (basis_is(ll, LL_REG, 0, f, 1))
        p->trans = false;
    else if (basis_is(ll, LL_REG, 0, sl, 1))
        p->trans = true;
    else
        return false;
    if (!ldmatrix_lanes(ll, f, sl, s->eb, p->trans))
        return false;
    static const int ins[2] = {LL_REG, LL_WARP};
    for (int i = 0; i < 2; i++)
        for (int b = ins[i] == LL_REG ? p->word_bits : 0; b < ll->num_bits[ins[i]]; b++)
            if (ll->bases[ins[i]][b][sl] % 8 || ll->bases[ins[i]][b][f] % per_row)
                return false; /* not whole matrices */
    /* The (up to) two register bits that move the least choose the matrices. */
    p->sel_bits = 0;
    p->fixed = (1 << p->word_bits) - 1;
    for (int i = 0; i < 2; i++) {
        int best = -1;
        for (int b = p->word_bits; b < ll->num_bits[LL_REG]; b++)
            if (!(p->fixed >> b & 1) && (best < 0 || reach(ll, b) < reach(ll, best)))
                best = b;
        if (best < 0)
            break;
        p->sel[p->sel_bits++] = best;
        p->fixed |= 1 << best;
    }
    return true;
}

/* The register holding word j's first element in the instruction whose
 * other registers are r0. */
static int ldmatrix_reg(const Ldmatrix *p, int r0, int j) {
    for (int i = 0; i < p->sel_bits; i++)
        if (j >> i & 1)
            r0 |= 1 << p->sel[i];
    return r0;
}

/* A local_load in progress: registers are filled one ldmatrix at a time. */
struct CgDeferred {
    Swizzle s;
    const LinearLayout *ll;
    const IrType *elem;
    Ldmatrix p;
    ThreadOffset t;
    LLVMValueRef base;
    LLVMValueRef row;  /* base + the thread part in bytes, where the load stands; NULL: hoisted form */
    int64_t align;     /* base's known alignment in bytes */
    CgVal *val;        /* NULL where not loaded yet */
};

/* The most registers per thread that one loop of block b, or of a region in
 * it, carries (tg_value_regs of its results). */
static int64_t carried_regs(const Cg *cg, const IrBlock *b) {
    int64_t most = 0;
    for (const IrOp *op = b->first; op; op = op->next) {
        int64_t n = 0;
        for (int i = 0; (op->opc == IR_OP_FOR || op->opc == IR_OP_WHILE) && i < op->num_results; i++)
            n += tg_value_regs(op->results[i]->type, cg->num_warps);
        most = n > most ? n : most;
        for (int r = 0; r < op->num_regions; r++) {
            int64_t inner = carried_regs(cg, op->regions[r]);
            most = inner > most ? inner : most;
        }
    }
    return most;
}

/* The address of the ldmatrix whose register part is reg(r0). Its constant
 * offset o splits into the bits the thread part may also set (XORed) and the
 * others (added). With the XOR part below the buffer's alignment,
 * base + (t ^ x) = (base + t) ^ x: every ldmatrix of the load XORs the one
 * row address computed where the load stands. Inside a loop whose buffer
 * changes with the stage that keeps one live register per load, where the
 * form base + (t ^ x) computes every t ^ x once, in the entry block
 * (address()), and keeps them all live across the loop (one register per
 * ldmatrix of the loop).
 *
 * Which form: registers against instructions. The hoisted form costs no
 * instruction in the loop and pays where registers are short; the XOR form
 * costs one XOR per ldmatrix. Attention with head dim 64 (loops carrying
 * 66 registers per thread) is faster hoisted; causal attention with head
 * dim 128 (O alone is 128 registers) is faster with the XOR form
 * (bench/RESULTS.md has the measurements). The rule: the XOR form when the kernel's loops
 * carry more than CG_XOR_ADDRESS_REGS registers per thread. */
enum { CG_XOR_ADDRESS_REGS = 128 };

static bool xor_addresses(Cg *cg) {
    if (cg->loop_regs < 0)
        cg->loop_regs = (int)carried_regs(cg, cg->f->body);
    return cg->loop_regs > CG_XOR_ADDRESS_REGS;
}

static LLVMValueRef ldmatrix_address(Cg *cg, const CgDeferred *d, int r0, int64_t *imm) {
    int64_t c[IR_MAX_RANK];
    ll_apply_in(d->ll, LL_REG, r0, c);
    int64_t o = const_offset(&d->s, c), e = tc_log2i(d->s.eb);
    int64_t x = (o & d->t.bits) << e, a = (o & ~d->t.bits) << e;
    *imm = 0;
    if (!d->row || x >= d->align)
        return reg_address(cg, &d->s, d->t, d->ll, r0, d->base);
    LLVMValueRef v = d->row;
    if (x)
        v = LLVMBuildXor(cg->b, v, cg_i32(cg, x), "");
    *imm = a;
    return v;
}

/* One ldmatrix: the registers of ll whose word and selecting bits are 0 in
 * r0's place, plus the rest. Lane l addresses row l % 8 (along s) of matrix
 * l / 8: its part of the address is that of the layout `rows` (ldmatrix_rows),
 * t; the register part is reg(r0). */
static void emit_ldmatrix(Cg *cg, const CgDeferred *d, int r0, LLVMValueRef *out) {
    LLVMBuilderRef b = cg->b;
    const Ldmatrix *p = &d->p;
    const IrType *elem = d->elem;
    int num = 1 << p->sel_bits;
    int64_t imm;
    LLVMValueRef addr = cg_smem_ptr(cg, ldmatrix_address(cg, d, r0, &imm));
    if (imm) { /* the address operand [%r+imm] */
        LLVMValueRef c = cg_i32(cg, imm);
        addr = LLVMBuildInBoundsGEP2(b, cg->t_i8, addr, &c, 1, "");
    }
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", num, p->trans ? ".trans" : "");
    LLVMValueRef words = cg_warp_intrinsic(cg, name, &cg->t_sptr, 1, &addr, 1); /* overloaded on the pointer */
    for (int j = 0; j < num; j++) {
        LLVMValueRef w = num == 1 ? words : LLVMBuildExtractValue(b, words, (unsigned)j, "");
        int r = ldmatrix_reg(p, r0, j);
        if (!p->word_bits) {
            out[r] = LLVMBuildBitCast(b, w, cg_type(cg, elem), "");
            continue;
        }
        LLVMValueRef v = LLVMBuildBitCast(b, w, LLVMVectorType(cg_type(cg, elem), 2), "");
        out[r] = LLVMBuildExtractElement(b, v, cg_i32(cg, 0), "");
        out[r | 1] = LLVMBuildExtractElement(b, v, cg_i32(cg, 1), "");
    }
}

/* The thread part of ldmatrix row addresses as a layout: lanes 0-2 walk
 * the 8 rows of a matrix along s, lanes 3-4 the selecting register bases
 * (matrix l / 8), warps as in ll. */
static void ldmatrix_rows(const Swizzle *s, const LinearLayout *ll, const Ldmatrix *p, LinearLayout *rows) {
    *rows = *ll;
    memset(rows->bases[LL_LANE], 0, sizeof rows->bases[LL_LANE]);
    for (int k = 0; k < 3; k++)
        rows->bases[LL_LANE][k][s->order[1]] = 1 << k;
    for (int i = 0; i < p->sel_bits; i++)
        memcpy(rows->bases[LL_LANE][3 + i], ll->bases[LL_REG][p->sel[i]], sizeof rows->bases[LL_LANE][0]);
}

static CgDeferred *ldmatrix_begin(Cg *cg, const IrOp *op) {
    CgDeferred *d = ARENA_NEW(&cg->arena, CgDeferred);
    const IrType *rt = op->results[0]->type;
    d->ll = cg_ll(cg, rt, op);
    d->elem = rt->elem;
    if (!d->ll || swizzle_check(op->operands[0]->type, &d->s) || !ldmatrix_plan(&d->s, d->ll, d->elem, &d->p))
        return NULL;
    LinearLayout rows;
    ldmatrix_rows(&d->s, d->ll, &d->p, &rows);
    d->t = thread_offset(cg, &d->s, &rows);
    d->base = cg_get(cg, op->operands[0])->v[0];
    d->align = buffer_align(op->operands[0]);
    if (xor_addresses(cg)) {
        d->row = row_address(cg, &d->s, d->t, d->base);
    }
    d->val = cg_new_val(cg, ll_num_regs(d->ll), d->ll);
    return d;
}

void cg_deferred_need(Cg *cg, CgDeferred *d, int reg) {
    if (!d->val->v[reg])
        emit_ldmatrix(cg, d, reg & ~d->p.fixed, d->val->v);
}

CgVal *cg_deferred_val(CgDeferred *d) {
    return d->val;
}

/* A b32 word of two 16-bit registers, lo in the low half: one cvt where
 * both are rounded from f32. */
static LLVMValueRef pack_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi, const IrType *elem) {
    LLVMValueRef w = cg_convert_pair(cg, lo, hi);
    if (w)
        return w;
    LLVMValueRef v = LLVMGetUndef(LLVMVectorType(cg_type(cg, elem), 2));
    v = LLVMBuildInsertElement(cg->b, v, lo, cg_i32(cg, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, hi, cg_i32(cg, 1), "");
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* stmatrix.sync.aligned.m8n8.{x4,x2,x1}[.trans].shared.b16 (sm_90): the
 * mirror of ldmatrix, for the layouts ldmatrix_plan accepts with 16-bit
 * elements (the #mma accumulator of mma.sync and wgmma rounded to f16 or
 * bf16, stored into a buffer whose swizzle unit is at least 16 bytes):
 * each instruction writes up to four 8x8 matrices from one b32 register
 * per matrix, lane l giving the address of row l % 8 of matrix l / 8, so a
 * thread issues a quarter as many stores as 4-byte st.shared (LLVM 19 has
 * no intrinsic: inline asm). */
static bool store_stmatrix(Cg *cg, const Swizzle *s, const LinearLayout *ll, const IrType *elem, const CgVal *v,
                           const IrValue *buf, LLVMValueRef base) {
    CgDeferred d = {.s = *s, .ll = ll, .elem = elem, .base = base};
    if (cg->target->sm < 90 || s->eb != 2 || !ldmatrix_plan(s, ll, elem, &d.p) || !d.p.word_bits)
        return false;
    LinearLayout rows;
    ldmatrix_rows(s, ll, &d.p, &rows);
    d.t = thread_offset(cg, s, &rows);
    d.align = buffer_align(buf);
    d.row = row_address(cg, s, d.t, base); /* the XOR form where it holds (ldmatrix_address): no address
                                               register held across loops */
    int num = 1 << d.p.sel_bits;
    for (int r0 = 0; r0 < v->n; r0++) {
        if (r0 & d.p.fixed)
            continue;
        int64_t imm;
        LLVMValueRef args[5];
        args[0] = cg_smem_ptr(cg, ldmatrix_address(cg, &d, r0, &imm));
        for (int j = 0; j < num; j++) {
            int r = ldmatrix_reg(&d.p, r0, j);
            args[1 + j] = pack_pair(cg, v->v[r], v->v[r | 1], elem);
        }
        char text[160], off[32] = "", cons[64] = "r";
        if (imm) /* the address operand [$0+imm] */
            snprintf(off, sizeof off, "+%lld", (long long)imm);
        int n = snprintf(text, sizeof text, "stmatrix.sync.aligned.m8n8.x%d%s.shared.b16 [$0%s], {", num,
                         d.p.trans ? ".trans" : "", off);
        for (int j = 0; j < num; j++) {
            n += snprintf(text + n, sizeof text - (size_t)n, "%s$%d", j ? ", " : "", 1 + j);
            strcat(cons, ",r");
        }
        snprintf(text + n, sizeof text - (size_t)n, "};");
        strcat(cons, ",~{memory}");
        LLVMValueRef call = cg_asm(cg, cg->t_void, text, cons, args, 1 + num, true);
        /* .sync.aligned: every thread of the warp runs the same one (no copy into a thread-dependent path) */
        unsigned kind = LLVMGetEnumAttributeKindForName("convergent", 10);
        LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
    }
    return true;
}

static bool store_tile(Cg *cg, const IrOp *op, const IrValue *tile, const IrType *buf, LLVMValueRef base) {
    Swizzle s;
    const LinearLayout *ll = cg_ll(cg, tile->type, op);
    if (!ll || !swizzle_of(cg, op, buf, &s))
        return false;
    CgVal *v = cg_get(cg, tile);
    const IrValue *bufv = op->opc == IR_OP_LOCAL_STORE ? op->operands[1] : op->results[0];
    if (store_stmatrix(cg, &s, ll, buf->elem, v, bufv, base))
        return true;
    ThreadOffset t = thread_offset(cg, &s, ll);
    int g = vector_group(&s, ll, buf->elem);
    for (int r = 0; r < v->n; r += g)
        cg_smem_store_vec(cg, v->v + r, g, buf->elem, reg_address(cg, &s, t, ll, r, base));
    return true;
}

/* The byte range of the local_alloc a buffer value comes from (through
 * memdesc_trans and memdesc_index), false when unknown. */
static bool alloc_range(const IrValue *buf, int64_t *lo, int64_t *hi) {
    const IrOp *def = ir_view_buffer(buf)->def;
    if (def && def->opc == IR_OP_MEMDESC_INDEX)
        def = def->operands[0]->def;
    if (!def || def->opc != IR_OP_LOCAL_ALLOC)
        return false;
    const IrAttr *off = ir_op_attr(def, "offset");
    if (!off || off->kind != IR_ATTR_INT)
        return false;
    const IrType *t = def->results[0]->type;
    *lo = off->i;
    *hi = off->i + ir_type_size_bytes(t);
    return true;
}

/* May the reads of buffer `buf` move past op? Not when op may write it:
 * regions, scratch, and any op on shared memory (stores, copies, mbarriers,
 * TMA) but loads and views. */
static bool keeps_buffer(const IrOp *op, const IrValue *buf, int num_warps) {
    if (op->num_regions || tg_scratch_bytes(op, num_warps) > 0 ||
        (op->opc != IR_OP_LOCAL_LOAD && accesses_smem_operand(op)))
        return false;
    if (is_init_alloc(op)) {
        int64_t lo, hi, olo, ohi;
        if (!alloc_range(buf, &lo, &hi) || !alloc_range(op->results[0], &olo, &ohi))
            return false;
        return ohi <= lo || hi <= olo;
    }
    return true;
}

bool cg_local_load_deferred(Cg *cg, const IrOp *op) {
    if (op->opc != IR_OP_LOCAL_LOAD)
        return false;
    const IrValue *v = op->results[0];
    Swizzle s;
    LinearLayout ll;
    Ldmatrix p;
    if (swizzle_check(op->operands[0]->type, &s) || !ll_of_type(v->type, cg->num_warps, &ll, NULL) ||
        !ldmatrix_plan(&s, &ll, v->type->elem, &p))
        return false;
    if (ir_count_uses(cg->f->body, v) != 1)
        return false;
    for (const IrOp *o = op->next; o; o = o->next) {
        bool used = false;
        for (int i = 0; i < o->num_operands; i++)
            used |= o->operands[i] == v;
        if (used)
            return o->opc == IR_OP_DOT && (o->operands[0] == v || o->operands[1] == v) &&
                   tg_dot_uses_mma(o, cg->num_warps);
        if (!keeps_buffer(o, op->operands[0], cg->num_warps))
            return false;
    }
    return false; /* used in a nested region */
}

CgDeferred *cg_deferred_begin(Cg *cg, const IrOp *load) {
    CgDeferred *d = ldmatrix_begin(cg, load);
    if (!d)
        tc_unreachable("a deferred local_load that ldmatrix cannot serve");
    return d;
}

/* ---- local_load ---- */

static bool lower_load(Cg *cg, IrOp *op) {
    if (cg_local_load_deferred(cg, op))
        return true; /* the dot loads it (cg_deferred_begin) */
    const IrType *buf = op->operands[0]->type, *rt = op->results[0]->type;
    Swizzle s;
    const LinearLayout *ll = cg_ll(cg, rt, op);
    if (!ll || !swizzle_of(cg, op, buf, &s))
        return false;
    Ldmatrix p;
    CgVal *res;
    if (ldmatrix_plan(&s, ll, rt->elem, &p)) {
        CgDeferred *d = ldmatrix_begin(cg, op);
        for (int r = 0; r < d->val->n; r++)
            cg_deferred_need(cg, d, r);
        res = d->val;
    } else {
        LLVMValueRef base = cg_get(cg, op->operands[0])->v[0];
        res = cg_new_val(cg, ll_num_regs(ll), ll);
        ThreadOffset t = thread_offset(cg, &s, ll);
        int g = vector_group(&s, ll, rt->elem);
        for (int r = 0; r < res->n; r += g)
            cg_smem_load_vec(cg, res->v + r, g, rt->elem, reg_address(cg, &s, t, ll, r, base));
    }
    cg_set(cg, op->results[0], res);
    return true;
}

static bool lower_index(Cg *cg, IrOp *op) {
    const IrType *stage = op->results[0]->type;
    int64_t bytes = ir_type_size_bytes(stage);
    LLVMValueRef base = cg_get(cg, op->operands[0])->v[0];
    LLVMValueRef i = cg_get(cg, op->operands[1])->v[0];
    i = LLVMBuildIntCast2(cg->b, i, cg->t_i32, 1, "");
    LLVMValueRef off = LLVMBuildAdd(cg->b, base, LLVMBuildMul(cg->b, i, cg_i32(cg, bytes), ""), "");
    cg_set(cg, op->results[0], scalar(cg, off));
    return true;
}

/* Elements per cp.async group, or 0 when the op needs a synchronous copy. */
static int async_group(Cg *cg, const IrOp *op, const LinearLayout *ll, const Swizzle *s) {
    int v = cg_vec_width(op, ll, s->eb);
    if (v * s->eb < 4)
        return 0;
    if (op->num_operands > 3) {
        CgVal *o = cg_get(cg, op->operands[3]);
        for (int r = 0; r < o->n; r++)
            if (!LLVMIsAConstant(o->v[r]) || !LLVMIsNull(o->v[r]))
                return 0; /* cp.async zero-fills only */
    }
    /* Consecutive registers must run along the buffer's fastest dimension,
     * inside one swizzle unit (or unswizzled). */
    int dim = -1;
    for (int d = 0; d < ll->rank; d++)
        if (ll->num_bits[LL_REG] && ll->bases[LL_REG][0][d])
            dim = d;
    if (v > 1 && dim != s->order[0])
        return 0;
    if (s->rank >= 2 && s->max_phase > 1 && v > s->vec)
        return 0;
    return v;
}

static bool lower_async_copy(Cg *cg, IrOp *op) {
    const IrType *pt = op->operands[0]->type, *buf = op->operands[1]->type;
    const IrType *elem = buf->elem;
    Swizzle s;
    const LinearLayout *ll = cg_ll(cg, pt, op);
    if (!ll || !swizzle_of(cg, op, buf, &s))
        return false;
    CgVal *ptrs = cg_get(cg, op->operands[0]);
    LLVMValueRef base = cg_get(cg, op->operands[1])->v[0];
    CgVal *mask = op->num_operands > 2 ? cg_get(cg, op->operands[2]) : NULL;
    CgVal *other = op->num_operands > 3 ? cg_get(cg, op->operands[3]) : NULL;
    int v = async_group(cg, op, ll, &s);
    if (!v) {
        /* Synchronous: a predicated load (zero or `other` elsewhere), a shared store. */
        LLVMValueRef zero = LLVMConstNull(cg_type(cg, elem));
        ThreadOffset t = thread_offset(cg, &s, ll);
        LLVMValueRef *gp = ARENA_ARRAY(&cg->arena, LLVMValueRef, ptrs->n);
        cg_group_pointers(cg, op->operands[0], ll, 1, gp);
        for (int r = 0; r < ptrs->n; r++) {
            LLVMValueRef val =
                cg_load_element(cg, gp[r], elem, mask ? cg_reg(mask, r) : NULL, other ? cg_reg(other, r) : zero);
            cg_smem_store(cg, val, elem, reg_address(cg, &s, t, ll, r, base));
        }
        return true;
    }
    int bytes = v * s.eb;
    ThreadOffset t = thread_offset(cg, &s, ll);
    /* base + the thread part, once: a register whose constant offsets are the
     * instructions' immediates, so no offset of it is hoisted out of a loop
     * into a register of its own. */
    LLVMValueRef row = row_address(cg, &s, t, base);
    LLVMValueRef *gp = ARENA_ARRAY(&cg->arena, LLVMValueRef, ptrs->n);
    cg_group_pointers(cg, op->operands[0], ll, v, gp);
    for (int r = 0; r < ptrs->n; r += v) {
        int64_t c[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, r, c);
        int64_t o = const_offset(&s, c);
        LLVMValueRef dst;
        char text[128], off[32] = "";
        if (o & t.bits) {
            dst = cg_smem_ptr(cg, reg_address(cg, &s, t, ll, r, base));
        } else {
            dst = cg_smem_ptr(cg, row);
            if (o)
                snprintf(off, sizeof off, "+%lld", (long long)(o << tc_log2i(s.eb)));
        }
        snprintf(text, sizeof text, "cp.async.%s.shared.global [$0%s], [$1], %d, $2;", bytes == 16 ? "cg" : "ca", off,
                 bytes);
        LLVMValueRef src_size = cg_i32(cg, bytes);
        if (mask)
            src_size = LLVMBuildSelect(cg->b, cg_reg(mask, r), src_size, cg_i32(cg, 0), "");
        LLVMValueRef args[3] = {dst, gp[r], src_size};
        cg_asm(cg, cg->t_void, text, "r,l,r", args, 3, true);
    }
    return true;
}

bool cg_lower_shared(Cg *cg, IrOp *op) {
    switch (op->opc) {
    case IR_OP_LOCAL_ALLOC: return lower_alloc(cg, op);
    case IR_OP_MEMDESC_INDEX: return lower_index(cg, op);
    case IR_OP_MEMDESC_TRANS: /* a view: the same offset, read through the result's layout */
        cg_set(cg, op->results[0], scalar(cg, cg_get(cg, op->operands[0])->v[0]));
        return true;
    case IR_OP_LOCAL_LOAD: return lower_load(cg, op);
    case IR_OP_LOCAL_STORE: {
        LLVMValueRef base = cg_get(cg, op->operands[1])->v[0];
        return store_tile(cg, op, op->operands[0], op->operands[1]->type, base);
    }
    case IR_OP_ASYNC_COPY: return lower_async_copy(cg, op);
    case IR_OP_ASYNC_COMMIT: cg_asm(cg, cg->t_void, "cp.async.commit_group;", "", NULL, 0, true); return true;
    case IR_OP_ASYNC_WAIT: {
        char text[64];
        int64_t n = ir_op_get_int(op, "num", 0);
        if (n < 0 || n > 255)
            return cg_error(cg, op, "async_wait num must be 0..255, got %lld", (long long)n);
        snprintf(text, sizeof text, "cp.async.wait_group %lld;", (long long)n);
        cg_asm(cg, cg->t_void, text, "", NULL, 0, true);
        return true;
    }
    default: tc_unreachable("not a shared-memory op");
    }
}
