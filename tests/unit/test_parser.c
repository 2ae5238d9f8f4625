/*
 * test_parser.c — the front end's lexer and parser: AST shapes for every
 * construct, source locations, the --emit=ast dump, syntax error messages and
 * recovery, and inputs meant to break things (deep nesting, long chains,
 * random bytes, every truncation of a valid kernel, embedded NULs, huge
 * literals). Those must end in diagnostics, never in a crash: run this suite
 * under ASan and UBSan too.
 */
#include "frontend/frontend.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One parse: its arena, diagnostics and result, freed by done(). */
typedef struct {
    Arena arena;
    DiagList diags;
    Source src;
    AstFile *file;
} Parse;

static Parse *parse_bytes(const char *text, size_t len) {
    Parse *p = calloc(1, sizeof *p);
    arena_init(&p->arena);
    diag_init(&p->diags);
    p->src.name = "test.tile";
    p->src.text = text;
    p->src.len = len;
    TcGuard g;
    if (TC_GUARD(g)) {
        fprintf(stderr, "internal error while parsing: %s\n", g.message);
        CHECK(!"fe_parse hit an internal error");
        return p;
    }
    p->file = fe_parse(&p->arena, &p->src, &p->diags);
    tc_guard_pop(&g);
    return p;
}

static Parse *parse(const char *text) {
    return parse_bytes(text, strlen(text));
}

static void done(Parse *p) {
    diag_free(&p->diags);
    arena_free(&p->arena);
    free(p);
}

/* The first error's message, or "" when there is none. */
static const char *first_error(const Parse *p) {
    for (const Diag *g = p->diags.head; g; g = g->next)
        if (g->level == DIAG_ERROR)
            return g->msg;
    return "";
}

static bool has_error(const Parse *p, const char *substring) {
    for (const Diag *g = p->diags.head; g; g = g->next)
        if (g->level == DIAG_ERROR && strstr(g->msg, substring))
            return true;
    return false;
}

/* The first statement of the first declaration's body. */
static AstNode *stmt(const Parse *p, int i) {
    if (!p->file || p->file->num_decls < 1)
        return NULL;
    AstNode *body = p->file->decls[0]->body;
    return body && i < body->num_items ? body->items[i] : NULL;
}

/* The right-hand side of `let x = EXPR;` parsed inside a kernel. */
static AstNode *expr_of(Parse *p) {
    AstNode *s = stmt(p, 0);
    return s ? s->rhs : NULL;
}

static Parse *parse_expr(const char *expr) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "kernel k() { let x = %s; }", expr);
    return parse(buf);
}

/* Checks that the tree under n is no deeper than the limit allows (the parser
 * replaces anything deeper by a stand-in) and that every node has a location.
 * Returns the depth. */
static int check_tree(const AstNode *n, int level) {
    if (!n)
        return 0;
    CHECK(level < 2 * FE_MAX_DEPTH + 16);
    if (level >= 2 * FE_MAX_DEPTH + 16)
        return level;
    CHECK(n->loc.line > 0 && n->loc.col > 0);
    int d = 0;
    const AstNode *kids[] = {n->lhs, n->rhs, n->cond, n->body, n->els};
    for (int i = 0; i < 5; i++) {
        int k = check_tree(kids[i], level + 1);
        d = k > d ? k : d;
    }
    for (int i = 0; i < n->num_items; i++) {
        int k = check_tree(n->items[i], level + 1);
        d = k > d ? k : d;
    }
    return d + 1;
}

static void check_file(const Parse *p) {
    CHECK(p->file != NULL);
    if (!p->file)
        return;
    for (int i = 0; i < p->file->num_decls; i++)
        check_tree(p->file->decls[i], 0);
    /* every error points into the file */
    for (const Diag *g = p->diags.head; g; g = g->next)
        CHECK(g->loc.src == &p->src && g->loc.line > 0 && g->loc.col > 0);
    /* and the dump walks the whole tree */
    Buf out;
    buf_init(&out);
    fe_dump_ast(p->file, &out);
    buf_free(&out);
}

static const char softmax[] =
    "kernel softmax(f16* out, const f16* x, i64 stride, i32 n_cols, constexpr i32 BLOCK = 1024) {\n"
    "    let row  = program_id(0);\n"
    "    let cols = arange(0, BLOCK);\n"
    "    let mask = cols < n_cols;\n"
    "    let v = f32(load(x + row * stride + cols, mask, -inf));\n"
    "    let e = exp(v - max(v, 0));\n"
    "    store(out + row * stride + cols, f16(e / sum(e, 0)), mask);\n"
    "}\n";

