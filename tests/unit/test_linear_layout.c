/*
 * test_linear_layout.c — every layout's index map, checked exhaustively on
 * small shapes: each element of the tile is held by exactly the (register,
 * lane, warp) triples the layout's definition says, and by no other.
 */
#include "ir/ir.h"
#include "unit.h"

#include <stdlib.h>

static const Layout *blocked(IrModule *m, int rank, const int *spt, const int *tpw, const int *wpc,
                             const int *order) {
    Layout l = {.kind = LAYOUT_BLOCKED, .rank = rank};
    for (int d = 0; d < rank; d++) {
        l.blocked.spt[d] = spt[d];
        l.blocked.tpw[d] = tpw[d];
        l.blocked.wpc[d] = wpc[d];
        l.blocked.order[d] = order[d];
    }
    return ir_layout_intern(m, &l);
}

/* Counts owners of every element; checks the count is `expect` for all. */
static void check_cover(const LinearLayout *ll, int num_warps, int expect) {
    int64_t n = ll->shape[0] * (ll->rank > 1 ? ll->shape[1] : 1);
    int *count = calloc((size_t)n, sizeof *count);
    for (int w = 0; w < num_warps; w++)
        for (int l = 0; l < 32; l++)
            for (int r = 0; r < ll_num_regs(ll); r++) {
                int64_t c[IR_MAX_RANK];
                ll_apply(ll, r, l, w, c);
                int64_t idx = ll->rank > 1 ? c[0] * ll->shape[1] + c[1] : c[0];
                CHECK(idx >= 0 && idx < n);
                if (idx >= 0 && idx < n)
                    count[idx]++;
            }
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += count[i] != expect;
    CHECK_EQ_INT(bad, 0);
    free(count);
}

TEST(blocked_worked_example) {
    IrModule *m = ir_module_create();
    const Layout *l = blocked(m, 2, (int[]){1, 4}, (int[]){2, 16}, (int[]){4, 1}, (int[]){1, 0});
    LinearLayout ll;
    const char *why = NULL;
    CHECK(ll_from_layout(l, 2, (int64_t[]){64, 64}, 4, &ll, &why));
    Buf b;
    buf_init(&b);
    ll_print(&b, &ll);
    CHECK_EQ_STR(b.data, "reg: [(0, 1), (0, 2), (8, 0), (16, 0), (32, 0)]; "
                         "lane: [(0, 4), (0, 8), (0, 16), (0, 32), (1, 0)]; warp: [(2, 0), (4, 0)]");
    buf_free(&b);
    int64_t c[IR_MAX_RANK];
    ll_apply(&ll, 5, 17, 2, c);
    CHECK_EQ_INT(c[0], 13);
    CHECK_EQ_INT(c[1], 5);
    check_cover(&ll, 4, 1);
    ir_module_destroy(m);
}

/* A blocked layout larger than the tile: lanes and warps hold copies. */
TEST(blocked_broadcast) {
    IrModule *m = ir_module_create();
    const Layout *l = blocked(m, 1, (int[]){4}, (int[]){32}, (int[]){4}, (int[]){0});
    LinearLayout ll;
    CHECK(ll_from_layout(l, 1, (int64_t[]){64}, 4, &ll, NULL));
    CHECK_EQ_INT(ll_num_regs(&ll), 4);
    CHECK_EQ_INT(ll_broadcast_mask(&ll, LL_LANE), 0x10); /* lanes 16..31 repeat 0..15 */
    CHECK_EQ_INT(ll_broadcast_mask(&ll, LL_WARP), 0x3);
    check_cover(&ll, 4, 2 * 4);
    /* Fewer elements than per-thread registers: registers are dropped. */
    CHECK(ll_from_layout(l, 1, (int64_t[]){2}, 4, &ll, NULL));
    CHECK_EQ_INT(ll_num_regs(&ll), 2);
    check_cover(&ll, 4, 32 * 4);
    ir_module_destroy(m);
}

TEST(default_blocked_matches_triton) {
    IrModule *m = ir_module_create();
    const Layout *l = ll_default_blocked(m, 2, (int64_t[]){64, 64}, 4);
    CHECK_EQ_INT(l->blocked.tpw[1], 32);
    CHECK_EQ_INT(l->blocked.tpw[0], 1);
    CHECK_EQ_INT(l->blocked.wpc[1], 2);
    CHECK_EQ_INT(l->blocked.wpc[0], 2);
    l = ll_default_blocked(m, 2, (int64_t[]){128, 16}, 8);
    CHECK_EQ_INT(l->blocked.tpw[1], 16);
    CHECK_EQ_INT(l->blocked.tpw[0], 2);
    CHECK_EQ_INT(l->blocked.wpc[1], 1);
    CHECK_EQ_INT(l->blocked.wpc[0], 8);
    l = ll_default_blocked(m, 1, (int64_t[]){1024}, 4);
    CHECK_EQ_INT(l->blocked.tpw[0], 32);
    CHECK_EQ_INT(l->blocked.wpc[0], 4);
    /* Coalesced 16-byte f16 vectors on a 64x64 tile: [1,8] per thread. */
    l = ll_blocked_layout(m, 2, (int64_t[]){64, 64}, (int[]){1, 8}, (int[]){1, 0}, 4);
    CHECK_EQ_INT(l->blocked.tpw[1], 8);
    CHECK_EQ_INT(l->blocked.tpw[0], 4);
    CHECK_EQ_INT(l->blocked.wpc[0], 4);
    LinearLayout ll;
    CHECK(ll_from_layout(l, 2, (int64_t[]){64, 64}, 4, &ll, NULL));
    check_cover(&ll, 4, 1);
    ir_module_destroy(m);
}

