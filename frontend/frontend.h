/*
 * frontend.h — the tile language front end: lexer (lexer.l), parser
 * (parser.y), AST (ast.c), and lowering with semantic analysis (lower*.c).
 *
 * Source text -> fe_parse -> AstFile -> fe_lower(constexpr values) -> IrModule.
 *
 * The AST is untyped and shape-free: shapes depend on constexpr values, so
 * types are computed while lowering one specialization of a kernel. Every node
 * carries its source location; all nodes live in the caller's arena.
 * docs/language.md is the reference for the language itself.
 */
/*
 * ---- The language, as the front end implements it (docs/language.md is the
 * user-facing reference written from this) ----
 *
 * LANGUAGE SPEC (the tile language, as decided by the lead; implement exactly this):
 *
 * Top level: several `kernel` and `func` declarations per file; `//` line comments and C-style block comments.
 *   kernel NAME(params) { stmts }
 *   func NAME(params) { stmts }          // inlined at call sites; last statement may be `return expr;`
 * Params: `f16* x`, `const f16* x` (stores through it are errors), `i64 stride`, `f32 scale`, `bool flag`,
 *   `constexpr i32 BLOCK`, `constexpr i32 BLOCK = 1024` (default value: a constant expression),
 *   `constexpr bool CAUSAL = false`, `constexpr f32 EPS = 1e-6`. Default values only on constexpr params.
 *   In a `func`, a param `f32 x` means: f32 scalar OR tile of f32 of any shape (funcs are instantiated per
 *   call-site argument types). A func param may also be `constexpr i32 N` (caller passes a constant).
 * Scalar type names: i1 (alias bool), i8, i16, i32, i64, f16, bf16, f32, f64, f8e4m3, f8e5m2. Pointers: `T*` (one
 *   level only). The fp8 types (f8e4m3, f8e5m2) are for storage, casts, where/select, full/zeros and dot: arithmetic,
 *   comparisons, math, reductions and atomics on them are errors ("cast to f16 or f32 first"), as in Triton.
 * Statements:
 *   let NAME = expr;            immutable
 *   var NAME = expr;            mutable; reassign with `NAME = expr;` or `NAME += expr;` (+= -= *= /= %= &= |= ^= <<= >>=)
 *   expr;                       (calls like store(...), atomic_add(...))
 *   if (expr) stmt [else stmt]  (stmt is usually a { block }; `else if` chains allowed)
 *   for (NAME in range(end)) stmt / range(start, end) / range(start, end, step)
 *   return [expr];              (funcs only; must be the last statement of the func body)
 *   static_assert(expr [, "message"]);
 *   { stmts }                   block scope
 * Expressions, C precedence (lowest first): ?:  ||  &&  |  ^  &  == !=  < <= > >=  << >>  + -  * / %  unary(- + ! ~)  postfix(call, index)
 *   Literals: decimal ints (also 0x hex), floats (1.0, 1e-6, .5, 2.), true, false, inf (keyword, float),
 *   "strings" (only as the label of device_print, the message of device_assert and static_assert).
 *   Calls: NAME(args) — builtins, funcs, and casts when NAME is a scalar type name: f32(x), f16(x), i64(x).
 *   A scalar type name may also appear as a plain argument (dtype): full([BM], -inf, f32), zeros([BM, D], f32).
 *   List literal [a, b] (shapes, permutations) as call arguments.
 *   Indexing x[:, None], x[None, :], x[:, :, None] — each item is `:` (keep dim) or `None` (new axis of size 1).
 * Limits: nesting deeper than FE_MAX_DEPTH (256) in expressions or statements -> error "nesting too deep"
 *   (never a stack overflow). Integer literal > INT64_MAX -> error "integer literal is too large".
 *   Float literal that overflows -> error. Identifiers may be any length.
 *
 * Builtins (type rules are implemented by the lowering; the parser just parses calls):
 *   program_id(axis) num_programs(axis)              axis constexpr 0..2 -> i32
 *   arange(start, end)                               constexprs; end-start a power of two -> tile<[end-start] x i32>
 *   full(shape, value, dtype)  zeros(shape, dtype)   shape is a list of constexprs (powers of two)
 *   reshape(x, shape)  broadcast_to(x, shape)  trans(x) / trans(x, perm)  expand_dims(x, axis)
 *   where(cond, a, b)  minimum(a, b)  maximum(a, b)
 *   min(x, axis) max(x, axis) sum(x, axis)   reductions when x is a tile; for scalar x, min(a, b)/max(a, b) are elementwise
 *   argmax(x [, axis]) argmin(x [, axis])    i32 index of the first extreme (NaN wins); no axis: 1-D x only
 *   cumsum(x, axis [, reverse]) cumprod(x, axis [, reverse])   inclusive scans, x's shape (bools count in i32)
 *   scan(x, axis, f [, reverse])             inclusive scan with func f (a name): f(two scalars of x's type) -> one
 *   exp exp2 log log2 sqrt rsqrt abs erf tanh sigmoid floor ceil sin cos (float), fma(a, b, c), cdiv(a, b)
 *   dot(a, b) / dot(a, b, acc)                       a [M,K], b [K,N] of f16/bf16/f32 (same dtype), M,N,K >= 16 -> f32 [M,N];
 *                                                    or both fp8 (e4m3 and e5m2 may mix): converted to f16 first
 *   load(ptr) / load(ptr, mask) / load(ptr, mask, other)
 *   store(ptr, value) / store(ptr, value, mask)
 *   atomic_add(ptr, value [, mask]) atomic_max atomic_min atomic_xchg  -> old values
 *   static_assert(cond, "msg")
 *   rand(seed, offsets) randn randint                Philox4x32-10 as Triton's (builtins_random.c); umulhi(a, b)
 *   device_print("label", values...) device_assert(cond [, "msg"])   print / assert ops (always compiled in)
 * Types and broadcasting: values are scalars or tiles (rank 1..4, every dim a power of two). NumPy broadcasting
 *   (right-aligned; dims equal or 1; scalars broadcast anywhere). Integer promotion to the wider type; int with float
 *   -> float; f16 with bf16 -> f32; fp8 with a wider float -> that float; f8e4m3 with f8e5m2 -> f16. Literals are "weak": an int literal next to an f16 tile becomes f16, a float
 *   literal next to an f16 tile becomes f16; alone, int literals are i32 (i64 if they don't fit) and float literals f32.
 *   Comparisons give i1. ptr + int -> ptr (offset in elements). `&&`/`||` are elementwise on i1 (no short-circuit).
 *   x ? a : b: constexpr x folds; a runtime i1 x is a select.
 *   `if` on a constexpr condition is folded (only the taken branch is lowered, so the other may reference names
 *   that do not exist in this specialization? NO: both branches are parsed; only the taken one is type-checked).
 *   `if` on a runtime i1 scalar lowers to an IR `if` yielding every outer `var` assigned inside.
 *   `for` lowers to an IR `for` whose iter args are the outer `var`s assigned in the body.
 *   Shadowing a name of an enclosing scope in the same function is an error ("redefinition of 'x'"; note: previous
 *   declaration here). Assigning to a `let` or parameter is an error. Assigning a value of another type to a var:
 *   a tile value must broadcast to the var's shape and have its dtype; weak literals adapt.
 */
