/*
 * lower_memory.c — global memory: load, store, atomic.
 *
 * Vectors. An op's `vec` = V (set by coalesce, default 1) promises that the
 * pointers of V consecutive registers are consecutive and V * element bytes
 * aligned, and that the mask is constant over each such group. The layout
 * must agree: register bases 0 .. log2(V)-1 step 1, 2, 4 ... along one
 * dimension d, and every other basis moves d by a multiple of V (so register
 * r + j, j < V, of a group starting at r holds element coordinate + j).
 * Codegen checks that and uses the largest V' <= V it can prove, capped at 16
 * bytes. Each group becomes one access of V' * elem bytes, as Triton shapes
 * them: ld.global.v4.b32 / v2.b32 / b32 for 16, 8, 4 bytes, b16 and b8
 * below; elements are packed into those words with bitcasts.
 *
 * The split. `vec_masked` = W > V (coalesce, when only the mask's constancy
 * keeps V narrow) promises all of the above for W but the mask's constancy:
 * a thread whose mask is true in every register branches to accesses of W,
 * the others to the groups of V with their masks (a row of odd length: its
 * inner tiles take the wide path, its last tile the narrow one).
 *
 * Predication. A masked load is inline PTX: the `other` values are moved
 * into the destination registers, then `@p ld.global...` overwrites them
 * where the mask (of the group's first element) is true; without `other` the
 * masked-off values are unspecified, as the language says. An unmasked load
 * is a plain LLVM load (LLVM may then schedule it freely). Stores are
 * predicated by the mask and by ownership: where a layout holds copies
 * (lanes or warps whose bases are zero), only the copy in the lowest lane and
 * warp stores, so every element is written once; a store through a scalar
 * pointer is done by thread 0 only. An unpredicated store is a plain LLVM
 * store. The inline PTX is `sideeffect`, so LLVM never reorders it with
 * other memory operations.
 *
 * Atomics are one per element, relaxed at the GPU scope: predicated inline
 * `@p atom.global.{add,max,min,exch}` where PTX has the instruction (no
 * branch), else LLVM `atomicrmw` monotonic under a branch, which NVPTX
 * expands into a compare-and-swap loop (float min/max, bf16 add before sm_90,
 * 8- and 16-bit integers). The old value
 * exists only in the thread that did the atomic; when the result is used and
 * the layout has copies (or the pointer is a scalar), owners write it to
 * scratch shared memory and every thread reads it back.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* True when register bases 0..log2(v)-1 step 1, 2, ... along one dimension
 * and every other basis moves that dimension by a multiple of v. */
static bool contiguous(const LinearLayout *ll, int v) {
    int k = 0;
    while ((1 << k) < v)
        k++;
    if (ll->num_bits[LL_REG] < k)
        return false;
    int dim = -1;
    for (int d = 0; d < ll->rank; d++)
        if (ll->bases[LL_REG][0][d])
            dim = d;
    if (dim < 0)
        return false;
    for (int b = 0; b < k; b++)
        for (int d = 0; d < ll->rank; d++)
            if (ll->bases[LL_REG][b][d] != (d == dim ? 1 << b : 0))
                return false;
    for (int in = 0; in < LL_NUM_IN; in++)
        for (int b = in == LL_REG ? k : 0; b < ll->num_bits[in]; b++)
            if (ll->bases[in][b][dim] % v)
                return false;
    return true;
}

int cg_vec_width(const IrOp *op, const LinearLayout *ll, int eb) {
    int64_t v = ir_op_get_int(op, "vec", 1);
    if (!ll || v < 1 || !tc_is_pow2(v))
        return 1;
    while (v > 1 && (v * eb > 16 || !contiguous(ll, (int)v)))
        v /= 2;
    return (int)v;
}

/* ---- packing elements into the words of one access ---- */

typedef struct {
    int n;            /* words: 1, 2 or 4 */
    int bits;         /* 32, 16 or 8 */
    LLVMTypeRef word; /* i32, or i16 for both 16- and 8-bit accesses (PTX has no 8-bit registers) */
    char reg;         /* inline asm constraint: r or h */
} Words;

static Words words_of(Cg *cg, int bytes) {
    Words w;
    if (bytes >= 4) {
        w.n = bytes / 4;
        w.bits = 32;
        w.word = cg->t_i32;
        w.reg = 'r';
    } else {
        w.n = 1;
        w.bits = bytes * 8;
        w.word = cg->t_i16;
        w.reg = 'h';
    }
    return w;
}

/* The element as an integer of its memory width. */
static LLVMValueRef to_bits(Cg *cg, LLVMValueRef v, const IrType *elem) {
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)ir_type_bytes(elem) * 8);
    if (elem->kind == IR_I1)
        return LLVMBuildZExt(cg->b, v, it, "");
    if (elem->kind == IR_PTR)
        return LLVMBuildPtrToInt(cg->b, v, it, "");
    return LLVMBuildBitCast(cg->b, v, it, "");
}

static LLVMValueRef from_bits(Cg *cg, LLVMValueRef v, const IrType *elem) {
    if (elem->kind == IR_I1)
        return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
    if (elem->kind == IR_PTR)
        return LLVMBuildIntToPtr(cg->b, v, cg->t_gptr, "");
    return LLVMBuildBitCast(cg->b, v, cg_type(cg, elem), "");
}

/* Packs n elements into the access's w.n words (i32, or one i16 for 8- and
 * 16-bit accesses), element j at bytes j*eb .. of the access. */
