/*
 * stdlib_test_util.h — what the standard-library suites (test_stdlib.c,
 * test_stdlib_matmul.c, test_stdlib_attention.c, test_stdlib_kvcache.c) share to
 * check the standard library's launches without a GPU: a fake context, the
 * facts a launch carries, the kernel's runtime signature, and compiling
 * each distinct specialization to PTX once (and through ptxas where found).
 */
#ifndef TILEC_STDLIB_TEST_UTIL_H
#define TILEC_STDLIB_TEST_UTIL_H

#include "runtime/runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static tc_context *const FAKE_CTX = (tc_context *)0x1000; /* validation never reads it */

/* The value of the constexpr `name` among a plan's n constexprs, -1 if absent. */
int64_t constexpr_value(const tc_constexpr *cx, size_t n, const char *name);

/* Does a launch's options carry the fact "name is divisible by div"? */
bool has_fact(const tc_options *options, const char *name, int64_t div);

/* The runtime signature of req's kernel (of its embedded source) into sig;
 * false, with the diagnostics printed, if there is not exactly one kernel. */
bool launch_signature(const tc_jit_request *req, int num_warps, RtMeta *sig, tc_diagnostics *diags);

/* The key tc_jit gives req's PTX on a device whose target is sm_90a (the
 * arguments' 16-byte alignment from req's divisibility). */
void stdlib_jit_key(const tc_jit_request *req, uint8_t key[32]);

/* ---- compiling specializations to PTX (stdlib_test_util.c) ---- */

/* Starts a run: finds ptxas ($TILEC_PTXAS, else /usr/local/cuda/bin/ptxas),
 * creates the sm_90a compiler, forgets the specializations seen. */
void ptx_check_begin(void);
/* Ends it: prints "  FAMILY: N specializations compiled ..." and returns N. */
int ptx_check_end(const char *family);
/* Starts a launch's key: "KERNEL wWARPS sSTAGES NAME=VALUE..." over a plan's
 * constexprs; returns the length written (ptx_key_facts continues it). */
int ptx_key_plan(char *key, size_t size, const char *kernel, int num_warps, int num_stages, const tc_constexpr *cx,
                 size_t num_cx);
/* The launch's key so far (at off in key) followed by its fact names and
 * argument alignments, the way tc_jit keys a variant. */
void ptx_key_facts(char *key, size_t size, int off, const tc_options *options, const int64_t *divisibility,
                   size_t num_args);
/* Compiles a launch's specialization to PTX the first time its key is seen,
 * with the facts as tc_jit passes them (options' by name, the pointers'
 * alignment by parameter); checks the PTX has an entry with num_warps and
 * runs ptxas on it where found. Returns the binary (the caller destroys it),
 * or NULL if the key was seen before or it did not compile. */
tc_binary *ptx_compile_once(const char *key, const tc_jit_request *req, const tc_options *options,
                            const tc_kernel_desc *k, const int64_t *divisibility, size_t num_args, int num_warps,
                            tc_diagnostics *diags);

/* Launches that got through an entry point's validation: each suite's
 * launch hook increments it. */
extern int stdlib_hook_calls;

/* Expects INVALID_ARGUMENT with `msg` in tc_last_error(), and no launch. */
#define CHECK_INVALID(call, msg)                                                                                       \
    do {                                                                                                               \
        int calls_ = stdlib_hook_calls;                                                                                \
        CHECK_EQ_INT((call), TC_ERROR_INVALID_ARGUMENT);                                                               \
        CHECK(strstr(tc_last_error(), (msg)) != NULL);                                                                 \
        if (!strstr(tc_last_error(), (msg)))                                                                           \
            fprintf(stderr, "  got: %s\n", tc_last_error());                                                           \
        CHECK_EQ_INT(stdlib_hook_calls, calls_);                                                                       \
    } while (0)

#endif
