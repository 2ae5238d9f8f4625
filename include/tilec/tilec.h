/*
 * tilec.h — compiling tile-language kernels from C.
 *
 *     tc_compiler *cc;
 *     tc_target target = {"sm_90a"};
 *     tc_compiler_create(&target, &cc);
 *     tc_source src = {"softmax.tile", text, strlen(text)};
 *     tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
 *     tc_options opt;
 *     tc_options_init(&opt);
 *     opt.emit = TC_EMIT_IR;
 *     tc_diagnostics *diags;
 *     tc_diagnostics_create(&diags);
 *     tc_binary *out;
 *     tc_status st = tc_compile(cc, &src, "softmax", cx, 1, &opt, &out, diags);
 *     if (st != TC_OK)
 *         fprintf(stderr, "%s%s\n", tc_diagnostics_text(diags), tc_status_string(st));
 *
 * Every function returns a tc_status (or is a plain accessor that cannot
 * fail); none of them exits or aborts the calling program. Errors in the
 * user's source are TC_ERROR_COMPILE, with file:line:col diagnostics rendered
 * into the tc_diagnostics object.
 *
 * Threads: every function may be called from any thread, and compiles run
 * in parallel. What may be shared:
 *  - tc_compiler: not changed by tc_compile; one may serve many threads at
 *    once. tc_compiler_destroy once no thread uses it.
 *  - tc_binary: read-only once tc_compile or tc_opt returns it; any number
 *    of threads may read it at once. Destroy it once no thread reads it.
 *  - tc_diagnostics: written by every call it is passed to; one per thread,
 *    or calls that share one serialized by the caller.
 *  - tc_last_error() is the calling thread's own; tc_version() and
 *    tc_status_string() return text that never changes.
 */
#ifndef TILEC_TILEC_H
#define TILEC_TILEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TC_API __attribute__((visibility("default")))

/* The version of these headers: the one place it is written (CMake reads it
 * from here). tc_version() says which library is running. */
#define TC_VERSION_MAJOR 0
#define TC_VERSION_MINOR 1
#define TC_VERSION_PATCH 0
#define TC_VERSION_STR_(x) #x
#define TC_VERSION_STR(x) TC_VERSION_STR_(x)
#define TC_VERSION_STRING                                                                                     \
    TC_VERSION_STR(TC_VERSION_MAJOR) "." TC_VERSION_STR(TC_VERSION_MINOR) "." TC_VERSION_STR(TC_VERSION_PATCH)

typedef enum tc_status {
    TC_OK = 0,
    TC_ERROR_INVALID_ARGUMENT = 1, /* NULL where a value is required, bad option */
    TC_ERROR_COMPILE = 2,          /* the source or IR has errors: see the diagnostics */
    TC_ERROR_IO = 3,               /* a file could not be read or written */
    TC_ERROR_OUT_OF_MEMORY = 4,
    TC_ERROR_INTERNAL = 5,         /* a bug in tilec: please report the diagnostics text */
    TC_ERROR_UNSUPPORTED = 6,      /* a request this build or target cannot serve */
    TC_ERROR_NO_DRIVER = 7,        /* libcuda.so.1 could not be loaded: no NVIDIA driver */
    TC_ERROR_NO_DEVICE = 8,        /* the driver sees no GPU, or not the one asked for */
    TC_ERROR_CUDA = 9,             /* a CUDA driver call failed: see tc_last_error() */
    TC_ERROR_LAUNCH = 10,          /* the interpreter stopped a kernel (interp.h): a memory access
                                      outside every allocation, or a failed device_assert */
} tc_status;

TC_API const char *tc_status_string(tc_status status);

/* The detailed text of the last failing call on this thread: the CUDA error
 * name and string, the driver's JIT log when a module fails to load, the
 * path of a cache file that could not be read or written; "" if no call
 * has failed on this thread. Successful calls leave it alone. The text stays
 * valid until the next failing call on the same thread. */
TC_API const char *tc_last_error(void);