static void pack(Cg *cg, LLVMValueRef *vals, int n, const IrType *elem, Words w, LLVMValueRef *words) {
    LLVMBuilderRef b = cg->b;
    int eb = ir_type_bytes(elem);
    if (eb == 8) { /* each element is two words, low first */
        for (int j = 0; j < n; j++) {
            LLVMValueRef x = to_bits(cg, vals[j], elem);
            words[2 * j] = LLVMBuildTrunc(b, x, cg->t_i32, "");
            words[2 * j + 1] = LLVMBuildTrunc(b, LLVMBuildLShr(b, x, cg_i64(cg, 32), ""), cg->t_i32, "");
        }
        return;
    }
    int per_word = w.bits / 8 / eb; /* elements per word */
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)eb * 8);
    for (int k = 0; k < w.n; k++) {
        LLVMValueRef x;
        if (per_word == 1) {
            x = to_bits(cg, vals[k], elem);
        } else if (per_word == 2 && (x = cg_convert_pair(cg, vals[2 * k], vals[2 * k + 1]))) {
            /* two f32 rounded to f16 or bf16: one cvt */
        } else if (eb == 1) {
            /* bytes by shifts and ors (a <4 x i8> here would let the DAG
             * store a v16i8, which NVPTX splits into 32-bit stores); two
             * fp8 from one cvt stay the 16 bits it made */
            LLVMTypeRef wt = LLVMIntTypeInContext(cg->ctx, (unsigned)w.bits);
            x = LLVMConstInt(wt, 0, 0);
            for (int j = 0; j < per_word; j++) {
                LLVMValueRef *v = &vals[k * per_word + j], pair = NULL, y;
                if (j + 1 < per_word && (pair = cg_fp8_pair(cg, v[0], v[1])))
                    y = LLVMBuildZExt(b, pair, wt, "");
                else
                    y = LLVMBuildZExt(b, to_bits(cg, v[0], elem), wt, "");
                x = LLVMBuildOr(b, x, LLVMBuildShl(b, y, LLVMConstInt(wt, (unsigned long long)j * 8, 0), ""), "");
                j += pair != NULL;
            }
        } else {
            x = LLVMGetUndef(LLVMVectorType(it, (unsigned)per_word));
            for (int j = 0; j < per_word; j++)
                x = LLVMBuildInsertElement(b, x, to_bits(cg, vals[k * per_word + j], elem), cg_i32(cg, j), "");
            x = LLVMBuildBitCast(b, x, LLVMIntTypeInContext(cg->ctx, (unsigned)w.bits), "");
        }
        words[k] = w.bits == 8 ? LLVMBuildZExt(b, x, w.word, "") : x; /* a byte travels in an i16 */
    }
}

static void unpack(Cg *cg, LLVMValueRef *words, int n, const IrType *elem, Words w, LLVMValueRef *out) {
    LLVMBuilderRef b = cg->b;
    int eb = ir_type_bytes(elem);
    if (eb == 8) {
        for (int j = 0; j < n; j++) {
            LLVMValueRef lo = LLVMBuildZExt(b, words[2 * j], cg->t_i64, "");
            LLVMValueRef hi = LLVMBuildZExt(b, words[2 * j + 1], cg->t_i64, "");
            out[j] = from_bits(cg, LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, cg_i64(cg, 32), ""), ""), elem);
        }
        return;
    }
    int per_word = w.bits / 8 / eb;
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)eb * 8);
    for (int k = 0; k < w.n; k++) {
        LLVMValueRef x = w.bits == 8 ? LLVMBuildTrunc(b, words[k], cg->t_i8, "") : words[k];
        if (per_word == 1) {
            out[k] = from_bits(cg, x, elem);
            continue;
        }
        LLVMValueRef v = LLVMBuildBitCast(b, x, LLVMVectorType(it, (unsigned)per_word), "");
        for (int j = 0; j < per_word; j++)
            out[k * per_word + j] = from_bits(cg, LLVMBuildExtractElement(b, v, cg_i32(cg, j), ""), elem);
    }
}

/* An unpredicated access: a plain LLVM load or store of the words (a vector
 * of them when there are several), aligned to the access's size. */
static LLVMTypeRef access_type(Cg *cg, Words w) {
    if (w.bits == 8)
        return cg->t_i8;
    return w.n == 1 ? w.word : LLVMVectorType(w.word, (unsigned)w.n);
}

static void plain_load(Cg *cg, LLVMValueRef ptr, Words w, unsigned align, LLVMValueRef *words) {
    LLVMValueRef x = LLVMBuildLoad2(cg->b, access_type(cg, w), ptr, "");
    LLVMSetAlignment(x, align);
    if (w.n == 1) {
        words[0] = w.bits == 8 ? LLVMBuildZExt(cg->b, x, w.word, "") : x;
        return;
    }
    for (int k = 0; k < w.n; k++)
        words[k] = LLVMBuildExtractElement(cg->b, x, cg_i32(cg, k), "");
}

static void plain_store(Cg *cg, LLVMValueRef ptr, Words w, unsigned align, LLVMValueRef *words) {
    LLVMValueRef x = words[0];
    if (w.bits == 8)
        x = LLVMBuildTrunc(cg->b, x, cg->t_i8, "");
    if (w.n > 1) {
        x = LLVMGetUndef(access_type(cg, w));
        for (int k = 0; k < w.n; k++)
            x = LLVMBuildInsertElement(cg->b, x, words[k], cg_i32(cg, k), "");
    }
    LLVMValueRef st = LLVMBuildStore(cg->b, x, ptr);
    LLVMSetAlignment(st, align);
}

static const char *vec_suffix(int n) {
    return n == 4 ? ".v4" : n == 2 ? ".v2" : "";
}

