/*
 * tilec — compile tile-language kernels.
 *
 *     tilec [options] FILE.tile
 *
 * A thin driver over tc_compile (include/tilec/tilec.h): it parses flags,
 * reads the file, and prints what the library returns. Diagnostics go to
 * stderr; the exit code is 0 on success, 1 on errors in the input, 2 on bad
 * usage or I/O errors.
 */
#include "tilec/aot.h"
#include "tilec/tilec.h"
#include "tool_options.h"
#include "tool_output.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEFINES 64

static void usage(FILE *out) {
    fputs("usage: tilec [options] FILE.tile\n"
          "       tilec tune FILE.tile --kernel NAME --arg NAME=VALUE... --grid X[,Y[,Z]] (tilec tune --help)\n"
          "\n"
          "Compiles the kernels of FILE.tile.\n"
          "\n"
          "options:\n"
          "  --emit=KIND           ast | ir-raw | ir | ir-gpu | ir-after-all | llvm | ptx (default: ir)\n"
          "  -D NAME=VALUE         value of a constexpr parameter (integer, float, true, false)\n"
          "  --divisible NAME=N   parameter NAME (a pointer's address in bytes, or an integer) is a\n"
          "                        multiple of N, as divisible_by(N) in the source states\n"
          "  --kernel NAME         compile only this kernel (default: every kernel in the file)\n"
          "  --num-warps N         warps per program (default: 4)\n"
          "  --num-stages N        software pipelining depth of loops feeding dots; 1 = off (default: 3)\n"
          "  --warp-specialize     sm_90a: a producer warpgroup issues the TMA copies of loops feeding\n"
          "                        dots; the num_warps warps only compute\n"
          "  --persistent          run each kernel's grid as a loop over its tiles in as many programs\n"
          "                        as the GPU holds at once\n"
          "  --min-programs-per-sm N\n"
          "                        N programs must fit on one SM at once (.minnctapersm, CUDA's launch\n"
          "                        bounds): at most 65536 / (N threads) registers a thread, split\n"
          "                        between producer and consumers when warp-specialized\n"
          "  --llvm-O3             optimize with LLVM's default<O3> pipeline and -O3 instruction\n"
          "                        selection instead of tilec's short pipeline (slower to compile)\n"
          "  --arch ARCH           sm_80 | sm_90 | sm_90a (default: sm_90a)\n"
          "  -g                    line info: .file/.loc directives in the PTX map each instruction to\n"
          "                        its line and column of FILE.tile, for ncu and compute-sanitizer\n"
          "                        (with --aot, ptxas gets -lineinfo); the code is the same. The IR\n"
          "                        emits and --print-after dumps carry each op's loc(\"FILE\":LINE:COL)\n"
          "  --print-after=PASS    print the IR after PASS to stderr\n"
          "  --print-after-all     print the IR after every pass to stderr\n"
          "  --verify-each         verify the IR after every pass\n"
          "  -o FILE               write the output to FILE (default: stdout)\n"
          "  --aot                 write a C launcher: NAME.h and NAME.c with the PTX (and, when\n"
          "                        ptxas is found, a cubin) of every --arch (default sm_80,sm_90a)\n"
          "                        and a typed launch function per kernel; -o NAME (default: the\n"
          "                        input's base name); --arch takes a comma-separated list\n"
          "  --no-cubin            with --aot: embed PTX only, even if ptxas is found\n"
          "  --time FILE...        compile every kernel of each file (only --kernel's, if given)\n"
          "                        alone and print one line per kernel: name, output size,\n"
          "                        milliseconds (median of 21), and the medians of each phase\n"
          "  --help                show this help\n"
          "  --version             show the version\n",
          out);
}

/* Returns the value of "--flag=value" or "--flag value"; advances *i. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --time: every kernel of every file (or only `kernel`, when given),
 * compiled alone, timed over several runs. */
