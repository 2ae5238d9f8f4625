/*
 * test_verify.c — the verifier on IR built with the builder: the structural
 * rules that the text parser cannot even express (use before definition,
 * values escaping their region, values of another function, missing
 * terminators, duplicate names), and the form of its messages. The rules
 * the parser can express are tested in tests/lit/passes/verify-*.tir.
 */
#include "ir/ir.h"
#include "unit.h"

typedef struct Fixture {
    IrModule *m;
    IrFunc *f;
    IrBuilder b;
    const IrType *i32, *f32, *i1;
    IrValue *x; /* i32 parameter */
    IrValue *c; /* i1 parameter */
    IrValue *p; /* ptr<i32> parameter */
} Fixture;

static void setup(Fixture *t) {
    t->m = ir_module_create();
    t->f = ir_func_create(t->m, IR_FUNC_KERNEL, "k");
    t->i32 = ir_type_scalar(t->m, IR_I32);
    t->f32 = ir_type_scalar(t->m, IR_F32);
    t->i1 = ir_type_scalar(t->m, IR_I1);
    t->x = ir_func_add_param(t->f, t->i32, "x");
    t->c = ir_func_add_param(t->f, t->i1, "c");
    t->p = ir_func_add_param(t->f, ir_type_ptr(t->m, t->i32), "p");
    ir_builder_at_end(&t->b, t->m, t->f->body);
}

static void store(Fixture *t, IrValue *v) {
    IrValue *ops[2] = {t->p, v};
    ir_build(&t->b, IR_OP_STORE, NULL, 2, ops);
}

static void ret(Fixture *t) {
    ir_build(&t->b, IR_OP_RETURN, NULL, 0, NULL);
}

/* Verifies; returns the number of errors and leaves the first message in *first. */
static int verify(Fixture *t, char *first, size_t n) {
    DiagList d;
    diag_init(&d);
    bool ok = ir_verify(t->m, &d);
    int errors = d.num_errors;
    if (first && n) {
        first[0] = 0;
        if (d.head)
            snprintf(first, n, "%s", d.head->msg);
    }
    diag_free(&d);
    CHECK(ok == (errors == 0));
    return errors;
}

/* An if on %c yielding one i32; returns the op. Its then region defines
 * `inner` (x + x). */
static IrOp *build_if(Fixture *t, IrValue **inner) {
    const IrType *types[1] = {t->i32};
    IrOp *op = ir_build_op(&t->b, IR_OP_IF, 1, &t->c, 1, types);
    IrBuilder rb;
    ir_builder_at_end(&rb, t->m, op->regions[0]);
    *inner = ir_build_binary(&rb, IR_OP_ADD, t->i32, t->x, t->x);
    ir_build(&rb, IR_OP_YIELD, NULL, 1, inner);
    ir_builder_at_end(&rb, t->m, op->regions[1]);
    ir_build(&rb, IR_OP_YIELD, NULL, 1, &t->x);
    return op;
}

TEST(valid_module) {
    Fixture t;
    setup(&t);
    IrValue *inner;
    IrOp *op = build_if(&t, &inner);
    IrValue *s = ir_build_binary(&t.b, IR_OP_MUL, t.i32, op->results[0], t.x);
    store(&t, s);
    ret(&t);
    CHECK_EQ_INT(verify(&t, NULL, 0), 0);
    DiagList d;
    diag_init(&d);
    CHECK(ir_verify_func(t.f, &d));
    CHECK_EQ_INT(d.num_errors, 0);
    diag_free(&d);
    ir_module_destroy(t.m);
}

TEST(use_before_definition) {
    Fixture t;
    setup(&t);
    IrValue *a = ir_build_binary(&t.b, IR_OP_ADD, t.i32, t.x, t.x);
    IrValue *b = ir_build_binary(&t.b, IR_OP_ADD, t.i32, t.x, t.x);
    ir_op_set_operand(a->def, 1, b); /* a uses b, defined after it */
    store(&t, a);
    ret(&t);
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "'add' op operand 1 is used before its definition (or defined in another function)");
    ir_module_destroy(t.m);
}

TEST(value_escapes_region) {
    Fixture t;
    setup(&t);
    IrValue *inner;
    build_if(&t, &inner);
    store(&t, inner); /* defined in the then region, used after the if */
    ret(&t);
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "'store' op operand 1 is defined inside a region that does not contain this op");
    ir_module_destroy(t.m);
}

TEST(region_uses_enclosing_values) {
    /* A nested region may use values of enclosing blocks, defined before the op. */
    Fixture t;
    setup(&t);
    IrValue *before = ir_build_binary(&t.b, IR_OP_ADD, t.i32, t.x, t.x);
    const IrType *types[1] = {t.i32};
    IrOp *op = ir_build_op(&t.b, IR_OP_IF, 1, &t.c, 1, types);
    IrBuilder rb;
    ir_builder_at_end(&rb, t.m, op->regions[0]);
    ir_build(&rb, IR_OP_YIELD, NULL, 1, &before);
    ir_builder_at_end(&rb, t.m, op->regions[1]);
    /* ...but not the op's own results. */
    ir_build(&rb, IR_OP_YIELD, NULL, 1, &op->results[0]);
    store(&t, op->results[0]);
    ret(&t);
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "'yield' op operand 0 is used before its definition (or defined in another function)");
    ir_module_destroy(t.m);
}

