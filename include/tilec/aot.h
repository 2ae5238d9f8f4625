/*
 * aot.h — ahead-of-time compilation to a C launcher (what `tilec --aot` does).
 *
 *     tc_aot_request req;
 *     tc_aot_request_init(&req);
 *     req.source = &src;                      // lib/softmax.tile
 *     req.name = "softmax";                   // softmax.h, softmax.c, softmax_* functions
 *     req.constexprs = cx; req.num_constexprs = 1;
 *     tc_aot_output *out;
 *     if (tc_aot_generate(&req, &out, diags) == TC_OK) { write tc_aot_header(out) and tc_aot_source(out) }
 *
 * The generated NAME.c embeds the PTX of every kernel for every requested
 * target, and a cubin per target when ptxas is available, and gives:
 *
 *     tc_status NAME_load(CUcontext ctx);   // NULL: the current context, else device 0's primary one
 *     tc_status NAME_unload(void);
 *     const char *NAME_last_error(void);    // details of the last failure on this thread
 *     const char *NAME_image(void);         // what was loaded, e.g. "sm_90a cubin"
 *     tc_status NAME_KERNEL(CUstream stream, <one typed argument per runtime parameter>, tc_dim3 grid);
 *
 * NAME_load picks the cubin built for the device's compute capability if
 * there is one, else the newest PTX the device can run (sm_90a code runs
 * only on compute capability 9.0; sm_80 PTX runs on 8.0 and later).
 *
 * A kernel compiled persistent (tc_options.persistent, tc_kernel_desc's
 * persistent in include/tilec/runtime.h) takes the same arguments and the
 * same grid: the launcher passes it the grid, and starts only as many
 * programs as the device holds at once (NAME_load counts them per kernel),
 * which loop over it. Its grid must then have at most 2^31 - 1 programs
 * (else TC_ERROR_INVALID_ARGUMENT); NAME_load refuses a kernel of which no
 * program fits on the device (TC_ERROR_UNSUPPORTED).
 *
 * The generated code needs tilec's headers to compile (tilec/runtime.h, for
 * tc_status, tc_dim3 and the CUDA handle types) but links against nothing
 * of tilec's: it opens libcuda.so.1 itself with dlopen, a hundred lines of C,
 * so a deployed program carries neither libtilec (and its LLVM) nor a
 * link-time dependency on the driver, and on a machine without one
 * NAME_load returns TC_ERROR_NO_DRIVER instead of failing to start. It
 * never exits or aborts.
 *
 * Threads: tc_aot_generate may run on several threads at once (each with its
 * own request, output and diagnostics; a tc_aot_output is read-only once
 * returned). In the generated code, NAME_load and NAME_unload must not race
 * with each other or with launches; once loaded, the NAME_KERNEL launchers
 * may run from any number of threads at once, and NAME_last_error() is the
 * calling thread's own.
 */
#ifndef TILEC_AOT_H
#define TILEC_AOT_H

#include "tilec/tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_aot_request {
    const tc_source *source;
    const char *kernel; /* NULL: every kernel of the source */
    const tc_constexpr *constexprs;
    size_t num_constexprs;
    const tc_options *options; /* NULL: defaults; emit and the print options are ignored */
    const char *const *archs;  /* targets; NULL: {"sm_80", "sm_90a"} */
    size_t num_archs;
    const char *name;        /* C prefix of every generated symbol (a C identifier) */
    const char *header_name; /* how NAME.c includes the header; NULL: "NAME.h" */
    const char *ptxas;       /* NULL: search PATH and /usr/local/cuda/bin; "": no cubins */
} tc_aot_request;

TC_API void tc_aot_request_init(tc_aot_request *req);

typedef struct tc_aot_output tc_aot_output;

/* Compiles every kernel for every target and generates the launcher. Errors
 * in the source: TC_ERROR_COMPILE, rendered into diags; a failing ptxas:
 * TC_ERROR_INTERNAL with its output in tc_last_error(). */
TC_API tc_status tc_aot_generate(const tc_aot_request *req, tc_aot_output **out, tc_diagnostics *diags);
TC_API const char *tc_aot_header(const tc_aot_output *o, size_t *len); /* NAME.h */
TC_API const char *tc_aot_source(const tc_aot_output *o, size_t *len); /* NAME.c */
/* Notes for the user, one per line (e.g. "ptxas not found: embedding PTX only"). */
TC_API const char *tc_aot_notes(const tc_aot_output *o);
TC_API void tc_aot_output_destroy(tc_aot_output *o);

#ifdef __cplusplus
}
#endif

#endif
