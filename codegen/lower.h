/*
 * lower.h — internals shared by the files of the lowering to LLVM IR
 * (lower.c, lower_math.c, lower_memory.c, lower_layout.c, lower_reduce.c, lower_scan.c,
 * lower_shared.c, lower_dot.c, lower_debug.c). Not part of codegen.h: nothing outside codegen/ uses these.
 *
 * The model: every IR value becomes a CgVal, an array of LLVM values. A
 * scalar has one, the same in every thread (scalars are uniform: they come
 * from parameters, program ids, constants and reductions to a scalar; the
 * exception is a scan's combine region, lowered per combination). A tile
 * has one per register of its LinearLayout: register r of the thread (lane,
 * warp) holds the element at ll_apply(ll, r, lane, warp). Every op is lowered
 * register by register from that map; nothing below looks at layout kinds.
 */
#ifndef TILEC_CODEGEN_LOWER_H
#define TILEC_CODEGEN_LOWER_H

#include "codegen.h"

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

/* The alignment in bytes of the dynamic shared memory (`global_smem`), which
 * every buffer's offset is relative to: addresses of swizzled buffers rely on
 * it (lower_shared.c). */
#define CG_SMEM_ALIGN 1024

typedef struct CgVal CgVal;
typedef struct CgThreadMap CgThreadMap;
typedef struct Cg Cg;
typedef struct CgLineInfo CgLineInfo;

/* The lowered form of an IR value. */
struct CgVal {
    int n;                  /* registers: 1 for a scalar */
    LLVMValueRef *v;        /* n values of the element's LLVM type */
    const LinearLayout *ll; /* a tile's layout; NULL for a scalar */
};

/* Per distinct LinearLayout, the thread-dependent part of every coordinate,
 * computed once in the kernel's entry block (so it dominates every use). */
struct CgThreadMap {
    LinearLayout ll;
    LLVMValueRef coord[IR_MAX_RANK]; /* lane and warp contribution per dim (i32), or NULL until needed */
    int64_t bits[IR_MAX_RANK];       /* OR of every lane and warp basis per dim */
    LLVMValueRef owner;              /* i1: not a broadcast copy (NULL until needed) */
    CgThreadMap *next;
};

/* A thread-dependent offset computed once in the entry block: see
 * cg_thread_offset. */
typedef struct CgOffsetMemo CgOffsetMemo;
struct CgOffsetMemo {
    int64_t off[2][LL_MAX_BITS];
    bool xor;
    LLVMValueRef v;
    CgOffsetMemo *next;
};

/* One kernel being lowered. */
struct Cg {
    IrModule *m;
    IrFunc *f;
    const TgTarget *target;
    DiagList *diags;
    Arena arena; /* CgVals, maps; freed after the kernel */
    int num_warps;

    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;       /* where ops are lowered */
    LLVMBuilderRef entry_b; /* before the entry block's terminator: thread-invariant values */
    LLVMValueRef fn;
    LLVMValueRef tid, lane, warp; /* i32 */
    /* warp specialization: the threads a `barrier` synchronizes (0: all of
     * the program's, bar.sync 0; else named barrier 1 of that many), and the
     * thread that issues the one-thread ops (mbarrier set-up, TMA copies) */
    int barrier_threads;
    int issuer;
    LLVMValueRef smem;            /* @global_smem, the dynamic shared memory */
    LLVMValueRef smem_window;     /* its shared-window address (i32), or NULL until wgmma needs it */

    IrMap vals; /* IrValue* -> CgVal* */
    IrMap lls;  /* const IrType* -> LinearLayout* */
    IrMap used; /* IrValue* -> (void *)1 when some op uses it */
    CgThreadMap *thread_maps;
    CgOffsetMemo *offset_memos;
    int loop_regs; /* 32-bit registers per thread the kernel's loops carry at most; -1 until computed */
    CgLineInfo *line_info;    /* the module's line info (line_info.c), NULL without it */
    LLVMMetadataRef di_scope; /* the kernel's DISubprogram, with line info */

    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_gptr, t_sptr;
    bool failed;
};

/* ---- lower.c: values, types, coordinates, helpers ---- */

