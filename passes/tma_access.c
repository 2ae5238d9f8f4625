/*
 * tma_access.c — can a global load be a TMA copy? (an analysis for the
 * pipeline pass; docs/passes.md, "TMA").
 *
 * A TMA copy moves a box of a tensor that a tensor map describes: a base
 * address, extents and strides per dimension (dimension 0 contiguous), and
 * zeros for every element outside the extents. A masked load
 *
 *     load(base + Σ_d (origin_d + index_d) * stride_d, mask, 0)
 *
 * is one when its pointer tile is such an affine form and its mask says
 * exactly "inside the extents". This file proves both from the IR.
 *
 * Offsets. The pointer is splat(P) (P a pointer parameter) plus offsets
 * (addptr, possibly chained). An offset is decomposed into a sum of terms
 * c * atom * stride: `atom` is an arange along one tile axis, a scalar value
 * (an opaque coordinate: a program id times a block size, the loop's
 * induction variable, a head index) or nothing (a constant); `stride` is an
 * integer parameter or nothing; c a constant. add, sub, mul by a constant
 * or by a splat parameter, splat, broadcast, expand_dims, int casts and
 * layout conversions are looked through; anything else ends the proof.
 * A scalar product x * p with p a parameter is a term of atom x and stride p;
 * any other scalar (pid_m * 128) is an atom itself.
 *
 * Dimensions. The arange along the buffer's contiguous axis, with c = 1 and
 * no stride, is dimension 0; the arange along the other axis is dimension
 * 1, its stride that term's c * stride (a constant, or a parameter times a
 * constant: the map's stride parameter and multiplier). Every scalar term
 * joins the dimension of the same (c, stride) as part of its origin, or
 * opens a new dimension of box 1 (a batch or head index times its stride:
 * `(bh * seqlen + m) * D` is a dimension of stride D for m and one of stride
 * D * seqlen for bh). Up to 5 dimensions.
 *
 * Masks. An `and` of comparisons `index < bound` (bound a parameter or a
 * constant), each along one tile axis, whose index is that axis's arange
 * plus exactly the scalar atoms of the dimension's origin: the dimension's
 * extent is the bound. A dimension no comparison bounds is unbounded (the
 * load reads it unmasked). `other` must be absent or +0.
 *
 * Alignment: the base parameter 16-byte aligned, every stride a multiple of
 * 16 bytes (a parameter's divisibility fact times its multiplier, or the
 * constant).
 *
 * Gathered rows (a paged KV cache). Given the axis facts (axis_info.c), a
 * load may also have, along the non-contiguous axis, terms c * X * stride
 * whose X is a 1-D tile that is neither an arange nor a splat: a load of
 * a block table, a division or a remainder by the page size,
 *
 *     page = load(block_table + n / PAGE);  off = page * stride_kb + (n % PAGE) * stride_kn
 *
 * X is usable when it is, along the tile, constant in aligned runs (the
 * page: a dimension of box 1, like a head index) or consecutive integers in
 * aligned runs (the slot in the page: dimension 1, in place of an arange),
 * and when element i of X can be computed as a scalar from the same IR
 * (tma_build_elem: arange, splat, constants, elementwise integer ops, loads).
 * Then every aligned run of R rows, R the gcd of the runs and of the tile's
 * extent (at most 256), is one box whose origin is the scalars' values at
 * its first row: `rows` = R in the result, and the caller issues one copy
 * per run of rows (tma_build_coord's `row`). No mask may bound dimension 1
 * then (the rows' positions in the tensor are not a range).
 *
 * Row vectors. A 1-D tile (the arange along its one axis, dimension 0)
 * gets dimensions from its scalar terms alone: LSE + (b * heads + h) *
 * seqlen_pad + start_m + arange is dimension 0 (origin start_m) and
 * dimension 1 of stride seqlen_pad (origin the head's row), a box of
 * [n, 1].
 *
 * The same proof serves stores and atomic adds (tma_match_access): a TMA
 * store or reduction leaves the elements outside the extents alone, which
 * is what the mask says.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

#define MAX_TERMS TMA_MAX_TERMS

typedef struct Term {
    const IrValue *atom; /* a scalar, a 1-D tile (gathered rows), or NULL for an arange (axis >= 0) or a constant */
    int axis;            /* the tile axis of an arange or of a 1-D tile atom, or -1 */
    int64_t c;           /* constant factor */
    const IrValue *stride; /* an integer parameter, or NULL */
} Term;