TC_API const char *tc_version(void); /* "tilec 0.1.0 (LLVM 19.1.7)" */

/* A source text: a .tile file for tc_compile, IR text for tc_opt. The text
 * need not be NUL-terminated and is not copied: keep it alive during the call.
 * text NULL with len 0 is the empty source; NULL with len > 0 is
 * TC_ERROR_INVALID_ARGUMENT. */
typedef struct tc_source {
    const char *name; /* shown in diagnostics; NULL = "<string>" */
    const char *text;
    size_t len;
} tc_source;

/* Reads a whole file; free it with tc_source_free. */
TC_API tc_status tc_source_read_file(const char *path, tc_source *out);
TC_API void tc_source_free(tc_source *src);

typedef enum tc_constexpr_kind {
    TC_CONSTEXPR_INT,
    TC_CONSTEXPR_FLOAT,
    TC_CONSTEXPR_BOOL,
    TC_CONSTEXPR_DTYPE, /* for `constexpr dtype T`: i holds a tc_dtype */
} tc_constexpr_kind;

/* Scalar types, for type parameters. F8E4M3 and F8E5M2 are the 8-bit
 * floats f8e4m3 (OCP E4M3FN: no infinities, max 448; torch.float8_e4m3fn,
 * Triton's tl.float8e4nv) and f8e5m2 (E5M2: torch.float8_e5m2, tl.float8e5),
 * one byte each (docs/language.md, "fp8"). */
typedef enum tc_dtype {
    TC_DTYPE_I1, TC_DTYPE_I8, TC_DTYPE_I16, TC_DTYPE_I32, TC_DTYPE_I64,
    TC_DTYPE_F16, TC_DTYPE_BF16, TC_DTYPE_F32, TC_DTYPE_F64,
    TC_DTYPE_F8E4M3, TC_DTYPE_F8E5M2,
} tc_dtype;

/* A value for a `constexpr` parameter. name is required; kind is one of
 * tc_constexpr_kind (others are TC_ERROR_INVALID_ARGUMENT). */
typedef struct tc_constexpr {
    const char *name;
    tc_constexpr_kind kind;
    int64_t i; /* INT, BOOL (0 or 1), DTYPE (a tc_dtype) */
    double f;  /* FLOAT */
} tc_constexpr;

/* Parses "NAME=VALUE" (an integer, a float, true, false or a type name such
 * as bf16), as tilec's -D flag does. NAME is a C identifier; it is copied
 * into name_buf (name_buf_size must exceed its length), and out->name points
 * to it. text, out and name_buf are required. */
TC_API tc_status tc_constexpr_parse(const char *text, tc_constexpr *out, char *name_buf, size_t name_buf_size);

/* What tc_compile produces. */
typedef enum tc_emit {
    TC_EMIT_AST,          /* the syntax tree, as text */
    TC_EMIT_IR_RAW,       /* the IR straight from the front end */
    TC_EMIT_IR,           /* the IR after the generic passes (no layouts) */
    TC_EMIT_IR_AFTER_ALL, /* the IR after the front end and after every pass (GPU passes included) */
    TC_EMIT_IR_GPU,       /* the IR after the GPU passes: layouts, vectors, shared memory */
    TC_EMIT_LLVM,         /* LLVM IR for the NVPTX back end, after -O3 */
    TC_EMIT_PTX,          /* PTX assembly for the compiler's target */
    TC_EMIT_SIGNATURE,    /* no text: the front end only, for the kernels' runtime signatures
                             (tc_binary_kernel_*: num_warps, no shared memory) */
} tc_emit;

/* A fact about a runtime parameter that the kernel is specialized on: its
 * value (an integer) or address in bytes (a pointer) is a multiple of
 * `divisibility`. The JIT derives these from the actual arguments (16-byte
 * alignment, divisibility by 16), as Triton does; the source can state the
 * same with `divisible_by(N)`. */
typedef struct tc_param_spec {
    const char *name;
    int64_t divisibility;
} tc_param_spec;

