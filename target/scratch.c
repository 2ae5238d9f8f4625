/*
 * scratch.c — how much scratch shared memory each op needs, and where in
 * that scratch each element goes.
 *
 * Scratch is shared memory an op uses only while it executes: partial sums
 * of a reduction that crosses warps, a layout conversion that moves elements
 * between threads, the operands of an FMA dot, old values of an atomic that
 * must reach the threads holding copies. allocate-shared places every op's
 * scratch (scratch_offset) and the kernel's total (shared_size); the lowering
 * (lower_*.c) writes and reads it with exactly the layouts computed here, so
 * the two can never disagree: both call these functions.
 *
 * Every scratch user brackets its use with barriers (before writing, between
 * writing and reading), so the scratch of one op is dead once the next op
 * that uses scratch reaches its first barrier. A cross-warp reduction leaves
 * out the first barrier only when every earlier access of its bytes is
 * already behind one (codegen/lower_shared.c, cg_reduce_scratch_fenced: the
 * offsets decide), so offset 0 for every op is still a correct allocation,
 * with every barrier, and what tg_kernel_shared_bytes assumes when the IR
 * carries no offsets.
 *
 * Padding (tg_scratch_padding): a tile is stored row-major with `pad` bytes
 * (4, or the element size if larger) after every `interval` bytes, where
 * interval is one row of the tile's last dimension, at least 128 bytes (the
 * 32 banks of 4 bytes). Worked example: a 64x64 f32 tile; row = 256 bytes,
 * so interval = 256, pad = 4. Element (r, c) lives at byte 4c + 260r. A warp
 * whose 32 lanes read column c of rows 0..31 hits banks (c + 65r) % 32 =
 * (c + r) % 32: 32 distinct banks, where unpadded storage (c + 64r) % 32 = c
 * puts all 32 reads in one bank. A warp reading 32 consecutive elements of a
 * row is unaffected (one pad at most falls between them).
 */
#include "target.h"

#include <stdlib.h>
#include <string.h>

static int64_t round16(int64_t v);

int64_t tg_reduce_index_offset(int64_t partials, int value_bytes) {
    return round16(partials * value_bytes);
}

