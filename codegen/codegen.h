/*
 * codegen.h — from tile IR with layouts to LLVM IR and PTX, and the compile
 * driver behind include/tilec/tilec.h (compile.c).
 *
 * Contract with the passes: codegen lowers exactly what the IR says. Every
 * tile value has a distributed layout; every load, store and atomic carries
 * `vec` (elements per memory access, proven contiguous and aligned by the
 * coalesce pass; absent = 1); ops that need scratch shared memory (cross-warp
 * reductions, conversions through shared memory, FMA dots, atomics whose old
 * value must reach broadcast copies) carry `scratch_offset` set by
 * allocate-shared, and the kernel carries `shared_size` (bytes of dynamic
 * shared memory) and `num_warps`.
 *
 * Hand-written IR may leave out `scratch_offset` and `shared_size`: every
 * op that uses scratch brackets it with barriers (one before it writes, one
 * between its writes and its reads), so scratch of different ops never needs
 * to be live at once and offset 0 is always correct; the kernel's size is
 * then the largest op's scratch (cg_kernel_shared_bytes).
 */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include "ir/ir.h"

typedef struct CgTarget CgTarget;
typedef struct CgKernelInfo CgKernelInfo;
typedef struct CgPadding CgPadding;
typedef struct CgStats CgStats;

struct CgTarget {
    int sm;      /* 80 or 90 */
    bool arch_a; /* sm_90a */
    bool llvm_o3; /* LLVM's default<O3> and -O3 instruction selection instead of tilec's pipeline */
};

/* What a launcher needs to know about a compiled kernel. */
struct CgKernelInfo {
    const char *name;     /* the PTX entry name */
    int num_warps;        /* threads per program = 32 * num_warps */
    int64_t shared_bytes; /* dynamic shared memory per program */
    int num_params;
    const IrType **param_types; /* ptr<T> or scalars, in order */
    const char **param_names;
};

/* ==== scratch.c: shared-memory scratch each op needs (used by allocate-shared) ==== */

/*
 * Bytes of scratch shared memory `op` needs while it executes (0 if none),
 * rounded up to 16. The formulas (T = element bytes, 1 for i1, 8 for
 * pointers; pad(...) below):
 *
 *   reduce          with w warp bits along the axis: 2^w * (elements of the
 *                   result) * T; 0 when no warp moves along the axis
 *   convert_layout, the same with shape ops (broadcast, expand_dims,
 *   reshape, trans) 0 when every thread already holds the elements it needs
 *                   (a register permutation); else pad(operand's bytes) with
 *                   rows of the operand's last dimension and the pad of
 *                   cg_exchange_padding
 *   dot             0 on tensor cores (cg_dot_uses_mma); else (FMA):
 *                   pad(K x M of A) rounded to 16 + pad(K x N of B)
 *   atomic          scalar pointer: T; tile whose layout has copies (a lane
 *                   or warp basis of zero): elements * T; else 0
 *
 * pad(bytes, row) = bytes + (bytes / interval) * pad, with interval =
 * max(128, row bytes) and pad = max(4, T) (cg_scratch_padding).
 */
int64_t cg_scratch_bytes(const IrOp *op, int num_warps);

/* 32-bit registers per thread that a value of type t takes with num_warps
 * warps, its elements spread evenly (a tile's elements * bits / 32 over the
 * threads, rounded up); 1 for a scalar. The register estimates of
 * stage-shared (reloading operands) and codegen (ldmatrix address form). */
int64_t cg_value_regs(const IrType *t, int num_warps);

/* Bytes of one element of this scalar type in scratch memory. */
int cg_elem_bytes(const IrType *scalar);

/*
 * The padding of a tile stored row-major in scratch memory: `pad` bytes are
 * skipped after every `interval` bytes. interval = max(128, row bytes), so a
 * column walk over rows of >= 128 bytes steps one bank further per row, and a
 * walk with a power-of-two stride over short rows steps one bank further per
 * 32 words: both are free of bank conflicts where plain row-major storage
 * would put every access in one bank.
 */
struct CgPadding {
    int64_t interval; /* bytes between pads (a power of two >= 128) */
    int64_t pad;      /* bytes skipped (max(4, element bytes)) */
};
CgPadding cg_scratch_padding(int64_t row_bytes, int elem_bytes);
int64_t cg_padded_offset(CgPadding p, int64_t offset); /* offset + offset / interval * pad */
/* The padding of a whole tile of type t stored row-major (rows of its last
 * dimension; 1-D tiles in rows of 128 bytes). */