typedef struct Terms {
    Term t[MAX_TERMS];
    int n;
} Terms;

static const IrValue *strip_casts(const IrValue *v) {
    while (v->def && v->def->opc == IR_OP_CAST && ir_type_is_int(v->type) &&
           ir_type_is_int(v->def->operands[0]->type) && v->def->operands[0]->type->kind != IR_I1)
        v = v->def->operands[0];
    return v;
}

/* v a scalar integer parameter of the kernel (through int casts)? */
static const IrValue *int_param(const IrFunc *f, const IrValue *v) {
    v = strip_casts(v);
    if (v->def || v->block != f->body || !ir_type_is_int(v->type) || v->type->kind == IR_I1)
        return NULL;
    return v;
}

static bool push(Terms *ts, Term t) {
    if (ts->n == MAX_TERMS)
        return false;
    ts->t[ts->n++] = t;
    return true;
}

static bool is_tile_atom(const Term *t) {
    return t->atom && t->atom->type->kind == IR_TILE;
}

/* A 1-D tile that is no affine form: an atom along its axis (0; expand_dims
 * moves it), to be proven usable by its axis facts. */
static bool tile_atom(Terms *ts, const IrValue *v, int64_t c) {
    return v->type->rank == 1 && push(ts, (Term){v, 0, c, NULL});
}

/* The uniform value a tile is the splat (or broadcast of a splat) of. */
static const IrValue *splat_of(const IrValue *v) {
    while (v->def && (v->def->opc == IR_OP_BROADCAST || v->def->opc == IR_OP_EXPAND_DIMS ||
                      v->def->opc == IR_OP_CONVERT_LAYOUT))
        v = v->def->operands[0];
    if (v->def && v->def->opc == IR_OP_SPLAT)
        return v->def->operands[0];
    return v->type->kind == IR_TILE ? NULL : v;
}

static bool decompose(const IrFunc *f, const IrValue *v, int64_t c, Terms *out, int depth);

/* Multiplies every term of ts from `from` on by the factor: a constant, or
 * a parameter stride (each term may take one). */
static bool scale(const IrFunc *f, Terms *ts, int from, const IrValue *factor) {
    int64_t k;
    if (ir_value_const_int(factor, &k)) {
        for (int i = from; i < ts->n; i++)
            ts->t[i].c *= k;
        return true;
    }
    const IrValue *s = splat_of(factor);
    const IrValue *p = s ? int_param(f, s) : NULL;
    if (!p)
        return false;
    for (int i = from; i < ts->n; i++) {
        if (ts->t[i].stride)
            return false;
        ts->t[i].stride = p;
    }
    return true;
}

