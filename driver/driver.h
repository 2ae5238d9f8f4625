/*
 * driver.h — the compile driver's internals: the pass lists that tc_compile
 * and tc_opt run (pass_list.c). The driver sits above the compiler's layers
 * (frontend, passes, codegen) and below the runtime: docs/design.md.
 */
#ifndef TILEC_DRIVER_H
#define TILEC_DRIVER_H

#include "passes/passes.h"

/* The generic clean-up (inline, canonicalize, cse, dce): what --emit=ir shows. */
bool drv_run_cleanup_passes(IrModule *m, const PassOptions *opts);
/* The whole list for codegen: the clean-up, then layouts (assign, coalesce,
 * remove conversions), tensor cores, shared-memory staging, software
 * pipelining, clean-up, and shared-memory allocation. Afterwards every tile
 * has a distributed layout, memory ops carry `vec`, scratch ops
 * `scratch_offset`, kernels `num_warps` and `shared_size`. */
bool drv_run_gpu_passes(IrModule *m, const PassOptions *opts);

/* How many times this process's compiles (tc_compile, tc_list_kernels;
 * driver/compile.c) have parsed a source and lowered it to IR: what the tests read
 * to see that a JIT miss runs the front end once. */
typedef struct RtFrontendRuns {
    size_t parses, lowers;
} RtFrontendRuns;
RtFrontendRuns rt_frontend_runs(void);

#endif
