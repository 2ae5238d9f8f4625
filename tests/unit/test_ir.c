/*
 * test_ir.c — the IR core: interning of types and layouts, the builder,
 * attributes, uses, and the arithmetic that constant folding relies on.
 */
#include "ir/ir.h"
#include "unit.h"

#include <math.h>

TEST(types_are_interned) {
    IrModule *m = ir_module_create();
    const IrType *f16 = ir_type_scalar(m, IR_F16);
    CHECK(f16 == ir_type_scalar(m, IR_F16));
    CHECK(f16 != ir_type_scalar(m, IR_BF16));
    int64_t s[2] = {64, 32};
    const IrType *t = ir_type_tile(m, f16, 2, s, NULL);
    CHECK(t == ir_type_tile(m, f16, 2, s, NULL));
    int64_t s2[2] = {32, 64};
    CHECK(t != ir_type_tile(m, f16, 2, s2, NULL));
    CHECK(ir_type_ptr(m, f16) == ir_type_ptr(m, ir_type_scalar(m, IR_F16)));
    CHECK_EQ_INT(ir_type_numel(t), 64 * 32);
    CHECK(ir_type_elem(t) == f16);
    const IrType *ti = ir_type_with_elem(m, t, ir_type_scalar(m, IR_I32));
    CHECK(ti->kind == IR_TILE && ti->shape[0] == 64 && ti->elem->kind == IR_I32);
    /* Many distinct types force the table to grow; all stay unique. */
    const IrType *seen[300];
    for (int i = 0; i < 300; i++) {
        int64_t sh[1] = {i + 1};
        seen[i] = ir_type_tile(m, f16, 1, sh, NULL);
    }
    for (int i = 0; i < 300; i++) {
        int64_t sh[1] = {i + 1};
        CHECK(seen[i] == ir_type_tile(m, f16, 1, sh, NULL));
    }
    ir_module_destroy(m);
}

TEST(layouts_are_interned) {
    IrModule *m = ir_module_create();
    Layout b = {.kind = LAYOUT_BLOCKED, .rank = 2};
    b.blocked.spt[0] = 1, b.blocked.spt[1] = 4;
    b.blocked.tpw[0] = 2, b.blocked.tpw[1] = 16;
    b.blocked.wpc[0] = 4, b.blocked.wpc[1] = 1;
    b.blocked.order[0] = 1, b.blocked.order[1] = 0;
    const Layout *l1 = ir_layout_intern(m, &b);
    CHECK(l1 == ir_layout_intern(m, &b));
    Layout s = {.kind = LAYOUT_SLICE, .rank = 1};
    s.slice.dim = 1;
    s.slice.parent = l1;
    const Layout *sl = ir_layout_intern(m, &s);
    CHECK(sl != l1);
    Buf out;
    buf_init(&out);
    ir_layout_print(&out, sl);
    CHECK_EQ_STR(out.data, "#slice<dim = 1, parent = #blocked<spt = [1, 4], tpw = [2, 16], wpc = [4, 1], order = [1, 0]>>");
    buf_free(&out);
    ir_module_destroy(m);
}

TEST(builder_and_uses) {
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrValue *a = ir_func_add_param(f, i32, "a");
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    IrValue *c = ir_build_const_int(&b, i32, 7);
    IrValue *s = ir_build_binary(&b, IR_OP_ADD, i32, a, c);
    IrValue *t = ir_build_binary(&b, IR_OP_MUL, i32, s, s);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    CHECK_EQ_INT(ir_count_uses(f->body, s), 2);
    int64_t v;
    CHECK(ir_value_const_int(c, &v) && v == 7);
    CHECK(!ir_value_const_int(s, &v));
    ir_replace_all_uses(f->body, s, a);
    CHECK_EQ_INT(ir_count_uses(f->body, s), 0);
    CHECK(t->def->operands[0] == a && t->def->operands[1] == a);
    ir_op_unlink(s->def);
    CHECK(f->body->first == c->def && c->def->next == t->def);
    CHECK(ir_op_func(t->def) == f);
    /* Attributes replace by name. */
    ir_op_set_int(m, t->def, "x", 1);
    ir_op_set_int(m, t->def, "x", 2);
    CHECK_EQ_INT(t->def->num_attrs, 1);
    CHECK_EQ_INT(ir_op_get_int(t->def, "x", 0), 2);
    ir_value_set_name(m, t, "123");
    CHECK(t->name == NULL);
    ir_value_set_name(m, t, "acc");
    CHECK_EQ_STR(t->name, "acc");
    IrOpcode opc;
    CHECK(ir_opcode_from_name("expand_dims", 11, &opc) && opc == IR_OP_EXPAND_DIMS);
    CHECK(!ir_opcode_from_name("expand", 6, &opc));
    ir_module_destroy(m);
}