TEST(softmax_shape) {
    Parse *p = parse(softmax);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->num_decls, 1);
    AstNode *k = p->file->decls[0];
    CHECK(k->kind == AST_KERNEL);
    CHECK_EQ_STR(k->name, "softmax");
    CHECK_EQ_INT(k->num_items, 5);
    AstNode *out = k->items[0], *x = k->items[1], *block = k->items[4];
    CHECK(out->kind == AST_PARAM && out->type.scalar == IR_F16 && out->type.is_pointer && !out->type.is_const);
    CHECK(x->type.is_const && x->type.is_pointer);
    CHECK(k->items[2]->type.scalar == IR_I64 && !k->items[2]->type.is_pointer);
    CHECK(block->type.is_constexpr && block->type.scalar == IR_I32);
    CHECK(block->rhs && block->rhs->kind == AST_INT_LIT && block->rhs->ival == 1024);
    CHECK_EQ_INT(k->body->num_items, 6);

    AstNode *row = stmt(p, 0);
    CHECK(row->kind == AST_LET);
    CHECK_EQ_STR(row->name, "row");
    CHECK(row->rhs->kind == AST_CALL && row->rhs->lhs->kind == AST_IDENT);
    CHECK_EQ_STR(row->rhs->lhs->name, "program_id");
    CHECK_EQ_INT(row->rhs->num_items, 1);
    CHECK(row->rhs->items[0]->kind == AST_INT_LIT && row->rhs->items[0]->ival == 0);

    /* f32(load(..., -inf)) is a cast: a call whose callee is a type */
    AstNode *v = stmt(p, 3)->rhs;
    CHECK(v->kind == AST_CALL && v->lhs->kind == AST_TYPE && v->lhs->type.scalar == IR_F32);
    AstNode *load = v->items[0];
    CHECK_EQ_INT(load->num_items, 3);
    AstNode *neg_inf = load->items[2];
    CHECK(neg_inf->kind == AST_UNARY && neg_inf->op == AST_OP_NEG);
    CHECK(neg_inf->lhs->kind == AST_FLOAT_LIT && isinf(neg_inf->lhs->fval));

    AstNode *st = stmt(p, 5);
    CHECK(st->kind == AST_EXPR_STMT && st->lhs->kind == AST_CALL);
    CHECK_EQ_STR(st->lhs->lhs->name, "store");
    check_file(p);
    done(p);
}

TEST(locations) {
    Parse *p = parse("/* a\n comment */ kernel\tk(i32 n) {\n\tlet  x = n + 1;\n  // x\n  x2 = 3;\n}\n");
    AstNode *k = p->file->decls[0];
    CHECK_EQ_INT(k->loc.line, 2);
    CHECK_EQ_INT(k->loc.col, 13);
    CHECK_EQ_INT(k->items[0]->loc.col, 22); /* tabs count one column */
    AstNode *let = stmt(p, 0);
    CHECK_EQ_INT(let->loc.line, 3);
    CHECK_EQ_INT(let->loc.col, 2);
    CHECK_EQ_INT(let->rhs->loc.col, 11);      /* a binary node sits at its first token */
    CHECK_EQ_INT(let->rhs->rhs->loc.col, 15); /* the literal 1 */
    AstNode *assign = stmt(p, 1);
    CHECK_EQ_INT(assign->loc.line, 5);
    CHECK_EQ_INT(assign->loc.col, 3);
    CHECK(p->file->src == &p->src);
    done(p);
}

TEST(precedence) {
    Parse *p = parse_expr("a + b * c - d");
    AstNode *e = expr_of(p);
    CHECK(e->kind == AST_BINARY && e->op == AST_OP_SUB); /* (a + (b*c)) - d */
    CHECK(e->lhs->op == AST_OP_ADD && e->lhs->rhs->op == AST_OP_MUL);
    done(p);

    p = parse_expr("m < n & k >= 0 || !f && g == h");
    e = expr_of(p);
    CHECK(e->op == AST_OP_LOR);
    CHECK(e->lhs->op == AST_OP_BITAND && e->lhs->lhs->op == AST_OP_LT && e->lhs->rhs->op == AST_OP_GE);
    CHECK(e->rhs->op == AST_OP_LAND && e->rhs->lhs->kind == AST_UNARY && e->rhs->lhs->op == AST_OP_NOT);
    CHECK(e->rhs->rhs->op == AST_OP_EQ);
    done(p);

    p = parse_expr("a ? b : c ? d : e");
    e = expr_of(p);
    CHECK(e->kind == AST_TERNARY && e->rhs->kind == AST_TERNARY && e->lhs->kind == AST_IDENT);
    done(p);

    p = parse_expr("-x[:, None] * ~y << 2 | z ^ w % 3");
    e = expr_of(p);
    CHECK(e->op == AST_OP_BITOR && e->rhs->op == AST_OP_BITXOR && e->rhs->rhs->op == AST_OP_MOD);
    CHECK(e->lhs->op == AST_OP_SHL && e->lhs->lhs->op == AST_OP_MUL);
    AstNode *neg = e->lhs->lhs->lhs;
    CHECK(neg->kind == AST_UNARY && neg->op == AST_OP_NEG && neg->lhs->kind == AST_INDEX);
    CHECK_EQ_INT(neg->lhs->num_items, 2);
    CHECK(neg->lhs->items[0]->kind == AST_SLICE && neg->lhs->items[1]->kind == AST_NONE);
    CHECK(e->lhs->lhs->rhs->op == AST_OP_BITNOT);
    done(p);

    p = parse_expr("(a + b) * +c / d >> e");
    e = expr_of(p);
    CHECK(e->op == AST_OP_SHR && e->lhs->op == AST_OP_DIV && e->lhs->lhs->op == AST_OP_MUL);
    CHECK(e->lhs->lhs->lhs->op == AST_OP_ADD && e->lhs->lhs->rhs->op == AST_OP_PLUS);
    done(p);
}