#ifndef TILEC_FRONTEND_H
#define TILEC_FRONTEND_H

#include "../ir/ir.h"

typedef struct AstNode AstNode;
typedef struct AstFile AstFile;
typedef struct AstTypeSpec AstTypeSpec;
typedef struct FeConstexpr FeConstexpr;
typedef struct FeOptions FeOptions;

typedef enum {
    /* ---- expressions ---- */
    AST_INT_LIT,       /* ival (always >= 0; `-1` is NEG of 1) */
    AST_FLOAT_LIT,     /* fval (finite, or inf for the `inf` keyword) */
    AST_BOOL_LIT,      /* ival: 0 or 1 */
    AST_STRING_LIT,    /* str: contents without quotes, escapes resolved */
    AST_IDENT,         /* name */
    AST_TYPE,          /* type: a scalar type name used as a value (`f32` in full(...), or a cast callee) */
    AST_UNARY,         /* op (AST_OP_NEG, AST_OP_PLUS, AST_OP_NOT, AST_OP_BITNOT), lhs */
    AST_BINARY,        /* op, lhs, rhs */
    AST_TERNARY,       /* cond, lhs (true value), rhs (false value) */
    AST_CALL,          /* lhs: callee (AST_IDENT or AST_TYPE); items: arguments */
    AST_INDEX,         /* lhs: the indexed expression; items: AST_SLICE or AST_NONE per dimension */
    AST_SLICE,         /* `:` inside an index */
    AST_NONE,          /* `None` inside an index: a new axis of size 1 */
    AST_LIST,          /* [a, b, ...]: items (shapes, permutations) */
    AST_NAMED,         /* name = rhs: a named argument (only in @autotune and its config(...)) */
    /* ---- statements ---- */
    AST_LET,           /* name, rhs: `let name = rhs;` (immutable) */
    AST_VAR,           /* name, rhs: `var name = rhs;` (reassignable) */
    AST_ASSIGN,        /* name, op (AST_OP_ASSIGN or the compound operator AST_OP_ADD...), rhs */
    AST_EXPR_STMT,     /* lhs: an expression evaluated for its effect (store, atomic_add, ...) */
    AST_BLOCK,         /* items: statements */
    AST_IF,            /* cond, body (then statement), els (else statement or NULL) */
    AST_FOR,           /* name: induction variable; items: range arguments (1 to 3); body */
    AST_RETURN,        /* lhs: value or NULL */
    AST_WHILE,         /* cond, body */
    AST_BREAK,         /* `break;` */
    AST_CONTINUE,      /* `continue;` */
    AST_STATIC_ASSERT, /* cond, str: message or NULL */
    /* ---- declarations ---- */
    AST_PARAM,         /* name, type, rhs: default value (constexpr only) or NULL */
    AST_KERNEL,        /* name, items: AST_PARAM list, body: AST_BLOCK, lhs: its @autotune clause (an
                          AST_CALL of `autotune` with AST_NAMED arguments) or NULL */
    AST_FUNC,          /* name, items: AST_PARAM list, body: AST_BLOCK */
} AstKind;

