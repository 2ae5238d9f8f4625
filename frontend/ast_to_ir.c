/*
 * ast_to_ir.c — semantic analysis and lowering to IR: the driver.
 *
 * fe_lower() turns an AST into one IR module. It specializes each kernel
 * (or the one asked for) by binding its constexpr parameters to values —
 * from the options (-D NAME=VALUE) first, else from the parameter's default
 * — and then lowers the body in a single walk that type-checks as it goes:
 * there is no separate typed AST, because types and shapes only exist once
 * constexpr values are known, and one walk is both simpler and fast (the
 * attention kernel lowers in tens of microseconds).
 *
 * This file holds everything above expressions:
 *
 *   scopes      one stack of symbols (let, var, parameters, loop variables);
 *               a block scope is a mark on it, a function a frame that
 *               lookups do not cross. Shadowing any name of the same
 *               function is an error, so each name means one thing.
 *   vars        SSA construction without phis: a symbol holds the current
 *               value of its var. A runtime `if` lowers both branches from
 *               the same bindings and yields every outer var whose binding
 *               changed in either; a `for` carries every outer var assigned
 *               in its body (found by a syntactic scan before the body is
 *               lowered, since the loop's block arguments must exist first).
 *   exits       `return`, `break` and `continue` set hidden i1 vars (flags):
 *               the function's return flag, the innermost loop's break and
 *               continue flags. After each statement of a block, when a
 *               flag may be set, the rest of the block is lowered inside
 *               `if (!(return | break | continue))`, where the flags are
 *               known false again; when one is certainly set (an
 *               unconditional exit), the rest is parsed but not compiled,
 *               like a branch not taken. A loop whose body may `break` or
 *               `return` becomes a `while` whose condition also tests the
 *               flags (a `for` then carries its induction value); a
 *               `continue` only skips the rest of the iteration. Flags
 *               that stay constant cost nothing: a kernel without early
 *               exits lowers to the IR it always did.
 *   constexpr   an `if` or ternary on a constant lowers only the taken
 *               branch, so the other may be ill-typed in this
 *               specialization (it is still parsed).
 *   funcs       instantiated per call signature (argument types, constness
 *               of pointers, constexpr values) into `func @name`, `@name.1`...
 *               and called with `call`; the inline pass inlines them later.
 *               The return type is that of the final `return`. A func named
 *               as the combine of a scan is instantiated for two scalars of
 *               the element type and called from the scan's region.
 *
 * Errors are reported at the offending node and lowering continues with the
 * next statement; fe_lower returns NULL when any error was reported. A guard
 * turns internal errors into a diagnostic rather than an abort.
 */
#include "ast_to_ir.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void lower_stmt(Lower *L, const AstNode *s);
static void lower_items(Lower *L, const AstNode *const *items, int n);

/* The loop whose body is being lowered: its flags (symbols, or -1 where the
 * body has no such statement). */
struct LoopCtx {
    int brk;
    int cont;
};

/* ---- declarations ---- */

/* Names compare equal when both exist (a malformed AST may lack one). */
static bool same_name(const char *a, const char *b) {
    return a && b && strcmp(a, b) == 0;
}

/* ---- the stack ---- */

bool lower_stack_ok(Lower *L, const AstNode *n) {
    if (L->stack_exhausted)
        return false;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (here >= (uintptr_t)L->stack_base || (uintptr_t)L->stack_base - here <= L->stack_limit)
        return true;
    L->stack_exhausted = true;
    lower_error(L, n, "calls and nesting too deep: lowering them needs more than %zu KiB of stack",
                L->stack_limit >> 10);
    return false;
}

/* ---- name indexes ---- */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The slot of name in ix: its value, or NULL when absent (and !insert). An
 * inserted name starts at -1. */
static int *name_slot(Lower *L, NameIndex *ix, const char *name, bool insert) {
    if (insert && (ix->count + 1) * 2 > ix->cap) {
        NameIndex old = *ix;
        ix->cap = old.cap ? old.cap * 2 : 64;
        ix->keys = ARENA_ARRAY(&L->tmp, const char *, ix->cap);
        ix->vals = ARENA_ARRAY(&L->tmp, int, ix->cap);
        ix->count = 0;
        for (int i = 0; i < old.cap; i++)
            if (old.keys[i])
                *name_slot(L, ix, old.keys[i], true) = old.vals[i];
    }
    if (!ix->cap)
        return NULL;
    for (uint32_t i = name_hash(name) & (uint32_t)(ix->cap - 1);; i = (i + 1) & (uint32_t)(ix->cap - 1)) {
        if (!ix->keys[i]) {
            if (!insert)
                return NULL;
            ix->keys[i] = name;
            ix->vals[i] = -1;
            ix->count++;
            return &ix->vals[i];
        }
        if (strcmp(ix->keys[i], name) == 0)
            return &ix->vals[i];
    }
}

DeclInfo *lower_find_decl(Lower *L, const char *name) {
    int *slot = name ? name_slot(L, &L->decl_index, name, false) : NULL;
    return slot ? &L->decls[*slot] : NULL;
}

/* ---- scopes ---- */

/* The newest symbol of the current function named `name`, or -1. */
static int lookup_index(Lower *L, const char *name) {
    int *slot = name ? name_slot(L, &L->sym_index, name, false) : NULL;
    return slot && *slot >= L->frame ? *slot : -1;
}

Symbol *lower_lookup(Lower *L, const char *name) {
    int i = lookup_index(L, name);
    return i < 0 ? NULL : &L->syms[i];
}

/* Leaves the scopes opened since there were `mark` symbols. */
static void pop_symbols(Lower *L, int mark) {
    while (L->num_vars > 0 && L->vars[L->num_vars - 1] >= mark)
        L->num_vars--;
    while (L->num_syms > mark) {
        Symbol *s = &L->syms[--L->num_syms];
        if (!s->hidden)
            *name_slot(L, &L->sym_index, s->name, false) = s->shadowed;
    }
}

/* A new symbol on the stack (a var is also one of L->vars); not yet
 * reachable by its name. Returns its index. */
static int push_symbol(Lower *L, const AstNode *decl, const char *name, SymKind kind, Val val) {
    if (L->num_syms == L->cap_syms) {
        int cap = L->cap_syms ? L->cap_syms * 2 : 32;
        L->syms = arena_grow(&L->tmp, L->syms, sizeof(Symbol) * (size_t)L->cap_syms, sizeof(Symbol) * (size_t)cap);
        L->cap_syms = cap;
    }
    Symbol *s = &L->syms[L->num_syms];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->kind = kind;
    s->val = val;
    s->decl = decl;
    if (kind == SYM_VAR) {
        s->type = val_type(&val);
        if (L->num_vars == L->cap_vars) {
            int cap = L->cap_vars ? L->cap_vars * 2 : 16;
            L->vars = arena_grow(&L->tmp, L->vars, sizeof(int) * (size_t)L->cap_vars, sizeof(int) * (size_t)cap);
            L->cap_vars = cap;
        }
        L->vars[L->num_vars++] = L->num_syms;
    }
    return L->num_syms++;
}

/* Declares a name in the innermost scope; a name of the same function that
 * is still in scope is a redefinition (reported; the new symbol still wins,
 * so that later uses see what the user meant). Returns the symbol's index. */
static int declare(Lower *L, const AstNode *decl, const char *name, SymKind kind, Val val) {
    if (!name)
        name = "?"; /* only a malformed AST has nameless declarations */
    int prev = lookup_index(L, name);
    if (prev >= 0) {
        lower_error(L, decl, "redefinition of '%s'", name);
        diag_note(L->diags, L->syms[prev].decl->loc, "previous declaration is here");
    }
    int idx = push_symbol(L, decl, name, kind, val);
    int *slot = name_slot(L, &L->sym_index, name, true);
    L->syms[idx].shadowed = *slot;
    *slot = idx;
    return idx;
}

/* Declares a hidden var (see `exits` above): no name reaches it; `hint`
 * names its IR values. Returns its index. */
static int declare_hidden(Lower *L, const AstNode *decl, const char *hint, Val val) {
    int idx = push_symbol(L, decl, hint, SYM_VAR, val);
    L->syms[idx].hidden = true;
    return idx;
}

/* Binds a name hint to a value that has none yet (an op result). */
static void name_value(Lower *L, const Val *v, const char *name) {
    if (v->kind == VAL_IR && v->v->def && !v->v->name && v->v->def->opc != IR_OP_CONSTANT)
        ir_value_set_name(L->m, v->v, name);
}

