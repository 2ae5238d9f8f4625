/*
 * builtins_random.c — rand, randn and randint: counter-based random numbers
 * (Philox4x32-10), the same numbers as Triton's tl.rand, tl.randn and
 * tl.randint for the same seed and offsets.
 *
 * A counter-based generator has no state: the numbers are a function of
 * (seed, offset), so a dropout mask drawn in a forward pass is drawn again,
 * bit for bit, in the backward pass from the same seed and offsets.
 *
 * The algorithm, as Triton's python/triton/language/random.py has it:
 *
 *   key      (k0, k1) = (low, high 32 bits of the seed as i64): an i32
 *            seed is sign-extended first
 *   counter  (c0, c1, c2, c3) = (low 32 bits of the offset, its high 32
 *            bits for an i64 offset else 0, 0, 0); narrower offsets are
 *            sign-extended to 32 bits
 *   round    c0' = umulhi(B, c2) ^ c1 ^ k0     c1' = B * c2
 *            c2' = umulhi(A, c0) ^ c3 ^ k1     c3' = A * c0
 *            k0 += 0x9E3779B9, k1 += 0xBB67AE85
 *            with A = 0xD2511F53, B = 0xCD9E8D57; ten rounds
 *   randint  c0, as i32
 *   rand     x = c0 as i32, x < 0 ? -x - 1 : x, converted to f32 and
 *            multiplied by 4.6566127342e-10 (f32): in [0, 1)
 *   randn    u1 = max(1e-7, uniform(c0)), u2 = uniform(c1),
 *            sqrt(-2 ln u1) * cos(2 pi u2)
 *
 * randint and rand are exact: integer operations, one conversion and one
 * f32 multiply, so they equal Triton's bit for bit. randn computes the same
 * transform with the GPU's math (docs/codegen.md, "Math functions") and
 * two changes that only make it more accurate: -ln u1 for u1 >= 0.75 is
 * 2 atanh((1 - u1) / (1 + u1)) as a series (lg2.approx's absolute error,
 * 2^-22.6, would dominate -ln u1 near 1, and could even make it negative);
 * and cos takes 2 pi (u2 - 1) for u2 >= 0.5 (exact: the same cosine), which
 * keeps its argument in [-pi, pi), where cos.approx is specified. It agrees with Triton's
 * to about 1e-5 absolute, not bitwise.
 *
 * Why ordinary IR ops and not a `philox` op: the expansion is about a
 * hundred elementwise ops (umulhi, mul and xor on i32 words of the
 * offsets' shape; the key schedule on scalars), which every pass already
 * understands. A constant seed's key schedule folds as it is built (the
 * whole draw, when the offsets are constant too), CSE shares one Philox
 * between rand and randn of the same seed and offsets, the layout passes
 * place it like any arithmetic, codegen needs only umulhi (mul.hi.u32), and
 * an IR interpreter nothing else. A `philox` op would be one op instead of
 * a hundred in the IR, but each of them would have to learn it.
 */
#include "ast_to_ir.h"

#include <math.h>
#include <string.h>

#define PHILOX_KEY_A 0x9E3779B9
#define PHILOX_KEY_B 0xBB67AE85
#define PHILOX_ROUND_A 0xD2511F53
#define PHILOX_ROUND_B 0xCD9E8D57
#define PHILOX_ROUNDS 10
/* the largest f32 below 2^-31 such that (2^31 - 1) * it rounds below 1 */
#define UNIFORM_SCALE 4.6566127342e-10
#define PI 3.141592653589793

typedef struct Rng {
    Lower *L;
    const AstNode *call;
    const char *name; /* the builtin, for messages */
} Rng;

static Val i32c(Rng *g, int64_t v) {
    return val_int(lower_scalar(g->L, IR_I32), v);
}

static Val f32c(Rng *g, double v) {
    return val_float(lower_scalar(g->L, IR_F32), v);
}

