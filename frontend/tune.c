/*
 * tune.c — a kernel's search space: the @autotune clause (docs/language.md,
 * "Autotuning").
 *
 *     @autotune(key = [M, N, K],
 *               BM = [64, 128], BN = [128, 256], num_warps = [4, 8],
 *               configs = [config(BM = 256, BN = 128, num_warps = 8, num_stages = 4)],
 *               where = BM * BN <= 32768)
 *     kernel matmul(...)
 *
 * The clause is a list of named arguments: `key`, the runtime integer
 * parameters whose values select a tuned configuration; `NAME = [values]`,
 * one axis of a cartesian product per constexpr parameter (or num_warps,
 * num_stages, warp_specialize, min_programs_per_sm); `configs`, explicit
 * configurations added after the product's; `where`, a constant condition a
 * configuration must meet. fe_tune_space checks the clause and, given the
 * caller's constexprs, lists the configurations: those whose tuned values the
 * caller does not fix otherwise and which meet `where`, the product's first
 * (its last axis varying fastest), then the explicit ones, in source order.
 */
#include "frontend.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A value of the clause: an integer, bool, float or (dtype parameters) a
 * type, each from a literal. */
typedef struct TVal {
    enum { TV_INT, TV_BOOL, TV_FLOAT, TV_TYPE, TV_ERROR } kind;
    int64_t i; /* INT, BOOL (0/1), TYPE (an IrTypeKind) */
    double f;
} TVal;

/* What a tuned name is: a constexpr parameter (its declaration) or one of
 * the compile options. */
typedef enum { TN_CONSTEXPR, TN_NUM_WARPS, TN_NUM_STAGES, TN_WARP_SPECIALIZE, TN_MIN_PROGRAMS } TNameKind;

typedef struct TAxis {
    const char *name;
    TNameKind kind;
    const AstNode *param; /* TN_CONSTEXPR */
    const AstNode *at;    /* the argument, for errors */
    TVal *vals;
    int num_vals;
} TAxis;

typedef struct Tune {
    Arena *a;
    DiagList *diags;
    const AstNode *k;
    bool ok;
    TAxis axes[64]; /* the product's axes, then the explicit configs' names */
    int num_axes;
} Tune;

static const AstNode *find_param(const AstNode *k, const char *name) {
    for (int i = 0; i < k->num_items; i++)
        if (k->items[i]->kind == AST_PARAM && strcmp(k->items[i]->name, name) == 0)
            return k->items[i];
    return NULL;
}

static void terr(Tune *t, const AstNode *at, const char *fmt, const char *a1, const char *a2) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a1 ? a1 : "", a2 ? a2 : "");
    diag_error(t->diags, at->loc, "%s", msg);
    t->ok = false;
}

/* What `name` (an argument of the clause or of config(...)) tunes; false
 * after an error. */
static bool tuned_name(Tune *t, const AstNode *at, const char *name, TNameKind *kind, const AstNode **param) {
    *param = NULL;
    if (strcmp(name, "num_warps") == 0) {
        *kind = TN_NUM_WARPS;
        return true;
    }
    if (strcmp(name, "num_stages") == 0) {
        *kind = TN_NUM_STAGES;
        return true;
    }
    if (strcmp(name, "warp_specialize") == 0) {
        *kind = TN_WARP_SPECIALIZE;
        return true;
    }
    if (strcmp(name, "min_programs_per_sm") == 0) {
        *kind = TN_MIN_PROGRAMS;
        return true;
    }
    const AstNode *p = find_param(t->k, name);
    if (!p || !p->type.is_constexpr) {
        terr(t, at,
             p ? "@autotune: '%s' is a runtime parameter; only constexpr parameters, num_warps, num_stages, "
                 "warp_specialize and min_programs_per_sm are tuned (a runtime parameter goes in key = [...])"
               : "@autotune: '%s' is not a constexpr parameter of the kernel, nor num_warps, num_stages, "
                 "warp_specialize or min_programs_per_sm",
             name, NULL);
        return false;
    }
    *kind = TN_CONSTEXPR;
    *param = p;
    return true;
}

