/*
 * fuzz_frontend.c — libFuzzer target for the tile-language front end.
 *
 * Each input is a .tile source: it is parsed, and if it parses it is lowered
 * with no constexpr values given (defaults only) and the result verified.
 * Any crash, sanitizer report, leak or hang is a bug: the front end must turn
 * every input into IR or diagnostics. Diagnostics are rendered too, so the
 * caret and source-line code sees every kind of byte.
 */
#include "frontend/frontend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Source src = {"fuzz.tile", (const char *)data, size};
    DiagList diags;
    diag_init(&diags);
    Arena arena;
    arena_init(&arena);
    IrModule *m = NULL;
    Buf text;
    buf_init(&text);
    TcGuard g;
    if (TC_GUARD(g)) {
        /* An internal error is a bug: make the fuzzer report it. */
        __builtin_trap();
    }
    AstFile *ast = fe_parse(&arena, &src, &diags);
    if (!diag_has_errors(&diags)) {
        fe_dump_ast(ast, &text);
        FeOptions opts = {0};
        opts.num_warps = 4;
        m = fe_lower(ast, &opts, &diags);
        if (m && !ir_verify(m, &diags))
            __builtin_trap(); /* the front end must produce valid IR */
    }
    diag_render(&diags, &text);
    tc_guard_pop(&g);
    ir_module_destroy(m);
    buf_free(&text);
    arena_free(&arena);
    diag_free(&diags);
    return 0;
}
