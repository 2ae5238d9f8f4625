/*
 * test_wgmma.c — target/wgmma.c, Hopper's warpgroup MMA as the target model
 * sees it: the swizzle of an #nvmma_shared buffer, tg_wgmma_plan's map from
 * a warp_group_dot's accumulator registers to the instructions' d
 * registers (and of register A to the m16n8k16 fragments), and the matrix
 * descriptors of shared operands (docs/hopper.md §1.2, §1.3). The IR comes
 * from text, as the lit tests write it.
 */
#include "ir/ir.h"
#include "target/target.h"
#include "ir_test_util.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* The first warp_group_dot of the first function. */
static IrOp *first_wgmma(IrModule *m) {
    for (IrOp *op = m->first->body->first; op; op = op->next)
        if (op->opc == IR_OP_WARP_GROUP_DOT)
            return op;
    return NULL;
}

/* A kernel with one warp_group_dot of the given operand and accumulator
 * types (layouts written inline). */
static IrModule *wgmma_kernel(const char *a, const char *b, const char *c, int num_warps) {
    char text[2048];
    snprintf(text, sizeof text,
             "kernel @k(%%a: %s, %%b: %s, %%c: %s) attrs {num_warps = %d} {\n"
             "  %%d = warp_group_dot %%a, %%b, %%c : %s\n"
             "  return\n"
             "}\n",
             a, b, c, num_warps, c);
    return unit_parse_ir(text);
}

/* A plan with its tables; freed by plan_free. */
typedef struct {
    IrModule *m;
    TgWgmmaPlan p;
    int *storage;
    bool ok;
    const char *why;
} Plan;

static Plan plan(const char *a, const char *b, const char *c, int num_warps) {
    Plan r;
    memset(&r, 0, sizeof r);
    r.m = wgmma_kernel(a, b, c, num_warps);
    CHECK(r.m != NULL);
    if (!r.m)
        return r;
    IrOp *op = first_wgmma(r.m);
    CHECK(op != NULL);
    int cap = op ? tg_wgmma_plan_cap(op) : 0;
    CHECK(cap > 0);
    r.storage = calloc(2 * (size_t)(cap > 0 ? cap : 1), sizeof(int));
    r.ok = op && cap > 0 && tg_wgmma_plan(op, num_warps, &r.p, r.storage, cap, &r.why);
    return r;
}

static void plan_free(Plan *r) {
    free(r->storage);
    if (r->m)
        ir_module_destroy(r->m);
}

/* The fields of a descriptor word (docs/hopper.md §1.3). */
static int64_t desc_start(uint64_t d) { return (int64_t)(d & 0x3FFF); }
static int64_t desc_lbo(uint64_t d) { return (int64_t)(d >> 16 & 0x3FFF); }
static int64_t desc_sbo(uint64_t d) { return (int64_t)(d >> 32 & 0x3FFF); }
static int64_t desc_base(uint64_t d) { return (int64_t)(d >> 49 & 7); }
static int64_t desc_mode(uint64_t d) { return (int64_t)(d >> 62); }
/* Bits that no field owns: 14-15, 30-31, 46-48, 52-61. */
static uint64_t desc_reserved(uint64_t d) {
    return d & (3ull << 14 | 3ull << 30 | 7ull << 46 | 0x3FFull << 52);
}

TEST(swizzle_choice) {
    CHECK_EQ_INT(tg_nvmma_swizzle(256), 128);
    CHECK_EQ_INT(tg_nvmma_swizzle(128), 128);
    CHECK_EQ_INT(tg_nvmma_swizzle(64), 64);
    CHECK_EQ_INT(tg_nvmma_swizzle(192), 64);
    CHECK_EQ_INT(tg_nvmma_swizzle(96), 32);
    CHECK_EQ_INT(tg_nvmma_swizzle(32), 32);
    CHECK_EQ_INT(tg_nvmma_swizzle(16), 0);
    CHECK_EQ_INT(tg_nvmma_swizzle(48), 0);
    CHECK_EQ_INT(tg_nvmma_swizzle(0), 0);
}

/*
 * Every register of the accumulator is one instruction's d register: in
 * warp w of its warpgroup, lane l, d[4j + 2h + c] of instruction tile (tm,
 * tn) holds row tm*64 + 16w + l/4 + 8h, column tn*n + 8j + 2(l%4) + c,
 * plus the warpgroup's own rows (wg_rows per warpgroup along M) or columns
 * (wg_cols along N). Tiles that only other warpgroups hold have no
 * registers (-1); returns how many tiles the thread holds.
 */