static int64_t round16(int64_t v) {
    return (v + 15) & ~(int64_t)15;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

TgPadding tg_scratch_padding(int64_t row_bytes, int elem_bytes) {
    TgPadding p;
    p.interval = 128;
    while (p.interval < row_bytes)
        p.interval *= 2;
    p.pad = elem_bytes > 4 ? elem_bytes : 4;
    return p;
}

int64_t tg_padded_offset(TgPadding p, int64_t offset) {
    return offset + offset / p.interval * p.pad;
}

/* Bytes of a padded row-major tile of `bytes` with rows of `row_bytes`. */
static int64_t padded_size(int64_t bytes, int64_t row_bytes, int elem_bytes) {
    TgPadding p = tg_scratch_padding(row_bytes, elem_bytes);
    return round16(tg_padded_offset(p, bytes));
}

/* Row bytes used to pad a tile of this type: its last dimension (rank >= 2),
 * or 128 bytes for 1-D tiles (rows of 32 banks). */
static int64_t row_bytes_of(const IrType *t) {
    int eb = ir_type_bytes(t->elem);
    return t->rank >= 2 ? t->shape[t->rank - 1] * eb : 128;
}

TgPadding tg_tile_padding(const IrType *t) {
    return tg_scratch_padding(row_bytes_of(t), ir_type_bytes(t->elem));
}

/* A 1-D row-major view of ll (coordinates linearized). With power-of-two
 * dimensions each coordinate owns its own bit field of the linear index, so
 * linearizing keeps the map linear. */
static void linearize(const LinearLayout *ll, LinearLayout *out) {
    memset(out, 0, sizeof *out);
    out->rank = 1;
    int64_t n = 1;
    for (int d = 0; d < ll->rank; d++)
        n *= ll->shape[d];
    out->shape[0] = n;
    for (int in = 0; in < LL_NUM_IN; in++) {
        out->num_bits[in] = ll->num_bits[in];
        for (int b = 0; b < ll->num_bits[in]; b++) {
            int64_t lin = 0;
            for (int d = 0; d < ll->rank; d++)
                lin = lin * ll->shape[d] + ll->bases[in][b][d];
            out->bases[in][b][0] = (int32_t)lin;
        }
    }
}

void tg_shape_op_views(const IrOp *op, const LinearLayout *from, const LinearLayout *to, LinearLayout *view,
                       LinearLayout *to_view, bool *keep) {
    *to_view = *to;
    for (int d = 0; d < IR_MAX_RANK; d++)
        keep[d] = true;
    switch (op->opc) {
    case IR_OP_EXPAND_DIMS: {
        int axis = (int)ir_op_get_int(op, "axis", 0);
        memset(view, 0, sizeof *view);
        view->rank = from->rank + 1;
        for (int d = 0, s = 0; d < view->rank; d++)
            view->shape[d] = d == axis ? 1 : from->shape[s++];
        for (int in = 0; in < LL_NUM_IN; in++) {
            view->num_bits[in] = from->num_bits[in];
            for (int b = 0; b < from->num_bits[in]; b++)
                for (int d = 0, s = 0; d < view->rank; d++)
                    view->bases[in][b][d] = d == axis ? 0 : from->bases[in][b][s++];
        }
        break;
    }
    case IR_OP_TRANS: {
        const IrAttr *perm = ir_op_attr(op, "perm");
        *view = *from;
        for (int i = 0; i < from->rank; i++) {
            int p = perm && perm->kind == IR_ATTR_INTS && i < perm->list.n ? (int)perm->list.v[i] : i;
            view->shape[i] = from->shape[p];
            for (int in = 0; in < LL_NUM_IN; in++)
                for (int b = 0; b < from->num_bits[in]; b++)
                    view->bases[in][b][i] = from->bases[in][b][p];
        }
        break;
    }
    case IR_OP_RESHAPE:
        linearize(from, view);
        linearize(to, to_view);
        break;
    case IR_OP_BROADCAST:
        *view = *from;
        for (int d = 0; d < from->rank; d++)
            keep[d] = !(from->shape[d] == 1 && to->shape[d] > 1);
        break;
    default: /* convert_layout */ *view = *from; break;
    }
}

/* True when the result of a shape op is a register permutation (the
 * elements each thread needs are already in its registers). */
static bool shape_op_in_thread(const IrOp *op, const LinearLayout *from, const LinearLayout *to) {
    LinearLayout view, to_view;
    bool keep[IR_MAX_RANK];
    tg_shape_op_views(op, from, to, &view, &to_view, keep);
    int *map = malloc(sizeof(int) * (size_t)ll_num_regs(&to_view));
    if (!map)
        tc_oom();
    bool ok = ll_same_thread_map(&view, &to_view, keep, map);
    free(map);
    return ok;
}

/* Where each operand coordinate (in `from`'s shape) comes from: result
 * coordinate src[d], or 0 where src[d] is -1 (broadcast dimensions). Reshape
 * is handled by its callers (row-major order is what it keeps). */
void tg_operand_dims(const IrOp *op, const LinearLayout *from, const LinearLayout *to, int *src) {
    switch (op->opc) {
    case IR_OP_BROADCAST:
        for (int d = 0; d < from->rank; d++)
            src[d] = from->shape[d] == 1 ? -1 : d;
        break;
    case IR_OP_EXPAND_DIMS: {
        int axis = (int)ir_op_get_int(op, "axis", 0);
        for (int d = 0, s = 0; d < to->rank; d++)
            if (d != axis)
                src[s++] = d;
        break;
    }
    case IR_OP_TRANS: {
        const IrAttr *perm = ir_op_attr(op, "perm");
        for (int i = 0; i < to->rank; i++)
            src[perm->list.v[i]] = i;
        break;
    }
    default: /* convert_layout */
        for (int d = 0; d < from->rank; d++)
            src[d] = d;
        break;
    }
}

/* Row-major linear index of constant coordinates c in `shape`. */
static int64_t const_linear(int rank, const int64_t *shape, const int64_t *c) {
    int64_t lin = 0;
    for (int d = 0; d < rank; d++)
        lin = lin * shape[d] + c[d];
    return lin;
}

/* Byte offsets of ll's bases, mapped to operand coordinates by op when
 * `result` (the load side), in the operand's padded row-major scratch. */
bool tg_scratch_sum(const IrOp *op, const LinearLayout *from, const LinearLayout *ll, bool result, int eb,
                    TgPadding pad, int num_regs, const IrType *elem, TgScratchSum *out) {
    memset(out, 0, sizeof *out);
    int src[IR_MAX_RANK];
    if (result)
        tg_operand_dims(op, from, ll, src);
    else
        for (int d = 0; d < from->rank; d++)
            src[d] = d;
    int64_t seen = 0;
    for (int in = 0; in < LL_NUM_IN; in++)
        for (int k = 0; k < ll->num_bits[in]; k++) {
            int64_t c[IR_MAX_RANK], oc[IR_MAX_RANK], lin;
            for (int d = 0; d < ll->rank; d++)
                c[d] = ll->bases[in][k][d];
            if (result && op->opc == IR_OP_RESHAPE) {
                lin = const_linear(ll->rank, ll->shape, c);
            } else {
                for (int d = 0; d < from->rank; d++)
                    oc[d] = src[d] < 0 ? 0 : c[src[d]];
                lin = const_linear(from->rank, from->shape, oc);
            }
            int64_t bytes = lin * eb;
            if (bytes & seen)
                return false;
            seen |= bytes;
            int64_t padded = tg_padded_offset(pad, bytes);
            if (in == LL_REG)
                out->reg[k] = padded;
            else
                out->thread[in - LL_LANE][k] = padded;
        }
    /* registers per access: bases 0 .. j-1 step one element each, and every
     * other offset (so every access's start) a multiple of the access */
    int g = 1;
    if (elem->kind != IR_I1 && elem->kind != IR_PTR) {
        while (g < num_regs && 2 * g * eb <= 16) {
            int k = 0;
            while ((1 << k) < g)
                k++;
            if (out->reg[k] != (int64_t)g * eb)
                break;
            int64_t a = 2 * (int64_t)g * eb;
            bool ok = true;
            for (int b = k + 1; b < ll->num_bits[LL_REG]; b++)
                ok &= out->reg[b] % a == 0;
            for (int in = 0; in < 2; in++)
                for (int b = 0; b < LL_MAX_BITS; b++)
                    ok &= out->thread[in][b] % a == 0;
            if (!ok)
                break;
            g *= 2;
        }
    }
    out->group = g;
    return true;
}

/*
 * Choosing the exchange's padding. The tile's pad (4 bytes, or the element
 * size) after every row keeps column walks free of bank conflicts, but it
 * also breaks the 16-byte alignment of rows, so a side that could move 16
 * bytes per thread moves 4. A pad of 8 or 16 bytes keeps rows aligned. For
 * each pad, each side's cost is its accesses (registers / group) times the
 * wavefronts of one warp access: shared memory serves 128 bytes per
 * wavefront, the lanes of a 16-byte access in four phases of 8 (8 bytes: two
 * of 16, else one of 32), and a phase takes as many wavefronts as the most
 * distinct 4-byte words that fall in one bank. The cheapest pad wins; a tie
 * keeps the smallest. Worked example (attention's output, a 128x128 f16 tile
 * from the mma accumulator layout to rows of 16-byte vectors): pad 4 stores
 * 4 bytes per lane in one wavefront (64 accesses) but loads 4 bytes per lane
 * with two lanes per bank (64 accesses of 2 wavefronts); pad 16 stores the
 * same way and loads 16 bytes per lane in 4 wavefronts (16 accesses): 192
 * against 128.
 */
static int64_t lane_offset(const TgScratchSum *s, int lane) {
    int64_t o = 0;
    for (int k = 0; k < 5; k++)
        if ((lane >> k) & 1)
            o += s->thread[0][k];
    return o;
}

static int64_t warp_wavefronts(const TgScratchSum *s, int bytes) {
    int per_phase = bytes >= 16 ? 8 : bytes == 8 ? 16 : 32;
    int words = bytes >= 4 ? bytes / 4 : 1;
    int64_t total = 0;
    for (int p0 = 0; p0 < 32; p0 += per_phase) {
        int64_t seen[32 * 4];
        int n = 0, per_bank[32] = {0}, most = 0;
        for (int lane = p0; lane < p0 + per_phase; lane++)
            for (int w = 0; w < words; w++) {
                int64_t word = lane_offset(s, lane) / 4 + w;
                bool dup = false;
                for (int i = 0; i < n && !dup; i++)
                    dup = seen[i] == word;
                if (dup)
                    continue;
                seen[n++] = word;
                int bank = (int)(word % 32);
                if (++per_bank[bank] > most)
                    most = per_bank[bank];
            }
        total += most;
    }
    return total;
}

static int64_t side_cost(const TgScratchSum *s, int eb, int num_regs) {
    return warp_wavefronts(s, s->group * eb) * ((num_regs + s->group - 1) / s->group);
}

TgPadding tg_exchange_padding(const IrOp *op, const LinearLayout *from, const LinearLayout *to) {
    const IrType *st = op->operands[0]->type;
    int eb = ir_type_bytes(st->elem);
    TgPadding tile = tg_tile_padding(st), best = tile;
    int64_t best_cost = -1;
    const int64_t pads[] = {tile.pad, 8, 16};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && pads[i] <= tile.pad)
            continue;
        TgPadding p = tile;
        p.pad = pads[i];
        TgScratchSum ss, ls;
        if (!tg_scratch_sum(op, from, from, false, eb, p, ll_num_regs(from), st->elem, &ss) ||
            !tg_scratch_sum(op, from, to, true, eb, p, ll_num_regs(to), st->elem, &ls))
            return tile;
        int64_t cost = side_cost(&ss, eb, ll_num_regs(from)) + side_cost(&ls, eb, ll_num_regs(to));
        if (best_cost < 0 || cost < best_cost) {
            best = p;
            best_cost = cost;
        }
    }
    return best;
}

