/*
 * pipeline.c — the default pipeline, as a literal list.
 *
 * Read top to bottom, this is what `tilec` does to a kernel after the front
 * end: each line names a pass and what it may assume on entry. The pass
 * manager verifies the IR after each one (debug builds, --verify-each) and
 * prints it when asked (--print-after, --print-after-all). Later stages
 * (axis-info, assign-layouts, coalesce, accelerate-dot, ...) are added here
 * in the order DESIGN.md lists them.
 */
#include "passes.h"

bool pass_run_pipeline(IrModule *m, const PassOptions *opts) {
    return pass_run(m, "inline", opts)          /* verified module; funcs may call funcs, not recursively */
           && pass_run(m, "canonicalize", opts) /* no calls left: fold constants and constant control flow */
           && pass_run(m, "cse", opts)          /* canonical operand order, so commuted duplicates match */
           && pass_run(m, "dce", opts);         /* last: removes what folding and CSE left unused */
}
