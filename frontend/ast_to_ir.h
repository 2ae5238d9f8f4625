/*
 * ast_to_ir.h — private interface between the files of the lowering:
 *
 *   ast_to_ir.c   the driver: kernels and their specialization, funcs and
 *                 their instantiation, scopes, statements, control flow;
 *   ast_to_ir_expr.c  values, types, promotion, broadcasting, operators;
 *   builtins.c    the type rule and the lowering of every builtin;
 *   builtins_random.c  rand, randn and randint (Philox).
 *
 * The central type is Val, what lowering an expression produces: either a
 * compile-time scalar constant (folded in the front end, so that shapes,
 * constexpr `if`s, static_asserts and ranges can depend on it) or an IR value.
 * Constants become IR `constant` ops only when a runtime op consumes them.
 *
 * Names here are prefixed `lower_` (functions) or are types private to the
 * front end; nothing in this header is visible outside frontend/.
 */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include "frontend.h"

typedef struct Val Val;
typedef struct Shape Shape;
typedef struct Symbol Symbol;
typedef struct FuncInst FuncInst;
typedef struct DeclInfo DeclInfo;
typedef struct Lower Lower;
typedef struct LoopCtx LoopCtx;

/* Largest tile, in elements (the IR's limit, as Triton's TRITON_MAX_TENSOR_NUMEL). */
#define LOWER_MAX_NUMEL IR_MAX_TILE_ELEMENTS

typedef enum {
    VAL_ERROR, /* an error was reported; every use is silent (uses nothing) */
    VAL_VOID,  /* no value: store(), a func without return (uses what) */
    VAL_CONST, /* a compile-time scalar (uses type, weak, i or f) */
    VAL_IR,    /* a runtime value (uses v; type is v->type) */
} ValKind;

struct Val {
    ValKind kind;
    const IrType *type; /* CONST: its scalar type (weak: the default, i32/i64/f32); IR: v->type */
    bool weak;          /* CONST: an untyped literal (or folded from literals only); adapts to the other operand */
    int64_t i;          /* CONST int: the value, sign-extended from the type's width (i1: 0 or 1) */
    double f;           /* CONST float: the value, rounded to the type (weak: a double) */
    IrValue *v;         /* IR */
    const AstNode *const_param; /* pointers: the `const T*` parameter this pointer derives from, or NULL */
    const char *what;           /* VOID: what gave no value ("store", "func 'f'"), for the message */
};

/* A tile shape; rank 0 is a scalar. */
struct Shape {
    int rank;                 /* 0..IR_MAX_RANK */
    int64_t dim[IR_MAX_RANK]; /* extent of each dimension */
};

typedef enum {
    SYM_LET,       /* `let`: immutable */
    SYM_VAR,       /* `var`: reassignable; carried through loops and ifs */
    SYM_PARAM,     /* runtime parameter of a kernel or func */
    SYM_CONSTEXPR, /* constexpr parameter: always a VAL_CONST */
    SYM_LOOP,      /* induction variable of a `for` */
    SYM_DTYPE,     /* `constexpr dtype T`: a type parameter; the type is in Symbol.type */
} SymKind;

/* A name in scope. Symbols live on one stack (Lower.syms); a block scope is
 * a mark on that stack, a function's symbols start at Lower.frame. */
struct Symbol {
    const char *name; /* as written */
    SymKind kind;
    Val val;             /* current binding */
    const IrType *type;  /* SYM_VAR: the var's fixed type (NULL if its initializer had an error); SYM_DTYPE: the type */
    const AstNode *decl; /* declaring node (LET, VAR, PARAM, FOR), for "previous declaration" notes */
    bool carried;        /* scratch: assigned inside the loop being scanned */
    bool hidden;         /* a flag of the control flow (return, break, continue) or a while's
                            induction value: a var no name reaches (not in the index) */
    int shadowed;        /* index of the previous symbol of the same name (NameIndex), or -1 */
};

/* One parameter of a func instance's signature. */
typedef struct ParamSig {
    const IrType *type; /* the argument's type after conversion (scalar or tile); CONSTEXPR: scalar type */
    bool is_const;      /* pointer parameter declared `const T*` */
    Val value;          /* constexpr parameter: its constant value */
} ParamSig;

/* A func specialized for one argument signature: `func @silu`, `@silu.1`... */
struct FuncInst {
    ParamSig *sig;               /* one per AST parameter */
    IrFunc *ir;                  /* the IR func */
    const IrType *result;        /* returned type, NULL when it returns nothing */
    const AstNode *result_const; /* the returned pointer derives from this const parameter */
    bool failed;                 /* its body had errors: calls give VAL_ERROR */
    FuncInst *next;              /* other instances of the same func */
};