static int check_acc(const TgWgmmaPlan *p, int num_warps, int wg_rows, int wg_cols) {
    int per = p->n / 2, held = 0, bad = 0;
    for (int tm = 0; tm < p->tiles_m; tm++)
        for (int tn = 0; tn < p->tiles_n; tn++) {
            const int *acc = p->acc + (tm * p->tiles_n + tn) * per;
            if (acc[0] < 0) {
                for (int d = 0; d < per; d++)
                    bad += acc[d] != -1; /* a tile is held whole or not at all */
                continue;
            }
            held++;
            for (int d = 0; d < per; d++) {
                int j = d / 4, h = d / 2 % 2, c = d % 2;
                for (int w = 0; w < num_warps; w++)
                    for (int l = 0; l < 32; l++) {
                        int64_t x[IR_MAX_RANK];
                        ll_apply(&p->lc, acc[d], l, w, x);
                        int g = w / 4;
                        bad += x[0] != tm * 64 + g * wg_rows + 16 * (w % 4) + l / 4 + 8 * h ||
                               x[1] != tn * p->n + g * wg_cols + 8 * j + 2 * (l % 4) + c;
                    }
            }
        }
    CHECK_EQ_INT(bad, 0);
    return held;
}

/* 128x128x64 f16 on one warpgroup: m64n128k16, 4 k steps, 2 m tiles, all
 * 128 accumulator registers in use. A K-major (64 f16 = one 128-byte row),
 * B N-major (128 f16 = two 128-byte blocks). */
TEST(plan_128x128x64) {
    Plan r = plan("smem<128x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "smem<64x128xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "tile<128x128xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 128, 16]>>", 4);
    CHECK(r.ok);
    if (!r.ok) {
        fprintf(stderr, "  why: %s\n", r.why ? r.why : "?");
        plan_free(&r);
        return;
    }
    const TgWgmmaPlan *p = &r.p;
    CHECK_EQ_INT(p->n, 128);
    CHECK_EQ_INT(p->ksteps, 4);
    CHECK_EQ_INT(p->tiles_m, 2);
    CHECK_EQ_INT(p->tiles_n, 1);
    CHECK(!p->a_regs);
    CHECK_EQ_STR(p->dtype, "f16");
    CHECK_EQ_INT(ll_num_regs(&p->lc), 128);
    CHECK_EQ_INT(check_acc(p, 4, 0, 0), 2);
    /* every register is used exactly once */
    char seen[128] = {0};
    int dup = 0;
    for (int i = 0; i < 2 * 64; i++) {
        int reg = p->acc[i];
        if (reg < 0 || reg >= 128 || seen[reg]++)
            dup++;
    }
    CHECK_EQ_INT(dup, 0);

    /* A, K-major with a 128-byte swizzle: LBO unused (enc 1), SBO = 8 rows
     * x 128 B = 1024 (enc 64), mode 1; no start address, base offset 0. */
    const TgWgmmaOperand *a = &p->sa;
    CHECK(!a->mn_major);
    CHECK_EQ_INT(a->swizzle, 128);
    CHECK_EQ_INT(a->elem_bytes, 2);
    CHECK_EQ_INT(desc_lbo(a->fixed), 1);
    CHECK_EQ_INT(desc_sbo(a->fixed), 64);
    CHECK_EQ_INT(desc_mode(a->fixed), 1);
    CHECK_EQ_INT(desc_start(a->fixed), 0);
    CHECK_EQ_INT(desc_base(a->fixed), 0);
    CHECK(desc_reserved(a->fixed) == 0);
    CHECK(a->fixed == 0x4000004000010000ull);
    /* B, N-major (imm-trans-b 1): the two 128-byte column blocks are LBO =
     * 64 rows of K x 128 B = 8192 apart (enc 512); 8-row groups of K SBO =
     * 1024 apart (enc 64); mode 1. */
    const TgWgmmaOperand *b = &p->sb;
    CHECK(b->mn_major);
    CHECK_EQ_INT(b->swizzle, 128);
    CHECK_EQ_INT(desc_lbo(b->fixed), 512);
    CHECK_EQ_INT(desc_sbo(b->fixed), 64);
    CHECK_EQ_INT(desc_mode(b->fixed), 1);
    CHECK_EQ_INT(desc_base(b->fixed), 0);
    CHECK(desc_reserved(b->fixed) == 0);
    CHECK(b->fixed == 0x4000004002000000ull);

    /* Sub-tile starts: A's second m tile 64 rows x 128 B further, its k16
     * step 32 bytes along the row; B's k16 step 16 rows x 128 B, its second
     * 64-column block after all 64 rows of the first. */
    CHECK_EQ_INT(tg_wgmma_byte_offset(a, 0, 0), 0);
    CHECK_EQ_INT(tg_wgmma_byte_offset(a, 0, 16), 32);
    CHECK_EQ_INT(tg_wgmma_byte_offset(a, 64, 48), 64 * 128 + 96);
    CHECK_EQ_INT(tg_wgmma_byte_offset(b, 16, 0), 2048);
    CHECK_EQ_INT(tg_wgmma_byte_offset(b, 0, 64), 8192);
    CHECK_EQ_INT(tg_wgmma_byte_offset(b, 48, 64), 8192 + 48 * 128);
    /* ... which is ll_nvmma_offset in bytes */
    CHECK_EQ_INT(tg_wgmma_byte_offset(b, 3, 100), 2 * ll_nvmma_offset(b->layout, 2, b->shape, 2, (int64_t[]){3, 100}));

    /* The start address: bits 13-0 hold (addr & 0x3FFFF) >> 4, nothing else
     * changes. */
    uint64_t d = tg_wgmma_desc(a, 0x2000 + 32);
    CHECK_EQ_INT(desc_start(d), 0x202);
    CHECK(d == (a->fixed | 0x202));
    d = tg_wgmma_desc(b, 0x3FFF0);
    CHECK_EQ_INT(desc_start(d), 0x3FFF);
    CHECK(desc_reserved(d) == 0);
    CHECK_EQ_INT(desc_lbo(d), 512);
    CHECK_EQ_INT(desc_start(tg_wgmma_desc(b, 0x40010)), 1); /* the 18-bit shared window */
    CHECK_EQ_INT(desc_start(tg_wgmma_desc(b, 0x1000F)), 0x1000); /* low 4 bits dropped */
    plan_free(&r);
}