/* Reports an error at op's location (or the kernel's) and returns false. */
bool cg_error(Cg *cg, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
LLVMTypeRef cg_type(Cg *cg, const IrType *scalar);     /* LLVM type of a scalar IR type (ptr = addrspace 1) */
LLVMTypeRef cg_mem_type(Cg *cg, const IrType *scalar); /* as stored in memory: i1 -> i8 */
CgVal *cg_new_val(Cg *cg, int n, const LinearLayout *ll);
CgVal *cg_get(Cg *cg, const IrValue *v);
void cg_set(Cg *cg, const IrValue *v, CgVal *val);
bool cg_is_used(Cg *cg, const IrValue *v);
/* The LinearLayout of a tile type (NULL and an error at op if it has none). */
const LinearLayout *cg_ll(Cg *cg, const IrType *t, const IrOp *op);
/* Register i of v, a scalar broadcast to every register. */
LLVMValueRef cg_reg(const CgVal *v, int i);

LLVMValueRef cg_i32(Cg *cg, int64_t v);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
/* Coordinate `dim` of register `reg` of layout ll in this thread (i32). */
LLVMValueRef cg_coord(Cg *cg, const LinearLayout *ll, int reg, int dim);
/* The thread part of coordinate `dim` (lane and warp bases). */
LLVMValueRef cg_thread_coord(Cg *cg, const LinearLayout *ll, int dim);
/* i1: this thread is the first of its copies of ll's elements (lanes and
 * warps whose bases are zero hold copies; only the lowest of them owns). */
LLVMValueRef cg_owner(Cg *cg, const LinearLayout *ll);
/* Row-major linear index of the element at coordinates c (i32 each) of a
 * tile with this shape. */
LLVMValueRef cg_linear_index(Cg *cg, int rank, const int64_t *shape, LLVMValueRef *c);

/* Calls an LLVM intrinsic; overloaded ones take their types in `over`. */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int num_over, LLVMValueRef *args, int num_args);
/* cg_intrinsic for a warp-collective instruction (mma.sync, ldmatrix), whose
 * NVVM intrinsics LLVM 19 does not mark convergent: the call is, so that no
 * transformation moves it into or out of divergent control flow. */
LLVMValueRef cg_warp_intrinsic(Cg *cg, const char *name, LLVMTypeRef *over, int num_over, LLVMValueRef *args,
                               int num_args);
/* Inline PTX. ret may be void, one type, or a struct of outputs. */
LLVMValueRef cg_asm(Cg *cg, LLVMTypeRef ret, const char *text, const char *constraints, LLVMValueRef *args,
                    int num_args, bool side_effect);
/* lo and hi, f16 or bf16 values rounded from f32 (fptrunc), as one b32
 * word (lo in the low half) by one cvt.rn.{f16x2,bf16x2}.f32, which rounds
 * both and packs them: the same bits as two cvt.rn and a mov (LLVM 19 does
 * not fuse them). NULL when they are not such a pair. */
LLVMValueRef cg_convert_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi);
void cg_barrier(Cg *cg);
/* The XOR (xor) or sum (!xor) of off[in][k] over the set bits k of this
 * thread's lane (in 0) and warp (in 1): i32, in the entry block, once per
 * kernel for each distinct table. */
LLVMValueRef cg_thread_offset(Cg *cg, const int64_t off[2][LL_MAX_BITS], bool xor);
/* Stores g consecutive elements (vals[0 .. g-1], g a power of two, g * the
 * element size at most 16 bytes and the alignment of `offset`) as one access
 * at byte `offset` (i32) of the dynamic shared memory; loads likewise. */
void cg_smem_store_vec(Cg *cg, LLVMValueRef *vals, int g, const IrType *elem, LLVMValueRef offset);
void cg_smem_load_vec(Cg *cg, LLVMValueRef *out, int g, const IrType *elem, LLVMValueRef offset);
/* A pointer to byte `offset` (i32) of the dynamic shared memory. */
LLVMValueRef cg_smem_ptr(Cg *cg, LLVMValueRef offset);
/* Byte offset of op's scratch (its scratch_offset, default 0). */
int64_t cg_scratch_base(const IrOp *op);
/* May reduce op store its partials to its scratch without a barrier first?
 * True when every earlier access of those bytes is separated from it by a
 * barrier: a barrier op, or a cross-warp reduction on other bytes, between
 * them in its block, or, through a `for` body's back edge, in the rest of
 * the body and before the loop; and when nothing in the kernel comes
 * before it (lower_shared.c). */