typedef enum {
    AST_OP_ADD, AST_OP_SUB, AST_OP_MUL, AST_OP_DIV, AST_OP_MOD,
    AST_OP_SHL, AST_OP_SHR,
    AST_OP_LT, AST_OP_LE, AST_OP_GT, AST_OP_GE, AST_OP_EQ, AST_OP_NE,
    AST_OP_BITAND, AST_OP_BITOR, AST_OP_BITXOR,
    AST_OP_LAND, AST_OP_LOR,
    AST_OP_NEG, AST_OP_PLUS, AST_OP_NOT, AST_OP_BITNOT,
    AST_OP_ASSIGN, /* plain `=` in AST_ASSIGN */
} AstOp;

/* The declared type of a parameter: `f16*`, `const f16*`, `i64`,
 * `constexpr i32`, `constexpr bool`, or (func parameters) `f32` meaning
 * "f32 scalar or tile of f32, any shape". */
struct AstTypeSpec {
    IrTypeKind scalar; /* element or pointee type; bool is IR_I1 */
    bool is_pointer;   /* `T*` */
    bool is_const;     /* `const T*`: stores through it are errors */
    bool is_constexpr; /* specialization parameter */
    int64_t divisibility; /* `divisible_by(N)`: address (bytes) or value is a multiple of N; 0 = no claim */
    bool is_dtype;         /* `constexpr dtype T`: a type parameter (its value is a scalar type) */
    const char *type_param; /* `T* x`, `T s`: the scalar type is the value of dtype parameter T (else `scalar`) */
};