/* Two warpgroups along M (wpc [8, 1]): each holds one m64 tile; the table
 * names the first (the second warpgroup's registers are the same, 64 rows
 * down), the other tile has no registers. */
TEST(plan_two_warpgroups_m) {
    Plan r = plan("smem<128x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "smem<64x256xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "tile<128x256xf32, #mma<version = 3, wpc = [8, 1], instr = [64, 256, 16]>>", 8);
    CHECK(r.ok);
    if (r.ok) {
        CHECK_EQ_INT(r.p.n, 256);
        CHECK_EQ_INT(r.p.tiles_m, 2);
        CHECK_EQ_INT(r.p.tiles_n, 1);
        CHECK_EQ_INT(r.p.ksteps, 4);
        CHECK_EQ_INT(check_acc(&r.p, 8, 64, 0), 1);
        CHECK(r.p.acc[0] >= 0);
        CHECK_EQ_INT(r.p.acc[128], -1);
        /* B N-major over 4 blocks of 128 B: LBO still 64 rows x 128 B. */
        CHECK_EQ_INT(desc_lbo(r.p.sb.fixed), 512);
    }
    plan_free(&r);
}

/* Warpgroups along N (wpc [4, 2]): 64x256 with n 128, the second
 * warpgroup's columns 128..255. */
TEST(plan_two_warpgroups_n) {
    Plan r = plan("smem<64x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "smem<64x256xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "tile<64x256xf32, #mma<version = 3, wpc = [4, 2], instr = [64, 128, 16]>>", 8);
    CHECK(r.ok);
    if (r.ok) {
        CHECK_EQ_INT(r.p.n, 128);
        CHECK_EQ_INT(r.p.tiles_m, 1);
        CHECK_EQ_INT(r.p.tiles_n, 2);
        CHECK_EQ_INT(check_acc(&r.p, 8, 0, 128), 1);
        CHECK_EQ_INT(r.p.acc[64], -1);
    }
    plan_free(&r);
}

