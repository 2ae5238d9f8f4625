/*
 * type.c — IR types, interned per module.
 *
 * A type is built by filling a prototype and looking it up in the module's
 * intern table; equal types are the same pointer, so passes compare types
 * with ==. The same table code interns layouts (layout.c). Prototypes are
 * zeroed before they are filled, so two equal types are equal byte for byte
 * (padding and unused fields included) and hashing can read raw bytes.
 */
#include "ir.h"

#include <string.h>

struct IrInternTable {
    size_t cap;   /* slots, a power of two */
    size_t count; /* used slots */
    size_t size;  /* bytes per entry */
    void **slots; /* entries (arena-owned) or NULL */
};

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* Returns the interned copy of proto (size bytes), creating it if new. */
const void *ir_intern(IrModule *m, struct IrInternTable **tp, const void *proto, size_t size) {
    struct IrInternTable *t = *tp;
    if (!t) {
        t = ARENA_NEW(&m->arena, struct IrInternTable);
        t->cap = 64;
        t->size = size;
        t->slots = ARENA_ARRAY(&m->arena, void *, t->cap);
        *tp = t;
    }
    if ((t->count + 1) * 2 > t->cap) {
        size_t cap = t->cap * 2;
        void **slots = ARENA_ARRAY(&m->arena, void *, cap);
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i])
                continue;
            size_t j = hash_bytes(t->slots[i], size) & (cap - 1);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = t->slots[i];
        }
        t->slots = slots;
        t->cap = cap;
    }
    size_t j = hash_bytes(proto, size) & (t->cap - 1);
    while (t->slots[j]) {
        if (memcmp(t->slots[j], proto, size) == 0)
            return t->slots[j];
        j = (j + 1) & (t->cap - 1);
    }
    void *copy = arena_alloc(&m->arena, size);
    memcpy(copy, proto, size);
    t->slots[j] = copy;
    t->count++;
    return copy;
}

static const IrType *intern_type(IrModule *m, const IrType *proto) {
    return ir_intern(m, &m->types, proto, sizeof *proto);
}

const IrType *ir_type_scalar(IrModule *m, IrTypeKind kind) {
    tc_assert(ir_kind_is_scalar_number(kind));
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    return intern_type(m, &t);
}

const IrType *ir_type_ptr(IrModule *m, const IrType *pointee) {
    tc_assert(pointee && ir_kind_is_scalar_number(pointee->kind));
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = IR_PTR;
    t.elem = pointee;
    return intern_type(m, &t);
}

const IrType *ir_type_tensormap(IrModule *m) {
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = IR_TENSORMAP;
    return intern_type(m, &t);
}

static const IrType *shaped(IrModule *m, IrTypeKind kind, const IrType *elem, int rank, const int64_t *shape,
                            const Layout *layout) {
    tc_assert(elem && elem->kind <= IR_PTR);
    tc_assert(rank >= 1 && rank <= IR_MAX_RANK);
    IrType t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.elem = elem;
    t.rank = rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    t.layout = layout;
    return intern_type(m, &t);
}

const IrType *ir_type_tile(IrModule *m, const IrType *elem, int rank, const int64_t *shape, const Layout *layout) {
    return shaped(m, IR_TILE, elem, rank, shape, layout);
}

const IrType *ir_type_smem(IrModule *m, const IrType *elem, int rank, const int64_t *shape, const Layout *layout) {
    return shaped(m, IR_SMEM, elem, rank, shape, layout);
}

const IrType *ir_type_with_elem(IrModule *m, const IrType *t, const IrType *elem) {
    if (t->kind == IR_TILE || t->kind == IR_SMEM)
        return shaped(m, t->kind, elem, t->rank, t->shape, t->layout);
    return elem;
}

const IrType *ir_type_with_layout(IrModule *m, const IrType *t, const Layout *layout) {
    tc_assert(t->kind == IR_TILE || t->kind == IR_SMEM);
    return shaped(m, t->kind, t->elem, t->rank, t->shape, layout);
}

bool ir_type_is_int(const IrType *t) { return t->kind <= IR_I64; }
bool ir_type_is_float(const IrType *t) { return (t->kind >= IR_F16 && t->kind <= IR_F64) || ir_type_is_fp8(t); }
bool ir_type_is_fp8(const IrType *t) { return t->kind == IR_F8E4M3 || t->kind == IR_F8E5M2; }
bool ir_kind_is_scalar_number(IrTypeKind k) { return (unsigned)k <= IR_F8E5M2; }
bool ir_type_is_scalar(const IrType *t) { return t->kind <= IR_PTR; }
bool ir_type_is_tile(const IrType *t) { return t->kind == IR_TILE; }

int ir_type_bytes(const IrType *t) {
    int bits = ir_type_bits(t);
    return bits < 8 ? 1 : bits / 8;
}

int ir_type_bits(const IrType *t) {
    switch (t->kind) {
    case IR_I1: return 1;
    case IR_I8: return 8;
    case IR_I16: return 16;
    case IR_I32: return 32;
    case IR_I64: return 64;
    case IR_F16: return 16;
    case IR_BF16: return 16;
    case IR_F32: return 32;
    case IR_F64: return 64;
    case IR_F8E4M3:
    case IR_F8E5M2: return 8;
    case IR_PTR: return 64;
    default: return 0;
    }
}

const IrType *ir_type_elem(const IrType *t) { return (t->kind == IR_TILE || t->kind == IR_SMEM) ? t->elem : t; }

int64_t ir_type_numel(const IrType *t) {
    if (t->kind != IR_TILE && t->kind != IR_SMEM)
        return 1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

int64_t ir_type_size_bytes(const IrType *t) { return ir_type_numel(t) * ir_type_bytes(ir_type_elem(t)); }

static const char *const scalar_names[] = {"i1",  "i8",  "i16", "i32",    "i64",   "f16",
                                           "bf16", "f32", "f64", "f8e4m3", "f8e5m2"};
_Static_assert(sizeof scalar_names / sizeof scalar_names[0] == IR_F8E5M2 + 1, "a name for every scalar type");

const char *ir_scalar_name(IrTypeKind k) { return ir_kind_is_scalar_number(k) ? scalar_names[k] : "?"; }

bool ir_scalar_from_name(const char *s, size_t n, IrTypeKind *out) {
    for (int k = 0; k <= IR_F8E5M2; k++) {
        if (strlen(scalar_names[k]) == n && memcmp(scalar_names[k], s, n) == 0) {
            *out = (IrTypeKind)k;
            return true;
        }
    }
    return false;
}
