/*
 * test_print_parse.c — the IR text form: print(parse(print(m))) == print(m)
 * for modules built with the builder, exact text for a small module, parse
 * errors with their line:col, robustness against truncated and corrupted
 * input, float printing, and locations (loc(...)).
 */
#include "ir/ir.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>

/* ---- helpers ---- */

static char *print_module(const IrModule *m) {
    Buf b;
    buf_init(&b);
    ir_print_module(m, &b);
    return b.data; /* malloc-owned */
}

/* Parses text; on failure renders the diagnostics into *diag_text (if given). */
static IrModule *parse_text(const char *text, size_t len, DiagList *d) {
    static Source src;
    src.name = "t.tir";
    src.text = text;
    src.len = len;
    return ir_parse(&src, d);
}

/* Prints m, parses the text, prints again and checks both texts are equal.
 * Returns the first text (malloc-owned). */
static char *check_roundtrip(const IrModule *m) {
    char *a = print_module(m);
    DiagList d;
    diag_init(&d);
    IrModule *m2 = parse_text(a, strlen(a), &d);
    if (!m2) {
        Buf r;
        buf_init(&r);
        diag_render(&d, &r);
        fprintf(stderr, "reparse failed:\n%s\ntext:\n%s\n", r.data ? r.data : "", a);
        buf_free(&r);
    }
    CHECK(m2 != NULL);
    if (m2) {
        char *b = print_module(m2);
        CHECK_EQ_STR(b, a);
        free(b);
        ir_module_destroy(m2);
    }
    diag_free(&d);
    return a;
}

/* Parses text that must be valid and returns print(parse(text)); checks
 * that printing is idempotent on it. */
static char *reprint(const char *text) {
    DiagList d;
    diag_init(&d);
    IrModule *m = parse_text(text, strlen(text), &d);
    if (!m) {
        Buf r;
        buf_init(&r);
        diag_render(&d, &r);
        fprintf(stderr, "parse failed:\n%s", r.data ? r.data : "");
        buf_free(&r);
    }
    CHECK(m != NULL);
    diag_free(&d);
    if (!m)
        return NULL;
    char *a = check_roundtrip(m);
    ir_module_destroy(m);
    return a;
}

/* Parses text that must fail; the first diagnostic must be an error at
 * line:col whose message contains msg. */
static void check_error(const char *text, int line, int col, const char *msg) {
    DiagList d;
    diag_init(&d);
    IrModule *m = parse_text(text, strlen(text), &d);
    CHECK(m == NULL);
    ir_module_destroy(m);
    CHECK(d.head != NULL);
    if (!d.head || d.head->loc.line != line || d.head->loc.col != col || !strstr(d.head->msg, msg))
        fprintf(stderr, "for input:\n%s\n", text);
    if (d.head) {
        CHECK_EQ_INT(d.head->level, DIAG_ERROR);
        CHECK_EQ_INT(d.head->loc.line, line);
        CHECK_EQ_INT(d.head->loc.col, col);
        if (!strstr(d.head->msg, msg)) {
            fprintf(stderr, "message '%s' lacks '%s'\n", d.head->msg, msg);
            CHECK(false);
        }
    }
    diag_free(&d);
}

static const Layout *blocked2(IrModule *m, int s0, int s1) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_BLOCKED;
    l.rank = 2;
    l.blocked.spt[0] = s0;
    l.blocked.spt[1] = s1;
    l.blocked.tpw[0] = 4;
    l.blocked.tpw[1] = 8;
    l.blocked.wpc[0] = 4;
    l.blocked.wpc[1] = 1;
    l.blocked.order[0] = 1;
    l.blocked.order[1] = 0;
    return ir_layout_intern(m, &l);
}

/* A module that touches every printer feature: all layout kinds (and
 * aliases of parents), smem, param and function attributes, all attribute
 * kinds, nested for/if with results, multi-result ops, func + call,
 * duplicate and numeric name hints. */
