/*
 * test_random.c — rand, randn and randint as the front end expands them
 * (frontend/builtins_random.c), checked without a GPU: the kernels' IR is
 * run by a small evaluator of scalar IR (the ops the expansion uses, each
 * with the IR's semantics: ints wrap in their width, f32 ops round once)
 * and compared with the C reference (tests/gpu/philox_ref.h), whose Philox
 * is checked first against Random123's known answers. The same kernels run
 * again after canonicalize, cse and dce, which fold and share what the
 * expansion leaves: the numbers must not change.
 */
#include "../gpu/philox_ref.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- an evaluator of scalar IR ---- */

typedef struct EvVal {
    int64_t i; /* ints; pointers: the offset in elements */
    double f;  /* floats */
    int param; /* pointers: 1 + the pointer parameter's index */
} EvVal;

/* What a run stored: at most 8 elements through each of 2 pointer
 * parameters. */
typedef struct EvOut {
    EvVal mem[2][8];
    bool written[2][8];
    bool ok; /* every op was understood */
} EvOut;

static EvVal *ev_get(IrMap *vals, const IrValue *v) {
    EvVal *x = ir_map_get(vals, v);
    tc_assert(x != NULL);
    return x;
}

static double ev_round(const IrType *t, double v) {
    return ir_float_round(t->kind, v);
}

static bool ev_op(Arena *a, IrMap *vals, IrOp *op, EvOut *out) {
    if (op->opc == IR_OP_RETURN)
        return true;
    EvVal *x[3] = {NULL, NULL, NULL};
    for (int i = 0; i < op->num_operands && i < 3; i++)
        x[i] = ev_get(vals, op->operands[i]);
    if (op->opc == IR_OP_STORE) {
        int p = x[0]->param - 1;
        if (p < 0 || p > 1 || x[0]->i < 0 || x[0]->i >= 8)
            return false;
        out->mem[p][x[0]->i] = *x[1];
        out->written[p][x[0]->i] = true;
        return true;
    }
    if (op->num_results != 1 || op->results[0]->type->kind == IR_TILE)
        return false;
    const IrType *t = op->results[0]->type;
    const IrType *et = op->num_operands ? op->operands[op->opc == IR_OP_SELECT ? 1 : 0]->type : t;
    bool fl = ir_type_is_float(et);
    EvVal r = {0, 0, 0};
    int64_t k;
    switch (op->opc) {
    case IR_OP_CONSTANT:
        if (ir_type_is_float(t))
            r.f = ev_round(t, ir_op_get_number(op, "value", 0));
        else if (ir_value_const_int(op->results[0], &k))
            r.i = ir_int_wrap(k, ir_type_bits(t));
        else
            return false;
        break;
    case IR_OP_PROGRAM_ID: break;
    case IR_OP_CAST:
        if (ir_type_is_float(t))
            r.f = ev_round(t, fl ? x[0]->f : (double)x[0]->i);
        else if (fl)
            r.i = ir_int_wrap((int64_t)x[0]->f, ir_type_bits(t));
        else
            r.i = ir_int_wrap(x[0]->i, ir_type_bits(t));
        break;
    case IR_OP_ADDPTR:
        r = *x[0];
        r.i += x[1]->i;
        break;
    case IR_OP_CMP: {
        const char *pred = ir_op_get_word(op, "pred");
        r.i = ir_fold_cmp(pred ? pred : "eq", x[0]->f, x[1]->f, !fl, x[0]->i, x[1]->i);
        break;
    }
    case IR_OP_SELECT: r = x[0]->i ? *x[1] : *x[2]; break;
    case IR_OP_NOT: r.i = ir_int_wrap(~x[0]->i, ir_type_bits(t)); break;
    case IR_OP_LOG: r.f = ev_round(t, log(x[0]->f)); break;
    case IR_OP_SQRT: r.f = ev_round(t, sqrt(x[0]->f)); break;
    case IR_OP_COS: r.f = ev_round(t, cos(x[0]->f)); break;
    default:
        if (op->num_operands != 2 || !ir_op_has_flag(op, OPF_ELEMENTWISE))
            return false;
        if (!fl) {
            if (!ir_fold_int_binary(op->opc, ir_type_bits(t), x[0]->i, x[1]->i, &r.i))
                return false;
            break;
        }
        switch (op->opc) {
        case IR_OP_ADD: r.f = x[0]->f + x[1]->f; break;
        case IR_OP_SUB: r.f = x[0]->f - x[1]->f; break;
        case IR_OP_MUL: r.f = x[0]->f * x[1]->f; break;
        case IR_OP_DIV: r.f = x[0]->f / x[1]->f; break;
        case IR_OP_MAX: r.f = fmax(x[0]->f, x[1]->f); break;
        default: return false;
        }
        r.f = ev_round(t, r.f);
        break;
    }
    EvVal *slot = arena_alloc(a, sizeof *slot);
    *slot = r;
    ir_map_put(vals, op->results[0], slot);
    return true;
}

