/*
 * test_axis_info.c — the axis info analysis (passes/axis_info.c): facts on
 * IR built with the builder and parsed from text, and a randomized check
 * that every fact it claims holds on the values a small interpreter
 * computes (soundness: the analysis may know little, never something false).
 */
#include "passes/passes.h"
#include "ir_test_util.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- helpers ---- */

typedef struct Found {
    const char *name;
    IrValue *v;
} Found;

static void find_op(IrOp *op, void *ctx) {
    Found *f = ctx;
    for (int i = 0; i < op->num_results; i++)
        if (op->results[i]->name && strcmp(op->results[i]->name, f->name) == 0)
            f->v = op->results[i];
    for (int r = 0; r < op->num_regions; r++)
        for (int i = 0; i < op->regions[r]->num_args; i++)
            if (op->regions[r]->args[i]->name && strcmp(op->regions[r]->args[i]->name, f->name) == 0)
                f->v = op->regions[r]->args[i];
}

static IrValue *value_named(IrFunc *fn, const char *name) {
    Found f = {name, NULL};
    for (int i = 0; i < fn->body->num_args; i++)
        if (fn->body->args[i]->name && strcmp(fn->body->args[i]->name, name) == 0)
            return fn->body->args[i];
    ir_walk_func(fn, find_op, &f);
    return f.v;
}

static IrModule *parse(const char *text, Source *src) {
    src->name = "<test>";
    src->text = text;
    src->len = strlen(text);
    DiagList d;
    diag_init(&d);
    IrModule *m = ir_parse(src, &d);
    CHECK(m != NULL);
    CHECK(m && ir_verify(m, &d));
    unit_print_diagnostics(&d);
    diag_free(&d);
    return m;
}

#define CHECK_FACTS(map, fn, name, dim, c, d, k)                                                                       \
    do {                                                                                                               \
        IrValue *fv_ = value_named(fn, name);                                                                          \
        CHECK(fv_ != NULL);                                                                                            \
        if (fv_) {                                                                                                     \
            const AxisInfo *fa_ = axis_info_get(map, fv_);                                                             \
            CHECK_EQ_INT(fa_->contiguity[dim], c);                                                                     \
            CHECK_EQ_INT(fa_->divisibility[dim], d);                                                                   \
            CHECK_EQ_INT(fa_->constancy[dim], k);                                                                      \
        }                                                                                                              \
    } while (0)

/* ---- facts on built IR ---- */

TEST(built_row_pointers) {
    IrModule *m = ir_module_create();
    IrFunc *f = ir_func_create(m, IR_FUNC_KERNEL, "k");
    const IrType *f16 = ir_type_scalar(m, IR_F16), *i32 = ir_type_scalar(m, IR_I32);
    IrValue *p = ir_func_add_param(f, ir_type_ptr(m, f16), "p");
    IrAttr div = {.name = "divisibility", .kind = IR_ATTR_INT, .i = 16};
    ir_attrs_set(m, &p->num_attrs, &p->attrs, &div);
    IrBuilder b;
    ir_builder_at_end(&b, m, f->body);
    int64_t shape[1] = {256};
    const IrType *ti = ir_type_tile(m, i32, 1, shape, NULL);
    const IrType *tp = ir_type_tile(m, ir_type_ptr(m, f16), 1, shape, NULL);
    IrValue *r = ir_build(&b, IR_OP_ARANGE, ti, 0, NULL);
    ir_op_set_int(m, r->def, "start", 0);
    ir_op_set_int(m, r->def, "end", 256);
    IrValue *c8 = ir_build_const_int(&b, i32, 8);
    IrValue *off = ir_build_binary(&b, IR_OP_ADD, i32, c8, c8); /* 16, folded by the analysis */
    IrValue *sp = ir_build_unary(&b, IR_OP_SPLAT, tp, p);
    IrValue *so = ir_build_unary(&b, IR_OP_SPLAT, ti, off);
    IrValue *idx = ir_build_binary(&b, IR_OP_ADD, ti, r, so);
    IrValue *ptrs = ir_build_binary(&b, IR_OP_ADDPTR, tp, sp, idx);
    ir_build(&b, IR_OP_RETURN, NULL, 0, NULL);
    DiagList d;
    diag_init(&d);
    CHECK(ir_verify(m, &d));
    diag_free(&d);

    AxisInfoMap *map = axis_info_run(f);
    const AxisInfo *a = axis_info_get(map, off);
    CHECK(a->is_const && a->const_value == 16);
    CHECK_EQ_INT(a->divisibility[0], 16);
    a = axis_info_get(map, idx);
    CHECK_EQ_INT(a->rank, 1);
    CHECK_EQ_INT(a->contiguity[0], 256);
    CHECK_EQ_INT(a->divisibility[0], 16);
    CHECK_EQ_INT(a->constancy[0], 1);
    a = axis_info_get(map, ptrs);
    CHECK_EQ_INT(a->contiguity[0], 256);
    CHECK_EQ_INT(a->divisibility[0], 16); /* gcd(16 bytes, 16 elements * 2 bytes) */
    Buf out;
    buf_init(&out);
    axis_info_print(&out, a);
    CHECK_EQ_STR(out.data, "{contiguity = [256], divisibility = [16], constancy = [1]}");
    buf_free(&out);
    axis_info_free(map);
    ir_module_destroy(m);
}

