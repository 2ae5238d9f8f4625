/*
 * memory.c — load, store and atomic, element by element, each access
 * checked against the caller's allocations (tc_interp_memory): it must lie
 * in one of them and be aligned to its size, as the GPU requires of a
 * scalar access. Masked-off elements touch nothing; a masked-off element
 * of a load without `other` reads as zero (the language leaves it
 * unspecified). Atomics read, combine and write one element at a time in
 * program order: the programs of a launch run one after another.
 */
#include "interp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Describes element i of a tile of type t as "(i, j)" into buf. */
static void element_name(const IrType *t, int64_t i, char *buf, size_t cap) {
    if (t->kind != IR_TILE) {
        snprintf(buf, cap, "the scalar");
        return;
    }
    int64_t c[IR_MAX_RANK];
    for (int d = t->rank - 1; d >= 0; d--) {
        c[d] = i % t->shape[d];
        i /= t->shape[d];
    }
    size_t len = (size_t)snprintf(buf, cap, "element (");
    for (int d = 0; d < t->rank && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? ", " : "", (long long)c[d]);
    if (len < cap)
        snprintf(buf + len, cap - len, ")");
}

/* Checks an access of `bytes` at addr (element i of the pointer operand). */
static bool check_slow(Run *r, const IrOp *op, const char *what, uint64_t addr, int bytes, int64_t i) {
    if (addr % (uint64_t)bytes != 0 || addr == 0) {
        char el[64];
        element_name(op->operands[0]->type, i, el, sizeof el);
        return interp_fail(r, RUN_FAULT, op, "%s of %d byte%s at address 0x%" PRIx64 " (%s): %s", what, bytes,
                           bytes == 1 ? "" : "s", addr, el, addr ? "misaligned" : "a null pointer");
    }
    if (!r->mem || !r->mem->find)
        return true;
    uint64_t base = 0, size = 0;
    if (r->mem->find(r->mem->user, addr, &base, &size) && addr >= base && addr - base < size &&
        size - (addr - base) >= (uint64_t)bytes) {
        r->known_lo = base;
        r->known_hi = base + size;
        return true;
    }
    char el[64];
    element_name(op->operands[0]->type, i, el, sizeof el);
    if (size)
        return interp_fail(r, RUN_FAULT, op,
                           "%s of %d byte%s at address 0x%" PRIx64 " (%s) runs past the end of the allocation at 0x%" PRIx64
                           " of %" PRIu64 " bytes",
                           what, bytes, bytes == 1 ? "" : "s", addr, el, base, size);
    return interp_fail(r, RUN_FAULT, op, "%s of %d byte%s at address 0x%" PRIx64 " (%s) is outside every allocation",
                       what, bytes, bytes == 1 ? "" : "s", addr, el);
}

/* The common case inline: an aligned access in the allocation found last. */
static inline bool check(Run *r, const IrOp *op, const char *what, uint64_t addr, int bytes, int64_t i) {
    if (!(addr & (uint64_t)(bytes - 1)) && addr >= r->known_lo && addr < r->known_hi &&
        r->known_hi - addr >= (uint64_t)bytes)
        return true;
    return check_slow(r, op, what, addr, bytes, i);
}

static IrTypeKind pointee(const IrOp *op) {
    return ir_type_elem(op->operands[0]->type)->elem->kind;
}

bool interp_load(Run *r, IrOp *op) {
    IVal *p = interp_get(r, op->operands[0]);
    IVal *mask = op->num_operands > 1 ? interp_get(r, op->operands[1]) : NULL;
    IVal *other = op->num_operands > 2 ? interp_get(r, op->operands[2]) : NULL;
    const IrType *t = op->results[0]->type;
    IrTypeKind k = pointee(op);
    int bytes = ir_type_bytes(ir_type_elem(op->operands[0]->type)->elem);
    IVal *v = ival_new(r, interp_kind_is_float(k), ir_type_numel(t));
    if (!v)
        return false;
    for (int64_t i = 0; i < v->n; i++) {
        if (mask && !mask->i[ival_at(mask, i)]) {
            if (other)
                v->i[i] = other->i[ival_at(other, i)]; /* the same bits for doubles */
            else
                v->i[i] = 0; /* 0 and 0.0 alike */
            continue;
        }
        uint64_t addr = (uint64_t)p->i[ival_at(p, i)];
        if (!check(r, op, "a load", addr, bytes, i)) {
            ival_release(r, v);
            return false;
        }
        interp_decode(k, (const void *)(uintptr_t)addr, v, i);
    }
    interp_set(r, op->results[0], v);
    return true;
}