/* A literal value: 64, -1, 0.5, true, f16. */
static TVal literal(Tune *t, const AstNode *n) {
    TVal v = {.kind = TV_ERROR};
    bool neg = false;
    const AstNode *m = n;
    if (m->kind == AST_UNARY && (m->op == AST_OP_NEG || m->op == AST_OP_PLUS)) {
        neg = m->op == AST_OP_NEG;
        m = m->lhs;
        if (m->kind != AST_INT_LIT && m->kind != AST_FLOAT_LIT)
            m = NULL;
    }
    if (m && m->kind == AST_INT_LIT) {
        v.kind = TV_INT;
        v.i = neg ? -m->ival : m->ival;
    } else if (m && m->kind == AST_FLOAT_LIT) {
        v.kind = TV_FLOAT;
        v.f = neg ? -m->fval : m->fval;
    } else if (m && m->kind == AST_BOOL_LIT) {
        v.kind = TV_BOOL;
        v.i = m->ival;
    } else if (m && m->kind == AST_TYPE && !m->type.is_pointer) {
        v.kind = TV_TYPE;
        v.i = m->type.scalar;
    } else {
        terr(t, n, "@autotune: a tuned value must be a literal (an integer, a float, true, false or a type name)",
             NULL, NULL);
    }
    return v;
}

static bool scalar_is_float(IrTypeKind k) {
    return k == IR_F16 || k == IR_BF16 || k == IR_F32 || k == IR_F64 || k == IR_F8E4M3 || k == IR_F8E5M2;
}

/* Converts v to what `name` takes (integers, bools and types only: the
 * tuning table stores integers); TV_ERROR after an error. */
static TVal fit(Tune *t, const AstNode *at, const char *name, TNameKind kind, const AstNode *param, TVal v) {
    TVal bad = {.kind = TV_ERROR};
    if (v.kind == TV_ERROR)
        return bad;
    switch (kind) {
    case TN_NUM_WARPS:
        if (v.kind != TV_INT || v.i < 1 || v.i > TC_MAX_NUM_WARPS || (v.i & (v.i - 1)) != 0) {
            terr(t, at, "@autotune: num_warps takes powers of two from 1 to 32", NULL, NULL);
            return bad;
        }
        return v;
    case TN_NUM_STAGES:
        if (v.kind != TV_INT || v.i < 1 || v.i > TC_MAX_NUM_STAGES) {
            terr(t, at, "@autotune: num_stages takes integers from 1 to 16", NULL, NULL);
            return bad;
        }
        return v;
    case TN_WARP_SPECIALIZE:
        if (v.kind != TV_BOOL && !(v.kind == TV_INT && (v.i == 0 || v.i == 1))) {
            terr(t, at, "@autotune: warp_specialize takes true or false", NULL, NULL);
            return bad;
        }
        v.kind = TV_BOOL;
        return v;
    case TN_MIN_PROGRAMS:
        if (v.kind != TV_INT || v.i < 1 || v.i > TC_MAX_PROGRAMS_PER_SM) {
            terr(t, at, "@autotune: min_programs_per_sm takes integers from 1 to 32", NULL, NULL);
            return bad;
        }
        return v;
    case TN_CONSTEXPR: break;
    }
    const AstTypeSpec *ty = &param->type;
    if (ty->is_dtype) {
        if (v.kind != TV_TYPE) {
            terr(t, at, "@autotune: '%s' is a type parameter: its values are type names such as f16", name, NULL);
            return bad;
        }
        return v;
    }
    if (v.kind == TV_TYPE) {
        terr(t, at, "@autotune: '%s' is not a type parameter: its values are not type names", name, NULL);
        return bad;
    }
    if (ty->scalar == IR_I1) {
        if (v.kind == TV_INT && (v.i == 0 || v.i == 1))
            v.kind = TV_BOOL;
        if (v.kind != TV_BOOL) {
            terr(t, at, "@autotune: '%s' is bool: its values are true or false", name, NULL);
            return bad;
        }
        return v;
    }
    if (scalar_is_float(ty->scalar)) {
        terr(t, at, "@autotune: '%s' is a float parameter: tuned values are integers, bools and types", name, NULL);
        return bad;
    }
    if (v.kind != TV_INT) {
        terr(t, at, "@autotune: '%s' is %s: its values are integers", name, ir_scalar_name(ty->scalar));
        return bad;
    }
    int bits = ty->scalar == IR_I8 ? 8 : ty->scalar == IR_I16 ? 16 : ty->scalar == IR_I32 ? 32 : 64;
    if (bits < 64 && (v.i < -((int64_t)1 << (bits - 1)) || v.i >= ((int64_t)1 << (bits - 1)))) {
        terr(t, at, "@autotune: a value of '%s' does not fit its type %s", name, ir_scalar_name(ty->scalar));
        return bad;
    }
    return v;
}

