/*
 * test_passes.c — the pass library through its C API: constant folding at
 * every integer width and float precision (read back from the IR, not from
 * text), the pass manager's services (lookup, lists, unknown names, dumps,
 * verification after a pass, internal errors), the default pipeline, and
 * the helpers the passes share (IrMap, ir_op_clone).
 */
#include "driver/driver.h"
#include "unit.h"

#include <math.h>
#include <stdint.h>

/* ---- a kernel computing `op(a, b)` on constants and storing it ---- */

typedef struct Fold {
    IrModule *m;
    IrFunc *f;
    IrOp *store;
} Fold;

/* Builds kernel @k(%p: ptr<T>) { store %p, opc(a, b) } with constants a, b
 * of scalar kind `kind` (floats when is_float), runs canonicalize. */
static Fold fold_binary(IrOpcode opc, IrTypeKind kind, bool is_float, double fa, double fb, int64_t ia, int64_t ib) {
    Fold r;
    r.m = ir_module_create();
    r.f = ir_func_create(r.m, IR_FUNC_KERNEL, "k");
    const IrType *t = ir_type_scalar(r.m, kind);
    IrValue *p = ir_func_add_param(r.f, ir_type_ptr(r.m, t), "p");
    IrBuilder b;
    ir_builder_at_end(&b, r.m, r.f->body);
    IrValue *x = is_float ? ir_build_const_float(&b, t, fa) : ir_build_const_int(&b, t, ia);
    IrValue *y = is_float ? ir_build_const_float(&b, t, fb) : ir_build_const_int(&b, t, ib);
    IrValue *v = ir_build_binary(&b, opc, t, x, y);
    IrValue *ops[2] = {p, v};
    r.store = ir_build_op(&b, IR_OP_STORE, 2, ops, 0, NULL);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    CHECK(ir_verify(r.m, &d));
    CHECK(pass_run(r.m, "canonicalize", &o));
    CHECK(ir_verify(r.m, &d));
    CHECK_EQ_INT(d.num_errors, 0);
    diag_free(&d);
    return r;
}

/* The folded integer, or a sentinel when the op was not folded. */
static int64_t folded_int(IrOpcode opc, IrTypeKind kind, int64_t a, int64_t b, bool *was_folded) {
    Fold r = fold_binary(opc, kind, false, 0, 0, a, b);
    int64_t v = INT64_C(0x5a5a5a5a);
    *was_folded = ir_value_const_int(r.store->operands[1], &v);
    ir_module_destroy(r.m);
    return v;
}

static double folded_float(IrOpcode opc, IrTypeKind kind, double a, double b) {
    Fold r = fold_binary(opc, kind, true, a, b, 0, 0);
    double v = -12345.0;
    CHECK(ir_value_const_number(r.store->operands[1], &v));
    ir_module_destroy(r.m);
    return v;
}

#define CHECK_FOLD(opc, kind, a, b, want)                                                                              \
    do {                                                                                                               \
        bool _ok;                                                                                                      \
        int64_t _v = folded_int(opc, kind, a, b, &_ok);                                                                \
        CHECK(_ok);                                                                                                    \
        CHECK_EQ_INT(_v, want);                                                                                        \
    } while (0)

#define CHECK_NO_FOLD(opc, kind, a, b)                                                                                 \
    do {                                                                                                               \
        bool _ok;                                                                                                      \
        folded_int(opc, kind, a, b, &_ok);                                                                             \
        CHECK(!_ok);                                                                                                   \
    } while (0)

