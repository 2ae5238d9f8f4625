/*
 * lower_shared.c — shared-memory buffers: local_alloc, memdesc_index,
 * local_store, local_load, async_copy, async_commit, async_wait.
 *
 * A buffer (an smem value) is lowered to one uniform i32: its byte offset in
 * the dynamic shared memory. local_alloc takes the `offset` allocate-shared
 * gave it; memdesc_index adds stage * (bytes of one stage).
 *
 * Elements sit where the buffer's #shared<vec, per_phase, max_phase, order>
 * layout puts them (docs/ir.md): dimensions stored row-major in `order`
 * (order[0] fastest); along the fastest dimension, 16-byte units of `vec`
 * elements are permuted per row: unit u of row r is stored at unit
 * u ^ ((r / per_phase) % max_phase), r being the coordinate along order[1].
 * max_phase is clamped to the units per row, so the XOR stays in the row. A
 * 1-D buffer is not swizzled. Worked example: smem<64x64xf16, #shared<vec = 8,
 * per_phase = 1, max_phase = 8, order = [1, 0]>>: element (3, 20) is in unit
 * 20 / 8 = 2 of row 3, stored at unit 2 ^ 3 = 1: byte (3 * 64 + 8 + 4) * 2.
 *
 * local_store and local_load move every register of the tile to or from its
 * element's address (copies store identical values, harmless). They add no
 * barriers: ordering between threads is the IR's `barrier` ops.
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

static bool is_pow2(int64_t v) {
    return v > 0 && (v & (v - 1)) == 0;
}

static int log2i(int64_t v) {
    int n = 0;
    while (((int64_t)1 << n) < v)
        n++;
    return n;
}

static CgVal *scalar(Cg *cg, LLVMValueRef v) {
    CgVal *r = cg_new_val(cg, 1, NULL);
    r->v[0] = v;
    return r;
}

/* The #shared layout's parameters for buffer type t, validated. */
typedef struct {
    int rank;
    int64_t shape[IR_MAX_RANK];
    int order[IR_MAX_RANK];
    int vec, per_phase, max_phase; /* max_phase clamped to the units per row */
    int eb;
} Swizzle;

static bool swizzle_of(Cg *cg, const IrOp *op, const IrType *t, Swizzle *s) {
    const Layout *l = t->layout;
    if (!l || l->kind != LAYOUT_SHARED || l->rank != t->rank)
        return cg_error(cg, op, "internal error: shared memory without a #shared layout of its rank");
    s->rank = t->rank;
    s->eb = cg_elem_bytes(t->elem);
    for (int d = 0; d < t->rank; d++) {
        s->shape[d] = t->shape[d];
        s->order[d] = l->shared.order[d];
        if (!is_pow2(t->shape[d]))
            return cg_error(cg, op, "internal error: shared-memory dimensions must be powers of two");
    }
    s->vec = l->shared.vec, s->per_phase = l->shared.per_phase, s->max_phase = l->shared.max_phase;
    if (!is_pow2(s->vec) || !is_pow2(s->per_phase) || !is_pow2(s->max_phase))
        return cg_error(cg, op, "internal error: #shared vec, per_phase and max_phase must be powers of two");
    int64_t units = t->rank >= 2 ? s->shape[s->order[0]] / s->vec : 1;
    if (units < 1)
        units = 1;
    if (s->max_phase > units)
        s->max_phase = (int)units;
    return true;
}

/* Byte offset (i32, relative to the buffer) of the element at coordinates c. */
static LLVMValueRef element_offset(Cg *cg, const Swizzle *s, LLVMValueRef *c) {
    LLVMBuilderRef b = cg->b;
    if (s->rank == 1)
        return LLVMBuildShl(b, c[0], cg_i32(cg, log2i(s->eb)), "");
    int fast = s->order[0], slow = s->order[1];
    LLVMValueRef col = c[fast];
    if (s->max_phase > 1) {
        LLVMValueRef phase = LLVMBuildLShr(b, c[slow], cg_i32(cg, log2i(s->per_phase)), "");
        phase = LLVMBuildAnd(b, phase, cg_i32(cg, s->max_phase - 1), "");
        /* (unit ^ phase) * vec + col % vec == col ^ (phase * vec) */
        col = LLVMBuildXor(b, col, LLVMBuildShl(b, phase, cg_i32(cg, log2i(s->vec)), ""), "");
    }
    LLVMValueRef lin = NULL;
    for (int i = s->rank - 1; i >= 0; i--) { /* slowest first */
        int d = s->order[i];
        LLVMValueRef v = d == fast ? col : c[d];
        lin = lin ? LLVMBuildAdd(b, LLVMBuildShl(b, lin, cg_i32(cg, log2i(s->shape[d])), ""), v, "") : v;
    }
    return LLVMBuildShl(b, lin, cg_i32(cg, log2i(s->eb)), "");
}

