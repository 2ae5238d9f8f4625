/*
 * interp.h — the IR interpreter's internals (include/tilec/interp.h is the
 * public side): values, a run's state, and one function per group of ops.
 *
 * The interpreter executes the tile IR that `tilec --emit=ir` prints (the
 * IR after the generic passes: no layouts, no shared memory) on the host,
 * one program after another, each op on whole tiles. Its semantics are the
 * GPU's as docs/language.md and docs/ir.md define them, element by element:
 * integers wrap at their width, division by zero and shifts past the width
 * give what the generated code gives, floats round to their type after
 * every op (f16 and bf16 too), float-to-int conversions saturate, masked
 * loads read nothing, atomics are applied in program order. Where the GPU
 * leaves a choice open (the order of a reduction's or a dot's additions,
 * the approximations of exp and friends) the interpreter computes more
 * accurately: reductions are trees in the element type, a dot accumulates
 * in double and rounds to f32 once, math functions are libm's rounded to
 * the type. docs/interpreter.md lists every difference.
 *
 * Values. Every IR value of a run lives in a slot (IrValue.id numbers them
 * per kernel at load time): an IVal holding its elements, doubles for the
 * float types (already rounded to the type) and int64 for the integers and
 * pointers (sign-extended from their width; i1 is 0 or 1). IVals are
 * reference counted, so reshape and expand_dims share their operand's
 * elements and a loop's carried values move without copies.
 */
#ifndef TILEC_INTERP_INTERNAL_H
#define TILEC_INTERP_INTERNAL_H

#include "ir/ir.h"
#include "tilec/interp.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct IVal IVal;
typedef struct Run Run;
typedef struct Cluster Cluster;

struct IVal {
    int refs;
    bool fl;   /* elements are doubles (a float type), else int64 */
    int64_t n; /* elements: 1 for a scalar */
    union {
        double *f;
        int64_t *i;
    };
    union { /* the element of a scalar (f or i point here) */
        double f1;
        int64_t i1;
    } one;
};

/* A kernel as tc_interp_get_kernel returns it. */
struct tc_interp_kernel {
    tc_interp_module *module;
    IrFunc *func;
    int num_slots; /* values of the kernel, its callees' included (IrValue.id) */
    size_t num_params;
};

struct tc_interp_module {
    IrModule *ir;
    Source src;        /* the IR text (a copy: locations point into it) */
    char *text;
    size_t num_kernels;
    tc_interp_kernel *kernels;
};

#define RUN_SPARE 64

/* Why a run stopped early. */
typedef enum { RUN_OK, RUN_FAULT, RUN_ASSERT, RUN_OOM, RUN_ERROR } RunStatus;

/* One launch: the grid, the current program, the memory, the slots. */
struct Run {
    const tc_interp_kernel *kernel;
    const tc_interp_memory *mem;
    unsigned grid[3];
    int64_t pid[3];
    IVal **slots;
    /* the last allocation found holding an access (bounds checks): [lo, hi) */
    uint64_t known_lo, known_hi;
    RunStatus status;
    char message[1024];
    IVal *free_scalars; /* scalar IVals to reuse (linked through .i) */
    /* element arrays of released tiles, to reuse for tiles of the same size
     * (large ones would otherwise be mapped and unmapped at every op) */
    struct {
        int64_t n;
        int64_t *data;
    } spare[RUN_SPARE];
    int num_spare;
    Cluster *cluster; /* the program's cluster (cluster.c), NULL when programs run alone */
    int rank;         /* its rank in the cluster */
};

/* The programs of one thread-block cluster (cluster.c): one thread each,
 * taking turns. The fields are the mutex's. */
struct Cluster {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ctas;
    int turn;     /* the rank that runs */
    int arrived;  /* ranks at the current cluster_reduce */
    int finished; /* ranks whose program ended */
    int state[IR_MAX_CLUSTER_CTAS];
    uint64_t generation; /* cluster_reduce ops completed */
    bool stop;           /* a program failed, or waits can never end: the rest stop */
    bool deadlock;
    int failed_rank;     /* whose failure stopped it, or -1 */
    double fv[IR_MAX_CLUSTER_CTAS];
    int64_t iv[IR_MAX_CLUSTER_CTAS];
    double fres[2]; /* the results of generations g (index g & 1) */
    int64_t ires[2];
};

/* ---- interp.c: modules (tc_interp_load, in driver/compile.c, parses) ---- */