static IrModule *build_big_module(void) {
    IrModule *m = ir_module_create();
    const IrType *i32 = ir_type_scalar(m, IR_I32), *f32 = ir_type_scalar(m, IR_F32), *f16 = ir_type_scalar(m, IR_F16);
    const IrType *pf16 = ir_type_ptr(m, f16);
    const Layout *bl = blocked2(m, 1, 4), *bl2 = blocked2(m, 2, 2);
    Layout l;
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_SLICE;
    l.rank = 1;
    l.slice.dim = 1;
    l.slice.parent = bl;
    const Layout *sl = ir_layout_intern(m, &l);
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_MMA;
    l.rank = 2;
    l.mma.version = 2;
    l.mma.wpc[0] = 4;
    l.mma.wpc[1] = 1;
    l.mma.instr[0] = 16;
    l.mma.instr[1] = 8;
    l.mma.instr[2] = 16;
    const Layout *mma = ir_layout_intern(m, &l);
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_DOT_OP;
    l.rank = 2;
    l.dot_op.idx = 0;
    l.dot_op.parent = mma;
    l.dot_op.kwidth = 2;
    const Layout *dop = ir_layout_intern(m, &l);
    memset(&l, 0, sizeof l);
    l.kind = LAYOUT_SHARED;
    l.rank = 2;
    l.shared.vec = 8;
    l.shared.per_phase = 1;
    l.shared.max_phase = 8;
    l.shared.order[0] = 1;
    l.shared.order[1] = 0;
    const Layout *sh = ir_layout_intern(m, &l);
    int64_t s64x64[2] = {64, 64}, s64[1] = {64}, s2x64x64[3] = {2, 64, 64};
    const IrType *t_bl = ir_type_tile(m, f32, 2, s64x64, bl);
    const IrType *t_bl2 = ir_type_tile(m, f32, 2, s64x64, bl2);
    const IrType *t_sl = ir_type_tile(m, i32, 1, s64, sl);
    const IrType *t_mma = ir_type_tile(m, f32, 2, s64x64, mma);
    const IrType *t_dop = ir_type_tile(m, f16, 2, s64x64, dop);
    const IrType *t_ptr = ir_type_tile(m, pf16, 2, s64x64, bl);
    const IrType *t_plain = ir_type_tile(m, f32, 1, s64, NULL);
    const IrType *t_smem = ir_type_smem(m, f16, 3, s2x64x64, sh);

    /* func @helper(%x: tile<64xf32>, %y: i32) -> (tile<64xf32>, i32) */
    IrFunc *h = ir_func_create(m, IR_FUNC_FUNC, "helper");
    IrValue *hx = ir_func_add_param(h, t_plain, "x");
    IrValue *hy = ir_func_add_param(h, i32, NULL);
    const IrType *hres[2] = {t_plain, i32};
    ir_func_set_results(h, 2, hres);
    IrBuilder b;
    ir_builder_at_end(&b, m, h->body);
    IrValue *e = ir_build_unary(&b, IR_OP_EXP, t_plain, hx);
    IrValue *rets[2] = {e, hy};
    ir_build_op(&b, IR_OP_RETURN, 2, rets, 0, NULL);

    /* kernel @main(...) attrs {num_warps = 4} */
    IrFunc *k = ir_func_create(m, IR_FUNC_KERNEL, "main");
    IrValue *p = ir_func_add_param(k, pf16, "p");
    IrAttr div = {.name = "divisibility", .kind = IR_ATTR_INT, .i = 16};
    ir_attrs_set(m, &p->num_attrs, &p->attrs, &div);
    IrValue *n = ir_func_add_param(k, i32, "n");
    IrValue *x = ir_func_add_param(k, t_plain, "x");
    IrValue *x2 = ir_func_add_param(k, t_plain, "x"); /* duplicate hint: %x.1 */
    ir_func_set_int(k, "num_warps", 4);
    ir_builder_at_end(&b, m, k->body);
    IrValue *c0 = ir_build_const_int(&b, i32, 0);
    IrValue *c1 = ir_build_const_int(&b, i32, 1);
    ir_value_set_name(m, c1, "c1");
    IrValue *fz = ir_build_const_float(&b, t_bl, 0.0);
    IrValue *fneg = ir_build_const_float(&b, f32, -1.4426950408889634);
    IrValue *ar = ir_build(&b, IR_OP_ARANGE, t_sl, 0, NULL);
    ir_op_set_int(m, ar->def, "start", 0);
    ir_op_set_int(m, ar->def, "end", 64);
    ir_value_set_name(m, ar, "0"); /* digits only: dropped */
    IrValue *ptrs = ir_build_unary(&b, IR_OP_SPLAT, t_ptr, p);
    IrValue *ld = ir_build_unary(&b, IR_OP_LOAD, ir_type_tile(m, f16, 2, s64x64, bl), ptrs);
    IrValue *sm = ir_build(&b, IR_OP_LOCAL_ALLOC, t_smem, 0, NULL);
    IrValue *stage = ir_build_binary(&b, IR_OP_MEMDESC_INDEX, ir_type_smem(m, f16, 2, s64x64, sh), sm, c0);
    IrValue *a_op = ir_build_unary(&b, IR_OP_LOCAL_LOAD, t_dop, stage);
    IrValue *cvt = ir_build_unary(&b, IR_OP_CONVERT_LAYOUT, t_mma, fz);
    IrValue *dops[3] = {a_op, a_op, cvt};
    IrValue *dot = ir_build(&b, IR_OP_DOT, t_mma, 3, dops);
    ir_value_set_name(m, dot, "acc");
    IrValue *red = ir_build_unary(&b, IR_OP_REDUCE, f32, x);
    ir_op_set_word(m, red->def, "kind", "sum");
    ir_op_set_int(m, red->def, "axis", 0);
    IrValue *cmp = ir_build_cmp(&b, "lt", c0, n);
    /* a for with two iter args and two results */
    IrValue *fops[5] = {c0, n, c1, x, red};
    const IrType *fres[2] = {t_plain, f32};
    IrOp *loop = ir_build_op(&b, IR_OP_FOR, 5, fops, 2, fres);
    ir_value_set_name(m, loop->results[0], "acc"); /* %acc.1 */
    IrBlock *body = loop->regions[0];
    IrValue *iv = ir_block_add_arg(m, body, i32, "i");
    IrValue *it0 = ir_block_add_arg(m, body, t_plain, "acc");
    IrValue *it1 = ir_block_add_arg(m, body, f32, NULL);
    IrBuilder bb;
    ir_builder_at_end(&bb, m, body);
    IrValue *cond = ir_build_cmp(&bb, "eq", iv, c0);
    const IrType *ires[1] = {t_plain};
    IrOp *ifop = ir_build_op(&bb, IR_OP_IF, 1, &cond, 1, ires);
    IrBuilder tb;
    ir_builder_at_end(&tb, m, ifop->regions[0]);
    IrValue *cargs[2] = {it0, iv};
    const IrType *cres[2] = {t_plain, i32};
    IrOp *call = ir_build_op(&tb, IR_OP_CALL, 2, cargs, 2, cres);
    ir_op_set_symbol(m, call, "callee", "helper");
    ir_build_op(&tb, IR_OP_YIELD, 1, &call->results[0], 0, NULL);
    ir_builder_at_end(&tb, m, ifop->regions[1]);
    IrValue *neg = ir_build_unary(&tb, IR_OP_NEG, t_plain, it0);
    ir_build_op(&tb, IR_OP_YIELD, 1, &neg, 0, NULL);
    IrValue *sum = ir_build_binary(&bb, IR_OP_ADD, f32, it1, fneg);
    IrValue *ys[2] = {ifop->results[0], sum};
    ir_build_op(&bb, IR_OP_YIELD, 2, ys, 0, NULL);
    /* an if without results */
    IrOp *if2 = ir_build_op(&b, IR_OP_IF, 1, &cmp, 0, NULL);
    ir_builder_at_end(&tb, m, if2->regions[0]);
    ir_build_op(&tb, IR_OP_ASSERT, 1, &cmp, 0, NULL);
    ir_build_op(&tb, IR_OP_YIELD, 0, NULL, 0, NULL);
    ir_builder_at_end(&tb, m, if2->regions[1]);
    ir_build_op(&tb, IR_OP_YIELD, 0, NULL, 0, NULL);
    /* attributes of every kind on one op */
    IrOp *misc = ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    ir_op_set_int(m, misc, "i", -7);
    ir_op_set_float(m, misc, "f", 1e-30);
    ir_op_set_word(m, misc, "w", "max");
    IrAttr s = {.name = "s", .kind = IR_ATTR_STRING, .s = "quote\" back\\ nl\n tab\t bell\a \xc3\xa9"};
    ir_op_set_attr(m, misc, &s);
    ir_op_set_symbol(m, misc, "sym", "main");
    int64_t perm[3] = {1, 0, -5};
    ir_op_set_ints(m, misc, "l", 3, perm);
    ir_op_set_ints(m, misc, "empty", 0, NULL);
    IrValue *t2 = ir_build_unary(&b, IR_OP_CONVERT_LAYOUT, t_bl2, fz);
    IrValue *sts[2] = {ptrs, t2};
    ir_build_op(&b, IR_OP_STORE, 2, sts, 0, NULL);
    ir_build_op(&b, IR_OP_ASYNC_COMMIT, 0, NULL, 0, NULL);
    IrOp *w = ir_build_op(&b, IR_OP_ASYNC_WAIT, 0, NULL, 0, NULL);
    ir_op_set_int(m, w, "num", 0);
    (void)x2;
    (void)ld;
    ir_build_op(&b, IR_OP_RETURN, 0, NULL, 0, NULL);
    return m;
}