TEST(literals) {
    Parse *p = parse_expr("f(0x1F, 9223372036854775807, 1.5, 1e-6, .5, 2., 2.5E+3, true, false, inf, [BM, 4], f32)");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    AstNode *c = expr_of(p);
    CHECK_EQ_INT(c->num_items, 12);
    CHECK(c->items[0]->kind == AST_INT_LIT && c->items[0]->ival == 31);
    CHECK(c->items[1]->ival == INT64_MAX);
    CHECK(c->items[2]->kind == AST_FLOAT_LIT && c->items[2]->fval == 1.5);
    CHECK(c->items[3]->fval == 1e-6);
    CHECK(c->items[4]->fval == 0.5);
    CHECK(c->items[5]->fval == 2.0);
    CHECK(c->items[6]->fval == 2500.0);
    CHECK(c->items[7]->kind == AST_BOOL_LIT && c->items[7]->ival == 1);
    CHECK(c->items[8]->kind == AST_BOOL_LIT && c->items[8]->ival == 0);
    CHECK(c->items[9]->kind == AST_FLOAT_LIT && isinf(c->items[9]->fval) && c->items[9]->fval > 0);
    CHECK(c->items[10]->kind == AST_LIST && c->items[10]->num_items == 2);
    CHECK(c->items[11]->kind == AST_TYPE && c->items[11]->type.scalar == IR_F32);
    done(p);

    p = parse_expr("bool(i1(x)) + i8(1) + i16(1) + i64(1) + bf16(1) + f64(1) + []");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    AstNode *e = expr_of(p);
    CHECK(e->rhs->kind == AST_LIST && e->rhs->num_items == 0);
    AstNode *b = e;
    while (b->kind == AST_BINARY)
        b = b->lhs;
    CHECK(b->kind == AST_CALL && b->lhs->type.scalar == IR_I1 && b->items[0]->lhs->type.scalar == IR_I1);
    done(p);

    /* trailing commas in lists, calls and parameter lists */
    p = parse("kernel k(i32 a, f32* b,) { store(b, [1, 2,], a,); }");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->decls[0]->num_items, 2);
    CHECK_EQ_INT(stmt(p, 0)->lhs->num_items, 3);
    done(p);
}