struct AstNode {
    AstKind kind;
    SrcLoc loc;           /* first token of the construct */
    SrcLoc op_loc;        /* BINARY: the operator, where errors about the operation point */
    AstOp op;             /* UNARY, BINARY, ASSIGN */
    int64_t ival;         /* INT_LIT, BOOL_LIT */
    double fval;          /* FLOAT_LIT */
    const char *name;     /* IDENT, LET, VAR, ASSIGN, FOR, PARAM, KERNEL, FUNC */
    const char *str;      /* STRING_LIT, STATIC_ASSERT message */
    AstTypeSpec type;     /* TYPE, PARAM */
    AstNode *lhs, *rhs;   /* operands (see each kind) */
    AstNode *cond;        /* TERNARY, IF, STATIC_ASSERT */
    AstNode *body, *els;  /* IF, FOR, KERNEL, FUNC */
    AstNode **items;      /* CALL args, INDEX items, LIST, BLOCK statements, FOR range args, params */
    int num_items;
    int depth;            /* expression nesting depth, for the depth limit */
};

struct AstFile {
    const Source *src;
    AstNode **decls; /* AST_KERNEL and AST_FUNC in source order */
    int num_decls;
};

/* ==== parser.y / lexer.l ==== */

/* Parses a whole file. Always returns a file (possibly with fewer decls);
 * syntax errors go to diags (several per file where recovery is possible). */
AstFile *fe_parse(Arena *a, const Source *src, DiagList *diags);

/* Deepest expression or statement nesting accepted; deeper input is an error. */
#define FE_MAX_DEPTH 256

/* ==== ast.c ==== */

AstNode *ast_new(Arena *a, AstKind kind, SrcLoc loc);
void ast_push(Arena *a, AstNode *list_owner, AstNode *item); /* appends to items */
const char *ast_kind_name(AstKind k);
const char *ast_op_spelling(AstOp op); /* "+", "<=", "&&", ... */
/* Readable indented tree, for `tilec --emit=ast`. */
void fe_dump_ast(const AstFile *f, Buf *out);

/* ==== ast_to_ir.c: semantic analysis and lowering to IR ==== */

/* A constexpr value from -D NAME=VALUE or the API. */
struct FeConstexpr {
    const char *name;
    bool is_float; /* value in f, else in i (true/false are 1/0) */
    bool is_dtype; /* a scalar type: i holds its IrTypeKind */
    int64_t i;
    double f;
};

/* A fact about a runtime parameter from the caller (JIT specialization). */
typedef struct FeParamSpec {
    const char *name;
    int64_t divisibility; /* pointer address in bytes or integer value is a multiple of this */
} FeParamSpec;

struct FeOptions {
    const char *kernel; /* lower only this kernel; NULL = every kernel */
    const FeConstexpr *constexprs;
    int num_constexprs;
    int num_warps; /* recorded as the kernel attribute num_warps (default 4) */
    const FeParamSpec *params; /* divisibility facts by parameter name (may be NULL) */
    int num_params;
};

/* ==== tune.c: a kernel's search space (@autotune) ==== */

#define FE_TUNE_MAX_CONFIGS 65536

/* One configuration: the tuned constexpr values (names as in the source),
 * and the compile options it sets (num_warps, num_stages and
 * min_programs_per_sm 0 and warp_specialize -1 when it sets none). */
typedef struct FeTuneConfig {
    FeConstexpr *cx;
    int num_cx;
    int num_warps, num_stages, warp_specialize, min_programs_per_sm;
} FeTuneConfig;

typedef struct FeTuneSpace {
    bool declared;      /* the kernel has an @autotune clause */
    const char **keys;  /* key = [...]: runtime parameter names */
    int *key_params;    /* and their indices among the runtime parameters */
    IrTypeKind *key_types; /* and their types (i8 .. i64) */
    int num_keys;
    FeTuneConfig *configs;
    int num_configs;
} FeTuneSpace;

/* Checks kernel k's @autotune clause, reporting every error, and with out
 * lists its configurations under the caller's constexprs cx (tune.c's
 * header says which and in what order). Everything lives in a. False after
 * an error. A kernel without the clause has an empty space. */
bool fe_tune_space(Arena *a, const AstNode *k, const FeConstexpr *cx, int num_cx, DiagList *diags,
                   FeTuneSpace *out);

/* Specializes and lowers kernels (and the funcs they call) to a new module.
 * Returns NULL if any error was reported. */
IrModule *fe_lower(const AstFile *f, const FeOptions *opts, DiagList *diags);

#endif