static bool same_val(TVal a, TVal b) {
    if (a.kind == TV_FLOAT || b.kind == TV_FLOAT)
        return (a.kind == TV_FLOAT ? a.f : (double)a.i) == (b.kind == TV_FLOAT ? b.f : (double)b.i);
    return a.i == b.i;
}

static int axis_index(const Tune *t, const char *name) {
    for (int i = 0; i < t->num_axes; i++)
        if (strcmp(t->axes[i].name, name) == 0)
            return i;
    return -1;
}

/* An axis for `name`, made if new; -1 after an error. */
static int axis_for(Tune *t, const AstNode *at, const char *name) {
    int i = axis_index(t, name);
    if (i >= 0)
        return i;
    TNameKind kind;
    const AstNode *param;
    if (!tuned_name(t, at, name, &kind, &param))
        return -1;
    if (t->num_axes == (int)(sizeof t->axes / sizeof t->axes[0])) {
        terr(t, at, "@autotune: more than 64 tuned names", NULL, NULL);
        return -1;
    }
    TAxis *ax = &t->axes[t->num_axes];
    memset(ax, 0, sizeof *ax);
    ax->name = name;
    ax->kind = kind;
    ax->param = param;
    ax->at = at;
    return t->num_axes++;
}

/* ---- where: a constant condition ---- */

typedef struct Env {
    Tune *t;
    const TVal *vals;   /* the configuration: one per axis (TV_ERROR: not set) */
    const FeConstexpr *cx;
    int num_cx;
    bool check_only;    /* names are checked, nothing is evaluated */
} Env;

static TVal tv_int(int64_t i) { return (TVal){.kind = TV_INT, .i = i}; }
static TVal tv_bool(bool b) { return (TVal){.kind = TV_BOOL, .i = b}; }
static TVal tv_float(double f) { return (TVal){.kind = TV_FLOAT, .f = f}; }
static double as_f(TVal v) { return v.kind == TV_FLOAT ? v.f : (double)v.i; }

