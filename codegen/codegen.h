/*
 * codegen.h — from tile IR with layouts to LLVM IR and PTX. The target
 * model it shares with the passes (scratch sizes, register counts, the
 * tensor-core fragments) is target/target.h.
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
 * then the largest op's scratch (tg_kernel_shared_bytes).
 */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include "ir/ir.h"
#include "target/target.h"

typedef struct CgStats CgStats;


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
bool cg_compile_module(IrModule *m, const TgTarget *t, CgEmit emit, Buf *out, DiagList *diags,
                       CgStats *stats);

#endif