/* Absolute byte offset of register r of a tile with layout ll in buffer `base`. */
static LLVMValueRef reg_offset(Cg *cg, const Swizzle *s, const LinearLayout *ll, int r, LLVMValueRef base) {
    LLVMValueRef c[IR_MAX_RANK];
    for (int d = 0; d < ll->rank; d++)
        c[d] = cg_coord(cg, ll, r, d);
    return LLVMBuildAdd(cg->b, base, element_offset(cg, s, c), "");
}

static bool store_tile(Cg *cg, const IrOp *op, const IrValue *tile, const IrType *buf, LLVMValueRef base) {
    Swizzle s;
    const LinearLayout *ll = cg_ll(cg, tile->type, op);
    if (!ll || !swizzle_of(cg, op, buf, &s))
        return false;
    CgVal *v = cg_get(cg, tile);
    for (int r = 0; r < v->n; r++)
        cg_smem_store(cg, v->v[r], buf->elem, reg_offset(cg, &s, ll, r, base));
    return true;
}

static bool lower_alloc(Cg *cg, IrOp *op) {
    const IrAttr *off = ir_op_attr(op, "offset");
    if (!off || off->kind != IR_ATTR_INT)
        return cg_error(cg, op, "internal error: local_alloc has no offset (run allocate-shared)");
    LLVMValueRef base = cg_i32(cg, off->i);
    if (op->num_operands == 1 && !store_tile(cg, op, op->operands[0], op->results[0]->type, base))
        return false;
    cg_set(cg, op->results[0], scalar(cg, base));
    return true;
}

static bool lower_index(Cg *cg, IrOp *op) {
    const IrType *stage = op->results[0]->type;
    int64_t bytes = ir_type_numel(stage) * cg_elem_bytes(stage->elem);
    LLVMValueRef base = cg_get(cg, op->operands[0])->v[0];
    LLVMValueRef i = cg_get(cg, op->operands[1])->v[0];
    i = LLVMBuildIntCast2(cg->b, i, cg->t_i32, 1, "");
    LLVMValueRef off = LLVMBuildAdd(cg->b, base, LLVMBuildMul(cg->b, i, cg_i32(cg, bytes), ""), "");
    cg_set(cg, op->results[0], scalar(cg, off));
    return true;
}

static bool lower_load(Cg *cg, IrOp *op) {
    const IrType *buf = op->operands[0]->type, *rt = op->results[0]->type;
    Swizzle s;
    const LinearLayout *ll = cg_ll(cg, rt, op);
    if (!ll || !swizzle_of(cg, op, buf, &s))
        return false;
    LLVMValueRef base = cg_get(cg, op->operands[0])->v[0];
    CgVal *res = cg_new_val(cg, ll_num_regs(ll), ll);
    for (int r = 0; r < res->n; r++)
        res->v[r] = cg_smem_load(cg, rt->elem, reg_offset(cg, &s, ll, r, base));
    cg_set(cg, op->results[0], res);
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
        for (int r = 0; r < ptrs->n; r++) {
            LLVMValueRef val =
                cg_load_element(cg, ptrs->v[r], elem, mask ? cg_reg(mask, r) : NULL, other ? cg_reg(other, r) : zero);
            cg_smem_store(cg, val, elem, reg_offset(cg, &s, ll, r, base));
        }
        return true;
    }
    int bytes = v * s.eb;
    char text[128];
    snprintf(text, sizeof text, "cp.async.%s.shared.global [$0], [$1], %d, $2;", bytes == 16 ? "cg" : "ca", bytes);
    for (int r = 0; r < ptrs->n; r += v) {
        LLVMValueRef dst = cg_smem_ptr(cg, reg_offset(cg, &s, ll, r, base));
        LLVMValueRef src_size = cg_i32(cg, bytes);
        if (mask)
            src_size = LLVMBuildSelect(cg->b, cg_reg(mask, r), src_size, cg_i32(cg, 0), "");
        LLVMValueRef args[3] = {dst, ptrs->v[r], src_size};
        cg_asm(cg, cg->t_void, text, "r,l,r", args, 3, true);
    }
    return true;
}

bool cg_lower_shared(Cg *cg, IrOp *op) {
    switch (op->opc) {
    case IR_OP_LOCAL_ALLOC: return lower_alloc(cg, op);
    case IR_OP_MEMDESC_INDEX: return lower_index(cg, op);
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
