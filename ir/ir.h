/*
 * ir.h — the tile IR library: arena, diagnostics, types, layouts, values,
 * operations, builder, printer, parser and verifier.
 *
 * Everything else in tilec (front end, passes, codegen, runtime, tools) is
 * built on this header. One section per .c file lists what that file exports.
 *
 * The IR in one paragraph: a module holds functions (kernels and inlinable
 * funcs). A function body is a block; a block has arguments and an intrusive
 * list of operations. An operation has operands (values), results (values),
 * attributes (named constants), and regions (each region is exactly one block:
 * control flow is structured — `for` and `if` — so there is no CFG and every
 * value is defined textually before its uses). Types and layouts are interned
 * per module: two types are equal iff their pointers are equal.
 *
 * docs/ir.md describes the text form; print.c and parse.c implement it and
 * round-trip exactly: print(parse(print(m))) == print(m).
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include "base/base.h"
#include "tilec/tilec.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec/tilec.h"

typedef struct Arena Arena;
typedef struct ArenaChunk ArenaChunk;
typedef struct Buf Buf;
typedef struct Source Source;
typedef struct SrcLoc SrcLoc;
typedef struct Diag Diag;
typedef struct DiagList DiagList;
typedef struct TcGuard TcGuard;
typedef struct IrType IrType;
typedef struct Layout Layout;
typedef struct IrAttr IrAttr;
typedef struct IrValue IrValue;
typedef struct IrOp IrOp;
typedef struct IrBlock IrBlock;
typedef struct IrFunc IrFunc;
typedef struct IrModule IrModule;
typedef struct IrBuilder IrBuilder;
typedef struct IrOpInfo IrOpInfo;
typedef struct IrInternTable IrInternTable;

#define TILEC_VERSION_STRING TC_VERSION_STRING /* tilec/tilec.h */

/* ==== arena.c: bump allocation, growable text buffers ==== */

struct Arena {
    ArenaChunk *head; /* newest chunk; older chunks follow ->next */
    size_t total;     /* bytes handed out, for statistics */
};