TEST(slice_of_blocked) {
    IrModule *m = ir_module_create();
    const Layout *p = blocked(m, 2, (int[]){1, 4}, (int[]){2, 16}, (int[]){4, 1}, (int[]){1, 0});
    Layout s = {.kind = LAYOUT_SLICE, .rank = 1};
    s.slice.dim = 1;
    s.slice.parent = p;
    LinearLayout ll;
    CHECK(ll_from_layout(ir_layout_intern(m, &s), 1, (int64_t[]){64}, 4, &ll, NULL));
    /* Rows: one per (lane bit 4, warp bits, repetition); columns' lanes copy. */
    CHECK_EQ_INT(ll_num_regs(&ll), 8);
    CHECK_EQ_INT(ll_broadcast_mask(&ll, LL_LANE), 0xf);
    check_cover(&ll, 4, 16);
    /* Every register of the slice is in the same thread as the parent's row. */
    LinearLayout full, row;
    CHECK(ll_from_layout(p, 2, (int64_t[]){64, 64}, 4, &full, NULL));
    CHECK(ll_from_layout(p, 2, (int64_t[]){64, 1}, 4, &row, NULL));
    int map[64];
    bool keep[2] = {true, false};
    CHECK(ll_same_thread_map(&row, &full, keep, map)); /* broadcast [64,1] -> [64,64] */
    for (int r = 0; r < ll_num_regs(&full); r++) {
        int64_t a[IR_MAX_RANK], b[IR_MAX_RANK];
        ll_apply(&full, r, 9, 3, a);
        ll_apply(&row, map[r], 9, 3, b);
        CHECK_EQ_INT(a[0], b[0]);
    }
    bool keep_all[2] = {true, true};
    const Layout *other = blocked(m, 2, (int[]){4, 1}, (int[]){16, 2}, (int[]){1, 4}, (int[]){0, 1});
    LinearLayout t;
    CHECK(ll_from_layout(other, 2, (int64_t[]){64, 64}, 4, &t, NULL));
    CHECK(!ll_same_thread_map(&full, &t, keep_all, map)); /* a transpose moves data between threads */
    ir_module_destroy(m);
}

static const Layout *mma_v2(IrModule *m, int wm, int wn) {
    Layout l = {.kind = LAYOUT_MMA, .rank = 2};
    l.mma.version = 2;
    l.mma.wpc[0] = wm;
    l.mma.wpc[1] = wn;
    l.mma.instr[0] = 16, l.mma.instr[1] = 8, l.mma.instr[2] = 16;
    return ir_layout_intern(m, &l);
}

/* The accumulator fragment of mma.sync.m16n8k16 (PTX ISA): c_i sits at row
 * groupID + 8*(i >= 2), column 2*threadID_in_group + (i & 1). */
TEST(mma_v2_accumulator) {
    IrModule *m = ir_module_create();
    LinearLayout ll;
    CHECK(ll_from_layout(mma_v2(m, 1, 1), 2, (int64_t[]){16, 8}, 1, &ll, NULL));
    CHECK_EQ_INT(ll_num_regs(&ll), 4);
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            int64_t c[IR_MAX_RANK];
            ll_apply(&ll, i, lane, 0, c);
            CHECK_EQ_INT(c[0], lane / 4 + 8 * (i >= 2));
            CHECK_EQ_INT(c[1], 2 * (lane % 4) + (i & 1));
        }
    CHECK(ll_from_layout(mma_v2(m, 4, 1), 2, (int64_t[]){128, 64}, 4, &ll, NULL));
    check_cover(&ll, 4, 1);
    CHECK(ll_from_layout(mma_v2(m, 2, 2), 2, (int64_t[]){64, 64}, 4, &ll, NULL));
    check_cover(&ll, 4, 1);
    ir_module_destroy(m);
}