static TVal name_value(Env *e, const AstNode *n) {
    TVal bad = {.kind = TV_ERROR};
    int ai = axis_index(e->t, n->name);
    const AstNode *p = find_param(e->t->k, n->name);
    if (ai < 0 && (!p || !p->type.is_constexpr)) {
        terr(e->t, n, "@autotune: where uses '%s', which is neither a tuned name nor a constexpr parameter", n->name,
             NULL);
        return bad;
    }
    if (e->check_only)
        return tv_int(0);
    if (ai >= 0 && e->vals[ai].kind != TV_ERROR)
        return e->vals[ai];
    for (int i = 0; i < e->num_cx; i++)
        if (strcmp(e->cx[i].name, n->name) == 0) {
            const FeConstexpr *c = &e->cx[i];
            return c->is_dtype ? (TVal){.kind = TV_TYPE, .i = c->i} : c->is_float ? tv_float(c->f) : tv_int(c->i);
        }
    if (ai >= 0 && e->t->axes[ai].kind == TN_NUM_WARPS)
        return tv_int(TC_DEFAULT_NUM_WARPS);
    if (ai >= 0 && e->t->axes[ai].kind == TN_NUM_STAGES)
        return tv_int(TC_DEFAULT_NUM_STAGES);
    if (ai >= 0 && e->t->axes[ai].kind == TN_WARP_SPECIALIZE)
        return tv_bool(false);
    if (ai >= 0 && e->t->axes[ai].kind == TN_MIN_PROGRAMS)
        return tv_int(1);
    if (p && p->rhs) {
        Tune probe = *e->t;
        probe.ok = true;
        DiagList quiet;
        diag_init(&quiet);
        probe.diags = &quiet;
        TVal v = literal(&probe, p->rhs);
        diag_free(&quiet);
        if (probe.ok)
            return v;
    }
    terr(e->t, n,
         "@autotune: where uses '%s', which has no value here (pass it as a constexpr, or give it a literal "
         "default)",
         n->name, NULL);
    return bad;
}