/* Limits of tc_options, checked by tc_compile, tc_opt, tc_jit and
 * tc_aot_generate (TC_ERROR_INVALID_ARGUMENT), by the tools' flags, and by
 * the IR verifier for the kernel attributes num_warps, num_stages and
 * min_programs_per_sm. */
#define TC_MAX_NUM_WARPS 32  /* num_warps: 0 (the default, 4) or a power of two 1..32 */
#define TC_MAX_NUM_STAGES 16 /* num_stages: 0 (the default, 3) .. 16 */
#define TC_MAX_PROGRAMS_PER_SM 32 /* min_programs_per_sm: 0 (no bound) .. 32, programs x threads */
#define TC_MAX_THREADS_PER_SM 2048 /* ... at most this (sm_80, sm_90) */
/* The defaults, written once: what 0 (num_warps, num_stages) or NULL (arch) means. */
#define TC_DEFAULT_NUM_WARPS 4
#define TC_DEFAULT_NUM_STAGES 3
#define TC_DEFAULT_ARCH "sm_90a"

typedef struct tc_binary tc_binary;

/* A hook that chooses specialization facts once the kernels' signatures are
 * known, so that a caller deriving facts from a launch's arguments (the JIT)
 * parses the source once. tc_compile calls it at most once, right after the
 * front end (for every emit but TC_EMIT_AST and TC_EMIT_SIGNATURE; tc_opt
 * never calls it), on the calling thread, before it returns. `signature` is what a TC_EMIT_SIGNATURE
 * compile of the same request returns (the kernel compiled, or every kernel
 * of the file); it lives only during the call: copy what is needed.
 *
 * The hook may set *specs and *num_specs (both 0 on entry) to more facts,
 * checked as tc_options.params are and added to them for the rest of the
 * compile (the code is the same as with all of them in params); the array
 * and its names must stay valid until tc_compile returns. Setting *stop to
 * nonzero ends the compile there: tc_compile returns TC_OK and a binary
 * holding the signature only, as TC_EMIT_SIGNATURE. A status other than
 * TC_OK ends the compile with that status, and tc_compile returns it (the
 * hook sets tc_last_error() itself, e.g. through a call that failed). */
typedef tc_status (*tc_specialize_fn)(void *user, const tc_binary *signature, const tc_param_spec **specs,
                                      size_t *num_specs, int *stop);

typedef struct tc_options {
    tc_emit emit;            /* one of the tc_emit values */
    int num_warps;           /* warps per program; 0 = 4, else a power of two <= TC_MAX_NUM_WARPS */
    const char *print_after; /* a pass name: the IR after it goes to the log */
    int print_after_all;     /* the IR after every pass goes to the log */
    int verify_each;         /* run the verifier after every pass */
    /* Specialization facts by parameter name: each name must be a parameter
     * of the kernel compiled (of some kernel of the file when tc_compile's
     * kernel is NULL), each divisibility a power of two >= 1. NULL only with
     * num_params 0. */
    const tc_param_spec *params;
    size_t num_params;
    int num_stages;          /* software pipelining depth of loops feeding dots; 0 = 3, 1 = off,
                                at most TC_MAX_NUM_STAGES */
    int llvm_o3;             /* LLVM's default<O3> pipeline and -O3 instruction selection instead of
                                tilec's short pipeline: slower to compile, for comparisons */
    int warp_specialize;     /* sm_90a: a loop whose dot operands all come by TMA gets a producer
                                warpgroup that issues the copies, the num_warps warps only compute
                                (docs/passes.md, "Warp specialization"); 0 = off (the kernel
                                attribute warp_specialize overrides) */
    tc_specialize_fn specialize; /* NULL: none; tc_jit and tc_aot_generate ignore the caller's */
    void *specialize_user;       /* the hook's first argument */
    int persistent;              /* run each kernel's grid as a loop over its tiles in as many programs as
                                    the GPU holds at once (pass `persistent`, docs/passes.md, "Persistent
                                    programs"); 0 = off (the kernel attribute persistent overrides) */
    int line_info;               /* nonzero: the PTX carries `.file`/`.loc` directives that map each instruction
                                    to the line and column of the source op it came from, in the file the
                                    tc_source names (tilec -g; docs/codegen.md, "Line info"), for profilers and
                                    compute-sanitizer. The code is the same; 0 = off. tc_jit also turns it on
                                    for every compile when $TILEC_LINE_INFO is 1 (include/tilec/runtime.h).
                                    The IR emits and IR dumps then print each op's location,
                                    loc("FILE":LINE:COL), which tc_opt reads back (docs/ir.md) */
    int min_programs_per_sm;     /* programs of the kernel that must fit on one SM at once, as CUDA's launch
                                    bounds (.minnctapersm): ptxas gives each thread at most 65536 / (N x
                                    threads) registers at launch, and a warp-specialized kernel splits them
                                    between its producer and consumer warps (docs/passes.md, "Warp
                                    specialization"); shared memory must allow N too. 0 = no bound (a
                                    warp-specialized kernel of more than 256 threads asks for 1), at most
                                    TC_MAX_PROGRAMS_PER_SM and N x 32 x num_warps <= TC_MAX_THREADS_PER_SM.
                                    tc_compile and tc_opt give it to every kernel as the attribute
                                    min_programs_per_sm, unless the kernel's IR states its own */
} tc_options;

