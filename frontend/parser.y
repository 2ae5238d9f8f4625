/*
 * parser.y — the tile language grammar: tokens (from lexer.l) -> AST.
 *
 * A bison LALR(1) parser, pure and reentrant: every piece of state lives in
 * an FeParser (arena, source, diagnostics, the file being built, the lexer's
 * position and its stack of open brackets), so several files can be parsed at
 * once on different threads. The grammar is C's expression grammar with
 * bison precedence declarations, plus a handful of statements and two kinds of
 * declarations; docs/language.md has the same grammar in EBNF for users.
 *
 * Why bison and not a hand-written recursive descent parser: the parse is
 * iterative, so no input can overflow the C stack while parsing; the grammar
 * is checked for ambiguity when it is built (zero conflicts are expected);
 * and the rule sits next to its action, which keeps the two honest. The price
 * is error messages, which we win back in yyreport_syntax_error below with
 * LAC (exact expected-token sets) and the lexer's stack of open brackets:
 *
 *     expected ')' to close '(' at 3:9, saw ';'
 *     unexpected ']', expected an expression
 *     expected ';', saw 'let'
 *
 * Error recovery (several errors per file):
 *   - statement level: `error ';'` skips to the end of the broken statement,
 *     `error block` skips to the next `{` and parses that block (so the body
 *     of an `if`/`for` whose header is broken is still checked), and
 *     `'{' stmts error '}'` closes the enclosing block;
 *   - `if` and `for` headers: `'(' error ')'` skips a broken condition or
 *     loop header (C's `for (i = 0; i < n; i++)`) and parses the body;
 *   - declaration level: `file error` discards tokens up to the next
 *     `kernel`/`func`, and `file error block` parses a block found on the
 *     way; a `kernel`/`func` keyword met inside a block is reported once and
 *     the open blocks are closed for it (see fe_yylex), so that a missing
 *     '}' does not swallow the declarations after it.
 * After each recovery the bracket stack is cut back to the innermost `{`, so
 * later messages name the right opener. What recovery builds is only a
 * placeholder: a file with errors is never lowered, only dumped or dropped.
 *
 * Depth: every list is left-recursive, so bison's stack grows only with
 * nesting. Nesting is bounded three ways, all reported as "nesting too deep
 * (more than 256 levels)":
 *   - the lexer counts open ( and [, and open {, and stops the parse at
 *     FE_MAX_DEPTH + 1 of either;
 *   - every expression node records depth = 1 + deepest child, statements
 *     likewise; a node past FE_MAX_DEPTH is reported once and replaced by a
 *     childless stand-in, so the AST handed to later stages is never deeper
 *     than the limit (a 100000-term `a+a+...` is one error, not 99744);
 *   - YYMAXDEPTH bounds bison's own stack (long unary chains); "memory
 *     exhausted" becomes the same diagnostic and ends the parse.
 *
 * AST nodes all live in the caller's arena; the parser never frees anything
 * and never prints: every problem is a diag_error at the offending token.
 */

%define api.pure full
%define api.prefix {fe_yy}
%define api.token.prefix {TOK_}
%define api.location.type {SrcLoc}
%define parse.error custom
%define parse.lac full
%locations
%param {FeParser *p}

%code requires {
#include "frontend/frontend.h"

/* One open bracket: its character and where it is. */
typedef struct FeOpen {
    char ch;    /* '(', '[' or '{' */
    SrcLoc loc; /* position of the bracket */
} FeOpen;

/* Everything one parse needs; shared by the lexer (lexer.l) and the parser. */
typedef struct FeParser {
    Arena *arena;      /* AST nodes and strings */
    const Source *src; /* the text being parsed */
    DiagList *diags;   /* where errors go */
    AstFile *file;     /* the result, filled declaration by declaration */
    void *scanner;     /* the flex scanner (yyscan_t) */
    /* lexer position */
    int line, col;     /* 1-based position of the next byte to scan */
    size_t offset;     /* byte offset of the next byte to scan */
    size_t match_off;  /* byte offset of the current match */
    size_t tok_off;    /* bytes of the last token returned (the lookahead at an error) */
    size_t tok_len;
    /* open brackets, innermost last; bounded by the depth limit */
    FeOpen *open;
    int num_open;
    int num_parens;    /* open ( and [ on the stack */
    int num_braces;    /* open { on the stack */
    bool last_opened;  /* the last token returned pushed an entry */
    bool last_closed;  /* the last token returned, a closer, popped its opener */
    FeOpen forced;     /* an unclosed ( or [ that the last token, a '}', popped */
    bool has_forced;
    /* a declaration keyword met inside a block: the blocks are closed with
     * made-up '}' tokens before the keyword is handed over */
    int synth_braces;  /* '}' still to hand over */
    int synth_tok;     /* then this token (kernel or func) */
    SrcLoc synth_loc;  /* its location */
    bool synth_quiet;  /* syntax errors meanwhile are consequences: not reported */
    /* state */
    bool abort;        /* a fatal error (nesting, memory) ended the parse: report nothing more */
    bool quiet_eof;    /* the lexer already explained why the input ends early */
    void *c_locale;    /* locale_t for strtod_l, created on the first float literal */
} FeParser;

/* Defined in lexer.l. */
void fe_lex_begin(FeParser *p);
void fe_lex_end(FeParser *p);
}