static TVal eval(Env *e, const AstNode *n, int depth) {
    TVal bad = {.kind = TV_ERROR};
    if (depth > FE_MAX_DEPTH) {
        terr(e->t, n, "@autotune: where is nested too deeply", NULL, NULL);
        return bad;
    }
    switch (n->kind) {
    case AST_INT_LIT: return tv_int(n->ival);
    case AST_FLOAT_LIT: return tv_float(n->fval);
    case AST_BOOL_LIT: return tv_bool(n->ival != 0);
    case AST_TYPE: return (TVal){.kind = TV_TYPE, .i = n->type.scalar};
    case AST_IDENT: return name_value(e, n);
    case AST_UNARY: {
        TVal a = eval(e, n->lhs, depth + 1);
        if (a.kind == TV_ERROR || e->check_only)
            return a;
        switch (n->op) {
        case AST_OP_NEG: return a.kind == TV_FLOAT ? tv_float(-a.f) : tv_int((int64_t)(0 - (uint64_t)a.i));
        case AST_OP_PLUS: return a;
        case AST_OP_NOT: return tv_bool(a.kind == TV_FLOAT ? a.f == 0 : a.i == 0);
        default: return a.kind == TV_FLOAT ? (terr(e->t, n, "@autotune: '~' of a float", NULL, NULL), bad)
                                           : tv_int(~a.i);
        }
    }
    case AST_TERNARY: {
        TVal c = eval(e, n->cond, depth + 1);
        if (c.kind == TV_ERROR)
            return c;
        if (e->check_only) {
            TVal l = eval(e, n->lhs, depth + 1), r = eval(e, n->rhs, depth + 1);
            return l.kind == TV_ERROR ? l : r;
        }
        return eval(e, (c.kind == TV_FLOAT ? c.f != 0 : c.i != 0) ? n->lhs : n->rhs, depth + 1);
    }
    case AST_CALL: {
        const char *f = n->lhs->kind == AST_IDENT ? n->lhs->name : "";
        if ((strcmp(f, "min") != 0 && strcmp(f, "max") != 0 && strcmp(f, "cdiv") != 0) || n->num_items != 2) {
            terr(e->t, n, "@autotune: where may call min(a, b), max(a, b) and cdiv(a, b) only", NULL, NULL);
            return bad;
        }
        TVal a = eval(e, n->items[0], depth + 1), b = eval(e, n->items[1], depth + 1);
        if (a.kind == TV_ERROR || b.kind == TV_ERROR || e->check_only)
            return a.kind == TV_ERROR ? a : b;
        if (strcmp(f, "cdiv") == 0) {
            if (a.kind == TV_FLOAT || b.kind == TV_FLOAT || b.i == 0 || (b.i == -1 && a.i == INT64_MIN)) {
                terr(e->t, n, "@autotune: cdiv takes integers, the second not 0", NULL, NULL);
                return bad;
            }
            int64_t q = a.i / b.i;
            return tv_int(q + ((a.i % b.i != 0) && ((a.i < 0) == (b.i < 0))));
        }
        bool lo = strcmp(f, "min") == 0;
        if (a.kind == TV_FLOAT || b.kind == TV_FLOAT)
            return tv_float(lo ? fmin(as_f(a), as_f(b)) : fmax(as_f(a), as_f(b)));
        return tv_int(lo ? (a.i < b.i ? a.i : b.i) : (a.i > b.i ? a.i : b.i));
    }
    case AST_BINARY: {
        TVal a = eval(e, n->lhs, depth + 1), b = eval(e, n->rhs, depth + 1);
        if (a.kind == TV_ERROR || b.kind == TV_ERROR || e->check_only)
            return a.kind == TV_ERROR ? a : b;
        bool fl = a.kind == TV_FLOAT || b.kind == TV_FLOAT;
        double x = as_f(a), y = as_f(b);
        uint64_t ua = (uint64_t)a.i, ub = (uint64_t)b.i;
        switch (n->op) {
        case AST_OP_ADD: return fl ? tv_float(x + y) : tv_int((int64_t)(ua + ub));
        case AST_OP_SUB: return fl ? tv_float(x - y) : tv_int((int64_t)(ua - ub));
        case AST_OP_MUL: return fl ? tv_float(x * y) : tv_int((int64_t)(ua * ub));
        case AST_OP_DIV:
        case AST_OP_MOD:
            if (fl) {
                if (n->op == AST_OP_MOD) {
                    terr(e->t, n, "@autotune: '%%' of a float", NULL, NULL);
                    return bad;
                }
                return tv_float(x / y);
            }
            if (b.i == 0 || (b.i == -1 && a.i == INT64_MIN)) {
                terr(e->t, n, "@autotune: division by zero in where", NULL, NULL);
                return bad;
            }
            return tv_int(n->op == AST_OP_DIV ? a.i / b.i : a.i % b.i);
        case AST_OP_SHL:
        case AST_OP_SHR:
            if (fl || b.i < 0 || b.i > 63) {
                terr(e->t, n, "@autotune: a shift takes integers and a count from 0 to 63", NULL, NULL);
                return bad;
            }
            return tv_int(n->op == AST_OP_SHL ? (int64_t)(ua << b.i) : a.i >> b.i);
        case AST_OP_LT: return tv_bool(fl ? x < y : a.i < b.i);
        case AST_OP_LE: return tv_bool(fl ? x <= y : a.i <= b.i);
        case AST_OP_GT: return tv_bool(fl ? x > y : a.i > b.i);
        case AST_OP_GE: return tv_bool(fl ? x >= y : a.i >= b.i);
        case AST_OP_EQ: return tv_bool(fl ? x == y : a.i == b.i);
        case AST_OP_NE: return tv_bool(fl ? x != y : a.i != b.i);
        case AST_OP_LAND: return tv_bool((fl ? x != 0 : a.i != 0) && (b.kind == TV_FLOAT ? y != 0 : b.i != 0));
        case AST_OP_LOR: return tv_bool((fl ? x != 0 : a.i != 0) || (b.kind == TV_FLOAT ? y != 0 : b.i != 0));
        case AST_OP_BITAND:
        case AST_OP_BITOR:
        case AST_OP_BITXOR:
            if (fl) {
                terr(e->t, n, "@autotune: a bitwise operator of a float", NULL, NULL);
                return bad;
            }
            return tv_int(n->op == AST_OP_BITAND ? a.i & b.i : n->op == AST_OP_BITOR ? a.i | b.i : a.i ^ b.i);
        default: break;
        }
        break;
    }
    default: break;
    }
    terr(e->t, n, "@autotune: where must be a constant expression of the tuned names and constexpr parameters", NULL,
         NULL);
    return bad;
}