TEST(statements) {
    Parse *p = parse("func f(f32 x, constexpr i32 N) {\n"
                     "  var acc = 0; acc += x; acc -= 1; acc *= 2; acc /= 3; acc %= 4;\n"
                     "  acc <<= 1; acc >>= 1; acc &= 1; acc |= 1; acc ^= 1; acc = 5;\n"
                     "  if (a) { } else if (b) c = 1; else { }\n"
                     "  for (i in range(n)) { } for (i in range(0, n)) x = 1; for (i in range(0, n, 2)) { }\n"
                     "  static_assert(N > 0); static_assert(N < 9, \"N \\\"too\\\" big\\n\");\n"
                     "  ; { let y = 1; }\n"
                     "  return;\n"
                     "  return acc * x;\n"
                     "}\n");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    AstNode *f = p->file->decls[0];
    CHECK(f->kind == AST_FUNC && f->items[0]->type.scalar == IR_F32 && !f->items[0]->type.is_pointer);
    CHECK(f->items[1]->type.is_constexpr);
    CHECK_EQ_INT(f->body->num_items, 1 + 11 + 1 + 3 + 2 + 1 + 2); /* the empty statement leaves no node */
    CHECK(stmt(p, 0)->kind == AST_VAR);
    static const AstOp ops[] = {AST_OP_ADD, AST_OP_SUB,    AST_OP_MUL,   AST_OP_DIV,    AST_OP_MOD,   AST_OP_SHL,
                                AST_OP_SHR, AST_OP_BITAND, AST_OP_BITOR, AST_OP_BITXOR, AST_OP_ASSIGN};
    for (int i = 0; i < 11; i++) {
        AstNode *s = stmt(p, 1 + i);
        CHECK(s->kind == AST_ASSIGN && s->op == ops[i]);
        CHECK_EQ_STR(s->name, "acc");
    }
    AstNode *ifs = stmt(p, 12);
    CHECK(ifs->kind == AST_IF && ifs->body->kind == AST_BLOCK && ifs->els->kind == AST_IF);
    CHECK(ifs->els->body->kind == AST_ASSIGN && ifs->els->els->kind == AST_BLOCK);
    for (int i = 0; i < 3; i++) {
        AstNode *s = stmt(p, 13 + i);
        CHECK(s->kind == AST_FOR && s->num_items == i + 1);
        CHECK_EQ_STR(s->name, "i");
    }
    CHECK(stmt(p, 14)->body->kind == AST_ASSIGN);
    AstNode *sa = stmt(p, 16), *sb = stmt(p, 17);
    CHECK(sa->kind == AST_STATIC_ASSERT && sa->cond->op == AST_OP_GT && sa->str == NULL);
    CHECK_EQ_STR(sb->str, "N \"too\" big\n");
    CHECK(stmt(p, 18)->kind == AST_BLOCK && stmt(p, 18)->num_items == 1);
    CHECK(stmt(p, 19)->kind == AST_RETURN && stmt(p, 19)->lhs == NULL);
    CHECK(stmt(p, 20)->kind == AST_RETURN && stmt(p, 20)->lhs->op == AST_OP_MUL);
    check_file(p);
    done(p);

    /* an empty statement as a body becomes an empty block */
    p = parse("kernel k() { if (a) ; else ; for (i in range(2)) ; }");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK(stmt(p, 0)->body->kind == AST_BLOCK && stmt(p, 0)->els->kind == AST_BLOCK);
    CHECK(stmt(p, 1)->body->kind == AST_BLOCK && stmt(p, 1)->body->num_items == 0);
    done(p);

    /* a dangling else binds to the nearest if */
    p = parse("kernel k() { if (a) if (b) x = 1; else x = 2; }");
    AstNode *outer = stmt(p, 0);
    CHECK(outer->els == NULL && outer->body->kind == AST_IF && outer->body->els != NULL);
    done(p);
}

TEST(several_decls) {
    Parse *p = parse("kernel a() {}\nfunc b(f32 x) { return x; }\nkernel c(bool f, constexpr bool C = false) {}\n");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->num_decls, 3);
    CHECK(p->file->decls[1]->kind == AST_FUNC);
    AstNode *c = p->file->decls[2];
    CHECK(c->items[0]->type.scalar == IR_I1);
    CHECK(c->items[1]->rhs->kind == AST_BOOL_LIT && c->items[1]->rhs->ival == 0);
    done(p);

    p = parse("");
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->num_decls, 0);
    done(p);
    p = parse_bytes(NULL, 0);
    CHECK_EQ_INT(p->file->num_decls, 0);
    done(p);

    /* many declarations: the list grows without limit */
    Buf b;
    buf_init(&b);
    for (int i = 0; i < 3000; i++)
        buf_printf(&b, "kernel k%d(i32 n) { let x = n; }\n", i);
    p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->num_decls, 3000);
    CHECK_EQ_STR(p->file->decls[2999]->name, "k2999");
    done(p);
    buf_free(&b);
}

TEST(dump) {
    Parse *p = parse("kernel k(const f16* x, constexpr i32 B = 4) {\n"
                     "  var s = x[:, None] + 1.5;\n"
                     "  s += -2;\n"
                     "  if (c) { } else s = b ? 1 : 0;\n"
                     "  for (i in range(0, B)) { static_assert(true, \"m\"); }\n"
                     "  store(x, f16([1]), inf);\n"
                     "}\n");
    Buf out;
    buf_init(&out);
    fe_dump_ast(p->file, &out);
    CHECK_EQ_STR(out.data, "kernel k @1:1\n"
                           "  param x: const f16* @1:10\n"
                           "  param B: constexpr i32 @1:24\n"
                           "    int 4 @1:42\n"
                           "  block @1:45\n"
                           "    var s @2:3\n"
                           "      binary + @2:11\n"
                           "        index @2:11\n"
                           "          ident x @2:11\n"
                           "          slice @2:13\n"
                           "          none @2:16\n"
                           "        float 1.5 @2:24\n"
                           "    assign s += @3:3\n"
                           "      unary - @3:8\n"
                           "        int 2 @3:9\n"
                           "    if @4:3\n"
                           "      ident c @4:7\n"
                           "      block @4:10\n"
                           "      else\n"
                           "        assign s = @4:19\n"
                           "          ternary @4:23\n"
                           "            ident b @4:23\n"
                           "            int 1 @4:27\n"
                           "            int 0 @4:31\n"
                           "    for i @5:3\n"
                           "      range\n"
                           "        int 0 @5:19\n"
                           "        ident B @5:22\n"
                           "      block @5:26\n"
                           "        static_assert \"m\" @5:28\n"
                           "          bool true @5:42\n"
                           "    expr @6:3\n"
                           "      call @6:3\n"
                           "        ident store @6:3\n"
                           "        ident x @6:9\n"
                           "        call @6:12\n"
                           "          type f16 @6:12\n"
                           "          list @6:16\n"
                           "            int 1 @6:17\n"
                           "        float inf @6:22\n");
    buf_free(&out);
    done(p);
}