/* ---- facts on parsed IR ---- */

static const char *const row_text =
    "kernel @k(%x: ptr<f32> {divisibility = 16}, %stride: i64 {divisibility = 8}, %n: i32 {divisibility = 4}) {\n"
    "  %pid = program_id {axis = 0} : i32\n"
    "  %row = cast %pid : i64\n"
    "  %ro = mul %row, %stride : i64\n"
    "  %base = addptr %x, %ro : ptr<f32>\n"
    "  %cols = arange {start = 0, end = 128} : tile<128xi32>\n"
    "  %bs = splat %base : tile<128xptr<f32>>\n"
    "  %ptrs = addptr %bs, %cols : tile<128xptr<f32>>\n"
    "  %ns = splat %n : tile<128xi32>\n"
    "  %mask = cmp %cols, %ns {pred = lt} : tile<128xi1>\n"
    "  %gt = cmp %ns, %cols {pred = gt} : tile<128xi1>\n"
    "  %eq = cmp %cols, %ns {pred = eq} : tile<128xi1>\n"
    "  %c16 = constant {value = 16} : tile<128xi32>\n"
    "  %blk = div %cols, %c16 : tile<128xi32>\n"
    "  %lane = rem %cols, %c16 : tile<128xi32>\n"
    "  %c3 = constant {value = 3} : i32\n"
    "  %sh = shl %n, %c3 : i32\n"
    "  return\n"
    "}\n";

TEST(parsed_row) {
    Source src;
    IrModule *m = parse(row_text, &src);
    if (!m)
        return;
    IrFunc *f = m->first;
    AxisInfoMap *map = axis_info_run(f);
    CHECK_FACTS(map, f, "ro", 0, 1, 8, 1);
    CHECK_FACTS(map, f, "base", 0, 1, 16, 1); /* gcd(16, 8 * 4 bytes) */
    CHECK_FACTS(map, f, "ptrs", 0, 128, 16, 1);
    CHECK_FACTS(map, f, "mask", 0, 1, 1, 4); /* n divisible by 4: runs of 4 share the predicate */
    CHECK_FACTS(map, f, "gt", 0, 1, 1, 4);   /* n > cols is cols < n */
    CHECK_FACTS(map, f, "eq", 0, 1, 1, 1);   /* eq has no such rule */
    CHECK_FACTS(map, f, "blk", 0, 1, 1, 16);
    CHECK_FACTS(map, f, "lane", 0, 16, 16, 1);
    CHECK_FACTS(map, f, "sh", 0, 1, 32, 1);
    axis_info_free(map);
    ir_module_destroy(m);
}

static const char *const loop_text = "kernel @k(%p: ptr<f16> {divisibility = 16}, %n: i32) {\n"
                                     "  %c0 = constant {value = 0} : i32\n"
                                     "  %c64 = constant {value = 64} : i32\n"
                                     "  %cols = arange {start = 0, end = 64} : tile<64xi32>\n"
                                     "  %ps = splat %p : tile<64xptr<f16>>\n"
                                     "  %p0 = addptr %ps, %cols : tile<64xptr<f16>>\n"
                                     "  %step = constant {value = 8} : tile<64xi32>\n"
                                     "  %r = for %c0, %n, %c64, %p0 : tile<64xptr<f16>> {\n"
                                     "  ^bb(%i: i32, %cur: tile<64xptr<f16>>):\n"
                                     "    %next = addptr %cur, %step : tile<64xptr<f16>>\n"
                                     "    yield %next\n"
                                     "  }\n"
                                     "  return\n"
                                     "}\n";

/* The carried pointer moves by 8 f16 = 16 bytes: the join of 16-byte
 * aligned values stays 16-byte aligned, and contiguous. */
TEST(loop_carried) {
    Source src;
    IrModule *m = parse(loop_text, &src);
    if (!m)
        return;
    IrFunc *f = m->first;
    AxisInfoMap *map = axis_info_run(f);
    CHECK_FACTS(map, f, "i", 0, 1, 64, 1);
    CHECK_FACTS(map, f, "cur", 0, 64, 16, 1);
    CHECK_FACTS(map, f, "r", 0, 64, 16, 1);
    axis_info_free(map);
    ir_module_destroy(m);
}