static int time_files(tc_compiler *cc, char **paths, int num_paths, const char *kernel, const tc_constexpr *cx,
                      size_t num_cx, const tc_options *opt) {
    enum { RUNS = 21 };
    int rc = 0;
    const char *what = opt->emit == TC_EMIT_AST    ? "ast"
                       : opt->emit == TC_EMIT_LLVM ? "llvm"
                       : opt->emit == TC_EMIT_PTX  ? "ptx"
                                                   : "ir";
    for (int p = 0; p < num_paths; p++) {
        tc_source src;
        if (tc_source_read_file(paths[p], &src) != TC_OK) {
            fprintf(stderr, "tilec: cannot read '%s'\n", paths[p]);
            rc = rc ? rc : 2;
            continue;
        }
        tc_diagnostics *diags = NULL;
        tc_diagnostics_create(&diags);
        char **names = NULL;
        size_t count = 0;
        if (tc_list_kernels(&src, &names, &count, diags) != TC_OK) {
            fputs(tc_diagnostics_text(diags), stderr);
            rc = 1;
        }
        bool found = false;
        for (size_t k = 0; k < count; k++) {
            if (kernel && strcmp(kernel, names[k]) != 0)
                continue;
            found = true;
            double ms[RUNS], phase[5][RUNS];
            size_t bytes = 0;
            tc_status st = TC_OK;
            for (int r = 0; r < RUNS && st == TC_OK; r++) {
                tc_binary *bin = NULL;
                tc_diagnostics_clear(diags);
                double t0 = now_ms();
                st = tc_compile(cc, &src, names[k], cx, num_cx, opt, &bin, diags);
                ms[r] = now_ms() - t0;
                tc_compile_times t = {0};
                if (bin)
                    tc_binary_compile_times(bin, &t);
                const double v[5] = {t.frontend_ms, t.passes_ms, t.lower_ms, t.llvm_opt_ms, t.ptx_emit_ms};
                for (int i = 0; i < 5; i++)
                    phase[i][r] = v[i];
                tc_binary_text(bin, &bytes);
                tc_binary_destroy(bin);
            }
            if (st != TC_OK) {
                const char *text = tc_diagnostics_text(diags);
                if (*text)
                    fputs(text, stderr);
                else
                    fprintf(stderr, "tilec: %s\n", tc_last_error());
                printf("%-24s %-20s FAILED (%s)\n", paths[p], names[k], tc_status_string(st));
                rc = 1;
                continue;
            }
            qsort(ms, RUNS, sizeof ms[0], cmp_double);
            for (int i = 0; i < 5; i++)
                qsort(phase[i], RUNS, sizeof phase[i][0], cmp_double);
            printf("%-24s %-20s %s %7zu bytes %8.3f ms  (front end %.2f, passes %.2f", paths[p], names[k], what,
                   bytes, ms[RUNS / 2], phase[0][RUNS / 2], phase[1][RUNS / 2]);
            if (opt->emit == TC_EMIT_LLVM || opt->emit == TC_EMIT_PTX)
                printf(", lower %.2f, LLVM opt %.2f%s", phase[2][RUNS / 2], phase[3][RUNS / 2],
                       opt->emit == TC_EMIT_PTX ? "" : ")\n");
            if (opt->emit == TC_EMIT_PTX)
                printf(", PTX emit %.2f)\n", phase[4][RUNS / 2]);
            else if (opt->emit != TC_EMIT_LLVM)
                printf(")\n");
        }
        if (kernel && !found && count > 0) {
            fprintf(stderr, "tilec: %s: no kernel named '%s'\n", paths[p], kernel);
            rc = 1;
        }
        tc_names_free(names, count);
        tc_diagnostics_destroy(diags);
        tc_source_free(&src);
    }
    return rc;
}