%code provides {
int fe_lxlex(FE_YYSTYPE *lval, SrcLoc *lloc, void *scanner);
}

%code {
#include <stdio.h>
#include <string.h>

/* Bison's stack only grows with nesting (every list is left-recursive), and
 * legal nesting is at most FE_MAX_DEPTH levels of a few states each. */
#define YYMAXDEPTH 10000
#define YYINITDEPTH 256

#define YYLLOC_DEFAULT(Cur, Rhs, N)                                                      \
    do {                                                                                 \
        if (N)                                                                           \
            (Cur) = YYRHSLOC(Rhs, 1);                                                    \
        else                                                                             \
            (Cur) = YYRHSLOC(Rhs, 0);                                                    \
    } while (0)

/*
 * The parser's token source: the lexer, plus one repair. `kernel` or `func`
 * inside a block means the block was never closed: rather than let recovery
 * swallow the next declaration into this one (and report every later
 * declaration too), the error is reported here once and the open blocks are
 * closed with made-up '}' tokens; any syntax error they cause is a
 * consequence and stays quiet until the keyword has been handed over.
 */
static int fe_yylex(FE_YYSTYPE *lval, SrcLoc *lloc, FeParser *p) {
    if (p->synth_braces > 0) {
        p->synth_braces--;
        *lloc = p->synth_loc;
        int i = p->num_open - 1; /* close the innermost '{' and what is open inside it */
        while (i >= 0 && p->open[i].ch != '{')
            i--;
        if (i >= 0) {
            p->num_parens -= p->num_open - 1 - i;
            p->num_braces--;
            p->num_open = i;
        }
        p->last_opened = p->last_closed = p->has_forced = false;
        return '}';
    }
    if (p->synth_tok) {
        int t = p->synth_tok;
        p->synth_tok = 0;
        *lloc = p->synth_loc;
        return t;
    }
    p->synth_quiet = false;
    int t = fe_lxlex(lval, lloc, p->scanner);
    if ((t == TOK_KERNEL || t == TOK_FUNC) && p->num_braces > 0 && !p->abort) {
        const FeOpen *brace = NULL;
        for (int i = p->num_open - 1; i >= 0 && !brace; i--)
            if (p->open[i].ch == '{')
                brace = &p->open[i];
        diag_error(p->diags, *lloc, "expected '}' to close '{' at %d:%d, saw '%s'", brace->loc.line, brace->loc.col,
                   t == TOK_KERNEL ? "kernel" : "func");
        p->synth_braces = p->num_braces;
        p->synth_tok = t;
        p->synth_loc = *lloc;
        p->synth_quiet = true;
        return fe_yylex(lval, lloc, p);
    }
    return t;
}

static void fe_yyerror(SrcLoc *loc, FeParser *p, const char *msg);

/* ---- AST construction ---- */

static AstNode *node(FeParser *p, AstKind kind, SrcLoc loc) {
    AstNode *n = ast_new(p->arena, kind, loc);
    n->depth = 1;
    return n;
}

/* Gives the expression n the depth 1 + child_depth. Past FE_MAX_DEPTH it is
 * reported (once: only where a child is still within the limit) at `at`, and
 * n is replaced by a childless stand-in one level over the limit, so that
 * enclosing nodes stay shallow and stay quiet. */
static AstNode *expr_depth(FeParser *p, AstNode *n, int child_depth, SrcLoc at) {
    n->depth = child_depth + 1;
    if (n->depth <= FE_MAX_DEPTH)
        return n;
    if (child_depth <= FE_MAX_DEPTH)
        diag_error(p->diags, at, "nesting too deep (more than %d levels)", FE_MAX_DEPTH);
    AstNode *stub = ast_new(p->arena, AST_INT_LIT, n->loc);
    stub->depth = FE_MAX_DEPTH + 1;
    return stub;
}

/* The same for statements: a stand-in empty block. */
static AstNode *stmt_depth(FeParser *p, AstNode *n, int child_depth) {
    n->depth = child_depth + 1;
    if (n->depth <= FE_MAX_DEPTH)
        return n;
    if (child_depth <= FE_MAX_DEPTH)
        diag_error(p->diags, n->loc, "nesting too deep (more than %d levels)", FE_MAX_DEPTH);
    AstNode *stub = ast_new(p->arena, AST_BLOCK, n->loc);
    stub->depth = FE_MAX_DEPTH + 1;
    return stub;
}

/* The nesting a statement adds under an if/for: a `{ }` body is the same
 * level as its if/for, any other statement one more. */
static int inner_depth(const AstNode *s) {
    return s->kind == AST_BLOCK && s->depth <= FE_MAX_DEPTH ? s->depth - 1 : s->depth;
}

/* The body of an if/for/else: the empty statement `;` (and a statement lost
 * to error recovery), which leave no node in a block, become an empty block
 * here, so that every if and for has a body. */
static AstNode *body(FeParser *p, AstNode *s, SrcLoc loc) { return s ? s : node(p, AST_BLOCK, loc); }

static int max_int(int a, int b) { return a > b ? a : b; }

static AstNode *unary(FeParser *p, AstOp op, SrcLoc loc, AstNode *x) {
    AstNode *n = node(p, AST_UNARY, loc);
    n->op = op;
    n->lhs = x;
    return expr_depth(p, n, x->depth, loc);
}

static AstNode *binary(FeParser *p, AstOp op, SrcLoc oploc, AstNode *l, AstNode *r) {
    AstNode *n = node(p, AST_BINARY, l->loc);
    n->op = op;
    n->op_loc = oploc;
    n->lhs = l;
    n->rhs = r;
    return expr_depth(p, n, max_int(l->depth, r->depth), oploc);
}

/* A list holder (call arguments, index items, parameters): an AST_LIST node
 * whose depth is 1 + its deepest item so far. */
static AstNode *list_new(FeParser *p, SrcLoc loc) { return node(p, AST_LIST, loc); }

static AstNode *list_add(FeParser *p, AstNode *list, AstNode *item) {
    ast_push(p->arena, list, item);
    list->depth = max_int(list->depth, item->depth + 1);
    return list;
}

/* Moves the items of a holder to n. */
static void take_items(AstNode *n, const AstNode *list) {
    n->items = list->items;
    n->num_items = list->num_items;
}

static AstNode *call(FeParser *p, AstNode *callee, AstNode *args) {
    AstNode *n = node(p, AST_CALL, callee->loc);
    n->lhs = callee;
    take_items(n, args);
    return expr_depth(p, n, max_int(callee->depth, args->depth - 1), callee->loc);
}

static AstNode *ident(FeParser *p, SrcLoc loc, const char *name) {
    AstNode *n = node(p, AST_IDENT, loc);
    n->name = name;
    return n;
}

static AstNode *type_node(FeParser *p, SrcLoc loc, IrTypeKind k) {
    AstNode *n = node(p, AST_TYPE, loc);
    n->type.scalar = k;
    return n;
}

static AstNode *named_stmt(FeParser *p, AstKind kind, SrcLoc loc, const char *name, AstNode *rhs) {
    AstNode *n = node(p, kind, loc);
    n->name = name;
    n->rhs = rhs;
    return n;
}

static void file_add(FeParser *p, AstNode *decl) {
    AstFile *f = p->file;
    int n = f->num_decls;
    /* Capacity is implicit: 4, then every power of two (as in ast_push). */
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        size_t cap = n == 0 ? 4 : (size_t)n * 2;
        f->decls = arena_grow(p->arena, f->decls, sizeof(AstNode *) * (size_t)n, sizeof(AstNode *) * cap);
    }
    f->decls[f->num_decls++] = decl;
}

