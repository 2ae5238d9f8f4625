/*
 * layout.c — layout attributes: how a tile is spread over threads, registers
 * and shared memory.
 *
 * Layouts are interned like types, so a tile type's layout can be compared
 * with ==. This file only stores and prints them; what each layout means (its
 * index map from register, lane and warp to tile coordinates) belongs to the
 * passes and codegen that give it meaning. The text forms are documented in
 * docs/ir.md. ir_layout_print_with() is their one printer: the module
 * printer (print.c) has it refer to parents by alias, while
 * ir_layout_print() writes everything inline, for diagnostics.
 */
#include "ir.h"

#include <string.h>

const Layout *ir_layout_intern(IrModule *m, const Layout *proto) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = proto->kind;
    l.rank = proto->rank;
    switch (proto->kind) {
    case LAYOUT_BLOCKED:
        for (int i = 0; i < proto->rank; i++) {
            l.blocked.spt[i] = proto->blocked.spt[i];
            l.blocked.tpw[i] = proto->blocked.tpw[i];
            l.blocked.wpc[i] = proto->blocked.wpc[i];
            l.blocked.order[i] = proto->blocked.order[i];
        }
        break;
    case LAYOUT_SLICE:
        l.slice.dim = proto->slice.dim;
        l.slice.parent = proto->slice.parent;
        break;
    case LAYOUT_MMA:
        l.mma.version = proto->mma.version;
        for (int i = 0; i < proto->rank; i++)
            l.mma.wpc[i] = proto->mma.wpc[i];
        for (int i = 0; i < 3; i++)
            l.mma.instr[i] = proto->mma.instr[i];
        break;
    case LAYOUT_DOT_OP:
        l.dot_op.idx = proto->dot_op.idx;
        l.dot_op.parent = proto->dot_op.parent;
        l.dot_op.kwidth = proto->dot_op.kwidth;
        break;
    case LAYOUT_SHARED:
        l.shared.vec = proto->shared.vec;
        l.shared.per_phase = proto->shared.per_phase;
        l.shared.max_phase = proto->shared.max_phase;
        for (int i = 0; i < proto->rank; i++)
            l.shared.order[i] = proto->shared.order[i];
        break;
    case LAYOUT_NVMMA_SHARED:
        l.nvmma.swizzle = proto->nvmma.swizzle;
        for (int i = 0; i < proto->rank; i++)
            l.nvmma.order[i] = proto->nvmma.order[i];
        break;
    }
    return ir_intern(m, &m->layouts, &l, sizeof l);
}

const Layout *ir_layout_nvmma_shared(IrModule *m, int swizzle, int contig) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_NVMMA_SHARED;
    l.rank = 2;
    l.nvmma.swizzle = swizzle;
    l.nvmma.order[0] = contig;
    l.nvmma.order[1] = 1 - contig;
    return ir_layout_intern(m, &l);
}

const Layout *ir_layout_permute(IrModule *m, const Layout *l, int rank, const int64_t *perm, bool inverse) {
    if (!l || l->rank != rank ||
        (l->kind != LAYOUT_BLOCKED && l->kind != LAYOUT_SHARED && l->kind != LAYOUT_NVMMA_SHARED))
        return NULL;
    int to_new[IR_MAX_RANK], from_new[IR_MAX_RANK]; /* operand dim -> result dim, and back */
    for (int i = 0; i < rank; i++) {
        to_new[perm[i]] = i;
        from_new[i] = (int)perm[i];
    }
    /* Forward: new dim i takes old dim perm[i]; inverse: old dim perm[i]
     * takes new dim i. */
    const int *src_of = inverse ? to_new : from_new; /* for each target dim, its source dim */
    const int *rename = inverse ? from_new : to_new; /* source dim -> target dim */
    Layout r = *l;
    for (int i = 0; i < rank; i++) {
        switch (l->kind) {
        case LAYOUT_BLOCKED:
            r.blocked.spt[i] = l->blocked.spt[src_of[i]];
            r.blocked.tpw[i] = l->blocked.tpw[src_of[i]];
            r.blocked.wpc[i] = l->blocked.wpc[src_of[i]];
            r.blocked.order[i] = rename[l->blocked.order[i]];
            break;
        case LAYOUT_SHARED: r.shared.order[i] = rename[l->shared.order[i]]; break;
        default: r.nvmma.order[i] = rename[l->nvmma.order[i]]; break;
        }
    }
    return ir_layout_intern(m, &r);
}

const char *ir_layout_kind_name(LayoutKind k) {
    static const char *const names[] = {"blocked", "slice", "mma", "dot_op", "shared", "nvmma_shared"};
    return (unsigned)k < 6 ? names[k] : "?";
}

static void print_list(Buf *b, const int *v, int n) {
    buf_puts(b, "[");
    for (int i = 0; i < n; i++)
        buf_printf(b, "%s%d", i ? ", " : "", v[i]);
    buf_puts(b, "]");
}

static void print_parent(Buf *b, const Layout *parent, IrLayoutParentFn print, void *user) {
    if (print)
        print(user, b, parent);
    else
        ir_layout_print_with(b, parent, NULL, NULL);
}

/* The one printer of layout literals: the module printer (print.c) passes
 * a `print_parent` that writes aliases, diagnostics none. */
void ir_layout_print_with(Buf *b, const Layout *l, IrLayoutParentFn print_parent_fn, void *user) {
    if (!l) {
        buf_puts(b, "#<null>");
        return;
    }
    buf_printf(b, "#%s<", ir_layout_kind_name(l->kind));
    switch (l->kind) {
    case LAYOUT_BLOCKED:
        buf_puts(b, "spt = ");
        print_list(b, l->blocked.spt, l->rank);
        buf_puts(b, ", tpw = ");
        print_list(b, l->blocked.tpw, l->rank);
        buf_puts(b, ", wpc = ");
        print_list(b, l->blocked.wpc, l->rank);
        buf_puts(b, ", order = ");
        print_list(b, l->blocked.order, l->rank);
        break;
    case LAYOUT_SLICE:
        buf_printf(b, "dim = %d, parent = ", l->slice.dim);
        print_parent(b, l->slice.parent, print_parent_fn, user);
        break;
    case LAYOUT_MMA:
        buf_printf(b, "version = %d, wpc = ", l->mma.version);
        print_list(b, l->mma.wpc, l->rank);
        buf_puts(b, ", instr = ");
        print_list(b, l->mma.instr, 3);
        break;
    case LAYOUT_DOT_OP:
        buf_printf(b, "idx = %d, parent = ", l->dot_op.idx);
        print_parent(b, l->dot_op.parent, print_parent_fn, user);
        buf_printf(b, ", kwidth = %d", l->dot_op.kwidth);
        break;
    case LAYOUT_SHARED:
        buf_printf(b, "vec = %d, per_phase = %d, max_phase = %d, order = ", l->shared.vec, l->shared.per_phase,
                   l->shared.max_phase);
        print_list(b, l->shared.order, l->rank);
        break;
    case LAYOUT_NVMMA_SHARED:
        buf_printf(b, "swizzle = %d, order = ", l->nvmma.swizzle);
        print_list(b, l->nvmma.order, l->rank);
        break;
    }
    buf_puts(b, ">");
}

void ir_layout_print(Buf *b, const Layout *l) {
    ir_layout_print_with(b, l, NULL, NULL);
}