/* "{$a, $b, ...}" or "$a" for n operands starting at `first`. */
static void operand_list(Buf *s, int first, int n) {
    if (n > 1)
        buf_puts(s, "{");
    for (int i = 0; i < n; i++)
        buf_printf(s, "%s$%d", i ? ", " : "", first + i);
    if (n > 1)
        buf_puts(s, "}");
}

/* An eviction policy (the `evict` word of a load or store: "first",
 * "last"): the access's L1 qualifier and an L2 cache policy made by
 * createpolicy, which the access names with .L2::cache_hint. Both need PTX
 * 7.4: on sm_80, whose PTX is 7.0 (tg_target_features: the oldest drivers
 * that know the architecture), the access is emitted without them. NULL l1:
 * none. */
typedef struct Evict {
    const char *l1;      /* ".L1::evict_first" ... */
    LLVMValueRef policy; /* b64 */
} Evict;

static Evict evict_of(Cg *cg, const IrOp *op) {
    Evict e = {NULL, NULL};
    const char *w = ir_op_get_word(op, "evict");
    if (!w || (strcmp(w, "first") != 0 && strcmp(w, "last") != 0) || cg->target->sm < 90)
        return e;
    bool first = strcmp(w, "first") == 0;
    e.l1 = first ? ".L1::evict_first" : ".L1::evict_last";
    e.policy = cg_asm(cg, cg->t_i64,
                      first ? "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;"
                            : "createpolicy.fractional.L2::evict_last.b64 $0, 1.0;",
                      "=l", NULL, 0, false);
    return e;
}

/* One predicated load of w's words into words[]; `other` (may be NULL) are
 * the words to keep where pred is false; ev (may be NULL) its eviction
 * policy. */
static void masked_load(Cg *cg, LLVMValueRef ptr, LLVMValueRef pred, LLVMValueRef *other, Words w, LLVMValueRef *words,
                        const Evict *ev) {
    LLVMBuilderRef b = cg->b;
    Buf text, cons;
    buf_init(&text);
    buf_init(&cons);
    int n = w.n;
    bool hint = ev && ev->l1;
    LLVMValueRef args[2 + 4 + 1];
    int na = 0;
    args[na++] = ptr;
    args[na++] = pred;
    if (other) {
        for (int i = 0; i < n; i++) {
            args[na++] = other[i];
            buf_printf(&text, "mov.b%d $%d, $%d;\n\t", w.bits == 32 ? 32 : 16, i, n + 2 + i);
        }
    }
    buf_printf(&text, "@$%d ld.global%s%s%s.b%d ", n + 1, hint ? ev->l1 : "", hint ? ".L2::cache_hint" : "",
               vec_suffix(n), w.bits);
    operand_list(&text, 0, n);
    if (hint)
        buf_printf(&text, ", [$%d], $%d;", n, na + n);
    else
        buf_printf(&text, ", [$%d];", n);
    for (int i = 0; i < n; i++)
        buf_printf(&cons, "=%c,", w.reg);
    buf_puts(&cons, "l,b");
    for (int i = 0; other && i < n; i++)
        buf_printf(&cons, ",%c", w.reg);
    if (hint) {
        args[na++] = ev->policy;
        buf_puts(&cons, ",l");
    }
    LLVMTypeRef ret = w.word;
    if (n > 1) {
        LLVMTypeRef el[4] = {w.word, w.word, w.word, w.word};
        ret = LLVMStructTypeInContext(cg->ctx, el, (unsigned)n, 0);
    }
    LLVMValueRef r = cg_asm(cg, ret, text.data, cons.data, args, na, true);
    buf_free(&text);
    buf_free(&cons);
    if (n == 1) {
        words[0] = r;
        return;
    }
    for (int i = 0; i < n; i++)
        words[i] = LLVMBuildExtractValue(b, r, (unsigned)i, "");
}

static void masked_store(Cg *cg, LLVMValueRef ptr, LLVMValueRef *words, LLVMValueRef pred, Words w, const Evict *ev) {
    Buf text, cons;
    buf_init(&text);
    buf_init(&cons);
    int n = w.n;
    bool hint = ev && ev->l1;
    LLVMValueRef args[2 + 4 + 1];
    args[0] = ptr;
    for (int i = 0; i < n; i++)
        args[1 + i] = words[i];
    args[1 + n] = pred;
    buf_printf(&text, "@$%d st.global%s%s%s.b%d [$0], ", n + 1, hint ? ev->l1 : "", hint ? ".L2::cache_hint" : "",
               vec_suffix(n), w.bits);
    operand_list(&text, 1, n);
    if (hint) {
        buf_printf(&text, ", $%d", n + 2);
        args[n + 2] = ev->policy;
    }
    buf_puts(&text, ";");
    buf_puts(&cons, "l");
    for (int i = 0; i < n; i++)
        buf_printf(&cons, ",%c", w.reg);
    buf_puts(&cons, hint ? ",b,l" : ",b");
    cg_asm(cg, cg->t_void, text.data, cons.data, args, n + 2 + hint, true);
    buf_free(&text);
    buf_free(&cons);
}

static LLVMValueRef and_pred(Cg *cg, LLVMValueRef a, LLVMValueRef b) {
    if (!a)
        return b;
    if (!b)
        return a;
    return LLVMBuildAnd(cg->b, a, b, "");
}

/* Thread 0 of the program. */
/* ---- pointers of vector groups: affine tiles ---- */