/* ---- error recovery bookkeeping ---- */

/* After a statement-level recovery: forget brackets opened by the broken
 * statement, keeping the innermost open '{'. */
static void recover_stmt(FeParser *p) {
    while (p->num_open > 0 && p->open[p->num_open - 1].ch != '{') {
        p->num_open--;
        p->num_parens--;
    }
}

/* After a declaration-level recovery: nothing is open at the top level. */
static void recover_top(FeParser *p) {
    p->num_open = 0;
    p->num_parens = 0;
    p->num_braces = 0;
}
}

%union {
    AstNode *node;
    const char *name;
    int64_t ival;
    double fval;
    IrTypeKind scalar;
    AstOp op;
    AstTypeSpec tspec;
}

%token <name> IDENT "identifier"
%token <ival> INT_LIT "integer literal"
%token <fval> FLOAT_LIT "floating-point literal"
%token <name> STRING_LIT "string literal"
%token <scalar> TYPE_NAME "type name"
%token KERNEL "kernel" FUNC "func" LET "let" VAR "var" IF "if" ELSE "else" FOR "for" IN "in"
%token RANGE "range" RETURN "return" CONST "const" CONSTEXPR "constexpr"
%token WHILE "while" BREAK "break" CONTINUE "continue"
%token STATIC_ASSERT "static_assert" TRUE "true" FALSE "false" INF "inf" NONE "None"
%token SHL "<<" SHR ">>" LE "<=" GE ">=" EQ "==" NE "!=" LAND "&&" LOR "||"
%token ADD_ASSIGN "+=" SUB_ASSIGN "-=" MUL_ASSIGN "*=" DIV_ASSIGN "/=" MOD_ASSIGN "%="
%token SHL_ASSIGN "<<=" SHR_ASSIGN ">>=" AND_ASSIGN "&=" OR_ASSIGN "|=" XOR_ASSIGN "^="

%type <ival> annotation_opt
%type <node> decl params_opt params param block stmts stmt expr postfix primary
%type <node> args_opt args arg index_items index_item default_opt condition tune
%type <tspec> type_spec
%type <op> assign_op

/* C's precedence, lowest first. THEN/ELSE settle the dangling else. */
%precedence THEN
%precedence ELSE
%right '?' ':'
%left LOR
%left LAND
%left '|'
%left '^'
%left '&'
%left EQ NE
%left '<' '>' LE GE
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%expect 0

%%

/* file ::= decl* */
file
    : %empty
    | file decl          { file_add(p, $2); }
    | file error         { recover_top(p); }
    | file error block   { recover_top(p); }
    ;

/* decl ::= ('kernel' | 'func') IDENT '(' [param (',' param)* [',']] ')' block */
decl
    : KERNEL IDENT '(' params_opt ')' block {
          $$ = node(p, AST_KERNEL, @1);
          $$->name = $2;
          take_items($$, $4);
          $$->body = $6;
      }
    /* a kernel with its search space (frontend/tune.c checks the clause) */
    | tune KERNEL IDENT '(' params_opt ')' block {
          $$ = node(p, AST_KERNEL, @2);
          $$->name = $3;
          take_items($$, $5);
          $$->body = $7;
          $$->lhs = $1;
      }
    | FUNC IDENT '(' params_opt ')' block {
          $$ = node(p, AST_FUNC, @1);
          $$->name = $2;
          take_items($$, $4);
          $$->body = $6;
      }
    ;