/* ---- tests ---- */

TEST(builder_roundtrip) {
    TcGuard g;
    if (TC_GUARD(g)) {
        fprintf(stderr, "guard: %s\n", g.message);
        CHECK(false);
        return;
    }
    IrModule *m = build_big_module();
    char *a = check_roundtrip(m);
    /* aliases, parents first, per-kind counters */
    CHECK(strstr(a, "#blocked = #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>\n") == a);
    CHECK(strstr(a, "#slice = #slice<dim = 1, parent = #blocked>\n") != NULL);
    CHECK(strstr(a, "#dot_op = #dot_op<idx = 0, parent = #mma, kwidth = 2>\n") != NULL);
    CHECK(strstr(a, "#mma = #mma<") < strstr(a, "#dot_op = "));
    CHECK(strstr(a, "#blocked1 = #blocked<spt = [2, 2]") != NULL);
    CHECK(strstr(a, "#shared = #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>") != NULL);
    CHECK(strstr(a, "smem<2x64x64xf16, #shared>") != NULL);
    CHECK(strstr(a, "tile<64x64xptr<f16>, #blocked>") != NULL);
    /* names */
    CHECK(strstr(a, "kernel @main(%p: ptr<f16> {divisibility = 16}, %n: i32, %x: tile<64xf32>, %x.1: tile<64xf32>) "
                    "attrs {num_warps = 4} {\n") != NULL);
    CHECK(strstr(a, "func @helper(%x: tile<64xf32>, %0: i32) -> (tile<64xf32>, i32) {\n") == strstr(a, "func "));
    CHECK(strstr(a, "%acc = dot ") != NULL);
    CHECK(strstr(a, "%acc.1, %") != NULL);
    CHECK(strstr(a, "^bb(%i: i32, %acc.2: tile<64xf32>, %") != NULL);
    CHECK(strstr(a, "{callee = @helper}") != NULL);
    CHECK(strstr(a, "  } {\n") != NULL);
    CHECK(strstr(a, "barrier {i = -7, f = 1e-30, w = max, s = \"quote\\\" back\\\\ nl\\n tab\\t bell\\07 \\C3\\A9\", "
                    "sym = @main, l = [1, 0, -5], empty = []}\n") != NULL);
    CHECK(strstr(a, "{value = -1.4426950408889634} : f32") != NULL);
    CHECK(strstr(a, "{value = 0.0} : tile<64x64xf32, #blocked>") != NULL);
    CHECK(strstr(a, "\n\nkernel @main") != NULL);
    free(a);
    ir_module_destroy(m);
    tc_guard_pop(&g);
}

/* The exact text of a small module pins the format down. */
TEST(exact_text) {
    const char *text = "#blocked = #blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>\n"
                       "\n"
                       "kernel @k(%x: ptr<f32> {divisibility = 16}, %n: i32) attrs {num_warps = 4} {\n"
                       "  %0 = program_id {axis = 0} : i32\n"
                       "  %offs = arange {start = 0, end = 512} : tile<512xi32, #blocked>\n"
                       "  %1 = splat %n : tile<512xi32, #blocked>\n"
                       "  %mask = cmp %offs, %1 {pred = lt} : tile<512xi1, #blocked>\n"
                       "  %2 = splat %x : tile<512xptr<f32>, #blocked>\n"
                       "  %3 = addptr %2, %offs : tile<512xptr<f32>, #blocked>\n"
                       "  %4 = constant {value = 0.5} : tile<512xf32, #blocked>\n"
                       "  store %3, %4, %mask\n"
                       "  %5 = cmp %0, %n {pred = ge} : i1\n"
                       "  %a, %b = if %5 : i32, i32 {\n"
                       "    yield %0, %0\n"
                       "  } {\n"
                       "    yield %n, %n\n"
                       "  }\n"
                       "  return\n"
                       "}\n"
                       "\n"
                       "func @f() -> () {\n"
                       "  return\n"
                       "}\n";
    char *a = reprint(text);
    CHECK_EQ_STR(a, text);
    free(a);
}