/* The A and B fragments of mma.sync.m16n8k16 with 16-bit types (PTX ISA). */
TEST(dot_operands_v2) {
    IrModule *m = ir_module_create();
    const Layout *parent = mma_v2(m, 1, 1);
    Layout a = {.kind = LAYOUT_DOT_OP, .rank = 2};
    a.dot_op.idx = 0, a.dot_op.parent = parent, a.dot_op.kwidth = 2;
    Layout b = a;
    b.dot_op.idx = 1;
    LinearLayout la, lb;
    CHECK(ll_from_layout(ir_layout_intern(m, &a), 2, (int64_t[]){16, 16}, 1, &la, NULL));
    CHECK(ll_from_layout(ir_layout_intern(m, &b), 2, (int64_t[]){16, 8}, 1, &lb, NULL));
    CHECK_EQ_INT(ll_num_regs(&la), 8);
    CHECK_EQ_INT(ll_num_regs(&lb), 4);
    for (int lane = 0; lane < 32; lane++) {
        int group = lane / 4, tig = lane % 4;
        for (int i = 0; i < 8; i++) {
            int64_t c[IR_MAX_RANK];
            ll_apply(&la, i, lane, 0, c);
            CHECK_EQ_INT(c[0], group + ((i / 2) % 2) * 8);
            CHECK_EQ_INT(c[1], tig * 2 + (i & 1) + (i >= 4) * 8);
        }
        for (int i = 0; i < 4; i++) {
            int64_t c[IR_MAX_RANK];
            ll_apply(&lb, i, lane, 0, c);
            CHECK_EQ_INT(c[0], tig * 2 + (i & 1) + (i >= 2) * 8);
            CHECK_EQ_INT(c[1], group);
        }
    }
    /* With warps [4, 1], A is split over warps along M and B is copied. */
    const Layout *p4 = mma_v2(m, 4, 1);
    a.dot_op.parent = p4;
    b.dot_op.parent = p4;
    CHECK(ll_from_layout(ir_layout_intern(m, &a), 2, (int64_t[]){128, 64}, 4, &la, NULL));
    check_cover(&la, 4, 1);
    CHECK(ll_from_layout(ir_layout_intern(m, &b), 2, (int64_t[]){64, 64}, 4, &lb, NULL));
    check_cover(&lb, 4, 4);
    ir_module_destroy(m);
}

TEST(rejects_bad_layouts) {
    IrModule *m = ir_module_create();
    LinearLayout ll;
    const char *why = NULL;
    const Layout *l = blocked(m, 1, (int[]){1}, (int[]){16}, (int[]){4}, (int[]){0});
    CHECK(!ll_from_layout(l, 1, (int64_t[]){64}, 4, &ll, &why));
    CHECK(why != NULL);
    l = blocked(m, 1, (int[]){1}, (int[]){32}, (int[]){4}, (int[]){0});
    CHECK(!ll_from_layout(l, 1, (int64_t[]){64}, 8, &ll, &why));
    CHECK(!ll_from_layout(l, 1, (int64_t[]){48}, 4, &ll, &why));
    CHECK(!ll_from_layout(l, 2, (int64_t[]){64, 64}, 4, &ll, &why));
    ir_module_destroy(m);
}

/* Chained dots (attention's P): with all warps on M, the f16 accumulator of
 * one mma.sync is, register for register, the A fragment of the next (two
 * adjacent n8 accumulator tiles = one k16 A tile), for every tile shape and
 * warp count stage-shared may see; split warps move rows between warps. */
TEST(mma_accumulator_is_a_fragment) {
    IrModule *m = ir_module_create();
    bool keep[2] = {true, true};
    int *map = malloc(sizeof(int) * 4096);
    for (int warps = 1; warps <= 8; warps *= 2)
        for (int64_t rows = 16; rows <= 256; rows *= 2)
            for (int64_t cols = 16; cols <= 256; cols *= 2) {
                const Layout *p = mma_v2(m, warps, 1);
                Layout a = {.kind = LAYOUT_DOT_OP, .rank = 2};
                a.dot_op.idx = 0, a.dot_op.parent = p, a.dot_op.kwidth = 2;
                LinearLayout acc, frag;
                int64_t shape[2] = {rows, cols};
                CHECK(ll_from_layout(p, 2, shape, warps, &acc, NULL));
                CHECK(ll_from_layout(ir_layout_intern(m, &a), 2, shape, warps, &frag, NULL));
                CHECK(ll_num_regs(&frag) <= 4096);
                CHECK(ll_same_thread_map(&acc, &frag, keep, map));
            }
    const Layout *split = mma_v2(m, 2, 2);
    Layout a = {.kind = LAYOUT_DOT_OP, .rank = 2};
    a.dot_op.idx = 0, a.dot_op.parent = split, a.dot_op.kwidth = 2;
    LinearLayout acc, frag;
    CHECK(ll_from_layout(split, 2, (int64_t[]){64, 64}, 4, &acc, NULL));
    CHECK(ll_from_layout(ir_layout_intern(m, &a), 2, (int64_t[]){64, 64}, 4, &frag, NULL));
    CHECK(!ll_same_thread_map(&acc, &frag, keep, map));
    free(map);
    ir_module_destroy(m);
}

/* ---- shared-memory layouts (ll_shared_offset) ---- */

static const Layout *shared(IrModule *m, int rank, int vec, int per_phase, int max_phase, const int *order) {
    Layout l = {.kind = LAYOUT_SHARED, .rank = rank};
    l.shared.vec = vec, l.shared.per_phase = per_phase, l.shared.max_phase = max_phase;
    for (int d = 0; d < rank; d++)
        l.shared.order[d] = order[d];
    return ir_layout_intern(m, &l);
}

