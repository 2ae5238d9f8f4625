/*
 * fuzz_ir.c — libFuzzer target for the IR text parser and printer.
 *
 * Each input is IR text. It is parsed; if it parses, it is printed, the text
 * is parsed again (it must be: the printer writes only what the parser
 * reads), printed again, and the two prints must be equal byte for byte.
 * The same holds for printing with locations (ir_print_module_locs), and
 * that text printed without them must be the first print: locations change
 * nothing else. Then the module is verified: the verifier must cope with any module the
 * parser accepts, valid or not. Any crash, sanitizer report, leak, hang or
 * trap below is a bug. Diagnostics are rendered too, so the caret and
 * source-line code sees every kind of byte.
 */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Source src = {"fuzz.tir", (const char *)data, size};
    DiagList diags;
    diag_init(&diags);
    IrModule *m = NULL, *m2 = NULL, *m3 = NULL;
    Buf a, b, c, la, lb, text;
    buf_init(&a);
    buf_init(&b);
    buf_init(&c);
    buf_init(&la);
    buf_init(&lb);
    buf_init(&text);
    TcGuard g;
    if (TC_GUARD(g)) {
        /* An internal error is a bug: make the fuzzer report it. */
        fprintf(stderr, "fuzz_ir: %s\n", g.message);
        __builtin_trap();
    }
    m = ir_parse(&src, &diags);
    if (m) {
        ir_print_module(m, &a);
        Source src2 = {"print1.tir", a.data, a.len};
        m2 = ir_parse(&src2, &diags);
        if (!m2) {
            diag_render(&diags, &text);
            fprintf(stderr, "fuzz_ir: the printed module does not parse:\n%s\n%s", a.data, text.data);
            __builtin_trap();
        }
        ir_print_module(m2, &b);
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0) {
            fprintf(stderr, "fuzz_ir: printing is not idempotent:\n--- first\n%s--- second\n%s", a.data, b.data);
            __builtin_trap();
        }
        ir_print_module_locs(m, &la);
        Source src3 = {"print-locs.tir", la.data, la.len};
        m3 = ir_parse(&src3, &diags);
        if (!m3) {
            diag_render(&diags, &text);
            fprintf(stderr, "fuzz_ir: the module printed with locations does not parse:\n%s\n%s", la.data, text.data);
            __builtin_trap();
        }
        ir_print_module_locs(m3, &lb);
        if (la.len != lb.len || memcmp(la.data, lb.data, la.len) != 0) {
            fprintf(stderr, "fuzz_ir: printing with locations is not idempotent:\n--- first\n%s--- second\n%s", la.data,
                    lb.data);
            __builtin_trap();
        }
        ir_print_module(m3, &c);
        if (a.len != c.len || memcmp(a.data, c.data, a.len) != 0) {
            fprintf(stderr, "fuzz_ir: locations changed the text:\n--- without\n%s--- through locations\n%s", a.data,
                    c.data);
            __builtin_trap();
        }
        ir_verify(m, &diags);
        ir_verify(m3, &diags); /* its diagnostics are at loc(...) Sources, which have no text */
    }
    diag_render(&diags, &text);
    tc_guard_pop(&g);
    ir_module_destroy(m);
    ir_module_destroy(m2);
    ir_module_destroy(m3);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
    buf_free(&la);
    buf_free(&lb);
    buf_free(&text);
    diag_free(&diags);
    return 0;
}