/* Runs kernel f (straight-line scalar code) with the integer arguments
 * `args` (pointer parameters are ignored there). */
static EvOut ev_run(IrFunc *f, const int64_t *args) {
    EvOut out;
    memset(&out, 0, sizeof out);
    Arena a;
    arena_init(&a);
    IrMap vals;
    ir_map_init(&vals, &a);
    int ptrs = 0;
    for (int i = 0; i < f->body->num_args; i++) {
        const IrValue *p = f->body->args[i];
        EvVal *v = arena_alloc(&a, sizeof *v);
        if (p->type->kind == IR_PTR)
            v->param = ++ptrs;
        else
            v->i = ir_int_wrap(args[i], ir_type_bits(p->type));
        ir_map_put(&vals, p, v);
    }
    out.ok = true;
    for (IrOp *op = f->body->first; op && out.ok; op = op->next)
        out.ok = ev_op(&a, &vals, op, &out);
    arena_free(&a);
    return out;
}

/* ---- the kernels ---- */

/* Each kernel stores randint, rand and randn of (seed, off) through its
 * two pointers: io[0] = randint, fo[0] = rand, fo[1] = randn. */
static const char *SRC =
    "kernel r32(i32* io, f32* fo, i32 seed, i32 off) {\n"
    "    store(io, randint(seed, off)); store(fo, rand(seed, off)); store(fo + 1, randn(seed, off));\n"
    "}\n"
    "kernel r64(i32* io, f32* fo, i64 seed, i64 off) {\n"
    "    store(io, randint(seed, off)); store(fo, rand(seed, off)); store(fo + 1, randn(seed, off));\n"
    "}\n"
    "kernel r16(i32* io, f32* fo, i64 seed, i16 off) {\n"
    "    store(io, randint(seed, off)); store(fo, rand(seed, off)); store(fo + 1, randn(seed, off));\n"
    "}\n"
    /* constant seeds and offsets fold in the front end: nothing is left to run */
    "kernel folded(i32* io, f32* fo) {\n"
    "    store(io, randint(0, 0)); store(io + 1, randint(-5, 123456789));\n"
    "    store(io + 2, randint(0x123456789, 7)); store(fo, rand(42, 0x100000002));\n"
    "    store(fo + 1, randn(42, 3));\n"
    "}\n"
    /* umulhi: literals read as unsigned next to an i32 */
    "kernel hi(i32* io, f32* fo, i32 a, i64 b) {\n"
    "    store(io, umulhi(a, 0xD2511F53)); store(io + 1, umulhi(0xCD9E8D57, a));\n"
    "    store(io + 2, i32(umulhi(b, b) >> 16)); store(io + 3, umulhi(i16(a), i16(a)));\n"
    "    store(io + 4, umulhi(a, a));\n"
    "}\n";

typedef struct Kernels {
    Arena arena;
    Source src;
    DiagList diags;
    IrModule *m;
} Kernels;

/* The kernels, as the front end gives them, and with canonicalize, cse and
 * dce run on them too when `optimized`. */
