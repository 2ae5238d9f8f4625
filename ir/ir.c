/*
 * ir.c — modules, functions, blocks, values and operations; attributes; the
 * builder; the integer and float arithmetic that constant folding shares.
 *
 * Ownership: everything is allocated from the module's arena. Unlinking an op
 * detaches it from its block and leaves its memory in place, so a pass never
 * frees and a dangling pointer to a removed op is still safe to read.
 *
 * There are no use lists. Passes that need uses walk the function (a kernel
 * has hundreds of ops, not millions); ir_replace_all_uses() does the same.
 * Simple until a benchmark says otherwise.
 */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const IrOpInfo ir_op_info[IR_NUM_OPS] = {
#define OP(id, name, nopnd, nres, nreg, flags, attrs) {name, nopnd, nres, nreg, flags, attrs},
#include "ops.def"
};

bool ir_opcode_from_name(const char *s, size_t n, IrOpcode *out) {
    for (int i = 0; i < IR_NUM_OPS; i++) {
        if (strlen(ir_op_info[i].name) == n && memcmp(ir_op_info[i].name, s, n) == 0) {
            *out = (IrOpcode)i;
            return true;
        }
    }
    return false;
}

/* ---- modules and functions ---- */

IrModule *ir_module_create(void) {
    IrModule *m = calloc(1, sizeof *m);
    if (!m)
        tc_oom();
    arena_init(&m->arena);
    return m;
}