/* tune ::= '@' 'autotune' '(' [arg (',' arg)* [',']] ')': a call whose
 * arguments are named (key = [...], NAME = [...], configs = [...], where = expr) */
tune
    : '@' IDENT '(' args_opt ')' {
          if (strcmp($2, "autotune") != 0)
              diag_error(p->diags, @2, "unknown decorator '@%s' (expected @autotune)", $2);
          $$ = call(p, ident(p, @2, $2), $4);
      }
    ;

/* [param (',' param)* [',']] */
params_opt
    : %empty             { $$ = list_new(p, @$); }
    | params
    | params ','
    ;

params
    : param              { $$ = list_add(p, list_new(p, @1), $1); }
    | params ',' param   { $$ = list_add(p, $1, $3); }
    ;

/* param ::= type-spec IDENT ['divisible_by' '(' INT ')'] ['=' expr] */
param
    : type_spec IDENT annotation_opt default_opt {
          $$ = node(p, AST_PARAM, @1);
          $$->name = $2;
          $$->type = $1;
          $$->type.divisibility = $3;
          if ($3 && ($1.is_constexpr || (!$1.is_pointer && $1.scalar != IR_I32 && $1.scalar != IR_I64)))
              diag_error(p->diags, @3, "divisible_by applies to pointer and integer (i32, i64) parameters");
          if ($4 && !$1.is_constexpr)
              diag_error(p->diags, $4->loc, "only constexpr parameters can have a default value");
          else
              $$->rhs = $4;
      }
    ;

/* An alignment fact the caller promises: a pointer's address in bytes, or an
 * integer's value, is a multiple of N (a power of two). */
annotation_opt
    : %empty             { $$ = 0; }
    | IDENT '(' INT_LIT ')' {
          $$ = $3;
          if (strcmp($1, "divisible_by") != 0) {
              diag_error(p->diags, @1, "unknown parameter annotation '%s' (expected divisible_by(N))", $1);
              $$ = 0;
          } else if ($3 < 1 || $3 > (1 << 30) || ($3 & ($3 - 1)) != 0) {
              diag_error(p->diags, @3, "divisible_by needs a power of two from 1 to 2^30, got %lld", (long long)$3);
              $$ = 0;
          }
      }
    ;

default_opt
    : %empty             { $$ = NULL; }
    | '=' expr           { $$ = $2; }
    ;

/* type-spec ::= TYPE ['*'] | 'const' TYPE '*' | 'constexpr' TYPE | 'constexpr' 'dtype'
 *             | IDENT ['*'] | 'const' IDENT '*'      (IDENT: a dtype parameter) */
type_spec
    : TYPE_NAME                { memset(&$$, 0, sizeof $$); $$.scalar = $1; }
    | TYPE_NAME '*'            { memset(&$$, 0, sizeof $$); $$.scalar = $1; $$.is_pointer = true; }
    | CONST TYPE_NAME '*'      {
          memset(&$$, 0, sizeof $$);
          $$.scalar = $2;
          $$.is_pointer = true;
          $$.is_const = true;
      }
    | CONST TYPE_NAME          {
          memset(&$$, 0, sizeof $$);
          $$.scalar = $2;
          diag_error(p->diags, @1, "'const' applies only to pointer parameters (write 'const %s*')",
                     ir_scalar_name($2));
      }
    | CONSTEXPR TYPE_NAME      { memset(&$$, 0, sizeof $$); $$.scalar = $2; $$.is_constexpr = true; }
    /* Type parameters: `constexpr dtype T = f16`, then `T* x`, `const T* x`, `T scale`. */
    | CONSTEXPR IDENT          {
          memset(&$$, 0, sizeof $$);
          $$.scalar = IR_F32;
          $$.is_constexpr = true;
          if (strcmp($2, "dtype") == 0)
              $$.is_dtype = true;
          else
              diag_error(p->diags, @2, "unknown type '%s' (a constexpr parameter is a scalar type or 'dtype')", $2);
      }
    | IDENT                    { memset(&$$, 0, sizeof $$); $$.scalar = IR_F32; $$.type_param = $1; }
    | IDENT '*'                { memset(&$$, 0, sizeof $$); $$.scalar = IR_F32; $$.type_param = $1; $$.is_pointer = true; }
    | CONST IDENT '*'          {
          memset(&$$, 0, sizeof $$);
          $$.scalar = IR_F32;
          $$.type_param = $2;
          $$.is_pointer = true;
          $$.is_const = true;
      }
    ;

/* block ::= '{' stmt* '}'; with recovery of a statement broken just before
 * the '}' */
block
    : '{' stmts '}'          { $2->loc = @1; $$ = stmt_depth(p, $2, $2->depth - 1); }
    | '{' stmts error '}'    { yyerrok; recover_stmt(p); $2->loc = @1; $$ = stmt_depth(p, $2, $2->depth - 1); }
    ;

/* The block node is built as its statements arrive; its depth is kept as
 * 1 + the deepest statement so far. */