static bool is_zero(const Val *x) {
    return x->kind == VAL_CONST && ir_type_is_int(x->type) && x->i == 0;
}

/* A binary op; on the counter words that start as 0, x ^ 0 and x * 0 are
 * left out (the result broadcasts to the offsets' shape at the end). */
static Val op2(Rng *g, IrOpcode opc, Val a, Val b) {
    if ((opc == IR_OP_XOR || opc == IR_OP_ADD) && (is_zero(&a) || is_zero(&b)))
        return is_zero(&a) ? b : a;
    if ((opc == IR_OP_MUL || opc == IR_OP_UMULHI) && (is_zero(&a) || is_zero(&b)))
        return i32c(g, 0);
    return lower_arith(g->L, g->call, opc, NULL, g->name, a, b);
}

static Val cmp(Rng *g, const char *pred, Val a, Val b) {
    return lower_arith(g->L, g->call, IR_OP_CMP, pred, g->name, a, b);
}

static Val select3(Rng *g, Val c, Val a, Val b) {
    return lower_select(g->L, g->call, c, a, b, g->name);
}

/* A unary IR op: bitwise not, or a float math function; constants fold. */
static Val op1(Rng *g, IrOpcode opc, Val x) {
    if (x.kind == VAL_CONST) {
        switch (opc) {
        case IR_OP_NOT: return val_int(x.type, ~x.i);
        case IR_OP_LOG: return val_float(x.type, log(x.f));
        case IR_OP_SQRT: return val_float(x.type, sqrt(x.f));
        case IR_OP_COS: return val_float(x.type, cos(x.f));
        default: tc_unreachable("op1: %s", ir_op_info[opc].name);
        }
    }
    if (x.kind != VAL_IR)
        return val_error();
    lower_at(g->L, g->call);
    return val_ir(ir_build_unary(&g->L->b, opc, x.v->type, x.v));
}

/* The high 32 bits of a 64-bit value, as i32: the IR's shr is arithmetic,
 * but the bits it shifts in are cut off by the truncation, so no logical
 * shift is needed. */
static Val high_word(Rng *g, Val x64) {
    return lower_convert(g->L, op2(g, IR_OP_SHR, x64, val_int(lower_scalar(g->L, IR_I64), 32)),
                         lower_scalar(g->L, IR_I32), g->call);
}

/* An integer argument (a scalar when `scalar`), typed: a literal takes its
 * own type (i32, or i64 when it does not fit). */
static bool int_arg(Rng *g, int i, bool scalar, const char *what, Val *out) {
    const AstNode *n = g->call->items[i];
    Val x = lower_expr(g->L, n);
    if (x.kind != VAL_CONST && x.kind != VAL_IR)
        return false;
    const IrType *e = val_elem(&x);
    if (!ir_type_is_int(e) || e->kind == IR_I1 || (scalar && val_shape(&x).rank > 0)) {
        lower_error(g->L, n, "%s of '%s' must be %s, got %s", what, g->name,
                    scalar ? "an integer scalar" : "integers (a scalar or a tile)", lower_val_str(g->L, &x));
        return false;
    }
    *out = lower_convert(g->L, x, e, n); /* drops weakness */
    return true;
}

/* x as a uniform f32 in [0, 1) (Triton's uint_to_uniform_float). */
static Val uniform(Rng *g, Val x) {
    Val folded = select3(g, cmp(g, "lt", x, i32c(g, 0)), op1(g, IR_OP_NOT, x), x); /* ~x == -x - 1 */
    Val f = lower_convert(g->L, folded, lower_scalar(g->L, IR_F32), g->call);
    return op2(g, IR_OP_MUL, f, f32c(g, UNIFORM_SCALE));
}