TEST(integer_folding) {
    int64_t r;
    CHECK(ir_fold_int_binary(IR_OP_ADD, 32, INT32_MAX, 1, &r) && r == INT32_MIN);
    CHECK(ir_fold_int_binary(IR_OP_MUL, 8, 16, 16, &r) && r == 0);
    CHECK(ir_fold_int_binary(IR_OP_ADD, 64, INT64_MAX, 1, &r) && r == INT64_MIN);
    CHECK(!ir_fold_int_binary(IR_OP_DIV, 32, 1, 0, &r));
    CHECK(!ir_fold_int_binary(IR_OP_REM, 32, 1, 0, &r));
    CHECK(ir_fold_int_binary(IR_OP_DIV, 32, INT32_MIN, -1, &r) && r == INT32_MIN);
    CHECK(ir_fold_int_binary(IR_OP_DIV, 64, INT64_MIN, -1, &r) && r == INT64_MIN);
    CHECK(ir_fold_int_binary(IR_OP_REM, 64, INT64_MIN, -1, &r) && r == 0);
    CHECK(ir_fold_int_binary(IR_OP_DIV, 32, -7, 2, &r) && r == -3);
    CHECK(ir_fold_int_binary(IR_OP_REM, 32, -7, 2, &r) && r == -1);
    CHECK(ir_fold_int_binary(IR_OP_SHR, 32, -8, 1, &r) && r == -4);
    CHECK(ir_fold_int_binary(IR_OP_SHL, 16, 1, 15, &r) && r == INT16_MIN);
    CHECK(!ir_fold_int_binary(IR_OP_SHL, 32, 1, 32, &r));
    CHECK_EQ_INT(ir_int_wrap(255, 8), -1);
    CHECK_EQ_INT(ir_int_wrap(3, 1), 1);
    CHECK(ir_fold_cmp("lt", 0, 0, true, -1, 0));
    CHECK(!ir_fold_cmp("lt", NAN, 1, false, 0, 0));
    CHECK(ir_fold_cmp("ne", NAN, NAN, false, 0, 0));
}

TEST(float_rounding) {
    CHECK(ir_float_round(IR_F16, 1.0 / 3.0) == 0.333251953125);
    CHECK(ir_float_round(IR_F16, 65504.0) == 65504.0);
    CHECK(isinf(ir_float_round(IR_F16, 70000.0)));
    CHECK(ir_float_round(IR_F16, 1e-8) == 0.0);                  /* below half the smallest subnormal */
    CHECK(ir_float_round(IR_F16, 6e-8) == ldexp(1.0, -24));     /* smallest subnormal */
    CHECK(ir_float_round(IR_BF16, 1.0 + 1.0 / 256) == 1.0);      /* tie rounds to even */
    CHECK(ir_float_round(IR_BF16, 1.0 + 3.0 / 256) == 1.015625);
    CHECK(ir_float_round(IR_F32, 0.1) == (double)0.1f);
    CHECK(isinf(ir_float_round(IR_F32, 1e39)));
    CHECK(isnan(ir_float_round(IR_F16, NAN)));
    CHECK(ir_float_round(IR_F64, 0.1) == 0.1);
}

/* The value of fp8 code c, from the format's definition alone. */
static double f8_ref_value(bool e4, unsigned c) {
    unsigned e = (c & 0x7F) >> (e4 ? 3 : 2), m = c & (e4 ? 7 : 3);
    double s = c & 0x80 ? -1 : 1;
    if (e4 && (c & 0x7F) == 0x7F)
        return NAN;
    if (!e4 && e == 31)
        return m ? NAN : s * INFINITY;
    return e4 ? s * (e ? ldexp(8 + m, (int)e - 10) : ldexp(m, -9))
              : s * (e ? ldexp(4 + m, (int)e - 17) : ldexp(m, -16));
}

/* fp8 constants: every code decodes to its value and encodes back (NaNs to
 * 0x7F, e5m2's infinities to the saturated maximum); rounding is to the
 * nearest code, ties to the even one, with saturation: checked against a
 * search over every code for midpoints, neighbours of midpoints and
 * values past the maximum. */
TEST(fp8_rounding) {
    for (int f = 0; f < 2; f++) {
        bool e4 = f == 0;
        IrTypeKind k = e4 ? IR_F8E4M3 : IR_F8E5M2;
        double max = e4 ? 448 : 57344;
        for (unsigned c = 0; c < 256; c++) {
            double v = f8_ref_value(e4, c), got = ir_f8_value(k, (uint8_t)c);
            CHECK(isnan(v) ? isnan(got) : got == v && !signbit(got) == !signbit(v));
            unsigned want = isnan(v) ? 0x7F : isinf(v) ? (c & 0x80) | (e4 ? 0x7E : 0x7B) : c;
            CHECK_EQ_INT(ir_f8_bits(k, v), want);
        }
        /* midpoints between neighbouring codes, and values just beside them */
        for (unsigned c = 0; c < 0x7F; c++) {
            double lo = f8_ref_value(e4, c), hi = f8_ref_value(e4, c + 1);
            if (!isfinite(hi))
                break;
            double mid = (lo + hi) / 2;
            unsigned even = (c & 1) ? c + 1 : c;
            CHECK_EQ_INT(ir_f8_bits(k, mid), even);
            CHECK_EQ_INT(ir_f8_bits(k, -mid), even | 0x80);
            CHECK_EQ_INT(ir_f8_bits(k, nextafter(mid, 0)), c);
            CHECK_EQ_INT(ir_f8_bits(k, nextafter(mid, INFINITY)), c + 1);
            CHECK(ir_float_round(k, mid) == f8_ref_value(e4, even));
        }
        CHECK(ir_float_round(k, 1e30) == max);
        CHECK(ir_float_round(k, -INFINITY) == -max);
        CHECK(isnan(ir_float_round(k, NAN)));
        CHECK_EQ_INT(ir_f8_bits(k, max * 1.07), e4 ? 0x7E : 0x7B); /* would round past the maximum */
        CHECK_EQ_INT(ir_f8_bits(k, -0.0), 0x80);
        CHECK_EQ_INT(ir_f8_bits(k, NAN), 0x7F);
    }
}

UNIT_SUITE(ir, types_are_interned, layouts_are_interned, builder_and_uses, integer_folding, float_rounding,
           fp8_rounding)