TC_API void tc_options_init(tc_options *opt);

typedef struct tc_target {
    const char *arch; /* "sm_80", "sm_90" or "sm_90a"; NULL = "sm_90a"; others are TC_ERROR_UNSUPPORTED */
} tc_target;

typedef struct tc_compiler tc_compiler;
TC_API tc_status tc_compiler_create(const tc_target *target, tc_compiler **out);
TC_API void tc_compiler_destroy(tc_compiler *cc);

/* Diagnostics collected by a call: rendered text (file:line:col: error: ...,
 * the source line, a caret) and the number of errors. */
typedef struct tc_diagnostics tc_diagnostics;
TC_API tc_status tc_diagnostics_create(tc_diagnostics **out);
TC_API void tc_diagnostics_destroy(tc_diagnostics *d);
TC_API const char *tc_diagnostics_text(const tc_diagnostics *d); /* "" when empty */
TC_API size_t tc_diagnostics_error_count(const tc_diagnostics *d);
TC_API void tc_diagnostics_clear(tc_diagnostics *d);

/* The result of a compile: the requested text, and a log (the IR printed by
 * print_after / print_after_all). */
TC_API const char *tc_binary_text(const tc_binary *b, size_t *len);
TC_API const char *tc_binary_log(const tc_binary *b, size_t *len);
TC_API void tc_binary_destroy(tc_binary *b);

/* Where a compile's time went, in milliseconds (0 for a phase that did not
 * run): the front end (parse, lower to IR, verify), tilec's passes, the
 * lowering of the IR to LLVM IR, LLVM's optimization pipeline, and NVPTX's
 * instruction selection and PTX printing. `tilec --time` prints them. */
typedef struct tc_compile_times {
    double frontend_ms, passes_ms, lower_ms, llvm_opt_ms, ptx_emit_ms;
} tc_compile_times;
TC_API tc_status tc_binary_compile_times(const tc_binary *b, tc_compile_times *out);
/* Writes the binary's text to the file `path` (created or truncated), or to
 * stdout when path is NULL. TC_ERROR_IO with "cannot write 'PATH': reason"
 * in tc_last_error() when it cannot. */
TC_API tc_status tc_binary_write(const tc_binary *b, const char *path);

/* Launch metadata of the kernels in a binary, in source order: for
 * TC_EMIT_IR, TC_EMIT_IR_GPU, TC_EMIT_LLVM and TC_EMIT_PTX every kernel that
 * reached the pass pipeline, as compiled; for TC_EMIT_SIGNATURE and
 * TC_EMIT_IR_RAW (and a compile its specialize hook stopped) the signatures
 * the front end gives, with the compile's num_warps and no shared memory.
 * Indices out of range give 0, NULL or TC_ERROR_INVALID_ARGUMENT. */
