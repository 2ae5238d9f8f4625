/*
 * tool_options.c — the compile options that tilec and tilec-opt share
 * (tool_options.h).
 */
#include "tool_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tool_flag_value(int argc, char **argv, int *i, const char *flag) {
    size_t n = strlen(flag);
    const char *a = argv[*i];
    if (strncmp(a, flag, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* An integer from lo to hi (a power of two when pow2), or -1. */
static long int_in(const char *v, long lo, long hi, int pow2) {
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi || (pow2 && (n & (n - 1))))
        return -1;
    return n;
}

int tool_compile_option(const char *prog, int argc, char **argv, int *i, tc_options *opt, const char **arch) {
    const char *a = argv[*i], *v;
    long n;
    if ((v = tool_flag_value(argc, argv, i, "--num-warps"))) {
        if ((n = int_in(v, 1, TC_MAX_NUM_WARPS, 1)) < 0) {
            fprintf(stderr, "%s: --num-warps must be a power of two from 1 to %d\n", prog, TC_MAX_NUM_WARPS);
            return -1;
        }
        opt->num_warps = (int)n;
    } else if ((v = tool_flag_value(argc, argv, i, "--num-stages"))) {
        if ((n = int_in(v, 1, TC_MAX_NUM_STAGES, 0)) < 0) {
            fprintf(stderr, "%s: --num-stages must be from 1 (no pipelining) to %d\n", prog, TC_MAX_NUM_STAGES);
            return -1;
        }
        opt->num_stages = (int)n;
    } else if ((v = tool_flag_value(argc, argv, i, "--min-programs-per-sm"))) {
        if ((n = int_in(v, 1, TC_MAX_PROGRAMS_PER_SM, 0)) < 0) {
            fprintf(stderr, "%s: --min-programs-per-sm must be from 1 to %d\n", prog, TC_MAX_PROGRAMS_PER_SM);
            return -1;
        }
        opt->min_programs_per_sm = (int)n;
    } else if ((v = tool_flag_value(argc, argv, i, "--arch"))) {
        *arch = v;
    } else if ((v = tool_flag_value(argc, argv, i, "--print-after"))) {
        opt->print_after = v;
    } else if (strcmp(a, "--print-after-all") == 0) {
        opt->print_after_all = 1;
    } else if (strcmp(a, "--verify-each") == 0) {
        opt->verify_each = 1;
    } else if (strcmp(a, "--llvm-O3") == 0) {
        opt->llvm_o3 = 1;
    } else if (strcmp(a, "--warp-specialize") == 0) {
        opt->warp_specialize = 1;
    } else if (strcmp(a, "--persistent") == 0) {
        opt->persistent = 1;
    } else if (strcmp(a, "-g") == 0) {
        opt->line_info = 1;
    } else {
        return 0;
    }
    return 1;
}