/* bf16, a smaller n, and K-major B (stored K contiguous: order [0, 1]). */
TEST(plan_bf16_k_major_b) {
    Plan r = plan("smem<64x64xbf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "smem<64x32xbf16, #nvmma_shared<swizzle = 128, order = [0, 1]>>",
                  "tile<64x32xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 32, 16]>>", 4);
    CHECK(r.ok);
    if (r.ok) {
        CHECK_EQ_STR(r.p.dtype, "bf16");
        CHECK_EQ_INT(r.p.n, 32);
        CHECK_EQ_INT(check_acc(&r.p, 4, 0, 0), 1);
        CHECK(!r.p.sb.mn_major);
        CHECK(r.p.sb.fixed == 0x4000004000010000ull);
        /* B's k16 step is 32 bytes along its rows (the N dimension's). */
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sb, 16, 0), 32);
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sb, 0, 8), 8 * 128);
    }
    plan_free(&r);
}

/* 64- and 32-byte swizzles: modes 2 and 3, SBO = 8 rows x S, and for
 * N-major B the blocks LBO = (K rows) x S apart. */
TEST(descriptor_modes) {
    /* K-major A, 32 f16 = 64 B; N-major B, 32 f16 = 64 B, 16 rows of K */
    Plan r = plan("smem<64x16xf16, #nvmma_shared<swizzle = 32, order = [1, 0]>>",
                  "smem<16x32xf16, #nvmma_shared<swizzle = 64, order = [1, 0]>>",
                  "tile<64x32xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 32, 16]>>", 4);
    CHECK(r.ok);
    if (r.ok) {
        /* A: 16 f16 = 32 B, mode 3, SBO 8 x 32 = 256 (enc 16) */
        CHECK(!r.p.sa.mn_major);
        CHECK_EQ_INT(r.p.sa.swizzle, 32);
        CHECK_EQ_INT(desc_mode(r.p.sa.fixed), 3);
        CHECK_EQ_INT(desc_lbo(r.p.sa.fixed), 1);
        CHECK_EQ_INT(desc_sbo(r.p.sa.fixed), 16);
        /* B: mode 2, LBO 16 x 64 = 1024 (enc 64), SBO 8 x 64 = 512 (enc 32) */
        CHECK(r.p.sb.mn_major);
        CHECK_EQ_INT(desc_mode(r.p.sb.fixed), 2);
        CHECK_EQ_INT(desc_lbo(r.p.sb.fixed), 64);
        CHECK_EQ_INT(desc_sbo(r.p.sb.fixed), 32);
        CHECK(desc_reserved(r.p.sb.fixed) == 0);
        CHECK_EQ_INT(r.p.ksteps, 1);
    }
    plan_free(&r);
    /* K-major A with a 64-byte swizzle (32 f16); N-major B with 32 (16 f16). */
    r = plan("smem<64x32xf16, #nvmma_shared<swizzle = 64, order = [1, 0]>>",
             "smem<32x16xf16, #nvmma_shared<swizzle = 32, order = [1, 0]>>",
             "tile<64x16xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 16, 16]>>", 4);
    CHECK(r.ok);
    if (r.ok) {
        CHECK_EQ_INT(desc_mode(r.p.sa.fixed), 2);
        CHECK_EQ_INT(desc_lbo(r.p.sa.fixed), 1);
        CHECK_EQ_INT(desc_sbo(r.p.sa.fixed), 32);
        CHECK(r.p.sa.fixed == 0x8000002000010000ull);
        CHECK(r.p.sb.mn_major);
        CHECK_EQ_INT(desc_mode(r.p.sb.fixed), 3);
        CHECK_EQ_INT(desc_lbo(r.p.sb.fixed), 32 * 32 / 16); /* 32 rows of K x 32 B = 1024 */
        CHECK_EQ_INT(desc_sbo(r.p.sb.fixed), 16);
        CHECK(r.p.sb.fixed == 0xC000001000400000ull);
        /* A's k16 steps: 32 bytes, then the next 64-byte block after all 64 rows */
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sa, 0, 16), 32);
        /* 64-byte rows: rows 2k and 2k+1 share a phase */
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sa, 2, 0), 2 * 64 + 16);
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sa, 3, 16), 3 * 64 + (2 ^ 1) * 16);
    }
    plan_free(&r);
    /* M-major A (order [0, 1]): imm-trans-a 1; its 64 rows are one 128-byte
     * block, K rows LBO = 32 x 128 apart. B K-major, 32 f16 = 64 B. */
    r = plan("smem<64x32xf16, #nvmma_shared<swizzle = 128, order = [0, 1]>>",
             "smem<32x64xf16, #nvmma_shared<swizzle = 64, order = [0, 1]>>",
             "tile<64x64xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 64, 16]>>", 4);
    CHECK(r.ok);
    if (r.ok) {
        CHECK(r.p.sa.mn_major);
        CHECK(!r.p.sb.mn_major);
        CHECK_EQ_INT(desc_lbo(r.p.sa.fixed), 32 * 128 / 16);
        CHECK_EQ_INT(desc_sbo(r.p.sa.fixed), 64);
        CHECK_EQ_INT(tg_wgmma_byte_offset(&r.p.sa, 0, 16), 2 * 1024); /* a k16 step: two 8-row groups */
    }
    plan_free(&r);
}