TEST(shared_worked_example) {
    IrModule *m = ir_module_create();
    const Layout *l = shared(m, 2, 8, 1, 8, (int[]){1, 0});
    int64_t shape[2] = {64, 64};
    CHECK_EQ_INT(ll_shared_offset(l, 2, shape, (int64_t[]){3, 20}), 3 * 64 + 8 + 4);
    CHECK_EQ_INT(ll_shared_offset(l, 2, shape, (int64_t[]){0, 63}), 63); /* row 0: no swizzle */
    CHECK_EQ_INT(ll_shared_offset(l, 2, shape, (int64_t[]){9, 0}), 9 * 64 + 8);
    /* Column-major order: rows run along dim 1, the swizzle along dim 0. */
    const Layout *t = shared(m, 2, 8, 1, 8, (int[]){0, 1});
    CHECK_EQ_INT(ll_shared_offset(t, 2, shape, (int64_t[]){20, 3}), 3 * 64 + 8 + 4);
    /* max_phase is clamped to the units of a row: 16 f16 = 2 units. */
    CHECK_EQ_INT(ll_shared_max_phase(l, 2, (int64_t[]){64, 16}), 2);
    CHECK_EQ_INT(ll_shared_offset(l, 2, (int64_t[]){64, 16}, (int64_t[]){3, 2}), 3 * 16 + 8 + 2);
    /* 1-D buffers are not swizzled. */
    const Layout *one = shared(m, 1, 8, 1, 8, (int[]){0});
    CHECK_EQ_INT(ll_shared_offset(one, 1, (int64_t[]){64}, (int64_t[]){37}), 37);
    ir_module_destroy(m);
}

/* Every element gets its own offset inside the buffer, and ll_shared_coord
 * gives the coordinates back. */
static void check_bijective(const Layout *l, int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= shape[d];
    char *seen = calloc((size_t)n, 1);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t c[IR_MAX_RANK], back[IR_MAX_RANK], rest = i;
        for (int d = rank - 1; d >= 0; d--) {
            c[d] = rest % shape[d];
            rest /= shape[d];
        }
        int64_t off = ll_shared_offset(l, rank, shape, c);
        if (off < 0 || off >= n || seen[off]) {
            bad++;
            continue;
        }
        seen[off] = 1;
        ll_shared_coord(l, rank, shape, off, back);
        for (int d = 0; d < rank; d++)
            bad += back[d] != c[d];
    }
    CHECK_EQ_INT(bad, 0);
    free(seen);
}

/* For 8 consecutive rows (aligned to 8) and one 16-byte unit of the row
 * coordinates, the 16-byte group of 4 banks each row lands in: ldmatrix
 * reads one such 8x16-byte matrix per phase, conflict-free iff all 8
 * groups differ. Returns the number of blocks that conflict. */
static int bank_conflicts(const Layout *l, const int64_t *shape, int elem_bytes) {
    int fast = l->shared.order[0], slow = l->shared.order[1];
    int64_t per_unit = 16 / elem_bytes;
    int conflicts = 0;
    for (int64_t r0 = 0; r0 + 8 <= shape[slow]; r0 += 8)
        for (int64_t c = 0; c < shape[fast]; c += per_unit) {
            unsigned groups = 0;
            for (int64_t r = r0; r < r0 + 8; r++) {
                int64_t coord[2];
                coord[slow] = r, coord[fast] = c;
                int64_t byte = ll_shared_offset(l, 2, shape, coord) * elem_bytes;
                CHECK_EQ_INT(byte % 16, 0); /* a unit stays one aligned 16-byte row */
                groups |= 1u << (byte / 16 % 8);
            }
            conflicts += groups != 0xff;
        }
    return conflicts;
}

TEST(shared_swizzle_choice) {
    IrModule *m = ir_module_create();
    /* docs/passes.md, the swizzle of operands: f16 rows of 64 -> 8/1/8; of 32 -> 8/2/4. */
    const Layout *l = ll_shared_swizzled(m, 2, (int64_t[]){128, 64}, (int[]){1, 0}, 16);
    CHECK_EQ_INT(l->shared.vec, 8);
    CHECK_EQ_INT(l->shared.per_phase, 1);
    CHECK_EQ_INT(l->shared.max_phase, 8);
    CHECK_EQ_INT(l->shared.order[0], 1);
    l = ll_shared_swizzled(m, 2, (int64_t[]){64, 32}, (int[]){1, 0}, 16);
    CHECK_EQ_INT(l->shared.vec, 8);
    CHECK_EQ_INT(l->shared.per_phase, 2);
    CHECK_EQ_INT(l->shared.max_phase, 4);
    /* The contiguous dimension decides: 32 rows of 64 along dim 0. */
    l = ll_shared_swizzled(m, 2, (int64_t[]){64, 32}, (int[]){0, 1}, 16);
    CHECK_EQ_INT(l->shared.per_phase, 1);
    CHECK_EQ_INT(l->shared.max_phase, 8);
    CHECK_EQ_INT(l->shared.order[0], 0);
    /* f32: 4 per 16-byte unit; rows of 32 f32 = 128 bytes. */
    l = ll_shared_swizzled(m, 2, (int64_t[]){64, 32}, (int[]){1, 0}, 32);
    CHECK_EQ_INT(l->shared.vec, 4);
    CHECK_EQ_INT(l->shared.per_phase, 1);
    CHECK_EQ_INT(l->shared.max_phase, 8);
    /* Exhaustively: every shape from 8 to 256 on either side, both orders,
     * 8-, 16- and 32-bit elements: bijective, and no ldmatrix conflicts. */
    int bits[] = {8, 16, 32};
    for (int bi = 0; bi < 3; bi++)
        for (int64_t rows = 8; rows <= 256; rows *= 2)
            for (int64_t cols = 8; cols <= 256; cols *= 2)
                for (int o = 0; o < 2; o++) {
                    int order[2] = {o ? 0 : 1, o ? 1 : 0};
                    int64_t shape[2] = {rows, cols};
                    const Layout *s = ll_shared_swizzled(m, 2, shape, order, bits[bi]);
                    check_bijective(s, 2, shape);
                    if (shape[order[0]] * bits[bi] / 8 >= 16)
                        CHECK_EQ_INT(bank_conflicts(s, shape, bits[bi] / 8), 0);
                }
    /* Without the swizzle, 128-byte rows put all 8 rows in one group. */
    const Layout *flat = shared(m, 2, 8, 1, 1, (int[]){1, 0});
    CHECK_EQ_INT(bank_conflicts(flat, (int64_t[]){64, 64}, 2), 8 * 8);
    ir_module_destroy(m);
}