/* The first entry of L->vars that belongs to the current function. */
static int first_var(const Lower *L) {
    int lo = 0, hi = L->num_vars;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->vars[mid] < L->frame)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The current function's vars: how many, and the symbol of the i-th. Only
 * vars change value after their declaration, so they are all an `if` or a
 * loop needs to save and compare (linear in the vars, not in every symbol
 * in scope). */
static int num_frame_vars(const Lower *L) {
    return L->num_vars - first_var(L);
}

static Symbol *frame_var(Lower *L, int i) {
    return &L->syms[L->vars[first_var(L) + i]];
}

/* Copies the bindings of the current function's vars. */
static Val *snapshot(Lower *L) {
    int first = first_var(L), n = L->num_vars - first;
    Val *s = ARENA_ARRAY(&L->tmp, Val, n > 0 ? n : 1);
    for (int i = 0; i < n; i++)
        s[i] = L->syms[L->vars[first + i]].val;
    return s;
}

static void restore(Lower *L, const Val *s, int n) {
    int first = first_var(L);
    for (int i = 0; i < n; i++)
        L->syms[L->vars[first + i]].val = s[i];
}

static bool same_val(const Val *a, const Val *b) {
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case VAL_IR: return a->v == b->v;
    case VAL_CONST: /* bitwise on floats: -0.0 is not 0.0, NaN is itself */
        return a->type == b->type && a->weak == b->weak && a->i == b->i && memcmp(&a->f, &b->f, sizeof a->f) == 0;
    default: return true;
    }
}

static void lower_scoped(Lower *L, const AstNode *s) {
    if (!s)
        return;
    int mark = L->num_syms;
    lower_stmt(L, s);
    pop_symbols(L, mark);
}

/* ---- statements ---- */

/* let x = e;  var x = e; */
static void lower_decl(Lower *L, const AstNode *s) {
    Val v = lower_expr(L, s->rhs);
    if (s->kind == AST_VAR && v.kind == VAL_CONST && v.weak)
        v = lower_convert(L, v, v.type, s); /* a var has a type of its own */
    name_value(L, &v, s->name);
    declare(L, s, s->name, s->kind == AST_VAR ? SYM_VAR : SYM_LET, v);
}

/* Can a weak literal become a `t` without changing its value (a float
 * literal never becomes an integer)? */
static bool weak_fits(const Val *w, const IrType *t) {
    if (ir_type_is_float(w->type))
        return ir_type_is_float(t);
    if (ir_type_is_int(t))
        return t->kind == IR_I1 ? (w->i == 0 || w->i == 1) : ir_int_wrap(w->i, ir_type_bits(t)) == w->i;
    return true;
}

/* The value assigned to a var, converted to the var's type: same dtype and
 * broadcastable shape, or a weak literal that adapts. */
static Val assign_convert(Lower *L, const AstNode *s, const Symbol *sym, Val v) {
    const IrType *vt = sym->type;
    if ((v.kind != VAL_CONST && v.kind != VAL_IR) || !vt)
        return val_error();
    const IrType *want = ir_type_elem(vt), *have = val_elem(&v);
    bool weak = v.kind == VAL_CONST && v.weak;
    bool elem_ok = have == want || (weak && want->kind != IR_PTR && weak_fits(&v, want));
    Shape ts = {0}, vs = val_shape(&v), r;
    if (vt->kind == IR_TILE) {
        ts.rank = vt->rank;
        memcpy(ts.dim, vt->shape, sizeof(int64_t) * (size_t)vt->rank);
    }
    bool shape_ok = lower_broadcast_shapes(&vs, &ts, &r) && r.rank == ts.rank &&
                    memcmp(r.dim, ts.dim, sizeof(int64_t) * (size_t)r.rank) == 0;
    if (!elem_ok || !shape_ok) {
        lower_error(L, s, "cannot assign %s to var '%s' of type %s", lower_val_str(L, &v), sym->name,
                    lower_type_str(L, vt));
        return val_error();
    }
    lower_at(L, s);
    v = lower_convert(L, v, want, s);
    return lower_broadcast(L, v, &ts, s, "assignment");
}

static const char *why_not_assignable(SymKind k) {
    switch (k) {
    case SYM_LET: return "declared with let (use var)";
    case SYM_PARAM: return "it is a parameter";
    case SYM_CONSTEXPR: return "it is a constexpr parameter";
    case SYM_LOOP: return "it is a loop variable";
    case SYM_DTYPE: return "it is a type parameter";
    default: return "";
    }
}

/* x = e;  x += e; ... */
static void lower_assign(Lower *L, const AstNode *s) {
    int idx = lookup_index(L, s->name);
    if (idx < 0) {
        lower_error(L, s, "use of undeclared identifier '%s'", s->name);
        lower_expr(L, s->rhs);
        return;
    }
    if (L->syms[idx].kind != SYM_VAR) {
        lower_error(L, s, "cannot assign to '%s': %s", s->name, why_not_assignable(L->syms[idx].kind));
        diag_note(L->diags, L->syms[idx].decl->loc, "'%s' declared here", s->name);
        lower_expr(L, s->rhs);
        return;
    }
    Val v = lower_expr(L, s->rhs);
    /* Lowering the right side may instantiate funcs, which grows the symbol
     * stack: index it again rather than hold a pointer. */
    if (s->op != AST_OP_ASSIGN)
        v = lower_binop(L, s, s->op, L->syms[idx].val, v);
    v = assign_convert(L, s, &L->syms[idx], v);
    if (v.kind == VAL_ERROR)
        return; /* the var keeps its value and type: no cascade */
    name_value(L, &v, s->name);
    L->syms[idx].val = v;
}

/* Vars changed by either branch of an `if` become its results. Returns the
 * number of results; fills idx (positions among the frame's vars, as in the
 * snapshots) and sets erroneous ones to VAL_ERROR. */
static int merge_vars(Lower *L, int n, const Val *before, const Val *a, const Val *b, int *idx) {
    int nres = 0;
    for (int j = 0; j < n; j++) {
        Symbol *sym = frame_var(L, j);
        sym->val = before[j];
        if (same_val(&a[j], &before[j]) && same_val(&b[j], &before[j]))
            continue;
        if (a[j].kind == VAL_ERROR || b[j].kind == VAL_ERROR || !sym->type) {
            sym->val = val_error();
            continue;
        }
        idx[nres++] = j;
    }
    return nres;
}

/* Moves every op of `from` to the end of `to`. */
static void move_ops(IrBlock *from, IrBlock *to) {
    IrOp *op = from->first;
    while (op) {
        IrOp *next = op->next;
        ir_op_unlink(op);
        ir_block_append(to, op);
        op = next;
    }
}

/* ---- exits: return, break, continue (see `exits` above) ---- */

static Val flag(Lower *L, bool set) {
    return val_int(lower_scalar(L, IR_I1), set);
}

/* The flags that end the statements of the current block early: the
 * function's return flag and the innermost loop's break and continue
 * flags. Returns how many (symbol indices in out). */
static int exit_flags(Lower *L, int out[3]) {
    int n = 0;
    if (L->ret_flag >= 0)
        out[n++] = L->ret_flag;
    if (L->loop && L->loop->brk >= 0)
        out[n++] = L->loop->brk;
    if (L->loop && L->loop->cont >= 0)
        out[n++] = L->loop->cont;
    return n;
}

/* Whether the rest of the block is skipped: the flags or-ed, folded (a
 * constant when they are; false after an error, so the rest is checked). */
static Val exit_guard(Lower *L, const AstNode *at) {
    int f[3], n = exit_flags(L, f);
    Val g = flag(L, false);
    for (int i = 0; i < n; i++) {
        Val v = L->syms[f[i]].val;
        if (v.kind == VAL_CONST && v.i)
            return flag(L, true);
        if (v.kind != VAL_IR)
            continue;
        g = g.kind == VAL_CONST ? v : lower_binop(L, at, AST_OP_BITOR, g, v);
    }
    return g;
}

/* One branch of an `if`: a statement, or the rest of a block (items) run
 * where every exit flag is false. */
typedef struct Branch {
    const AstNode *stmt;
    const AstNode *const *items;
    int n;
} Branch;

/* Enters a region (an if's branch, a loop body): false, with an error
 * reported once, past IR_MAX_REGION_DEPTH. */
static bool enter_region(Lower *L, const AstNode *at) {
    if (L->region_depth >= IR_MAX_REGION_DEPTH) {
        if (!L->regions_exhausted && at)
            lower_error(L, at,
                        "control flow nests more than %d regions deep (each 'if', loop, and rest of a block after "
                        "a possible 'return', 'break' or 'continue' is one)",
                        IR_MAX_REGION_DEPTH);
        L->regions_exhausted = true;
        return false;
    }
    L->region_depth++;
    return true;
}

