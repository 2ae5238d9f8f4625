/*
 * ir_test_util.c — see ir_test_util.h.
 */
#include "ir_test_util.h"

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
