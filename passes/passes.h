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
#include "target/target.h"

typedef struct PassOptions PassOptions;
typedef struct PassInfo PassInfo;
typedef bool (*PassFn)(IrModule *m, const PassOptions *opts);

struct PassOptions {
    DiagList *diags;         /* where passes report errors (required) */
    bool verify_each;        /* ir_verify after every pass (always on without NDEBUG) */
    const char *print_after; /* comma-separated pass names to dump the IR after, or NULL */
    bool print_after_all;    /* dump the IR after every pass */
    Buf *print_out;          /* where dumps and timings go; NULL = stderr */
    bool print_locs;         /* dumps carry the ops' loc(...) (ir_print_module_locs) */
    bool time_passes;        /* report each pass's wall time to print_out */
    TgTarget target;         /* the GPU, num_warps and num_stages of kernels without those attributes */
};

/* Defaults: no dumps, the target's defaults on sm_80. */
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

/* ==== tma_access.c: loads a TMA copy can do (an analysis for the pipeline) ==== */

/* A load proved to be a box of a tensor (tma_access.c has the rules): the
 * tensor map (base, extents, strides; the caller sets box and swizzle) and
 * the origin of the tile along each dimension: the sum of atoms[d] (scalar
 * values of the load's block or above) plus offset[d]. */
#define TMA_MAX_TERMS 16 /* terms of a load's offset, atoms of one origin */

typedef struct TmaAccess {
    IrTensorMap map;
    const IrValue *atoms[IR_MAX_TMAP_RANK][TMA_MAX_TERMS]; /* scalars, or 1-D tiles with rows */
    int num_atoms[IR_MAX_TMAP_RANK];
    int64_t offset[IR_MAX_TMAP_RANK];
    int contig_axis; /* the tile axis of dimension 0 */
    /* gathered rows (a paged cache): each aligned run of `rows` rows along
     * the other axis is a box of its own, its origin the atoms' elements at
     * the run's first row; 0: the origin is one for the whole tile */
    int64_t rows;
    bool row_arange; /* with rows: dimension 1 is an arange, its coordinate advances with the run's row */
} TmaAccess;

typedef struct AxisInfoMap AxisInfoMap;

/* Does `load` (a 1-D or 2-D tile) read a box whose dimension 0 runs along tile axis
 * contig_axis, with zeros exactly where its mask is false? With the axis
 * facts `ai` (NULL: none) it may also read gathered rows (TmaAccess.rows). */
bool tma_match_load(const IrFunc *f, AxisInfoMap *ai, const IrOp *load, int contig_axis, TmaAccess *out);
/* Does the pointer tile `ptrs` (1-D or 2-D) address a box whose dimension 0 runs
 * along tile axis contig_axis, `mask` (NULL: none) true exactly inside the
 * extents? (A store's or an atomic's operands.) */
bool tma_match_access(const IrFunc *f, AxisInfoMap *ai, const IrValue *ptrs, const IrValue *mask, int contig_axis,
                      TmaAccess *out);
/* The kernel's tensormap parameter described by tm: an existing one (two
 * accesses of the same box of the same tensor share it), or a new one after
 * the others, named after its base. */
IrValue *tma_map_param(IrModule *m, IrFunc *f, const IrTensorMap *tm);
/* The i32 origin of dimension d, built at b: for the box of the rows from
 * `row` on (0 without gathered rows). */
IrValue *tma_build_coord(IrBuilder *b, const TmaAccess *a, int d, int64_t row);
/* Element i of v, a 1-D tile of integers or pointers that tma_access.c
 * accepted as an atom (or a scalar: v itself), computed as a scalar at b. */
IrValue *tma_build_elem(IrBuilder *b, const IrValue *v, int64_t i);

/* ==== axis_info.c: contiguity, divisibility and constancy (an analysis) ==== */

/*
 * Per dimension of an integer or pointer value (a scalar counts as one
 * dimension of size 1):
 *   contiguity    the value is made of aligned runs of this many consecutive
 *                 integers (pointers: consecutive elements) along the dim;
 *   divisibility  the largest power of two dividing the first element of every
 *                 such run (pointers: the address in bytes), capped at
 *                 AXIS_MAX_DIVISIBILITY;
 *   constancy     the value is made of aligned runs of this many equal
 *                 elements along the dim.
 * Runs are aligned: a run of length c starts at a multiple of c of the
 * dimension's index. 1 everywhere is "nothing known".
 */
#define AXIS_MAX_DIVISIBILITY ((int64_t)1 << 30)

typedef struct AxisInfo {
    int rank;                          /* 0 for a scalar (one entry of size 1 is used) */
    int64_t contiguity[IR_MAX_RANK];   /* see above, per dimension */
    int64_t divisibility[IR_MAX_RANK];
    int64_t constancy[IR_MAX_RANK];
    bool is_const;                     /* every element equals const_value (integers) */
    int64_t const_value;
} AxisInfo;

/* Runs the analysis over f (nested regions included; loop-carried values
 * iterate to a fixpoint). Linear in the size of f, times a small bound for
 * loops. Free with axis_info_free. */
AxisInfoMap *axis_info_run(IrFunc *f);
void axis_info_free(AxisInfoMap *map);
/* The facts of v (any value of the function; values the analysis did not
 * see, and floats, get "nothing known" of their shape). Never NULL. */