TEST(integer_wraparound) {
    CHECK_FOLD(IR_OP_ADD, IR_I8, 127, 1, -128);
    CHECK_FOLD(IR_OP_SUB, IR_I8, -128, 1, 127);
    CHECK_FOLD(IR_OP_MUL, IR_I8, 16, 16, 0);
    CHECK_FOLD(IR_OP_ADD, IR_I16, 32767, 1, -32768);
    CHECK_FOLD(IR_OP_MUL, IR_I16, 300, 300, 24464);
    CHECK_FOLD(IR_OP_ADD, IR_I32, INT32_MAX, 1, INT32_MIN);
    CHECK_FOLD(IR_OP_MUL, IR_I32, 65536, 65536, 0);
    CHECK_FOLD(IR_OP_ADD, IR_I64, INT64_MAX, 1, INT64_MIN);
    CHECK_FOLD(IR_OP_MUL, IR_I64, INT64_MIN, -1, INT64_MIN);
    CHECK_FOLD(IR_OP_SUB, IR_I64, INT64_MIN, 1, INT64_MAX);
    CHECK_FOLD(IR_OP_SHL, IR_I32, 1, 31, INT32_MIN);
    CHECK_FOLD(IR_OP_SHR, IR_I32, INT32_MIN, 31, -1);
    CHECK_FOLD(IR_OP_SHR, IR_I8, -128, 7, -1);
    CHECK_FOLD(IR_OP_MIN, IR_I16, -5, 3, -5);
    CHECK_FOLD(IR_OP_MAX, IR_I64, -5, 3, 3);
    CHECK_FOLD(IR_OP_XOR, IR_I8, 0x0f, -1, -16);
    /* i1 is a bit: add is xor, and/or are logic. */
    CHECK_FOLD(IR_OP_ADD, IR_I1, 1, 1, 0);
    CHECK_FOLD(IR_OP_OR, IR_I1, 0, 1, 1);
    CHECK_FOLD(IR_OP_AND, IR_I1, 1, 1, 1);
}

TEST(division) {
    CHECK_FOLD(IR_OP_DIV, IR_I32, -7, 2, -3);
    CHECK_FOLD(IR_OP_REM, IR_I32, -7, 2, -1);
    CHECK_FOLD(IR_OP_REM, IR_I32, 7, -2, 1);
    /* INT_MIN / -1 overflows: it wraps (no UB in the compiler), rem is 0. */
    CHECK_FOLD(IR_OP_DIV, IR_I32, INT32_MIN, -1, INT32_MIN);
    CHECK_FOLD(IR_OP_REM, IR_I32, INT32_MIN, -1, 0);
    CHECK_FOLD(IR_OP_DIV, IR_I64, INT64_MIN, -1, INT64_MIN);
    CHECK_FOLD(IR_OP_REM, IR_I64, INT64_MIN, -1, 0);
    CHECK_FOLD(IR_OP_DIV, IR_I8, -128, -1, -128);
    CHECK_FOLD(IR_OP_DIV, IR_I16, -32768, -1, -32768);
    /* By zero: left for the device. x / 1 is x, x rem 1 is 0 even then. */
    CHECK_NO_FOLD(IR_OP_DIV, IR_I32, 7, 0);
    CHECK_NO_FOLD(IR_OP_REM, IR_I64, 7, 0);
    CHECK_NO_FOLD(IR_OP_DIV, IR_I8, 0, 0);
    /* Shifts by the width or more. */
    CHECK_NO_FOLD(IR_OP_SHL, IR_I32, 1, 32);
    CHECK_NO_FOLD(IR_OP_SHR, IR_I8, 1, -1);
}

TEST(float_rounding) {
    /* f16: 0.1 and 0.2 are first rounded to f16 (as the type holds them),
     * their sum rounds again: 0.0999755859375 + 0.199951171875 is a tie
     * between 0.2998046875 and 0.300048828125, broken to even. */
    CHECK(folded_float(IR_OP_ADD, IR_F16, 0.1, 0.2) == 0.2998046875);
    CHECK(folded_float(IR_OP_ADD, IR_F16, 2048.0, 1.0) == 2048.0);
    CHECK(folded_float(IR_OP_ADD, IR_F16, 2048.0, 3.0) == 2052.0);
    CHECK(isinf(folded_float(IR_OP_MUL, IR_F16, 300.0, 300.0)));
    CHECK(folded_float(IR_OP_DIV, IR_F16, 1.0, 3.0) == 0.333251953125);
    /* bf16 keeps 8 bits of mantissa. */
    CHECK(folded_float(IR_OP_ADD, IR_BF16, 256.0, 1.0) == 256.0);
    CHECK(folded_float(IR_OP_DIV, IR_BF16, 1.0, 3.0) == 0.333984375);
    /* f32 is f32 arithmetic; f64 is double. */
    CHECK(folded_float(IR_OP_ADD, IR_F32, 0.1, 0.2) == (double)(0.1f + 0.2f));
    CHECK(folded_float(IR_OP_ADD, IR_F64, 0.1, 0.2) == 0.1 + 0.2);
    CHECK(folded_float(IR_OP_SUB, IR_F32, 16777216.0, -1.0) == 16777216.0);
    CHECK(folded_float(IR_OP_MIN, IR_F32, -1.5, 2.0) == -1.5);
    CHECK(isinf(folded_float(IR_OP_DIV, IR_F32, 1.0, 0.0)));
}