/* ---- soundness on random programs ---- */

enum { N = 32, MAX_VALUES = 40 };

typedef struct Val {
    bool tile;
    int64_t v[N]; /* element i (scalars use v[0]) */
} Val;

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static bool fact_holds(const Val *x, const AxisInfo *a, char *why, size_t why_len) {
    int n = x->tile ? N : 1;
    int64_t c = a->contiguity[0], d = a->divisibility[0], k = a->constancy[0];
    if (c < 1 || d < 1 || k < 1 || n % c || n % k) {
        snprintf(why, why_len, "facts out of range");
        return false;
    }
    for (int s = 0; s < n; s += (int)c) {
        if (x->v[s] % d != 0) {
            snprintf(why, why_len, "element %d = %lld not divisible by %lld", s, (long long)x->v[s], (long long)d);
            return false;
        }
        for (int i = s + 1; i < s + c; i++)
            if (x->v[i] != x->v[i - 1] + 1) {
                snprintf(why, why_len, "run at %d not contiguous", s);
                return false;
            }
    }
    for (int s = 0; s < n; s += (int)k)
        for (int i = s + 1; i < s + k; i++)
            if (x->v[i] != x->v[s]) {
                snprintf(why, why_len, "run at %d not constant", s);
                return false;
            }
    return true;
}

/* A random straight-line kernel over non-negative i32 tiles of N elements
 * (div and rem assume non-negative operands, as the analysis does). Values:
 * %v0.. ; params %a (divisible by 4) and %b (by 16). */
static void random_program(Buf *text, int num_ops) {
    buf_printf(text, "kernel @k(%%a: i32 {divisibility = 4}, %%b: i32 {divisibility = 16}) {\n");
    buf_printf(text, "  %%v0 = arange {start = 0, end = %d} : tile<%dxi32>\n", N, N);
    buf_printf(text, "  %%v1 = splat %%a : tile<%dxi32>\n", N);
    buf_printf(text, "  %%v2 = splat %%b : tile<%dxi32>\n", N);
    int count = 3;
    static const int consts[] = {1, 2, 3, 4, 8, 16, 6, 32};
    for (int i = 0; i < num_ops; i++) {
        int x = (int)(rnd() % (unsigned)count), y = (int)(rnd() % (unsigned)count);
        switch (rnd() % 9) {
        case 0: buf_printf(text, "  %%v%d = add %%v%d, %%v%d : tile<%dxi32>\n", count, x, y, N); break;
        case 1: buf_printf(text, "  %%v%d = mul %%v%d, %%v%d : tile<%dxi32>\n", count, x, y, N); break;
        case 2:
        case 3: {
            int c = consts[rnd() % 8];
            buf_printf(text, "  %%c%d = constant {value = %d} : tile<%dxi32>\n", count, c, N);
            buf_printf(text, "  %%v%d = %s %%v%d, %%c%d : tile<%dxi32>\n", count, rnd() % 2 ? "div" : "rem", x, count,
                       N);
            break;
        }
        case 4: {
            int c = consts[rnd() % 8];
            buf_printf(text, "  %%c%d = constant {value = %d} : tile<%dxi32>\n", count, c, N);
            buf_printf(text, "  %%v%d = add %%v%d, %%c%d : tile<%dxi32>\n", count, x, count, N);
            break;
        }
        case 5: {
            int c = consts[rnd() % 8];
            buf_printf(text, "  %%c%d = constant {value = %d} : tile<%dxi32>\n", count, c, N);
            buf_printf(text, "  %%v%d = mul %%v%d, %%c%d : tile<%dxi32>\n", count, x, count, N);
            break;
        }
        case 6: {
            static const char *const preds[] = {"lt", "le", "gt", "ge"};
            int z = (int)(rnd() % (unsigned)count);
            buf_printf(text, "  %%m%d = cmp %%v%d, %%v%d {pred = %s} : tile<%dxi1>\n", count, x, y, preds[rnd() % 4],
                       N);
            buf_printf(text, "  %%v%d = select %%m%d, %%v%d, %%v%d : tile<%dxi32>\n", count, count, x, z, N);
            break;
        }
        case 7: buf_printf(text, "  %%v%d = max %%v%d, %%v%d : tile<%dxi32>\n", count, x, y, N); break;
        default: {
            int c = 1 << (rnd() % 4);
            buf_printf(text, "  %%c%d = constant {value = %d} : tile<%dxi32>\n", count, c, N);
            buf_printf(text, "  %%v%d = %s %%v%d, %%c%d : tile<%dxi32>\n", count, rnd() % 2 ? "shl" : "shr", x, count,
                       N);
            break;
        }
        }
        count++;
    }
    buf_printf(text, "  return\n}\n");
}