static bool ll_of(const IrType *t, int num_warps, LinearLayout *ll) {
    return t && t->kind == IR_TILE && t->layout && ll_of_type(t, num_warps, ll, NULL);
}

int64_t tg_value_regs(const IrType *t, int num_warps) {
    if (t->kind != IR_TILE)
        return 1;
    int64_t words = (ir_type_numel(t) * ir_type_bits(t->elem) + 31) / 32, threads = 32 * (int64_t)num_warps;
    return (words + threads - 1) / threads;
}

bool tg_scan_plan(const LinearLayout *ll, int axis, int num_warps, int elem_bytes, TgScanPlan *out,
                  const char **why) {
    memset(out, 0, sizeof *out);
    for (int j = 0; j < TG_MAX_SCAN_STEPS; j++)
        out->in[j] = -1;
    out->steps = tc_log2i(ll->shape[axis]);
    for (int in = 0; in < LL_NUM_IN; in++)
        for (int b = 0; b < ll->num_bits[in]; b++) {
            int64_t c = ll->bases[in][b][axis];
            if (!c)
                continue;
            for (int d = 0; d < ll->rank; d++)
                if (d != axis && ll->bases[in][b][d]) {
                    *why = "a basis moves the axis and another dimension at once";
                    return false;
                }
            int j = tc_is_pow2(c) ? tc_log2i(c) : -1;
            if (j < 0 || j >= out->steps || out->in[j] >= 0) {
                *why = "a basis moves more than one bit of the axis, or one another basis moves";
                return false;
            }
            out->in[j] = in;
            out->bit[j] = b;
        }
    int done = 0; /* register bits of the axis done before the step */
    for (int j = 0; j < out->steps; j++) {
        if (out->in[j] < 0) {
            *why = "no basis moves some bit of the axis";
            return false;
        }
        if (out->in[j] == LL_REG)
            done++;
        else if (out->in[j] == LL_WARP && !out->warp_slots)
            out->warp_slots = ll_num_regs(ll) >> done;
    }
    int cap = TG_SCAN_SCRATCH_BYTES / (32 * num_warps * elem_bytes);
    if (out->warp_slots > cap)
        out->warp_slots = cap > 1 ? cap : 1;
    return true;
}

