/*
 * tool_options.h — the compile options that tilec and tilec-opt share, parsed
 * once: --num-warps, --num-stages, --min-programs-per-sm, --arch,
 * --print-after, --print-after-all, --verify-each, --llvm-O3,
 * --warp-specialize, --persistent and -g. A value follows its flag as the
 * next argument or after `=`. And the value of --divisible (tilec, tilec
 * tune).
 */
#ifndef TILEC_TOOL_OPTIONS_H
#define TILEC_TOOL_OPTIONS_H

#include "tilec/tilec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of flag at argv[*i] (`FLAG=V`, or `FLAG V`, which advances *i),
 * or NULL when argv[*i] is not that flag with a value. */
const char *tool_flag_value(int argc, char **argv, int *i, const char *flag);

/* If argv[*i] is one of the shared options, applies it to *opt (the
 * architecture's name to *arch) and returns 1, having consumed its value;
 * 0 when it is none of them; -1 after printing `prog: ...` for a bad value
 * (the tool then exits with status 2). */
int tool_compile_option(const char *prog, int argc, char **argv, int *i, tc_options *opt, const char **arch);

/* A --divisible value, NAME=N with N a power of two from 1 to max_n: the
 * name into name[name_size] and N into *n; false when it is not one. */
bool tool_parse_fact(const char *v, int64_t max_n, char *name, size_t name_size, int64_t *n);

#endif