TEST(splat_tiles_fold) {
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    const IrType *f16 = ir_type_scalar(m, IR_F16);
    int64_t shape[2] = {32, 64};
    const IrType *tile = ir_type_tile(m, f16, 2, shape, NULL);
    const IrType *ptrs = ir_type_tile(m, ir_type_ptr(m, f16), 2, shape, NULL);
    IrValue *p = ir_func_add_param(f, ptrs, "p");
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    IrValue *s = ir_build_const_float(&b, f16, 0.1);
    IrValue *x = ir_build_unary(&b, IR_OP_SPLAT, tile, s);
    IrValue *y = ir_build_const_float(&b, tile, 3.0);
    IrValue *z = ir_build_binary(&b, IR_OP_MUL, tile, x, y);
    IrValue *ops[2] = {p, z};
    IrOp *st = ir_build_op(&b, IR_OP_STORE, 2, ops, 0, NULL);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    CHECK(pass_run_list(m, "canonicalize", &o));
    double v;
    CHECK(ir_value_const_number(st->operands[1], &v));
    CHECK(st->operands[1]->type == tile);
    CHECK(v == 0.2998046875); /* f16(f16(0.1) * 3) */
    /* The rest is gone. */
    CHECK(f->body->first == st->operands[1]->def && f->body->first->next == st);
    CHECK(ir_verify(m, &d));
    diag_free(&d);
    ir_module_destroy(m);
}

/* ---- the pass manager ---- */

static bool break_the_ir(IrModule *m, const PassOptions *o) {
    ir_op_unlink(m->first->body->last); /* the kernel's return */
    return true;
}

static bool hit_internal_error(IrModule *m, const PassOptions *o) {
    tc_unreachable("the pass gave up");
}

static IrModule *small_module(void) {
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrValue *p = ir_func_add_param(f, ir_type_ptr(m, i32), "p");
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    IrValue *two = ir_build_const_int(&b, i32, 2);
    IrValue *v = ir_build_binary(&b, IR_OP_ADD, i32, two, two);
    ir_value_set_name(m, v, "v");
    IrValue *ops[2] = {p, v};
    ir_build_op(&b, IR_OP_STORE, 2, ops, 0, NULL);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    return m;
}

TEST(registry) {
    int n;
    const PassInfo *all = pass_all(&n);
    CHECK(n >= 4);
    for (int i = 0; i < n; i++) {
        CHECK(pass_lookup(all[i].name) == &all[i]);
        CHECK(all[i].summary && all[i].summary[0]);
        CHECK(strstr(pass_list_text(), all[i].name) != NULL);
    }
    CHECK(pass_lookup("canonicalize")->fn == pass_canonicalize);
    CHECK(pass_lookup("nope") == NULL);
    CHECK(pass_lookup("") == NULL);
}

TEST(unknown_pass_runs_nothing) {
    IrModule *m = small_module();
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    CHECK(!pass_run_list(m, "canonicalize, cse,bogus", &o));
    CHECK_EQ_INT(d.num_errors, 1);
    CHECK(strncmp(d.head->msg, "unknown pass 'bogus' (passes: inline, canonicalize, cse, dce, ", 62) == 0);
    /* Nothing ran: the add is still there. */
    CHECK(m->first->body->first->next->opc == IR_OP_ADD);
    diag_free(&d);
    /* Spaces and empty entries are fine. */
    CHECK(pass_run_list(m, " canonicalize ,, dce,", &o));
    CHECK(pass_run_list(m, "", &o));
    CHECK_EQ_INT(d.num_errors, 0);
    diag_free(&d);
    ir_module_destroy(m);
}

