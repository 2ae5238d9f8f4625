/*
 * tool_output.h — what tilec and tilec-opt do with a finished compile: the
 * diagnostics and the log to stderr, the result to the output file, and the
 * exit status (0 success, 1 errors in the input, 2 a bad request or an
 * output that cannot be written, 3 anything else).
 */
#ifndef TILEC_TOOL_OUTPUT_H
#define TILEC_TOOL_OUTPUT_H

#include "tilec/tilec.h"

/* Reports a compile's status st (bin may be NULL unless st is TC_OK) for
 * the tool `prog`; writes bin to `output` ("-" or NULL: stdout). */
int tool_finish(const char *prog, tc_status st, const tc_binary *bin, const tc_diagnostics *diags, const char *output);

#endif