stmts
    : %empty {
          $$ = node(p, AST_BLOCK, @$);
          $$->depth = 1;
      }
    | stmts stmt {
          $$ = $1;
          if ($2) {
              ast_push(p->arena, $$, $2);
              $$->depth = max_int($$->depth, $2->depth + 1);
          }
      }
    ;

/* stmt: one alternative per statement, each under its rule */
stmt
    /* 'let' IDENT '=' expr ';' */
    : LET IDENT '=' expr ';'         { $$ = named_stmt(p, AST_LET, @1, $2, $4); }
    /* 'var' IDENT '=' expr ';' */
    | VAR IDENT '=' expr ';'         { $$ = named_stmt(p, AST_VAR, @1, $2, $4); }
    /* IDENT assign-op expr ';' */
    | IDENT assign_op expr ';'       { $$ = named_stmt(p, AST_ASSIGN, @1, $1, $3); $$->op = $2; }
    /* expr ';' */
    | expr ';'                       { $$ = node(p, AST_EXPR_STMT, $1->loc); $$->lhs = $1; }
    /* block */
    | block
    /* 'if' '(' expr ')' stmt ['else' stmt] */
    | IF condition stmt %prec THEN {
          $$ = node(p, AST_IF, @1);
          $$->cond = $2;
          $$->body = body(p, $3, @3);
          $$ = stmt_depth(p, $$, inner_depth($$->body));
      }
    | IF condition stmt ELSE stmt {
          $$ = node(p, AST_IF, @1);
          $$->cond = $2;
          $$->body = body(p, $3, @3);
          $$->els = body(p, $5, @5);
          $$ = stmt_depth(p, $$, max_int(inner_depth($$->body), inner_depth($$->els)));
      }
    /* 'for' '(' IDENT 'in' 'range' '(' expr [',' expr [',' expr]] ')' ')' stmt */
    | FOR '(' IDENT IN RANGE '(' args_opt ')' ')' stmt {
          $$ = node(p, AST_FOR, @1);
          $$->name = $3;
          if ($7->num_items < 1 || $7->num_items > 3)
              diag_error(p->diags, @5, "range() takes 1 to 3 arguments (end; start, end; or start, end, step), got %d",
                         $7->num_items);
          take_items($$, $7);
          $$->body = body(p, $10, @10);
          $$ = stmt_depth(p, $$, inner_depth($$->body));
      }
    /* recovery: a broken loop header (say, C's `for (i = 0; i < n; i++)`) is
     * skipped up to its ')'; the body is still parsed, then dropped */
    | FOR '(' error ')' stmt         { recover_stmt(p); $$ = NULL; }
    /* 'while' '(' expr ')' stmt */
    | WHILE condition stmt {
          $$ = node(p, AST_WHILE, @1);
          $$->cond = $2;
          $$->body = body(p, $3, @3);
          $$ = stmt_depth(p, $$, inner_depth($$->body));
      }
    /* 'break' ';'  'continue' ';' */
    | BREAK ';'                      { $$ = node(p, AST_BREAK, @1); }
    | CONTINUE ';'                   { $$ = node(p, AST_CONTINUE, @1); }
    /* 'return' [expr] ';' */
    | RETURN ';'                     { $$ = node(p, AST_RETURN, @1); }
    | RETURN expr ';'                { $$ = node(p, AST_RETURN, @1); $$->lhs = $2; }
    /* 'static_assert' '(' expr [',' STRING] ')' ';' */
    | STATIC_ASSERT '(' expr ')' ';' { $$ = node(p, AST_STATIC_ASSERT, @1); $$->cond = $3; }
    | STATIC_ASSERT '(' expr ',' STRING_LIT ')' ';' {
          $$ = node(p, AST_STATIC_ASSERT, @1);
          $$->cond = $3;
          $$->str = $5;
      }
    /* ';' (empty statement: no node) */
    | ';'                            { $$ = NULL; }
    /* recovery: skip the broken statement, or the block that follows it */
    | error ';'                      { yyerrok; recover_stmt(p); $$ = NULL; }
    | error block                    { yyerrok; recover_stmt(p); $$ = NULL; }
    ;

/* condition ::= '(' expr ')'; a broken one is skipped up to its ')' (and
 * stands in as `false`) so that the branches are still parsed. */
condition
    : '(' expr ')'    { $$ = $2; }
    | '(' error ')'   { recover_stmt(p); $$ = node(p, AST_BOOL_LIT, @1); }
    ;

/* assign-op ::= '=' | '+=' | '-=' | '*=' | '/=' | '%=' | '<<=' | '>>=' | '&=' | '|=' | '^=' */
assign_op
    : '='          { $$ = AST_OP_ASSIGN; }
    | ADD_ASSIGN   { $$ = AST_OP_ADD; }
    | SUB_ASSIGN   { $$ = AST_OP_SUB; }
    | MUL_ASSIGN   { $$ = AST_OP_MUL; }
    | DIV_ASSIGN   { $$ = AST_OP_DIV; }
    | MOD_ASSIGN   { $$ = AST_OP_MOD; }
    | SHL_ASSIGN   { $$ = AST_OP_SHL; }
    | SHR_ASSIGN   { $$ = AST_OP_SHR; }
    | AND_ASSIGN   { $$ = AST_OP_BITAND; }
    | OR_ASSIGN    { $$ = AST_OP_BITOR; }
    | XOR_ASSIGN   { $$ = AST_OP_BITXOR; }
    ;