static void lower_branch(Lower *L, const Branch *b) {
    if (!enter_region(L, b->stmt ? b->stmt : b->items ? b->items[0] : NULL))
        return;
    if (!b->items) {
        lower_scoped(L, b->stmt);
        L->region_depth--;
        return;
    }
    int f[3], n = exit_flags(L, f);
    for (int i = 0; i < n; i++)
        L->syms[f[i]].val = flag(L, false);
    int mark = L->num_syms;
    lower_items(L, b->items, b->n);
    pop_symbols(L, mark);
    L->region_depth--;
}

/* if (c) then else els, the branches given (s locates the op) */
static void lower_branches(Lower *L, const AstNode *s, Val c, const Branch *then_b, const Branch *else_b) {
    if (c.kind == VAL_CONST) {
        /* Constexpr: only the taken branch exists in this specialization. */
        lower_branch(L, val_truthy(&c) ? then_b : else_b);
        return;
    }
    int n = num_frame_vars(L);
    Val *before = snapshot(L);
    IrBuilder saved = L->b;
    IrOp *ph = NULL; /* the `if` without results, while the branches are lowered */
    IrValue *cv = NULL;
    if (c.kind == VAL_IR) {
        cv = c.v;
        lower_at(L, s);
        ph = ir_build_op(&L->b, IR_OP_IF, 1, &cv, 0, NULL);
        ir_builder_at_end(&L->b, L->m, ph->regions[0]);
    }
    lower_branch(L, then_b);
    Val *then_vals = snapshot(L);
    restore(L, before, n);
    if (ph)
        ir_builder_at_end(&L->b, L->m, ph->regions[1]);
    lower_branch(L, else_b);
    Val *else_vals = snapshot(L);
    L->b = saved;
    int *idx = ARENA_ARRAY(&L->tmp, int, n > 0 ? n : 1);
    int nres = merge_vars(L, n, before, then_vals, else_vals, idx);
    if (!ph) {
        /* The condition had an error: the branches were checked, nothing built. */
        for (int k = 0; k < nres; k++)
            frame_var(L, idx[k])->val = val_error();
        return;
    }
    const IrType **types = ARENA_ARRAY(&L->tmp, const IrType *, nres > 0 ? nres : 1);
    IrValue **ys = ARENA_ARRAY(&L->tmp, IrValue *, nres > 0 ? nres : 1);
    for (int r = 0; r < 2; r++) {
        const Val *vals = r == 0 ? then_vals : else_vals;
        ir_builder_at_end(&L->b, L->m, ph->regions[r]);
        lower_at(L, s);
        for (int k = 0; k < nres; k++) {
            types[k] = frame_var(L, idx[k])->type;
            ys[k] = lower_ir(L, &vals[idx[k]]);
        }
        ir_build(&L->b, IR_OP_YIELD, NULL, nres, ys);
    }
    L->b = saved;
    if (nres == 0)
        return;
    IrBuilder at = saved;
    ir_builder_before(&at, ph);
    at.loc = s->loc;
    IrOp *op = ir_build_op(&at, IR_OP_IF, 1, &cv, nres, types);
    for (int r = 0; r < 2; r++)
        move_ops(ph->regions[r], op->regions[r]);
    ir_op_unlink(ph);
    for (int k = 0; k < nres; k++) {
        Symbol *sym = frame_var(L, idx[k]);
        const Val *tv = &then_vals[idx[k]], *ev = &else_vals[idx[k]];
        sym->val = val_ir(op->results[k]);
        sym->val.const_param = tv->const_param ? tv->const_param : ev->const_param;
        ir_value_set_name(L->m, op->results[k], sym->name);
    }
}

/* if (c) a else b */
static void lower_if(Lower *L, const AstNode *s) {
    Val c = lower_expr(L, s->cond);
    if (c.kind != VAL_ERROR)
        c = lower_condition(L, c, s->cond, "if condition");
    Branch then_b = {s->body, NULL, 0}, else_b = {s->els, NULL, 0};
    lower_branches(L, s, c, &then_b, &else_b);
}

/* The statements of a block. After each one that may have set an exit
 * flag, the rest runs under `if (!flags)`; after a certain exit, the rest
 * is not compiled. */
static void lower_items(Lower *L, const AstNode *const *items, int n) {
    for (int i = 0; i < n; i++) {
        lower_stmt(L, items[i]);
        if (i + 1 == n)
            return;
        Val g = exit_guard(L, items[i + 1]);
        if (g.kind == VAL_CONST && !g.i)
            continue;
        if (g.kind == VAL_CONST || !lower_stack_ok(L, items[i + 1]))
            return;
        Branch skip = {NULL, NULL, 0}, rest = {NULL, items + i + 1, n - i - 1};
        lower_branches(L, items[i + 1], g, &skip, &rest);
        return;
    }
}

/* The exits in a loop body that concern its loop: `break` and `continue`
 * outside nested loops, `return` anywhere. */
typedef struct Exits {
    bool brk, cont, ret;
} Exits;

static void find_exits(const AstNode *s, Exits *e, bool nested) {
    if (!s)
        return;
    switch (s->kind) {
    case AST_BLOCK:
        for (int i = 0; i < s->num_items; i++)
            find_exits(s->items[i], e, nested);
        break;
    case AST_IF:
        find_exits(s->body, e, nested);
        find_exits(s->els, e, nested);
        break;
    case AST_FOR:
    case AST_WHILE: find_exits(s->body, e, true); break;
    case AST_BREAK: e->brk |= !nested; break;
    case AST_CONTINUE: e->cont |= !nested; break;
    case AST_RETURN: e->ret = true; break;
    default: break;
    }
}

/* return;  (a value is only for the last statement of a func: lower_body) */
static void lower_return(Lower *L, const AstNode *s) {
    if (s->lhs) {
        if (L->fn_decl->kind == AST_KERNEL)
            lower_error(L, s, "a kernel cannot return a value");
        else
            lower_error(L, s, "a 'return' with a value must be the last statement of a func");
        lower_expr(L, s->lhs);
        return;
    }
    if (L->returns_value) {
        lower_error(L, s, "'return;' in a func that returns a value (its last statement is 'return' with a value)");
        return;
    }
    L->syms[L->ret_flag].val = flag(L, true);
}

/* break;  continue; */
static void lower_jump(Lower *L, const AstNode *s) {
    bool brk = s->kind == AST_BREAK;
    int f = !L->loop ? -1 : brk ? L->loop->brk : L->loop->cont;
    if (!L->loop) {
        lower_error(L, s, "'%s' outside a loop", brk ? "break" : "continue");
        return;
    }
    if (f < 0) {
        lower_error(L, s, "internal error: '%s' that the loop's scan did not find", brk ? "break" : "continue");
        return;
    }
    L->syms[f].val = flag(L, true);
}

/* Marks the outer vars assigned anywhere in a loop body, and the return
 * flag when the body may return. */
static void scan_assigns(Lower *L, const AstNode *s) {
    if (!s)
        return;
    switch (s->kind) {
    case AST_BLOCK:
        for (int i = 0; i < s->num_items; i++)
            scan_assigns(L, s->items[i]);
        break;
    case AST_IF:
        scan_assigns(L, s->body);
        scan_assigns(L, s->els);
        break;
    case AST_FOR:
    case AST_WHILE: scan_assigns(L, s->body); break;
    case AST_RETURN:
        if (L->ret_flag >= 0)
            L->syms[L->ret_flag].carried = true;
        break;
    case AST_ASSIGN: {
        int i = lookup_index(L, s->name);
        if (i >= 0 && L->syms[i].kind == SYM_VAR)
            L->syms[i].carried = true;
        break;
    }
    default: break;
    }
}

/* The vars marked carried (scan_assigns, and a loop's own hidden ones), in
 * declaration order, unmarked: their symbol indices into idx (room for
 * every var of the frame). Returns how many. */
static int collect_carried(Lower *L, int *idx) {
    int nc = 0;
    for (int v = first_var(L); v < L->num_vars; v++) {
        int j = L->vars[v];
        Symbol *sym = &L->syms[j];
        if (!sym->carried)
            continue;
        sym->carried = false;
        if (sym->val.kind == VAL_ERROR || !sym->type)
            continue;
        idx[nc++] = j;
    }
    return nc;
}

/* The carried vars take block b's new arguments (appended to those it
 * has); their const parameters are remembered in cps. */