TEST(value_of_another_function) {
    Fixture t;
    setup(&t);
    IrFunc *g = ir_func_create(t.m, IR_FUNC_KERNEL, "g");
    IrValue *y = ir_func_add_param(g, t.i32, "y");
    IrBuilder gb;
    ir_builder_at_end(&gb, t.m, g->body);
    ir_build(&gb, IR_OP_RETURN, NULL, 0, NULL);
    store(&t, y);
    ret(&t);
    CHECK_EQ_INT(verify(&t, NULL, 0), 1);
    ir_module_destroy(t.m);
}

TEST(terminators) {
    Fixture t;
    setup(&t);
    store(&t, t.x); /* no return */
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "kernel @k: body must end with 'return'");
    ret(&t);
    CHECK_EQ_INT(verify(&t, NULL, 0), 0);
    /* A region without its yield. */
    ir_op_unlink(t.f->body->last);
    IrValue *inner;
    IrOp *op = build_if(&t, &inner);
    ir_op_unlink(op->regions[1]->last);
    ret(&t);
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "'if' op region 1 must end with 'yield'");
    ir_module_destroy(t.m);
}

TEST(duplicate_function) {
    Fixture t;
    setup(&t);
    ret(&t);
    IrFunc *g = ir_func_create(t.m, IR_FUNC_KERNEL, "k");
    IrBuilder gb;
    ir_builder_at_end(&gb, t.m, g->body);
    ir_build(&gb, IR_OP_RETURN, NULL, 0, NULL);
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "kernel @k: is defined twice");
    ir_module_destroy(t.m);
}

TEST(messages_carry_locations) {
    Fixture t;
    setup(&t);
    static const char text[] = "line one\n  %a = exp %x : i32\n";
    Source src = {"x.tir", text, sizeof text - 1};
    t.b.loc = (SrcLoc){&src, 2, 3};
    IrValue *e = ir_build_unary(&t.b, IR_OP_EXP, t.i32, t.x);
    store(&t, e);
    ret(&t);
    DiagList d;
    diag_init(&d);
    CHECK(!ir_verify(t.m, &d));
    Buf out;
    buf_init(&out);
    diag_render(&d, &out);
    CHECK_EQ_STR(out.data, "x.tir:2:3: error: 'exp' op operands must be floats, got i32\n"
                           "    %a = exp %x : i32\n"
                           "    ^\n");
    buf_free(&out);
    diag_free(&d);
    ir_module_destroy(t.m);
}

TEST(types_and_layouts) {
    Fixture t;
    setup(&t);
    int64_t shape[2] = {16, 8};
    Layout bl = {.kind = LAYOUT_BLOCKED, .rank = 1};
    bl.blocked.spt[0] = 1, bl.blocked.tpw[0] = 32, bl.blocked.wpc[0] = 4;
    const Layout *l1 = ir_layout_intern(t.m, &bl);
    const IrType *bad = ir_type_tile(t.m, t.f32, 2, shape, l1);
    IrValue *k = ir_build_const_float(&t.b, bad, 1.0);
    (void)k;
    ret(&t);
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 1);
    CHECK_EQ_STR(msg, "'constant' op result 0: layout #blocked has rank 1, but the tile has rank 2");
    ir_module_destroy(t.m);
}

TEST(for_loop_rules) {
    Fixture t;
    setup(&t);
    IrValue *zero = ir_build_const_int(&t.b, t.i32, 0);
    IrValue *one = ir_build_const_int(&t.b, t.i32, 1);
    IrValue *ops[4] = {zero, t.x, one, t.x};
    const IrType *types[1] = {t.i32};
    IrOp *loop = ir_build_op(&t.b, IR_OP_FOR, 4, ops, 1, types);
    IrBlock *body = loop->regions[0];
    IrValue *iv = ir_block_add_arg(t.m, body, t.i32, "i");
    IrValue *acc = ir_block_add_arg(t.m, body, t.i32, "acc");
    IrBuilder rb;
    ir_builder_at_end(&rb, t.m, body);
    IrValue *next = ir_build_binary(&rb, IR_OP_ADD, t.i32, acc, iv);
    ir_build(&rb, IR_OP_YIELD, NULL, 1, &next);
    store(&t, loop->results[0]);
    ret(&t);
    CHECK_EQ_INT(verify(&t, NULL, 0), 0);
    /* The body argument is visible inside only. */
    IrBuilder after;
    ir_builder_before(&after, t.f->body->last);
    after.m = t.m;
    IrValue *leak = ir_build_binary(&after, IR_OP_ADD, t.i32, acc, acc);
    (void)leak;
    char msg[256];
    CHECK_EQ_INT(verify(&t, msg, sizeof msg), 2);
    CHECK_EQ_STR(msg, "'add' op operand 0 is defined inside a region that does not contain this op");
    ir_module_destroy(t.m);
}

UNIT_SUITE(verify, valid_module, use_before_definition, value_escapes_region, region_uses_enclosing_values,
           value_of_another_function, terminators, duplicate_function, messages_carry_locations, types_and_layouts,
           for_loop_rules)
