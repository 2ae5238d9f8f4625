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

/* The switches: each sets an int of tc_options to 1. */
typedef struct FlagOption {
    const char *flag;
    size_t field; /* offsetof(tc_options, the int it sets) */
} FlagOption;

static const FlagOption flag_options[] = {
    {"--print-after-all", offsetof(tc_options, print_after_all)},
    {"--verify-each", offsetof(tc_options, verify_each)},
    {"--llvm-O3", offsetof(tc_options, llvm_o3)},
    {"--warp-specialize", offsetof(tc_options, warp_specialize)},
    {"--persistent", offsetof(tc_options, persistent)},
    {"-g", offsetof(tc_options, line_info)},
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
    for (size_t k = 0; k < sizeof flag_options / sizeof flag_options[0]; k++)
        if (strcmp(a, flag_options[k].flag) == 0) {
            *(int *)((char *)opt + flag_options[k].field) = 1;
            return 1;
        }
    if ((v = tool_flag_value(argc, argv, i, "--arch")))
        *arch = v;
    else if ((v = tool_flag_value(argc, argv, i, "--print-after")))
        opt->print_after = v;
    else
        return 0;
    return 1;
}

bool tool_parse_fact(const char *v, int64_t max_n, char *name, size_t name_size, int64_t *n) {
    const char *eq = strchr(v, '=');
    char *end = NULL;
    long long d = eq ? strtoll(eq + 1, &end, 10) : 0;
    if (!eq || eq == v || *end || d < 1 || d > max_n || (d & (d - 1)) || (size_t)(eq - v) >= name_size)
        return false;
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = 0;
    *n = d;
    return true;
}
