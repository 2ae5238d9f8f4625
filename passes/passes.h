/*
 * passes.h — the pass library: every transformation of the tile IR, the
 * registry that finds passes by name, and the default pipeline.
 *
 * A pass is one function in one file, `bool pass_xxx(IrModule *, const
 * PassOptions *)`, listed once in passes.def. It rewrites the module in place
 * and returns false after reporting errors to opts->diags (diagnostics carry
 * op locations); a pass that fails leaves the module in an unspecified but
 * freeable state. Passes allocate only from the module's arena and never
 * call free().
 *
 * The pass manager (pass_manager.c) runs passes by name, dumps the IR after
 * the ones asked for (--print-after, --print-after-all), times them
 * (--time-passes), and runs the verifier after each one in debug builds and
 * under --verify-each. pipeline.c holds the default pipeline as a literal
 * list.
 */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "ir/ir.h"

typedef struct PassOptions PassOptions;
typedef struct PassInfo PassInfo;
typedef bool (*PassFn)(IrModule *m, const PassOptions *opts);

struct PassOptions {
    DiagList *diags;         /* where passes report errors (required) */
    bool verify_each;        /* ir_verify after every pass (always on without NDEBUG) */
    const char *print_after; /* comma-separated pass names to dump the IR after, or NULL */
    bool print_after_all;    /* dump the IR after every pass */
    Buf *print_out;          /* where dumps and timings go; NULL = stderr */
    bool time_passes;        /* report each pass's wall time to print_out */
    int num_warps;           /* warps per CTA for kernels without a num_warps attribute */
    int threads_per_warp;    /* 32 on NVIDIA */
    int num_stages;          /* software pipelining depth */
    int sm;                  /* target compute capability: 80, 90 (90a is sm = 90, sm_arch_a) */
    bool sm_arch_a;          /* sm_90a features (wgmma, TMA) */
};

/* Defaults: no dumps, 4 warps of 32 threads, 3 stages, sm_80. */
void pass_options_init(PassOptions *opts, DiagList *diags);

struct PassInfo {
    const char *name;    /* as written in --pass= lists */
    PassFn fn;           /* the pass */
    const char *summary; /* one line, for --help */
};

/* ==== pass_manager.c: the registry, running passes by name ==== */

/* The pass called `name`, or NULL. */
const PassInfo *pass_lookup(const char *name);
/* Every pass, in passes.def order. */
const PassInfo *pass_all(int *count);
/* "  name: summary\n" for every pass (--list-passes). */
const char *pass_list_text(void);
/* Runs one pass with the manager's services (verify, dump, timing). An
 * internal error inside the pass becomes a diagnostic. */
bool pass_run_one(IrModule *m, const PassInfo *pass, const PassOptions *opts);
/* Runs the pass named `name` (must exist). */
bool pass_run(IrModule *m, const char *name, const PassOptions *opts);
/* Runs a comma-separated list ("inline,canonicalize,cse"). Every name is
 * checked before anything runs: an unknown one is an error listing the valid
 * names. Stops at the first pass that fails. */
bool pass_run_list(IrModule *m, const char *names, const PassOptions *opts);

/* ==== pipeline.c: the default pipeline ==== */

bool pass_run_pipeline(IrModule *m, const PassOptions *opts);

/* ==== one file per pass (passes.def lists them) ==== */

#define PASS(id, name, summary) bool pass_##id(IrModule *m, const PassOptions *opts);
#include "passes.def"

/* ==== rewrite.c: rewriting without use lists (for passes only) ==== */

/* The IR has no use lists. A pass that replaces values records old -> new in
 * an IrMap and rewrites each op's operands just before it looks at the op;
 * the pre-order walk sees every definition before its uses. */

/* v's final replacement (following chains), or v itself. */
IrValue *pass_subst_value(const IrMap *subst, IrValue *v);
/* Rewrites op's operands through subst; returns true if any changed. */
bool pass_subst_operands(const IrMap *subst, IrOp *op);
/* Stores value use counts in IrValue.id for every value of f (results and
 * block arguments, nested regions included). */
void pass_count_uses(IrFunc *f);
/* Removes pure ops whose results have no uses, repeatedly, with IrValue.id
 * holding use counts (pass_count_uses). Returns true if anything changed. */
bool pass_erase_dead_pure_ops(IrFunc *f);
/* True if op is pure and owns no regions (it may be removed when unused). */
bool pass_op_is_removable(const IrOp *op);

#endif