/* ---- the clause ---- */

static TVal *value_list(Tune *t, const AstNode *named, int ai) {
    const AstNode *list = named->rhs;
    TAxis *ax = &t->axes[ai];
    if (list->kind != AST_LIST || list->num_items == 0) {
        terr(t, named->rhs, "@autotune: %s takes a non-empty list of values, such as %s = [64, 128]", named->name,
             named->name);
        return NULL;
    }
    TVal *vals = ARENA_ARRAY(t->a, TVal, list->num_items);
    for (int i = 0; i < list->num_items; i++) {
        vals[i] = fit(t, list->items[i], ax->name, ax->kind, ax->param, literal(t, list->items[i]));
        for (int j = 0; j < i && vals[i].kind != TV_ERROR; j++)
            if (same_val(vals[i], vals[j])) {
                terr(t, list->items[i], "@autotune: a value of %s is listed twice", named->name, NULL);
                break;
            }
    }
    return vals;
}

/* The kernel's key: runtime integer parameters, each once. */
static void read_key(Tune *t, const AstNode *named, FeTuneSpace *out) {
    const AstNode *list = named->rhs;
    if (list->kind != AST_LIST) {
        terr(t, named->rhs, "@autotune: key takes a list of runtime integer parameters, such as key = [n_cols]", NULL,
             NULL);
        return;
    }
    const char **names = ARENA_ARRAY(t->a, const char *, list->num_items > 0 ? list->num_items : 1);
    int *params = ARENA_ARRAY(t->a, int, list->num_items > 0 ? list->num_items : 1);
    IrTypeKind *types = ARENA_ARRAY(t->a, IrTypeKind, list->num_items > 0 ? list->num_items : 1);
    for (int i = 0; i < list->num_items; i++) {
        const AstNode *n = list->items[i];
        const AstNode *p = n->kind == AST_IDENT ? find_param(t->k, n->name) : NULL;
        if (!p || p->type.is_constexpr || p->type.is_pointer || p->type.type_param ||
            (p->type.scalar != IR_I32 && p->type.scalar != IR_I64 && p->type.scalar != IR_I16 &&
             p->type.scalar != IR_I8)) {
            terr(t, n, "@autotune: a key is a runtime integer parameter of the kernel%s%s",
                 n->kind == AST_IDENT ? "; not " : "", n->kind == AST_IDENT ? n->name : "");
            continue;
        }
        for (int j = 0; j < i; j++)
            if (names[j] && strcmp(names[j], n->name) == 0)
                terr(t, n, "@autotune: key '%s' is listed twice", n->name, NULL);
        names[i] = n->name;
        /* its index among the runtime parameters */
        int idx = 0;
        for (int j = 0; j < t->k->num_items && t->k->items[j] != p; j++)
            if (t->k->items[j]->kind == AST_PARAM && !t->k->items[j]->type.is_constexpr)
                idx++;
        params[i] = idx;
        types[i] = p->type.scalar;
    }
    if (out) {
        out->keys = names;
        out->key_params = params;
        out->key_types = types;
        out->num_keys = list->num_items;
    }
}

/* One config(NAME = value, ...): a value per axis (TV_ERROR: not set). */
static TVal *read_config(Tune *t, const AstNode *c, TVal *vals) {
    if (c->kind != AST_CALL || c->lhs->kind != AST_IDENT || strcmp(c->lhs->name, "config") != 0) {
        terr(t, c, "@autotune: configs takes a list of config(NAME = value, ...)", NULL, NULL);
        return NULL;
    }
    if (c->num_items == 0)
        terr(t, c, "@autotune: config() sets nothing", NULL, NULL);
    for (int i = 0; i < 64; i++)
        vals[i].kind = TV_ERROR;
    for (int i = 0; i < c->num_items; i++) {
        const AstNode *n = c->items[i];
        if (n->kind != AST_NAMED) {
            terr(t, n, "@autotune: config's arguments are NAME = value", NULL, NULL);
            continue;
        }
        int ai = axis_for(t, n, n->name);
        if (ai < 0)
            continue;
        if (vals[ai].kind != TV_ERROR) {
            terr(t, n, "@autotune: config sets '%s' twice", n->name, NULL);
            continue;
        }
        TAxis *ax = &t->axes[ai];
        vals[ai] = fit(t, n->rhs, ax->name, ax->kind, ax->param, literal(t, n->rhs));
    }
    return vals;
}