TEST(print_after) {
    IrModule *m = small_module();
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    Buf out;
    buf_init(&out);
    o.print_out = &out;
    o.print_after = "cse,canonicalize";
    CHECK(pass_run_list(m, "canonicalize,dce", &o));
    CHECK_EQ_STR(out.data, "// -----// IR after canonicalize //----- //\n"
                           "kernel @k(%p: ptr<i32>) {\n"
                           "  %v = constant {value = 4} : i32\n"
                           "  store %p, %v\n"
                           "  return\n"
                           "}\n");
    buf_free(&out);
    o.print_after = NULL;
    o.print_after_all = true;
    o.time_passes = true;
    CHECK(pass_run_list(m, "cse,dce", &o));
    CHECK(strstr(out.data, "// pass cse: ") == out.data);
    CHECK(strstr(out.data, "// -----// IR after cse //----- //\n") != NULL);
    CHECK(strstr(out.data, "// pass dce: ") != NULL);
    CHECK(strstr(out.data, "// -----// IR after dce //----- //\n") != NULL);
    buf_free(&out);
    diag_free(&d);
    ir_module_destroy(m);
}

TEST(verify_after_pass) {
    IrModule *m = small_module();
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    o.verify_each = true;
    PassInfo broken = {"broken", break_the_ir, "drops the return"};
    CHECK(!pass_run_one(m, &broken, &o));
    CHECK(d.num_errors >= 2);
    CHECK_EQ_STR(d.head->msg, "the IR is invalid after pass 'broken':");
    CHECK_EQ_STR(d.head->next->msg, "kernel @k: body must end with 'return'");
    diag_free(&d);
    ir_module_destroy(m);
}

TEST(internal_error_in_pass) {
    IrModule *m = small_module();
    DiagList d;
    diag_init(&d);
    PassOptions o;
    pass_options_init(&o, &d);
    PassInfo bad = {"bad", hit_internal_error, "fails"};
    CHECK(!pass_run_one(m, &bad, &o));
    CHECK_EQ_INT(d.num_errors, 1);
    CHECK(strstr(d.head->msg, "internal error in pass 'bad': internal error at ") == d.head->msg);
    CHECK(strstr(d.head->msg, "the pass gave up") != NULL);
    diag_free(&d);
    ir_module_destroy(m);
}

/* kernel @k(%p) { %r = call @sq(%x) ... } with func @sq(x) = x * x. */
TEST(pipeline_inlines_and_folds) {
    IrModule *m = ir_module_create();
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrFunc *sq = ir_func_create(m, IR_FUNC_FUNC, "sq");
    IrValue *x = ir_func_add_param(sq, i32, "x");
    ir_func_set_results(sq, 1, &i32);
    IrBuilder b;
    ir_builder_at_end(&b, m, sq->body);
    IrValue *xx = ir_build_binary(&b, IR_OP_MUL, i32, x, x);
    ir_build(&b, IR_OP_RETURN, NULL, 1, &xx);

    IrFunc *k = ir_func_create(m, IR_FUNC_KERNEL, "k");
    IrValue *p = ir_func_add_param(k, ir_type_ptr(m, i32), "p");
    ir_builder_at_end(&b, m, k->body);
    IrValue *seven = ir_build_const_int(&b, i32, 7);
    IrOp *call = ir_build_op(&b, IR_OP_CALL, 1, &seven, 1, &i32);
    ir_op_set_symbol(m, call, "callee", "sq");
    IrOp *call2 = ir_build_op(&b, IR_OP_CALL, 1, &seven, 1, &i32);
    ir_op_set_symbol(m, call2, "callee", "sq");
    IrValue *sum = ir_build_binary(&b, IR_OP_ADD, i32, call->results[0], call2->results[0]);
    IrValue *ops[2] = {p, sum};
    IrOp *st = ir_build_op(&b, IR_OP_STORE, 2, ops, 0, NULL);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);

    DiagList d;
    diag_init(&d);
    CHECK(ir_verify(m, &d));
    PassOptions o;
    pass_options_init(&o, &d);
    o.verify_each = true;
    CHECK(drv_run_cleanup_passes(m, &o));
    CHECK_EQ_INT(d.num_errors, 0);
    CHECK(m->first == k && m->last == k); /* @sq is gone */
    int64_t v;
    CHECK(ir_value_const_int(st->operands[1], &v) && v == 98);
    CHECK(k->body->first == st->operands[1]->def && k->body->first->next == st);
    diag_free(&d);
    ir_module_destroy(m);
}