bool cg_reduce_scratch_fenced(const IrOp *op, int num_warps);
/* offset + offset / interval * pad, on an i32 byte offset. */
LLVMValueRef cg_padded(Cg *cg, TgPadding p, LLVMValueRef offset);
/* Stores / loads one element of IR type elem at a byte offset of shared
 * memory (i1 as a byte). */
void cg_smem_store(Cg *cg, LLVMValueRef v, const IrType *elem, LLVMValueRef offset);
LLVMValueRef cg_smem_load(Cg *cg, const IrType *elem, LLVMValueRef offset);
/* Butterfly shuffle of any scalar value across lanes lane ^ mask. */
LLVMValueRef cg_shfl_xor(Cg *cg, LLVMValueRef v, int mask);
/* Sets `contract` on a floating-point instruction (so mul+add fuse). */
LLVMValueRef cg_contract(LLVMValueRef inst);
/* A new basic block at the end of the kernel. */
LLVMBasicBlockRef cg_block(Cg *cg, const char *name);
/* What is lowered after cg_begin_if and before cg_end_if runs where pred
 * holds: a block `name` entered on pred, and `name`.end after it (which
 * cg_begin_if returns for cg_end_if). */
LLVMBasicBlockRef cg_begin_if(Cg *cg, LLVMValueRef pred, const char *name);
void cg_end_if(Cg *cg, LLVMBasicBlockRef cont);
/* cg_begin_if for the issuing thread alone (thread 0, or the first producer
 * thread in a warp_specialize region), where pred holds (NULL: always). */
LLVMBasicBlockRef cg_begin_issuer(Cg *cg, LLVMValueRef pred, const char *name);

/* ---- line_info.c: .file/.loc directives (TgTarget.line_info) ---- */

#define CG_LINE_INFO_MAX_FILES 8

/* The debug metadata of a module being lowered. */
struct CgLineInfo {
    LLVMDIBuilderRef dib; /* NULL: no line info */
    LLVMMetadataRef cu;
    LLVMMetadataRef fn_type; /* void(), the type every kernel's DISubprogram gets */
    int num_files;           /* DIFiles, one per Source */
    const Source *srcs[CG_LINE_INFO_MAX_FILES];
    LLVMMetadataRef files[CG_LINE_INFO_MAX_FILES];
};

/* Starts the compile unit and the module flags of mod. */
void cg_line_info_begin(CgLineInfo *li, LLVMModuleRef mod, const IrModule *m);
/* Finalizes and frees the metadata builder; a no-op for one never begun. */
void cg_line_info_end(CgLineInfo *li);
/* With cg->line_info: the DISubprogram of cg->fn, and cg->b at the kernel's
 * line (what the entry block computes). */
void cg_line_info_kernel(Cg *cg);
/* Puts cg->b at op's location (unchanged for an op without one) and returns
 * the location it had, for the caller to restore after the op. */
LLVMMetadataRef cg_line_info_enter(Cg *cg, const IrOp *op);

/* ---- lower_math.c: elementwise ops, constants, casts ---- */

bool cg_lower_elementwise(Cg *cg, IrOp *op);
bool cg_lower_constant(Cg *cg, IrOp *op);
/* Scalar conversion with the IR's cast semantics. */
LLVMValueRef cg_cast(Cg *cg, LLVMValueRef v, const IrType *from, const IrType *to);
/* lower_fp8.c: n registers cast from `from` to `to`, one of them f8e4m3 or
 * f8e5m2 (held as i8); on sm_90 registers r and r + 1 share an instruction. */