/* --aot: NAME.h and NAME.c next to each other (tc_aot_generate does the work). */
static int aot_main(const char *path, const char *kernel, const tc_constexpr *cx, size_t num_cx, const tc_options *opt,
                    const char *arch_list, const char *output, int no_cubin) {
    char prefix[4096], archs_buf[256];
    const char *archs[8];
    size_t num_archs = 0;
    if (arch_list) {
        snprintf(archs_buf, sizeof archs_buf, "%s", arch_list);
        for (char *tok = strtok(archs_buf, ","); tok && num_archs < 8; tok = strtok(NULL, ","))
            archs[num_archs++] = tok;
    }
    if (output) {
        snprintf(prefix, sizeof prefix, "%s", output);
    } else { /* the input's base name, without its extension, in the current directory */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        snprintf(prefix, sizeof prefix, "%s", base);
        char *dot = strrchr(prefix, '.');
        if (dot && dot != prefix)
            *dot = 0;
    }
    const char *name = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
    char header_name[4200], h_path[4200], c_path[4200];
    snprintf(header_name, sizeof header_name, "%s.h", name);
    snprintf(h_path, sizeof h_path, "%s.h", prefix);
    snprintf(c_path, sizeof c_path, "%s.c", prefix);

    tc_source src;
    if (tc_source_read_file(path, &src) != TC_OK) {
        fprintf(stderr, "tilec: cannot read '%s'\n", path);
        return 2;
    }
    tc_aot_request req;
    tc_aot_request_init(&req);
    req.source = &src;
    req.kernel = kernel;
    req.constexprs = cx;
    req.num_constexprs = num_cx;
    req.options = opt;
    req.archs = num_archs ? archs : NULL;
    req.num_archs = num_archs;
    req.name = name;
    req.header_name = header_name;
    req.ptxas = no_cubin ? "" : NULL;
    tc_diagnostics *diags = NULL;
    tc_diagnostics_create(&diags);
    tc_aot_output *out = NULL;
    tc_status st = tc_aot_generate(&req, &out, diags);
    fputs(tc_diagnostics_text(diags), stderr);
    int rc = 0;
    if (st == TC_OK) {
        fputs(tc_aot_notes(out), stderr);
        const char *files[2] = {h_path, c_path};
        for (int i = 0; i < 2 && rc == 0; i++) {
            size_t len;
            const char *text = i == 0 ? tc_aot_header(out, &len) : tc_aot_source(out, &len);
            FILE *f = fopen(files[i], "wb");
            if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
                fprintf(stderr, "tilec: cannot write '%s'\n", files[i]);
                rc = 2;
            }
        }
    } else {
        if (st != TC_ERROR_COMPILE)
            fprintf(stderr, "tilec: %s: %s\n", tc_status_string(st), tc_last_error());
        rc = st == TC_ERROR_COMPILE ? 1 : st == TC_ERROR_INVALID_ARGUMENT || st == TC_ERROR_UNSUPPORTED ? 2 : 3;
    }
    tc_aot_output_destroy(out);
    tc_diagnostics_destroy(diags);
    tc_source_free(&src);
    return rc;
}

