/*
 * pass_list.c — the default pass lists, literally.
 *
 * Read top to bottom, this is what `tilec` does to a kernel after the front
 * end: each line names a pass and what it may assume on entry. The pass
 * manager verifies the IR after each one (debug builds, --verify-each) and
 * prints it when asked (--print-after, --print-after-all).
 *
 * drv_run_cleanup_passes is the target-independent clean-up (`--emit=ir`);
 * drv_run_gpu_passes continues with the GPU stages in the order and for
 * the reasons docs/design.md ("Pass order") gives, which is Triton's order
 * (docs/passes.md, "Triton's order"): layouts for memory,
 * then tensor cores, layouts again around them, then shared memory
 * (`--emit=ir-gpu`, and everything codegen compiles). The software
 * pipeliner goes right after stage-shared, which makes the local_allocs
 * it turns into rings of asynchronous copies.
 */
#include "driver/driver.h"

bool drv_run_cleanup_passes(IrModule *m, const PassOptions *opts) {
    return pass_run(m, "inline", opts)          /* verified module; funcs may call funcs, not recursively */
           && pass_run(m, "canonicalize", opts) /* no calls left: fold constants and constant control flow */
           && pass_run(m, "cse", opts)          /* canonical operand order, so commuted duplicates match */
           && pass_run(m, "dce", opts);         /* last: removes what folding and CSE left unused */
}

bool drv_run_gpu_passes(IrModule *m, const PassOptions *opts) {
    return drv_run_cleanup_passes(m, opts)                        /* clean, inlined, no layouts yet */
           && pass_run(m, "assign-layouts", opts)            /* every tile gets a default #blocked or #slice layout */
           && pass_run(m, "coalesce", opts)                  /* memory accesses get coalesced layouts and `vec` */
           && pass_run(m, "remove-layout-conversions", opts) /* the kernel moves into the accesses' layouts */
           && pass_run(m, "accelerate-dot", opts)            /* dots on tensor cores: #mma results, #dot_op operands */
           && pass_run(m, "remove-layout-conversions", opts) /* the dots' users move into #mma and its slices */
           && pass_run(m, "stage-shared", opts)              /* dot operands not already in registers: via shared memory */
           && pass_run(m, "persistent", opts)                /* asked for: the grid as a loop over tiles in resident programs */
           && pass_run(m, "pipeline", opts)                  /* loads feeding those buffers: cp.async rings, num_stages deep */
           && pass_run(m, "overlap-dots", opts)              /* consumer loops: P V of block i - 1 under the softmax of block i */
           && pass_run(m, "pingpong", opts)                  /* warp-specialized dot chains: warpgroups take turns */
           && pass_run(m, "tma-store", opts)                 /* tile atomic adds: TMA reductions from shared memory */
           && pass_run(m, "async-dots", opts)                /* dots in flight under independent work (no producer) */
           && pass_run(m, "canonicalize", opts)              /* fold what the layout rewrites exposed */
           && pass_run(m, "cse", opts)                       /* merge recomputed index math */
           && pass_run(m, "dce", opts)                       /* drop the layouts' leftovers */
           && pass_run(m, "allocate-shared", opts);          /* last: buffer and scratch sizes depend on final layouts */
}
