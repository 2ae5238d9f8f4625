/*
 * tilec-opt — run passes over tile IR text.
 *
 *     tilec-opt [--pass=a,b,c] [--emit=ir|llvm|ptx] [--arch ARCH] [-g]
 *               [--print-after=PASS] [--print-after-all] [--verify-each]
 *               [-o FILE] FILE.tir
 *
 * Parses and verifies the IR, runs the passes in order and prints the
 * result (with --emit=llvm or ptx, lowers it: tiles must carry layouts);
 * with no --pass it prints what it parsed. With -g the printed IR carries
 * the ops' locations (loc(...), docs/ir.md). A thin driver over tc_opt.
 */
#include "tilec/tilec.h"
#include "tool_options.h"
#include "tool_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fputs("usage: tilec-opt [options] FILE.tir   (FILE '-' reads stdin)\n"
          "\n"
          "options:\n"
          "  --pass=a,b,c          run these passes in order\n"
          "  --emit=KIND           ir | llvm | ptx (default: ir)\n"
          "  --arch ARCH           sm_80 | sm_90 | sm_90a: the target of the passes (sm_90a: wgmma) and of\n"
          "                        --emit=llvm|ptx (default: sm_90a)\n"
          "  --list-passes         list the passes\n"
          "  --num-warps N         warps per program for passes that need it (default: 4)\n"
          "  --num-stages N        software pipelining depth for `pipeline`; 1 = off (default: 3)\n"
          "  --warp-specialize     `pipeline` on sm_90a: a producer warpgroup issues the TMA copies\n"
          "  --persistent          `persistent`: kernels without the attribute loop over their grid's tiles\n"
          "  --min-programs-per-sm N\n"
          "                        kernels without the attribute must fit N programs per SM\n"
          "                        (`pipeline`'s register split, codegen's .minnctapersm)\n"
          "  --llvm-O3             with --emit=llvm|ptx: LLVM's default<O3> pipeline and -O3\n"
          "                        instruction selection instead of tilec's short pipeline\n"
          "  -g                    with --emit=llvm|ptx: line info (.file/.loc) at each op's loc(...), or\n"
          "                        at its line of FILE.tir where it has none; with --emit=ir and\n"
          "                        --print-after: print each op's loc(\"FILE\":LINE:COL)\n"
          "  --print-after=PASS    print the IR after PASS to stderr\n"
          "  --print-after-all     print the IR after every pass to stderr\n"
          "  --verify-each         verify the IR after every pass\n"
          "  -o FILE               write the output to FILE (default: stdout)\n"
          "  --help, --version\n",
          out);
}

static int read_stdin(tc_source *src) {
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    if (!p)
        return 0;
    size_t n;
    while ((n = fread(p + len, 1, cap - len, stdin)) > 0) {
        len += n;
        if (len == cap) {
            char *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                return 0;
            }
            p = q;
            cap *= 2;
        }
    }
    src->name = strdup("<stdin>");
    src->text = p;
    src->len = len;
    return 1;
}

int main(int argc, char **argv) {
    tc_options opt;
    tc_options_init(&opt);
    const char *path = NULL, *passes = NULL, *output = NULL, *arch = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int shared = tool_compile_option("tilec-opt", argc, argv, &i, &opt, &arch);
        if (shared < 0)
            return 2;
        if (shared > 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("%s\n", tc_version());
            return 0;
        } else if (strcmp(a, "--list-passes") == 0) {
            fputs(tc_pass_list(), stdout);
            return 0;
        } else if (strncmp(a, "--pass=", 7) == 0) {
            passes = a + 7;
        } else if (strncmp(a, "--emit=", 7) == 0) {
            const char *v = a + 7;
            if (strcmp(v, "ir") == 0)
                opt.emit = TC_EMIT_IR;
            else if (strcmp(v, "llvm") == 0)
                opt.emit = TC_EMIT_LLVM;
            else if (strcmp(v, "ptx") == 0)
                opt.emit = TC_EMIT_PTX;
            else {
                fprintf(stderr, "tilec-opt: unknown --emit kind '%s' (ir, llvm, ptx)\n", v);
                return 2;
            }
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            output = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tilec-opt: unknown option '%s' (see --help)\n", a);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "tilec-opt: more than one input file\n");
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    tc_source src;
    if (strcmp(path, "-") == 0 ? !read_stdin(&src) : tc_source_read_file(path, &src) != TC_OK) {
        fprintf(stderr, "tilec-opt: cannot read '%s'\n", path);
        return 2;
    }
    tc_compiler *cc = NULL;
    tc_target target = {arch};
    if (tc_compiler_create(&target, &cc) != TC_OK) {
        fprintf(stderr, "tilec-opt: --arch %s is not supported (sm_80, sm_90, sm_90a)\n", arch ? arch : "");
        tc_source_free(&src);
        return 2;
    }
    tc_diagnostics *diags = NULL;
    tc_diagnostics_create(&diags);
    tc_binary *bin = NULL;
    tc_status st = tc_opt(cc, &src, passes, &opt, &bin, diags);
    int rc = tool_finish("tilec-opt", st, bin, diags, output);
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    tc_compiler_destroy(cc);
    tc_source_free(&src);
    return rc;
}