static bool decompose(const IrFunc *f, const IrValue *v, int64_t c, Terms *out, int depth) {
    if (depth > 48)
        return false;
    int64_t k;
    if (ir_value_const_int(v, &k))
        return push(out, (Term){NULL, -1, c * k, NULL});
    const IrOp *op = v->def;
    bool tile = v->type->kind == IR_TILE;
    if (!op) {
        /* a parameter or a block argument (the induction variable) */
        return !tile && push(out, (Term){strip_casts(v), -1, c, NULL});
    }
    if (op->opc == IR_OP_DIV || op->opc == IR_OP_REM || op->opc == IR_OP_LOAD)
        return tile ? tile_atom(out, v, c) : push(out, (Term){strip_casts(v), -1, c, NULL});
    switch (op->opc) {
    case IR_OP_ADD:
    case IR_OP_SUB:
        return decompose(f, op->operands[0], c, out, depth + 1) &&
               decompose(f, op->operands[1], op->opc == IR_OP_SUB ? -c : c, out, depth + 1);
    case IR_OP_MUL: {
        for (int side = 0; side < 2; side++) {
            const IrValue *factor = op->operands[1 - side];
            int64_t kk;
            /* a tile times a constant or a parameter; a scalar only times a parameter (pid * BM stays one
             * atom, as the masks compare it) */
            bool is_stride = (tile && ir_value_const_int(factor, &kk)) || (splat_of(factor) && int_param(f, splat_of(factor)));
            if (!is_stride)
                continue;
            int from = out->n;
            if (decompose(f, op->operands[side], c, out, depth + 1) && scale(f, out, from, factor))
                return true;
            out->n = from;
            /* a scalar with a stride inside it already ((kvh * kv_group + g) * stride_qh: a
             * head index): the whole scalar is the atom, the parameter its stride */
            const IrValue *p = splat_of(factor) ? int_param(f, splat_of(factor)) : NULL;
            if (!tile && p)
                return push(out, (Term){strip_casts(op->operands[side]), -1, c, p});
        }
        return tile ? tile_atom(out, v, c) : push(out, (Term){strip_casts(v), -1, c, NULL});
    }
    case IR_OP_CAST:
        if (!ir_type_is_int(ir_type_elem(op->operands[0]->type)) || ir_type_elem(op->operands[0]->type)->kind == IR_I1)
            return tile ? tile_atom(out, v, c) : push(out, (Term){v, -1, c, NULL});
        return decompose(f, op->operands[0], c, out, depth + 1);
    case IR_OP_SPLAT:
    case IR_OP_BROADCAST:
    case IR_OP_CONVERT_LAYOUT: return decompose(f, op->operands[0], c, out, depth + 1);
    case IR_OP_EXPAND_DIMS: {
        int from = out->n;
        if (!decompose(f, op->operands[0], c, out, depth + 1))
            return false;
        int64_t axis = ir_op_get_int(op, "axis", 0);
        for (int i = from; i < out->n; i++)
            if (out->t[i].axis >= axis)
                out->t[i].axis++;
        return true;
    }
    case IR_OP_ARANGE: {
        int64_t start = ir_op_get_int(op, "start", 0);
        return push(out, (Term){NULL, 0, c, NULL}) && (start == 0 || push(out, (Term){NULL, -1, c * start, NULL}));
    }
    default: return tile ? tile_atom(out, v, c) : push(out, (Term){strip_casts(v), -1, c, NULL});
    }
}

/* One dimension of the map being built: its stride (c * stride) and the
 * atoms of its origin. */
typedef struct Dim {
    int64_t c;
    const IrValue *stride;
    const IrValue *atoms[MAX_TERMS];
    int num_atoms;
    int64_t offset; /* constant part of the origin */
    bool bounded;         /* a comparison of the mask bounds it */
    const IrValue *bound; /* the parameter it is compared with, or NULL: bound_const */
    int64_t bound_const;
} Dim;

/* The dimension with this (c, stride), or -1. */
static int find_dim(const Dim *dims, int n, int64_t c, const IrValue *stride) {
    for (int d = 0; d < n; d++)
        if (dims[d].c == c && dims[d].stride == stride)
            return d;
    return -1;
}

/* Are the scalar atoms of ts (axis -1, non-constant) with c = 1 and no
 * stride, and its constant part, exactly dimension d's origin? */