expr
    /* expr '?' expr ':' expr */
    : expr '?' expr ':' expr {
          $$ = node(p, AST_TERNARY, $1->loc);
          $$->cond = $1;
          $$->lhs = $3;
          $$->rhs = $5;
          $$ = expr_depth(p, $$, max_int($1->depth, max_int($3->depth, $5->depth)), @2);
      }
    /* expr binop expr, with C's precedence */
    | expr LOR expr    { $$ = binary(p, AST_OP_LOR, @2, $1, $3); }
    | expr LAND expr   { $$ = binary(p, AST_OP_LAND, @2, $1, $3); }
    | expr '|' expr    { $$ = binary(p, AST_OP_BITOR, @2, $1, $3); }
    | expr '^' expr    { $$ = binary(p, AST_OP_BITXOR, @2, $1, $3); }
    | expr '&' expr    { $$ = binary(p, AST_OP_BITAND, @2, $1, $3); }
    | expr EQ expr     { $$ = binary(p, AST_OP_EQ, @2, $1, $3); }
    | expr NE expr     { $$ = binary(p, AST_OP_NE, @2, $1, $3); }
    | expr '<' expr    { $$ = binary(p, AST_OP_LT, @2, $1, $3); }
    | expr '>' expr    { $$ = binary(p, AST_OP_GT, @2, $1, $3); }
    | expr LE expr     { $$ = binary(p, AST_OP_LE, @2, $1, $3); }
    | expr GE expr     { $$ = binary(p, AST_OP_GE, @2, $1, $3); }
    | expr SHL expr    { $$ = binary(p, AST_OP_SHL, @2, $1, $3); }
    | expr SHR expr    { $$ = binary(p, AST_OP_SHR, @2, $1, $3); }
    | expr '+' expr    { $$ = binary(p, AST_OP_ADD, @2, $1, $3); }
    | expr '-' expr    { $$ = binary(p, AST_OP_SUB, @2, $1, $3); }
    | expr '*' expr    { $$ = binary(p, AST_OP_MUL, @2, $1, $3); }
    | expr '/' expr    { $$ = binary(p, AST_OP_DIV, @2, $1, $3); }
    | expr '%' expr    { $$ = binary(p, AST_OP_MOD, @2, $1, $3); }
    /* ('-' | '+' | '!' | '~') expr */
    | '-' expr %prec UNARY  { $$ = unary(p, AST_OP_NEG, @1, $2); }
    | '+' expr %prec UNARY  { $$ = unary(p, AST_OP_PLUS, @1, $2); }
    | '!' expr %prec UNARY  { $$ = unary(p, AST_OP_NOT, @1, $2); }
    | '~' expr %prec UNARY  { $$ = unary(p, AST_OP_BITNOT, @1, $2); }
    | postfix
    ;

/* postfix ::= primary | postfix '[' index-item (',' index-item)* ']' */
postfix
    : primary
    | postfix '[' index_items ']' {
          $$ = node(p, AST_INDEX, $1->loc);
          $$->lhs = $1;
          take_items($$, $3);
          $$ = expr_depth(p, $$, $1->depth, @2);
      }
    ;

/* index-item (',' index-item)* */
index_items
    : index_item                  { $$ = list_add(p, list_new(p, @1), $1); }
    | index_items ',' index_item  { $$ = list_add(p, $1, $3); }
    ;

/* index-item ::= ':' | 'None' */
index_item
    : ':'    { $$ = node(p, AST_SLICE, @1); }
    | NONE   { $$ = node(p, AST_NONE, @1); }
    ;

/* primary ::= INT | FLOAT | 'true' | 'false' | 'inf' | STRING | IDENT | TYPE
 *           | IDENT '(' args ')' | TYPE '(' args ')' | '(' expr ')' | '[' args ']' */
primary
    : INT_LIT     { $$ = node(p, AST_INT_LIT, @1); $$->ival = $1; }
    | FLOAT_LIT   { $$ = node(p, AST_FLOAT_LIT, @1); $$->fval = $1; }
    | TRUE        { $$ = node(p, AST_BOOL_LIT, @1); $$->ival = 1; }
    | FALSE       { $$ = node(p, AST_BOOL_LIT, @1); $$->ival = 0; }
    | INF         { $$ = node(p, AST_FLOAT_LIT, @1); $$->fval = __builtin_inf(); }
    /* a string: only the label of device_print and the message of
     * device_assert take one (the lowering says so elsewhere) */
    | STRING_LIT  { $$ = node(p, AST_STRING_LIT, @1); $$->str = $1; }
    | IDENT       { $$ = ident(p, @1, $1); }
    | TYPE_NAME   { $$ = type_node(p, @1, $1); }
    /* IDENT '(' [expr (',' expr)* [',']] ')': a call of a builtin or func */
    | IDENT '(' args_opt ')'      { $$ = call(p, ident(p, @1, $1), $3); }
    /* TYPE '(' args ')': a cast */
    | TYPE_NAME '(' args_opt ')'  { $$ = call(p, type_node(p, @1, $1), $3); }
    /* '(' expr ')' */
    | '(' expr ')'                { $$ = $2; }
    /* '[' [expr (',' expr)* [',']] ']': a list (shapes, permutations) */
    | '[' args_opt ']'            {
          $$ = $2;
          $$->loc = @1;
          $$ = expr_depth(p, $$, $$->depth - 1, @1);
      }
    /* 'None' outside an index: a better message than "unexpected 'None'" */
    | NONE {
          diag_error(p->diags, @1, "'None' is only allowed inside an index, as in x[:, None]");
          $$ = node(p, AST_NONE, @1);
      }
    ;