static bool kernels_make(Kernels *k, bool optimized) {
    arena_init(&k->arena);
    diag_init(&k->diags);
    k->src = (Source){"<random>", SRC, strlen(SRC)};
    AstFile *f = fe_parse(&k->arena, &k->src, &k->diags);
    k->m = diag_has_errors(&k->diags) ? NULL : fe_lower(f, NULL, &k->diags);
    if (k->m && optimized) {
        PassOptions po;
        pass_options_init(&po, &k->diags);
        if (!pass_run_list(k->m, "canonicalize,cse,dce", &po)) {
            ir_module_destroy(k->m);
            k->m = NULL;
        }
    }
    if (!k->m) {
        Buf b;
        buf_init(&b);
        diag_render(&k->diags, &b);
        fprintf(stderr, "%s", b.data ? b.data : "");
        buf_free(&b);
    }
    return k->m != NULL;
}

/* Kernel `name` of the module kernels_make gives (NULL, a failed check,
 * if it did not compile); kernels_free(k) afterwards either way. */
static IrFunc *kernel_of(Kernels *k, bool optimized, const char *name) {
    bool ok = kernels_make(k, optimized);
    CHECK(ok);
    return ok ? ir_module_find_func(k->m, name) : NULL;
}

static void kernels_free(Kernels *k) {
    ir_module_destroy(k->m);
    diag_free(&k->diags);
    arena_free(&k->arena);
}

static uint64_t next_u64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- tests ---- */

TEST(test_philox_known_answers) {
    CHECK(philox_ref_kat());
    /* the first one through the language's own entry: seed 0, offset 0 */
    CHECK_EQ_INT((uint32_t)ref_randint(0, 0, 32), 0x6627e8d5u);
}

/* Every (seed, offset) of a mix of signs and magnitudes gives the
 * reference's numbers: randint and rand exactly, randn within 2e-6 of the
 * exact transform (the evaluator's log and cos are libm's, correctly
 * rounded in f32 here and there). */
static void check_kernel(IrFunc *f, int offset_bits, uint64_t *rng, int cases) {
    for (int c = 0; c < cases; c++) {
        int64_t seed = (int64_t)next_u64(rng), off = (int64_t)next_u64(rng);
        if (c % 4 == 1)
            seed = (int64_t)(int32_t)seed; /* negative and positive 32-bit seeds */
        if (c % 4 == 2)
            off = c; /* small offsets */
        if (strcmp(f->name, "r32") == 0)
            seed = (int64_t)(int32_t)seed;
        off = ir_int_wrap(off, offset_bits);
        int64_t args[4] = {0, 0, seed, off};
        EvOut o = ev_run(f, args);
        CHECK(o.ok);
        CHECK(o.written[0][0] && o.written[1][0] && o.written[1][1]);
        if (!o.ok)
            return;
        int32_t want = ref_randint(seed, off, offset_bits);
        float u = ref_rand(seed, off, offset_bits);
        double n = ref_randn(seed, off, offset_bits);
        CHECK_EQ_INT(o.mem[0][0].i, want);
        CHECK(o.mem[1][0].f == u);
        CHECK(u >= 0 && u < 1);
        CHECK(fabs(o.mem[1][1].f - n) <= 2e-6 * (1 + fabs(n)));
        if (o.mem[0][0].i != want || o.mem[1][0].f != u || !(fabs(o.mem[1][1].f - n) <= 2e-6 * (1 + fabs(n)))) {
            fprintf(stderr, "  %s seed %lld offset %lld: got %d %.9g %.9g, want %d %.9g %.9g\n", f->name,
                    (long long)seed, (long long)off, (int)o.mem[0][0].i, o.mem[1][0].f, o.mem[1][1].f, want, u, n);
            return;
        }
    }
}

TEST(test_expansion_matches_reference) {
    for (int optimized = 0; optimized < 2; optimized++) {
        Kernels k;
        if (!kernel_of(&k, optimized, "r32")) {
            kernels_free(&k);
            continue;
        }
        uint64_t rng = 0x9E3779B97F4A7C15ull;
        check_kernel(ir_module_find_func(k.m, "r32"), 32, &rng, 200);
        check_kernel(ir_module_find_func(k.m, "r64"), 64, &rng, 200);
        check_kernel(ir_module_find_func(k.m, "r16"), 16, &rng, 100);
        kernels_free(&k);
    }
}

