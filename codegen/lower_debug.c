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
 * repeats the registers below it). A tile's owner copies those registers
 * into a local array and prints them in a loop, their coordinates' register
 * parts read from a constant table: one vprintf call site per value,
 * however large the tile (unrolled calls make the NVPTX back end slow on
 * large tiles). A scalar operand, and a print without
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

/* A private constant global of value `init`, named `base`_N for the first
 * N that names no global yet (PTX names hold no '.', which is how LLVM
 * would make a name unique), or the existing one of that name that holds
 * the same value when `reuse`. */
static LLVMValueRef private_global(Cg *cg, LLVMValueRef init, const char *base, bool reuse) {
    char name[64];
    LLVMValueRef g;
    for (int k = 0;; k++) {
        snprintf(name, sizeof name, "%s_%d", base, k);
        if (!(g = LLVMGetNamedGlobal(cg->mod, name)))
            break;
        if (reuse && LLVMGetInitializer(g) == init) /* constants are uniqued */
            return g;
    }
    g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMTypeOf(init), name, 1);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return g;
}

/* A constant string in the global address space, as a generic pointer;
 * one global per distinct string. */
static LLVMValueRef global_string(Cg *cg, const char *s, const char *base) {
    LLVMValueRef init = LLVMConstStringInContext(cg->ctx, s, (unsigned)strlen(s), 0);
    return LLVMConstAddrSpaceCast(private_global(cg, init, base, true), LLVMPointerTypeInContext(cg->ctx, 0));
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
        LLVMBasicBlockRef cont = cg_begin_issuer(cg, NULL, "print.scalar");
        if (x)
            args[3] = promote(cg, cv->v[0], t);
        call_vprintf(cg, fmt, buf, bty, args, nf);
        cg_end_if(cg, cont);
        return true;
    }
    /* The registers that hold an element first (a register bit whose basis
     * is zero repeats the registers below it), as a loop over a local copy
     * of their values and a table of their coordinates' register parts
     * (XORed with the thread's part: ir/linear_layout.c), so that the code
     * does not grow with the tile. */
    int nregs = ll_num_regs(ll), nuniq = 0;
    int *uniq = ARENA_ARRAY(&cg->arena, int, nregs);
    unsigned repeats = ll_broadcast_mask(ll, LL_REG);
    for (int r = 0; r < nregs; r++)
        if (!(r & repeats))
            uniq[nuniq++] = r;
    LLVMValueRef *rows = ARENA_ARRAY(&cg->arena, LLVMValueRef, nuniq);
    for (int u = 0; u < nuniq; u++) {
        int64_t c[IR_MAX_RANK];
        LLVMValueRef parts[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, uniq[u], c);
        for (int d = 0; d < rank; d++)
            parts[d] = cg_i32(cg, c[d]);
        rows[u] = LLVMConstArray2(cg->t_i32, parts, (uint64_t)rank);
    }
    LLVMTypeRef row_ty = LLVMArrayType2(cg->t_i32, (uint64_t)rank);
    LLVMValueRef table = private_global(cg, LLVMConstArray2(row_ty, rows, (uint64_t)nuniq), "printf_index", true);
    LLVMTypeRef vals_ty = LLVMArrayType2(fields[3 + rank], (uint64_t)nuniq);
    LLVMValueRef vals = LLVMBuildAlloca(cg->entry_b, vals_ty, "printf.values");

    LLVMBasicBlockRef cont = cg_begin_if(cg, cg_owner(cg, ll), "print.tile");
    for (int u = 0; u < nuniq; u++) {
        LLVMValueRef at[2] = {cg_i32(cg, 0), cg_i32(cg, u)};
        LLVMBuildStore(cg->b, promote(cg, cg_reg(cv, uniq[u]), t->elem),
                       LLVMBuildInBoundsGEP2(cg->b, vals_ty, vals, at, 2, ""));
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), loop = cg_block(cg, "print.loop");
    LLVMBuildBr(cg->b, loop);
    LLVMPositionBuilderAtEnd(cg->b, loop);
    LLVMValueRef i = LLVMBuildPhi(cg->b, cg->t_i32, "");
    for (int d = 0; d < rank; d++) {
        LLVMValueRef at[3] = {cg_i32(cg, 0), i, cg_i32(cg, d)};
        LLVMValueRef part =
            LLVMBuildLoad2(cg->b, cg->t_i32,
                           LLVMBuildInBoundsGEP2(cg->b, LLVMTypeOf(LLVMGetInitializer(table)), table, at, 3, ""), "");
        args[3 + d] = LLVMBuildXor(cg->b, cg_thread_coord(cg, ll, d), part, "");
    }
    LLVMValueRef at[2] = {cg_i32(cg, 0), i};
    args[3 + rank] =
        LLVMBuildLoad2(cg->b, fields[3 + rank], LLVMBuildInBoundsGEP2(cg->b, vals_ty, vals, at, 2, ""), "");
    call_vprintf(cg, fmt, buf, bty, args, nf);
    LLVMValueRef next = LLVMBuildAdd(cg->b, i, cg_i32(cg, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMValueRef zero = cg_i32(cg, 0);
    LLVMAddIncoming(i, &zero, &pre, 1);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, next, cg_i32(cg, nuniq), ""), loop, cont);
    LLVMPositionBuilderAtEnd(cg->b, cont);
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