int64_t tg_scratch_bytes(const IrOp *op, int num_warps) {
    LinearLayout a, b;
    switch (op->opc) {
    case IR_OP_CLUSTER_REDUCE: /* the program's value, read by the cluster's others */
        return ir_op_get_int(op, "ctas", 1) > 1 ? 16 : 0;
    case IR_OP_REDUCE: {
        const IrType *t = op->operands[0]->type;
        if (!ll_of(t, num_warps, &a))
            return 0;
        int axis = (int)ir_op_get_int(op, "axis", 0);
        int along = 0;
        for (int k = 0; k < a.num_bits[LL_WARP]; k++)
            along += a.bases[LL_WARP][k][axis] != 0;
        if (!along)
            return 0;
        int64_t partials = ((int64_t)1 << along) * (ir_type_numel(t) / t->shape[axis]);
        int64_t values = tg_reduce_index_offset(partials, ir_type_bytes(t->elem));
        return ir_reduce_is_arg(op) ? values + round16(partials * 4) : values;
    }
    case IR_OP_SCAN: {
        const IrType *t = op->operands[0]->type;
        TgScanPlan plan;
        const char *why;
        int64_t axis = ir_op_get_int(op, "axis", 0);
        if (!ll_of(t, num_warps, &a) || axis < 0 || axis >= a.rank ||
            !tg_scan_plan(&a, (int)axis, num_warps, ir_type_bytes(t->elem), &plan, &why))
            return 0;
        return round16((int64_t)plan.warp_slots * 32 * num_warps * ir_type_bytes(t->elem));
    }
    case IR_OP_CONVERT_LAYOUT:
    case IR_OP_BROADCAST:
    case IR_OP_EXPAND_DIMS:
    case IR_OP_RESHAPE:
    case IR_OP_TRANS: {
        const IrType *s = op->operands[0]->type, *r = op->results[0]->type;
        if (!ll_of(s, num_warps, &a) || !ll_of(r, num_warps, &b))
            return 0;
        if (shape_op_in_thread(op, &a, &b))
            return 0;
        int eb = ir_type_bytes(s->elem);
        return round16(tg_padded_offset(tg_exchange_padding(op, &a, &b), ir_type_numel(s) * eb));
    }
    case IR_OP_DOT: {
        const IrType *ta = op->operands[0]->type, *tb = op->operands[1]->type;
        if (ta->kind != IR_TILE || tb->kind != IR_TILE || ta->rank != 2 || tb->rank != 2)
            return 0;
        if (tg_dot_uses_mma(op, num_warps))
            return 0;
        int64_t M = ta->shape[0], K = ta->shape[1], N = tb->shape[1];
        int ea = ir_type_bytes(ta->elem), eb = ir_type_bytes(tb->elem);
        return padded_size(K * M * ea, M * ea, ea) + padded_size(K * N * eb, N * eb, eb);
    }
    case IR_OP_ATOMIC: {
        const IrType *p = op->operands[0]->type;
        const IrType *e = ir_type_elem(p)->elem;
        if (!e)
            return 0;
        if (p->kind != IR_TILE)
            return round16(ir_type_bytes(e));
        if (!ll_of(p, num_warps, &a))
            return 0;
        if (!ll_broadcast_mask(&a, LL_LANE) && !ll_broadcast_mask(&a, LL_WARP))
            return 0;
        return round16(ir_type_numel(p) * ir_type_bytes(e));
    }
    default: return 0;
    }
}

