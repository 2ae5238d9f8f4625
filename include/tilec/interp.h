/*
 * interp.h — running tilec kernels on the CPU.
 *
 * The interpreter executes a kernel's tile IR, the text `tilec --emit=ir`
 * prints (tc_compile with TC_EMIT_IR), on the host: program after program
 * of the grid, each operation on whole tiles, with the GPU's semantics
 * (docs/interpreter.md). Every memory access is checked against the
 * caller's allocations, so an out-of-bounds load or store stops the launch
 * with the op's source line instead of reading garbage.
 *
 * Most programs never call this API: with TILEC_INTERPRET=1 in the
 * environment, the runtime (runtime.h) runs on the host through it —
 * contexts need no GPU, tc_mem_alloc returns host memory, tc_jit compiles
 * to IR, and tc_launch interprets — so unchanged C programs, the standard
 * library included, run on a machine without a GPU.
 *
 *     tc_interp_module *m;
 *     tc_source ir = {"softmax.tir", text, len};       // TC_EMIT_IR output
 *     tc_interp_load(&ir, &m, diags);
 *     tc_interp_kernel *k;
 *     tc_interp_get_kernel(m, "softmax_fwd", &k);
 *     void *args[] = {&out, &x, &stride_out, &stride_x, &n_cols};  // as tc_launch takes them
 *     unsigned grid[3] = {rows, 1, 1};
 *     tc_interp_launch(k, grid, args, NULL);             // NULL: no bounds checks
 *
 * Threads: a module may be shared; launches of its kernels may run at once
 * on different threads (each launch has its own state; their memory
 * accesses are the caller's to order). tc_interp_unload once no launch runs.
 */
#ifndef TILEC_INTERP_H
#define TILEC_INTERP_H

#include "tilec/tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_interp_module tc_interp_module;
typedef struct tc_interp_kernel tc_interp_kernel;

/* The memory a launch may touch. find() reports the allocation that holds
 * address addr: its first address and its size in bytes, returning 1, or 0
 * when no allocation holds addr (then it may report the nearest allocation
 * below addr, for the message: the access "runs past the end" of it, or
 * 0 bytes: it is "outside every allocation"). Every load, store and atomic element
 * must lie in one allocation and be aligned to its size; otherwise the
 * launch stops with TC_ERROR_LAUNCH. find may be called from several
 * launches at once. */
typedef struct tc_interp_memory {
    int (*find)(void *user, uint64_t addr, uint64_t *base, uint64_t *bytes);
    void *user;
} tc_interp_memory;

/* Parses and verifies IR text (every kernel and func of it); errors are
 * TC_ERROR_COMPILE with file:line:col diagnostics in diags (may be NULL)
 * and the first one in tc_last_error(). The IR must be free of GPU
 * decisions (TC_EMIT_IR's output is): a layout is ignored, but an op of
 * the GPU passes (shared memory, TMA, wgmma) is an error that names it.
 * Ops may carry `loc(...)` (tc_options.line_info): the interpreter's
 * messages then name .tile lines. The text is copied. */
TC_API tc_status tc_interp_load(const tc_source *ir, tc_interp_module **out, tc_diagnostics *diags);
TC_API void tc_interp_unload(tc_interp_module *m);

/* The kernel of that name (TC_ERROR_INVALID_ARGUMENT if there is none),
 * valid until the module is unloaded, and its runtime parameters. */
TC_API tc_status tc_interp_get_kernel(tc_interp_module *m, const char *name, tc_interp_kernel **out);
TC_API size_t tc_interp_kernel_num_params(const tc_interp_kernel *k);

/* Runs the grid's programs in order (x fastest, then y, then z) on the
 * calling thread. args[i] points to runtime parameter i's value, of the C
 * type tc_launch takes (runtime.h, tc_param_desc: a pointer as a 64-bit
 * address); args may be NULL only for a kernel without parameters. mem
 * NULL: accesses are not checked (the caller vouches for every address).
 * A program that reads or writes outside the memory, or whose
 * device_assert fails, stops the launch: TC_ERROR_LAUNCH with the op's
 * location, the program and the address in tc_last_error(); a failed
 * assert also prints CUDA's line ("file:line: kernel: block: [x,y,z]
 * Assertion `message` failed.") to stderr. device_print writes to
 * stdout. Programs before the failing one have run; writes of the failing
 * one up to the fault stay. */
TC_API tc_status tc_interp_launch(tc_interp_kernel *k, const unsigned grid[3], void *const *args,
                                  const tc_interp_memory *mem);

#ifdef __cplusplus
}
#endif

#endif