/*
 * A tile is affine when each element is some uniform value plus, per
 * dimension d, coordinate d times a step k[d] (times the scalar scale[d]
 * where that is not NULL): what arange, splat, expand_dims, broadcast, add,
 * sub, mul by a uniform factor, shl by a constant, widening casts and addptr
 * build. Steps are in elements for integer tiles and in bytes for pointer
 * tiles. Wrapping of the index arithmetic is not modelled: the form assumes
 * the offsets of one tile do not overflow, which addresses would need more
 * than 2^31 elements apart inside one tile to break.
 */
typedef struct {
    int rank;
    const IrValue *scale[IR_MAX_RANK]; /* scalar factor of the step, NULL for 1 */
    int64_t k[IR_MAX_RANK];            /* 0: uniform along d */
} Affine;

enum { AFFINE_DEPTH = 24 };

typedef struct Assumed Assumed;
struct Assumed { /* a loop's iter_arg taken to have its init's form */
    const IrValue *arg;
    const Affine *form;
    const Assumed *next;
};

static bool affine_of(const IrValue *x, Affine *a, int depth, const Assumed *as);

static bool uniform(const Affine *a) {
    for (int d = 0; d < a->rank; d++)
        if (a->k[d])
            return false;
    return true;
}

static void affine_uniform(const IrValue *x, Affine *a) {
    memset(a, 0, sizeof *a);
    a->rank = x->type->kind == IR_TILE ? x->type->rank : 0;
}

/* a += sign * b, dimension by dimension. */
static bool affine_add(Affine *a, const Affine *b, int sign) {
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++) {
        if (!b->k[d])
            continue;
        if (a->k[d] && a->scale[d] != b->scale[d])
            return false;
        if (!a->k[d])
            a->scale[d] = b->scale[d];
        a->k[d] += sign * b->k[d];
    }
    return true;
}

/* A uniform factor: the scalar a splat broadcasts (*s) or an integer constant (*c). */
static bool uniform_factor(const IrValue *x, const IrValue **s, int64_t *c) {
    const IrOp *def = x->def;
    *s = NULL, *c = 1;
    while (def && def->opc == IR_OP_CONVERT_LAYOUT)
        def = def->operands[0]->def;
    if (!def)
        return false;
    if (def->opc == IR_OP_SPLAT) {
        const IrValue *v = def->operands[0];
        if (!ir_type_is_int(v->type))
            return false;
        if (v->def && v->def->opc == IR_OP_CONSTANT) {
            const IrAttr *at = ir_op_attr(v->def, "value");
            if (!at || at->kind != IR_ATTR_INT)
                return false;
            *c = at->i;
            return true;
        }
        *s = v;
        return true;
    }
    if (def->opc == IR_OP_CONSTANT) {
        const IrAttr *at = ir_op_attr(def, "value");
        if (!at || at->kind != IR_ATTR_INT)
            return false;
        *c = at->i;
        return true;
    }
    return false;
}

static bool affine_scale(Affine *a, const IrValue *s, int64_t c) {
    for (int d = 0; d < a->rank; d++) {
        if (!a->k[d])
            continue;
        if (s && a->scale[d])
            return false;
        if (s)
            a->scale[d] = s;
        a->k[d] *= c;
    }
    return true;
}

static bool affine_mul(const IrOp *def, Affine *a, int depth, const Assumed *as) {
    for (int i = 0; i < 2; i++) {
        const IrValue *s;
        int64_t c;
        if (uniform_factor(def->operands[1 - i], &s, &c))
            return affine_of(def->operands[i], a, depth + 1, as) && affine_scale(a, s, c);
    }
    return false;
}

/* An iter_arg of a for loop: the form of its init, when the value the body
 * yields for it has that same form. */