TEST(names) {
    CHECK_EQ_STR(ast_op_spelling(AST_OP_LE), "<=");
    CHECK_EQ_STR(ast_op_spelling(AST_OP_LAND), "&&");
    CHECK_EQ_STR(ast_op_spelling(AST_OP_BITNOT), "~");
    CHECK_EQ_STR(ast_kind_name(AST_STATIC_ASSERT), "static_assert");
    CHECK_EQ_STR(ast_kind_name(AST_KERNEL), "kernel");
    Arena a;
    arena_init(&a);
    AstNode *list = ast_new(&a, AST_LIST, srcloc_none());
    for (int i = 0; i < 1000; i++) {
        AstNode *n = ast_new(&a, AST_INT_LIT, srcloc_none());
        n->ival = i;
        ast_push(&a, list, n);
    }
    CHECK_EQ_INT(list->num_items, 1000);
    int ok = 1;
    for (int i = 0; i < 1000; i++)
        ok &= list->items[i]->ival == i;
    CHECK(ok);
    arena_free(&a);
}

TEST(error_messages) {
    Parse *p = parse("kernel k() {\n  let v = load(x + cols;\n}\n");
    CHECK_EQ_STR(first_error(p), "expected ')' to close '(' at 2:15, saw ';'");
    CHECK_EQ_INT(p->diags.head->loc.line, 2);
    CHECK_EQ_INT(p->diags.head->loc.col, 24);
    done(p);

    p = parse("kernel k() { f(a]; }");
    CHECK_EQ_STR(first_error(p), "unmatched ']'");
    done(p);
    p = parse("kernel k() { f(a, [1, 2); }");
    CHECK_EQ_STR(first_error(p), "expected ']' to close '[' at 1:19, saw ')'");
    done(p);
    p = parse("kernel k() { let x = (a + b }");
    CHECK_EQ_STR(first_error(p), "expected ')' to close '(' at 1:22, saw '}'");
    done(p);
    p = parse("kernel k() {\n  let x = 1;\n");
    CHECK_EQ_STR(first_error(p), "expected '}' to close '{' at 1:12, saw end of file");
    done(p);
    p = parse("kernel k() { let x = 1 let y = 2; }");
    CHECK_EQ_STR(first_error(p), "expected ';', saw 'let'");
    done(p);
    p = parse("kernel k() { let x = ; }");
    CHECK_EQ_STR(first_error(p), "unexpected ';', expected an expression");
    done(p);
    p = parse("kernel k() { let 5 = 1; }");
    CHECK_EQ_STR(first_error(p), "unexpected '5', expected identifier");
    done(p);
    p = parse("kernel k() { else; }");
    CHECK_EQ_STR(first_error(p), "unexpected 'else', expected a statement or '}'");
    done(p);
    p = parse("let x = 1;");
    CHECK_EQ_STR(first_error(p), "unexpected 'let', expected 'kernel', 'func' or '@autotune'");
    done(p);
    p = parse("kernel k(x) {}"); /* x could be a type parameter: `x* p` or `x n` */
    CHECK_EQ_STR(first_error(p), "unexpected ')', expected identifier or '*'");
    done(p);
    p = parse("kernel k() { let y = x[1]; }");
    CHECK_EQ_STR(first_error(p), "unexpected '1', expected 'None' or ':'");
    done(p);
    p = parse("kernel k() { let y = None; }");
    CHECK_EQ_STR(first_error(p), "'None' is only allowed inside an index, as in x[:, None]");
    done(p);
    p = parse("kernel k() { let y = \"s\" \"t\"; }"); /* a string is an expression (device_print's label) */
    CHECK_EQ_STR(first_error(p), "expected ';', saw '\"t\"'");
    done(p);
    p = parse("kernel k(i32 n = 4, const f32 y) { for (i in range(1, 2, 3, 4)) {} }");
    CHECK_EQ_STR(first_error(p), "only constexpr parameters can have a default value");
    CHECK(has_error(p, "'const' applies only to pointer parameters (write 'const f32*')"));
    CHECK(has_error(p, "range() takes 1 to 3 arguments"));
    done(p);
    p = parse("kernel k() { x = 1 $ 2; y = `; }");
    CHECK_EQ_STR(first_error(p), "unexpected character '$'");
    CHECK(has_error(p, "unexpected character '`'"));
    done(p);
}