/* Any vec / per_phase / max_phase (powers of two), rank 1 to 3: still a
 * bijection, with the inverse. */
TEST(shared_bijective_any) {
    IrModule *m = ir_module_create();
    int orders2[2][2] = {{1, 0}, {0, 1}};
    for (int vec = 1; vec <= 16; vec *= 2)
        for (int pp = 1; pp <= 8; pp *= 2)
            for (int mp = 1; mp <= 16; mp *= 2)
                for (int o = 0; o < 2; o++) {
                    const Layout *l = shared(m, 2, vec, pp, mp, orders2[o]);
                    check_bijective(l, 2, (int64_t[]){32, 64});
                    check_bijective(l, 2, (int64_t[]){16, 4});
                }
    const Layout *l3 = shared(m, 3, 8, 2, 4, (int[]){2, 0, 1});
    check_bijective(l3, 3, (int64_t[]){4, 16, 32});
    const Layout *l1 = shared(m, 1, 8, 1, 8, (int[]){0});
    check_bijective(l1, 1, (int64_t[]){128});
    ir_module_destroy(m);
}

/* ---- Hopper: wgmma's accumulator and register A (#mma version 3) ---- */

static const Layout *mma_v3(IrModule *m, int wm, int wn, int n) {
    Layout l = {.kind = LAYOUT_MMA, .rank = 2};
    l.mma.version = 3;
    l.mma.wpc[0] = wm;
    l.mma.wpc[1] = wn;
    l.mma.instr[0] = 64, l.mma.instr[1] = n, l.mma.instr[2] = 16;
    return ir_layout_intern(m, &l);
}

static const Layout *dot_a(IrModule *m, const Layout *parent, int idx, int kwidth) {
    Layout a = {.kind = LAYOUT_DOT_OP, .rank = 2};
    a.dot_op.idx = idx, a.dot_op.parent = parent, a.dot_op.kwidth = kwidth;
    return ir_layout_intern(m, &a);
}

static void check_bases(const Layout *l, int64_t rows, int64_t cols, int num_warps, const char *expect) {
    LinearLayout ll;
    const char *why = NULL;
    CHECK(ll_from_layout(l, 2, (int64_t[]){rows, cols}, num_warps, &ll, &why));
    if (why)
        fprintf(stderr, "  why: %s\n", why);
    Buf b;
    buf_init(&b);
    ll_print(&b, &ll);
    CHECK_EQ_STR(b.data, expect);
    buf_free(&b);
}

/* docs/hopper.md §1.2: the bases of the wgmma accumulator, one warpgroup
 * along M first, then N; repetitions along N, then M. */
TEST(mma_v3_bases) {
    IrModule *m = ir_module_create();
    /* 128x128 on 4 warps, instr [64, 128, 16]: 128 f32 per thread. */
    check_bases(mma_v3(m, 4, 1, 128), 128, 128, 4,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0)]");
    /* 128x256 on 8 warps, wpc [8, 1], instr n 256: the second warpgroup on
     * rows 64..127. */
    check_bases(mma_v3(m, 8, 1, 256), 128, 256, 8,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (0, 128)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0), (64, 0)]");
    /* 64x256 on 8 warps, wpc [4, 2], instr n 128: the second on columns 128..255. */
    check_bases(mma_v3(m, 4, 2, 128), 64, 256, 8,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0), (0, 128)]");
    /* n 64 on 128 columns: a repetition along N before the one along M. */
    check_bases(mma_v3(m, 4, 1, 64), 128, 128, 4,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (0, 64), (64, 0)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0)]");
    /* Bit for bit the #mma version 2 layout with wpc [4, 1] on the same tile. */
    LinearLayout v3, v2;
    CHECK(ll_from_layout(mma_v3(m, 4, 1, 128), 2, (int64_t[]){128, 128}, 4, &v3, NULL));
    CHECK(ll_from_layout(mma_v2(m, 4, 1), 2, (int64_t[]){128, 128}, 4, &v2, NULL));
    CHECK(ll_equal(&v3, &v2));
    ir_module_destroy(m);
}

/* The PTX ISA's m64nNk16 f32 accumulator: in warp w of the warpgroup, lane
 * l, d[4j + 2h + c] holds row 16w + l/4 + 8h, column 8j + 2(l%4) + c — the
 * register index of the layout is d. Every element has one owner. */