static void bind_carried(Lower *L, IrBlock *b, const int *idx, int nc, const AstNode **cps) {
    for (int k = 0; k < nc; k++) {
        Symbol *sym = &L->syms[idx[k]];
        if (sym->val.const_param)
            cps[k] = sym->val.const_param;
        sym->val = val_ir(ir_block_add_arg(L->m, b, sym->type, sym->name));
        sym->val.const_param = cps[k];
    }
}

/* The yield of a loop body: the carried vars' values (a body argument
 * where one had an error). */
static void yield_carried(Lower *L, const AstNode *s, IrBlock *b, int arg0, const int *idx, int nc,
                          const AstNode **cps) {
    IrValue **ys = ARENA_ARRAY(&L->tmp, IrValue *, nc > 0 ? nc : 1);
    lower_at(L, s);
    for (int k = 0; k < nc; k++) {
        Symbol *sym = &L->syms[idx[k]];
        ys[k] = sym->val.kind == VAL_ERROR ? b->args[arg0 + k] : lower_ir(L, &sym->val);
        if (sym->val.const_param)
            cps[k] = sym->val.const_param;
    }
    ir_build(&L->b, IR_OP_YIELD, NULL, nc, ys);
}

/* After the loop: the carried vars are its results. */
static void carried_results(Lower *L, IrOp *op, const int *idx, int nc, const AstNode **cps) {
    for (int k = 0; k < nc; k++) {
        Symbol *sym = &L->syms[idx[k]];
        bool bad = sym->val.kind == VAL_ERROR;
        sym->val = bad ? val_error() : val_ir(op->results[k]);
        sym->val.const_param = cps[k];
        ir_value_set_name(L->m, op->results[k], sym->name);
    }
}

/* A loop body with its flags: brk (a symbol, or -1) and, when the body
 * has `continue`, a continue flag of its own, false at each iteration's
 * start. */
static void lower_loop_body(Lower *L, const AstNode *s, int brk, bool cont) {
    if (!enter_region(L, s))
        return;
    LoopCtx ctx = {brk, -1}, *outer = L->loop;
    int mark = L->num_syms;
    if (cont)
        ctx.cont = declare_hidden(L, s, "continue", flag(L, false));
    L->loop = &ctx;
    lower_scoped(L, s->body);
    L->loop = outer;
    pop_symbols(L, mark);
    L->region_depth--;
}

/* A while loop's condition, in its condition region: the user's (or, for
 * a `for`, the induction value below the bound: range holds lb, ub, step)
 * and not stopped by a break or a return. The user's condition is only
 * evaluated while the loop has not stopped. */
static Val loop_condition(Lower *L, const AstNode *s, const Val *range, int brk, int iv) {
    Val stop = brk >= 0 ? L->syms[brk].val : flag(L, false);
    if (L->ret_flag >= 0 && L->syms[L->ret_flag].val.kind == VAL_IR)
        stop = stop.kind == VAL_IR ? lower_binop(L, s, AST_OP_BITOR, stop, L->syms[L->ret_flag].val)
                                   : L->syms[L->ret_flag].val;
    if (range) {
        Val go = lower_binop(L, s, AST_OP_LT, L->syms[iv].val, range[1]);
        if (stop.kind != VAL_IR)
            return go;
        return lower_binop(L, s, AST_OP_BITAND, go, lower_binop(L, s, AST_OP_BITXOR, stop, flag(L, true)));
    }
    IrBuilder saved = L->b;
    IrOp *guard = NULL;
    if (stop.kind == VAL_IR) {
        const IrType *i1 = lower_scalar(L, IR_I1);
        lower_at(L, s);
        guard = ir_build_op(&L->b, IR_OP_IF, 1, &stop.v, 1, &i1);
        ir_builder_at_end(&L->b, L->m, guard->regions[0]);
        Val f = flag(L, false);
        IrValue *fv = lower_ir(L, &f);
        ir_build(&L->b, IR_OP_YIELD, NULL, 1, &fv);
        ir_builder_at_end(&L->b, L->m, guard->regions[1]);
    }
    Val c = lower_expr(L, s->cond);
    if (c.kind != VAL_ERROR)
        c = lower_condition(L, c, s->cond, "while condition");
    if (c.kind != VAL_CONST && c.kind != VAL_IR)
        c = flag(L, false); /* an error was reported */
    if (!guard)
        return c;
    lower_at(L, s);
    IrValue *cv = lower_ir(L, &c);
    ir_build(&L->b, IR_OP_YIELD, NULL, 1, &cv);
    L->b = saved;
    return val_ir(guard->results[0]);
}

/* A `while`, or a `for` whose body may break or return (range: its bounds,
 * converted to the induction type; the induction value is then carried). */
static void lower_while_loop(Lower *L, const AstNode *s, const Val *range, const Exits *e) {
    int mark = L->num_syms;
    int brk = e->brk ? declare_hidden(L, s, "break", flag(L, false)) : -1;
    int iv = range ? declare_hidden(L, s, s->name, range[0]) : -1;
    scan_assigns(L, s->body);
    if (brk >= 0)
        L->syms[brk].carried = true;
    if (iv >= 0)
        L->syms[iv].carried = true;
    int n = num_frame_vars(L);
    int *idx = ARENA_ARRAY(&L->tmp, int, n > 0 ? n : 1);
    int nc = collect_carried(L, idx);
    IrValue **ops = ARENA_ARRAY(&L->tmp, IrValue *, nc > 0 ? nc : 1);
    const IrType **types = ARENA_ARRAY(&L->tmp, const IrType *, nc > 0 ? nc : 1);
    const AstNode **cps = ARENA_ARRAY(&L->tmp, const AstNode *, nc > 0 ? nc : 1);
    lower_at(L, s);
    for (int k = 0; k < nc; k++) {
        types[k] = L->syms[idx[k]].type;
        ops[k] = lower_ir(L, &L->syms[idx[k]].val);
        cps[k] = NULL;
    }
    IrOp *op = ir_build_op(&L->b, IR_OP_WHILE, nc, ops, nc, types);
    IrBuilder saved = L->b;

    bind_carried(L, op->regions[0], idx, nc, cps);
    ir_builder_at_end(&L->b, L->m, op->regions[0]);
    Val go = loop_condition(L, s, range, brk, iv);
    lower_at(L, s->cond ? s->cond : s);
    IrValue *gv = lower_ir(L, &go);
    ir_build_op(&L->b, IR_OP_CONDITION, 1, &gv, 0, NULL);

    bind_carried(L, op->regions[1], idx, nc, cps);
    ir_builder_at_end(&L->b, L->m, op->regions[1]);
    /* The body runs only while the loop has neither broken nor returned. */
    if (brk >= 0)
        L->syms[brk].val = flag(L, false);
    if (e->ret)
        L->syms[L->ret_flag].val = flag(L, false);
    int bmark = L->num_syms;
    if (range)
        declare(L, s, s->name, SYM_LOOP, L->syms[iv].val);
    lower_loop_body(L, s, brk, e->cont);
    pop_symbols(L, bmark);
    if (range)
        L->syms[iv].val = lower_binop(L, s, AST_OP_ADD, L->syms[iv].val, range[2]);
    yield_carried(L, s, op->regions[1], 0, idx, nc, cps);
    L->b = saved;
    carried_results(L, op, idx, nc, cps);
    pop_symbols(L, mark);
}

/* while (c) body */
static void lower_while(Lower *L, const AstNode *s) {
    Exits e = {false, false, false};
    find_exits(s->body, &e, false);
    lower_while_loop(L, s, NULL, &e);
}

/* A range bound: an integer scalar. */
static bool range_bound(Lower *L, const Val *v, const AstNode *n) {
    if (v->kind == VAL_ERROR)
        return false;
    const IrType *t = val_type(v);
    if (t->kind == IR_TILE || !ir_type_is_int(t) || t->kind == IR_I1) {
        lower_error(L, n, "range bounds must be integer scalars, got %s", lower_val_str(L, v));
        return false;
    }
    return true;
}