TEST(recovery_reports_each_error) {
    Parse *p = parse("kernel k(i32 n) {\n"
                     "    let a = (n + 1;\n"
                     "    let b = n * 2;\n"
                     "    let c = ;\n"
                     "    let d = n;\n"
                     "    store(x, a b);\n"
                     "}\n"
                     "kernel ok(i32 n) { let z = n; }\n");
    CHECK_EQ_INT(p->diags.num_errors, 3);
    int lines[3] = {0}, i = 0;
    for (const Diag *g = p->diags.head; g && i < 3; g = g->next)
        lines[i++] = g->loc.line;
    CHECK_EQ_INT(lines[0], 2);
    CHECK_EQ_INT(lines[1], 4);
    CHECK_EQ_INT(lines[2], 6);
    /* both kernels survive, with the good statements */
    CHECK_EQ_INT(p->file->num_decls, 2);
    CHECK_EQ_INT(p->file->decls[0]->body->num_items, 2);
    CHECK_EQ_STR(p->file->decls[1]->name, "ok");
    done(p);

    /* a broken if header: the block after it is still parsed and checked */
    p = parse("kernel k() {\n  if (a b) {\n    x = ;\n  }\n  y = 1 2;\n}\n");
    CHECK_EQ_INT(p->diags.num_errors, 3);
    done(p);

    /* a broken declaration header: the next declaration still parses */
    p = parse("kernel k(i32 x,, f32 y) { let q = ; }\nkernel j() { let z = 1; }\n");
    CHECK(p->diags.num_errors >= 1);
    CHECK_EQ_INT(p->file->num_decls, 1);
    CHECK_EQ_STR(p->file->decls[0]->name, "j");
    done(p);

    /* a block left open: the next declarations are not swallowed by it */
    p = parse("kernel a() {\n  let x = 1;\nkernel b() { let y = ; }\nfunc c() {}\n");
    CHECK_EQ_STR(first_error(p), "expected '}' to close '{' at 1:12, saw 'kernel'");
    CHECK_EQ_INT(p->diags.num_errors, 2);
    CHECK_EQ_INT(p->file->num_decls, 3);
    done(p);
    p = parse("kernel a() { if (x) { let x = f(1,\nkernel b() { }\n");
    CHECK_EQ_STR(first_error(p), "expected '}' to close '{' at 1:21, saw 'kernel'");
    CHECK_EQ_INT(p->diags.num_errors, 1);
    CHECK_EQ_INT(p->file->num_decls, 2);
    CHECK_EQ_STR(p->file->decls[1]->name, "b");
    done(p);

    /* after recovery the bracket stack names the right opener */
    p = parse("kernel k() {\n  f((1;\n  let x = [2;\n}\n");
    CHECK_EQ_STR(first_error(p), "expected ')' to close '(' at 2:5, saw ';'");
    CHECK(has_error(p, "expected ']' to close '[' at 3:11, saw ';'"));
    done(p);
}