/* [expr (',' expr)* [',']] */
args_opt
    : %empty     { $$ = list_new(p, @$); }
    | args
    | args ','
    ;

args
    : arg             { $$ = list_add(p, list_new(p, @1), $1); }
    | args ',' arg    { $$ = list_add(p, $1, $3); }
    ;

/* arg ::= expr | IDENT '=' expr: a named argument, which only @autotune
 * and its config(...) take (the lowering refuses it elsewhere) */
arg
    : expr
    | IDENT '=' expr  { $$ = node(p, AST_NAMED, @1); $$->name = $1; $$->rhs = $3; }
    ;

%%

/* ---- syntax error messages ---- */

static char closer_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

/* How an expected token is named in a message: 'let', ')', identifier. */
static void sym_desc(yysymbol_kind_t s, char *out, size_t n) {
    const char *name = yysymbol_name(s); /* "'('", "let", "identifier", "end of file" */
    if (strcmp(name, "'@'") == 0) /* only @autotune starts with it */
        snprintf(out, n, "'@autotune'");
    else if (name[0] == '\'' || strchr(name, ' ') || strcmp(name, "identifier") == 0)
        snprintf(out, n, "%s", name);
    else
        snprintf(out, n, "'%s'", name);
}

/* The lookahead as the user wrote it, quoted: 'foo', '"msg"'; or end of file. */
static void token_desc(FeParser *p, yysymbol_kind_t la, char *out, size_t n) {
    if (la == YYSYMBOL_YYEOF || p->tok_len == 0 || p->tok_off >= p->src->len) {
        snprintf(out, n, "end of file");
        return;
    }
    size_t len = p->tok_len, k = 0;
    const char *t = p->src->text + p->tok_off;
    bool cut = len > 32;
    if (cut)
        len = 32;
    out[k++] = '\'';
    for (size_t i = 0; i < len && k + 8 < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c >= 0x20 && c < 0x7f)
            out[k++] = (char)c;
        else
            k += (size_t)snprintf(out + k, n - k, "\\x%02x", c);
    }
    if (cut && k + 5 < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k++] = '\'';
    out[k] = 0;
}

/* Token classes, by bison's name for them, for grouping expected tokens. */
static const char *const expr_start_names[] = {
    "identifier", "integer literal", "floating-point literal", "string literal", "type name", "true",
    "false", "inf", "None", "'('", "'['", "'-'", "'+'", "'!'", "'~'", NULL};
static const char *const stmt_start_names[] = {
    "let", "var", "if", "for", "while", "break", "continue", "return", "static_assert", "'{'", "';'", NULL};
static const char *const operator_names[] = {
    "'?'", "||", "&&", "'|'", "'^'", "'&'", "==", "!=", "'<'", "'>'", "<=", ">=",
    "<<", ">>", "'+'", "'-'", "'*'", "'/'", "'%'", "'['", "'('", NULL};
static const char *const assign_names[] = {
    "'='", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=",
    NULL};

/* Tokens that end a bracketed construct early, or start the next one:
 * seeing one where a closer fits means the closer is missing. */
static const char *const ender_names[] = {
    "end of file", "';'", "'{'", "'}'", "')'", "']'", "kernel", "func", "let", "var", "if", "else", "for",
    "while", "break", "continue", "return", "static_assert", NULL};

static bool name_in(const char *name, const char *const *set) {
    for (; *set; set++)
        if (strcmp(name, *set) == 0)
            return true;
    return false;
}

static bool sym_is(yysymbol_kind_t s, const char *name) { return strcmp(yysymbol_name(s), name) == 0; }

/* Builds "A, B or C" from the expected tokens, naming groups instead of
 * their members: "an expression", "a statement", "an operator". Returns false
 * when the list would be too long to help. */
static bool expected_list(const bool *expected, char *out, size_t n) {
    bool want_stmt = expected[YYSYMBOL_LET];
    bool want_expr = expected[YYSYMBOL_INT_LIT];
    bool want_op = false, want_assign = expected[YYSYMBOL_ADD_ASSIGN];
    for (int s = 0; s < YYNTOKENS; s++)
        if (expected[s] && sym_is((yysymbol_kind_t)s, "'/'")) /* only ever binary ('*' also makes pointers) */
            want_op = true;
    const char *items[YYNTOKENS + 4];
    char names[YYNTOKENS][40];
    int k = 0;
    if (want_stmt)
        items[k++] = "a statement";
    else if (want_expr)
        items[k++] = "an expression";
    for (int s = 0; s < YYNTOKENS; s++) {
        if (!expected[s] || s == YYSYMBOL_YYerror || s == YYSYMBOL_YYUNDEF)
            continue;
        if (s == YYSYMBOL_YYEOF && (expected[YYSYMBOL_KERNEL] || expected[YYSYMBOL_FUNC]))
            continue; /* "expected 'kernel' or 'func'" says it */
        const char *name = yysymbol_name((yysymbol_kind_t)s);
        if ((want_stmt || want_expr) && name_in(name, expr_start_names))
            continue;
        if (want_stmt && name_in(name, stmt_start_names))
            continue;
        if (want_op && name_in(name, operator_names))
            continue;
        if (want_assign && name_in(name, assign_names))
            continue;
        sym_desc((yysymbol_kind_t)s, names[k], sizeof names[k]);
        items[k] = names[k];
        k++;
    }
    if (want_assign)
        items[k++] = "an assignment";
    if (want_op)
        items[k++] = "an operator";
    if (k == 0 || k > 6)
        return false;
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < k; i++) {
        const char *sep = i == 0 ? "" : i == k - 1 ? " or " : ", ";
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", sep, items[i]);
        if (len >= n)
            return false;
    }
    return true;
}