/* for (i in range(lb, ub, step)) body */
static void lower_for(Lower *L, const AstNode *s) {
    int na = s->num_items;
    Val b[3];
    bool ok = true;
    if (na < 1 || na > 3) {
        lower_error(L, s, "range takes 1 to 3 arguments, got %d", na);
        ok = false;
    } else {
        b[0] = na == 1 ? val_weak_int(L, 0) : lower_expr(L, s->items[0]);
        b[1] = lower_expr(L, s->items[na == 1 ? 0 : 1]);
        b[2] = na == 3 ? lower_expr(L, s->items[2]) : val_weak_int(L, 1);
        for (int i = 0; i < 3; i++)
            ok &= range_bound(L, &b[i], s->items[i < na ? (na == 1 ? 0 : i) : na - 1]);
    }
    const IrType *ivt = NULL;
    if (ok) {
        /* The induction type: the widest typed bound, else i32 (i64 for a
         * literal that needs it). */
        bool wide = false;
        for (int i = 0; i < 3; i++) {
            if (b[i].kind == VAL_CONST && b[i].weak)
                wide |= b[i].type->kind == IR_I64;
            else if (!ivt || ir_type_bits(b[i].type) > ir_type_bits(ivt))
                ivt = b[i].type;
        }
        if (!ivt)
            ivt = lower_scalar(L, wide ? IR_I64 : IR_I32);
        for (int i = 0; i < 3; i++)
            b[i] = lower_convert(L, b[i], ivt, s);
        if (b[2].kind == VAL_CONST && b[2].i <= 0) {
            lower_error(L, na == 3 ? s->items[2] : s, "range step must be positive, got %lld", (long long)b[2].i);
            ok = false;
        }
    }
    Exits e = {false, false, false};
    find_exits(s->body, &e, false);
    int n = num_frame_vars(L);
    if (!ok) {
        /* Check the body anyway, with the loop variable an error. */
        Val *before = snapshot(L);
        int mark = L->num_syms;
        int brk = e.brk ? declare_hidden(L, s, "break", flag(L, false)) : -1;
        declare(L, s, s->name, SYM_LOOP, val_error());
        lower_loop_body(L, s, brk, e.cont);
        pop_symbols(L, mark);
        Val *after = snapshot(L);
        for (int j = 0; j < n; j++)
            if (!same_val(&after[j], &before[j]))
                frame_var(L, j)->val = val_error();
        return;
    }
    if (e.brk || e.ret) {
        lower_while_loop(L, s, b, &e);
        return;
    }
    /* The carried vars, in declaration order. */
    scan_assigns(L, s->body);
    int *idx = ARENA_ARRAY(&L->tmp, int, n > 0 ? n : 1);
    int nc = collect_carried(L, idx);
    IrValue **ops = ARENA_ARRAY(&L->tmp, IrValue *, 3 + nc);
    const IrType **types = ARENA_ARRAY(&L->tmp, const IrType *, nc > 0 ? nc : 1);
    const AstNode **cps = ARENA_ARRAY(&L->tmp, const AstNode *, nc > 0 ? nc : 1);
    lower_at(L, s);
    for (int i = 0; i < 3; i++)
        ops[i] = lower_ir(L, &b[i]);
    for (int k = 0; k < nc; k++) {
        types[k] = L->syms[idx[k]].type;
        ops[3 + k] = lower_ir(L, &L->syms[idx[k]].val);
        cps[k] = NULL;
    }
    IrOp *op = ir_build_op(&L->b, IR_OP_FOR, 3 + nc, ops, nc, types);
    IrBlock *body = op->regions[0];
    IrValue *iv = ir_block_add_arg(L->m, body, ivt, s->name);
    bind_carried(L, body, idx, nc, cps);
    IrBuilder saved = L->b;
    ir_builder_at_end(&L->b, L->m, body);
    int mark = L->num_syms;
    declare(L, s, s->name, SYM_LOOP, val_ir(iv));
    lower_loop_body(L, s, -1, e.cont);
    pop_symbols(L, mark);
    yield_carried(L, s, body, 1, idx, nc, cps);
    L->b = saved;
    carried_results(L, op, idx, nc, cps);
}

static void lower_static_assert(Lower *L, const AstNode *s) {
    Val c = lower_expr(L, s->cond);
    if (c.kind == VAL_ERROR)
        return;
    if (c.kind != VAL_CONST || val_is_ptr(&c)) {
        lower_error(L, s->cond, "static_assert condition must be a constant expression, got a runtime %s",
                    lower_val_str(L, &c));
        return;
    }
    if (!val_truthy(&c)) {
        if (s->str)
            lower_error(L, s->cond, "static assertion failed: %s", s->str);
        else
            lower_error(L, s->cond, "static assertion failed");
    }
}

static void lower_stmt(Lower *L, const AstNode *s) {
    if (!s || !lower_stack_ok(L, s))
        return;
    switch (s->kind) {
    case AST_LET:
    case AST_VAR: lower_decl(L, s); break;
    case AST_ASSIGN: lower_assign(L, s); break;
    case AST_EXPR_STMT: lower_expr_any(L, s->lhs); break;
    case AST_BLOCK: {
        int mark = L->num_syms;
        lower_items(L, (const AstNode *const *)s->items, s->num_items);
        pop_symbols(L, mark);
        break;
    }
    case AST_IF: lower_if(L, s); break;
    case AST_FOR: lower_for(L, s); break;
    case AST_WHILE: lower_while(L, s); break;
    case AST_BREAK:
    case AST_CONTINUE: lower_jump(L, s); break;
    case AST_RETURN: lower_return(L, s); break;
    case AST_STATIC_ASSERT: lower_static_assert(L, s); break;
    default: lower_error(L, s, "expected a statement, found %s", ast_kind_name(s->kind)); break;
    }
}

/* Lowers a function body (its parameters declared); returns its final
 * `return expr;`, if any, unlowered. The function's return flag is a
 * hidden var of its frame. */
static const AstNode *lower_body(Lower *L, const AstNode *body) {
    int saved_ret = L->ret_flag, saved_depth = L->region_depth;
    bool saved_value = L->returns_value;
    LoopCtx *saved_loop = L->loop;
    L->loop = NULL;
    L->region_depth = 0;
    L->ret_flag = declare_hidden(L, body, "return", flag(L, false));
    const AstNode *last = NULL;
    if (body && body->kind == AST_BLOCK) {
        int n = body->num_items;
        if (n > 0 && body->items[n - 1]->kind == AST_RETURN && body->items[n - 1]->lhs)
            last = body->items[--n];
        L->returns_value = last && L->fn_decl->kind == AST_FUNC;
        lower_items(L, (const AstNode *const *)body->items, n);
    } else {
        L->returns_value = false;
        lower_stmt(L, body);
    }
    L->ret_flag = saved_ret;
    L->region_depth = saved_depth;
    L->returns_value = saved_value;
    L->loop = saved_loop;
    return last;
}

/* ---- funcs ---- */

static bool sig_equal(const ParamSig *a, const ParamSig *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].type != b[i].type || a[i].is_const != b[i].is_const || !same_val(&a[i].value, &b[i].value))
            return false;
    return true;
}

static FuncInst *instantiate(Lower *L, DeclInfo *d, ParamSig *sig) {
    const AstNode *f = d->decl;
    FuncInst *inst = ARENA_NEW(&L->tmp, FuncInst);
    inst->sig = sig;
    const char *name = d->num_instances == 0 ? f->name : arena_printf(&L->tmp, "%s.%d", f->name, d->num_instances);
    d->num_instances++;
    inst->ir = ir_func_create(L->m, IR_FUNC_FUNC, name);
    inst->ir->loc = f->loc;
    inst->next = d->instances;
    d->instances = inst;

    /* Save the caller's state: funcs are lowered on demand, mid-caller. */
    IrBuilder saved_b = L->b;
    IrFunc *saved_fn = L->fn;
    const AstNode *saved_decl = L->fn_decl;
    int saved_frame = L->frame;
    int errors = L->diags->num_errors;
    L->frame = L->num_syms;
    L->fn = inst->ir;
    L->fn_decl = f;
    ir_builder_at_end(&L->b, L->m, inst->ir->body);
    d->active = true;

    for (int i = 0; i < f->num_items; i++) {
        const AstNode *p = f->items[i];
        if (p->type.is_constexpr) {
            declare(L, p, p->name, SYM_CONSTEXPR, sig[i].value);
            continue;
        }
        Val v = val_ir(ir_func_add_param(inst->ir, sig[i].type, p->name));
        if (p->type.is_pointer && p->type.is_const)
            v.const_param = p;
        declare(L, p, p->name, SYM_PARAM, v);
    }
    const AstNode *ret = lower_body(L, f->body);
    Val rv = ret && ret->lhs ? lower_expr(L, ret->lhs) : val_void(f->name);
    lower_at(L, ret ? ret : f);
    if (rv.kind == VAL_CONST || rv.kind == VAL_IR) {
        if (rv.kind == VAL_CONST && rv.weak)
            rv = lower_convert(L, rv, rv.type, ret);
        IrValue *x = lower_ir(L, &rv);
        ir_build(&L->b, IR_OP_RETURN, NULL, 1, &x);
        inst->result = x->type;
        inst->result_const = rv.const_param;
        ir_func_set_results(inst->ir, 1, &inst->result);
    } else {
        ir_build(&L->b, IR_OP_RETURN, NULL, 0, NULL);
        ir_func_set_results(inst->ir, 0, NULL);
    }
    inst->failed = L->diags->num_errors != errors;

    d->active = false;
    pop_symbols(L, L->frame);
    L->frame = saved_frame;
    L->fn = saved_fn;
    L->fn_decl = saved_decl;
    L->b = saved_b;
    return inst;
}