static bool affine_iter_arg(const IrValue *x, Affine *a, int depth, const Assumed *as) {
    for (const Assumed *p = as; p; p = p->next)
        if (p->arg == x) {
            *a = *p->form;
            return true;
        }
    const IrBlock *body = x->block;
    const IrOp *loop = body->parent_op;
    if (!loop || loop->opc != IR_OP_FOR || x->index < 1 || !body->last || body->last->opc != IR_OP_YIELD)
        return false;
    int i = x->index - 1;
    if (3 + i >= loop->num_operands || i >= body->last->num_operands)
        return false;
    if (!affine_of(loop->operands[3 + i], a, depth + 1, as))
        return false;
    Assumed here = {x, a, as};
    Affine y;
    if (!affine_of(body->last->operands[i], &y, depth + 1, &here) || y.rank != a->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (y.k[d] != a->k[d] || (a->k[d] && y.scale[d] != a->scale[d]))
            return false;
    return true;
}

static bool affine_of(const IrValue *x, Affine *a, int depth, const Assumed *as) {
    const IrType *t = x->type;
    if (depth > AFFINE_DEPTH || t->kind != IR_TILE)
        return false;
    const IrType *e = t->elem;
    if (!ir_type_is_int(e) && e->kind != IR_PTR)
        return false;
    if (!x->def)
        return affine_iter_arg(x, a, depth, as);
    const IrOp *def = x->def;
    switch (def->opc) {
    case IR_OP_SPLAT:
    case IR_OP_CONSTANT: affine_uniform(x, a); return true;
    case IR_OP_ARANGE:
        affine_uniform(x, a);
        a->k[0] = 1;
        return true;
    case IR_OP_CONVERT_LAYOUT: return affine_of(def->operands[0], a, depth + 1, as);
    case IR_OP_EXPAND_DIMS: {
        Affine in;
        int axis = (int)ir_op_get_int(def, "axis", 0);
        if (!affine_of(def->operands[0], &in, depth + 1, as) || axis < 0 || axis > in.rank)
            return false;
        affine_uniform(x, a);
        for (int d = 0, j = 0; d < a->rank; d++)
            if (d != axis)
                a->scale[d] = in.scale[j], a->k[d] = in.k[j], j++;
        return true;
    }
    case IR_OP_BROADCAST: {
        const IrType *it = def->operands[0]->type;
        if (it->kind != IR_TILE || it->rank != t->rank || !affine_of(def->operands[0], a, depth + 1, as))
            return false;
        for (int d = 0; d < a->rank; d++)
            if (it->shape[d] == 1)
                a->k[d] = 0, a->scale[d] = NULL;
        return true;
    }
    case IR_OP_ADD:
    case IR_OP_SUB: {
        Affine b;
        return affine_of(def->operands[0], a, depth + 1, as) && affine_of(def->operands[1], &b, depth + 1, as) &&
               affine_add(a, &b, def->opc == IR_OP_SUB ? -1 : 1);
    }
    case IR_OP_MUL: return affine_mul(def, a, depth, as);
    case IR_OP_SHL: {
        const IrValue *s;
        int64_t c;
        return uniform_factor(def->operands[1], &s, &c) && !s && c >= 0 && c < 32 &&
               affine_of(def->operands[0], a, depth + 1, as) && affine_scale(a, NULL, (int64_t)1 << c);
    }
    case IR_OP_CAST: {
        const IrType *from = ir_type_elem(def->operands[0]->type);
        return ir_type_is_int(from) && from->kind != IR_I1 && ir_type_bits(from) <= ir_type_bits(e) &&
               affine_of(def->operands[0], a, depth + 1, as);
    }
    case IR_OP_ADDPTR: {
        Affine off;
        if (!affine_of(def->operands[0], a, depth + 1, as) || !affine_of(def->operands[1], &off, depth + 1, as))
            return false;
        affine_scale(&off, NULL, ir_type_bytes(e->elem));
        return affine_add(a, &off, 1);
    }
    default: return false;
    }
}

/* True when every register coordinate and every lane and warp coordinate of
 * ll share no bit in any dimension: coordinates then add, and the distance
 * between two registers of one thread is the same in every thread. */
static bool reg_thread_disjoint(const LinearLayout *ll) {
    for (int d = 0; d < ll->rank; d++) {
        int64_t r = 0, t = 0;
        for (int b = 0; b < ll->num_bits[LL_REG]; b++)
            r |= ll->bases[LL_REG][b][d];
        for (int in = LL_LANE; in <= LL_WARP; in++)
            for (int b = 0; b < ll->num_bits[in]; b++)
                t |= ll->bases[in][b][d];
        if (r & t)
            return false;
    }
    return true;
}

void cg_group_pointers(Cg *cg, const IrValue *ptrs, const LinearLayout *ll, int v, LLVMValueRef *out) {
    CgVal *p = cg_get(cg, ptrs);
    Affine a;
    if (!ll || p->n <= v || !reg_thread_disjoint(ll) || !affine_of(ptrs, &a, 0, NULL) || uniform(&a)) {
        for (int r = 0; r < p->n; r += v)
            out[r] = p->v[r];
        return;
    }
    LLVMValueRef step[IR_MAX_RANK] = {NULL};
    out[0] = p->v[0];
    int64_t prev[IR_MAX_RANK];
    ll_apply_in(ll, LL_REG, 0, prev);
    for (int r = v; r < p->n; r += v) {
        int64_t c[IR_MAX_RANK];
        ll_apply_in(ll, LL_REG, r, c);
        LLVMValueRef delta = NULL;
        int64_t konst = 0;
        for (int d = 0; d < a.rank; d++) {
            int64_t n = a.k[d] * (c[d] - prev[d]);
            if (!n)
                continue;
            if (!a.scale[d]) {
                konst += n;
                continue;
            }
            if (!step[d]) {
                LLVMValueRef s = cg_get(cg, a.scale[d])->v[0];
                step[d] = LLVMBuildIntCast2(cg->b, s, cg->t_i64, 1, "");
            }
            LLVMValueRef term = LLVMBuildMul(cg->b, step[d], cg_i64(cg, n), "");
            delta = delta ? LLVMBuildAdd(cg->b, delta, term, "") : term;
        }
        if (konst)
            delta = delta ? LLVMBuildAdd(cg->b, delta, cg_i64(cg, konst), "") : cg_i64(cg, konst);
        out[r] = delta ? LLVMBuildGEP2(cg->b, cg->t_i8, out[r - v], &delta, 1, "") : out[r - v];
        memcpy(prev, c, sizeof prev);
    }
}

static LLVMValueRef first_thread(Cg *cg) {
    return LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), "");
}

LLVMValueRef cg_load_element(Cg *cg, LLVMValueRef ptr, const IrType *elem, LLVMValueRef pred, LLVMValueRef other) {
    int eb = ir_type_bytes(elem);
    Words w = words_of(cg, eb);
    LLVMValueRef words[4], ow[4], out;
    if (!pred) {
        plain_load(cg, ptr, w, (unsigned)eb, words);
    } else {
        if (other)
            pack(cg, &other, 1, elem, w, ow);
        masked_load(cg, ptr, pred, other ? ow : NULL, w, words, NULL);
    }
    unpack(cg, words, 1, elem, w, &out);
    return out;
}

/* The width of the vectors a thread may use when its whole mask is true
 * (`vec_masked`, checked against the layout as `vec` is), or v when the op
 * has none wider than v. */
static int split_width(const IrOp *op, const LinearLayout *ll, int eb, int v) {
    int64_t w = ir_op_get_int(op, "vec_masked", 1);
    if (!ll || w <= v || !tc_is_pow2(w))
        return v;
    while (w > v && (w * eb > 16 || !contiguous(ll, (int)w)))
        w /= 2;
    return w > v ? (int)w : v;
}