TEST(mma_v3_accumulator) {
    IrModule *m = ir_module_create();
    static const int ns[] = {8, 16, 64, 128, 256};
    for (int k = 0; k < 5; k++) {
        int n = ns[k];
        LinearLayout ll;
        CHECK(ll_from_layout(mma_v3(m, 4, 1, n), 2, (int64_t[]){64, n}, 4, &ll, NULL));
        CHECK_EQ_INT(ll_num_regs(&ll), n / 2);
        int bad = 0;
        for (int w = 0; w < 4; w++)
            for (int lane = 0; lane < 32; lane++)
                for (int d = 0; d < n / 2; d++) {
                    int j = d / 4, h = d / 2 % 2, c = d % 2;
                    int64_t x[IR_MAX_RANK];
                    ll_apply(&ll, d, lane, w, x);
                    bad += x[0] != 16 * w + lane / 4 + 8 * h || x[1] != 8 * j + 2 * (lane % 4) + c;
                }
        CHECK_EQ_INT(bad, 0);
        check_cover(&ll, 4, 1);
    }
    LinearLayout ll;
    CHECK(ll_from_layout(mma_v3(m, 8, 1, 256), 2, (int64_t[]){128, 256}, 8, &ll, NULL));
    check_cover(&ll, 8, 1);
    CHECK(ll_from_layout(mma_v3(m, 4, 2, 128), 2, (int64_t[]){64, 256}, 8, &ll, NULL));
    check_cover(&ll, 8, 1);
    CHECK(ll_from_layout(mma_v3(m, 4, 1, 64), 2, (int64_t[]){256, 128}, 4, &ll, NULL));
    check_cover(&ll, 4, 1);
    /* Not whole warpgroups along M, warps that do not multiply to
     * num_warps, instr m other than 64, n not a power of two in 8..256. */
    const char *why = NULL;
    CHECK(!ll_from_layout(mma_v3(m, 2, 2, 64), 2, (int64_t[]){64, 64}, 4, &ll, &why));
    CHECK(why != NULL);
    CHECK(!ll_from_layout(mma_v3(m, 4, 1, 64), 2, (int64_t[]){64, 64}, 8, &ll, NULL));
    CHECK(!ll_from_layout(mma_v3(m, 4, 1, 512), 2, (int64_t[]){64, 512}, 4, &ll, NULL));
    CHECK(!ll_from_layout(mma_v3(m, 4, 1, 4), 2, (int64_t[]){64, 64}, 4, &ll, NULL));
    CHECK(!ll_from_layout(mma_v3(m, 4, 1, 48), 2, (int64_t[]){64, 96}, 4, &ll, NULL));
    Layout m16 = *mma_v3(m, 4, 1, 64);
    m16.mma.instr[0] = 16;
    CHECK(!ll_from_layout(ir_layout_intern(m, &m16), 2, (int64_t[]){64, 64}, 4, &ll, NULL));
    ir_module_destroy(m);
}

/* wgmma's A from registers: per warp the m16n8k16 A fragment of mma.sync
 * (a_i at row l/4 + 8 * ((i / 2) % 2), column 2(l%4) + (i&1) + 8 * (i >=
 * 4)), warp w of the warpgroup on rows 16w..; K repetitions, then M;
 * copies across warpgroups along N. Only A (idx 0) with kwidth 2. */
TEST(dot_op_v3_bases) {
    IrModule *m = ir_module_create();
    check_bases(dot_a(m, mma_v3(m, 4, 1, 128), 0, 2), 128, 64, 4,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32), (64, 0)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0)]");
    check_bases(dot_a(m, mma_v3(m, 8, 1, 64), 0, 2), 128, 32, 8,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0), (64, 0)]");
    check_bases(dot_a(m, mma_v3(m, 4, 2, 128), 0, 2), 64, 64, 8,
                "reg: [(0, 1), (8, 0), (0, 8), (0, 16), (0, 32)]; "
                "lane: [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]; warp: [(16, 0), (32, 0), (0, 0)]");
    LinearLayout la;
    CHECK(ll_from_layout(dot_a(m, mma_v3(m, 4, 1, 64), 0, 2), 2, (int64_t[]){64, 16}, 4, &la, NULL));
    CHECK_EQ_INT(ll_num_regs(&la), 8);
    int bad = 0;
    for (int w = 0; w < 4; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int i = 0; i < 8; i++) {
                int64_t c[IR_MAX_RANK];
                ll_apply(&la, i, lane, w, c);
                bad += c[0] != 16 * w + lane / 4 + 8 * ((i / 2) % 2) || c[1] != 2 * (lane % 4) + (i & 1) + 8 * (i >= 4);
            }
    CHECK_EQ_INT(bad, 0);
    CHECK(ll_from_layout(dot_a(m, mma_v3(m, 4, 2, 128), 0, 2), 2, (int64_t[]){64, 64}, 8, &la, NULL));
    check_cover(&la, 8, 2); /* both warpgroups hold all of A */
    const char *why = NULL;
    CHECK(!ll_from_layout(dot_a(m, mma_v3(m, 4, 1, 64), 1, 2), 2, (int64_t[]){64, 64}, 4, &la, &why));
    CHECK(why != NULL);
    CHECK(!ll_from_layout(dot_a(m, mma_v3(m, 4, 1, 64), 0, 4), 2, (int64_t[]){64, 64}, 4, &la, NULL));
    ir_module_destroy(m);
}

/* Attention's P on wgmma: the accumulator of one v3 dot, rounded to f16, is
 * register for register the A fragment of the next (same shape, same
 * warps), whatever instr n the two dots use. */
