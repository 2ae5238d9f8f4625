/*
 * tool_options.c — the compile options that tilec and tilec-opt share
 * (tool_options.h).
 */
#include "tool_options.h"

#include <stddef.h>
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

/* The integer options: each must lie in [lo, hi] (a power of two when pow2). */
typedef struct IntOption {
    const char *flag, *range; /* range: how the error states the values allowed */
    long lo, hi;
    int pow2;
    size_t field; /* offsetof(tc_options, the int it sets) */
} IntOption;

static const IntOption int_options[] = {
    {"--num-warps", "a power of two from 1 to", 1, TC_MAX_NUM_WARPS, 1, offsetof(tc_options, num_warps)},
    {"--num-stages", "from 1 (no pipelining) to", 1, TC_MAX_NUM_STAGES, 0, offsetof(tc_options, num_stages)},
    {"--min-programs-per-sm", "from 1 to", 1, TC_MAX_PROGRAMS_PER_SM, 0, offsetof(tc_options, min_programs_per_sm)},
};

int tool_compile_option(const char *prog, int argc, char **argv, int *i, tc_options *opt, const char **arch) {
    const char *a = argv[*i], *v;
    for (size_t k = 0; k < sizeof int_options / sizeof int_options[0]; k++) {
        const IntOption *io = &int_options[k];
        if (!(v = tool_flag_value(argc, argv, i, io->flag)))
            continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (!*v || *end || n < io->lo || n > io->hi || (io->pow2 && (n & (n - 1)))) {
            fprintf(stderr, "%s: %s must be %s %ld\n", prog, io->flag, io->range, io->hi);
            return -1;
        }
        *(int *)((char *)opt + io->field) = (int)n;
        return 1;
    }
    if ((v = tool_flag_value(argc, argv, i, "--arch"))) {
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