/* The split's branch: on whether all n of the thread's mask registers are
 * true. The builder is left in the all-true block; *part is the other, and
 * both end in *join. */
static void begin_split(Cg *cg, const CgVal *mask, int n, LLVMBasicBlockRef *part, LLVMBasicBlockRef *join) {
    LLVMValueRef all = cg_reg(mask, 0);
    for (int r = 1; r < n; r++)
        all = LLVMBuildAnd(cg->b, all, cg_reg(mask, r), "");
    LLVMBasicBlockRef full = cg_block(cg, "split.full");
    *part = cg_block(cg, "split.part");
    *join = cg_block(cg, "split.join");
    LLVMBuildCondBr(cg->b, all, full, *part);
    LLVMPositionBuilderAtEnd(cg->b, full);
}

/* Loads the n registers of a thread in groups of v: gp[r] is the pointer of
 * the group at register r; mask and other may be NULL. */
static void load_groups(Cg *cg, LLVMValueRef *gp, int n, int v, const IrType *elem, const CgVal *mask,
                        const CgVal *other, const Evict *ev, LLVMValueRef *out) {
    int eb = ir_type_bytes(elem);
    Words w = words_of(cg, v * eb);
    for (int r = 0; r < n; r += v) {
        LLVMValueRef words[4];
        if (!mask && !ev->l1) {
            plain_load(cg, gp[r], w, (unsigned)(v * eb), words);
        } else if (!mask) {
            masked_load(cg, gp[r], LLVMConstInt(cg->t_i1, 1, 0), NULL, w, words, ev);
        } else {
            LLVMValueRef ow[4];
            if (other) {
                LLVMValueRef vals[16];
                for (int j = 0; j < v; j++)
                    vals[j] = cg_reg(other, r + j);
                pack(cg, vals, v, elem, w, ow);
            }
            masked_load(cg, gp[r], cg_reg(mask, r), other ? ow : NULL, w, words, ev);
        }
        unpack(cg, words, v, elem, w, out + r);
    }
}

bool cg_lower_load(Cg *cg, IrOp *op) {
    const IrType *pt = op->operands[0]->type, *rt = op->results[0]->type;
    const IrType *elem = ir_type_elem(rt);
    const LinearLayout *ll = NULL;
    if (pt->kind == IR_TILE && !(ll = cg_ll(cg, pt, op)))
        return false;
    CgVal *ptrs = cg_get(cg, op->operands[0]);
    CgVal *mask = op->num_operands > 1 ? cg_get(cg, op->operands[1]) : NULL;
    CgVal *other = op->num_operands > 2 ? cg_get(cg, op->operands[2]) : NULL;
    int eb = ir_type_bytes(elem);
    int n = ptrs->n, v = cg_vec_width(op, ll, eb);
    int wide = mask ? split_width(op, ll, eb, v) : v;
    CgVal *res = cg_new_val(cg, n, ll);
    LLVMValueRef *gp = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    cg_group_pointers(cg, op->operands[0], ll, v, gp);
    Evict ev = evict_of(cg, op); /* a hinted access is inline PTX, predicated on true when unmasked */
    if (wide == v) {
        load_groups(cg, gp, n, v, elem, mask, other, &ev, res->v);
        cg_set(cg, op->results[0], res);
        return true;
    }
    /* The split: vectors of `wide` where the thread's whole mask is true (a
     * row's inner tiles), groups of v where it is not (its last tile). */
    LLVMValueRef *full = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    LLVMValueRef *part = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    LLVMBasicBlockRef bpart, join;
    begin_split(cg, mask, n, &bpart, &join);
    load_groups(cg, gp, n, wide, elem, NULL, NULL, &ev, full);
    LLVMBasicBlockRef end_full = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, bpart);
    load_groups(cg, gp, n, v, elem, mask, other, &ev, part);
    LLVMBasicBlockRef end_part = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    for (int r = 0; r < n; r++) {
        res->v[r] = LLVMBuildPhi(cg->b, LLVMTypeOf(full[r]), "");
        LLVMAddIncoming(res->v[r], &full[r], &end_full, 1);
        LLVMAddIncoming(res->v[r], &part[r], &end_part, 1);
    }
    cg_set(cg, op->results[0], res);
    return true;
}

/* Stores the n registers of a thread in groups of v; mask and owner may be
 * NULL. */
static void store_groups(Cg *cg, LLVMValueRef *gp, int n, int v, const IrType *elem, const CgVal *vals,
                         const CgVal *mask, LLVMValueRef owner, const Evict *ev) {
    int eb = ir_type_bytes(elem);
    Words w = words_of(cg, v * eb);
    for (int r = 0; r < n; r += v) {
        LLVMValueRef group[16], words[4];
        for (int j = 0; j < v; j++)
            group[j] = cg_reg(vals, r + j);
        pack(cg, group, v, elem, w, words);
        LLVMValueRef pred = and_pred(cg, mask ? cg_reg(mask, r) : NULL, owner);
        if (!pred && !ev->l1)
            plain_store(cg, gp[r], w, (unsigned)(v * eb), words);
        else
            masked_store(cg, gp[r], words, pred ? pred : LLVMConstInt(cg->t_i1, 1, 0), w, ev);
    }
}

