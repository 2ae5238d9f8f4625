/*
 * tensormap.c — the attributes of a `tensormap` kernel parameter (ir.h has
 * their meaning): read, checked, written. The verifier, the pipeline pass
 * that adds such parameters, codegen and the kernel metadata all go
 * through these three functions, so the text form is defined once.
 */
#include "ir/ir.h"

#include <string.h>

static const IrAttr *param_attr(const IrValue *p, const char *name) {
    return ir_attr_get(p->num_attrs, p->attrs, name);
}

static bool read_int(const IrValue *p, const char *name, int64_t *out) {
    const IrAttr *a = param_attr(p, name);
    if (!a || a->kind != IR_ATTR_INT)
        return false;
    *out = a->i;
    return true;
}

/* A list attribute of exactly n entries into out. */
static bool read_list(const IrValue *p, const char *name, int n, int64_t *out) {
    const IrAttr *a = param_attr(p, name);
    if (!a || a->kind != IR_ATTR_INTS || a->list.n != n)
        return false;
    memcpy(out, a->list.v, sizeof(int64_t) * (size_t)n);
    return true;
}

/* Is parameter i of f a scalar integer (an extent or a stride)? */
static bool int_param(const IrFunc *f, int64_t i) {
    return i >= 0 && i < f->body->num_args && ir_type_is_int(f->body->args[i]->type) &&
           f->body->args[i]->type->kind != IR_I1;
}

bool ir_tensormap_of(const IrFunc *f, const IrValue *param, IrTensorMap *out, const char **why) {
    memset(out, 0, sizeof *out);
    int64_t base, swizzle;
    const IrAttr *box = param_attr(param, "tma_box");
    if (!read_int(param, "tma_base", &base) || !read_int(param, "tma_swizzle", &swizzle) || !box ||
        box->kind != IR_ATTR_INTS) {
        *why = "needs the integer attributes tma_base and tma_swizzle and the list tma_box";
        return false;
    }
    int rank = box->list.n;
    if (rank < 1 || rank > IR_MAX_TMAP_RANK) {
        *why = "tma_box must have 1 to 5 entries (one per dimension)";
        return false;
    }
    int64_t dim_params[IR_MAX_TMAP_RANK], stride_params[IR_MAX_TMAP_RANK] = {0}, strides[IR_MAX_TMAP_RANK] = {0};
    if (!read_list(param, "tma_dim_params", rank, dim_params) || !read_list(param, "tma_dims", rank, out->dim) ||
        (rank > 1 && (!read_list(param, "tma_stride_params", rank - 1, stride_params + 1) ||
                      !read_list(param, "tma_strides", rank - 1, strides + 1)))) {
        *why = "tma_dim_params and tma_dims need one entry per dimension, tma_stride_params and tma_strides one per "
               "dimension after the first";
        return false;
    }
    if (base < 0 || base >= param->index || f->body->args[base]->type->kind != IR_PTR) {
        *why = "tma_base must be a pointer parameter before the tensor map";
        return false;
    }
    if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128) {
        *why = "tma_swizzle must be 0, 32, 64 or 128";
        return false;
    }
    int eb = ir_type_bytes(f->body->args[base]->type->elem);
    for (int d = 0; d < rank; d++) {
        out->box[d] = box->list.v[d];
        if (out->box[d] < 1 || out->box[d] > 256) {
            *why = "each tma_box entry must be 1 to 256";
            return false;
        }
        if ((dim_params[d] != -1 && !int_param(f, dim_params[d])) || (dim_params[d] == -1 && out->dim[d] < 0)) {
            *why = "a dimension's extent must be an integer parameter, or (parameter -1) a constant >= 0";
            return false;
        }
        out->dim_param[d] = (int)dim_params[d];
        if (d > 0) {
            if ((stride_params[d] != -1 && !int_param(f, stride_params[d])) || strides[d] < 0) {
                *why = "a stride must be an integer parameter times a constant >= 0 (0 stands for 1), or (parameter "
                       "-1) a constant >= 0";
                return false;
            }
            out->stride_param[d] = (int)stride_params[d];
            out->stride[d] = strides[d];
        }
    }
    if ((out->box[0] * eb) % 16 || (swizzle && out->box[0] * eb > swizzle)) {
        *why = "the innermost box must be a multiple of 16 bytes, and no wider than the swizzle";
        return false;
    }
    out->base = (int)base;
    out->rank = rank;
    out->swizzle = (int)swizzle;
    return true;
}

static void set_list(IrModule *m, IrValue *p, const char *name, int n, const int64_t *v) {
    IrAttr a = {.name = arena_strdup(&m->arena, name), .kind = IR_ATTR_INTS};
    int64_t *copy = ARENA_ARRAY(&m->arena, int64_t, n ? n : 1);
    memcpy(copy, v, sizeof(int64_t) * (size_t)n);
    a.list.n = n;
    a.list.v = copy;
    ir_attrs_set(m, &p->num_attrs, &p->attrs, &a);
}

static void set_int(IrModule *m, IrValue *p, const char *name, int64_t v) {
    IrAttr a = {.name = arena_strdup(&m->arena, name), .kind = IR_ATTR_INT, .i = v};
    ir_attrs_set(m, &p->num_attrs, &p->attrs, &a);
}

void ir_tensormap_set(IrModule *m, IrValue *param, const IrTensorMap *tm) {
    int64_t dp[IR_MAX_TMAP_RANK], sp[IR_MAX_TMAP_RANK];
    for (int d = 0; d < tm->rank; d++) {
        dp[d] = tm->dim_param[d];
        sp[d] = tm->stride_param[d];
    }
    set_int(m, param, "tma_base", tm->base);
    set_list(m, param, "tma_dim_params", tm->rank, dp);
    set_list(m, param, "tma_dims", tm->rank, tm->dim);
    set_list(m, param, "tma_stride_params", tm->rank - 1, sp + 1);
    set_list(m, param, "tma_strides", tm->rank - 1, tm->stride + 1);
    set_list(m, param, "tma_box", tm->rank, tm->box);
    set_int(m, param, "tma_swizzle", tm->swizzle);
}

bool ir_tensormap_equal(const IrTensorMap *a, const IrTensorMap *b) {
    if (a->base != b->base || a->rank != b->rank || a->swizzle != b->swizzle)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dim_param[d] != b->dim_param[d] || a->dim[d] != b->dim[d] || a->box[d] != b->box[d] ||
            (d > 0 && (a->stride_param[d] != b->stride_param[d] || a->stride[d] != b->stride[d])))
            return false;
    return true;
}
