/*
 * lower_debug.c — print and assert: kernels that talk to the host through
 * CUDA's device printf FIFO.
 *
 * Both call functions that the CUDA driver provides when it links the PTX
 * (they are declared `.extern .func` in the PTX, as CUDA C's printf and
 * assert are):
 *
 *   i32 @vprintf(ptr format, ptr args)      generic pointers: a format
 *       string and a buffer of the arguments, each at its natural alignment
 *       (ints promoted to 32 bits, i64 and pointers 8 bytes, floats
 *       promoted to double), as C's default argument promotions leave them
 *   void @__assertfail(ptr message, ptr file, i32 line, ptr function,
 *       i64 char_size)                      prints "file:line: function:
 *       block: [..], thread: [..] Assertion `message` failed." and stops the
 *       kernel: the launch, or the next synchronization, returns an error
 *
 * The strings are private constants in the global address space, passed
 * as generic pointers (addrspacecast); a print's argument buffer is one
 * alloca in the entry block, reused by each of its vprintf calls.
 *
 * print %px, %py, %pz, values... {prefix = P}: for each value operand k, one
 * line per element,
 *
 *     pid (x, y, z) idx (i, j)P(operand k) v
 *
 * "(operand k) " only when there are several values; indices are padded to
 * the digits of their dimension's largest index, as Triton pads them.
 * Values: integers %d (i64 %lld), floats %f, pointers %p. Each element is
 * printed by one thread only: the owner of its copies (cg_owner: lanes and
 * warps whose layout bases are zero hold copies) and, among a thread's
 * registers, the first that holds it (a register bit with a zero basis
 * repeats the registers below it). A scalar operand, and a print without
 * values ("pid (x, y, z)P"), print once per program, from the issuing
 * thread (thread 0, or the producer warps' first thread in a
 * warp_specialize region).
 *
 * assert %cond {message = M}: a thread that holds a false element calls
 * __assertfail(M, file, line, kernel, 1), file and line being the op's
 * location, and traps. Without a message M is "assertion failed".
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* A private constant string in the global address space, as a generic
 * pointer: the global `base`_N that holds s, made if there is none yet
 * (PTX names hold no '.', which is how LLVM would make a name unique). */
static LLVMValueRef global_string(Cg *cg, const char *s, const char *base) {
    size_t n = strlen(s);
    char name[64];
    LLVMValueRef g;
    for (int k = 0;; k++) {
        snprintf(name, sizeof name, "%s_%d", base, k);
        if (!(g = LLVMGetNamedGlobal(cg->mod, name)))
            break;
        size_t len = 0;
        const char *have = LLVMGetAsString(LLVMGetInitializer(g), &len);
        if (len == n + 1 && memcmp(have, s, n + 1) == 0)
            return LLVMConstAddrSpaceCast(g, LLVMPointerTypeInContext(cg->ctx, 0));
    }
    LLVMTypeRef ty = LLVMArrayType2(cg->t_i8, n + 1);
    g = LLVMAddGlobalInAddressSpace(cg->mod, ty, name, 1);
    LLVMSetInitializer(g, LLVMConstStringInContext(cg->ctx, s, (unsigned)n, 0));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(g, 1);
    return LLVMConstAddrSpaceCast(g, LLVMPointerTypeInContext(cg->ctx, 0));
}

/* The external function `name` of type fty, declared once per module. */
static LLVMValueRef extern_func(Cg *cg, const char *name, LLVMTypeRef fty) {
    LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
    if (!f)
        f = LLVMAddFunction(cg->mod, name, fty);
    return f;
}

/* ---- print ---- */

/* s with every '%' doubled, appended to b (a label is text, not format). */
static void append_literal(Buf *b, const char *s) {
    for (; *s; s++)
        buf_append(b, *s == '%' ? "%%" : s, *s == '%' ? 2 : 1);
}

/* The conversion that prints an element of type elem, and the type of its
 * printf argument (promoted as C's varargs are). */
static const char *conversion(Cg *cg, const IrType *elem, LLVMTypeRef *ty) {
    switch (elem->kind) {
    case IR_I1:
    case IR_I8:
    case IR_I16:
    case IR_I32: *ty = cg->t_i32; return "%d";
    case IR_I64: *ty = cg->t_i64; return "%lld";
    case IR_PTR: *ty = cg->t_i64; return "%p";
    default: *ty = cg->t_f64; return "%f";
    }
}

/* An element as its printf argument. */
static LLVMValueRef promote(Cg *cg, LLVMValueRef v, const IrType *elem) {
    LLVMBuilderRef b = cg->b;
    switch (elem->kind) {
    case IR_I1: return LLVMBuildZExt(b, v, cg->t_i32, "");
    case IR_I8:
    case IR_I16: return LLVMBuildSExt(b, v, cg->t_i32, "");
    case IR_PTR: return LLVMBuildPtrToInt(b, v, cg->t_i64, "");
    case IR_F16:
    case IR_BF16:
    case IR_F32: return LLVMBuildFPExt(b, v, cg->t_f64, "");
    default: return v;
    }
}

/* Digits of n - 1 (at least 1): the width of an index below n. */
static int index_width(int64_t n) {
    int w = 1;
    for (int64_t v = n - 1; v >= 10; v /= 10)
        w++;
    return w;
}

/* One vprintf(fmt, {args}) through the print's buffer `buf` of type bty. */
static void call_vprintf(Cg *cg, LLVMValueRef fmt, LLVMValueRef buf, LLVMTypeRef bty, LLVMValueRef *args, int n) {
    for (int i = 0; i < n; i++)
        LLVMBuildStore(cg->b, args[i], LLVMBuildStructGEP2(cg->b, bty, buf, (unsigned)i, ""));
    LLVMTypeRef gptr = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef params[2] = {gptr, gptr};
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, params, 2, 0);
    LLVMValueRef call_args[2] = {fmt, n ? buf : LLVMConstNull(gptr)};
    LLVMBuildCall2(cg->b, fty, extern_func(cg, "vprintf", fty), call_args, 2, "");
}