/* Comments, odd spacing, inline layouts and numeric names normalize. */
TEST(normalize) {
    const char *text = "// leading comment\n"
                       "kernel @k( %x :i32 ,%y:tile<4x8xf32,#blocked<order=[0,1],spt=[1,1],tpw=[4,8],wpc=[1,1]>> )\n"
                       "{ // body\n"
                       "  %7 = add %x,%x:i32 // trailing\n"
                       "  %zz=neg %7 : i32 %q = neg %zz : i32\n"
                       "  barrier %r = neg %q : i32\n"
                       "  return }\n";
    const char *want = "#blocked = #blocked<spt = [1, 1], tpw = [4, 8], wpc = [1, 1], order = [0, 1]>\n"
                       "\n"
                       "kernel @k(%x: i32, %y: tile<4x8xf32, #blocked>) {\n"
                       "  %0 = add %x, %x : i32\n"
                       "  %zz = neg %0 : i32\n"
                       "  %q = neg %zz : i32\n"
                       "  barrier\n"
                       "  %r = neg %q : i32\n"
                       "  return\n"
                       "}\n";
    char *a = reprint(text);
    CHECK_EQ_STR(a, want);
    free(a);
}

/* A value list followed by '=' is the next op's result list. */
TEST(result_list_lookahead) {
    const char *text = "kernel @k(%x: i32) {\n"
                       "  yield\n"
                       "  %a, %b = call %x {callee = @k} : i32, i32\n"
                       "  yield %a, %b\n"
                       "  %c = add %a, %b : i32\n"
                       "  return %c\n"
                       "}\n";
    char *a = reprint(text);
    CHECK_EQ_STR(a, text);
    free(a);
}

/* Names: a region's values go out of scope at '}', and may be defined again. */
TEST(scoping) {
    const char *ok = "kernel @k(%c: i1) {\n"
                     "  if %c {\n"
                     "    %t = constant {value = 1} : i32\n"
                     "    yield\n"
                     "  } {\n"
                     "    %t = constant {value = 2} : i32\n"
                     "    yield\n"
                     "  }\n"
                     "  %t = constant {value = 3} : i32\n"
                     "  return\n"
                     "}\n";
    /* Unique names per function: the later %t become %t.1 and %t.2. */
    char *a = reprint(ok);
    CHECK(a && strstr(a, "%t.1 = constant {value = 2}") && strstr(a, "%t.2 = constant {value = 3}"));
    free(a);
    check_error("kernel @k(%c: i1) {\n"
                "  if %c {\n"
                "    %t = constant {value = 1} : i32\n"
                "    yield\n"
                "  } {\n"
                "    yield\n"
                "  }\n"
                "  %u = neg %t : i32\n"
                "}\n",
                8, 12, "use of undefined value %t");
    /* results are not visible inside the op's own regions */
    check_error("kernel @k(%c: i1) {\n"
                "  %r = if %c : i32 {\n"
                "    yield %r\n"
                "  } {\n"
                "    yield %c\n"
                "  }\n"
                "}\n",
                3, 11, "use of undefined value %r");
    check_error("kernel @k(%c: i1) {\n  %c = neg %c : i1\n}\n", 2, 3, "redefinition of value %c");
    check_error("kernel @k(%c: i1) {\n  %d = neg %d : i1\n}\n", 2, 12, "use of undefined value %d");
}