void ir_module_destroy(IrModule *m) {
    if (!m)
        return;
    arena_free(&m->arena);
    free(m);
}

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The slot of `name`: where it is, or the empty slot where it would go. */
static size_t func_slot(const IrModule *m, const char *name) {
    size_t mask = m->func_cap - 1;
    size_t i = name_hash(name) & mask;
    while (m->func_slots[i] && strcmp(m->func_slots[i]->name, name) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Adds f unless a function of its name is indexed already (the first one
 * in the list wins, as a linear search would find it). */
static void func_index_add(IrModule *m, IrFunc *f) {
    if (2 * (m->func_count + 1) > m->func_cap) {
        IrFunc **old = m->func_slots;
        size_t old_cap = m->func_cap;
        m->func_cap = old_cap ? 2 * old_cap : 16;
        m->func_slots = arena_alloc(&m->arena, m->func_cap * sizeof *m->func_slots);
        memset(m->func_slots, 0, m->func_cap * sizeof *m->func_slots);
        for (size_t i = 0; i < old_cap; i++)
            if (old[i])
                m->func_slots[func_slot(m, old[i]->name)] = old[i];
    }
    size_t i = func_slot(m, f->name);
    if (!m->func_slots[i]) {
        m->func_slots[i] = f;
        m->func_count++;
    }
}

static void func_index_rebuild(IrModule *m) {
    if (m->func_slots)
        memset(m->func_slots, 0, m->func_cap * sizeof *m->func_slots);
    m->func_count = 0;
    m->func_index_stale = false;
    for (IrFunc *f = m->first; f; f = f->next)
        func_index_add(m, f);
}

IrFunc *ir_func_create(IrModule *m, IrFuncKind kind, const char *name) {
    IrFunc *f = ARENA_NEW(&m->arena, IrFunc);
    f->kind = kind;
    f->name = arena_strdup(&m->arena, name);
    f->module = m;
    f->body = ir_block_create(m);
    f->body->func = f;
    f->prev = m->last;
    if (m->last)
        m->last->next = f;
    else
        m->first = f;
    m->last = f;
    if (!m->func_index_stale)
        func_index_add(m, f);
    return f;
}

IrFunc *ir_module_find_func(const IrModule *m, const char *name) {
    IrModule *mm = (IrModule *)m; /* the index is a cache: rebuilding it changes no function */
    if (mm->func_index_stale)
        func_index_rebuild(mm);
    if (!m->func_cap)
        return NULL;
    return m->func_slots[func_slot(m, name)];
}

void ir_func_remove(IrModule *m, IrFunc *f) {
    if (f->prev)
        f->prev->next = f->next;
    else
        m->first = f->next;
    if (f->next)
        f->next->prev = f->prev;
    else
        m->last = f->prev;
    f->prev = f->next = NULL;
    /* open addressing has no cheap delete: the index is rebuilt on the next
     * look-up (one pass over the functions, however many were removed) */
    m->func_index_stale = true;
}

size_t ir_block_count_ops(const IrBlock *b) {
    size_t n = 0;
    for (const IrOp *op = b->first; op; op = op->next) {
        n++;
        for (int r = 0; r < op->num_regions; r++)
            n += ir_block_count_ops(op->regions[r]);
    }
    return n;
}

IrValue *ir_func_add_param(IrFunc *f, const IrType *t, const char *name) {
    return ir_block_add_arg(f->module, f->body, t, name);
}

void ir_func_set_results(IrFunc *f, int n, const IrType *const *types) {
    f->num_results = n;
    f->result_types = ARENA_ARRAY(&f->module->arena, const IrType *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++)
        f->result_types[i] = types[i];
}

int64_t ir_func_get_int(const IrFunc *f, const char *name, int64_t dflt) {
    const IrAttr *a = ir_attr_get(f->num_attrs, f->attrs, name);
    return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

void ir_func_set_int(IrFunc *f, const char *name, int64_t v) {
    IrAttr a = {.name = name, .kind = IR_ATTR_INT, .i = v};
    ir_attrs_set(f->module, &f->num_attrs, &f->attrs, &a);
}

/* ---- blocks and values ---- */

IrBlock *ir_block_create(IrModule *m) { return ARENA_NEW(&m->arena, IrBlock); }

static bool all_digits(const char *s) {
    if (!*s)
        return true;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

void ir_value_set_name(IrModule *m, IrValue *v, const char *name) {
    v->name = (name && !all_digits(name)) ? arena_strdup(&m->arena, name) : NULL;
}

IrValue *ir_block_add_arg(IrModule *m, IrBlock *b, const IrType *t, const char *name) {
    if (b->num_args == b->cap_args) {
        int cap = b->cap_args ? b->cap_args * 2 : 4;
        b->args = arena_grow(&m->arena, b->args, sizeof(IrValue *) * (size_t)b->cap_args, sizeof(IrValue *) * (size_t)cap);
        b->cap_args = cap;
    }
    IrValue *v = ARENA_NEW(&m->arena, IrValue);
    v->type = t;
    v->block = b;
    v->index = b->num_args;
    ir_value_set_name(m, v, name);
    b->args[b->num_args++] = v;
    return v;
}

/* ---- operations ---- */

IrOp *ir_op_create(IrModule *m, IrOpcode opc, int num_operands, IrValue *const *operands, int num_results,
                   const IrType *const *result_types) {
    IrOp *op = ARENA_NEW(&m->arena, IrOp);
    op->opc = opc;
    ir_op_set_operands(m, op, num_operands, operands);
    op->num_results = num_results;
    op->results = ARENA_ARRAY(&m->arena, IrValue *, num_results > 0 ? num_results : 1);
    for (int i = 0; i < num_results; i++) {
        IrValue *v = ARENA_NEW(&m->arena, IrValue);
        v->type = result_types[i];
        v->def = op;
        v->index = i;
        op->results[i] = v;
    }
    int nreg = ir_op_info[opc].num_regions;
    op->num_regions = nreg;
    op->regions = ARENA_ARRAY(&m->arena, IrBlock *, nreg > 0 ? nreg : 1);
    for (int i = 0; i < nreg; i++) {
        op->regions[i] = ir_block_create(m);
        op->regions[i]->parent_op = op;
    }
    return op;
}

void ir_op_set_operand(IrOp *op, int i, IrValue *v) {
    tc_assert(i >= 0 && i < op->num_operands);
    op->operands[i] = v;
}

void ir_op_set_operands(IrModule *m, IrOp *op, int n, IrValue *const *operands) {
    op->num_operands = n;
    op->operands = ARENA_ARRAY(&m->arena, IrValue *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++)
        op->operands[i] = operands[i];
}

static void set_func(IrBlock *b, IrFunc *f);

static void set_func_op(IrOp *op, IrFunc *f) {
    for (int r = 0; r < op->num_regions; r++)
        set_func(op->regions[r], f);
}

static void set_func(IrBlock *b, IrFunc *f) {
    if (b->func == f)
        return;
    b->func = f;
    for (IrOp *op = b->first; op; op = op->next)
        set_func_op(op, f);
}

void ir_block_append(IrBlock *b, IrOp *op) {
    tc_assert(!op->parent);
    op->parent = b;
    op->prev = b->last;
    op->next = NULL;
    if (b->last)
        b->last->next = op;
    else
        b->first = op;
    b->last = op;
    set_func_op(op, b->func);
}

void ir_op_insert_before(IrOp *pos, IrOp *op) {
    tc_assert(!op->parent && pos->parent);
    IrBlock *b = pos->parent;
    op->parent = b;
    op->next = pos;
    op->prev = pos->prev;
    if (pos->prev)
        pos->prev->next = op;
    else
        b->first = op;
    pos->prev = op;
    set_func_op(op, b->func);
}

void ir_op_insert_after(IrOp *pos, IrOp *op) {
    if (pos->next) {
        ir_op_insert_before(pos->next, op);
        return;
    }
    ir_block_append(pos->parent, op);
}

void ir_op_unlink(IrOp *op) {
    IrBlock *b = op->parent;
    if (!b)
        return;
    if (op->prev)
        op->prev->next = op->next;
    else
        b->first = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        b->last = op->prev;
    op->parent = NULL;
    op->prev = op->next = NULL;
}

IrFunc *ir_op_func(const IrOp *op) { return op->parent ? op->parent->func : NULL; }

const IrOpInfo *ir_op_info_of(const IrOp *op) { return &ir_op_info[op->opc]; }

bool ir_op_has_flag(const IrOp *op, unsigned flag) { return (ir_op_info[op->opc].flags & flag) != 0; }

/* ---- walking and uses ---- */

void ir_walk_block(IrBlock *b, IrWalkFn fn, void *ctx) {
    IrOp *op = b->first;
    while (op) {
        IrOp *next = op->next;
        IrBlock *parent = op->parent;
        fn(op, ctx);
        /* If the callback unlinked op, its regions are not visited. */
        if (op->parent == parent)
            for (int r = 0; r < op->num_regions; r++)
                ir_walk_block(op->regions[r], fn, ctx);
        op = next;
    }
}

void ir_walk_func(IrFunc *f, IrWalkFn fn, void *ctx) { ir_walk_block(f->body, fn, ctx); }

void ir_replace_all_uses(IrBlock *scope, IrValue *from, IrValue *to) {
    for (IrOp *op = scope->first; op; op = op->next) {
        for (int i = 0; i < op->num_operands; i++)
            if (op->operands[i] == from)
                op->operands[i] = to;
        for (int r = 0; r < op->num_regions; r++)
            ir_replace_all_uses(op->regions[r], from, to);
    }
}

int ir_count_uses(IrBlock *scope, const IrValue *v) {
    int n = 0;
    for (IrOp *op = scope->first; op; op = op->next) {
        for (int i = 0; i < op->num_operands; i++)
            n += op->operands[i] == v;
        for (int r = 0; r < op->num_regions; r++)
            n += ir_count_uses(op->regions[r], v);
    }
    return n;
}

const IrValue *ir_view_buffer(const IrValue *v) {
    while (v->def && v->def->opc == IR_OP_MEMDESC_TRANS)
        v = v->def->operands[0];
    return v;
}

const IrValue *ir_buffer_root(const IrValue *v) {
    while (v->def && (v->def->opc == IR_OP_MEMDESC_TRANS || v->def->opc == IR_OP_MEMDESC_INDEX))
        v = v->def->operands[0];
    return v;
}

/* ---- attributes ---- */

bool ir_points_to_readonly(const IrValue *v) {
    for (int depth = 0; depth < 64 && v; depth++) {
        if (!v->def)
            return v->type->kind == IR_PTR && ir_attr_get(v->num_attrs, v->attrs, "readonly") != NULL;
        switch (v->def->opc) {
        case IR_OP_ADDPTR:
        case IR_OP_SPLAT:
        case IR_OP_BROADCAST:
        case IR_OP_EXPAND_DIMS:
        case IR_OP_RESHAPE:
        case IR_OP_TRANS:
        case IR_OP_CONVERT_LAYOUT: v = v->def->operands[0]; break;
        default: return false;
        }
    }
    return false;
}

const IrAttr *ir_attr_get(int n, const IrAttr *attrs, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(attrs[i].name, name) == 0)
            return &attrs[i];
    return NULL;
}

const IrAttr *ir_op_attr(const IrOp *op, const char *name) { return ir_attr_get(op->num_attrs, op->attrs, name); }

int64_t ir_op_get_int(const IrOp *op, const char *name, int64_t dflt) {
    const IrAttr *a = ir_op_attr(op, name);
    return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

double ir_op_get_number(const IrOp *op, const char *name, double dflt) {
    const IrAttr *a = ir_op_attr(op, name);
    if (!a)
        return dflt;
    if (a->kind == IR_ATTR_INT)
        return (double)a->i;
    if (a->kind == IR_ATTR_FLOAT)
        return a->f;
    return dflt;
}

const char *ir_op_get_word(const IrOp *op, const char *name) {
    const IrAttr *a = ir_op_attr(op, name);
    return a && a->kind == IR_ATTR_WORD ? a->s : NULL;
}

bool ir_reduce_is_arg(const IrOp *op) {
    const char *kind = op->opc == IR_OP_REDUCE ? ir_op_get_word(op, "kind") : NULL;
    return kind && (strcmp(kind, "argmax") == 0 || strcmp(kind, "argmin") == 0);
}

const char *ir_op_get_string(const IrOp *op, const char *name) {
    const IrAttr *a = ir_op_attr(op, name);
    return a && a->kind == IR_ATTR_STRING ? a->s : NULL;
}

/* Copies an attribute's strings and lists into the module's arena. */
static IrAttr attr_copy(IrModule *m, const IrAttr *a) {
    IrAttr c = *a;
    c.name = arena_strdup(&m->arena, a->name);
    switch (a->kind) {
    case IR_ATTR_WORD:
    case IR_ATTR_STRING:
    case IR_ATTR_SYMBOL:
        c.s = arena_strdup(&m->arena, a->s);
        break;
    case IR_ATTR_INTS: {
        int64_t *v = ARENA_ARRAY(&m->arena, int64_t, a->list.n > 0 ? a->list.n : 1);
        for (int i = 0; i < a->list.n; i++)
            v[i] = a->list.v[i];
        c.list.v = v;
        break;
    }
    default:
        break;
    }
    return c;
}

void ir_attrs_set(IrModule *m, int *num, IrAttr **attrs, const IrAttr *a) {
    for (int i = 0; i < *num; i++) {
        if (strcmp((*attrs)[i].name, a->name) == 0) {
            (*attrs)[i] = attr_copy(m, a);
            return;
        }
    }
    IrAttr *grown = arena_grow(&m->arena, *attrs, sizeof(IrAttr) * (size_t)*num, sizeof(IrAttr) * (size_t)(*num + 1));
    grown[*num] = attr_copy(m, a);
    *attrs = grown;
    (*num)++;
}

void ir_op_set_attr(IrModule *m, IrOp *op, const IrAttr *a) { ir_attrs_set(m, &op->num_attrs, &op->attrs, a); }

void ir_op_set_int(IrModule *m, IrOp *op, const char *name, int64_t v) {
    IrAttr a = {.name = name, .kind = IR_ATTR_INT, .i = v};
    ir_op_set_attr(m, op, &a);
}

void ir_op_remove_attr(IrOp *op, const char *name) {
    for (int i = 0; i < op->num_attrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) {
            memmove(op->attrs + i, op->attrs + i + 1, sizeof(IrAttr) * (size_t)(op->num_attrs - i - 1));
            op->num_attrs--;
            return;
        }
}

void ir_op_set_float(IrModule *m, IrOp *op, const char *name, double v) {
    IrAttr a = {.name = name, .kind = IR_ATTR_FLOAT, .f = v};
    ir_op_set_attr(m, op, &a);
}

void ir_op_set_word(IrModule *m, IrOp *op, const char *name, const char *w) {
    IrAttr a = {.name = name, .kind = IR_ATTR_WORD, .s = w};
    ir_op_set_attr(m, op, &a);
}

void ir_op_set_symbol(IrModule *m, IrOp *op, const char *name, const char *sym) {
    IrAttr a = {.name = name, .kind = IR_ATTR_SYMBOL, .s = sym};
    ir_op_set_attr(m, op, &a);
}

void ir_op_set_string(IrModule *m, IrOp *op, const char *name, const char *str) {
    IrAttr a = {.name = name, .kind = IR_ATTR_STRING, .s = str};
    ir_op_set_attr(m, op, &a);
}

void ir_op_set_ints(IrModule *m, IrOp *op, const char *name, int n, const int64_t *v) {
    IrAttr a = {.name = name, .kind = IR_ATTR_INTS};
    a.list.n = n;
    a.list.v = v;
    ir_op_set_attr(m, op, &a);
}

bool ir_attr_equal(const IrAttr *a, const IrAttr *b) {
    if (strcmp(a->name, b->name) != 0 || a->kind != b->kind)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT:
        return a->i == b->i;
    case IR_ATTR_FLOAT:
        /* Bitwise: 0.0 and -0.0 differ, NaN equals itself. */
        return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case IR_ATTR_WORD:
    case IR_ATTR_STRING:
    case IR_ATTR_SYMBOL:
        return strcmp(a->s, b->s) == 0;
    case IR_ATTR_INTS:
        if (a->list.n != b->list.n)
            return false;
        for (int i = 0; i < a->list.n; i++)
            if (a->list.v[i] != b->list.v[i])
                return false;
        return true;
    }
    return false;
}

/* ---- constants ---- */

bool ir_value_is_constant(const IrValue *v) { return v->def && v->def->opc == IR_OP_CONSTANT; }

bool ir_value_const_int(const IrValue *v, int64_t *out) {
    if (!ir_value_is_constant(v))
        return false;
    const IrAttr *a = ir_op_attr(v->def, "value");
    if (!a || a->kind != IR_ATTR_INT)
        return false;
    *out = a->i;
    return true;
}

bool ir_value_const_number(const IrValue *v, double *out) {
    if (!ir_value_is_constant(v))
        return false;
    const IrAttr *a = ir_op_attr(v->def, "value");
    if (!a)
        return false;
    if (a->kind == IR_ATTR_INT)
        *out = (double)a->i;
    else if (a->kind == IR_ATTR_FLOAT)
        *out = a->f;
    else
        return false;
    return true;
}

bool ir_value_is_zero(const IrValue *v) {
    double x;
    return ir_value_const_number(v, &x) && x == 0.0;
}

/* ---- builder ---- */

void ir_builder_at_end(IrBuilder *b, IrModule *m, IrBlock *block) {
    b->m = m;
    b->block = block;
    b->before = NULL;
    b->loc = srcloc_none();
}

void ir_builder_before(IrBuilder *b, IrOp *op) {
    tc_assert(op->parent && op->parent->func);
    b->m = op->parent->func->module;
    b->block = op->parent;
    b->before = op;
    b->loc = op->loc;
}

IrOp *ir_build_op(IrBuilder *b, IrOpcode opc, int num_operands, IrValue *const *operands, int num_results,
                  const IrType *const *result_types) {
    IrOp *op = ir_op_create(b->m, opc, num_operands, operands, num_results, result_types);
    op->loc = b->loc;
    if (b->before)
        ir_op_insert_before(b->before, op);
    else
        ir_block_append(b->block, op);
    return op;
}

IrValue *ir_build(IrBuilder *b, IrOpcode opc, const IrType *type, int num_operands, IrValue *const *operands) {
    IrOp *op = ir_build_op(b, opc, num_operands, operands, type ? 1 : 0, &type);
    return type ? op->results[0] : NULL;
}

IrValue *ir_build_unary(IrBuilder *b, IrOpcode opc, const IrType *type, IrValue *a) {
    return ir_build(b, opc, type, 1, &a);
}

IrValue *ir_build_binary(IrBuilder *b, IrOpcode opc, const IrType *type, IrValue *x, IrValue *y) {
    IrValue *ops[2] = {x, y};
    return ir_build(b, opc, type, 2, ops);
}

IrValue *ir_build_const_int(IrBuilder *b, const IrType *type, int64_t v) {
    IrValue *r = ir_build(b, IR_OP_CONSTANT, type, 0, NULL);
    ir_op_set_int(b->m, r->def, "value", v);
    return r;
}

IrValue *ir_build_const_float(IrBuilder *b, const IrType *type, double v) {
    IrValue *r = ir_build(b, IR_OP_CONSTANT, type, 0, NULL);
    ir_op_set_float(b->m, r->def, "value", v);
    return r;
}

IrValue *ir_build_cmp(IrBuilder *b, const char *pred, IrValue *x, IrValue *y) {
    const IrType *t = ir_type_with_elem(b->m, x->type, ir_type_scalar(b->m, IR_I1));
    IrValue *r = ir_build_binary(b, IR_OP_CMP, t, x, y);
    ir_op_set_word(b->m, r->def, "pred", pred);
    return r;
}

/* ---- folding arithmetic ---- */

int64_t ir_int_wrap(int64_t v, int bits) {
    if (bits >= 64)
        return v;
    if (bits == 1)
        return (int64_t)((uint64_t)v & 1u); /* i1 is 0 or 1 */
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    uint64_t u = (uint64_t)v & mask;
    uint64_t sign = (uint64_t)1 << (bits - 1);
    return (int64_t)((u ^ sign) - sign);
}

/* The high `bits` bits of the unsigned 2*bits-bit product of the low
 * `bits` bits of a and b (umulhi). */
static uint64_t umulhi(uint64_t a, uint64_t b, int bits) {
    if (bits < 64) {
        uint64_t mask = ((uint64_t)1 << bits) - 1;
        return ((a & mask) * (b & mask)) >> bits; /* bits <= 32: the product fits */
    }
    uint64_t alo = a & 0xffffffffu, ahi = a >> 32, blo = b & 0xffffffffu, bhi = b >> 32;
    uint64_t lo = alo * blo, mid1 = ahi * blo, mid2 = alo * bhi;
    uint64_t carry = ((lo >> 32) + (mid1 & 0xffffffffu) + (mid2 & 0xffffffffu)) >> 32;
    return ahi * bhi + (mid1 >> 32) + (mid2 >> 32) + carry;
}

bool ir_fold_int_binary(IrOpcode opc, int bits, int64_t a, int64_t b, int64_t *out) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t min = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
    int64_t r;
    switch (opc) {
    case IR_OP_ADD: r = (int64_t)(ua + ub); break;
    case IR_OP_SUB: r = (int64_t)(ua - ub); break;
    case IR_OP_MUL: r = (int64_t)(ua * ub); break;
    case IR_OP_DIV:
        if (b == 0)
            return false;
        if (b == -1)
            r = a == min ? a : -a; /* wraps like the hardware's two's complement */
        else
            r = a / b;
        break;
    case IR_OP_REM:
        if (b == 0)
            return false;
        r = b == -1 ? 0 : a % b;
        break;
    case IR_OP_MIN: r = a < b ? a : b; break;
    case IR_OP_MAX: r = a > b ? a : b; break;
    case IR_OP_AND: r = (int64_t)(ua & ub); break;
    case IR_OP_OR: r = (int64_t)(ua | ub); break;
    case IR_OP_XOR: r = (int64_t)(ua ^ ub); break;
    case IR_OP_SHL:
        if (b < 0 || b >= bits)
            return false;
        r = (int64_t)(ua << b);
        break;
    case IR_OP_SHR:
        if (b < 0 || b >= bits)
            return false;
        r = a >= 0 ? (int64_t)(ua >> b) : (int64_t)~(~ua >> b);
        break;
    case IR_OP_UMULHI:
        if (bits > 32 && bits < 64) /* no such type */
            return false;
        r = (int64_t)umulhi(ua, ub, bits);
        break;
    default:
        return false;
    }
    *out = ir_int_wrap(r, bits);
    return true;
}

bool ir_fold_math(IrOpcode opc, double a, double *out) {
    switch (opc) {
    case IR_OP_EXP: *out = exp(a); return true;
    case IR_OP_EXP2: *out = exp2(a); return true;
    case IR_OP_LOG: *out = log(a); return true;
    case IR_OP_LOG2: *out = log2(a); return true;
    case IR_OP_SQRT: *out = sqrt(a); return true;
    case IR_OP_RSQRT: *out = 1.0 / sqrt(a); return true;
    case IR_OP_ERF: *out = erf(a); return true;
    case IR_OP_TANH: *out = tanh(a); return true;
    case IR_OP_SIGMOID: *out = 1.0 / (1.0 + exp(-a)); return true;
    case IR_OP_FLOOR: *out = floor(a); return true;
    case IR_OP_CEIL: *out = ceil(a); return true;
    case IR_OP_SIN: *out = sin(a); return true;
    case IR_OP_COS: *out = cos(a); return true;
    case IR_OP_ABS: *out = fabs(a); return true;
    case IR_OP_NEG: *out = -a; return true;
    default: return false;
    }
}

bool ir_fold_cmp(const char *pred, double a, double b, bool is_int, int64_t ia, int64_t ib) {
    int c; /* -1, 0, 1, or 2 for unordered */
    if (is_int)
        c = ia < ib ? -1 : ia > ib ? 1 : 0;
    else if (isnan(a) || isnan(b))
        c = 2;
    else
        c = a < b ? -1 : a > b ? 1 : 0;
    if (strcmp(pred, "eq") == 0)
        return c == 0;
    if (strcmp(pred, "ne") == 0)
        return c != 0; /* unordered compares not-equal */
    if (strcmp(pred, "lt") == 0)
        return c == -1;
    if (strcmp(pred, "le") == 0)
        return c == -1 || c == 0;
    if (strcmp(pred, "gt") == 0)
        return c == 1;
    if (strcmp(pred, "ge") == 0)
        return c == 1 || c == 0;
    return false;
}

/* Rounds v to the nearest value representable with `mant` explicit mantissa
 * bits and the exponent range of IEEE half (min_exp -14), f32/bf16 (-126)
 * or an fp8 format, ties to even; overflow gives infinity. */
static double round_to(double v, int mant, int min_exp, double max_finite) {
    if (isnan(v) || isinf(v) || v == 0)
        return v;
    double a = fabs(v);
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int exp = e - 1;
    if (exp < min_exp)
        exp = min_exp; /* subnormal: fixed quantum */
    double quantum = ldexp(1.0, exp - mant);
    double r = nearbyint(a / quantum) * quantum; /* default rounding mode: ties to even */
    if (r > max_finite)
        r = INFINITY;
    return v < 0 ? -r : r;
}

/* fp8: E4M3FN has 3 mantissa bits, min_exp -6 and max 448 (S.1111.110;
 * S.1111.111 is NaN); E5M2 has 2, -14 and 57344. Conversions saturate:
 * anything past the maximum, infinities included, becomes it. */
static double round_f8(IrTypeKind k, double v) {
    bool e4 = k == IR_F8E4M3;
    double max = e4 ? 448.0 : 57344.0;
    if (isnan(v))
        return v;
    double r = isinf(v) ? copysign(max, v) : round_to(v, e4 ? 3 : 2, e4 ? -6 : -14, INFINITY);
    return fabs(r) > max ? copysign(max, v) : r;
}

double ir_float_round(IrTypeKind k, double v) {
    switch (k) {
    case IR_F16: return round_to(v, 10, -14, 65504.0);
    case IR_BF16: return round_to(v, 7, -126, 3.3895313892515355e38);
    case IR_F32: return round_to(v, 23, -126, 3.4028234663852886e38);
    case IR_F8E4M3:
    case IR_F8E5M2: return round_f8(k, v);
    default: return v;
    }
}

uint8_t ir_f8_bits(IrTypeKind k, double v) {
    bool e4 = k == IR_F8E4M3;
    if (isnan(v))
        return 0x7F;
    double a = fabs(round_f8(k, v));
    uint8_t sign = signbit(v) ? 0x80 : 0;
    int mant = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    if (a < ldexp(1.0, 1 - bias)) /* zero or subnormal: a multiple of the quantum */
        return sign | (uint8_t)ldexp(a, bias - 1 + mant);
    int e;
    double f = frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    int m = (int)ldexp(f * 2 - 1, mant);
    return sign | (uint8_t)((e - 1 + bias) << mant | m);
}

double ir_f8_value(IrTypeKind k, uint8_t bits) {
    bool e4 = k == IR_F8E4M3;
    int mant = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    int e = (bits & 0x7F) >> mant, m = bits & ((1 << mant) - 1);
    double s = bits & 0x80 ? -1.0 : 1.0;
    if (e4 ? (bits & 0x7F) == 0x7F : e == 31)
        return e4 || m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexp(m, 1 - bias - mant);
    return s * ldexp(1.0 + ldexp(m, -mant), e - bias);
}