bool interp_store(Run *r, IrOp *op) {
    IVal *p = interp_get(r, op->operands[0]);
    IVal *x = interp_get(r, op->operands[1]);
    IVal *mask = op->num_operands > 2 ? interp_get(r, op->operands[2]) : NULL;
    IrTypeKind k = pointee(op);
    int bytes = ir_type_bytes(ir_type_elem(op->operands[0]->type)->elem);
    int64_t n = p->n > x->n ? p->n : x->n;
    for (int64_t i = 0; i < n; i++) {
        if (mask && !mask->i[ival_at(mask, i)])
            continue;
        uint64_t addr = (uint64_t)p->i[ival_at(p, i)];
        if (!check(r, op, "a store", addr, bytes, i))
            return false;
        interp_encode(k, x, ival_at(x, i), (void *)(uintptr_t)addr);
    }
    return true;
}

bool interp_atomic(Run *r, IrOp *op) {
    IVal *p = interp_get(r, op->operands[0]);
    IVal *x = interp_get(r, op->operands[1]);
    IVal *mask = op->num_operands > 2 ? interp_get(r, op->operands[2]) : NULL;
    const char *kind = ir_op_get_word(op, "kind");
    IrTypeKind k = pointee(op);
    int bytes = ir_type_bytes(ir_type_elem(op->operands[0]->type)->elem);
    bool fl = interp_kind_is_float(k);
    IVal *old = ival_new(r, fl, ir_type_numel(op->results[0]->type));
    IVal *cur = ival_new(r, fl, 1);
    if (!old || !cur) {
        ival_release(r, old);
        ival_release(r, cur);
        return false;
    }
    int which = !kind ? -1 : !strcmp(kind, "add") ? 0 : !strcmp(kind, "max") ? 1 : !strcmp(kind, "min") ? 2
                : !strcmp(kind, "xchg")                                        ? 3
                                                                               : -1;
    if (which < 0 || k == IR_I1 || k == IR_PTR) {
        ival_release(r, old);
        ival_release(r, cur);
        return interp_fail(r, RUN_ERROR, op, "atomic %s on %s is not supported", kind ? kind : "?",
                           ir_scalar_name(k));
    }
    for (int64_t i = 0; i < old->n; i++) {
        old->i[i] = 0;
        if (mask && !mask->i[ival_at(mask, i)])
            continue;
        uint64_t addr = (uint64_t)p->i[ival_at(p, i)];
        if (!check(r, op, "an atomic", addr, bytes, i)) {
            ival_release(r, old);
            ival_release(r, cur);
            return false;
        }
        void *mem = (void *)(uintptr_t)addr;
        interp_decode(k, mem, cur, 0);
        int64_t xi = ival_at(x, i);
        if (fl) {
            double a = cur->f[0], b = x->f[xi];
            old->f[i] = a;
            cur->f[0] = which == 0 ? interp_round(k, a + b) : which == 1 ? fmax(a, b) : which == 2 ? fmin(a, b) : b;
        } else {
            int64_t a = cur->i[0], b = x->i[xi];
            old->i[i] = a;
            cur->i[0] = which == 0   ? interp_wrap(k, (int64_t)((uint64_t)a + (uint64_t)b))
                        : which == 1 ? (a > b ? a : b)
                        : which == 2 ? (a < b ? a : b)
                                     : b;
        }
        interp_encode(k, cur, 0, mem);
    }
    ival_release(r, cur);
    interp_set(r, op->results[0], old);
    return true;
}