TEST(lexical_errors) {
    Parse *p = parse("kernel k() { let x = 9223372036854775808; let y = 0x8000000000000000; }");
    CHECK_EQ_INT(p->diags.num_errors, 2);
    CHECK_EQ_STR(first_error(p), "integer literal is too large");
    CHECK_EQ_INT(p->diags.head->loc.col, 22);
    done(p);
    p = parse("kernel k() { let x = 1e309 + 1e-400 + 1.7976931348623157e308; }");
    CHECK_EQ_INT(p->diags.num_errors, 1);
    CHECK_EQ_STR(first_error(p), "floating-point literal is out of range");
    done(p);
    p = parse("kernel k() { let x = 12abc + 0x + 1e + 1.2.3; }");
    CHECK_EQ_INT(p->diags.num_errors, 4);
    CHECK_EQ_STR(first_error(p), "invalid numeric literal '12abc'");
    done(p);
    p = parse("kernel k() {\n  /* not closed\n  let x = 1;\n}\n");
    CHECK_EQ_INT(p->diags.num_errors, 1);
    CHECK_EQ_STR(first_error(p), "unterminated comment");
    CHECK_EQ_INT(p->diags.head->loc.line, 2);
    CHECK_EQ_INT(p->diags.head->loc.col, 3);
    done(p);
    p = parse("kernel k() {\n  static_assert(1, \"not closed);\n}\n");
    CHECK_EQ_STR(first_error(p), "unterminated string literal");
    CHECK_EQ_INT(p->diags.head->loc.col, 20);
    done(p);
    p = parse("kernel k() { static_assert(1, \"bad \\q escape\"); }");
    CHECK_EQ_STR(first_error(p), "unknown escape sequence '\\q' in string literal");
    CHECK_EQ_INT(p->diags.head->loc.col, 36);
    done(p);

    static const char nul[] = "kernel k() {\n  let x\0 = 1; \xff\xfe\xfd let y = 2;\n  static_assert(1, \"a\0b\");\n}";
    p = parse_bytes(nul, sizeof nul - 1);
    CHECK_EQ_INT(p->diags.num_errors, 2);
    CHECK_EQ_STR(first_error(p), "unexpected character '\\x00'");
    CHECK_EQ_INT(p->diags.head->loc.col, 8);
    CHECK(p->diags.head->next && strcmp(p->diags.head->next->msg, "unexpected character '\\xff'") == 0);
    CHECK_EQ_INT(p->file->decls[0]->body->num_items, 3);
    check_file(p);
    done(p);

    /* comments with stray bytes are fine */
    static const char comment[] = "// \xff\x01\n/* \0 \x80 */ kernel k() {}";
    p = parse_bytes(comment, sizeof comment - 1);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(p->file->num_decls, 1);
    done(p);
}

/* Repeats `a`, then `mid`, then `b`, n times each. */
static char *nest(const char *head, const char *a, int n, const char *mid, const char *b, const char *tail) {
    size_t la = strlen(a), lb = strlen(b);
    size_t len = strlen(head) + la * (size_t)n + strlen(mid) + lb * (size_t)n + strlen(tail) + 1;
    char *s = malloc(len), *q = s;
    q += sprintf(q, "%s", head);
    for (int i = 0; i < n; i++)
        q += sprintf(q, "%s", a);
    q += sprintf(q, "%s", mid);
    for (int i = 0; i < n; i++)
        q += sprintf(q, "%s", b);
    sprintf(q, "%s", tail);
    return s;
}

static void expect_too_deep(char *text) {
    Parse *p = parse(text);
    CHECK(has_error(p, "nesting too deep (more than 256 levels)"));
    CHECK(p->diags.num_errors <= 3);
    check_file(p);
    done(p);
    free(text);
}

TEST(deep_nesting) {
    enum { N = 20000 };
    expect_too_deep(nest("kernel k() { let x = ", "(", N, "a", ")", "; }"));
    expect_too_deep(nest("kernel k() { let x = ", "[", N, "a", "]", "; }"));
    expect_too_deep(nest("kernel k() ", "{", N, "", "}", ""));
    expect_too_deep(nest("kernel k() { let x = ", "-", N, "a", "", "; }"));
    expect_too_deep(nest("kernel k() { let x = ", "!~+", N, "a", "", "; }"));
    expect_too_deep(nest("kernel k() { let x = ", "f(", N, "a", ")", "; }"));
    expect_too_deep(nest("kernel k() { let x = ", "a ? ", N, "b", " : c", "; }"));
    expect_too_deep(nest("kernel k() { ", "if (a) ", N, "x = 1;", "", " }"));
    expect_too_deep(nest("kernel k() { ", "for (i in range(n)) ", N, "x = 1;", "", " }"));
    expect_too_deep(nest("kernel k() { if (a) x = 1; ", "else if (a) x = 1; ", N, "", "", " }"));
    expect_too_deep(nest("kernel k() { let x = a", "[None]", N, "", "", "; }"));
    expect_too_deep(nest("kernel k() { let x = ", "(-", N, "a", ")", "; }"));
    /* the limit applies to each expression separately: 200 levels twice is fine */
    char *ok = nest("kernel k() { let x = ", "(-", 200, "a", ")", "; let y = x; }");
    Parse *p = parse(ok);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK(expr_of(p)->depth == 201);
    done(p);
    free(ok);
    ok = nest("kernel k() ", "{ if (a) ", 120, "{}", "}", "");
    p = parse(ok);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    done(p);
    free(ok);
}

