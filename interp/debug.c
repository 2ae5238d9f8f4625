/*
 * debug.c — print and assert, in the GPU's words (codegen/lower_debug.c):
 *
 *     pid (x, y, z) idx (i, j)PREFIX(operand k) VALUE
 *
 * one line per element to stdout, the index padded to the digits of its
 * dimension, values as %d (integers to 32 bits, i1 as 0 or 1), %lld (i64),
 * %f (floats) or %p (pointers); and for a false assert CUDA's line
 *
 *     FILE:LINE: KERNEL: block: [x,y,z], thread: [0,0,0] Assertion `MESSAGE` failed.
 *
 * to stderr, after which the launch stops (RUN_ASSERT).
 */
#include "interp.h"

#include <inttypes.h>
#include <stdio.h>

static int index_width(int64_t n) {
    int w = 1;
    for (int64_t v = n - 1; v >= 10; v /= 10)
        w++;
    return w;
}

static void print_element(FILE *out, IrTypeKind k, const IVal *v, int64_t i) {
    switch (k) {
    case IR_I1:
    case IR_I8:
    case IR_I16:
    case IR_I32: fprintf(out, "%d", (int)v->i[i]); break;
    case IR_I64: fprintf(out, "%lld", (long long)v->i[i]); break;
    case IR_PTR: fprintf(out, "%p", (void *)(uintptr_t)v->i[i]); break;
    default: fprintf(out, "%f", v->f[i]); break;
    }
}

bool interp_print(Run *r, IrOp *op) {
    const char *prefix = ir_op_get_string(op, "prefix");
    if (!prefix)
        prefix = "";
    long long pid[3];
    for (int d = 0; d < 3; d++)
        pid[d] = op->num_operands > d ? (long long)interp_get(r, op->operands[d])->i[0] : 0;
    FILE *out = stdout;
    if (op->num_operands <= 3) {
        fprintf(out, "pid (%lld, %lld, %lld)%s\n", pid[0], pid[1], pid[2], prefix);
        return true;
    }
    for (int k = 0; k + 3 < op->num_operands; k++) {
        const IrType *t = op->operands[3 + k]->type;
        IrTypeKind ek = ir_type_elem(t)->kind;
        const IVal *v = interp_get(r, op->operands[3 + k]);
        int rank = t->kind == IR_TILE ? t->rank : 0;
        for (int64_t i = 0; i < v->n; i++) {
            fprintf(out, "pid (%lld, %lld, %lld) idx (", pid[0], pid[1], pid[2]);
            int64_t c[IR_MAX_RANK], rest = i;
            for (int d = rank - 1; d >= 0; d--) {
                c[d] = rest % t->shape[d];
                rest /= t->shape[d];
            }
            for (int d = 0; d < rank; d++)
                fprintf(out, "%s%*lld", d ? ", " : "", index_width(t->shape[d]), (long long)c[d]);
            fprintf(out, ")%s", prefix);
            if (op->num_operands > 4)
                fprintf(out, "(operand %d) ", k);
            print_element(out, ek, v, i);
            fputc('\n', out);
        }
    }
    return true;
}

bool interp_assert(Run *r, IrOp *op) {
    const IVal *c = interp_get(r, op->operands[0]);
    for (int64_t i = 0; i < c->n; i++)
        if (!c->i[i]) {
            const char *msg = ir_op_get_string(op, "message");
            const char *file = op->loc.src && op->loc.src->name ? op->loc.src->name : "<unknown>";
            fflush(stdout);
            fprintf(stderr, "%s:%d: %s: block: [%lld,%lld,%lld], thread: [0,0,0] Assertion `%s` failed.\n", file,
                    op->loc.line, r->kernel->func->name, (long long)r->pid[0], (long long)r->pid[1],
                    (long long)r->pid[2], msg ? msg : "assertion failed");
            fflush(stderr);
            return interp_fail(r, RUN_ASSERT, op, "device_assert failed in program (%lld, %lld, %lld): %s",
                               (long long)r->pid[0], (long long)r->pid[1], (long long)r->pid[2],
                               msg ? msg : "assertion failed");
        }
    return true;
}