/* Checks one argument against its parameter; fills its signature entry and
 * converts the argument (weak literals take the parameter's type). */
static bool bind_arg(Lower *L, const AstNode *call, const AstNode *f, int i, Val *a, ParamSig *sig) {
    const AstNode *p = f->items[i];
    const AstTypeSpec *ts = &p->type;
    const IrType *want = lower_scalar(L, ts->scalar);
    const AstNode *an = call->items[i];
    memset(sig, 0, sizeof *sig);
    if (ts->is_constexpr) {
        if (a->kind != VAL_CONST) {
            lower_error(L, an, "argument %d of '%s' must be a constant: parameter '%s' is constexpr", i + 1, f->name,
                        p->name);
            return false;
        }
        if (ir_type_is_float(a->type) && !ir_type_is_float(want)) {
            lower_error(L, an, "argument %d of '%s' must be %s, got %s", i + 1, f->name, ir_scalar_name(ts->scalar),
                        lower_val_str(L, a));
            return false;
        }
        *a = lower_convert(L, *a, want, an);
        sig->type = want;
        sig->value = *a;
        return a->kind == VAL_CONST;
    }
    if (ts->is_pointer) {
        const IrType *pt = ir_type_ptr(L->m, want);
        if (val_elem(a) != pt) {
            lower_error(L, an, "argument %d of '%s' must be a pointer to %s, got %s", i + 1, f->name,
                        ir_scalar_name(ts->scalar), lower_val_str(L, a));
            return false;
        }
        if (a->const_param && !ts->is_const) {
            lower_error(L, an, "argument %d of '%s' points to const data but parameter '%s' is not 'const %s*'", i + 1,
                        f->name, p->name, ir_scalar_name(ts->scalar));
            return false;
        }
        sig->type = val_type(a);
        sig->is_const = ts->is_const;
        return true;
    }
    bool weak = a->kind == VAL_CONST && a->weak;
    const IrType *have = val_elem(a);
    if (!(have == want || (weak && weak_fits(a, want)))) {
        lower_error(L, an, "argument %d of '%s' must be %s (a scalar or a tile of %s), got %s", i + 1, f->name,
                    ir_scalar_name(ts->scalar), ir_scalar_name(ts->scalar), lower_val_str(L, a));
        return false;
    }
    *a = lower_convert(L, *a, want, an);
    sig->type = val_type(a);
    return a->kind != VAL_ERROR;
}

/* The instance of d for signature sig (np entries): an existing one, or a
 * new one lowered now; NULL (error at `at`) when calls nest too deeply. */
static FuncInst *instance_for(Lower *L, const AstNode *at, DeclInfo *d, ParamSig *sig, int np) {
    FuncInst *inst = d->instances;
    while (inst && !sig_equal(inst->sig, sig, np))
        inst = inst->next;
    if (inst)
        return inst;
    /* Instantiating lowers the callee's body here, recursively: the depth of
     * calls is the depth of the lowering's recursion. */
    if (L->call_depth >= LOWER_MAX_CALL_DEPTH) {
        lower_error(L, at, "calls nested too deeply: more than %d nested calls", LOWER_MAX_CALL_DEPTH);
        diag_note(L->diags, L->outer_call->loc, "the chain of calls starts here");
        return NULL;
    }
    if (L->call_depth++ == 0)
        L->outer_call = at;
    inst = instantiate(L, d, sig);
    L->call_depth--;
    return inst;
}

Val lower_call_func(Lower *L, const AstNode *call, DeclInfo *d) {
    const AstNode *f = d->decl;
    int np = f->num_items;
    if (call->num_items != np) {
        lower_error(L, call, "'%s' takes %d argument%s, got %d", f->name, np, np == 1 ? "" : "s", call->num_items);
        diag_note(L->diags, f->loc, "'%s' declared here", f->name);
        return val_error();
    }
    if (d->active) {
        lower_error(L, call, "recursive call to '%s'", f->name);
        return val_error();
    }
    Val *args = ARENA_ARRAY(&L->tmp, Val, np > 0 ? np : 1);
    ParamSig *sig = ARENA_ARRAY(&L->tmp, ParamSig, np > 0 ? np : 1);
    bool ok = true;
    for (int i = 0; i < np; i++) {
        args[i] = lower_expr(L, call->items[i]);
        ok &= args[i].kind != VAL_ERROR;
    }
    for (int i = 0; i < np && ok; i++)
        ok = bind_arg(L, call, f, i, &args[i], &sig[i]);
    if (!ok)
        return val_error();
    FuncInst *inst = instance_for(L, call, d, sig, np);
    if (!inst || inst->failed)
        return val_error();
    IrValue **ops = ARENA_ARRAY(&L->tmp, IrValue *, np > 0 ? np : 1);
    int no = 0;
    lower_at(L, call);
    for (int i = 0; i < np; i++)
        if (!f->items[i]->type.is_constexpr)
            ops[no++] = lower_ir(L, &args[i]);
    IrOp *op = ir_build_op(&L->b, IR_OP_CALL, no, ops, inst->result ? 1 : 0, &inst->result);
    ir_op_set_symbol(L->m, op, "callee", inst->ir->name);
    if (!inst->result)
        return val_void(f->name);
    Val r = val_ir(op->results[0]);
    r.const_param = inst->result_const;
    return r;
}

/* Does f, or a func it calls, hold an op with side effects (other than
 * calls)? `seen` holds the funcs looked at. */
static bool has_side_effects(Lower *L, const IrBlock *b, IrMap *seen) {
    for (const IrOp *op = b->first; op; op = op->next) {
        if (op->opc == IR_OP_CALL) {
            const IrAttr *a = ir_op_attr(op, "callee");
            IrFunc *g = a && a->kind == IR_ATTR_SYMBOL ? ir_module_find_func(L->m, a->s) : NULL;
            if (g && !ir_map_get(seen, g)) {
                ir_map_put(seen, g, g);
                if (has_side_effects(L, g->body, seen))
                    return true;
            }
        } else if (ir_op_info[op->opc].flags & OPF_SIDE_EFFECT) {
            return true;
        }
        for (int r = 0; r < op->num_regions; r++)
            if (has_side_effects(L, op->regions[r], seen))
                return true;
    }
    return false;
}

FuncInst *lower_combine_func(Lower *L, const AstNode *n, const char *builtin, const IrType *elem, int arity) {
    const char *ename = ir_scalar_name(elem->kind);
    if (n->kind != AST_IDENT || !n->name) {
        lower_error(L, n, "combine of '%s' must be the name of a func taking two %s and returning one", builtin,
                    ename);
        return NULL;
    }
    DeclInfo *d = lower_find_decl(L, n->name);
    if (lower_lookup(L, n->name) || !d || d->decl->kind != AST_FUNC) {
        const char *what = lower_lookup(L, n->name) ? "a value"
                           : d                      ? "a kernel"
                           : lower_is_builtin(n->name) ? "a builtin"
                                                       : NULL;
        if (what)
            lower_error(L, n, "'%s' is %s; the combine of '%s' must be a func", n->name, what, builtin);
        else
            lower_error(L, n, "no func named '%s' (the combine of '%s')", n->name, builtin);
        return NULL;
    }
    const AstNode *f = d->decl;
    if (f->num_items != arity) {
        lower_error(L, n, "combine func '%s' of '%s' must take %d parameters, it takes %d", f->name, builtin, arity,
                    f->num_items);
        diag_note(L->diags, f->loc, "'%s' declared here", f->name);
        return NULL;
    }
    ParamSig *sig = ARENA_ARRAY(&L->tmp, ParamSig, arity);
    for (int i = 0; i < arity; i++) {
        const AstNode *p = f->items[i];
        if (p->type.is_constexpr || p->type.is_pointer || p->type.type_param || p->type.is_dtype ||
            lower_scalar(L, p->type.scalar) != elem) {
            lower_error(L, n, "parameter '%s' of combine func '%s' must be %s: '%s' combines %s elements", p->name,
                        f->name, ename, builtin, ename);
            diag_note(L->diags, p->loc, "'%s' declared here", p->name);
            return NULL;
        }
        sig[i].type = elem;
    }
    if (d->active) {
        lower_error(L, n, "recursive use of '%s' as the combine of '%s'", f->name, builtin);
        return NULL;
    }
    FuncInst *inst = instance_for(L, n, d, sig, arity);
    if (!inst || inst->failed)
        return NULL;
    if (inst->result != elem) {
        lower_error(L, n, "combine func '%s' of '%s' must return %s, it returns %s", f->name, builtin, ename,
                    inst->result ? lower_type_str(L, inst->result) : "nothing");
        diag_note(L->diags, f->loc, "'%s' declared here", f->name);
        return NULL;
    }
    IrMap seen;
    ir_map_init(&seen, &L->tmp);
    if (has_side_effects(L, inst->ir->body, &seen)) {
        lower_error(L, n, "combine func '%s' of '%s' must not have side effects", f->name, builtin);
        diag_note(L->diags, f->loc, "'%s' declared here", f->name);
        return NULL;
    }
    return inst;
}