#define TC_HAVE_BINARY_METADATA 1
struct tc_param_desc; /* include/tilec/runtime.h */
TC_API size_t tc_binary_kernel_count(const tc_binary *b);
TC_API const char *tc_binary_kernel_name(const tc_binary *b, size_t kernel); /* the PTX entry */
TC_API int tc_binary_kernel_num_warps(const tc_binary *b, size_t kernel);  /* 32 * num_warps threads */
/* Dynamic shared memory per program, in bytes; above 48 KiB the launcher
 * must raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. */
TC_API size_t tc_binary_kernel_shared_bytes(const tc_binary *b, size_t kernel);
/* Runtime parameters (constexpr ones are gone, and the hidden ones a launch
 * passes itself, the grid of a persistent kernel and the tensor maps, are
 * not among them), in order. */
TC_API size_t tc_binary_kernel_num_params(const tc_binary *b, size_t kernel);
TC_API const char *tc_binary_kernel_param_name(const tc_binary *b, size_t kernel, size_t param);
/* The IR type: "ptr<f16>", "i32", "bf16", ... */
TC_API const char *tc_binary_kernel_param_type(const tc_binary *b, size_t kernel, size_t param);
/* The same as a tc_param_desc (runtime.h); its strings live as long as b.
 * is_const comes from the source (`const T*`): tc_compile's binaries have
 * it, tc_opt's do not (the IR does not keep `const`). */
TC_API tc_status tc_binary_kernel_param(const tc_binary *b, size_t kernel, size_t param, struct tc_param_desc *out);
/* The TMA tensor maps the kernel takes after its runtime parameters (and
 * after the grid of a persistent kernel), which a launch builds from the
 * arguments (tc_tensor_map_desc, runtime.h): the kernel's IR parameters of
 * type `tensormap`, which the pipeline adds on sm_90a. They are not runtime
 * parameters: tc_binary_kernel_num_params does not count them. Kernel or
 * map index out of range: 0, and TC_ERROR_INVALID_ARGUMENT. */
struct tc_tensor_map_desc; /* include/tilec/runtime.h */
TC_API size_t tc_binary_kernel_num_tensor_maps(const tc_binary *b, size_t kernel);
TC_API tc_status tc_binary_kernel_tensor_map(const tc_binary *b, size_t kernel, size_t i,
                                             struct tc_tensor_map_desc *out);
/* 1 when the kernel is persistent (tc_kernel_desc.persistent, runtime.h): it
 * takes the launch's grid as three hidden i32 parameters (x, y, z; the IR's
 * parameters with attribute launch_grid = 0, 1, 2) after its runtime
 * parameters and before its tensor maps, and loops over the grid's programs
 * itself; 0 for other kernels and for a kernel index out of range. */
TC_API int tc_binary_kernel_persistent(const tc_binary *b, size_t kernel);

/* Compiles `kernel` (NULL: every kernel of the file) specialized with the
 * given constexpr values. cc, src and out are required, cx too when num_cx
 * > 0; opt NULL means tc_options_init's defaults. A bad argument or option is
 * TC_ERROR_INVALID_ARGUMENT naming it in tc_last_error(); errors in the
 * source are TC_ERROR_COMPILE, with the count and the first diagnostic in
 * tc_last_error() and all of them in diags (which may be NULL). A `kernel`
 * the file does not declare is a diagnostic too, except with emit
 * TC_EMIT_SIGNATURE or a specialize hook (callers that name the kernel as an
 * argument): TC_ERROR_INVALID_ARGUMENT, "FILE has no kernel named 'K'". */
TC_API tc_status tc_compile(tc_compiler *cc, const tc_source *src, const char *kernel, const tc_constexpr *cx,
                            size_t num_cx, const tc_options *opt, tc_binary **out, tc_diagnostics *diags);