int tune_main(int argc, char **argv); /* tilec_tune.c */

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "tune") == 0)
        return tune_main(argc - 1, argv + 1);
    tc_options opt;
    tc_options_init(&opt);
    const char *path = NULL, *kernel = NULL, *output = NULL, *arch = NULL;
    int aot = 0, no_cubin = 0;
    char **time_paths = NULL;
    int num_time_paths = 0;
    tc_constexpr cx[MAX_DEFINES];
    char cx_names[MAX_DEFINES][128];
    tc_param_spec params[MAX_DEFINES];
    char param_names[MAX_DEFINES][128];
    size_t num_params = 0;
    size_t num_cx = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int shared = tool_compile_option("tilec", argc, argv, &i, &opt, &arch);
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
        } else if ((v = tool_flag_value(argc, argv, &i, "--emit"))) {
            if (strcmp(v, "ast") == 0)
                opt.emit = TC_EMIT_AST;
            else if (strcmp(v, "ir-raw") == 0)
                opt.emit = TC_EMIT_IR_RAW;
            else if (strcmp(v, "ir") == 0)
                opt.emit = TC_EMIT_IR;
            else if (strcmp(v, "ir-after-all") == 0)
                opt.emit = TC_EMIT_IR_AFTER_ALL;
            else if (strcmp(v, "ir-gpu") == 0)
                opt.emit = TC_EMIT_IR_GPU;
            else if (strcmp(v, "llvm") == 0)
                opt.emit = TC_EMIT_LLVM;
            else if (strcmp(v, "ptx") == 0)
                opt.emit = TC_EMIT_PTX;
            else {
                fprintf(stderr, "tilec: unknown --emit kind '%s' (ast, ir-raw, ir, ir-gpu, ir-after-all, llvm, ptx)\n", v);
                return 2;
            }
        } else if (strncmp(a, "-D", 2) == 0) {
            const char *def = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!def || num_cx == MAX_DEFINES ||
                tc_constexpr_parse(def, &cx[num_cx], cx_names[num_cx], sizeof cx_names[num_cx]) != TC_OK) {
                fprintf(stderr, "tilec: bad -D '%s': expected NAME=VALUE (integer, float, true or false)\n",
                        def ? def : "");
                return 2;
            }
            num_cx++;
        } else if ((v = tool_flag_value(argc, argv, &i, "--divisible"))) {
            /* NAME=N: the parameter's address (bytes) or value is a multiple of N. */
            int64_t n;
            if (num_params == MAX_DEFINES ||
                !tool_parse_fact(v, INT64_MAX, param_names[num_params], sizeof param_names[0], &n)) {
                fprintf(stderr, "tilec: bad --divisible '%s': expected NAME=N with N a power of two\n", v);
                return 2;
            }
            params[num_params].name = param_names[num_params];
            params[num_params].divisibility = n;
            num_params++;
            opt.params = params;
            opt.num_params = num_params;
        } else if ((v = tool_flag_value(argc, argv, &i, "--kernel"))) {
            kernel = v;
        } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
            output = argv[++i];
        } else if (strcmp(a, "--aot") == 0) {
            aot = 1;
        } else if (strcmp(a, "--no-cubin") == 0) {
            no_cubin = 1;
        } else if (strcmp(a, "--time") == 0) {
            time_paths = argv + i + 1;
            num_time_paths = argc - i - 1;
            break;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tilec: unknown option '%s' (see --help)\n", a);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "tilec: more than one input file ('%s' and '%s')\n", path, a);
            return 2;
        }
    }
    if (!path && !time_paths) {
        usage(stderr);
        return 2;
    }
    if (aot && !path) {
        fprintf(stderr, "tilec: --aot needs one input file\n");
        return 2;
    }
    if (aot)
        return aot_main(path, kernel, cx, num_cx, &opt, arch, output, no_cubin);
    if (time_paths) {
        tc_target t = {arch};
        tc_compiler *tcc = NULL;
        if (tc_compiler_create(&t, &tcc) != TC_OK) {
            fprintf(stderr, "tilec: --arch %s is not supported (sm_80, sm_90, sm_90a)\n", arch);
            return 2;
        }
        int rc = time_files(tcc, time_paths, num_time_paths, kernel, cx, num_cx, &opt);
        tc_compiler_destroy(tcc);
        return rc;
    }

    tc_source src;
    if (tc_source_read_file(path, &src) != TC_OK) {
        fprintf(stderr, "tilec: cannot read '%s'\n", path);
        return 2;
    }
    tc_target target = {arch};
    tc_compiler *cc = NULL;
    tc_status st = tc_compiler_create(&target, &cc);
    if (st != TC_OK) {
        fprintf(stderr, "tilec: --arch: %s\n", tc_last_error());
        tc_source_free(&src);
        return 2;
    }
    tc_diagnostics *diags = NULL;
    tc_diagnostics_create(&diags);
    tc_binary *bin = NULL;
    st = tc_compile(cc, &src, kernel, cx, num_cx, &opt, &bin, diags);
    int rc = tool_finish("tilec", st, bin, diags, output);
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    tc_compiler_destroy(cc);
    tc_source_free(&src);
    return rc;
}