bool cg_lower_store(Cg *cg, IrOp *op) {
    const IrType *pt = op->operands[0]->type;
    const IrType *elem = ir_type_elem(op->operands[1]->type);
    const LinearLayout *ll = NULL;
    if (pt->kind == IR_TILE && !(ll = cg_ll(cg, pt, op)))
        return false;
    CgVal *ptrs = cg_get(cg, op->operands[0]);
    CgVal *vals = cg_get(cg, op->operands[1]);
    CgVal *mask = op->num_operands > 2 ? cg_get(cg, op->operands[2]) : NULL;
    int eb = ir_type_bytes(elem);
    int n = ptrs->n, v = cg_vec_width(op, ll, eb);
    int wide = mask ? split_width(op, ll, eb, v) : v;
    LLVMValueRef owner = NULL;
    if (!ll)
        owner = first_thread(cg);
    else if (ll_broadcast_mask(ll, LL_LANE) || ll_broadcast_mask(ll, LL_WARP))
        owner = cg_owner(cg, ll);
    LLVMValueRef *gp = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    cg_group_pointers(cg, op->operands[0], ll, v, gp);
    Evict ev = evict_of(cg, op);
    if (wide == v) {
        store_groups(cg, gp, n, v, elem, vals, mask, owner, &ev);
        return true;
    }
    /* the split, as for loads */
    LLVMBasicBlockRef bpart, join;
    begin_split(cg, mask, n, &bpart, &join);
    store_groups(cg, gp, n, wide, elem, vals, NULL, owner, &ev);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, bpart);
    store_groups(cg, gp, n, v, elem, vals, mask, owner, &ev);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    return true;
}

static bool rmw_op(Cg *cg, const IrOp *op, const IrType *elem, LLVMAtomicRMWBinOp *out) {
    const char *kind = ir_op_get_word(op, "kind");
    bool f = ir_type_is_float(elem);
    if (!kind || elem->kind == IR_I1 || elem->kind == IR_PTR)
        return cg_error(cg, op, "atomic %s on %s is not supported", kind ? kind : "?", ir_scalar_name(elem->kind));
    if (strcmp(kind, "add") == 0)
        *out = f ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
    else if (strcmp(kind, "max") == 0)
        *out = f ? LLVMAtomicRMWBinOpFMax : LLVMAtomicRMWBinOpMax;
    else if (strcmp(kind, "min") == 0)
        *out = f ? LLVMAtomicRMWBinOpFMin : LLVMAtomicRMWBinOpMin;
    else if (strcmp(kind, "xchg") == 0)
        *out = LLVMAtomicRMWBinOpXchg;
    else
        return cg_error(cg, op, "unknown atomic kind '%s' (add, max, min, xchg)", kind);
    return true;
}

/* The PTX atom instruction for kind on elem ("atom.global.add.f32"), with
 * its register constraint and register type, or NULL where PTX has none (LLVM
 * then expands atomicrmw into a compare-and-swap loop). */
static const char *atom_instr(Cg *cg, const char *kind, const IrType *elem, char *reg, LLVMTypeRef *rt) {
    bool f = ir_type_is_float(elem);
    int bits = ir_type_bits(elem);
    *reg = bits == 64 ? (f ? 'd' : 'l') : bits == 32 ? (f ? 'f' : 'r') : 'h';
    *rt = bits == 16 ? cg->t_i16 : cg_type(cg, elem);
    if (strcmp(kind, "add") == 0) {
        switch (elem->kind) {
        case IR_I32: return "atom.global.add.u32";
        case IR_I64: return "atom.global.add.u64";
        case IR_F32: return "atom.global.add.f32";
        case IR_F64: return "atom.global.add.f64";
        case IR_F16: return "atom.global.add.noftz.f16";
        case IR_BF16: return cg->target->sm >= 90 ? "atom.global.add.noftz.bf16" : NULL;
        default: return NULL;
        }
    }
    if (strcmp(kind, "max") == 0 || strcmp(kind, "min") == 0) {
        if (elem->kind == IR_I32)
            return kind[1] == 'a' ? "atom.global.max.s32" : "atom.global.min.s32";
        if (elem->kind == IR_I64)
            return kind[1] == 'a' ? "atom.global.max.s64" : "atom.global.min.s64";
        return NULL;
    }
    if (strcmp(kind, "xchg") == 0 && (bits == 32 || bits == 64))
        return bits == 32 ? "atom.global.exch.b32" : "atom.global.exch.b64";
    return NULL;
}

/* `[@pred] red.global.add.vN.f32 [ptr], {vals}`: n (2 or 4) adjacent f32
 * added, the old values not returned. */
static void vector_red_add(Cg *cg, LLVMValueRef ptr, LLVMValueRef *vals, int n, LLVMValueRef pred) {
    Buf text, cons;
    buf_init(&text);
    buf_init(&cons);
    LLVMValueRef args[2 + 4];
    args[0] = ptr;
    for (int i = 0; i < n; i++)
        args[1 + i] = vals[i];
    if (pred) {
        args[1 + n] = pred;
        buf_printf(&text, "@$%d ", n + 1);
    }
    buf_printf(&text, "red.global.add%s.f32 [$0], ", vec_suffix(n));
    operand_list(&text, 1, n);
    buf_puts(&text, ";");
    buf_puts(&cons, "l");
    for (int i = 0; i < n; i++)
        buf_puts(&cons, ",f");
    if (pred)
        buf_puts(&cons, ",b");
    cg_asm(cg, cg->t_void, text.data, cons.data, args, n + 1 + (pred != NULL), true);
    buf_free(&text);
    buf_free(&cons);
}

