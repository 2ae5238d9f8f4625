/*
 * emit.c — LLVM's NVPTX back end: initialization, -O3, PTX emission.
 *
 * Target: triple nvptx64-nvidia-cuda, CPU sm_80 / sm_90 / sm_90a, and the
 * lowest PTX ISA version each needs (+ptx70, +ptx78, +ptx80), so the PTX
 * loads on the oldest driver that knows the architecture. The module is
 * verified first (a broken module is a bug in the lowering and becomes an
 * internal error rather than a crash), optimized, then printed by the NVPTX
 * AsmPrinter.
 *
 * The optimization is tilec's own short pipeline (TILEC_PIPELINE): the
 * lowering already emits what the IR decided (layouts, vector widths, shared
 * buffers, async copies, the tensor-core instructions), so LLVM only has to
 * clean up the index arithmetic and the element packing. Instruction
 * selection runs at -O2, and the code generator starts at AtomicExpand (see
 * init: NVPTX's own IR passes before it have nothing to do on tilec's IR).
 * Against default<O3> with -O3 selection the loops' SASS is the same size
 * and ptxas allocates the same registers, in about half the compile time
 * (docs/codegen.md and bench/RESULTS.md have the figures). Selection at -O0
 * would save more but copies every value across each phi, and with
 * those copies ptxas spilled 21 registers in attention's loop where -O2
 * PTX spills none. tc_options.llvm_o3 (tilec --llvm-O3) runs default<O3>
 * and -O3 selection instead, for comparison.
 *
 * FP contraction: the lowering marks floating-point adds and multiplies
 * `contract`, and NVPTX fuses mul+add into fma at its default fma level; no
 * other fast-math is enabled (div and sqrt stay correctly rounded).
 *
 * LLVM reports internal failures (a selection failure, say) through its fatal
 * error handler, which would exit the process; tilec installs one that turns
 * them into an internal error of the current compile (tc_fatal, caught by the
 * driver's TcGuard).
 */
#include "emit.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const TRIPLE = "nvptx64-nvidia-cuda";

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static LLVMTargetRef nvptx;
static char init_error[256];

static void fatal_handler(const char *reason) {
    tc_fatal(__FILE__, __LINE__, "LLVM error: %s", reason);
}

static void init(void) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    LLVMInstallFatalErrorHandler(fatal_handler);
    /* Process-wide code generator options (this is tilec's private copy of
     * LLVM when it is linked statically): 32-bit shared-memory pointers, as
     * Triton uses, and no loop strength reduction, which cost half of the
     * back end's time on kernels with loops and gained nothing after ptxas;
     * and f32 division as div.full.f32 (at most 2 ulp), which is what `/`
     * means in Triton too; the correctly rounded div.rn.f32 is a subroutine
     * of a dozen instructions that showed in memory-bound kernels. Nor
     * CodeGenPrepare, constant hoisting or the load-store vectorizer: the
     * lowering already forms the addresses and the vector accesses, and
     * they cost compile time for SASS of the same size (bench/RESULTS.md).
     *
     * The code generator's pipeline starts at AtomicExpand: the NVPTX IR
     * passes before it exist for front ends that leave generic pointers,
     * allocas, byval parameters and unreassociated address arithmetic behind
     * (NVPTXLowerArgs, address-space inference, SeparateConstOffsetFromGEP,
     * straight-line strength reduction, n-ary reassociation, two EarlyCSEs).
     * tilec's IR has none of that: kernel pointers are global (addrspace 1)
     * parameters, shared memory is one addrspace(3) global, there are no
     * allocas, aggregates or memory intrinsics, and the addresses are formed
     * per vector group by the lowering. They took a quarter of the back
     * end's time on attention for the same PTX. AtomicExpand (the
     * compare-and-swap loops of atomics PTX lacks) and everything after it
     * run as before. */
    const char *argv[] = {"tilec",
                          "-nvptx-short-ptr",
                          "-disable-lsr",
                          "-nvptx-prec-divf32=1",
                          "-disable-cgp",
                          "-disable-constant-hoisting",
                          "-disable-nvptx-load-store-vectorizer",
                          "-start-before=atomic-expand"};
    LLVMParseCommandLineOptions((int)(sizeof argv / sizeof argv[0]), argv, NULL);
    char *err = NULL;
    if (LLVMGetTargetFromTriple(TRIPLE, &nvptx, &err)) {
        snprintf(init_error, sizeof init_error, "%s", err ? err : "no NVPTX target");
        nvptx = NULL;
    }
    LLVMDisposeMessage(err);
}

bool cg_target_init(const char **why) {
    pthread_once(&init_once, init);
    if (!nvptx && why)
        *why = init_error;
    return nvptx != NULL;
}

/* The pipeline run unless llvm_o3: value numbering, then instcombine for
 * the lowering's index arithmetic and element packing (one round: no second
 * one that only checks for a fixpoint). No loop passes: ptxas hoists loop
 * invariants and lays out loops itself, and with LICM and loop rotation the
 * SASS of attention and matmul was the same size or larger (their loops
 * kept more registers live across iterations). */