static bool same_origin(const Terms *ts, const Dim *d) {
    const IrValue *seen[MAX_TERMS];
    int n = 0;
    int64_t off = 0;
    for (int i = 0; i < ts->n; i++) {
        const Term *t = &ts->t[i];
        if (t->axis >= 0)
            continue;
        if (t->stride)
            return false;
        if (!t->atom) {
            off += t->c;
            continue;
        }
        if (t->c != 1)
            return false;
        seen[n++] = t->atom;
    }
    if (n != d->num_atoms || off != d->offset)
        return false;
    bool used[MAX_TERMS] = {false};
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int j = 0; j < n && !found; j++)
            if (!used[j] && d->atoms[j] == seen[i])
                used[j] = found = true;
        if (!found)
            return false;
    }
    return true;
}

/* The mask's comparisons: each bounds one dimension (dims[0] is the
 * contiguous axis ca, dims[1] the other, oa). */
static bool match_mask(const IrFunc *f, const IrValue *m, int ca, int oa, Dim *dims, int depth) {
    if (depth > 32)
        return false;
    int64_t k;
    if (ir_value_const_int(m, &k))
        return k != 0; /* all true */
    const IrOp *op = m->def;
    if (!op)
        return false;
    switch (op->opc) {
    case IR_OP_AND: return match_mask(f, op->operands[0], ca, oa, dims, depth + 1) && match_mask(f, op->operands[1], ca, oa, dims, depth + 1);
    case IR_OP_BROADCAST:
    case IR_OP_CONVERT_LAYOUT: return match_mask(f, op->operands[0], ca, oa, dims, depth + 1);
    case IR_OP_EXPAND_DIMS: {
        /* a 1-D comparison made 2-D: the axes shift */
        const IrValue *in = op->operands[0];
        if (ir_value_const_int(in, &k))
            return k != 0;
        if (!in->def || in->def->opc != IR_OP_CMP)
            return false;
        break;
    }
    case IR_OP_CMP: break;
    default: return false;
    }
    /* the comparison, in the 2-D frame (through an expand_dims when 1-D) */
    const IrOp *cmp = op->opc == IR_OP_CMP ? op : op->operands[0]->def;
    int64_t shift_axis = op->opc == IR_OP_EXPAND_DIMS ? ir_op_get_int(op, "axis", 0) : -1;
    const char *pred = ir_op_get_word(cmp, "pred");
    if (!pred || strcmp(pred, "lt") != 0)
        return false;
    Terms ts = {.n = 0};
    if (!decompose(f, cmp->operands[0], 1, &ts, 0))
        return false;
    int axis = -1;
    for (int i = 0; i < ts.n; i++) {
        Term *t = &ts.t[i];
        if (is_tile_atom(t))
            return false;
        if (t->axis < 0)
            continue;
        if (shift_axis >= 0 && t->axis >= shift_axis)
            t->axis++;
        if (axis >= 0 || t->c != 1 || t->stride)
            return false;
        axis = t->axis;
    }
    if (axis < 0 || (axis != ca && axis != oa))
        return false; /* no arange (oa is -1 for a 1-D tile): no extent of the map */
    Dim *d = &dims[axis == ca ? 0 : 1];
    if (d->bounded || !same_origin(&ts, d))
        return false;
    d->bounded = true;
    if (ir_value_const_int(cmp->operands[1], &d->bound_const))
        return true;
    const IrValue *b = splat_of(cmp->operands[1]);
    d->bound = b ? int_param(f, b) : NULL;
    return d->bound != NULL;
}

static int64_t param_divisibility(const IrValue *p) {
    const IrAttr *a = ir_attr_get(p->num_attrs, p->attrs, "divisibility");
    return a && a->kind == IR_ATTR_INT ? a->i : 1;
}

bool tma_match_load(const IrFunc *f, AxisInfoMap *ai, const IrOp *load, int contig_axis, TmaAccess *out) {
    if (load->num_operands > 2) {
        double z;
        if (!ir_value_const_number(load->operands[2], &z) || z != 0 || signbit(z))
            return false;
    }
    return tma_match_access(f, ai, load->operands[0], load->num_operands > 1 ? load->operands[1] : NULL, contig_axis,
                            out);
}