TEST(parse_errors) {
    check_error("kernel @k() {\n  %a = frob : i32\n}\n", 2, 8, "unknown operation 'frob'");
    check_error("kernel @k() {\n  %a = constant {value = } : i32\n}\n", 2, 26, "expected an attribute value");
    check_error("kernel @k() {\n  %a = constant {value 1} : i32\n}\n", 2, 24, "expected '=' after the attribute name");
    check_error("kernel @k(%x: tile<4xf33>) {\n}\n", 1, 22, "expected a type, saw 'f33'");
    check_error("kernel @k(%x: vec<4xf32>) {\n}\n", 1, 15, "expected a type, saw 'vec'");
    check_error("kernel @k(%x: tile<4xf32, #nope>) {\n}\n", 1, 27, "undefined layout alias '#nope'");
    check_error("kernel @k(%x: tile<4xf32, #bloked<spt = [1]>>) {\n}\n", 1, 27, "unknown layout kind '#bloked'");
    check_error("#b = #blocked<spt = [1], tpw = [32], wpc = [4]>\n", 1, 47, "missing field 'order'");
    check_error("#b = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0], spt = [1]>\n", 1, 62,
                "duplicate field 'spt'");
    check_error("#b = #blocked<spt = [1, 1], tpw = [32], wpc = [4], order = [0]>\n", 1, 6,
                "'tpw' has 1 entries but 'spt' has 2");
    check_error("#b = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0], foo = 1>\n", 1, 62,
                "unknown field 'foo'");
    check_error("#b = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>\n"
                "#s = #slice<dim = 0, parent = #b>\n",
                2, 6, "must have rank 2 or more");
    check_error("#m = #mma<version = 2, wpc = [4, 1], instr = [16, 8]>\n", 1, 6, "'instr' must be [m, n, k]");
    check_error("#s = #shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 1]>\n", 1, 6, "permutation");
    check_error("#s = #shared<vec = 8, per_phase = 1, max_phase = [8], order = [0]>\n", 1, 6, "must be an integer");
    check_error("#a = #shared<vec = 8, per_phase = 1, max_phase = 8, order = [0]>\n"
                "#a = #shared<vec = 8, per_phase = 1, max_phase = 8, order = [0]>\n",
                2, 1, "redefinition of layout alias '#a'");
    check_error("#b = #blocked<spt = [-1], tpw = [32], wpc = [4], order = [0]>\n", 1, 22,
                "an entry of 'spt' must be in 0..65536, got -1");
    check_error("#s = #slice<dim = 70000, parent = #b>\n", 1, 19, "'dim' must be in 0..65536, got 70000");
    check_error("#b = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>\n#s = #slice<dim = #b, parent = #b>\n", 2,
                19, "expected an integer for 'dim', saw '#b'");
    check_error("#b = #blocked<spt = [1, 2, 3, 4, 5], tpw = [32], wpc = [4], order = [0]>\n", 1, 34,
                "'spt' has more than 4 entries");
    check_error("#b = #blocked<spt = 1, tpw = [32], wpc = [4], order = [0]>\n", 1, 6, "must be a non-empty list");
    check_error("kernel @k(%x: tile<4x0xf32>) {\n}\n", 1, 22, "at least 1");
    check_error("kernel @k(%x: tile<1x2x3x4x5xf32>) {\n}\n", 1, 28, "at most 4 dimensions");
    check_error("kernel @k(%x: tile<65536x65536xf32>) {\n}\n", 1, 26, "more than");
    check_error("kernel @k(%x: tile<4 x f32>) {\n}\n", 1, 21, "expected 'x'");
    check_error("kernel @k(%x: tile<xf32>) {\n}\n", 1, 20, "expected a shape");
    check_error("kernel @k(%x: ptr<ptr<f32>>) {\n}\n", 1, 19, "a scalar type (i1 .. f64) as the pointee");
    check_error("kernel @k() {\n  %a, %b = constant {value = 1} : i32\n}\n", 2, 33, "names 2 results but lists 1");
    check_error("kernel @k() {\n  %a = constant {value = 1}\n}\n", 3, 1, "expected ':' and 1 result type");
    check_error("kernel @k() {\n  %a = constant {value = 99999999999999999999} : i64\n}\n", 2, 26,
                "does not fit in 64 bits");
    check_error("kernel @k() {\n  return\n", 3, 1, "expected '}' to close '{' at 1:13, saw end of file");
    check_error("kernel @k() {\n  return\nkernel @j() {\n}\n", 3, 1, "expected '}' to close '{' at 1:13, saw 'kernel'");
    check_error("kernel @k(%a: i32 {x = 1) {\n}\n", 1, 25, "expected '}' to close '{' at 1:19, saw ')'");
    check_error("kernel @k(%a: i32\n", 2, 1, "expected ')' to close '(' at 1:10, saw end of file");
    check_error("kernel @k() {\n}\nfunc @k() -> () {\n}\n", 3, 6, "redefinition of function @k");
    check_error("kernel @k() {\n  %s = constant {value = \"abc} : i32\n}\n", 2, 26, "unterminated string");
    check_error("kernel @k() {\n  \x01\n}\n", 2, 3, "unexpected byte 0x01");
    check_error("foo\n", 1, 1, "expected 'kernel', 'func' or a layout alias definition, saw 'foo'");
    check_error("kernel @k() {\n  if %c {\n  }\n}\n", 2, 6, "use of undefined value %c");
    check_error("kernel @k(%c: i1) {\n  for %c\n}\n", 3, 1, "'{' to begin region 1 of 'for', saw '}'");
    check_error("kernel @k(%c: i1) {\n  if %c {\n  }\n}\n", 4, 1, "'{' to begin region 2 of 'if'");
    check_error("kernel @k() {\n  ^bb(%a: i32):\n}\n", 2, 3, "no block head");
}

/* One error per function: the parser skips to the next `kernel`/`func`. */
TEST(error_recovery) {
    const char *text = "kernel @a() {\n  %x = frob : i32\n}\n"
                       "kernel @b() {\n  return\n}\n"
                       "garbage here\n"
                       "func @c(%y: i32) -> (i32) {\n  %z = neg %w : i32\n  %q = frob\n}\n"
                       "kernel @a() {\n  %x = frob2 : i32\n}\n"; /* @a failed before: no redefinition */
    DiagList d;
    diag_init(&d);
    IrModule *m = parse_text(text, strlen(text), &d);
    CHECK(m == NULL);
    CHECK_EQ_INT(d.num_errors, 4);
    const Diag *g = d.head;
    int lines[4] = {2, 7, 9, 13};
    for (int i = 0; i < 4 && g; i++, g = g->next)
        CHECK_EQ_INT(g->loc.line, lines[i]);
    diag_free(&d);
}

/* A valid text cut at every byte and corrupted at every byte never crashes;
 * whatever parses round-trips. */