CgPadding cg_tile_padding(const IrType *t);

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
 * per-element path (cg_scratch_sum returns false).
 */
typedef struct CgScratchSum {
    int64_t reg[LL_MAX_BITS];       /* padded byte offset of each register basis */
    int64_t thread[2][LL_MAX_BITS]; /* and of each lane and warp basis */
    int group;                      /* registers per access */
} CgScratchSum;
/* The store side (result false: ll = from, in the operand's coordinates) or
 * the load side (result true: ll = the result's layout, mapped back to the
 * operand's coordinates by op) of op's exchange, with padding `pad`. */
bool cg_scratch_sum(const IrOp *op, const LinearLayout *from, const LinearLayout *ll, bool result, int eb,
                    CgPadding pad, int num_regs, const IrType *elem, CgScratchSum *out);
/* Where each operand coordinate (in from's shape) of a shape op comes from:
 * result coordinate src[d], or -1 (0) for broadcast dimensions. Reshape is
 * handled by the callers (row-major order is what it keeps). */
void cg_operand_dims(const IrOp *op, const LinearLayout *from, const LinearLayout *to, int *src);
/* The padding of op's exchange from layout `from` to `to`: the tile's
 * (cg_tile_padding), unless a wider pad (8 or 16 bytes) lets both sides run
 * with fewer shared-memory wavefronts (see scratch.c). */
CgPadding cg_exchange_padding(const IrOp *op, const LinearLayout *from, const LinearLayout *to);

/* The rank-matched view of a shape op's (convert_layout, broadcast,
 * expand_dims, reshape, trans) operand layout `from`, in the coordinates of
 * its result: *view has the result's rank, and keep[d] is false for the
 * dimensions a broadcast widens. Reshape compares both as 1-D row-major
 * layouts (*to_view replaces the result's layout; else *to_view = *to). */
void cg_shape_op_views(const IrOp *op, const LinearLayout *from, const LinearLayout *to, LinearLayout *view,
                       LinearLayout *to_view, bool *keep);

/* Dynamic shared memory a kernel needs: max(shared_size attribute, over every
 * op with scratch: scratch_offset (default 0) + cg_scratch_bytes). */
int64_t cg_kernel_shared_bytes(const IrFunc *f, int num_warps);

/* num_warps of a kernel (its attribute, else dflt). */
int cg_kernel_num_warps(const IrFunc *f, int dflt);

/* ==== lower_dot.c ==== */

/* True when this dot lowers to mma.sync: an #mma (version 2) result, #dot_op
 * operands whose LinearLayouts are the instruction's fragments (f16, bf16:
 * m16n8k16, kwidth 2; f32: tf32 m16n8k8, kwidth 1). Such a dot needs no
 * scratch; every other dot takes the FMA path through scratch. */
bool cg_dot_uses_mma(const IrOp *op, int num_warps);

/* ==== target.c: NVPTX target, LLVM optimization, PTX emission ==== */

/* Shared memory a program may use on the target (163 KB on sm_80, 227 KB
 * on sm_90). */
int64_t cg_shared_limit(const CgTarget *t);
/* "sm_80", "sm_90", "sm_90a". */
const char *cg_target_cpu(const CgTarget *t);
/* "+ptx70" (sm_80), "+ptx78" (sm_90), "+ptx80" (sm_90a): the lowest PTX ISA
 * version each target needs. */
const char *cg_target_features(const CgTarget *t);

/* ==== lower.c: the lowering of a module, and the driver entry point ==== */

typedef enum {
    CG_EMIT_LLVM, /* LLVM IR text after -O3 */
    CG_EMIT_PTX,  /* PTX assembly */
} CgEmit;

/* Time spent, for --time and tests (milliseconds). */
struct CgStats {
    double lower_ms; /* tile IR -> LLVM IR */
    double opt_ms;   /* LLVM's optimization pipeline */
    double emit_ms;  /* NVPTX instruction selection and printing */
};

/* Lowers every kernel of m (funcs must have been inlined) and appends the
 * requested text to out. Errors are reported at op locations (user-facing:
 * shared memory over the target's limit; internal: IR the passes should not
 * have produced) and return false. stats may be NULL. */
bool cg_compile_module(IrModule *m, const CgTarget *t, CgEmit emit, int default_num_warps, Buf *out, DiagList *diags,
                       CgStats *stats);

/* The launch metadata of every kernel of m, in order, allocated in m's arena. */
CgKernelInfo *cg_kernel_infos(IrModule *m, int default_num_warps, int *count);

#endif
