/*
 * ir_test_util.c — see ir_test_util.h.
 */
#include "ir_test_util.h"

#include "tilec/runtime.h"

#include <stdio.h>
#include <string.h>

IrModule *unit_parse_ir(const char *text) {
    static Source src;
    src.name = "<test>";
    src.text = text;
    src.len = strlen(text);
    DiagList d;
    diag_init(&d);
    IrModule *m = ir_parse(&src, &d);
    unit_print_diagnostics(&d);
    diag_free(&d);
    return m;
}

void unit_print_diagnostics(DiagList *d) {
    if (!diag_has_errors(d))
        return;
    Buf b;
    buf_init(&b);
    diag_render(d, &b);
    fprintf(stderr, "%s", b.data);
    buf_free(&b);
}

/* Kernel `kernel` of tile source `text` (named `path`) with these
 * constexprs, compiled to IR (with loc(...) when line_info) and loaded. */
tc_interp_module *unit_interp_load_tile(const char *path, const char *text, size_t len, const char *kernel,
                                        const tc_constexpr *cx, size_t ncx, bool line_info) {
    tc_compiler *cc = NULL;
    if (tc_compiler_create(NULL, &cc) != TC_OK)
        return NULL;
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_IR;
    opt.line_info = line_info;
    tc_source src = {path, text, len};
    tc_binary *bin = NULL;
    tc_interp_module *m = NULL;
    if (tc_compile(cc, &src, kernel, cx, ncx, &opt, &bin, NULL) == TC_OK) {
        const char *ir = tc_binary_text(bin, &len);
        tc_source irsrc = {"k.tir", ir, len};
        if (tc_interp_load(&irsrc, &m, NULL) != TC_OK)
            fprintf(stderr, "tc_interp_load: %s\n", tc_last_error());
    } else {
        fprintf(stderr, "tc_compile: %s\n", tc_last_error());
    }
    tc_binary_destroy(bin);
    tc_compiler_destroy(cc);
    return m;
}