TEST(truncation_and_corruption) {
    TcGuard g;
    if (TC_GUARD(g)) {
        fprintf(stderr, "guard: %s\n", g.message);
        CHECK(false);
        return;
    }
    IrModule *m = build_big_module();
    char *text = print_module(m);
    ir_module_destroy(m);
    size_t len = strlen(text);
    int parsed = 0;
    char *copy = malloc(len + 1);
    for (size_t cut = 0; cut <= len; cut++) {
        /* exact-size heap copy, so that ASan sees any read past the end */
        char *t = malloc(cut ? cut : 1);
        memcpy(t, text, cut);
        DiagList d;
        diag_init(&d);
        IrModule *pm = parse_text(t, cut, &d);
        if (pm) {
            parsed++;
            char *a = check_roundtrip(pm);
            free(a);
            ir_module_destroy(pm);
        } else {
            CHECK(d.num_errors > 0);
        }
        diag_free(&d);
        free(t);
    }
    CHECK(parsed >= 2); /* the empty prefix and the whole text */
    static const char bytes[] = {0, '}', '{', '%', ':', ',', '"', 'x', '#', '<', '>', '\n', '9', '-', (char)0xff};
    uint32_t seed = 12345;
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, text, len + 1);
        seed = seed * 1103515245u + 12345u;
        copy[i] = bytes[(seed >> 16) % sizeof bytes];
        DiagList d;
        diag_init(&d);
        IrModule *pm = parse_text(copy, len, &d);
        if (pm) {
            char *a = check_roundtrip(pm);
            free(a);
            ir_module_destroy(pm);
        }
        diag_free(&d);
    }
    free(copy);
    free(text);
    tc_guard_pop(&g);
}

static char *repeat(const char *head, const char *unit, int n, const char *mid, const char *unit2, int n2,
                    const char *tail) {
    Buf b;
    buf_init(&b);
    buf_puts(&b, head);
    for (int i = 0; i < n; i++)
        buf_puts(&b, unit);
    buf_puts(&b, mid);
    for (int i = 0; i < n2; i++)
        buf_puts(&b, unit2);
    buf_puts(&b, tail);
    return b.data;
}

TEST(nesting_limits) {
    /* 300 nested ifs: an error, not a stack overflow */
    char *t = repeat("kernel @k(%c: i1) {\n", "if %c {\n", 300, "", "} {\n}\n", 300, "return\n}\n");
    DiagList d;
    diag_init(&d);
    IrModule *m = parse_text(t, strlen(t), &d);
    CHECK(m == NULL);
    CHECK(d.head && strstr(d.head->msg, "regions nested more than 256 deep"));
    diag_free(&d);
    free(t);
    /* 200 nested ifs are fine */
    t = repeat("kernel @k(%c: i1) {\n", "if %c {\n", 200, "", "} {\n}\n", 200, "return\n}\n");
    diag_init(&d);
    m = parse_text(t, strlen(t), &d);
    CHECK(m != NULL);
    if (m) {
        char *a = check_roundtrip(m);
        free(a);
    }
    ir_module_destroy(m);
    diag_free(&d);
    free(t);
    /* deeply nested layouts */
    t = repeat("#a = ", "#slice<dim = 0, parent = ", 10000, "#nope", ">", 10000, "\n");
    diag_init(&d);
    m = parse_text(t, strlen(t), &d);
    CHECK(m == NULL);
    CHECK(d.head && strstr(d.head->msg, "layouts nested more than"));
    diag_free(&d);
    free(t);
}

/* 20000 ops and values, all named alike: must stay linear (a quadratic
 * name lookup or uniquing would take seconds here). */
TEST(large_function) {
    Buf b;
    buf_init(&b);
    buf_puts(&b, "kernel @k(%x: i32) {\n");
    for (int i = 0; i < 20000; i++)
        buf_printf(&b, "  %%v%d = add %%x, %%x : i32\n", i);
    buf_puts(&b, "  return\n}\n");
    char *a = reprint(b.data);
    CHECK_EQ_STR(a, b.data);
    free(a);
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    IrValue *x = ir_func_add_param(f, ir_type_scalar(m, IR_I32), "x");
    IrBuilder bl;
    ir_builder_at_end(&bl, m, f->body);
    for (int i = 0; i < 20000; i++)
        ir_value_set_name(m, ir_build_binary(&bl, IR_OP_ADD, x->type, x, x), "x");
    a = check_roundtrip(m);
    CHECK(strstr(a, "%x.19999 = add") != NULL);
    free(a);
    ir_module_destroy(m);
    buf_free(&b);
}

static void check_number(double v, const char *want) {
    Buf b;
    buf_init(&b);
    ir_print_number(&b, v);
    CHECK_EQ_STR(b.data, want);
    /* and it reads back to the same double through the parser */
    char text[200];
    snprintf(text, sizeof text, "kernel @k() {\n  %%0 = constant {value = %s} : f64\n  return\n}\n", b.data);
    DiagList d;
    diag_init(&d);
    IrModule *m = parse_text(text, strlen(text), &d);
    CHECK(m != NULL);
    if (m) {
        const IrAttr *a = ir_op_attr(m->first->body->first, "value");
        CHECK(a && a->kind == IR_ATTR_FLOAT);
        if (a && a->kind == IR_ATTR_FLOAT) {
            if (isnan(v))
                CHECK(isnan(a->f));
            else
                CHECK(memcmp(&a->f, &v, sizeof v) == 0);
        }
    }
    ir_module_destroy(m);
    diag_free(&d);
    buf_free(&b);
}

TEST(float_printing) {
    check_number(0.1, "0.1");
    check_number(1e-30, "1e-30");
    check_number(1.4426950408889634, "1.4426950408889634");
    check_number(INFINITY, "inf");
    check_number(-INFINITY, "-inf");
    check_number(NAN, "nan");
    check_number(-0.0, "-0.0");
    check_number(0.0, "0.0");
    check_number(1.0, "1.0");
    check_number(100.0, "100.0");
    check_number(1e30, "1e+30");
    check_number(0.3, "0.3");
    check_number(1.0 / 3.0, "0.3333333333333333");
    check_number(5e-324, "4.94065645841247e-324");
    check_number(1.7976931348623157e308, "1.7976931348623157e+308");
    check_number(-2.5, "-2.5");
    check_number(123456789012345680.0, "1.2345678901234568e+17");
    /* many values: print and strtod back */
    uint64_t bits = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 10000; i++) {
        bits = bits * 6364136223846793005ull + 1442695040888963407ull;
        double v;
        memcpy(&v, &bits, sizeof v);
        if (isnan(v))
            continue;
        Buf b;
        buf_init(&b);
        ir_print_number(&b, v);
        double back = strtod(b.data, NULL);
        CHECK(memcmp(&back, &v, sizeof v) == 0);
        CHECK(strpbrk(b.data, ".ei") != NULL); /* never reads as an integer */
        buf_free(&b);
    }
}

