/*
 * target.h — the target model: what the passes and the code generator must
 * agree on about the GPU, computed from the IR alone. Which targets exist and
 * their limits (target.c), how much scratch shared memory each op needs and
 * where each element goes in it, how many registers a value takes
 * (scratch.c), and which dots run on the tensor cores' mma.sync with which
 * fragments (mma.c). Below passes/ and codegen/, above ir/: the passes size
 * shared memory with exactly the functions the lowering uses to address it.
 */
#ifndef TILEC_TARGET_H
#define TILEC_TARGET_H

#include "ir/ir.h"

typedef struct TgTarget TgTarget;
typedef struct TgPadding TgPadding;

/* The GPU a compile is for, and the choices every layer reads for it: the
 * one record of the target and its defaults. The driver fills it once from
 * the public options (tc_target, tc_options) and hands it to the front end,
 * the passes (PassOptions.target) and the code generator; nothing below the
 * driver applies a default of its own. */
struct TgTarget {
    int sm;               /* 80 or 90 */
    bool arch_a;          /* sm_90a: wgmma, TMA */
    int num_warps;        /* warps per program of kernels without a num_warps attribute */
    int num_stages;       /* software pipelining depth of kernels without a num_stages attribute */
    int threads_per_warp; /* 32 on NVIDIA */
    bool llvm_o3;         /* LLVM's default<O3> and -O3 instruction selection instead of tilec's pipeline */
    bool warp_specialize; /* producer warps for TMA-fed loops of kernels without a warp_specialize attribute */
    bool persistent;      /* kernels without a persistent attribute run their grid as a tile loop (pass persistent) */
    bool line_info;       /* codegen: .file/.loc directives naming the source (tilec -g) */
};

/* ==== target.c: the targets ==== */

/* The defaults (tilec.h's TC_DEFAULT_*) on `arch`; false, *t untouched, if
 * arch is not one of sm_80, sm_90, sm_90a (NULL: TC_DEFAULT_ARCH). */
bool tg_target_init(TgTarget *t, const char *arch);
/* num_warps and num_stages as the public options give them: 0 keeps the
 * default. */
void tg_target_set_options(TgTarget *t, int num_warps, int num_stages, bool llvm_o3);

/* ==== scratch.c: shared-memory scratch each op needs (used by allocate-shared) ==== */

/*
 * Bytes of scratch shared memory `op` needs while it executes (0 if none),
 * rounded up to 16. The formulas (T = element bytes, 1 for i1, 8 for
 * pointers; pad(...) below):
 *
 *   reduce          with w warp bits along the axis: 2^w * (elements of the
 *                   result) * T; 0 when no warp moves along the axis;
 *                   argmax and argmin add as many i32 indices after the
 *                   values (from the values' bytes rounded up to 16)
 *   scan            with a warp bit along the axis: warp_slots of its plan
 *                   (tg_scan_plan) * 32 * num_warps * T, at most
 *                   TG_SCAN_SCRATCH_BYTES unless one slot is more; else 0
 *   convert_layout, the same with shape ops (broadcast, expand_dims,
 *   reshape, trans) 0 when every thread already holds the elements it needs
 *                   (a register permutation); else pad(operand's bytes) with
 *                   rows of the operand's last dimension and the pad of
 *                   tg_exchange_padding
 *   dot             0 on tensor cores (tg_dot_uses_mma); else (FMA):
 *                   pad(K x M of A) rounded to 16 + pad(K x N of B)
 *   atomic          scalar pointer: T; tile whose layout has copies (a lane
 *                   or warp basis of zero): elements * T; else 0
 *
 * pad(bytes, row) = bytes + (bytes / interval) * pad, with interval =
 * max(128, row bytes) and pad = max(4, T) (tg_scratch_padding).
 */
int64_t tg_scratch_bytes(const IrOp *op, int num_warps);
/* The largest scratch of op and of the ops nested in its regions. */
int64_t tg_largest_scratch(const IrOp *op, int num_warps);
/* In a reduce's scratch across warps, where an argmax / argmin keeps its
 * i32 indices: after the `partials` values of `value_bytes` each, rounded
 * up to 16 bytes. */
int64_t tg_reduce_index_offset(int64_t partials, int value_bytes);

/*
 * How a scan along `axis` walks a distributed layout (codegen/lower_scan.c):
 * step j, for each bit j of the axis coordinate from the lowest, combines
 * the aligned blocks of 2^j elements that bit j tells apart; the basis that
 * flips exactly that bit (a register, lane or warp bit) says where the
 * partner block is. A warp step goes through scratch: each thread stores
 * the block totals of its registers then (registers whose axis bits done so
 * far are clear; the most at the first warp step), warp_slots of them at a
 * time, so that the scratch stays within TG_SCAN_SCRATCH_BYTES (a thread
 * with more totals exchanges them in several rounds).
 */