const AxisInfo *axis_info_get(AxisInfoMap *map, const IrValue *v);
/* "{contiguity = [1, 8], divisibility = [16, 16], constancy = [1, 1]}". */
void axis_info_print(Buf *out, const AxisInfo *info);

/* ==== layout_rewrite.c: machinery shared by the layout passes ==== */

/*
 * The layout passes decide a layout per tile value and then make the IR
 * agree: every op's operands must have the layouts its result layouts imply
 * (elementwise and scan: the same; expand_dims: a slice of the result's;
 * reduce: the parent of the result's slice; load/store/atomic: the pointer's; yield: the
 * loop's...). Where an operand differs, a convert_layout is inserted right
 * after the operand's definition (at the top of its block for a block
 * argument), once per (value, layout): so a conversion of a loop-invariant
 * value stays outside the loop, and users share it.
 */
typedef struct LayoutRewrite {
    IrModule *m;
    IrFunc *f;
    int num_warps;   /* the function's num_warps */
    IrMap converted; /* IrValue* -> LayoutConv* list: that value in other layouts */
} LayoutRewrite;

void pass_layout_rewrite_init(LayoutRewrite *rw, IrModule *m, IrFunc *f, int num_warps);
/* The function's warps: its num_warps attribute, else opts->target.num_warps. */
int pass_func_num_warps(const IrFunc *f, const PassOptions *opts);
/* Triton's default #blocked layout for a tile type of this shape. */
const Layout *pass_default_layout(LayoutRewrite *rw, const IrType *t);
/* #slice<dim, parent>, interned. */
const Layout *pass_slice_layout(IrModule *m, int dim, const Layout *parent);
/* #dot_op<idx, parent = mma, kwidth> for operand idx (0: A, 1: B) of a
 * tensor-core dot with elements of type elem: kwidth = 32 / bits (2 for
 * f16 and bf16: two K elements per 32-bit register). */
const Layout *pass_dot_operand_layout(IrModule *m, const Layout *mma, int idx, const IrType *elem);
/* The dimensions of tile t, fastest in its registers first: a #blocked
 * layout's `order`, else the order in which its register, then lane bases
 * move dimensions (the order a copy of t to shared memory keeps its stores
 * vectorized in). */
void pass_source_order(int num_warps, const IrType *t, int *order);
/* The layout operand i of op must have, given the layouts of op's results
 * (and, for store and async_copy, of the pointer); NULL when any layout
 * will do or the operand is not a tile. */
const Layout *pass_operand_layout(IrModule *m, const IrOp *op, int i);
/* v in layout l: v itself (or the source of the conversions v comes from),
 * a convert made before, or a new convert_layout right after the definition. */
IrValue *pass_convert_to(LayoutRewrite *rw, IrValue *v, const Layout *l);
/* Records that `conv` is v in layout l (placed so that it is visible
 * wherever v is), for pass_convert_to to reuse. */
void pass_remember_conversion(LayoutRewrite *rw, IrValue *v, const Layout *l, IrValue *conv);
/* The value recorded for (v, l), or NULL. */
IrValue *pass_find_conversion(LayoutRewrite *rw, IrValue *v, const Layout *l);
/* Gives every tile value of the function the layout decide(ctx, v) returns
 * (NULL: keep its type), walking in program order, and inserts converts
 * where operands disagree with pass_operand_layout. A `for` body argument
 * always takes its result's layout. */
typedef const Layout *(*LayoutDecideFn)(void *ctx, IrValue *v);
void pass_layouts_apply(LayoutRewrite *rw, LayoutDecideFn decide, void *ctx);
/* Number of `for` loops around block b. */
int pass_loop_depth(const IrBlock *b);

/* ==== allocate_shared.c ==== */

/* Bytes of shared memory the target gives one program (sm 80: 166912, sm
 * 90: 232448). */

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
/* A new loop-carried value of the `for` op `loop`: init as its operand, a
 * result of the loop, and the body's new block argument (returned); the
 * caller appends the value of the next iteration to the body's yield
 * (pass_append_yield). */
IrValue *pass_add_iter_arg(IrModule *m, IrOp *loop, IrValue *init, const char *name);
void pass_append_yield(IrModule *m, IrOp *yield, IrValue *v);
/* Removes the ops whose results have no uses and that pass_op_is_droppable
 * allows, repeatedly, with IrValue.id holding use counts (pass_count_uses).
 * Returns true if anything changed. */
bool pass_erase_dead_ops(IrFunc *f);
/* True if op is pure and owns no regions (it may be removed when unused,
 * and merged with an equal op). */
bool pass_op_is_removable(const IrOp *op);
/* True if op may go when its results are unused: a removable op, or a
 * load (reading memory changes nothing; loads are not pure, so that CSE
 * does not merge them across stores). dce and pass_erase_dead_ops agree. */
bool pass_op_is_droppable(const IrOp *op);
/* Does op, or an op in its regions, read v? */
bool pass_op_uses(const IrOp *op, const IrValue *v);
/* `warp_group_dot_wait v {pending}`, detached, its result named like v (the
 * caller places it). */
IrOp *pass_dot_wait(IrModule *m, IrValue *v, int64_t pending, SrcLoc loc);
/* pass_dot_wait right after `after`; every use of v in scope but the wait's
 * own reads the wait's result instead. Returns that result. */
IrValue *pass_dot_wait_after(IrModule *m, IrOp *after, IrBlock *scope, IrValue *v, int64_t pending);

#endif