bool cg_lower_atomic(Cg *cg, IrOp *op) {
    const IrType *pt = op->operands[0]->type;
    const IrType *elem = ir_type_elem(op->operands[1]->type);
    const LinearLayout *ll = NULL;
    if (pt->kind == IR_TILE && !(ll = cg_ll(cg, pt, op)))
        return false;
    LLVMAtomicRMWBinOp rmw = LLVMAtomicRMWBinOpAdd;
    if (!rmw_op(cg, op, elem, &rmw))
        return false;
    CgVal *ptrs = cg_get(cg, op->operands[0]);
    CgVal *vals = cg_get(cg, op->operands[1]);
    CgVal *mask = op->num_operands > 2 ? cg_get(cg, op->operands[2]) : NULL;
    bool copies = !ll || ll_broadcast_mask(ll, LL_LANE) || ll_broadcast_mask(ll, LL_WARP);
    LLVMValueRef owner = !ll ? first_thread(cg) : copies ? cg_owner(cg, ll) : NULL;
    LLVMTypeRef t = cg_type(cg, elem);
    int n = ptrs->n;
    CgVal *res = cg_new_val(cg, n, ll);
    char reg;
    LLVMTypeRef rt;
    const char *atom = atom_instr(cg, ir_op_get_word(op, "kind"), elem, &reg, &rt);
    /* f32 adds whose old values nothing reads, `vec` adjacent elements per
     * register group: one `red.global.add.v2.f32` / `.v4.f32` per group
     * (sm_90, PTX 8.1). */
    int v = cg_vec_width(op, ll, ir_type_bytes(elem));
    if (atom && v > 1 && elem->kind == IR_F32 && rmw == LLVMAtomicRMWBinOpFAdd && cg->target->sm >= 90 &&
        cg->target->arch_a && !cg_is_used(cg, op->results[0])) {
        LLVMValueRef *gp = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
        cg_group_pointers(cg, op->operands[0], ll, v, gp);
        for (int r = 0; r < n; r += v) {
            LLVMValueRef group[4];
            for (int j = 0; j < v; j++)
                group[j] = cg_reg(vals, r + j);
            vector_red_add(cg, gp[r], group, v, and_pred(cg, mask ? cg_reg(mask, r) : NULL, owner));
        }
        for (int r = 0; r < n; r++)
            res->v[r] = LLVMGetUndef(t); /* never read */
        cg_set(cg, op->results[0], res);
        return true;
    }
    for (int r = 0; r < n && atom; r++) {
        /* `@p atom...`: no branch, the old value unspecified where p is false. */
        LLVMValueRef pred = and_pred(cg, mask ? cg_reg(mask, r) : NULL, owner);
        char text[96], cons[16];
        snprintf(text, sizeof text, "%s%s $0, [$1], $2;", pred ? "@$3 " : "", atom);
        snprintf(cons, sizeof cons, "=%c,l,%c%s", reg, reg, pred ? ",b" : "");
        LLVMValueRef v = cg_reg(vals, r);
        if (rt != t)
            v = LLVMBuildBitCast(cg->b, v, rt, "");
        LLVMValueRef args[3] = {ptrs->v[r], v, pred};
        LLVMValueRef old = cg_asm(cg, rt, text, cons, args, pred ? 3 : 2, true);
        res->v[r] = rt != t ? LLVMBuildBitCast(cg->b, old, t, "") : old;
    }
    for (int r = 0; r < n && !atom; r++) {
        LLVMValueRef pred = and_pred(cg, mask ? cg_reg(mask, r) : NULL, owner);
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(cg->b), doit = NULL, cont = NULL;
        if (pred) {
            doit = cg_block(cg, "atomic");
            cont = cg_block(cg, "atomic.end");
            LLVMBuildCondBr(cg->b, pred, doit, cont);
            LLVMPositionBuilderAtEnd(cg->b, doit);
        }
        LLVMValueRef old = LLVMBuildAtomicRMW(cg->b, rmw, ptrs->v[r], cg_reg(vals, r), LLVMAtomicOrderingMonotonic, 0);
        if (pred) {
            LLVMBuildBr(cg->b, cont);
            LLVMPositionBuilderAtEnd(cg->b, cont);
            LLVMValueRef phi = LLVMBuildPhi(cg->b, t, "");
            LLVMValueRef in[2] = {LLVMConstNull(t), old};
            LLVMBasicBlockRef from[2] = {cur, doit};
            LLVMAddIncoming(phi, in, from, 2);
            old = phi;
        }
        res->v[r] = old;
    }
    if (copies && cg_is_used(cg, op->results[0])) {
        /* Owners publish the old values; every copy reads them back. */
        int eb = ir_type_bytes(elem);
        int64_t base = cg_scratch_base(op);
        for (int pass = 0; pass < 2; pass++) {
            LLVMBasicBlockRef st = NULL, cont = NULL;
            cg_barrier(cg);
            if (pass == 0) {
                st = cg_block(cg, "atomic.publish");
                cont = cg_block(cg, "atomic.published");
                LLVMBuildCondBr(cg->b, owner, st, cont);
                LLVMPositionBuilderAtEnd(cg->b, st);
            }
            for (int r = 0; r < n; r++) {
                LLVMValueRef off = cg_i32(cg, base);
                if (ll) {
                    LLVMValueRef c[IR_MAX_RANK];
                    for (int d = 0; d < ll->rank; d++)
                        c[d] = cg_coord(cg, ll, r, d);
                    LLVMValueRef lin = cg_linear_index(cg, ll->rank, ll->shape, c);
                    off = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, cg_i32(cg, eb), ""), off, "");
                }
                if (pass == 0)
                    cg_smem_store(cg, res->v[r], elem, off);
                else
                    res->v[r] = cg_smem_load(cg, elem, off);
            }
            if (pass == 0) {
                LLVMBuildBr(cg->b, cont);
                LLVMPositionBuilderAtEnd(cg->b, cont);
            }
        }
    }
    cg_set(cg, op->results[0], res);
    return true;
}