/* ---- kernels ---- */

static const FeConstexpr *find_constexpr(Lower *L, const char *name) {
    const FeConstexpr *found = NULL; /* the last -D of a name wins */
    for (int i = 0; i < L->opts->num_constexprs; i++)
        if (same_name(L->opts->constexprs[i].name, name))
            found = &L->opts->constexprs[i];
    return found;
}

/* The value of a constexpr parameter of kernel k. */
/* The value of `constexpr dtype T`: from -D T=bf16, else its default. */
static const IrType *dtype_value(Lower *L, const AstNode *k, const AstNode *p) {
    const FeConstexpr *cx = find_constexpr(L, p->name);
    if (cx) {
        if (!cx->is_dtype || cx->i < IR_I1 || cx->i > IR_F8E5M2) {
            lower_error(L, p, "type parameter '%s' of kernel '%s' needs a type name (-D %s=f16, bf16, f32, ...)",
                        p->name, k->name, p->name);
            return NULL;
        }
        return lower_scalar(L, (IrTypeKind)cx->i);
    }
    if (!p->rhs) {
        lower_error(L, p, "type parameter '%s' of kernel '%s' has no value (pass -D %s=f16 or similar)", p->name,
                    k->name, p->name);
        return NULL;
    }
    const AstNode *t = lower_as_type(L, p->rhs);
    if (!t || t->type.is_pointer) {
        lower_error(L, p->rhs, "default value of type parameter '%s' must be a type name such as f16", p->name);
        return NULL;
    }
    return lower_scalar(L, t->type.scalar);
}

/* The scalar type a parameter's type spec names: a type, or a dtype
 * parameter's value. NULL after an error. */
static const IrType *param_scalar(Lower *L, const AstNode *p) {
    if (!p->type.type_param)
        return lower_scalar(L, p->type.scalar);
    Symbol *s = lower_lookup(L, p->type.type_param);
    if (!s || s->kind != SYM_DTYPE) {
        lower_error(L, p, "unknown type '%s' (declare it as a parameter: constexpr dtype %s)", p->type.type_param,
                    p->type.type_param);
        return NULL;
    }
    return s->type;
}

static Val constexpr_value(Lower *L, const AstNode *k, const AstNode *p) {
    const FeConstexpr *cx0 = find_constexpr(L, p->name);
    if (cx0 && cx0->is_dtype) {
        lower_error(L, p, "constexpr parameter '%s' of kernel '%s' is %s, but -D %s= names a type", p->name, k->name,
                    ir_scalar_name(p->type.scalar), p->name);
        return val_error();
    }
    const IrType *t = lower_scalar(L, p->type.scalar);
    const char *tn = ir_scalar_name(p->type.scalar);
    if (p->type.is_pointer) {
        lower_error(L, p, "constexpr parameter '%s' must be an integer, float or bool, not a pointer", p->name);
        return val_error();
    }
    const FeConstexpr *cx = find_constexpr(L, p->name);
    if (cx) {
        if (cx->is_float && !ir_type_is_float(t)) {
            lower_error(L, p, "constexpr parameter '%s' of kernel '%s' is %s, but -D %s=%g is not an integer", p->name,
                        k->name, tn, p->name, cx->f);
            return val_error();
        }
        if (t->kind == IR_I1 && !cx->is_float && cx->i != 0 && cx->i != 1) {
            lower_error(L, p, "constexpr parameter '%s' of kernel '%s' is bool; -D %s=%lld must be true, false, 0 or 1",
                        p->name, k->name, p->name, (long long)cx->i);
            return val_error();
        }
        if (ir_type_is_int(t) && !cx->is_float && ir_int_wrap(cx->i, ir_type_bits(t)) != cx->i) {
            lower_error(L, p, "-D %s=%lld does not fit constexpr parameter '%s' of type %s", p->name, (long long)cx->i,
                        p->name, tn);
            return val_error();
        }
        return cx->is_float          ? val_float(t, cx->f)
               : ir_type_is_float(t) ? val_float(t, (double)cx->i)
                                     : val_int(t, cx->i);
    }
    if (!p->rhs) {
        lower_error(L, p, "constexpr parameter '%s' of kernel '%s' has no value (pass -D %s=...)", p->name, k->name,
                    p->name);
        return val_error();
    }
    Val v = lower_expr(L, p->rhs);
    if (v.kind == VAL_ERROR)
        return v;
    if (v.kind != VAL_CONST || val_is_ptr(&v)) {
        lower_error(L, p->rhs, "default value of constexpr parameter '%s' is not a constant expression", p->name);
        return val_error();
    }
    if (ir_type_is_float(v.type) && !ir_type_is_float(t)) {
        lower_error(L, p->rhs, "default value of constexpr parameter '%s' must be %s, got %s", p->name, tn,
                    lower_val_str(L, &v));
        return val_error();
    }
    return lower_convert(L, v, t, p->rhs);
}

/* The divisibility a parameter is known to have: the larger of what the
 * source declares (divisible_by) and what the caller specializes on
 * (FeOptions.params, as the JIT does with the actual arguments). */
static int64_t lower_param_divisibility(Lower *L, const AstNode *p) {
    int64_t div = p->type.divisibility;
    for (int i = 0; i < L->opts->num_params; i++) {
        const FeParamSpec *s = &L->opts->params[i];
        if (strcmp(s->name, p->name) == 0 && s->divisibility > div)
            div = s->divisibility;
    }
    return div;
}

static void lower_kernel(Lower *L, const AstNode *k) {
    /* the @autotune clause is checked at every compile (its space is listed
     * only by tc_tune_space_create) */
    fe_tune_space(&L->tmp, k, NULL, 0, L->diags, NULL);
    IrFunc *fn = ir_func_create(L->m, IR_FUNC_KERNEL, k->name);
    fn->loc = k->loc;
    ir_func_set_int(fn, "num_warps", L->opts->num_warps > 0 ? L->opts->num_warps : TC_DEFAULT_NUM_WARPS);
    L->fn = fn;
    L->fn_decl = k;
    pop_symbols(L, 0);
    L->frame = 0;
    ir_builder_at_end(&L->b, L->m, fn->body);
    /* Type parameters first: `T* x` may come before `constexpr dtype T`. */
    for (int i = 0; i < k->num_items; i++) {
        const AstNode *p = k->items[i];
        if (p->kind == AST_PARAM && p->type.is_dtype) {
            int idx = declare(L, p, p->name, SYM_DTYPE, val_error());
            const IrType *t = dtype_value(L, k, p);
            /* After an error, f32 stands in so that uses do not cascade. */
            L->syms[idx].type = t ? t : lower_scalar(L, IR_F32);
        }
    }
    for (int i = 0; i < k->num_items; i++) {
        const AstNode *p = k->items[i];
        if (p->kind != AST_PARAM || p->type.is_dtype)
            continue;
        if (p->type.is_constexpr) {
            declare(L, p, p->name, SYM_CONSTEXPR, constexpr_value(L, k, p));
            continue;
        }
        if (p->rhs)
            lower_error(L, p->rhs, "only constexpr parameters have default values");
        const IrType *t = param_scalar(L, p);
        if (!t) {
            declare(L, p, p->name, SYM_PARAM, val_error());
            continue;
        }
        if (p->type.is_pointer)
            t = ir_type_ptr(L->m, t);
        IrValue *param = ir_func_add_param(fn, t, p->name);
        if (p->type.is_pointer && p->type.is_const) {
            /* nothing writes it while the kernel runs: passes may read it
             * early (docs/ir.md, "Functions"). First, as the divisibility
             * that tc_compile's specialize hook adds later goes last. */
            IrAttr a = {.name = "readonly", .kind = IR_ATTR_INT, .i = 1};
            ir_attrs_set(L->m, &param->num_attrs, &param->attrs, &a);
        }
        int64_t div = lower_param_divisibility(L, p);
        if (div > 1) {
            IrAttr a = {.name = "divisibility", .kind = IR_ATTR_INT, .i = div};
            ir_attrs_set(L->m, &param->num_attrs, &param->attrs, &a);
        }
        Val v = val_ir(param);
        if (p->type.is_pointer && p->type.is_const)
            v.const_param = p;
        declare(L, p, p->name, SYM_PARAM, v);
    }
    const AstNode *ret = lower_body(L, k->body);
    if (ret && ret->lhs)
        lower_error(L, ret, "a kernel cannot return a value");
    lower_at(L, ret ? ret : k);
    ir_build(&L->b, IR_OP_RETURN, NULL, 0, NULL);
    pop_symbols(L, 0);
}