/* ir_print_type and ir_layout_print (layout.c) write inline literals that
 * the parser reads back; ir_print_op names values as the function does. */
TEST(type_and_op_printing) {
    IrModule *m = build_big_module();
    IrFunc *k = ir_module_find_func(m, "main");
    Buf full;
    buf_init(&full);
    ir_print_func(k, &full);
    for (IrOp *op = k->body->first; op; op = op->next) {
        /* every op's standalone text starts with its line in the function's */
        Buf b;
        buf_init(&b);
        ir_print_op(op, &b);
        char *nl = b.data ? strchr(b.data, '\n') : NULL;
        if (nl)
            nl[1] = 0;
        CHECK(nl && strstr(full.data, b.data) != NULL);
        buf_free(&b);
        for (int i = 0; i < op->num_results; i++) {
            const IrType *t = op->results[i]->type;
            Buf tb;
            buf_init(&tb);
            ir_print_type(&tb, t);
            /* parse it back as a parameter type and compare the printed type */
            char *text = arena_printf(&m->arena, "kernel @t(%%a: %s) {\n}\n", tb.data);
            DiagList d;
            diag_init(&d);
            IrModule *m2 = parse_text(text, strlen(text), &d);
            CHECK(m2 != NULL);
            if (m2) {
                Buf tb2;
                buf_init(&tb2);
                ir_print_type(&tb2, m2->first->body->args[0]->type);
                CHECK_EQ_STR(tb2.data, tb.data);
                buf_free(&tb2);
            }
            ir_module_destroy(m2);
            diag_free(&d);
            if (t->kind == IR_TILE && t->layout) {
                Buf lb;
                buf_init(&lb);
                ir_layout_print(&lb, t->layout);
                CHECK(strstr(tb.data, lb.data) != NULL);
                buf_free(&lb);
            }
            buf_free(&tb);
        }
    }
    /* ir_print_func inlines layouts */
    CHECK(strstr(full.data, "#slice<dim = 1, parent = #blocked<spt = [1, 4]") != NULL);
    buf_free(&full);
    ir_module_destroy(m);
}

TEST(symbols_and_strings) {
    const char *text = "kernel @\"odd name\"() attrs {s = \"\\00x\"} {\n  return\n}\n";
    check_error(text, 1, 33, "bad escape");
    text = "kernel @\"odd name\"(%a: i32) attrs {s = \"tab\\tq\\\"\\7F\\ff\"} {\n"
           "  call %a {callee = @\"odd name\"}\n"
           "  return\n"
           "}\n";
    char *a = reprint(text);
    CHECK_EQ_STR(a, "kernel @\"odd name\"(%a: i32) attrs {s = \"tab\\tq\\\"\\7F\\FF\"} {\n"
                    "  call %a {callee = @\"odd name\"}\n"
                    "  return\n"
                    "}\n");
    free(a);
    /* inf, nan and -inf are floats, other words are words */
    a = reprint("kernel @k() attrs {a = inf, b = -inf, c = nan, d = info, e = -0.0, f = 1e5, g = -3} {\n  return\n}\n");
    CHECK_EQ_STR(a, "kernel @k() attrs {a = inf, b = -inf, c = nan, d = info, e = -0.0, f = 100000.0, g = -3} {\n"
                    "  return\n"
                    "}\n");
    free(a);
}

static char *print_module_locs(const IrModule *m) {
    Buf b;
    buf_init(&b);
    ir_print_module_locs(m, &b);
    return b.data; /* malloc-owned */
}

/* Locations: ir_print_module_locs prints every op's and function's, the
 * parser reads them back into one text-less Source per file name, and
 * printing again (with or without locations) gives the same text. */