TEST(mma_v3_accumulator_is_a_fragment) {
    IrModule *m = ir_module_create();
    bool keep[2] = {true, true};
    int *map = malloc(sizeof(int) * 4096);
    for (int groups = 1; groups <= 2; groups *= 2)
        for (int64_t rows = 64 * groups; rows <= 256; rows *= 2)
            for (int64_t cols = 16; cols <= 256; cols *= 2)
                for (int n = 8; n <= cols; n *= 2) {
                    LinearLayout acc, frag;
                    int64_t shape[2] = {rows, cols};
                    CHECK(ll_from_layout(mma_v3(m, 4 * groups, 1, n), 2, shape, 4 * groups, &acc, NULL));
                    CHECK(ll_from_layout(dot_a(m, mma_v3(m, 4 * groups, 1, 64), 0, 2), 2, shape, 4 * groups, &frag,
                                         NULL));
                    CHECK(ll_num_regs(&frag) <= 4096);
                    CHECK(ll_same_thread_map(&acc, &frag, keep, map));
                }
    free(map);
    ir_module_destroy(m);
}

/* ---- #nvmma_shared (ll_nvmma_offset, ll_nvmma_coord) ---- */

static const Layout *nvmma(IrModule *m, int rank, int swizzle, const int *order) {
    Layout l = {.kind = LAYOUT_NVMMA_SHARED, .rank = rank};
    l.nvmma.swizzle = swizzle;
    for (int d = 0; d < rank; d++)
        l.nvmma.order[d] = order[d];
    return ir_layout_intern(m, &l);
}

/* docs/ir.md's worked example: smem<64x128xf16, #nvmma_shared<swizzle =
 * 128, order = [1, 0]>>, element (3, 100): column block 1 (elements 64..127),
 * 16-byte unit 36 / 8 = 4 of row 3, stored at unit 4 ^ 3 = 7: offset
 * 1 * 64 * 64 + 3 * 64 + 7 * 8 + 4 = 4348. */
TEST(nvmma_worked_example) {
    IrModule *m = ir_module_create();
    const Layout *l = nvmma(m, 2, 128, (int[]){1, 0});
    int64_t shape[2] = {64, 128};
    CHECK_EQ_INT(ll_nvmma_offset(l, 2, shape, 2, (int64_t[]){3, 100}), 4348);
    CHECK_EQ_INT(ll_nvmma_offset(l, 2, shape, 2, (int64_t[]){0, 63}), 63); /* row 0, block 0: no swizzle */
    CHECK_EQ_INT(ll_nvmma_offset(l, 2, shape, 2, (int64_t[]){0, 64}), 64 * 64); /* block 1 after all rows of block 0 */
    CHECK_EQ_INT(ll_nvmma_offset(l, 2, shape, 2, (int64_t[]){9, 0}), 9 * 64 + 8);
    int64_t c[2];
    ll_nvmma_coord(l, 2, shape, 2, 4348, c);
    CHECK_EQ_INT(c[0], 3);
    CHECK_EQ_INT(c[1], 100);
    /* 64-byte swizzle: 2 rows share a phase, 4 phases: row 3 XORs unit 1. */
    const Layout *l64 = nvmma(m, 2, 64, (int[]){1, 0});
    CHECK_EQ_INT(ll_nvmma_offset(l64, 2, shape, 2, (int64_t[]){3, 9}), 3 * 32 + (1 ^ 1) * 8 + 1);
    CHECK_EQ_INT(ll_nvmma_offset(l64, 2, shape, 2, (int64_t[]){6, 40}), 64 * 32 + 6 * 32 + (1 ^ 3) * 8);
    /* order [0, 1]: dimension 0 is contiguous, rows run along dimension 1. */
    const Layout *t = nvmma(m, 2, 128, (int[]){0, 1});
    CHECK_EQ_INT(ll_nvmma_offset(t, 2, (int64_t[]){128, 64}, 2, (int64_t[]){100, 3}), 4348);
    ir_module_destroy(m);
}

/* The hardware's view (docs/hopper.md §1.3): with the buffer at a multiple
 * of 8 x swizzle bytes, element (row, byte b of the contiguous dimension)
 * of a canonical layout — column block b / S holding all rows of S bytes
 * before the next — is at byte a = (block * rows + row) * S + b % S, read
 * through the address XOR a ^ (((a >> 7) & mask) << 4), mask 7, 3, 1 for
 * S = 128, 64, 32. ll_nvmma_offset must be that address, ll_nvmma_coord
 * its inverse, and the map a bijection onto the buffer, linear in the
 * coordinates' bits. */