/*
 * One message per syntax error, at the lookahead token, by the first rule
 * that applies:
 *   1. a ')' or ']' with no opener left open:        unmatched ')'
 *   2. the innermost open bracket's closer fits, and the lookahead ends
 *      a construct (';', '}', a keyword...):         expected ')' to close '(' at 3:9, saw ';'
 *   3. a ';' fits (the statement could end here):    expected ';', saw 'let'
 *   4. otherwise:                                    unexpected ']', expected an expression
 */
static int yyreport_syntax_error(const yypcontext_t *ctx, FeParser *p) {
    if (p->abort || p->synth_quiet)
        return 0;
    yysymbol_kind_t la = yypcontext_token(ctx);
    if (la == YYSYMBOL_YYEOF && p->quiet_eof)
        return 0;
    SrcLoc loc = *yypcontext_location(ctx);
    int max_errors = p->diags->max_errors > 0 ? p->diags->max_errors : 20;
    if (p->diags->num_errors >= max_errors) {
        /* It would be dropped: count it, but skip the expected-token search. */
        diag_error(p->diags, loc, "syntax error");
        return 0;
    }
    char saw[160];
    token_desc(p, la, saw, sizeof saw);

    yysymbol_kind_t exp[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
    bool expected[YYNTOKENS] = {0};
    for (int i = 0; i < n; i++)
        if (exp[i] >= 0 && exp[i] < YYNTOKENS)
            expected[exp[i]] = true;

    /* 1. an unmatched closer */
    bool la_paren = la != YYSYMBOL_YYEOF && sym_is(la, "')'");
    bool la_bracket = la != YYSYMBOL_YYEOF && sym_is(la, "']'");
    if ((la_paren || la_bracket) && !p->last_closed) {
        char want = la_paren ? '(' : '[';
        bool open = false;
        for (int i = 0; i < p->num_open; i++)
            open |= p->open[i].ch == want;
        if (!open) {
            diag_error(p->diags, loc, "unmatched %s", saw);
            return 0;
        }
    }

    /* 2. the innermost open bracket */
    const FeOpen *inner = NULL;
    if (p->has_forced)
        inner = &p->forced;
    else if (p->num_open - (p->last_opened ? 1 : 0) > 0)
        inner = &p->open[p->num_open - 1 - (p->last_opened ? 1 : 0)];
    /* Where a statement could start, a stray token is better called
     * unexpected, unless it ends the block's text: end of file or the next
     * declaration. */
    bool stmt_pos = expected[YYSYMBOL_LET] && la != YYSYMBOL_YYEOF && la != YYSYMBOL_KERNEL && la != YYSYMBOL_FUNC;
    if (inner && !stmt_pos && name_in(yysymbol_name(la), ender_names)) {
        char closer[4] = {'\'', closer_of(inner->ch), '\'', 0};
        for (int s = 0; s < YYNTOKENS; s++) {
            if (expected[s] && sym_is((yysymbol_kind_t)s, closer)) {
                diag_error(p->diags, loc, "expected '%c' to close '%c' at %d:%d, saw %s", closer_of(inner->ch),
                           inner->ch, inner->loc.line, inner->loc.col, saw);
                return 0;
            }
        }
    }

    /* 3. a statement that could end here */
    for (int s = 0; s < YYNTOKENS && !expected[YYSYMBOL_LET]; s++) {
        if (expected[s] && sym_is((yysymbol_kind_t)s, "';'")) {
            diag_error(p->diags, loc, "expected ';', saw %s", saw);
            return 0;
        }
    }

    /* 4. the general case */
    char list[400];
    if (expected_list(expected, list, sizeof list))
        diag_error(p->diags, loc, "unexpected %s, expected %s", saw, list);
    else
        diag_error(p->diags, loc, "unexpected %s", saw);
    return 0;
}

static void fe_yyerror(SrcLoc *loc, FeParser *p, const char *msg) {
    if (p->abort)
        return;
    if (strcmp(msg, "memory exhausted") == 0) {
        diag_error(p->diags, *loc, "nesting too deep (more than %d levels)", FE_MAX_DEPTH);
        p->abort = true;
        return;
    }
    diag_error(p->diags, *loc, "%s", msg);
}

AstFile *fe_parse(Arena *a, const Source *src, DiagList *diags) {
    AstFile *f = ARENA_NEW(a, AstFile);
    f->src = src;
    FeParser p;
    memset(&p, 0, sizeof p);
    p.arena = a;
    p.src = src;
    p.diags = diags;
    p.file = f;
    p.open = ARENA_ARRAY(a, FeOpen, 2 * FE_MAX_DEPTH + 4);
    fe_lex_begin(&p);
    if (!p.abort)
        fe_yyparse(&p);
    fe_lex_end(&p);
    return f;
}