/* A module holding a copy of the text, before parsing; NULL on out of memory. */
tc_interp_module *interp_module_new(const tc_source *ir);
/* The copy's Source, which the parsed module's locations point into. */
const Source *interp_module_source(const tc_interp_module *m);
/* Whether any function of ir calls another (the inline pass must run first). */
bool interp_module_has_calls(IrModule *ir);
/* Takes the verified, inlined module: checks that every op of its kernels
 * is one the interpreter runs and numbers their values; false with
 * diagnostics otherwise (m keeps ir either way). */
bool interp_module_init(tc_interp_module *m, IrModule *ir, DiagList *diags);

/* ---- interp.c: the run ---- */

/* Stops the run with a message that starts with the op's location. */
bool interp_fail(Run *r, RunStatus st, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Runs region b with its arguments bound to args; the values its
 * terminator (yield, condition, return) passes go to *out (num_out of
 * them, retained). Returns false when the run stops; *returned is set
 * when a `return` of the kernel ended it early. */
bool interp_block(Run *r, IrBlock *b, IVal **args, IVal **out, int num_out, bool *returned);

/* ---- value.c: values and element conversions ---- */

IVal *ival_new(Run *r, bool fl, int64_t n); /* elements uninitialized; NULL on out of memory (run failed) */
IVal *ival_retain(IVal *v);
void ival_release(Run *r, IVal *v);
void ival_free_cache(Run *r);
/* The value of IR value v in the run (never NULL once defined). */
IVal *interp_get(Run *r, const IrValue *v);
/* Binds v (taking the reference). */
void interp_set(Run *r, const IrValue *v, IVal *x);
/* Whether elements of this scalar kind are stored as doubles. */
bool interp_kind_is_float(IrTypeKind k);
/* A double rounded to float kind k (f64: unchanged). */
double interp_round_slow(IrTypeKind k, double v);
static inline double interp_round(IrTypeKind k, double v) {
    if (k == IR_F32)
        return (double)(float)v;
    if (k == IR_F64)
        return v;
    return interp_round_slow(k, v);
}
/* The width of an integer kind (pointers: 64). */
int interp_kind_bits(IrTypeKind k);
/* An integer wrapped to kind k's width (i1: 0 or 1; ptr and i64 unchanged). */
int64_t interp_wrap(IrTypeKind k, int64_t v);
/* Memory images of one element of kind k (bytes: ir_type_bytes). */
void interp_encode(IrTypeKind k, const IVal *v, int64_t i, void *dst);
void interp_decode(IrTypeKind k, const void *src, IVal *v, int64_t i);
/* Element i of a cast from kind `from` to kind `to`. */
void interp_cast(IrTypeKind from, const IVal *x, int64_t xi, IrTypeKind to, IVal *out, int64_t oi);
/* Every element of out (out->n) cast from x (a scalar broadcasts). */
void interp_cast_all(IrTypeKind from, const IVal *x, IrTypeKind to, IVal *out);
/* Element access with broadcasting of scalars: element i, or 0 of a scalar. */
static inline int64_t ival_at(const IVal *v, int64_t i) {
    return v->n == 1 ? 0 : i;
}

/* ---- elementwise.c: arithmetic, comparisons, casts, math ---- */

bool interp_elementwise(Run *r, IrOp *op);
bool interp_constant(Run *r, IrOp *op);

/* ---- memory.c: load, store, atomic ---- */

bool interp_load(Run *r, IrOp *op);
bool interp_store(Run *r, IrOp *op);
bool interp_atomic(Run *r, IrOp *op);

/* ---- tile.c: shapes, reductions, scans, dots ---- */

bool interp_shape_op(Run *r, IrOp *op); /* arange, splat, broadcast, expand_dims, reshape, trans */
bool interp_reduce(Run *r, IrOp *op);
bool interp_scan(Run *r, IrOp *op);
bool interp_dot(Run *r, IrOp *op);

/* ---- cluster.c: thread-block clusters ---- */

void interp_cluster_init(Cluster *c, int ctas);
void interp_cluster_destroy(Cluster *c);
/* Blocks until it is rank's turn to start; false when the cluster stopped. */
bool interp_cluster_start(Cluster *c, int rank);
/* Rank's program ended (ok: without a failure); passes the turn on. */
void interp_cluster_end(Cluster *c, int rank, bool ok);
bool interp_cluster_reduce(Run *r, IrOp *op);

/* ---- debug.c: print, assert ---- */

bool interp_print(Run *r, IrOp *op);
bool interp_assert(Run *r, IrOp *op);

#endif