TEST(recursion_is_an_error) {
    IrModule *m = ir_module_create();
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrFunc *f = ir_func_create(m, IR_FUNC_FUNC, "f");
    IrValue *x = ir_func_add_param(f, i32, "x");
    ir_func_set_results(f, 1, &i32);
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    IrOp *call = ir_build_op(&b, IR_OP_CALL, 1, &x, 1, &i32);
    ir_op_set_symbol(m, call, "callee", "f");
    ir_build(&b, IR_OP_RETURN, NULL, 1, &call->results[0]);
    DiagList d;
    diag_init(&d);
    CHECK(ir_verify(m, &d));
    PassOptions o;
    pass_options_init(&o, &d);
    CHECK(!pass_run(m, "inline", &o));
    CHECK_EQ_INT(d.num_errors, 1);
    CHECK_EQ_STR(d.head->msg, "recursive call to @f");
    diag_free(&d);
    ir_module_destroy(m);
}

/* ---- shared helpers ---- */

TEST(ir_map) {
    IrModule *m = ir_module_create();
    IrMap map;
    ir_map_init(&map, &m->arena);
    static int keys[1000];
    CHECK(ir_map_get(&map, &keys[0]) == NULL);
    for (int i = 0; i < 1000; i++)
        ir_map_put(&map, &keys[i], &keys[(i + 1) % 1000]);
    ir_map_put(&map, &keys[5], &keys[5]);
    CHECK_EQ_INT(map.count, 1000);
    bool all = true;
    for (int i = 0; i < 1000; i++)
        all &= ir_map_get(&map, &keys[i]) == (i == 5 ? &keys[5] : &keys[(i + 1) % 1000]);
    CHECK(all);
    ir_module_destroy(m);
}

TEST(clone_keeps_edges) {
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrValue *n = ir_func_add_param(f, i32, "n");
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    IrValue *zero = ir_build_const_int(&b, i32, 0);
    IrValue *ops[4] = {zero, n, n, zero};
    IrOp *loop = ir_build_op(&b, IR_OP_FOR, 4, ops, 1, &i32);
    IrValue *iv = ir_block_add_arg(m, loop->regions[0], i32, "i");
    IrValue *acc = ir_block_add_arg(m, loop->regions[0], i32, "acc");
    IrBuilder rb;
    ir_builder_at_end(&rb, m, loop->regions[0]);
    IrValue *next = ir_build_binary(&rb, IR_OP_ADD, i32, acc, iv);
    ir_build(&rb, IR_OP_YIELD, NULL, 1, &next);
    ir_op_set_int(m, loop, "tag", 3);

    IrMap map;
    ir_map_init(&map, &m->arena);
    ir_map_put(&map, n, zero); /* operands are mapped */
    IrOp *copy = ir_op_clone(m, loop, &map);
    CHECK(copy != loop && copy->opc == IR_OP_FOR && !copy->parent);
    CHECK(copy->operands[1] == zero && copy->operands[0] == zero);
    CHECK(ir_map_get(&map, loop->results[0]) == copy->results[0]);
    CHECK_EQ_INT(ir_op_get_int(copy, "tag", 0), 3);
    IrBlock *body = copy->regions[0];
    CHECK(body != loop->regions[0] && body->parent_op == copy && body->num_args == 2);
    IrOp *add = body->first;
    CHECK(add->opc == IR_OP_ADD && add->operands[0] == body->args[1] && add->operands[1] == body->args[0]);
    CHECK(add->results[0] != next && body->last->operands[0] == add->results[0]);
    CHECK_EQ_STR(body->args[1]->name, "acc");
    /* Placed in the function, the copy verifies. */
    ir_op_insert_after(loop, copy);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    CHECK(body->func == f);
    DiagList d;
    diag_init(&d);
    CHECK(ir_verify(m, &d));
    diag_free(&d);
    ir_module_destroy(m);
}

UNIT_SUITE(passes, integer_wraparound, division, float_rounding, splat_tiles_fold, registry, unknown_pass_runs_nothing,
           print_after, verify_after_pass, internal_error_in_pass, pipeline_inlines_and_folds, recursion_is_an_error,
           ir_map, clone_keeps_edges)
