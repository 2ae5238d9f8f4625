/*
 * cse.c — common subexpression elimination over structured regions.
 *
 * Precondition: a verified module.
 *
 * Two pure ops compute the same value when they have the same opcode, the
 * same operands (in either order for commutative ops), equal attributes
 * (compared by name, so their order does not matter) and the same result
 * types. Only pure ops without regions take part, and loads of `readonly`
 * memory (nothing writes it while the kernel runs, so two equal loads read
 * the same values wherever they are): other loads, stores, calls and
 * control flow never do.
 *
 * The walk is pre-order with a scoped hash table. Entering a block opens a
 * scope; an op whose twin is in the table is removed and its results are
 * mapped to the twin's (operands of later ops are rewritten through that
 * map, rewrite.c); otherwise it is added. Leaving a block pops the entries it
 * added. So a value of an enclosing block may replace one in a nested block
 * (it dominates it), never the other way round, and ops of two sibling
 * regions (then and else, or two loops) never merge.
 *
 * The table is chained: each bucket is a list with the newest entry first,
 * and a stack records insertion order. Scopes close in reverse order of
 * insertion, so every entry being popped is at the head of its bucket and
 * popping is O(1). The hash mixes the opcode, the operand pointers (summed
 * for the commuting pair, so both orders hash alike), the result types and
 * the attribute values. Pointers make hashes differ from run to run, but
 * they only pick buckets: which op survives is always the first one in
 * program order, so the output is deterministic. Linear in the number of
 * ops.
 */
#include "passes.h"

#include <string.h>

typedef struct Entry Entry;
struct Entry {
    IrOp *op;      /* the first op computing this value in scope */
    uint64_t hash; /* hash_op(op) */
    Entry *next;   /* older entry of the same bucket */
};

typedef struct Cse {
    IrModule *m;
    Entry **buckets; /* nbuckets chains */
    size_t nbuckets; /* a power of two */
    Entry **stack;   /* entries in insertion order, for popping scopes */
    size_t nstack, capstack;
    IrMap subst; /* removed op's result -> twin's result */
} Cse;

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static uint64_t hash_attr(const IrAttr *a) {
    uint64_t h = mix(hash_str(a->name), (uint64_t)a->kind);
    switch (a->kind) {
    case IR_ATTR_INT: return mix(h, (uint64_t)a->i);
    case IR_ATTR_FLOAT: {
        uint64_t bits;
        memcpy(&bits, &a->f, sizeof bits);
        return mix(h, bits);
    }
    case IR_ATTR_WORD:
    case IR_ATTR_STRING:
    case IR_ATTR_SYMBOL: return mix(h, hash_str(a->s));
    case IR_ATTR_INTS:
        for (int i = 0; i < a->list.n; i++)
            h = mix(h, (uint64_t)a->list.v[i]);
        return h;
    }
    return h;
}

static bool commutes(const IrOp *op) {
    return (ir_op_info[op->opc].flags & OPF_COMMUTATIVE) && op->num_operands >= 2;
}

static uint64_t hash_op(const IrOp *op) {
    uint64_t h = mix((uint64_t)op->opc, (uint64_t)op->num_operands);
    int first = 0;
    if (commutes(op)) {
        h = mix(h, hash_ptr(op->operands[0]) + hash_ptr(op->operands[1]));
        first = 2;
    }
    for (int i = first; i < op->num_operands; i++)
        h = mix(h, hash_ptr(op->operands[i]));
    for (int i = 0; i < op->num_results; i++)
        h = mix(h, hash_ptr(op->results[i]->type));
    uint64_t attrs = 0; /* order-independent */
    for (int i = 0; i < op->num_attrs; i++)
        attrs += hash_attr(&op->attrs[i]);
    return mix(h, attrs);
}

/* Equal kind and value (floats bit for bit: 0.0 and -0.0 differ, a NaN
 * equals itself). */