/* Appends configuration vals (one per axis) to out when the caller's
 * constexprs and `where` allow it. */
static void consider(Tune *t, const TVal *vals, const AstNode *where, const FeConstexpr *cx, int num_cx,
                     FeTuneSpace *out, int *cap) {
    for (int ai = 0; ai < t->num_axes; ai++) {
        if (vals[ai].kind == TV_ERROR || t->axes[ai].kind != TN_CONSTEXPR)
            continue;
        for (int i = 0; i < num_cx; i++)
            if (strcmp(cx[i].name, t->axes[ai].name) == 0) {
                TVal c = cx[i].is_dtype ? (TVal){.kind = TV_TYPE, .i = cx[i].i}
                         : cx[i].is_float ? tv_float(cx[i].f)
                                          : tv_int(cx[i].i);
                if (!same_val(c, vals[ai]))
                    return;
            }
    }
    if (where) {
        Env e = {t, vals, cx, num_cx, false};
        TVal w = eval(&e, where, 0);
        if (w.kind == TV_ERROR || w.kind == TV_TYPE)
            return;
        if (w.kind == TV_FLOAT ? w.f == 0 : w.i == 0)
            return;
    }
    if (out->num_configs == FE_TUNE_MAX_CONFIGS) {
        terr(t, where ? where : t->k, "@autotune: the space has more than 65536 configurations", NULL, NULL);
        return;
    }
    if (out->num_configs == *cap) {
        int ncap = *cap ? *cap * 2 : 64;
        out->configs = arena_grow(t->a, out->configs, sizeof(FeTuneConfig) * (size_t)*cap,
                                  sizeof(FeTuneConfig) * (size_t)ncap);
        *cap = ncap;
    }
    FeTuneConfig *c = &out->configs[out->num_configs++];
    c->num_warps = 0;
    c->num_stages = 0;
    c->warp_specialize = -1;
    c->min_programs_per_sm = 0;
    c->cx = ARENA_ARRAY(t->a, FeConstexpr, t->num_axes > 0 ? t->num_axes : 1);
    c->num_cx = 0;
    for (int ai = 0; ai < t->num_axes; ai++) {
        TVal v = vals[ai];
        if (v.kind == TV_ERROR)
            continue;
        switch (t->axes[ai].kind) {
        case TN_NUM_WARPS: c->num_warps = (int)v.i; break;
        case TN_NUM_STAGES: c->num_stages = (int)v.i; break;
        case TN_WARP_SPECIALIZE: c->warp_specialize = (int)v.i; break;
        case TN_MIN_PROGRAMS: c->min_programs_per_sm = (int)v.i; break;
        case TN_CONSTEXPR: {
            FeConstexpr *x = &c->cx[c->num_cx++];
            x->name = t->axes[ai].name;
            x->is_float = v.kind == TV_FLOAT;
            x->is_dtype = v.kind == TV_TYPE;
            x->i = v.i;
            x->f = v.f;
            break;
        }
        }
    }
}