/* Uniforms near 1 take randn's series for -ln u1: the words whose uniform
 * is the largest below 1, and u1 = 0.75 exactly, against the reference. */
TEST(test_randn_near_one) {
    Kernels k;
    IrFunc *f = kernel_of(&k, false, "r32");
    int found = 0;
    for (int64_t off = 0; f && off < 200000 && found < 20; off++) {
        uint32_t w[4];
        philox_ref_draw(7, off, 32, w);
        float u1 = philox_ref_uniform(w[0]);
        if (u1 < 0.999f && u1 != 0.75f)
            continue;
        found++;
        int64_t args[4] = {0, 0, 7, off};
        EvOut o = ev_run(f, args);
        double n = ref_randn(7, off, 32);
        CHECK(o.ok && fabs(o.mem[1][1].f - n) <= 2e-6 * (1 + fabs(n)));
    }
    CHECK(found >= 10);
    kernels_free(&k);
}

/* Constant seeds and offsets: the whole draw folds in the front end. */
TEST(test_constants_fold) {
    Kernels k;
    IrFunc *f = kernel_of(&k, false, "folded");
    if (!f) {
        kernels_free(&k);
        return;
    }
    int umulhis = 0;
    for (IrOp *op = f->body->first; op; op = op->next)
        umulhis += op->opc == IR_OP_UMULHI;
    CHECK_EQ_INT(umulhis, 0);
    EvOut o = ev_run(f, (int64_t[]){0, 0});
    CHECK(o.ok);
    CHECK_EQ_INT(o.mem[0][0].i, (int32_t)0x6627e8d5);
    CHECK_EQ_INT(o.mem[0][1].i, ref_randint(-5, 123456789, 32));
    CHECK_EQ_INT(o.mem[0][2].i, ref_randint(0x123456789, 7, 32));
    CHECK(o.mem[1][0].f == ref_rand(42, 0x100000002, 64));
    CHECK(fabs(o.mem[1][1].f - ref_randn(42, 3, 32)) <= 1e-6);
    kernels_free(&k);
}

TEST(test_umulhi) {
    for (int optimized = 0; optimized < 2; optimized++) {
        Kernels k;
        IrFunc *f = kernel_of(&k, optimized, "hi");
        static const int64_t as[] = {0, 1, -1, 0x7fffffff, INT32_MIN, 123456789};
        static const int64_t bs[] = {0, -1, INT64_MIN, 0x0123456789abcdefll};
        for (int i = 0; f && i < 6; i++) {
            uint32_t a = (uint32_t)as[i];
            uint64_t b = (uint64_t)bs[i % 4];
            EvOut o = ev_run(f, (int64_t[]){0, 0, as[i], bs[i % 4]});
            CHECK(o.ok);
            CHECK_EQ_INT(o.mem[0][0].i, (int32_t)(((uint64_t)a * 0xD2511F53u) >> 32));
            CHECK_EQ_INT(o.mem[0][1].i, (int32_t)(((uint64_t)a * 0xCD9E8D57u) >> 32));
            unsigned __int128 bb = (unsigned __int128)b * b;
            CHECK_EQ_INT(o.mem[0][2].i, (int32_t)(int64_t)((uint64_t)(bb >> 64) >> 16));
            uint16_t a16 = (uint16_t)a;
            CHECK_EQ_INT(o.mem[0][3].i, (int16_t)(uint16_t)(((uint32_t)a16 * a16) >> 16));
            CHECK_EQ_INT(o.mem[0][4].i, (int32_t)(((uint64_t)a * a) >> 32));
        }
        kernels_free(&k);
    }
}

UNIT_SUITE(random, test_philox_known_answers, test_expansion_matches_reference, test_randn_near_one,
           test_constants_fold, test_umulhi)