static bool attr_value_equal(const IrAttr *a, const IrAttr *b) {
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case IR_ATTR_INT: return a->i == b->i;
    case IR_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case IR_ATTR_WORD:
    case IR_ATTR_STRING:
    case IR_ATTR_SYMBOL: return a->s == b->s || (a->s && b->s && strcmp(a->s, b->s) == 0);
    case IR_ATTR_INTS:
        return a->list.n == b->list.n &&
               (a->list.n == 0 || memcmp(a->list.v, b->list.v, sizeof(int64_t) * (size_t)a->list.n) == 0);
    }
    return false;
}

static bool same_op(const IrOp *a, const IrOp *b) {
    if (a->opc != b->opc || a->num_operands != b->num_operands || a->num_results != b->num_results ||
        a->num_attrs != b->num_attrs)
        return false;
    for (int i = 0; i < a->num_results; i++)
        if (a->results[i]->type != b->results[i]->type)
            return false;
    int first = 0;
    if (commutes(a)) {
        IrValue *a0 = a->operands[0], *a1 = a->operands[1], *b0 = b->operands[0], *b1 = b->operands[1];
        if (!((a0 == b0 && a1 == b1) || (a0 == b1 && a1 == b0)))
            return false;
        first = 2;
    }
    for (int i = first; i < a->num_operands; i++)
        if (a->operands[i] != b->operands[i])
            return false;
    for (int i = 0; i < a->num_attrs; i++) {
        const IrAttr *other = ir_attr_get(b->num_attrs, b->attrs, a->attrs[i].name);
        if (!other || !attr_value_equal(&a->attrs[i], other))
            return false;
    }
    return true;
}

static void push(Cse *c, Entry *e) {
    if (c->nstack == c->capstack) {
        size_t cap = c->capstack ? c->capstack * 2 : 256;
        c->stack = arena_grow(&c->m->arena, c->stack, sizeof(Entry *) * c->nstack, sizeof(Entry *) * cap);
        c->capstack = cap;
    }
    c->stack[c->nstack++] = e;
}

/* Returns the twin of op in scope, or adds op and returns NULL. */
static IrOp *lookup_or_add(Cse *c, IrOp *op) {
    uint64_t h = hash_op(op);
    Entry **bucket = &c->buckets[h & (c->nbuckets - 1)];
    for (Entry *e = *bucket; e; e = e->next)
        if (e->hash == h && same_op(e->op, op))
            return e->op;
    Entry *e = ARENA_NEW(&c->m->arena, Entry);
    e->op = op;
    e->hash = h;
    e->next = *bucket;
    *bucket = e;
    push(c, e);
    return NULL;
}

static void pop_to(Cse *c, size_t mark) {
    while (c->nstack > mark) {
        Entry *e = c->stack[--c->nstack];
        Entry **bucket = &c->buckets[e->hash & (c->nbuckets - 1)];
        tc_assert(*bucket == e);
        *bucket = e->next;
    }
}

static void cse_block(Cse *c, IrBlock *b) {
    size_t mark = c->nstack;
    for (IrOp *op = b->first, *next; op; op = next) {
        next = op->next;
        pass_subst_operands(&c->subst, op);
        bool ro_load = op->opc == IR_OP_LOAD && ir_points_to_readonly(op->operands[0]);
        if ((pass_op_is_removable(op) || ro_load) && op->num_results > 0) {
            IrOp *twin = lookup_or_add(c, op);
            if (twin) {
                for (int i = 0; i < op->num_results; i++)
                    ir_map_put(&c->subst, op->results[i], twin->results[i]);
                ir_op_unlink(op);
                continue;
            }
        }
        for (int r = 0; r < op->num_regions; r++)
            cse_block(c, op->regions[r]);
    }
    pop_to(c, mark);
}

bool pass_cse(IrModule *m, const PassOptions *opts) {
    Cse c;
    memset(&c, 0, sizeof c);
    c.m = m;
    ir_map_init(&c.subst, &m->arena);
    for (IrFunc *f = m->first; f; f = f->next) {
        size_t n = ir_block_count_ops(f->body), nb = 16;
        while (nb < 2 * n)
            nb *= 2;
        c.buckets = ARENA_ARRAY(&m->arena, Entry *, nb);
        c.nbuckets = nb;
        cse_block(&c, f->body);
    }
    return true;
}