/* A from registers: 4 fragment words per k step and m64 tile, the
 * m16n8k16 A fragment of warp 0's 16 rows (the other warps' rows are the
 * same registers in their threads). */
TEST(plan_register_a) {
    Plan r = plan("tile<64x32xf16, #dot_op<idx = 0, parent = #mma<version = 3, wpc = [4, 1], instr = [64, 64, 16]>, "
                  "kwidth = 2>>",
                  "smem<32x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
                  "tile<64x64xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 64, 16]>>", 4);
    CHECK(r.ok);
    if (!r.ok) {
        fprintf(stderr, "  why: %s\n", r.why ? r.why : "?");
        plan_free(&r);
        return;
    }
    CHECK(r.p.a_regs);
    CHECK_EQ_INT(r.p.ksteps, 2);
    CHECK_EQ_INT(check_acc(&r.p, 4, 0, 0), 1);
    int bad = 0;
    for (int ks = 0; ks < 2; ks++) {
        const int *ra = tg_frag_regs(&r.p.a, 0, ks);
        CHECK(ra != NULL);
        if (!ra)
            continue;
        for (int w = 0; w < 4; w++)
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < 8; i++) {
                    int64_t x[IR_MAX_RANK];
                    ll_apply(&r.p.la, ra[i], l, w, x);
                    bad += x[0] != 16 * w + l / 4 + 8 * ((i / 2) % 2) ||
                           x[1] != 16 * ks + 2 * (l % 4) + (i & 1) + 8 * (i >= 4);
                }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(tg_frag_regs(&r.p.a, 1, 0) == NULL); /* rows 16..31: warp 1's, as seen from warp 0 */
    plan_free(&r);
}

/* What does not fit wgmma: tg_wgmma_plan says why. */
TEST(plan_rejects) {
    static const struct {
        const char *a, *b, *c;
        int warps;
    } bad[] = {
        /* A's 16 f16 rows are 32 bytes: not whole 128-byte swizzled rows. */
        {"smem<64x16xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
         "smem<16x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
         "tile<64x64xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 64, 16]>>", 4},
        /* N-major B whose instruction covers 32 f16 = 64 bytes of a 128-byte swizzled row. */
        {"smem<64x16xf16, #nvmma_shared<swizzle = 32, order = [1, 0]>>",
         "smem<16x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
         "tile<64x64xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 32, 16]>>", 4},
        /* An mma.sync accumulator. */
        {"smem<64x16xf16, #nvmma_shared<swizzle = 32, order = [1, 0]>>",
         "smem<16x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
         "tile<64x64xf32, #mma<version = 2, wpc = [4, 1], instr = [16, 8, 16]>>", 4},
        /* Warps that do not multiply to num_warps. */
        {"smem<64x16xf16, #nvmma_shared<swizzle = 32, order = [1, 0]>>",
         "smem<16x64xf16, #nvmma_shared<swizzle = 128, order = [1, 0]>>",
         "tile<64x64xf32, #mma<version = 3, wpc = [4, 1], instr = [64, 64, 16]>>", 8},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Plan r = plan(bad[i].a, bad[i].b, bad[i].c, bad[i].warps);
        CHECK(!r.ok);
        CHECK(r.why != NULL);
        plan_free(&r);
    }
}

UNIT_SUITE(wgmma, swizzle_choice, plan_128x128x64, plan_two_warpgroups_m, plan_two_warpgroups_n, plan_bf16_k_major_b,
           descriptor_modes, plan_register_a, plan_rejects)