/* Names to the index of their newest entry (symbols, declarations): an
 * open-addressing hash table, so that a lookup does not scan every name in
 * scope. Entries are never removed; a popped name maps to the symbol it had
 * shadowed, or to -1. */
typedef struct NameIndex {
    const char **keys; /* NULL marks an empty slot */
    int *vals;
    int cap;           /* slots, a power of two; 0 before the first insert */
    int count;         /* keys present */
} NameIndex;

/* Most nested func instantiations (a call lowers the callee's body before
 * returning): the call depth, as FE_MAX_DEPTH bounds expression nesting. */
#define LOWER_MAX_CALL_DEPTH 256

/* Per top-level declaration. */
struct DeclInfo {
    const AstNode *decl; /* AST_KERNEL or AST_FUNC */
    FuncInst *instances; /* AST_FUNC: instances made so far, newest first */
    int num_instances;   /* for the name suffix */
    bool active;         /* AST_FUNC: being instantiated now (a call to it is recursion) */
};

struct Lower {
    IrModule *m;                       /* the module being built */
    const AstFile *file;               /* what is lowered */
    const FeOptions *opts;             /* kernel selection, constexpr values, num_warps */
    DiagList *diags;                   /* where errors go */
    Arena tmp;                         /* symbols, snapshots, instances: freed when lowering ends */
    IrBuilder b;                       /* insertion point in the function being lowered */
    IrFunc *fn;                        /* the function being lowered */
    const AstNode *fn_decl;            /* its declaration (AST_KERNEL or AST_FUNC) */
    Symbol *syms;                      /* the scope stack */
    int num_syms;                      /* symbols in use */
    int cap_syms;                      /* symbols allocated */
    int frame;                         /* index of the first symbol of the current function */
    int *vars;                         /* indices of the SYM_VAR symbols in use, ascending: what an
                                          `if` or a loop may change, so all they snapshot */
    int num_vars, cap_vars;
    NameIndex sym_index;               /* name -> its newest symbol */
    NameIndex decl_index;              /* name -> its first declaration */
    int ret_flag;                      /* the current function's hidden `return` flag (a symbol), or -1 */
    bool returns_value;                /* the current func ends with `return expr;` */
    LoopCtx *loop;                     /* the innermost loop of the current function being lowered */
    int region_depth;                  /* regions of the current function open around the insertion point */
    bool regions_exhausted;            /* more than IR_MAX_REGION_DEPTH: reported once, nothing deeper built */
    int call_depth;                    /* func instantiations being lowered, one inside the other */
    const AstNode *outer_call;         /* the call that started the outermost of them */
    const char *stack_base;            /* frame address where lowering started */
    size_t stack_limit;                /* bytes of stack below stack_base lowering may use */
    bool stack_exhausted;              /* that limit was hit: everything after is an error, reported once */
    DeclInfo *decls;                   /* one per file->decls entry */
    int num_decls;                     /* entries in decls */
    const IrType *scalars[IR_F8E5M2 + 1]; /* interned scalar types, filled on first use */
};

/* ==== ast_to_ir.c ==== */

/* False, with an error at n reported once, when the lowering's recursion has
 * used up its stack (nested calls inside nested expressions...): the caller
 * then returns without descending further. */
bool lower_stack_ok(Lower *L, const AstNode *n);

Symbol *lower_lookup(Lower *L, const char *name);
/* A call to a user func: instantiates it for the argument types if needed. */
Val lower_call_func(Lower *L, const AstNode *call, DeclInfo *d);
/* The func that identifier n names as the combine of builtin `builtin`,
 * instantiated for `arity` scalars of type elem, returning elem, without
 * side effects; NULL with an error at n otherwise (not a func, another
 * arity or parameter type, another result, recursion). */
FuncInst *lower_combine_func(Lower *L, const AstNode *n, const char *builtin, const IrType *elem, int arity);
DeclInfo *lower_find_decl(Lower *L, const char *name);

/* ==== ast_to_ir_expr.c ==== */

