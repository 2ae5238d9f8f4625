/* tool_output.c — see tool_output.h. */
#include "tool_output.h"

#include <stdio.h>
#include <string.h>

int tool_finish(const char *prog, tc_status st, const tc_binary *bin, const tc_diagnostics *diags, const char *output) {
    fputs(tc_diagnostics_text(diags), stderr);
    if (st == TC_OK) {
        size_t log_len;
        const char *log = tc_binary_log(bin, &log_len);
        fwrite(log, 1, log_len, stderr);
        if (tc_binary_write(bin, output && strcmp(output, "-") != 0 ? output : NULL) != TC_OK) {
            fprintf(stderr, "%s: %s\n", prog, tc_last_error());
            return 2;
        }
        return 0;
    }
    if (st != TC_ERROR_COMPILE)
        fprintf(stderr, "%s: %s: %s\n", prog, tc_status_string(st), tc_last_error());
    return st == TC_ERROR_COMPILE ? 1 : st == TC_ERROR_INVALID_ARGUMENT ? 2 : 3;
}