/* Prints value operand k (operand 3 + k) of op or, with k < 0 (a print
 * without values), the program ids and the prefix alone. */
static bool print_value(Cg *cg, IrOp *op, int k, LLVMValueRef *pid, const char *prefix) {
    const IrValue *x = k >= 0 ? op->operands[3 + k] : NULL;
    const IrType *t = x ? x->type : NULL;
    int rank = t && t->kind == IR_TILE ? t->rank : 0;
    const LinearLayout *ll = NULL;
    if (rank && !(ll = cg_ll(cg, t, op)))
        return false;

    /* the format, the same for every element, and the argument buffer */
    LLVMTypeRef fields[3 + IR_MAX_RANK + 1];
    int nf = 0;
    Buf f;
    buf_init(&f);
    buf_puts(&f, "pid (%d, %d, %d)");
    while (nf < 3 + rank)
        fields[nf++] = cg->t_i32;
    if (x) {
        buf_puts(&f, " idx (");
        for (int d = 0; d < rank; d++)
            buf_printf(&f, "%s%%%dd", d ? ", " : "", index_width(t->shape[d]));
        buf_puts(&f, ")");
    }
    append_literal(&f, prefix);
    if (x && op->num_operands > 4)
        buf_printf(&f, "(operand %d) ", k);
    if (x)
        buf_puts(&f, conversion(cg, ir_type_elem(t), &fields[nf++]));
    buf_puts(&f, "\n");
    LLVMValueRef fmt = global_string(cg, f.data, "printf_format");
    buf_free(&f);
    LLVMTypeRef bty = LLVMStructTypeInContext(cg->ctx, fields, (unsigned)nf, 0);
    LLVMValueRef buf = LLVMBuildAlloca(cg->entry_b, bty, "printf.args");
    LLVMValueRef args[3 + IR_MAX_RANK + 1] = {pid[0], pid[1], pid[2]};
    CgVal *cv = x ? cg_get(cg, x) : NULL;

    if (!rank) {
        LLVMValueRef issuer = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, cg->issuer), "");
        LLVMBasicBlockRef cont = cg_begin_if(cg, issuer, "print.scalar");
        if (x)
            args[3] = promote(cg, cv->v[0], t);
        call_vprintf(cg, fmt, buf, bty, args, nf);
        cg_end_if(cg, cont);
        return true;
    }
    /* registers whose set bits all have nonzero bases: each element once */
    unsigned dup = 0;
    for (int b = 0; b < ll->num_bits[LL_REG]; b++) {
        bool zero = true;
        for (int d = 0; d < rank; d++)
            zero &= ll->bases[LL_REG][b][d] == 0;
        if (zero)
            dup |= 1u << b;
    }
    LLVMBasicBlockRef cont = cg_begin_if(cg, cg_owner(cg, ll), "print.tile");
    for (int r = 0; r < ll_num_regs(ll); r++) {
        if ((unsigned)r & dup)
            continue;
        for (int d = 0; d < rank; d++)
            args[3 + d] = cg_coord(cg, ll, r, d);
        args[3 + rank] = promote(cg, cg_reg(cv, r), t->elem);
        call_vprintf(cg, fmt, buf, bty, args, nf);
    }
    cg_end_if(cg, cont);
    return true;
}

bool cg_lower_print(Cg *cg, IrOp *op) {
    const char *prefix = ir_op_get_string(op, "prefix");
    LLVMValueRef pid[3];
    for (int i = 0; i < 3; i++)
        pid[i] = cg_get(cg, op->operands[i])->v[0];
    for (int k = op->num_operands > 3 ? 0 : -1; k + 3 < op->num_operands; k++)
        if (!print_value(cg, op, k, pid, prefix ? prefix : ""))
            return false;
    return true;
}

/* ---- assert ---- */

bool cg_lower_assert(Cg *cg, IrOp *op) {
    CgVal *c = cg_get(cg, op->operands[0]);
    LLVMValueRef bad = NULL;
    for (int r = 0; r < c->n; r++) {
        LLVMValueRef nb = LLVMBuildNot(cg->b, c->v[r], "");
        bad = bad ? LLVMBuildOr(cg->b, bad, nb, "") : nb;
    }
    LLVMBasicBlockRef trap = cg_block(cg, "assert.fail"), cont = cg_block(cg, "assert.ok");
    LLVMBuildCondBr(cg->b, bad, trap, cont);
    LLVMPositionBuilderAtEnd(cg->b, trap);
    const char *msg = ir_op_get_string(op, "message");
    const char *file = op->loc.src && op->loc.src->name ? op->loc.src->name : "<unknown>";
    LLVMTypeRef gptr = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef params[5] = {gptr, gptr, cg->t_i32, gptr, cg->t_i64};
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, params, 5, 0);
    LLVMValueRef args[5] = {global_string(cg, msg ? msg : "assertion failed", "assert_message"),
                            global_string(cg, file, "assert_file"), cg_i32(cg, op->loc.line),
                            global_string(cg, cg->f->name, "assert_function"), cg_i64(cg, 1)};
    LLVMBuildCall2(cg->b, fty, extern_func(cg, "__assertfail", fty), args, 5, "");
    cg_intrinsic(cg, "llvm.trap", NULL, 0, NULL, 0);
    LLVMBuildUnreachable(cg->b);
    LLVMPositionBuilderAtEnd(cg->b, cont);
    return true;
}