void arena_init(Arena *a);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
void *arena_grow(Arena *a, void *old, size_t old_size, size_t new_size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

struct Buf {
    char *data; /* NUL-terminated once anything was appended; malloc-owned */
    size_t len; /* bytes used, excluding the NUL */
    size_t cap; /* bytes allocated */
};

void buf_init(Buf *b);
void buf_free(Buf *b);
void buf_reserve(Buf *b, size_t extra);
void buf_append(Buf *b, const char *s, size_t n);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ==== diag.c: user diagnostics, and the escape hatch for internal errors ==== */

/* A source buffer: a .tile file or IR text. `text` need not be NUL-terminated
 * and may contain any bytes (including NUL and invalid UTF-8). */
struct Source {
    const char *name; /* file name as given by the user, or "<string>" */
    const char *text; /* contents; NULL (len 0) for a file named by loc(...) in IR text */
    size_t len;       /* length of text in bytes */
};

/* A position in a Source. line and col are 1-based byte positions; line 0
 * means "no location" (diagnostics then print only "error: msg"). */
struct SrcLoc {
    const Source *src;
    int line;
    int col;
};

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

struct Diag {
    DiagLevel level;
    SrcLoc loc;
    char *msg;  /* malloc-owned */
    Diag *next; /* in emission order */
};

struct DiagList {
    Diag *head, *tail; /* malloc-owned list */
    int num_errors;    /* DIAG_ERROR entries */
    int max_errors;    /* after this many errors further ones are dropped (0 = 20) */
    bool truncated;    /* some errors were dropped */
};

void diag_init(DiagList *d);
void diag_free(DiagList *d);
void diag_error(DiagList *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(DiagList *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(DiagList *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool diag_has_errors(const DiagList *d);
/* "file:line:col: error: msg\n<source line>\n    ^\n" for every entry. */
void diag_render(const DiagList *d, Buf *out);
void diag_render_one(const Diag *g, Buf *out);
SrcLoc srcloc_none(void);

/*
 * Internal errors and out-of-memory never reach exit() or abort(). Every
 * library entry point that may fail deep inside pushes a TcGuard:
 *
 *     TcGuard g;
 *     if (TC_GUARD(g)) { ...g.message...; tc_guard_pop(&g); return status; }
 *     ... work ...
 *     tc_guard_pop(&g);
 *
 * tc_oom() and tc_fatal() longjmp to the innermost guard. Code that runs
 * without a guard and hits one reports on stderr and aborts: that is a bug in
 * the entry point, not a reachable state.
 */
struct TcGuard {
    jmp_buf jb;
    TcGuard *prev;
    int code;         /* 1 = out of memory, 2 = internal error */
    char message[256];
};

#define TC_GUARD(g) (tc_guard_push(&(g)), setjmp((g).jb))
void tc_guard_push(TcGuard *g);
void tc_guard_pop(TcGuard *g);
_Noreturn void tc_oom(void);
_Noreturn void tc_fatal(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define tc_unreachable(...) tc_fatal(__FILE__, __LINE__, __VA_ARGS__)
#define tc_assert(cond)                                                                  \
    do {                                                                                 \
        if (!(cond))                                                                     \
            tc_fatal(__FILE__, __LINE__, "assertion failed: %s", #cond);                 \
    } while (0)

/* ==== type.c: scalar, pointer, tile and shared-memory types (interned) ==== */

#define IR_MAX_RANK 4
/* Regions nested in one function, at most: the IR parser's limit, which the
 * front end and the inline pass keep (passes recurse over regions). */
#define IR_MAX_REGION_DEPTH 256
/* Most elements of a tile (Triton's TRITON_MAX_TENSOR_NUMEL): the verifier
 * rejects larger tile types, and the front end larger shapes. */
#define IR_MAX_TILE_ELEMENTS ((int64_t)1 << 20)
/* The kernel attributes num_warps (a power of two 1..IR_MAX_NUM_WARPS) and
 * num_stages (0..IR_MAX_NUM_STAGES): the public API's limits. */
#define IR_MAX_NUM_WARPS TC_MAX_NUM_WARPS
#define IR_MAX_NUM_STAGES TC_MAX_NUM_STAGES
/* The kernel attribute num_ctas: the programs of a thread-block cluster
 * (1..8, the portable cluster sizes); its cluster_reduce ops name the same. */
#define IR_MAX_CLUSTER_CTAS 8
/* The kernel attribute min_programs_per_sm (1..TC_MAX_PROGRAMS_PER_SM):
 * that many programs of the kernel's threads (num_warps and producer_warps)
 * within the IR_MAX_THREADS_PER_SM threads an SM holds (sm_80, sm_90). */
#define IR_MAX_THREADS_PER_SM TC_MAX_THREADS_PER_SM

typedef enum {
    IR_I1, /* bool */
    IR_I8,
    IR_I16,
    IR_I32,
    IR_I64,
    IR_F16,
    IR_BF16,
    IR_F32,
    IR_F64,
    /* 8-bit floats (docs/ir.md, "fp8"): OCP E4M3FN (no infinities, NaN
     * S.1111.111, max 448) and E5M2 (IEEE-like: infinities, max 57344).
     * Storage, conversion and dot operand types: no arithmetic op takes
     * them. Conversions to them round to nearest even and saturate to the
     * finite maximum; NaN stays NaN. */
    IR_F8E4M3,
    IR_F8E5M2,
    IR_PTR,  /* uses elem (the pointee, a scalar type) */
    IR_TILE, /* uses elem (scalar or PTR), rank, shape, layout (NULL = none yet) */
    IR_SMEM, /* a buffer in shared memory: elem, rank, shape, layout (#shared) */
    IR_TENSORMAP, /* a TMA tensor map (128 opaque bytes): only a kernel parameter the pipeline adds */
} IrTypeKind;

struct IrType {
    IrTypeKind kind;
    const IrType *elem;         /* PTR: pointee; TILE, SMEM: element type */
    int rank;                   /* TILE, SMEM: number of dimensions (1..IR_MAX_RANK) */
    int64_t shape[IR_MAX_RANK]; /* TILE, SMEM: extent of each dimension */
    const Layout *layout;       /* TILE: register layout or NULL; SMEM: shared layout */
};

const IrType *ir_type_scalar(IrModule *m, IrTypeKind kind);
const IrType *ir_type_ptr(IrModule *m, const IrType *pointee);
const IrType *ir_type_tensormap(IrModule *m);
const IrType *ir_type_tile(IrModule *m, const IrType *elem, int rank, const int64_t *shape, const Layout *layout);
const IrType *ir_type_smem(IrModule *m, const IrType *elem, int rank, const int64_t *shape, const Layout *layout);
/* Same shape and layout as t (scalar if t is scalar), element type elem. */
const IrType *ir_type_with_elem(IrModule *m, const IrType *t, const IrType *elem);
/* Same tile with another layout (NULL removes it). */
const IrType *ir_type_with_layout(IrModule *m, const IrType *t, const Layout *layout);

bool ir_type_is_int(const IrType *t);     /* i1..i64 (scalar only) */
bool ir_type_is_float(const IrType *t);   /* f16, bf16, f32, f64, f8e4m3, f8e5m2 (scalar only) */
bool ir_type_is_fp8(const IrType *t);     /* f8e4m3, f8e5m2 (scalar only) */
bool ir_kind_is_scalar_number(IrTypeKind k); /* i1 .. f8e5m2 */
bool ir_type_is_scalar(const IrType *t);  /* int, float or ptr */
bool ir_type_is_tile(const IrType *t);
int ir_type_bits(const IrType *t);        /* scalar width; ptr = 64 */
int ir_type_bytes(const IrType *t);       /* bytes of one element in memory: bits / 8, 1 for i1; ptr = 8 */
const IrType *ir_type_elem(const IrType *t); /* element of a tile/smem, or t itself */
int64_t ir_type_numel(const IrType *t);   /* 1 for scalars */
int64_t ir_type_size_bytes(const IrType *t); /* numel x element bytes: a tile's or buffer's bytes */
const char *ir_scalar_name(IrTypeKind k); /* "i32", "bf16", ... */
bool ir_scalar_from_name(const char *s, size_t n, IrTypeKind *out);
/* Generic interning of a zero-padded struct (used for types and layouts). */
const void *ir_intern(IrModule *m, IrInternTable **table, const void *proto, size_t size);

/* ==== layout.c: layout attributes (interned) ==== */

typedef enum {
    LAYOUT_BLOCKED, /* uses blocked */
    LAYOUT_SLICE,   /* uses slice */
    LAYOUT_MMA,     /* uses mma */
    LAYOUT_DOT_OP,  /* uses dot_op */
    LAYOUT_SHARED,  /* uses shared */
    LAYOUT_NVMMA_SHARED, /* uses nvmma: wgmma's and TMA's canonical swizzled layouts */
} LayoutKind;

struct Layout {
    LayoutKind kind;
    int rank; /* rank of the tiles this layout describes */
    union {
        struct {
            int spt[IR_MAX_RANK];   /* elements per thread, per dim */
            int tpw[IR_MAX_RANK];   /* threads per warp, per dim */
            int wpc[IR_MAX_RANK];   /* warps per CTA, per dim */
            int order[IR_MAX_RANK]; /* dims, fastest-varying first */
        } blocked;
        struct {
            int dim;              /* the dimension removed from parent */
            const Layout *parent; /* layout of rank+1 */
        } slice;
        struct {
            int version;           /* 2: mma.sync; 3: wgmma */
            int wpc[IR_MAX_RANK];  /* warps per CTA, per dim */
            int instr[3];          /* instruction shape m, n, k (k = 0 if unset) */
        } mma;
        struct {
            int idx;              /* 0: A operand, 1: B operand */
            const Layout *parent; /* the #mma layout of the dot's result */
            int kwidth;           /* consecutive K elements per thread */
        } dot_op;
        struct {
            int vec;                /* elements per 16-byte swizzle unit */
            int per_phase;          /* rows sharing one swizzle phase */
            int max_phase;          /* number of distinct phases */
            int order[IR_MAX_RANK]; /* dims, fastest-varying first */
        } shared;
        struct {
            int swizzle;            /* 32, 64 or 128: bytes of one swizzled row (docs/ir.md) */
            int order[IR_MAX_RANK]; /* dims, fastest-varying first */
        } nvmma;
    };
};

/* Interns a layout equal to *proto (only the fields of its kind are read). */
const Layout *ir_layout_intern(IrModule *m, const Layout *proto);
/* #nvmma_shared<swizzle, order = [contig, 1 - contig]> (2-D). */
const Layout *ir_layout_nvmma_shared(IrModule *m, int swizzle, int contig);
/* The layout of `trans {perm}` (result dimension i is operand dimension
 * perm[i]) applied to a tile or buffer of layout l, or with inverse the
 * operand's layout given the result's. Sizes move with their dimension and
 * `order` (which names dimensions) is renamed, so a #shared or
 * #nvmma_shared buffer keeps its bytes: memdesc_trans is a view. NULL for
 * the kinds that do not permute (#slice, #mma, #dot_op) or a rank mismatch. */
const Layout *ir_layout_permute(IrModule *m, const Layout *l, int rank, const int64_t *perm, bool inverse);
const char *ir_layout_kind_name(LayoutKind k); /* "blocked", "slice", ... */
/* Prints the literal form, e.g. #blocked<spt = [1, 4], ...>. Parents are
 * printed inline; the module printer uses aliases instead. */
void ir_layout_print(Buf *b, const Layout *l);
/* The same, with each parent layout (of #slice, #dot_op) printed by
 * print_parent(user, b, parent) when it is not NULL. */
typedef void (*IrLayoutParentFn)(void *user, Buf *b, const Layout *parent);
void ir_layout_print_with(Buf *b, const Layout *l, IrLayoutParentFn print_parent, void *user);

/* ==== ir.c: modules, functions, blocks, values, operations, builder ==== */

typedef enum {
#define OP(id, name, nopnd, nres, nreg, flags, attrs) IR_OP_##id,
#include "ops.def"
    IR_NUM_OPS
} IrOpcode;

enum {
    OPF_PURE = 1 << 0,        /* no side effect: CSE and DCE may act */
    OPF_CONSTANT = 1 << 1,    /* result is the `value` attribute */
    OPF_ELEMENTWISE = 1 << 2, /* per-element; operands and result of one shape */
    OPF_COMMUTATIVE = 1 << 3, /* operands 0 and 1 may be swapped */
    OPF_FLOAT_ONLY = 1 << 4,  /* operands must be floats */
    OPF_SIDE_EFFECT = 1 << 5, /* writes memory or synchronizes */
    OPF_TERMINATOR = 1 << 6,  /* ends a block */
    OPF_REGION = 1 << 7,      /* owns regions */
    OPF_LOOP = 1 << 8,        /* its region is a loop body */
    OPF_SM90 = 1 << 9,        /* codegen: only sm_90 and later have it (mbarriers, TMA, the async proxy) */
    OPF_SM90A = 1 << 10,      /* codegen: only sm_90a has it (wgmma, setmaxnreg) */
};

struct IrOpInfo {
    const char *name;   /* text keyword */
    int num_operands;   /* -1 = variadic */
    int num_results;    /* -1 = variadic */
    int num_regions;
    unsigned flags;     /* OPF_* */
    const char *attrs;  /* required attributes, "name:kind ..." (see ops.def) */
};

extern const IrOpInfo ir_op_info[IR_NUM_OPS];
bool ir_opcode_from_name(const char *s, size_t n, IrOpcode *out);

typedef enum {
    IR_ATTR_INT,    /* uses i */
    IR_ATTR_FLOAT,  /* uses f */
    IR_ATTR_WORD,   /* uses s: a bare identifier such as `lt` or `sum` */
    IR_ATTR_STRING, /* uses s: a quoted string */
    IR_ATTR_SYMBOL, /* uses s: a function name, printed @name */
    IR_ATTR_INTS,   /* uses list */
} IrAttrKind;

struct IrAttr {
    const char *name; /* key, arena-owned */
    IrAttrKind kind;
    union {
        int64_t i;
        double f;
        const char *s;
        struct {
            int n;
            const int64_t *v;
        } list;
    };
};

struct IrValue {
    const IrType *type;
    const char *name; /* name hint for printing, or NULL; never all digits */
    IrOp *def;        /* defining operation, or NULL for a block argument */
    IrBlock *block;   /* block argument: its block; NULL for results */
    int index;        /* result index in def, or argument index in block */
    int num_attrs;    /* argument attributes (function parameters only) */
    IrAttr *attrs;
    int id;           /* scratch for passes and the printer */
};

struct IrOp {
    IrOpcode opc;
    int num_operands;
    IrValue **operands;
    int num_results;
    IrValue **results;
    int num_attrs;
    IrAttr *attrs;
    int num_regions;
    IrBlock **regions; /* each region is one block */
    IrBlock *parent;   /* block containing this op, NULL when detached */
    IrOp *prev, *next; /* siblings in parent */
    SrcLoc loc;        /* where the op came from (source or IR text) */
    int id;            /* scratch for passes */
};

struct IrBlock {
    int num_args;
    int cap_args;
    IrValue **args;
    IrOp *first, *last;
    IrOp *parent_op; /* op owning this region, NULL for a function body */
    IrFunc *func;    /* function containing this block */
};

typedef enum { IR_FUNC_KERNEL, IR_FUNC_FUNC } IrFuncKind;

struct IrFunc {
    IrFuncKind kind;
    const char *name;
    IrBlock *body; /* its arguments are the parameters */
    int num_results;
    const IrType **result_types;
    int num_attrs;
    IrAttr *attrs; /* e.g. num_warps */
    IrFunc *prev, *next;
    IrModule *module;
    SrcLoc loc;
};

struct IrModule {
    Arena arena;           /* everything below lives here */
    IrFunc *first, *last;  /* functions in order */
    /* functions by name (ir_module_find_func): open addressing, a power of
     * two of slots, at most half full; rebuilt from the list when stale
     * (after a removal of a function whose name another function shares) */
    IrFunc **func_slots;
    size_t func_cap, func_count;
    bool func_index_stale;
    IrInternTable *types;    /* interned IrType (type.c) */
    IrInternTable *layouts;/* interned Layout (layout.c) */
};

IrModule *ir_module_create(void);
void ir_module_destroy(IrModule *m);
IrFunc *ir_func_create(IrModule *m, IrFuncKind kind, const char *name);
IrFunc *ir_module_find_func(const IrModule *m, const char *name);
/* Ops in b and in every region nested in it. */
size_t ir_block_count_ops(const IrBlock *b);
void ir_func_remove(IrModule *m, IrFunc *f); /* unlinks */
IrValue *ir_func_add_param(IrFunc *f, const IrType *t, const char *name);
void ir_func_set_results(IrFunc *f, int n, const IrType *const *types);

IrBlock *ir_block_create(IrModule *m);
IrValue *ir_block_add_arg(IrModule *m, IrBlock *b, const IrType *t, const char *name);

/* Creates a detached op with the given operands, result types and
 * num_regions empty regions. */
IrOp *ir_op_create(IrModule *m, IrOpcode opc, int num_operands, IrValue *const *operands, int num_results,
                   const IrType *const *result_types);
void ir_op_set_operand(IrOp *op, int i, IrValue *v);
void ir_op_set_operands(IrModule *m, IrOp *op, int n, IrValue *const *operands);
void ir_block_append(IrBlock *b, IrOp *op);
void ir_op_insert_before(IrOp *pos, IrOp *op);
void ir_op_insert_after(IrOp *pos, IrOp *op);
void ir_op_unlink(IrOp *op); /* detaches from its block; memory stays in the arena */
IrFunc *ir_op_func(const IrOp *op);
const IrOpInfo *ir_op_info_of(const IrOp *op);
bool ir_op_has_flag(const IrOp *op, unsigned flag);

void ir_value_set_name(IrModule *m, IrValue *v, const char *name); /* digits-only names are dropped */
/* Replaces every use of `from` inside `scope` (and nested regions). */
void ir_replace_all_uses(IrBlock *scope, IrValue *from, IrValue *to);
/* Number of uses of v inside scope (nested regions included). */
int ir_count_uses(IrBlock *scope, const IrValue *v);
/* The shared-memory buffer v views: v past its memdesc_trans ops (the same
 * bytes), or v itself. */
const IrValue *ir_view_buffer(const IrValue *v);
/* The allocation v is part of: v past its memdesc_trans and memdesc_index
 * ops (a ring's stage is the ring), or v itself. */
const IrValue *ir_buffer_root(const IrValue *v);

/* Attributes. Setters replace an existing attribute of the same name. */
const IrAttr *ir_attr_get(int n, const IrAttr *attrs, const char *name);
const IrAttr *ir_op_attr(const IrOp *op, const char *name);
int64_t ir_op_get_int(const IrOp *op, const char *name, int64_t dflt);
double ir_op_get_number(const IrOp *op, const char *name, double dflt); /* int or float */
const char *ir_op_get_word(const IrOp *op, const char *name);           /* NULL if absent */
bool ir_reduce_is_arg(const IrOp *op); /* a reduce of kind argmax or argmin (its result: i32 indices) */
const char *ir_op_get_string(const IrOp *op, const char *name);         /* a quoted string; NULL if absent */
void ir_op_set_attr(IrModule *m, IrOp *op, const IrAttr *a);
void ir_op_set_int(IrModule *m, IrOp *op, const char *name, int64_t v);
/* Removes attribute `name` of op, if it has one. */
void ir_op_remove_attr(IrOp *op, const char *name);
void ir_op_set_float(IrModule *m, IrOp *op, const char *name, double v);
void ir_op_set_word(IrModule *m, IrOp *op, const char *name, const char *w);
void ir_op_set_symbol(IrModule *m, IrOp *op, const char *name, const char *sym);
void ir_op_set_string(IrModule *m, IrOp *op, const char *name, const char *s);
void ir_op_set_ints(IrModule *m, IrOp *op, const char *name, int n, const int64_t *v);
void ir_attrs_set(IrModule *m, int *num, IrAttr **attrs, const IrAttr *a); /* generic list setter */
bool ir_attr_equal(const IrAttr *a, const IrAttr *b);
int64_t ir_func_get_int(const IrFunc *f, const char *name, int64_t dflt);
void ir_func_set_int(IrFunc *f, const char *name, int64_t v);

/* Walks every op of a block and its nested regions in order (pre-order).
 * The callback may unlink the op it is given (not others). */
typedef void (*IrWalkFn)(IrOp *op, void *ctx);
void ir_walk_block(IrBlock *b, IrWalkFn fn, void *ctx);
void ir_walk_func(IrFunc *f, IrWalkFn fn, void *ctx);

/* A constant's value: true if v is defined by `constant`. */
bool ir_value_is_constant(const IrValue *v);
bool ir_value_const_int(const IrValue *v, int64_t *out);
/* Does the pointer v (a scalar or a tile of pointers) derive, through
 * addptr, splat, broadcast, expand_dims, reshape, trans and
 * convert_layout, from a `readonly` pointer parameter: memory nothing
 * writes while the kernel runs (docs/ir.md, "Functions")? */
bool ir_points_to_readonly(const IrValue *v);
bool ir_value_const_number(const IrValue *v, double *out);
/* v is a constant (scalar or splat) equal to 0 of either sign. */
bool ir_value_is_zero(const IrValue *v);

/* The builder inserts new ops before `before`, or at the end of `block` when
 * `before` is NULL, and stamps them with `loc`. */
struct IrBuilder {
    IrModule *m;
    IrBlock *block;
    IrOp *before;
    SrcLoc loc;
};

void ir_builder_at_end(IrBuilder *b, IrModule *m, IrBlock *block);
void ir_builder_before(IrBuilder *b, IrOp *op);
IrOp *ir_build_op(IrBuilder *b, IrOpcode opc, int num_operands, IrValue *const *operands, int num_results,
                  const IrType *const *result_types);
/* One result (or none when type is NULL); returns the result or NULL. */
IrValue *ir_build(IrBuilder *b, IrOpcode opc, const IrType *type, int num_operands, IrValue *const *operands);
IrValue *ir_build_unary(IrBuilder *b, IrOpcode opc, const IrType *type, IrValue *a);
IrValue *ir_build_binary(IrBuilder *b, IrOpcode opc, const IrType *type, IrValue *x, IrValue *y);
IrValue *ir_build_const_int(IrBuilder *b, const IrType *type, int64_t v);
IrValue *ir_build_const_float(IrBuilder *b, const IrType *type, double v);
IrValue *ir_build_cmp(IrBuilder *b, const char *pred, IrValue *x, IrValue *y); /* result i1 of x's shape */

/* Integer arithmetic in a given width, as the IR defines it (wrapping, no UB):
 * used by constant folding in the front end and in canonicalize. Division by
 * zero returns false. */
bool ir_fold_int_binary(IrOpcode opc, int bits, int64_t a, int64_t b, int64_t *out);
int64_t ir_int_wrap(int64_t v, int bits); /* sign-extends the low `bits` bits */
bool ir_fold_cmp(const char *pred, double a, double b, bool is_int, int64_t ia, int64_t ib);
/* A math op (exp ... cos, abs, neg) of a float, in double with libm: the
 * constant folders' value and the interpreter's before rounding to the
 * type. False for other opcodes. */
bool ir_fold_math(IrOpcode opc, double a, double *out);
double ir_float_round(IrTypeKind k, double v); /* rounds to f16/bf16/f32/fp8 precision */
/* The fp8 encoding of v (k is IR_F8E4M3 or IR_F8E5M2) as a conversion
 * gives it: rounded to nearest even, saturated to the finite maximum
 * (infinities too), NaN as 0x7F. ir_f8_value decodes a byte exactly. */
uint8_t ir_f8_bits(IrTypeKind k, double v);
double ir_f8_value(IrTypeKind k, uint8_t bits);

/* ==== tensormap.c: what a `tensormap` kernel parameter describes ==== */

/*
 * A TMA tensor map parameter (docs/ir.md, "TMA") carries in its attributes
 * how the runtime builds it at each launch from the other arguments:
 *
 *   tma_base = P            the pointer parameter the tensor starts at
 *   tma_dim_params = [..]   per dimension (innermost first): the integer
 *                           parameter holding its extent, or -1
 *   tma_dims = [..]         the extent when the parameter is -1; 0 when
 *                           unbounded (nothing is masked along it)
 *   tma_stride_params = [..], tma_strides = [..]
 *                           dimensions 1..rank-1: the stride in elements, a
 *                           parameter times the constant (0 read as 1: the
 *                           parameter itself) or, when the parameter is -1,
 *                           the constant
 *   tma_box = [..]          elements one copy moves along each dimension
 *   tma_swizzle = S         0, 32, 64 or 128: the shared-memory swizzle
 */
#define IR_MAX_TMAP_RANK 5

typedef struct IrTensorMap {
    int base;
    int rank;
    int dim_param[IR_MAX_TMAP_RANK];
    int64_t dim[IR_MAX_TMAP_RANK];
    int stride_param[IR_MAX_TMAP_RANK]; /* [0] unused: dimension 0 has stride 1 */
    int64_t stride[IR_MAX_TMAP_RANK];
    int64_t box[IR_MAX_TMAP_RANK];
    int swizzle;
} IrTensorMap;

/* Reads the attributes of a tensormap parameter of f; false with *why when
 * they are missing or malformed (counts, kinds, ranges, parameter kinds). */
bool ir_tensormap_of(const IrFunc *f, const IrValue *param, IrTensorMap *out, const char **why);
/* Writes tm as the attributes of param. */
void ir_tensormap_set(IrModule *m, IrValue *param, const IrTensorMap *tm);
bool ir_tensormap_equal(const IrTensorMap *a, const IrTensorMap *b);

/* ==== print.c: the text form ==== */

void ir_print_module(const IrModule *m, Buf *out);
/* ir_print_module with every op's and function's location, ` loc("file":
 * line:col)` or ` loc(unknown)` (tilec -g, docs/ir.md); ir_parse reads
 * them back. */
void ir_print_module_locs(const IrModule *m, Buf *out);
void ir_print_func(const IrFunc *f, Buf *out);
void ir_print_op(const IrOp *op, Buf *out); /* one op (and its regions), for debugging */
void ir_print_type(Buf *out, const IrType *t);
void ir_print_number(Buf *out, double v); /* shortest text that reads back to v */

/* ==== parse.c: text form -> module ==== */

/* Returns NULL and fills diags on error. The module references `src` for
 * locations; keep src alive as long as the module. */
IrModule *ir_parse(const Source *src, DiagList *diags);

/* ==== clone.c: pointer maps, deep copies of operations ==== */

/* A hash map from pointers to pointers (values to values, ops to state...),
 * allocated in an arena and never freed on its own. Keys are never NULL. */
typedef struct IrMap IrMap;
struct IrMap {
    Arena *arena;      /* where the table lives */
    size_t cap;        /* slots, a power of two; 0 before the first insert */
    size_t count;      /* keys present */
    const void **keys; /* NULL marks an empty slot */
    void **vals;
};

void ir_map_init(IrMap *map, Arena *arena);
void ir_map_put(IrMap *map, const void *key, void *val); /* replaces an existing entry */
void *ir_map_get(const IrMap *map, const void *key);     /* NULL if absent */

/* Copies op and its regions into a new detached op of module m. Operands
 * that `map` holds are replaced by their images; the results and region
 * block arguments of the copy are recorded in `map` as images of the
 * originals (so cloning a sequence of ops keeps their def-use edges). */
IrOp *ir_op_clone(IrModule *m, const IrOp *op, IrMap *map);

/* ==== linear_layout.c: distributed layouts as linear maps over GF(2) ==== */

/*
 * Every distributed layout (blocked, slice, mma, dot_op) of a tile whose
 * dimensions are powers of two is a map from (register, lane, warp) to tile
 * coordinates that is linear over GF(2): bit k of the register index, of the
 * lane id and of the warp id each contribute one basis vector (a coordinate
 * tuple), and an element's coordinates are the XOR of the bases of the set
 * bits. A zero basis means that bit does not move the element: those lanes or
 * warps hold copies (broadcast). Codegen, reductions, conversions and shared
 * memory sizing all work on this one form (see linear_layout.c for worked
 * examples), so a new layout only needs its construction here.
 */
enum { LL_REG, LL_LANE, LL_WARP, LL_NUM_IN };
#define LL_MAX_BITS 16

typedef struct LinearLayout {
    int rank;                                           /* tile dimensions */
    int64_t shape[IR_MAX_RANK];                         /* tile extent per dimension */
    int num_bits[LL_NUM_IN];                            /* log2 of registers, lanes, warps */
    int32_t bases[LL_NUM_IN][LL_MAX_BITS][IR_MAX_RANK]; /* coordinates moved by each input bit */
} LinearLayout;

/* The map of a distributed layout for a tile of this shape, with num_warps
 * warps of 32 lanes. Returns false and sets *why when the layout cannot
 * describe the tile (rank mismatch, not a power of two, too many registers). */
bool ll_from_layout(const Layout *l, int rank, const int64_t *shape, int num_warps, LinearLayout *out,
                    const char **why);
/* ll_from_layout for a tile type that has a distributed layout. */
bool ll_of_type(const IrType *t, int num_warps, LinearLayout *out, const char **why);
int ll_num_regs(const LinearLayout *ll);
/* Coordinates of register `reg` in lane `lane` of warp `warp`. */
void ll_apply(const LinearLayout *ll, int reg, int lane, int warp, int64_t *coord);
/* The coordinates contributed by one input alone (the others zero). */
void ll_apply_in(const LinearLayout *ll, int in, int index, int64_t *coord);
bool ll_equal(const LinearLayout *a, const LinearLayout *b);
/* Bitmask of the lane (or warp) bits whose bases are all zero: the lanes
 * that hold copies of one another's elements. */
unsigned ll_broadcast_mask(const LinearLayout *ll, int in);
/* For every register r of `to`, the register of `from` that holds, in the
 * same lane and warp, the element at coordinates proj(to(r)): reg_map[r].
 * proj keeps a coordinate if keep_dim[d] (else uses 0) — the projection of a
 * broadcast — and from and to must have the same rank. Returns false when
 * some element lives in another thread (a real data movement is needed). */
bool ll_same_thread_map(const LinearLayout *from, const LinearLayout *to, const bool *keep_dim, int *reg_map);
/* "reg: [(0, 1), (0, 2)]; lane: ...; warp: ..." for tests and diagnostics. */
void ll_print(Buf *out, const LinearLayout *ll);
/* The default #blocked layout for a tile of this shape: one element per
 * thread, lanes then warps along the last dimension first, as many as the
 * shape holds (Triton's default encoding). */
const Layout *ll_default_blocked(IrModule *m, int rank, const int64_t *shape, int num_warps);
/* A #blocked layout with the given elements per thread and order, lanes and
 * warps filled in the same way (clamped to the shape, leftovers on the
 * slowest dimension). */
const Layout *ll_blocked_layout(IrModule *m, int rank, const int64_t *shape, const int *spt, const int *order,
                                int num_warps);

/* ==== linear_layout.c: shared-memory layouts as index maps ==== */

/*
 * A #shared<vec, per_phase, max_phase, order> buffer of shape `shape` holds
 * its elements row-major in `order` (order[0] fastest). Along the fastest
 * dimension the elements come in units of `vec` (16 bytes for the layouts
 * stage-shared chooses); unit u of row r — r being the coordinate along
 * order[1] — is stored at unit u ^ ((r / per_phase) % max_phase). max_phase
 * is clamped to the units in a row, so the XOR stays inside the row; 1-D
 * buffers are not swizzled. Worked example: smem<64x64xf16, #shared<vec = 8,
 * per_phase = 1, max_phase = 8, order = [1, 0]>>, element (3, 20): unit
 * 20 / 8 = 2 of row 3, stored at unit 2 ^ 3 = 1, element offset
 * 3 * 64 + 1 * 8 + 4 = 204 (byte 408). codegen uses this map for
 * local_alloc / local_store addresses and ldmatrix row addresses.
 */
/* Element offset of `coord` in a buffer of this #shared layout and shape. */
int64_t ll_shared_offset(const Layout *shared, int rank, const int64_t *shape, const int64_t *coord);
/* The element offset of coord in an #nvmma_shared buffer of `shape` whose
 * elements are elem_bytes wide, and its inverse. */
int64_t ll_nvmma_offset(const Layout *l, int rank, const int64_t *shape, int elem_bytes, const int64_t *coord);
void ll_nvmma_coord(const Layout *l, int rank, const int64_t *shape, int elem_bytes, int64_t offset, int64_t *coord);
/* The inverse: the coordinates stored at element offset `offset`. */
void ll_shared_coord(const Layout *shared, int rank, const int64_t *shape, int64_t offset, int64_t *coord);
/* The swizzled #shared layout for a tensor-core operand tile of this shape
 * whose contiguous dimension is order[0] (Triton's choice for mma v2 and
 * ldmatrix; docs/passes.md, "The swizzle of tensor-core operands"): 16-byte
 * units (vec = 16 / element bytes); rows of R bytes share a phase in groups
 * of per_phase = max(1, 128 / R), so that 8 consecutive rows span at least
 * 128 bytes; max_phase = max(1, 8 / per_phase) phases. f16 rows of 64
 * elements: vec 8, per_phase 1, max_phase 8; of 32: 8, 2, 4. The 8 rows of
 * every 8x8 block of 16-byte units (one ldmatrix matrix) then fall in 8
 * different groups of 4 banks. */
const Layout *ll_shared_swizzled(IrModule *m, int rank, const int64_t *shape, const int *order, int elem_bits);
/* max_phase as the map uses it: clamped to the vec-units of one row (1 for
 * 1-D buffers). */
int ll_shared_max_phase(const Layout *shared, int rank, const int64_t *shape);

/* ==== verify.c ==== */

/* Checks operand/result counts and types, required attributes, terminators,
 * shapes, and that every operand is defined before use in an enclosing
 * scope. Reports each problem at the op's location; returns true if valid. */
bool ir_verify(const IrModule *m, DiagList *diags);
bool ir_verify_func(const IrFunc *f, DiagList *diags);

#endif