static const char *const TILEC_PIPELINE = "function(early-cse,instcombine<no-verify-fixpoint>)";

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A kernel's cluster directive: where it goes in the PTX text, and N. */
typedef struct ClusterAt {
    size_t at;
    const char *ctas;
    unsigned len;
} ClusterAt;

static int cluster_at_cmp(const void *a, const void *b) {
    size_t x = ((const ClusterAt *)a)->at, y = ((const ClusterAt *)b)->at;
    return x < y ? -1 : x > y;
}

/* Appends the PTX text to out with `.reqnctapercluster N, 1, 1` before the
 * body of each kernel that has CG_CLUSTER_ATTR (after its parameter list,
 * among the directives LLVM wrote there), in the text's order whatever the
 * module's. False (an internal error in diags) when a kernel's entry is not
 * found: its launches would run without their cluster. */
static bool append_ptx(LLVMModuleRef mod, const char *ptx, size_t n, Buf *out, DiagList *diags) {
    size_t count = 0, cap = 0;
    ClusterAt *at = NULL;
    bool ok = true;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn && ok; fn = LLVMGetNextFunction(fn)) {
        LLVMAttributeRef a =
            LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, CG_CLUSTER_ATTR, (unsigned)strlen(CG_CLUSTER_ATTR));
        if (!a)
            continue;
        unsigned len = 0;
        const char *ctas = LLVMGetStringAttributeValue(a, &len);
        size_t name_len = 0;
        const char *name = LLVMGetValueName2(fn, &name_len);
        Buf head;
        buf_init(&head);
        buf_printf(&head, ".entry %.*s(", (int)name_len, name);
        const char *entry = memmem(ptx, n, head.data, head.len);
        const char *body = entry ? memmem(entry, n - (size_t)(entry - ptx), "\n{", 2) : NULL;
        buf_free(&head);
        if (!body) {
            diag_error(diags, srcloc_none(), "internal error: no PTX entry for cluster kernel %.*s", (int)name_len,
                       name);
            ok = false;
        } else if (count == cap) {
            cap = cap ? 2 * cap : 4;
            ClusterAt *grown = realloc(at, cap * sizeof *at);
            if (!grown) {
                diag_error(diags, srcloc_none(), "out of memory");
                ok = false;
            } else {
                at = grown;
            }
        }
        if (ok)
            at[count++] = (ClusterAt){(size_t)(body + 1 - ptx), ctas, len};
    }
    if (ok) {
        if (count > 1)
            qsort(at, count, sizeof *at, cluster_at_cmp);
        size_t done = 0;
        for (size_t i = 0; i < count; i++) {
            buf_append(out, ptx + done, at[i].at - done);
            buf_printf(out, ".reqnctapercluster %.*s, 1, 1\n", (int)at[i].len, at[i].ctas);
            done = at[i].at;
        }
        buf_append(out, ptx + done, n - done);
    }
    free(at);
    return ok;
}

bool cg_emit_module(LLVMModuleRef mod, const TgTarget *t, CgEmit emit, Buf *out, DiagList *diags, CgStats *stats) {
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        diag_error(diags, srcloc_none(), "internal error: codegen produced invalid LLVM IR: %s", msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return false;
    }
    LLVMDisposeMessage(msg);
    double t0 = now_ms();
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(nvptx, TRIPLE, tg_target_cpu(t), tg_target_features(t),
                                                      t->llvm_o3 ? LLVMCodeGenLevelAggressive : LLVMCodeGenLevelDefault,
                                                      LLVMRelocDefault, LLVMCodeModelDefault);
    LLVMSetTarget(mod, TRIPLE);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);

    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(mod, t->llvm_o3 ? "default<O3>" : TILEC_PIPELINE, tm, po);
    LLVMDisposePassBuilderOptions(po);
    bool ok = true;
    if (err) {
        char *e = LLVMGetErrorMessage(err);
        diag_error(diags, srcloc_none(), "internal error: LLVM optimization failed: %s", e);
        LLVMDisposeErrorMessage(e);
        ok = false;
    }
    double t1 = now_ms();
    if (ok && emit == CG_EMIT_LLVM) {
        char *text = LLVMPrintModuleToString(mod);
        buf_puts(out, text);
        LLVMDisposeMessage(text);
    } else if (ok) {
        LLVMMemoryBufferRef mb = NULL;
        char *e = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &e, &mb)) {
            diag_error(diags, srcloc_none(), "internal error: PTX emission failed: %s", e ? e : "?");
            ok = false;
        } else {
            ok = append_ptx(mod, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb), out, diags);
            LLVMDisposeMemoryBuffer(mb);
        }
        LLVMDisposeMessage(e);
    }
    if (stats) {
        stats->opt_ms = t1 - t0;
        stats->emit_ms = now_ms() - t1;
    }
    LLVMDisposeTargetMachine(tm);
    return ok;
}