void cg_fp8_cast(Cg *cg, const LLVMValueRef *in, LLVMValueRef *out, int n, const IrType *from, const IrType *to);
/* The 16 bits of one packed fp8 conversion when lo and hi are its two
 * bytes (lo the low one), else NULL: stores keep them together. */
LLVMValueRef cg_fp8_pair(Cg *cg, LLVMValueRef lo, LLVMValueRef hi);
/* a kind b for reduce kinds sum|max|min. */
LLVMValueRef cg_combine(Cg *cg, const char *kind, const IrType *elem, LLVMValueRef a, LLVMValueRef b);

/* ---- lower_memory.c: load, store, atomic ---- */

bool cg_lower_load(Cg *cg, IrOp *op);
/* The largest vector (elements) op's `vec` and the layout allow (1 for scalars). */
int cg_vec_width(const IrOp *op, const LinearLayout *ll, int eb);
/* One element from global memory; where pred (may be NULL) is false, other
 * (may be NULL: unspecified). */
LLVMValueRef cg_load_element(Cg *cg, LLVMValueRef ptr, const IrType *elem, LLVMValueRef pred, LLVMValueRef other);
bool cg_lower_store(Cg *cg, IrOp *op);
/* The pointers of the groups of v registers of pointer tile ptrs (layout ll):
 * out[r] for r = 0, v, 2v, ... Where the tile is affine in its coordinates
 * (lower_memory.c), each is the previous one plus a step, so that a loop
 * keeps one pointer per tile live instead of one per group. */
void cg_group_pointers(Cg *cg, const IrValue *ptrs, const LinearLayout *ll, int v, LLVMValueRef *out);
bool cg_lower_atomic(Cg *cg, IrOp *op);

/* ---- lower_layout.c: splat, arange, shape ops, convert_layout ---- */

bool cg_lower_shape(Cg *cg, IrOp *op);
bool cg_lower_arange(Cg *cg, IrOp *op);

/* ---- lower_reduce.c ---- */

bool cg_lower_reduce(Cg *cg, IrOp *op);
bool cg_lower_cluster_reduce(Cg *cg, IrOp *op);

/* ---- lower_scan.c ---- */

bool cg_lower_scan(Cg *cg, IrOp *op);
/* lower.c: the value op's combine region (a scan's) yields for its block
 * arguments bound to a and b, its ops lowered at the builder's position
 * (once per call); NULL after an error. */
LLVMValueRef cg_lower_combine(Cg *cg, IrOp *op, LLVMValueRef a, LLVMValueRef b);
/* lower_dot.c: warp_group_dot (wgmma) and warp_group_dot_wait */
bool cg_lower_warp_group_dot(Cg *cg, IrOp *op);
bool cg_lower_warp_group_dot_wait(Cg *cg, IrOp *op);

/* ---- lower_tma.c: mbarrier_*, async_tma_copy ---- */

bool cg_lower_tma(Cg *cg, IrOp *op);

/* ---- lower_shared.c: local_alloc, memdesc_index, local_load / local_store, async copies ---- */

bool cg_lower_shared(Cg *cg, IrOp *op);
/* A local_load whose only use is an mma dot later in its block, where
 * nothing in between may write its buffer, and that ldmatrix serves: it is
 * left unlowered, and the dot loads its registers with ldmatrix as each k
 * step needs them (interleaving loads and mma keeps register pressure low).
 * The dot finds no CgVal for such an operand (cg_deferred_begin). */
typedef struct CgDeferred CgDeferred;
bool cg_local_load_deferred(Cg *cg, const IrOp *op);
CgDeferred *cg_deferred_begin(Cg *cg, const IrOp *load);
/* Emits the ldmatrix that holds register `reg`, unless already loaded. */
void cg_deferred_need(Cg *cg, CgDeferred *d, int reg);
/* The registers, NULL where not loaded yet. */
CgVal *cg_deferred_val(CgDeferred *d);

/* ---- lower_dot.c ---- */

bool cg_lower_dot(Cg *cg, IrOp *op);

/* ---- lower_debug.c: print (vprintf) and assert (__assertfail) ---- */

bool cg_lower_print(Cg *cg, IrOp *op);
bool cg_lower_assert(Cg *cg, IrOp *op);

#endif