/* ---- the entry point ---- */

/* Checks the file's declarations: unique names, no builtin names, funcs'
 * parameters well formed. */
static void check_decls(Lower *L) {
    for (int i = 0; i < L->num_decls; i++) {
        const AstNode *d = L->decls[i].decl;
        int *first = d->name ? name_slot(L, &L->decl_index, d->name, true) : NULL;
        if (first && *first < 0) {
            *first = i;
        } else if (first) {
            lower_error(L, d, "redefinition of '%s'", d->name);
            diag_note(L->diags, L->decls[*first].decl->loc, "previous declaration is here");
        }
        if (d->kind == AST_FUNC && lower_is_builtin(d->name))
            lower_error(L, d, "'%s' is a builtin; give this func another name", d->name);
        if (d->kind != AST_FUNC)
            continue;
        for (int p = 0; p < d->num_items; p++) {
            const AstNode *pp = d->items[p];
            for (int q = 0; q < p; q++) {
                if (same_name(d->items[q]->name, pp->name)) {
                    lower_error(L, pp, "redefinition of '%s'", pp->name);
                    diag_note(L->diags, d->items[q]->loc, "previous declaration is here");
                    break;
                }
            }
            if (pp->type.is_dtype || pp->type.type_param)
                lower_error(L, pp, "type parameters are only allowed on kernels (a func parameter's type "
                                   "follows its argument)");
            if (pp->rhs)
                lower_error(L, pp->rhs, "func parameters have no default values");
            if (pp->type.is_constexpr && pp->type.is_pointer)
                lower_error(L, pp, "constexpr parameter '%s' must be an integer, float or bool, not a pointer",
                            pp->name);
        }
    }
}

/* Every -D must name a constexpr parameter of some kernel being lowered. */
static void check_constexprs(Lower *L, const AstNode **kernels, int nk) {
    SrcLoc file_loc = {L->file->src, 0, 0};
    for (int c = 0; c < L->opts->num_constexprs; c++) {
        const char *name = L->opts->constexprs[c].name;
        bool used = false;
        for (int k = 0; k < nk && !used; k++)
            for (int p = 0; p < kernels[k]->num_items && !used; p++)
                used = kernels[k]->items[p]->type.is_constexpr && same_name(kernels[k]->items[p]->name, name);
        if (used)
            continue;
        Buf b;
        buf_init(&b);
        for (int k = 0; k < nk; k++)
            buf_printf(&b, "%s'%s'", k ? ", " : "", kernels[k]->name);
        if (nk)
            diag_error(L->diags, file_loc, "-D %s matches no constexpr parameter of kernel%s %s", name,
                       nk == 1 ? "" : "s", b.data);
        else
            diag_error(L->diags, file_loc, "-D %s matches no constexpr parameter: this file has no kernels", name);
        buf_free(&b);
    }
}

static void lower_file(Lower *L) {
    const AstFile *f = L->file;
    L->num_decls = f->num_decls;
    L->decls = ARENA_ARRAY(&L->tmp, DeclInfo, f->num_decls > 0 ? f->num_decls : 1);
    for (int i = 0; i < f->num_decls; i++)
        L->decls[i].decl = f->decls[i];
    check_decls(L);

    const AstNode **kernels = ARENA_ARRAY(&L->tmp, const AstNode *, f->num_decls > 0 ? f->num_decls : 1);
    int nk = 0;
    for (int i = 0; i < f->num_decls; i++)
        if (f->decls[i]->kind == AST_KERNEL && (!L->opts->kernel || same_name(f->decls[i]->name, L->opts->kernel)))
            kernels[nk++] = f->decls[i];
    if (L->opts->kernel && nk == 0) {
        Buf b;
        buf_init(&b);
        for (int i = 0; i < f->num_decls; i++)
            if (f->decls[i]->kind == AST_KERNEL)
                buf_printf(&b, "%s%s", b.len ? ", " : "", f->decls[i]->name);
        SrcLoc file_loc = {f->src, 0, 0};
        if (b.len)
            diag_error(L->diags, file_loc, "no kernel named '%s'; kernels in this file: %s", L->opts->kernel, b.data);
        else
            diag_error(L->diags, file_loc, "no kernel named '%s'; this file has no kernels", L->opts->kernel);
        buf_free(&b);
        return;
    }
    check_constexprs(L, kernels, nk);
    for (int k = 0; k < nk; k++)
        lower_kernel(L, kernels[k]);
}

/*
 * Lowering recurses over the AST, and into each func's body at its first call,
 * so its stack depth grows with expression and statement nesting times call
 * depth (each bounded, by FE_MAX_DEPTH and LOWER_MAX_CALL_DEPTH, and under
 * ASan a frame is several times bigger). Rather than depend on the stack of
 * the caller's thread (a library user's thread may have 256 KiB), fe_lower
 * runs on a thread of its own with LOWER_STACK_SIZE bytes of stack (reserved,
 * touched only as deep as the input goes), and lower_stack_ok stops the
 * recursion with an error before it uses more than LOWER_STACK_LIMIT of it.
 * If no thread can be made, lowering runs on the caller's thread under the
 * small LOWER_FALLBACK_STACK_LIMIT.
 */
#define LOWER_STACK_SIZE ((size_t)64 << 20)
#define LOWER_STACK_LIMIT ((size_t)56 << 20)
#define LOWER_FALLBACK_STACK_LIMIT ((size_t)128 << 10)

typedef struct LowerJob {
    const AstFile *file;
    const FeOptions *opts;
    DiagList *diags;
    size_t stack_limit;
    IrModule *result;
    bool oom; /* out of memory: re-raised on the caller's thread, where its guard is */
} LowerJob;

static void *lower_job(void *arg) {
    LowerJob *job = arg;
    static const FeOptions no_options;
    Lower *L = calloc(1, sizeof *L);
    if (!L) {
        job->oom = true;
        return NULL;
    }
    L->file = job->file;
    L->opts = job->opts ? job->opts : &no_options;
    L->diags = job->diags;
    L->stack_base = __builtin_frame_address(0);
    L->ret_flag = -1;
    L->stack_limit = job->stack_limit;
    arena_init(&L->tmp);
    TcGuard g;
    if (TC_GUARD(g)) {
        /* An internal error (or out of memory) deep inside: clean up, and
         * report it like any other error, rather than abort. */
        ir_module_destroy(L->m);
        arena_free(&L->tmp);
        free(L);
        if (g.code == 1)
            job->oom = true;
        else
            diag_error(job->diags, srcloc_none(), "internal error while lowering: %s", g.message);
        return NULL;
    }
    L->m = ir_module_create();
    int errors = job->diags->num_errors;
    lower_file(L);
    tc_guard_pop(&g);
    IrModule *m = L->m;
    arena_free(&L->tmp);
    free(L);
    if (job->diags->num_errors != errors) {
        ir_module_destroy(m);
        return NULL;
    }
    job->result = m;
    return NULL;
}

IrModule *fe_lower(const AstFile *f, const FeOptions *opts, DiagList *diags) {
    LowerJob job = {.file = f, .opts = opts, .diags = diags, .stack_limit = LOWER_STACK_LIMIT};
    pthread_attr_t attr;
    pthread_t thread;
    bool started = false;
    if (pthread_attr_init(&attr) == 0) {
        started = pthread_attr_setstacksize(&attr, LOWER_STACK_SIZE) == 0 &&
                  pthread_create(&thread, &attr, lower_job, &job) == 0;
        pthread_attr_destroy(&attr);
    }
    if (started) {
        pthread_join(thread, NULL);
    } else {
        job.stack_limit = LOWER_FALLBACK_STACK_LIMIT;
        lower_job(&job);
    }
    if (job.oom)
        tc_oom();
    return job.result;
}