bool fe_tune_space(Arena *a, const AstNode *k, const FeConstexpr *cx, int num_cx, DiagList *diags,
                   FeTuneSpace *out) {
    FeTuneSpace local;
    FeTuneSpace *sp = out ? out : &local;
    memset(sp, 0, sizeof *sp);
    const AstNode *clause = k->lhs;
    if (!clause)
        return true;
    Tune *t = ARENA_NEW(a, Tune);
    t->a = a;
    t->diags = diags;
    t->k = k;
    t->ok = true;
    sp->declared = true;
    const AstNode *where = NULL, *configs = NULL, *key = NULL;
    int num_product = 0;
    for (int i = 0; i < clause->num_items; i++) {
        const AstNode *n = clause->items[i];
        if (n->kind != AST_NAMED) {
            terr(t, n, "@autotune takes named arguments: key = [...], NAME = [values], configs = [...], where = ...",
                 NULL, NULL);
            continue;
        }
        for (int j = 0; j < i; j++)
            if (clause->items[j]->kind == AST_NAMED && strcmp(clause->items[j]->name, n->name) == 0)
                terr(t, n, "@autotune: '%s' is given twice", n->name, NULL);
        if (strcmp(n->name, "key") == 0) {
            key = n;
            read_key(t, n, sp);
        } else if (strcmp(n->name, "where") == 0) {
            where = n->rhs;
        } else if (strcmp(n->name, "configs") == 0) {
            configs = n;
            if (n->rhs->kind != AST_LIST || n->rhs->num_items == 0)
                terr(t, n->rhs, "@autotune: configs takes a non-empty list of config(NAME = value, ...)", NULL, NULL);
        } else {
            int ai = axis_for(t, n, n->name);
            if (ai < 0)
                continue;
            if (ai != num_product) {
                terr(t, n, "@autotune: '%s' is given twice", n->name, NULL);
                continue;
            }
            t->axes[ai].vals = value_list(t, n, ai);
            t->axes[ai].num_vals = n->rhs->kind == AST_LIST ? n->rhs->num_items : 0;
            num_product++;
        }
    }
    (void)key;
    if (!configs && num_product == 0 && t->ok)
        terr(t, clause, "@autotune needs configs = [config(...), ...] or at least one NAME = [values]", NULL, NULL);
    /* the explicit configurations' values (their names become axes too) */
    int num_explicit = configs && configs->rhs->kind == AST_LIST ? configs->rhs->num_items : 0;
    TVal *explicit_vals = ARENA_ARRAY(a, TVal, (size_t)(num_explicit > 0 ? num_explicit : 1) * 64);
    for (int i = 0; i < num_explicit; i++)
        read_config(t, configs->rhs->items[i], explicit_vals + (size_t)i * 64);
    if (where && t->ok) {
        Env e = {t, NULL, NULL, 0, true};
        eval(&e, where, 0);
    }
    if (!t->ok)
        return false;
    /* the product's size, bounded */
    int64_t product = num_product > 0 ? 1 : 0;
    for (int i = 0; i < num_product; i++) {
        product *= t->axes[i].num_vals;
        if (product > FE_TUNE_MAX_CONFIGS) {
            terr(t, clause, "@autotune: the space has more than 65536 configurations", NULL, NULL);
            return false;
        }
    }
    if (!out) {
        /* Checking only: every configuration's where, with what is known
         * without the caller's constexprs, is evaluated only when asked. */
        return true;
    }
    int cap = 0;
    TVal vals[64];
    int idx[64] = {0};
    for (int64_t c = 0; c < product && t->ok; c++) {
        for (int ai = 0; ai < t->num_axes; ai++)
            vals[ai] = ai < num_product ? t->axes[ai].vals[idx[ai]] : (TVal){.kind = TV_ERROR};
        consider(t, vals, where, cx, num_cx, sp, &cap);
        for (int ai = num_product - 1; ai >= 0; ai--) {
            if (++idx[ai] < t->axes[ai].num_vals)
                break;
            idx[ai] = 0;
        }
    }
    for (int i = 0; i < num_explicit && t->ok; i++)
        consider(t, explicit_vals + (size_t)i * 64, where, cx, num_cx, sp, &cap);
    if (t->ok && sp->num_configs == 0)
        terr(t, clause,
             "@autotune: no configuration is left: every one is excluded by where or by a constexpr the caller "
             "fixes",
             NULL, NULL);
    return t->ok;
}