/* sqrt(-2 ln u1) * cos(2 pi u2) for u1 in [1e-7, 1), u2 in [0, 1). */
static Val box_muller(Rng *g, Val u1, Val u2) {
    u1 = op2(g, IR_OP_MAX, u1, f32c(g, 1e-7));
    /* -ln u1 = 2 atanh(s), s = (1 - u1) / (1 + u1) <= 1/7 for u1 >= 0.75:
     * 2 s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9), the next term below 2^-35 */
    Val s = op2(g, IR_OP_DIV, op2(g, IR_OP_SUB, f32c(g, 1), u1), op2(g, IR_OP_ADD, f32c(g, 1), u1));
    Val s2 = op2(g, IR_OP_MUL, s, s);
    Val p = f32c(g, 1.0 / 9);
    static const double coef[] = {1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0};
    for (int i = 0; i < 4; i++)
        p = op2(g, IR_OP_ADD, op2(g, IR_OP_MUL, p, s2), f32c(g, coef[i]));
    Val near = op2(g, IR_OP_MUL, op2(g, IR_OP_MUL, s, f32c(g, 2)), p);
    Val far = op2(g, IR_OP_MUL, op1(g, IR_OP_LOG, u1), f32c(g, -1));
    Val neg_ln = select3(g, cmp(g, "ge", u1, f32c(g, 0.75)), near, far);
    Val r = op1(g, IR_OP_SQRT, op2(g, IR_OP_MUL, neg_ln, f32c(g, 2)));
    /* cos(2 pi u2) = cos(2 pi (u2 - 1)): u2 - 1 is exact for u2 >= 0.5 */
    Val v = select3(g, cmp(g, "ge", u2, f32c(g, 0.5)), op2(g, IR_OP_SUB, u2, f32c(g, 1)), u2);
    Val c = op1(g, IR_OP_COS, op2(g, IR_OP_MUL, v, f32c(g, 2 * PI)));
    return op2(g, IR_OP_MUL, r, c);
}

Val lower_random(Lower *L, const AstNode *call, const char *name) {
    Rng g = {L, call, name};
    Val seed, off;
    bool ok_seed = int_arg(&g, 0, true, "seed", &seed);
    if (!int_arg(&g, 1, false, "offsets", &off) || !ok_seed)
        return val_error();
    const IrType *i32 = lower_scalar(L, IR_I32);
    /* the seed's words, sign-extended to 64 bits */
    Val k0 = lower_convert(L, seed, i32, call);
    Val k1 = ir_type_bits(val_elem(&seed)) <= 32 ? op2(&g, IR_OP_SHR, k0, i32c(&g, 31)) : high_word(&g, seed);
    bool wide = val_elem(&off)->kind == IR_I64;
    Val c[4] = {lower_convert(L, off, i32, call), wide ? high_word(&g, off) : i32c(&g, 0), i32c(&g, 0), i32c(&g, 0)};
    Val A = i32c(&g, PHILOX_ROUND_A), B = i32c(&g, PHILOX_ROUND_B);
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        Val c0 = op2(&g, IR_OP_XOR, op2(&g, IR_OP_XOR, op2(&g, IR_OP_UMULHI, B, c[2]), c[1]), k0);
        Val c2 = op2(&g, IR_OP_XOR, op2(&g, IR_OP_XOR, op2(&g, IR_OP_UMULHI, A, c[0]), c[3]), k1);
        c[1] = op2(&g, IR_OP_MUL, B, c[2]);
        c[3] = op2(&g, IR_OP_MUL, A, c[0]);
        c[0] = c0;
        c[2] = c2;
        if (r + 1 < PHILOX_ROUNDS) {
            k0 = op2(&g, IR_OP_ADD, k0, i32c(&g, PHILOX_KEY_A));
            k1 = op2(&g, IR_OP_ADD, k1, i32c(&g, PHILOX_KEY_B));
        }
    }
    Val out;
    if (strcmp(name, "randint") == 0)
        out = c[0];
    else if (strcmp(name, "rand") == 0)
        out = uniform(&g, c[0]);
    else
        out = box_muller(&g, uniform(&g, c[0]), uniform(&g, c[1]));
    Shape shape = val_shape(&off);
    return lower_broadcast(L, out, &shape, call, name);
}