/* Evaluates the kernel's ops in order; values live in vals[] by op. */
typedef struct Interp {
    IrMap map; /* IrValue* -> Val* */
    Arena arena;
} Interp;

static Val *val_of(Interp *in, const IrValue *v) {
    return ir_map_get(&in->map, v);
}

static bool eval(Interp *in, IrOp *op) {
    if (op->opc == IR_OP_RETURN)
        return true;
    Val *r = ARENA_NEW(&in->arena, Val);
    r->tile = op->results[0]->type->kind == IR_TILE;
    int n = r->tile ? N : 1;
    Val *a = op->num_operands > 0 ? val_of(in, op->operands[0]) : NULL;
    Val *b = op->num_operands > 1 ? val_of(in, op->operands[1]) : NULL;
    Val *c = op->num_operands > 2 ? val_of(in, op->operands[2]) : NULL;
    for (int i = 0; i < n; i++) {
        int64_t x = a ? a->v[a->tile ? i : 0] : 0, y = b ? b->v[b->tile ? i : 0] : 0;
        int64_t out;
        switch (op->opc) {
        case IR_OP_ARANGE: out = ir_op_get_int(op, "start", 0) + i; break;
        case IR_OP_CONSTANT: out = ir_op_get_int(op, "value", 0); break;
        case IR_OP_SPLAT: out = x; break;
        case IR_OP_ADD: out = x + y; break;
        case IR_OP_MUL: out = x * y; break;
        case IR_OP_DIV: out = x / y; break;
        case IR_OP_REM: out = x % y; break;
        case IR_OP_MAX: out = x > y ? x : y; break;
        case IR_OP_SHL: out = x << y; break;
        case IR_OP_SHR: out = x >> y; break;
        case IR_OP_CMP: {
            const char *p = ir_op_get_word(op, "pred");
            out = strcmp(p, "lt") == 0 ? x < y : strcmp(p, "le") == 0 ? x <= y : strcmp(p, "gt") == 0 ? x > y : x >= y;
            break;
        }
        case IR_OP_SELECT: out = x ? y : c->v[c->tile ? i : 0]; break;
        default: return false;
        }
        if (out > INT32_MAX || out < 0)
            return false; /* out of the non-negative i32 range the rules assume */
        r->v[i] = out;
    }
    ir_map_put(&in->map, op->results[0], r);
    return true;
}

TEST(random_programs_are_sound) {
    int checked = 0, failures = 0;
    for (int iter = 0; iter < 400 && failures < 3; iter++) {
        Buf text;
        buf_init(&text);
        random_program(&text, 12);
        Source src = {"<random>", text.data, text.len};
        DiagList d;
        diag_init(&d);
        IrModule *m = ir_parse(&src, &d);
        CHECK(m && ir_verify(m, &d));
        diag_free(&d);
        if (!m) {
            buf_free(&text);
            continue;
        }
        IrFunc *f = m->first;
        AxisInfoMap *map = axis_info_run(f);
        for (int trial = 0; trial < 8 && failures < 3; trial++) {
            Interp in;
            arena_init(&in.arena);
            ir_map_init(&in.map, &in.arena);
            Val *pa = ARENA_NEW(&in.arena, Val), *pb = ARENA_NEW(&in.arena, Val);
            pa->v[0] = 4 * (int64_t)(rnd() % 64);
            pb->v[0] = 16 * (int64_t)(rnd() % 64);
            ir_map_put(&in.map, f->body->args[0], pa);
            ir_map_put(&in.map, f->body->args[1], pb);
            for (IrOp *op = f->body->first; op; op = op->next) {
                if (!eval(&in, op))
                    break; /* the rest depends on a value out of range */
                if (op->opc == IR_OP_RETURN)
                    break;
                char why[128];
                const AxisInfo *a = axis_info_get(map, op->results[0]);
                checked++;
                if (!fact_holds(val_of(&in, op->results[0]), a, why, sizeof why)) {
                    Buf facts;
                    buf_init(&facts);
                    axis_info_print(&facts, a);
                    fprintf(stderr, "unsound fact for op %s %s: %s\n%s", ir_op_info[op->opc].name, facts.data, why,
                            text.data);
                    buf_free(&facts);
                    failures++;
                    break;
                }
            }
            arena_free(&in.arena);
        }
        axis_info_free(map);
        ir_module_destroy(m);
        buf_free(&text);
    }
    CHECK_EQ_INT(failures, 0);
    CHECK(checked > 1000);
}

UNIT_SUITE(axis_info, built_row_pointers, parsed_row, loop_carried, random_programs_are_sound)