/* ---- element i of a 1-D tile, as a scalar ---- */

/* Can tma_build_elem compute an element of v (1-D, or a scalar)? Integers,
 * pointers and booleans only (of every operand too): arange, splat,
 * constants, elementwise ops, convert_layout and loads of `readonly`
 * memory (the element is read again where the copy is issued, maybe an
 * iteration ahead). */
static bool elem_ok(const IrValue *v, int depth) {
    if (v->type->kind != IR_TILE)
        return true;
    const IrType *e = v->type->elem;
    if (depth > 32 || v->type->rank != 1 || !v->def || !(ir_type_is_int(e) || e->kind == IR_PTR))
        return false;
    const IrOp *op = v->def;
    switch (op->opc) {
    case IR_OP_ARANGE:
    case IR_OP_SPLAT: return true;
    case IR_OP_CONSTANT: {
        int64_t k;
        return ir_value_const_int(v, &k);
    }
    case IR_OP_CONVERT_LAYOUT: return elem_ok(op->operands[0], depth + 1);
    case IR_OP_LOAD:
        /* read again where the copy is issued: only memory nothing writes */
        if (!ir_points_to_readonly(op->operands[0]))
            return false;
        break;
    default:
        if (!(ir_op_info[op->opc].flags & OPF_ELEMENTWISE) || op->num_operands > 3)
            return false;
        break;
    }
    for (int i = 0; i < op->num_operands; i++)
        if (!elem_ok(op->operands[i], depth + 1))
            return false;
    return true;
}

IrValue *tma_build_elem(IrBuilder *b, const IrValue *v, int64_t i) {
    if (v->type->kind != IR_TILE)
        return (IrValue *)v;
    const IrOp *op = v->def;
    const IrType *e = v->type->elem;
    int64_t k;
    switch (op->opc) {
    case IR_OP_ARANGE: return ir_build_const_int(b, e, ir_op_get_int(op, "start", 0) + i);
    case IR_OP_SPLAT: return op->operands[0];
    case IR_OP_CONSTANT: return ir_value_const_int(v, &k) ? ir_build_const_int(b, e, k) : NULL;
    case IR_OP_CONVERT_LAYOUT: return tma_build_elem(b, op->operands[0], i);
    default: break;
    }
    IrValue *ops[3];
    int n = op->num_operands < 3 ? op->num_operands : 3;
    for (int j = 0; j < n; j++)
        ops[j] = tma_build_elem(b, op->operands[j], i);
    IrOp *x = ir_build_op(b, op->opc, n, ops, 1, &e);
    for (int j = 0; j < op->num_attrs; j++)
        if (strcmp(op->attrs[j].name, "vec") != 0 && strcmp(op->attrs[j].name, "vec_masked") != 0)
            ir_op_set_attr(b->m, x, &op->attrs[j]);
    return x->results[0];
}

static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The runs of rows a tile atom gives (see the essay): its aligned runs of
 * equal values (*slope false) or of consecutive integers (*slope true) along
 * its axis, or 0 when it has neither or is no scalar's element. */
static int64_t atom_runs(AxisInfoMap *ai, const Term *t, bool *slope) {
    if (!ai || !elem_ok(t->atom, 0) || t->c <= 0)
        return 0;
    const AxisInfo *in = axis_info_get(ai, t->atom);
    if (in->rank != 1)
        return 0;
    *slope = in->constancy[0] < 2 && in->contiguity[0] >= 2;
    return *slope ? in->contiguity[0] : in->constancy[0] >= 2 ? in->constancy[0] : 0;
}

