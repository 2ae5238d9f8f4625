/*
 * ir_test_util.h — IR from text for the unit suites that test what the
 * passes and codegen make of a module (test_codegen.c, test_wgmma.c,
 * test_axis_info.c).
 */
#ifndef TILEC_IR_TEST_UTIL_H
#define TILEC_IR_TEST_UTIL_H

#include "ir/ir.h"

/* The module `text` parses to (its diagnostics printed to stderr), or NULL.
 * The source lives until the next call. */
IrModule *unit_parse_ir(const char *text);
/* Prints d's diagnostics, if any, to stderr. */
void unit_print_diagnostics(DiagList *d);

#endif