int64_t tg_largest_scratch(const IrOp *op, int num_warps) {
    int64_t m = tg_scratch_bytes(op, num_warps);
    for (int r = 0; r < op->num_regions; r++)
        for (const IrOp *o = op->regions[r]->first; o; o = o->next)
            m = max64(m, tg_largest_scratch(o, num_warps));
    return m;
}

typedef struct {
    int num_warps;
    int64_t max;
} SharedWalk;

static void shared_walk(IrOp *op, void *ctx) {
    SharedWalk *w = ctx;
    int64_t bytes = tg_scratch_bytes(op, w->num_warps);
    if (bytes > 0)
        w->max = max64(w->max, ir_op_get_int(op, "scratch_offset", 0) + bytes);
}

int tg_kernel_num_warps(const IrFunc *f, int dflt) {
    int64_t n = ir_func_get_int(f, "num_warps", dflt > 0 ? dflt : TC_DEFAULT_NUM_WARPS);
    return n > 0 && n <= 32 ? (int)n : 4;
}

int tg_kernel_launch_warps(const IrFunc *f, int dflt) {
    return tg_kernel_num_warps(f, dflt) + (int)ir_func_get_int(f, "producer_warps", 0);
}

int64_t tg_kernel_shared_bytes(const IrFunc *f, int num_warps) {
    SharedWalk w = {num_warps, ir_func_get_int(f, "shared_size", 0)};
    ir_walk_func((IrFunc *)f, shared_walk, &w);
    return w.max;
}