static void check_nvmma_hw(const Layout *l, const int64_t *shape, int eb) {
    int cd = l->nvmma.order[0], rd = l->nvmma.order[1];
    int64_t S = l->nvmma.swizzle, rows = shape[rd], n = shape[0] * shape[1];
    int64_t mask = S == 128 ? 7 : S == 64 ? 3 : 1;
    char *seen = calloc((size_t)n, 1);
    int bad = 0, bad_inv = 0, dup = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < shape[cd]; x++) {
            int64_t c[2], back[2];
            c[rd] = r, c[cd] = x;
            int64_t bytes = x * eb, block = bytes / S;
            int64_t a = (block * rows + r) * S + bytes % S;
            int64_t hw = a ^ (((a >> 7) & mask) << 4);
            int64_t off = ll_nvmma_offset(l, 2, shape, eb, c);
            bad += off * eb != hw;
            if (off < 0 || off >= n || seen[off]) {
                dup++;
                continue;
            }
            seen[off] = 1;
            ll_nvmma_coord(l, 2, shape, eb, off, back);
            bad_inv += back[0] != c[0] || back[1] != c[1];
        }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(bad_inv, 0);
    CHECK_EQ_INT(dup, 0);
    /* linear over GF(2), as codegen's addressing assumes (a thread's part
     * XOR each register's constant): the offset of a coordinate is the XOR
     * of the offsets of its bits */
    int bad_lin = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t x = 0; x < shape[cd]; x++) {
            int64_t c[2], e[2], xor = 0;
            for (int64_t bit = 1; bit < rows; bit <<= 1)
                if (r & bit) {
                    e[rd] = bit, e[cd] = 0;
                    xor ^= ll_nvmma_offset(l, 2, shape, eb, e);
                }
            for (int64_t bit = 1; bit < shape[cd]; bit <<= 1)
                if (x & bit) {
                    e[rd] = 0, e[cd] = bit;
                    xor ^= ll_nvmma_offset(l, 2, shape, eb, e);
                }
            c[rd] = r, c[cd] = x;
            bad_lin += ll_nvmma_offset(l, 2, shape, eb, c) != xor;
        }
    CHECK_EQ_INT(bad_lin, 0);
    /* and every offset of the buffer gives back coordinates that map to it */
    int bad_off = 0;
    for (int64_t off = 0; off < n; off++) {
        int64_t c[2];
        ll_nvmma_coord(l, 2, shape, eb, off, c);
        bad_off += c[0] < 0 || c[0] >= shape[0] || c[1] < 0 || c[1] >= shape[1] ||
                   ll_nvmma_offset(l, 2, shape, eb, c) != off;
    }
    CHECK_EQ_INT(bad_off, 0);
    free(seen);
}

TEST(nvmma_matches_hardware_swizzle) {
    IrModule *m = ir_module_create();
    static const int swizzles[] = {32, 64, 128};
    static const int ebs[] = {1, 2, 4};
    for (int si = 0; si < 3; si++)
        for (int o = 0; o < 2; o++) {
            int order[2] = {o ? 0 : 1, o ? 1 : 0};
            const Layout *l = nvmma(m, 2, swizzles[si], order);
            for (int e = 0; e < 3; e++) {
                int eb = ebs[e];
                /* contiguous extents of 1 to 8 swizzled rows, 8 to 256 rows */
                for (int64_t blocks = 1; blocks <= 8; blocks *= 2)
                    for (int64_t rows = 8; rows <= 256; rows *= 4) {
                        int64_t shape[2];
                        shape[order[0]] = blocks * swizzles[si] / eb;
                        shape[order[1]] = rows;
                        check_nvmma_hw(l, shape, eb);
                    }
            }
            /* the shapes wgmma sees most: 64x256 K x N (order [1, 0]) and
             * 256x64 (order [0, 1]), f16: several column blocks */
            check_nvmma_hw(l, o ? (int64_t[]){256, 64} : (int64_t[]){64, 256}, 2);
        }
    ir_module_destroy(m);
}

/* Rank 3: the rows are the other dimensions in order (order[1] fastest);
 * still a bijection with its inverse. */
TEST(nvmma_rank3) {
    IrModule *m = ir_module_create();
    const Layout *l = nvmma(m, 3, 64, (int[]){2, 0, 1});
    int64_t shape[3] = {4, 16, 64};
    int64_t n = 4 * 16 * 64;
    char *seen = calloc((size_t)n, 1);
    int bad = 0;
    for (int64_t i = 0; i < 4; i++)
        for (int64_t j = 0; j < 16; j++)
            for (int64_t k = 0; k < 64; k++) {
                int64_t c[3] = {i, j, k}, back[3];
                int64_t off = ll_nvmma_offset(l, 3, shape, 2, c);
                if (off < 0 || off >= n || seen[off]) {
                    bad++;
                    continue;
                }
                seen[off] = 1;
                ll_nvmma_coord(l, 3, shape, 2, off, back);
                bad += back[0] != i || back[1] != j || back[2] != k;
            }
    CHECK_EQ_INT(bad, 0);
    /* row = j * 4 + i; 64 f16 = 128 bytes = 2 blocks of 32 elements */
    CHECK_EQ_INT(ll_nvmma_offset(l, 3, shape, 2, (int64_t[]){1, 2, 40}),
                 1 * 64 * 32 + 9 * 32 + ((1 ^ ((9 / 2) % 4)) * 8));
    free(seen);
    ir_module_destroy(m);
}

UNIT_SUITE(linear_layout, blocked_worked_example, blocked_broadcast, default_blocked_matches_triton, slice_of_blocked,
           mma_v2_accumulator, dot_operands_v2, rejects_bad_layouts, shared_worked_example, shared_swizzle_choice,
           shared_bijective_any, mma_accumulator_is_a_fragment, mma_v3_bases, mma_v3_accumulator, dot_op_v3_bases,
           mma_v3_accumulator_is_a_fragment, nvmma_worked_example, nvmma_matches_hardware_swizzle, nvmma_rank3)