#define TG_MAX_SCAN_STEPS 32
#define TG_SCAN_SCRATCH_BYTES 16384
typedef struct TgScanPlan {
    int steps;                     /* log2 of the axis extent */
    int in[TG_MAX_SCAN_STEPS];     /* step j: LL_REG, LL_LANE or LL_WARP */
    int bit[TG_MAX_SCAN_STEPS];    /* ... and which bit of it flips axis bit j */
    int warp_slots;                /* values a thread stores in one round of a warp step; 0 without one */
} TgScanPlan;
/* The plan for elements of elem_bytes with num_warps warps; false (with
 * *why) when some basis that moves the axis moves another dimension too, or
 * more than one bit of it. */
bool tg_scan_plan(const LinearLayout *ll, int axis, int num_warps, int elem_bytes, TgScanPlan *out,
                  const char **why);

/* 32-bit registers per thread that a value of type t takes with num_warps
 * warps, its elements spread evenly (a tile's elements * bits / 32 over the
 * threads, rounded up); 1 for a scalar. The register estimates of
 * stage-shared (reloading operands) and codegen (ldmatrix address form). */
int64_t tg_value_regs(const IrType *t, int num_warps);


/*
 * The padding of a tile stored row-major in scratch memory: `pad` bytes are
 * skipped after every `interval` bytes. interval = max(128, row bytes), so a
 * column walk over rows of >= 128 bytes steps one bank further per row, and a
 * walk with a power-of-two stride over short rows steps one bank further per
 * 32 words: both are free of bank conflicts where plain row-major storage
 * would put every access in one bank.
 */
struct TgPadding {
    int64_t interval; /* bytes between pads (a power of two >= 128) */
    int64_t pad;      /* bytes skipped (max(4, element bytes)) */
};
TgPadding tg_scratch_padding(int64_t row_bytes, int elem_bytes);
int64_t tg_padded_offset(TgPadding p, int64_t offset); /* offset + offset / interval * pad */
/* The padding of a whole tile of type t stored row-major (rows of its last
 * dimension; 1-D tiles in rows of 128 bytes). */
TgPadding tg_tile_padding(const IrType *t);

/*
 * The scratch offsets of one side of an exchange (a shape op or
 * convert_layout through scratch) as a sum: when the byte offsets
 * (row-major, before padding) of the layout's register, lane and warp bases
 * have no bit in common, the offset of any element is the OR, that is the
 * sum, of its bases' offsets, and padding (x + (x >> k) * pad) keeps the sum,
 * bit fields being disjoint. Then element r of thread t is at T(t) + R(r):
 * T computed once per kernel, R a constant, and runs of registers whose
 * offsets step by one element become one vector access (`group` registers,
 * at most 16 bytes). Swizzled or otherwise overlapping maps take the
 * per-element path (tg_scratch_sum returns false).
 */
typedef struct TgScratchSum {
    int64_t reg[LL_MAX_BITS];       /* padded byte offset of each register basis */
    int64_t thread[2][LL_MAX_BITS]; /* and of each lane and warp basis */
    int group;                      /* registers per access */
} TgScratchSum;
/* The store side (result false: ll = from, in the operand's coordinates) or
 * the load side (result true: ll = the result's layout, mapped back to the
 * operand's coordinates by op) of op's exchange, with padding `pad`. */
bool tg_scratch_sum(const IrOp *op, const LinearLayout *from, const LinearLayout *ll, bool result, int eb,
                    TgPadding pad, int num_regs, const IrType *elem, TgScratchSum *out);
/* Where each operand coordinate (in from's shape) of a shape op comes from:
 * result coordinate src[d], or -1 (0) for broadcast dimensions. Reshape is
 * handled by the callers (row-major order is what it keeps). */
void tg_operand_dims(const IrOp *op, const LinearLayout *from, const LinearLayout *to, int *src);
/* The padding of op's exchange from layout `from` to `to`: the tile's
 * (tg_tile_padding), unless a wider pad (8 or 16 bytes) lets both sides run
 * with fewer shared-memory wavefronts (see scratch.c). */
TgPadding tg_exchange_padding(const IrOp *op, const LinearLayout *from, const LinearLayout *to);

/* The rank-matched view of a shape op's (convert_layout, broadcast,
 * expand_dims, reshape, trans) operand layout `from`, in the coordinates of
 * its result: *view has the result's rank, and keep[d] is false for the
 * dimensions a broadcast widens. Reshape compares both as 1-D row-major
 * layouts (*to_view replaces the result's layout; else *to_view = *to). */
void tg_shape_op_views(const IrOp *op, const LinearLayout *from, const LinearLayout *to, LinearLayout *view,
                       LinearLayout *to_view, bool *keep);

/* Dynamic shared memory a kernel needs: max(shared_size attribute, over every
 * op with scratch: scratch_offset (default 0) + tg_scratch_bytes). */
int64_t tg_kernel_shared_bytes(const IrFunc *f, int num_warps);

/* num_warps of a kernel (its attribute, else dflt). */
int tg_kernel_num_warps(const IrFunc *f, int dflt);
/* The warps a launch of kernel f runs: its num_warps and its producer_warps
 * (warp specialization). */
int tg_kernel_launch_warps(const IrFunc *f, int dflt);