bool tma_match_access(const IrFunc *f, AxisInfoMap *ai, const IrValue *ptrs, const IrValue *mask, int contig_axis,
                      TmaAccess *out) {
    memset(out, 0, sizeof *out);
    const IrType *t = ptrs->type;
    if (t->kind != IR_TILE || t->rank < 1 || t->rank > 2 || t->elem->kind != IR_PTR || contig_axis < 0 ||
        contig_axis >= t->rank)
        return false;
    bool row = t->rank == 1; /* a row vector: dimension 0 alone along the tile */
    int eb = ir_type_bytes(t->elem->elem);
    /* the pointer: addptr(... addptr(splat(P), o1) ..., on) */
    Terms ts = {.n = 0};
    const IrValue *p = ptrs;
    for (int depth = 0; p->def && p->def->opc != IR_OP_SPLAT; depth++) {
        const IrOp *op = p->def;
        if (depth > 16)
            return false;
        if (op->opc == IR_OP_CONVERT_LAYOUT || op->opc == IR_OP_BROADCAST) {
            p = op->operands[0];
            continue;
        }
        if (op->opc != IR_OP_ADDPTR || !decompose(f, op->operands[1], 1, &ts, 0))
            return false;
        p = op->operands[0];
    }
    if (!p->def)
        return false;
    const IrValue *base = p->def->operands[0];
    /* a scalar pointer plus offsets (Q + b * stride_qb + h * stride_qh) */
    for (int depth = 0; base->def && base->def->opc == IR_OP_ADDPTR; depth++) {
        if (depth > 16 || !decompose(f, base->def->operands[1], 1, &ts, 0))
            return false;
        base = base->def->operands[0];
    }
    if (base->def || base->block != f->body || base->type->kind != IR_PTR || param_divisibility(base) < 16)
        return false;
    /* the dimensions */
    int ca = contig_axis, oa = row ? -1 : 1 - contig_axis;
    Dim dims[IR_MAX_TMAP_RANK];
    memset(dims, 0, sizeof dims);
    int nd = row ? 1 : 2;
    bool have[2] = {false, row};
    dims[0].c = 1;
    /* gathered rows: runs of R rows (R = 0: none) */
    int64_t rows = 0;
    bool slope = false; /* dimension 1 is a slope atom (else an arange, which advances with the row) */
    for (int i = 0; i < ts.n; i++) {
        Term *tm = &ts.t[i];
        if (!is_tile_atom(tm))
            continue;
        bool is_slope = false;
        int64_t runs = !row && tm->axis == oa ? atom_runs(ai, tm, &is_slope) : 0;
        if (runs <= 0)
            return false;
        rows = gcd(rows, runs);
        if (is_slope) {
            /* the slot of a page: dimension 1, the atom its origin */
            if (have[1])
                return false;
            have[1] = slope = true;
            dims[1].c = tm->c;
            dims[1].stride = tm->stride;
            dims[1].atoms[dims[1].num_atoms++] = tm->atom;
        }
        tm->axis = -1; /* from here on an atom like a scalar (the slope one is placed) */
        if (is_slope)
            *tm = (Term){NULL, -1, 0, NULL}; /* placed: a zero constant now */
    }
    if (rows) {
        rows = gcd(rows, t->shape[oa]);
        while (rows > 256 && rows % 2 == 0)
            rows /= 2;
        if (rows > 256)
            return false;
    }
    for (int i = 0; i < ts.n; i++) {
        Term *tm = &ts.t[i];
        if (tm->axis < 0)
            continue;
        int which = tm->axis == ca ? 0 : tm->axis == oa ? 1 : -1;
        if (which < 0 || have[which])
            return false;
        have[which] = true;
        if (which == 0 && (tm->c != 1 || tm->stride))
            return false;
        if (which == 1) {
            dims[1].c = tm->c;
            dims[1].stride = tm->stride;
        }
    }
    if (!have[0] || !have[1] || (!row && dims[1].c <= 0))
        return false;
    for (int i = 0; i < ts.n; i++) {
        Term *tm = &ts.t[i];
        if (tm->axis >= 0)
            continue;
        if (!tm->atom) {
            /* a constant: the origin of the dimension whose stride divides it */
            int d = 0;
            if (tm->stride) {
                d = -1;
                for (int e = 1; e < nd && d < 0; e++)
                    if (dims[e].stride == tm->stride && tm->c % dims[e].c == 0)
                        d = e;
                if (d < 0)
                    return false;
            }
            dims[d].offset += tm->stride ? tm->c / dims[d].c : tm->c;
            continue;
        }
        int d = find_dim(dims, nd, tm->c, tm->stride);
        if (d < 0) {
            if (nd == IR_MAX_TMAP_RANK || tm->c <= 0)
                return false;
            d = nd++;
            dims[d].c = tm->c;
            dims[d].stride = tm->stride;
        }
        if (dims[d].num_atoms == MAX_TERMS)
            return false;
        dims[d].atoms[dims[d].num_atoms++] = tm->atom;
    }
    if (mask && !match_mask(f, mask, ca, oa, dims, 0))
        return false;
    if (rows && dims[1].bounded)
        return false; /* rows gathered from places no extent describes */
    /* the map */
    IrTensorMap *map = &out->map;
    map->base = base->index;
    map->rank = nd;
    for (int d = 0; d < nd; d++) {
        Dim *dm = &dims[d];
        if (d > 0) {
            if (dm->stride) {
                if ((param_divisibility(dm->stride) * dm->c * eb) % 16)
                    return false;
                map->stride_param[d] = dm->stride->index;
                map->stride[d] = dm->c == 1 ? 0 : dm->c;
            } else {
                if ((dm->c * eb) % 16)
                    return false;
                map->stride_param[d] = -1;
                map->stride[d] = dm->c;
            }
        }
        map->dim_param[d] = -1;
        if (dm->bound) {
            map->dim_param[d] = dm->bound->index;
        } else if (dm->bounded) {
            if (dm->bound_const <= 0 || dm->bound_const > ((int64_t)1 << 31))
                return false; /* every element masked, or a constant no map holds */
            map->dim[d] = dm->bound_const;
        }
        out->offset[d] = dm->offset;
        out->num_atoms[d] = dm->num_atoms;
        memcpy(out->atoms[d], dm->atoms, sizeof(IrValue *) * (size_t)dm->num_atoms);
    }
    out->contig_axis = ca;
    out->rows = rows;
    out->row_arange = rows && !slope;
    return true;
}

