/*
 * clone.c — pointer maps, and deep copies of operations.
 *
 * The IR keeps no use lists (see ir.h), so passes that replace values do it
 * with a map: walk the ops in order, and before looking at an op, rewrite its
 * operands through a map from old values to new ones. Structured control
 * flow guarantees that every use comes after its definition in that walk, so
 * one walk is enough. IrMap is that map: open addressing with linear probing
 * on pointer keys, grown by doubling at half load. It lives in an arena (the
 * module's, inside a pass) and is dropped with it: there is no delete, and a
 * pass that needs "remove" stores a tombstone value of its own.
 *
 * ir_op_clone is the other half of rewriting without use lists: it copies an
 * op, regions included, mapping operands through the same kind of map and
 * recording the copy's results, so a sequence of clones keeps its internal
 * def-use edges. The inliner clones a callee's body this way, with the
 * callee's parameters mapped to the call's arguments.
 */
#include "ir.h"

#include <string.h>

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

void ir_map_init(IrMap *map, Arena *arena) {
    memset(map, 0, sizeof *map);
    map->arena = arena;
}

static void map_grow(IrMap *map) {
    size_t old_cap = map->cap;
    const void **old_keys = map->keys;
    void **old_vals = map->vals;
    map->cap = old_cap ? old_cap * 2 : 16;
    map->keys = ARENA_ARRAY(map->arena, const void *, map->cap);
    map->vals = ARENA_ARRAY(map->arena, void *, map->cap);
    map->count = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old_keys[i])
            ir_map_put(map, old_keys[i], old_vals[i]);
}

void ir_map_put(IrMap *map, const void *key, void *val) {
    tc_assert(key != NULL);
    if ((map->count + 1) * 2 > map->cap)
        map_grow(map);
    size_t mask = map->cap - 1;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (map->keys[i] == key) {
            map->vals[i] = val;
            return;
        }
        if (!map->keys[i]) {
            map->keys[i] = key;
            map->vals[i] = val;
            map->count++;
            return;
        }
    }
}

void *ir_map_get(const IrMap *map, const void *key) {
    if (!map->cap || !key)
        return NULL;
    size_t mask = map->cap - 1;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (map->keys[i] == key)
            return map->vals[i];
        if (!map->keys[i])
            return NULL;
    }
}

static IrValue *mapped(const IrMap *map, IrValue *v) {
    IrValue *to = ir_map_get(map, v);
    return to ? to : v;
}

IrOp *ir_op_clone(IrModule *m, const IrOp *op, IrMap *map) {
    IrValue **operands = ARENA_ARRAY(&m->arena, IrValue *, op->num_operands + 1);
    for (int i = 0; i < op->num_operands; i++)
        operands[i] = mapped(map, op->operands[i]);
    const IrType **types = ARENA_ARRAY(&m->arena, const IrType *, op->num_results + 1);
    for (int i = 0; i < op->num_results; i++)
        types[i] = op->results[i]->type;
    IrOp *copy = ir_op_create(m, op->opc, op->num_operands, operands, op->num_results, types);
    copy->loc = op->loc;
    for (int i = 0; i < op->num_results; i++) {
        if (op->results[i]->name)
            ir_value_set_name(m, copy->results[i], op->results[i]->name);
        ir_map_put(map, op->results[i], copy->results[i]);
    }
    /* Attribute payloads (strings, lists) are immutable, so a shallow copy of
     * the array is a full copy. */
    if (op->num_attrs) {
        copy->num_attrs = op->num_attrs;
        copy->attrs = ARENA_ARRAY(&m->arena, IrAttr, op->num_attrs);
        memcpy(copy->attrs, op->attrs, sizeof(IrAttr) * (size_t)op->num_attrs);
    }
    tc_assert(copy->num_regions == op->num_regions);
    for (int r = 0; r < op->num_regions; r++) {
        const IrBlock *from = op->regions[r];
        IrBlock *to = copy->regions[r];
        for (int i = 0; i < from->num_args; i++) {
            IrValue *a = ir_block_add_arg(m, to, from->args[i]->type, from->args[i]->name);
            ir_map_put(map, from->args[i], a);
        }
        for (const IrOp *sub = from->first; sub; sub = sub->next)
            ir_block_append(to, ir_op_clone(m, sub, map));
    }
    return copy;
}