/* ==== mma.c: the tensor cores' mma.sync fragments ==== */

/* True when this dot lowers to mma.sync: an #mma (version 2) result, #dot_op
 * operands whose LinearLayouts are the instruction's fragments (f16, bf16:
 * m16n8k16, kwidth 2; f32: tf32 m16n8k8, kwidth 1). Such a dot needs no
 * scratch; every other dot takes the FMA path through scratch. */
bool tg_dot_uses_mma(const IrOp *op, int num_warps);

/* Shared memory a program may use on the target (163 KB on sm_80, 227 KB
 * on sm_90). */
int64_t tg_shared_limit(const TgTarget *t);
/* "sm_80", "sm_90", "sm_90a". */
const char *tg_target_cpu(const TgTarget *t);
/* "+ptx70" (sm_80), "+ptx78" (sm_90), "+ptx80" (sm_90a): the lowest PTX ISA
 * version each target needs. */
const char *tg_target_features(const TgTarget *t);


/* Everything the mma lowering needs, decided from types alone (so that
 * scratch sizes and the lowering always agree): the operands' and the
 * result's linear layouts, where each of the thread's registers sits in the
 * instruction fragments, the k steps, and the NVVM intrinsic. */
typedef struct TgFragment TgFragment;
typedef struct {
    const TgFragment *fr;
    int elems;    /* fragment elements per lane */
    int tiles[2]; /* instruction tiles of the whole tile along each dim */
    int *reg;     /* (t0 * tiles[1] + t1) * elems + i: the register of element i of tile (t0, t1), or -1 */
} TgFragTable;
typedef struct {
    LinearLayout la, lb, lc;
    TgFragTable a, b, c;
    int ksteps;            /* K / instruction k */
    const char *intrinsic; /* the NVVM intrinsic of the mma.sync instruction */
} TgMmaPlan;
/* Table entries a dot of these types needs at most (0: not a 2-D dot). */
int tg_mma_plan_cap(const IrOp *op);
/* Fills *p (tables in `storage`, 3 * cap ints) when op can run on mma.sync. */
bool tg_mma_plan(const IrOp *op, int num_warps, TgMmaPlan *p, int *storage, int cap);
/* The registers of instruction tile (t0, t1), or NULL when the thread does
 * not hold all of its fragment. */
const int *tg_frag_regs(const TgFragTable *t, int t0, int t1);
/* The table of mma.sync's m16n8k16 A fragment (16-bit elements) for a
 * layout, as tg_mma_plan builds it; false when the layout does not fit. */
bool tg_frag_table_a16(const LinearLayout *ll, TgFragTable *t, int *storage, int cap);

/* ==== wgmma.c: Hopper's warpgroup MMA (docs/hopper.md) ==== */

/* The swizzle of an #nvmma_shared buffer whose swizzled rows may be `bytes`
 * long: the largest of 128, 64, 32 that divides it, else 0 (none fits). */
int tg_nvmma_swizzle(int64_t bytes);

/* One shared-memory operand of wgmma: how its matrix descriptor is built. */
typedef struct {
    bool mn_major;    /* the operand's contiguous dimension is M (A) or N (B): imm-trans 1 */
    int swizzle;      /* bytes: 32, 64, 128 */
    uint64_t fixed;   /* every descriptor field but the start address: LBO, SBO, swizzle mode */
    int64_t shape[2]; /* the buffer's (one stage's) shape */
    const Layout *layout;
    int elem_bytes;
} TgWgmmaOperand;

typedef struct {
    int n;                  /* instruction n: m64 nN k16 */
    int ksteps;             /* K / 16 */
    int tiles_m, tiles_n;   /* instruction tiles of the result: M / 64, N / n */
    int *acc;               /* (tm * tiles_n + tn) * n / 2 + i: the register of d_i of tile (tm, tn), or -1 */
    bool a_regs;            /* A from registers (#dot_op) */
    TgFragTable a;          /* then: its m16n8k16 fragments (16-row tiles) */
    TgWgmmaOperand sa, sb;  /* shared-memory operands (sa unless a_regs) */
    LinearLayout lc, la;
    const char *dtype;      /* "f16" or "bf16" */
} TgWgmmaPlan;

/* Table entries a warp_group_dot needs at most. */
int tg_wgmma_plan_cap(const IrOp *op);
/* Fills *p (tables in `storage`, 2 * cap ints) when op is a warp_group_dot
 * whose layouts fit wgmma; else false and *why says what does not. */
bool tg_wgmma_plan(const IrOp *op, int num_warps, TgWgmmaPlan *p, int *storage, int cap, const char **why);
/* The byte offset of element (r, c) in a shared-memory operand. */
int64_t tg_wgmma_byte_offset(const TgWgmmaOperand *o, int64_t r, int64_t c);
/* The 64-bit matrix descriptor of a shared operand whose (r, c) element
 * lies at shared-window byte address `addr` (constant part; codegen adds
 * the run-time start address the same way: (addr & 0x3FFFF) >> 4). */
uint64_t tg_wgmma_desc(const TgWgmmaOperand *o, uint32_t addr);

#endif