IrValue *tma_map_param(IrModule *m, IrFunc *f, const IrTensorMap *tm) {
    IrBlock *params = f->body;
    for (int i = 0; i < params->num_args; i++) {
        IrValue *a = params->args[i];
        IrTensorMap have;
        const char *why;
        if (a->type->kind == IR_TENSORMAP && ir_tensormap_of(f, a, &have, &why) && ir_tensormap_equal(&have, tm))
            return a;
    }
    const char *base = params->args[tm->base]->name;
    IrValue *a = ir_func_add_param(f, ir_type_tensormap(m), arena_printf(&m->arena, "%s_tmap", base ? base : "tensor"));
    ir_tensormap_set(m, a, tm);
    return a;
}

IrValue *tma_build_coord(IrBuilder *b, const TmaAccess *a, int d, int64_t row) {
    const IrType *i32 = ir_type_scalar(b->m, IR_I32);
    IrValue *sum = NULL;
    for (int i = 0; i < a->num_atoms[d]; i++) {
        IrValue *x = tma_build_elem(b, a->atoms[d][i], row);
        if (x->type->kind != IR_I32)
            x = ir_build_unary(b, IR_OP_CAST, i32, x);
        sum = sum ? ir_build_binary(b, IR_OP_ADD, i32, sum, x) : x;
    }
    int64_t off = a->offset[d] + (d == 1 && a->row_arange ? row : 0);
    if (off || !sum) {
        IrValue *k = ir_build_const_int(b, i32, off);
        sum = sum ? ir_build_binary(b, IR_OP_ADD, i32, sum, k) : k;
    }
    return sum;
}