TEST(long_chains) {
    /* a + a + ... is a left-leaning tree as deep as it is long */
    enum { N = 100000 };
    Buf b;
    buf_init(&b);
    buf_puts(&b, "kernel k() { let x = a");
    for (int i = 1; i < N; i++)
        buf_puts(&b, " + a");
    buf_puts(&b, "; let y = ; }");
    Parse *p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 2); /* the chain once, and the later error */
    CHECK_EQ_STR(first_error(p), "nesting too deep (more than 256 levels)");
    check_file(p);
    done(p);

    /* 256 levels is the limit exactly */
    buf_free(&b);
    buf_puts(&b, "kernel k() { let x = a");
    for (int i = 1; i < FE_MAX_DEPTH; i++)
        buf_puts(&b, "+a");
    buf_puts(&b, "; }");
    p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(expr_of(p)->depth, FE_MAX_DEPTH);
    done(p);
    buf_free(&b);
    buf_puts(&b, "kernel k() { let x = a");
    for (int i = 1; i < FE_MAX_DEPTH + 1; i++)
        buf_puts(&b, "+a");
    buf_puts(&b, "; }");
    p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 1);
    done(p);

    /* long flat lists are not nesting */
    buf_free(&b);
    buf_puts(&b, "kernel k() { f(0");
    for (int i = 1; i < N; i++)
        buf_puts(&b, ", 1");
    buf_puts(&b, ");");
    for (int i = 1; i < N; i++)
        buf_puts(&b, " x = 1;");
    buf_puts(&b, " }");
    p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT(stmt(p, 0)->lhs->num_items, N);
    CHECK_EQ_INT(p->file->decls[0]->body->num_items, N);
    done(p);
    buf_free(&b);

    /* a very long identifier */
    buf_puts(&b, "kernel k() { let ");
    for (int i = 0; i < 100000; i++)
        buf_puts(&b, "x");
    buf_puts(&b, " = 1; }");
    p = parse_bytes(b.data, b.len);
    CHECK_EQ_INT(p->diags.num_errors, 0);
    CHECK_EQ_INT((long long)strlen(stmt(p, 0)->name), 100000);
    done(p);
    buf_free(&b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

TEST(random_bytes) {
    char *buf = malloc(8192);
    for (int iter = 0; iter < 300; iter++) {
        size_t len = rng() % 8192;
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)rng();
        Parse *p = parse_bytes(buf, len);
        check_file(p);
        done(p);
    }
    /* random tokens are closer to real input than random bytes */
    // clang-format off
    static const char *const toks[] = {"kernel", "func", "k", "(", ")", "{", "}", "[", "]", ",", ";", "let", "var",
                                       "x", "=", "+", "*", "-", "?", ":", "if", "else", "for", "in", "range", "1",
                                       "2.5", "None", "f32", "f16*", "const", "constexpr", "return", "+=", "<",
                                       "&&", "!", "static_assert", "\"s\"", "/*", "*/", "\n", "inf", "true"};
    // clang-format on
    Buf b;
    buf_init(&b);
    for (int iter = 0; iter < 500; iter++) {
        buf_free(&b);
        buf_puts(&b, "");
        int n = (int)(rng() % 400);
        for (int i = 0; i < n; i++) {
            buf_puts(&b, toks[rng() % (sizeof toks / sizeof toks[0])]);
            buf_puts(&b, " ");
        }
        Parse *p = parse_bytes(b.data, b.len);
        check_file(p);
        done(p);
    }
    buf_free(&b);
    free(buf);
}

TEST(truncations_and_mutations) {
    size_t len = strlen(softmax);
    char *copy = malloc(len + 1);
    /* every prefix: a diagnostic unless the prefix is the whole kernel */
    size_t last_brace = (size_t)(strrchr(softmax, '}') - softmax);
    for (size_t n = 0; n <= len; n++) {
        memcpy(copy, softmax, n); /* an exact-size buffer, so ASan sees reads past the end */
        char *exact = malloc(n ? n : 1);
        memcpy(exact, copy, n);
        Parse *p = parse_bytes(exact, n);
        if (n > 0 && n <= last_brace)
            CHECK(p->diags.num_errors > 0);
        if (n > last_brace)
            CHECK_EQ_INT(p->diags.num_errors, 0);
        check_file(p);
        done(p);
        free(exact);
    }
    /* single-byte mutations at every offset */
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, softmax, len);
        copy[i] = (char)rng();
        Parse *p = parse_bytes(copy, len);
        check_file(p);
        done(p);
    }
    free(copy);
}

TEST(error_cap) {
    /* far more errors than the list keeps: counted, dropped, quickly */
    Buf b;
    buf_init(&b);
    buf_puts(&b, "kernel k() {\n");
    for (int i = 0; i < 20000; i++)
        buf_puts(&b, "  let = ;\n  @\n");
    buf_puts(&b, "}\n");
    Parse *p = parse_bytes(b.data, b.len);
    CHECK(p->diags.truncated);
    CHECK(p->diags.num_errors >= 20000);
    done(p);
    buf_free(&b);
}

UNIT_SUITE(parser, softmax_shape, locations, precedence, literals, statements, several_decls, dump, names,
           error_messages, recovery_reports_each_error, lexical_errors, deep_nesting, long_chains, random_bytes,
           truncations_and_mutations, error_cap)