TEST(locations) {
    TcGuard g;
    if (TC_GUARD(g)) {
        fprintf(stderr, "guard: %s\n", g.message);
        CHECK(false);
        return;
    }
    Source a = {"a.tile", "", 0}, q = {"dir/b \"q\"\t\xc3\xa9.tile", "", 0}, unnamed = {NULL, "", 0};
    IrModule *m = ir_module_create();
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    f->loc = (SrcLoc){&a, 1, 1};
    IrValue *x = ir_func_add_param(f, i32, "x");
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    b.loc = (SrcLoc){&a, 2, 5};
    IrValue *y = ir_build_binary(&b, IR_OP_ADD, i32, x, x);
    b.loc = (SrcLoc){&q, 3, 9};
    IrValue *z = ir_build_binary(&b, IR_OP_MUL, i32, y, y);
    b.loc = (SrcLoc){&a, 4, 0}; /* no column: printed as 1 */
    ir_build_binary(&b, IR_OP_SUB, i32, z, y);
    b.loc = (SrcLoc){&unnamed, 5, 5}; /* a Source without a name: unknown */
    ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    b.loc = srcloc_none();
    ir_build_op(&b, IR_OP_RETURN, 0, NULL, 0, NULL);
    const char *want = "kernel @k(%x: i32) loc(\"a.tile\":1:1) {\n"
                       "  %0 = add %x, %x : i32 loc(\"a.tile\":2:5)\n"
                       "  %1 = mul %0, %0 : i32 loc(\"dir/b \\\"q\\\"\\t\\C3\\A9.tile\":3:9)\n"
                       "  %2 = sub %1, %0 : i32 loc(\"a.tile\":4:1)\n"
                       "  barrier loc(unknown)\n"
                       "  return loc(unknown)\n"
                       "}\n";
    char *text = print_module_locs(m);
    CHECK_EQ_STR(text, want);
    char *plain = print_module(m);
    DiagList d;
    diag_init(&d);
    IrModule *m2 = parse_text(text, strlen(text), &d);
    CHECK(m2 != NULL);
    if (m2) {
        char *again = print_module_locs(m2);
        CHECK_EQ_STR(again, text);
        free(again);
        again = print_module(m2);
        CHECK_EQ_STR(again, plain);
        free(again);
        const IrFunc *f2 = m2->first;
        const IrOp *add = f2->body->first, *mul = add->next, *sub = mul->next, *bar = sub->next, *ret = bar->next;
        CHECK(f2->loc.src && f2->loc.src == add->loc.src && add->loc.src == sub->loc.src);
        CHECK(mul->loc.src && mul->loc.src != add->loc.src);
        if (add->loc.src && mul->loc.src) {
            CHECK_EQ_STR(add->loc.src->name, "a.tile");
            CHECK_EQ_STR(mul->loc.src->name, q.name);
            CHECK(add->loc.src->text == NULL && add->loc.src->len == 0);
        }
        CHECK_EQ_INT(mul->loc.line, 3);
        CHECK_EQ_INT(mul->loc.col, 9);
        CHECK_EQ_INT(sub->loc.col, 1);
        CHECK(bar->loc.src == NULL && bar->loc.line == 0 && ret->loc.src == NULL && ret->loc.line == 0);
        ir_module_destroy(m2);
    }
    diag_free(&d);
    free(plain);
    free(text);
    ir_module_destroy(m);

    /* Without loc(...), an op is where it stands in the IR text. */
    diag_init(&d);
    const char *src =
        "kernel @k(%x: i32) {\n  %0 = add %x, %x : i32 loc(\"k.tile\":7:3)\n    %1 = neg %0 : i32\n  return\n}\n";
    m2 = parse_text(src, strlen(src), &d);
    CHECK(m2 != NULL);
    if (m2) {
        const IrOp *neg = m2->first->body->first->next;
        CHECK(neg->loc.src && neg->loc.src->text == src);
        CHECK_EQ_INT(neg->loc.line, 3);
        CHECK_EQ_INT(neg->loc.col, 5);
        text = print_module_locs(m2);
        CHECK(strstr(text, "kernel @k(%x: i32) loc(\"t.tir\":1:1) {\n  %0 = add %x, %x : i32 loc(\"k.tile\":7:3)\n"
                           "  %1 = neg %0 : i32 loc(\"t.tir\":3:5)\n") == text);
        free(text);
        ir_module_destroy(m2);
    }
    diag_free(&d);

    /* A diagnostic at a location read from loc(...) names the file and has
     * no source line to show. */
    diag_init(&d);
    src = "kernel @k(%x: i32, %y: f32) {\n  %0 = add %x, %y : i32 loc(\"k.tile\":12:5)\n  return\n}\n";
    m2 = parse_text(src, strlen(src), &d);
    CHECK(m2 != NULL);
    if (m2) {
        CHECK(!ir_verify(m2, &d));
        Buf r;
        buf_init(&r);
        diag_render(&d, &r);
        CHECK(r.data && strncmp(r.data, "k.tile:12:5: error: ", 20) == 0 && strchr(r.data, '\n') == r.data + r.len - 1);
        if (r.data && strncmp(r.data, "k.tile:12:5: error: ", 20) != 0)
            fprintf(stderr, "rendered: %s\n", r.data);
        buf_free(&r);
        ir_module_destroy(m2);
    }
    diag_free(&d);

    /* The note of a redefinition points at the IR text, never at a Source
     * of the module that the failed parse destroyed. */
    diag_init(&d);
    src = "kernel @k() loc(\"k.tile\":1:1) {\n  return\n}\nkernel @k() {\n  return\n}\n";
    CHECK(parse_text(src, strlen(src), &d) == NULL);
    CHECK(d.head && d.head->next && d.head->next->level == DIAG_NOTE);
    if (d.head && d.head->next) {
        CHECK(d.head->next->loc.src && d.head->next->loc.src->text == src);
        CHECK_EQ_INT(d.head->next->loc.line, 1);
    }
    diag_free(&d);

    check_error("kernel @k() {\n  return loc(\"k.tile\":0:1)\n}\n", 2, 23, "line number in 'loc' must be in 1..");
    check_error("kernel @k() {\n  return loc(\"k.tile\":1:99999999999999999999)\n}\n", 2, 25,
                "column number in 'loc' must be in 1..2147483647, got 99999999999999999999");
    check_error("kernel @k() {\n  return loc(k:1:1)\n}\n", 2, 14, "expected a file name (a string) or 'unknown'");
    check_error("kernel @k() {\n  return loc \"k\":1:1)\n}\n", 2, 14, "expected '(' after 'loc'");
    check_error("kernel @k() {\n  return loc(\"k\":1:1\n}\n", 3, 1, "expected ')' to close '(' at 2:13");
    tc_guard_pop(&g);
}

UNIT_SUITE(print_parse, builder_roundtrip, exact_text, normalize, result_list_lookahead, scoping, parse_errors,
           error_recovery, truncation_and_corruption, nesting_limits, large_function, float_printing,
           type_and_op_printing, symbols_and_strings, locations)