Val val_error(void);
Val val_void(const char *what);
Val val_ir(IrValue *v);
Val val_int(const IrType *type, int64_t i);  /* typed integer constant (wrapped to the type) */
Val val_float(const IrType *type, double f); /* typed float constant (rounded to the type) */
Val val_weak_int(Lower *L, int64_t i);
Val val_weak_float(Lower *L, double f);
const IrType *val_type(const Val *x); /* CONST: scalar type; IR: value type; else NULL */
const IrType *val_elem(const Val *x); /* element type */
Shape val_shape(const Val *x);
bool val_is_ptr(const Val *x);
bool val_truthy(const Val *x); /* CONST: nonzero */

const IrType *lower_scalar(Lower *L, IrTypeKind k);
const IrType *lower_tile_type(Lower *L, const IrType *elem, const Shape *s); /* scalar when rank 0 */
const char *lower_type_str(Lower *L, const IrType *t);
const char *lower_val_str(Lower *L, const Val *x); /* "tile<64xf32>", "f32", "integer literal" */
const char *lower_shape_str(Lower *L, const Shape *s);
/* Reports an error at n's location. */
void lower_error(Lower *L, const AstNode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sets the location new ops get. */
void lower_at(Lower *L, const AstNode *n);

/* The value as IR: constants become `constant` ops of their type. */
IrValue *lower_ir(Lower *L, const Val *x);
/* Converts the element type (cast, or folds a constant); shape unchanged. */
Val lower_convert(Lower *L, Val x, const IrType *elem, const AstNode *n);
/* Broadcasts to a shape (splat, expand_dims, broadcast); errors name `what`. */
Val lower_broadcast(Lower *L, Val x, const Shape *s, const AstNode *n, const char *what);
/* NumPy broadcast of two shapes; false if incompatible. */
bool lower_broadcast_shapes(const Shape *a, const Shape *b, Shape *out);
/* Checks a shape made from user values: ranks, powers of two, size. */
bool lower_check_shape(Lower *L, const Shape *s, const AstNode *n);
/* The element type both values convert to (the promotion rules); NULL with an
 * error naming `op` if none. Pointers are not numbers here. */
const IrType *lower_promote(Lower *L, const Val *a, const Val *b, const AstNode *n, const char *op);
/* True, with an error naming `op`, when e is an fp8 type: fp8 values are
 * stored, converted, selected and multiplied by dot, never computed on. */
bool lower_reject_fp8(Lower *L, const IrType *e, const AstNode *n, const char *op);
/* Converts every value to a common element type and shape (where, fma, load
 * operands...); `opname` names the operation in errors. */
bool lower_unify(Lower *L, Val *vals, int n, bool same_elem, const AstNode *node, const char *opname);
/* A binary operator of the language (arithmetic, comparison, logic,
 * pointer arithmetic): checks, promotion, broadcasting, folding. */
Val lower_binop(Lower *L, const AstNode *n, AstOp op, Val a, Val b);
/* An elementwise IR op on two numbers (cmp with `pred`), promoted and
 * broadcast; `spelling` names it in errors. */
Val lower_arith(Lower *L, const AstNode *n, IrOpcode opc, const char *pred, const char *spelling, Val a, Val b);
/* select(c, a, b) with the rules of where(): c is i1, a and b unify. */
Val lower_select(Lower *L, const AstNode *n, Val c, Val a, Val b, const char *what);
Val lower_expr(Lower *L, const AstNode *n);     /* a value is required */
Val lower_expr_any(Lower *L, const AstNode *n); /* may be VOID */
/* A constexpr integer argument; false (error reported) otherwise. */
bool lower_const_int(Lower *L, const AstNode *n, const char *what, int64_t *out);
/* Is this value a bool condition? Makes it i1 (ints and floats compare != 0). */
Val lower_condition(Lower *L, Val c, const AstNode *n, const char *what);

/* ==== builtins.c ==== */

/* Lowers a call to a builtin; returns false if `name` is not a builtin. */
bool lower_builtin(Lower *L, const AstNode *call, const char *name, Val *out);
bool lower_is_builtin(const char *name);
/* Casts: f32(x), i64(x), bool(x)... */
Val lower_cast_call(Lower *L, const AstNode *call, const AstNode *type);
/* n as a type name: an AST_TYPE node, or an identifier bound to a dtype
 * parameter (a type node is made for it). NULL if n names no type. */
const AstNode *lower_as_type(Lower *L, const AstNode *n);

/* ==== builtins_random.c ==== */

/* rand, randn, randint (`name`) of a call (seed, offsets): Philox4x32-10
 * expanded into IR ops, as Triton's tl.rand, tl.randn, tl.randint. */
Val lower_random(Lower *L, const AstNode *call, const char *name);

#endif
