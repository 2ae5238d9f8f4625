/*
 * ir_test_util.h — IR from text for the unit suites that test what the
 * passes and codegen make of a module (test_codegen.c, test_wgmma.c,
 * test_axis_info.c), and tile source compiled for the interpreter
 * (test_interp.c, test_stdlib_attention.c).
 */
#ifndef TILEC_IR_TEST_UTIL_H
#define TILEC_IR_TEST_UTIL_H

#include "ir/ir.h"
#include "tilec/interp.h"

#include <stdbool.h>
#include <stddef.h>

/* The module `text` parses to (its diagnostics printed to stderr), or NULL.
 * The source lives until the next call. */
IrModule *unit_parse_ir(const char *text);
/* Prints d's diagnostics, if any, to stderr. */
void unit_print_diagnostics(DiagList *d);
/* Kernel `kernel` of tile source `text` (named `path`) with these
 * constexprs, compiled to IR (with loc(...) when line_info) and loaded into
 * the interpreter, or NULL (the error printed to stderr). */
tc_interp_module *unit_interp_load_tile(const char *path, const char *text, size_t len, const char *kernel,
                                        const tc_constexpr *cx, size_t ncx, bool line_info);

#endif