/* Parses IR text, verifies it, runs the comma-separated passes (NULL or "":
 * none) and returns the printed IR, or with opt->emit TC_EMIT_LLVM or
 * TC_EMIT_PTX lowers it (every tile must then have a layout). Arguments and
 * options are checked as by tc_compile. */
TC_API tc_status tc_opt(tc_compiler *cc, const tc_source *ir, const char *passes, const tc_options *opt,
                        tc_binary **out, tc_diagnostics *diags);

/* The names of the kernels of a source file, in order. Free with
 * tc_names_free. Syntax errors are reported as by tc_compile. */
TC_API tc_status tc_list_kernels(const tc_source *src, char ***names, size_t *count, tc_diagnostics *diags);
TC_API void tc_names_free(char **names, size_t count);

/* ---- search spaces (@autotune; docs/language.md, "Autotuning") ----
 *
 * A kernel may declare the configurations an autotuner chooses among:
 *
 *     @autotune(key = [n_cols], BLOCK = [1024, 2048, 4096], num_warps = [4, 8, 16])
 *     kernel softmax(..., i32 n_cols, constexpr i32 BLOCK = 1024) { ... }
 *
 * tc_tune_space_create lists them for one specialization: cx are the
 * constexprs the caller fixes (those of a tc_jit_request); a configuration
 * that gives a fixed name another value, or fails the clause's `where`, is
 * left out. tc_autotune (runtime.h) times them. */
#define TC_MAX_TUNE_CONFIGS 65536

typedef struct tc_tune_space tc_tune_space;

/* One configuration. Its strings live as long as the space. */
typedef struct tc_tune_config {
    const tc_constexpr *constexprs; /* the tuned constexpr values */
    size_t num_constexprs;
    int num_warps;       /* 0: not tuned (the request's options decide) */
    int num_stages;      /* 0: not tuned */
    int warp_specialize; /* -1: not tuned; else 0 or 1 */
    int min_programs_per_sm; /* 0: not tuned; else tc_options.min_programs_per_sm */
} tc_tune_config;

/* The space of `kernel` (required) of src. A kernel without @autotune has
 * an empty space (tc_tune_space_declared 0, no configurations): not an
 * error. Errors in the source or the clause: TC_ERROR_COMPILE with the
 * diagnostics. */
TC_API tc_status tc_tune_space_create(const tc_source *src, const char *kernel, const tc_constexpr *cx, size_t num_cx,
                                      tc_tune_space **out, tc_diagnostics *diags);
TC_API void tc_tune_space_destroy(tc_tune_space *s);
TC_API int tc_tune_space_declared(const tc_tune_space *s);
TC_API size_t tc_tune_space_num_configs(const tc_tune_space *s);
/* TC_ERROR_INVALID_ARGUMENT when i is out of range. */
TC_API tc_status tc_tune_space_config(const tc_tune_space *s, size_t i, tc_tune_config *out);
/* The key: runtime parameters (by name, and by index among the kernel's
 * runtime parameters) whose values select a tuned configuration. */
TC_API size_t tc_tune_space_num_keys(const tc_tune_space *s);
TC_API const char *tc_tune_space_key(const tc_tune_space *s, size_t i);
TC_API size_t tc_tune_space_key_param(const tc_tune_space *s, size_t i);
/* Its type: TC_DTYPE_I8, _I16, _I32 or _I64 (how a launch passes its value). */
TC_API tc_dtype tc_tune_space_key_dtype(const tc_tune_space *s, size_t i);
/* Writes configuration i as "BM=128,BN=64,num_warps=8" (the tuning
 * table's form; "-" when it sets nothing) into out, cap bytes, always
 * NUL-terminated when cap > 0. Returns the length it needs. */
TC_API size_t tc_tune_config_format(const tc_tune_config *c, char *out, size_t cap);

/* One line per pass that tc_opt accepts: "name  description\n". */
TC_API const char *tc_pass_list(void);

#ifdef __cplusplus
}
#endif

#endif
