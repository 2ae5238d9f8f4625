/*
 * test_codegen.c — codegen's interface to the passes (scratch sizes, their
 * padding) and to launchers (kernel metadata on tc_binary), and its error
 * paths through the public API. The generated code itself is checked by
 * the lit tests in tests/lit/codegen (FileCheck and ptxas).
 */
#include "codegen/codegen.h"
#include "tilec/runtime.h"
#include "tilec/tilec.h"
#include "ir_test_util.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The op defining the value named `name` in the first function. */
static IrOp *find_op(IrModule *m, const char *name) {
    for (IrOp *op = m->first->body->first; op; op = op->next)
        if (op->num_results && op->results[0]->name && strcmp(op->results[0]->name, name) == 0)
            return op;
    return NULL;
}

static const char *SCRATCH_IR =
    "#rows = #blocked<spt = [1, 4], tpw = [2, 16], wpc = [4, 1], order = [1, 0]>\n"
    "#col = #blocked<spt = [1, 1], tpw = [32, 1], wpc = [1, 4], order = [0, 1]>\n"
    "#one = #blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>\n"
    "kernel @k(%p: ptr<f32>, %x: tile<64x64xf32, #rows>, %h: tile<64x32xf16, #rows>, %g: tile<32x64xf16, #rows>,\n"
    "          %s: tile<64xptr<f32>, #one>, %v: tile<64xf32, #one>) attrs {num_warps = 4} {\n"
    "  %r1 = reduce %x {kind = sum, axis = 1} : tile<64xf32, #slice<dim = 1, parent = #rows>>\n"
    "  %r0 = reduce %x {kind = sum, axis = 0} : tile<64xf32, #slice<dim = 0, parent = #rows>>\n"
    "  %c = convert_layout %x {scratch_offset = 1024} : tile<64x64xf32, #col>\n"
    "  %same = convert_layout %x : tile<64x64xf32, #rows>\n"
    "  %z = constant {value = 0.0} : tile<64x64xf32, #rows>\n"
    "  %d = dot %h, %g, %z : tile<64x64xf32, #rows>\n"
    "  %a = atomic %p, %v {kind = add} : f32\n"
    "  %b = atomic %s, %v {kind = add} : tile<64xf32, #one>\n"
    "  return\n"
    "}\n";

TEST(scratch_sizes) {
    /* The kernel above is not valid for codegen (tile parameters) but is for
     * the size formulas, which only read types and attributes. */
    IrModule *m = unit_parse_ir(SCRATCH_IR);
    CHECK(m != NULL);
    if (!m)
        return;
    /* axis 1: lanes and registers only. */
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "r1"), 4), 0);
    /* axis 0: warps (2,0) (4,0) move along it: 4 x 64 x 4 bytes. */
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "r0"), 4), 4 * 64 * 4);
    /* 64x64 f32 with 256-byte rows: + 4 bytes per row. */
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "c"), 4), 64 * 64 * 4 + 64 * 4);
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "same"), 4), 0);
    /* A^T [32][64] f16: 4096 bytes, rows of 128: + 32 pads of 4; B [32][64]
     * f16 the same. */
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "d"), 4), 2 * (4096 + 32 * 4));
    /* Scalar atomic: one element; a 64-element tile on 128 threads has warp
     * copies: every element. */
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "a"), 4), 16);
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "b"), 4), 64 * 4);
    /* The kernel: the largest offset + size (the convert at 1024). */
    CHECK_EQ_INT(tg_kernel_shared_bytes(m->first, 4), 1024 + 64 * 64 * 4 + 64 * 4);
    ir_module_destroy(m);
}

TEST(padding) {
    /* The worked example of scratch.c: 64x64 f32, (r, c) at 4c + 260r. */
    TgPadding p = tg_scratch_padding(64 * 4, 4);
    CHECK_EQ_INT(p.interval, 256);
    CHECK_EQ_INT(p.pad, 4);
    CHECK_EQ_INT(tg_padded_offset(p, (1 * 64 + 0) * 4), 260);
    CHECK_EQ_INT(tg_padded_offset(p, (31 * 64 + 5) * 4), 31 * 260 + 20);
    /* Short rows and 8-byte elements: 128-byte intervals, 8-byte pads. */
    p = tg_scratch_padding(16, 8);
    CHECK_EQ_INT(p.interval, 128);
    CHECK_EQ_INT(p.pad, 8);
    CHECK_EQ_INT(tg_padded_offset(p, 128), 136);
}

static const char *META_IR =
    "#one = #blocked<spt = [1], tpw = [32], wpc = [8], order = [0]>\n"
    "kernel @first(%out: ptr<f16>, %n: i64, %scale: f32, %flag: i1) attrs {num_warps = 8, shared_size = 4096} {\n"
    "  return\n"
    "}\n"
    "kernel @second(%x: ptr<bf16>) {\n"
    "  %i = arange {start = 0, end = 256} : tile<256xi32, #one>\n"
    "  %m = reduce %i {kind = max, axis = 0} : i32\n"
    "  return\n"
    "}\n";

TEST(kernel_metadata) {
    tc_target t = {"sm_80"};
    tc_compiler *cc = NULL;
    CHECK(tc_compiler_create(&t, &cc) == TC_OK);
    tc_source src = {"meta.tir", META_IR, strlen(META_IR)};
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    opt.num_warps = 8; /* @second has no num_warps attribute */
    tc_binary *b = NULL;
    tc_diagnostics *d = NULL;
    tc_diagnostics_create(&d);
    tc_status st = tc_opt(cc, &src, NULL, &opt, &b, d);
    CHECK(st == TC_OK);
    if (st != TC_OK)
        fprintf(stderr, "%s\n", tc_diagnostics_text(d));
    CHECK_EQ_INT(tc_binary_kernel_count(b), 2);
    CHECK_EQ_STR(tc_binary_kernel_name(b, 0), "first");
    CHECK_EQ_INT(tc_binary_kernel_num_warps(b, 0), 8);
    CHECK_EQ_INT(tc_binary_kernel_shared_bytes(b, 0), 4096);
    CHECK_EQ_INT(tc_binary_kernel_num_params(b, 0), 4);
    CHECK_EQ_STR(tc_binary_kernel_param_name(b, 0, 0), "out");
    CHECK_EQ_STR(tc_binary_kernel_param_type(b, 0, 0), "ptr<f16>");
    CHECK_EQ_STR(tc_binary_kernel_param_type(b, 0, 1), "i64");
    CHECK_EQ_STR(tc_binary_kernel_param_type(b, 0, 3), "i1");
    tc_param_desc pd;
    CHECK(tc_binary_kernel_param(b, 0, 0, &pd) == TC_OK);
    CHECK(pd.is_pointer && pd.dtype == TC_DTYPE_F16);
    CHECK_EQ_STR(pd.name, "out");
    CHECK(tc_binary_kernel_param(b, 0, 2, &pd) == TC_OK);
    CHECK(!pd.is_pointer && pd.dtype == TC_DTYPE_F32);
    /* @second: 8 warps from the options; the 1-D max crosses 8 warps: 8 x 4 bytes of scratch. */
    CHECK_EQ_STR(tc_binary_kernel_name(b, 1), "second");
    CHECK_EQ_INT(tc_binary_kernel_num_warps(b, 1), 8);
    CHECK_EQ_INT(tc_binary_kernel_shared_bytes(b, 1), 32);
    /* Out of range. */
    CHECK(tc_binary_kernel_name(b, 2) == NULL);
    CHECK(tc_binary_kernel_param_type(b, 0, 4) == NULL);
    CHECK(tc_binary_kernel_param(b, 0, 4, &pd) == TC_ERROR_INVALID_ARGUMENT);
    CHECK(tc_binary_kernel_count(NULL) == 0);
    size_t len = 0;
    const char *ptx = tc_binary_text(b, &len);
    CHECK(strstr(ptx, ".target sm_80") != NULL);
    CHECK(strstr(ptx, ".entry first(") != NULL);
    CHECK(strstr(ptx, ".maxntid 256, 1, 1") != NULL);
    tc_binary_destroy(b);
    tc_diagnostics_destroy(d);
    tc_compiler_destroy(cc);
}

TEST(errors_through_api) {
    tc_compiler *cc = NULL;
    CHECK(tc_compiler_create(NULL, &cc) == TC_OK);
    const char *text = "kernel @k(%p: ptr<f32>) attrs {num_warps = 4} {\n"
                       "  %i = arange {start = 0, end = 128} : tile<128xi32>\n"
                       "  return\n"
                       "}\n";
    tc_source src = {"bad.tir", text, strlen(text)};
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_LLVM;
    tc_binary *b = NULL;
    tc_diagnostics *d = NULL;
    tc_diagnostics_create(&d);
    CHECK(tc_opt(cc, &src, NULL, &opt, &b, d) == TC_ERROR_COMPILE);
    CHECK(b == NULL);
    CHECK(strstr(tc_diagnostics_text(d), "bad.tir:2:3: error: internal error: codegen needs a layout") != NULL);
    tc_diagnostics_destroy(d);
    tc_compiler_destroy(cc);
}

static const char *SOFTMAX = "kernel softmax(f32* out, const f32* x, i32 n, constexpr i32 BLOCK) {\n"
                             "    let cols = arange(0, BLOCK);\n"
                             "    let row = program_id(0);\n"
                             "    let v = load(x + row * n + cols, cols < n, -inf);\n"
                             "    let e = exp(v - max(v, 0));\n"
                             "    store(out + row * n + cols, e / sum(e, 0), cols < n);\n"
                             "}\n";

TEST(source_to_ptx) {
    tc_target t = {"sm_90a"};
    tc_compiler *cc = NULL;
    CHECK(tc_compiler_create(&t, &cc) == TC_OK);
    tc_source src = {"softmax.tile", SOFTMAX, strlen(SOFTMAX)};
    tc_constexpr cx = {"BLOCK", TC_CONSTEXPR_INT, 512, 0};
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    tc_binary *b = NULL;
    tc_diagnostics *d = NULL;
    tc_diagnostics_create(&d);
    tc_status st = tc_compile(cc, &src, "softmax", &cx, 1, &opt, &b, d);
    CHECK(st == TC_OK);
    if (st != TC_OK) {
        fprintf(stderr, "%s\n", tc_diagnostics_text(d));
    } else {
        const char *ptx = tc_binary_text(b, NULL);
        CHECK(strstr(ptx, ".version 8.1") != NULL);
        CHECK(strstr(ptx, ".entry softmax(") != NULL);
        CHECK(strstr(ptx, "shfl.sync.bfly") != NULL);
        CHECK(strstr(ptx, "ex2.approx") != NULL);
        CHECK_EQ_INT(tc_binary_kernel_count(b), 1);
        CHECK_EQ_INT(tc_binary_kernel_num_params(b, 0), 3);
        /* every phase ran and took some time (how much is bench/compile_time.sh's business) */
        tc_compile_times t;
        memset(&t, 0xFF, sizeof t);
        CHECK(tc_binary_compile_times(b, &t) == TC_OK);
        CHECK(t.frontend_ms > 0 && t.passes_ms > 0 && t.lower_ms > 0 && t.llvm_opt_ms > 0 && t.ptx_emit_ms > 0);
        CHECK(tc_binary_compile_times(b, NULL) == TC_ERROR_INVALID_ARGUMENT);
        CHECK(tc_binary_compile_times(NULL, &t) == TC_ERROR_INVALID_ARGUMENT);
    }
    tc_binary_destroy(b);
    /* IR only: the code generator's phases did not run */
    opt.emit = TC_EMIT_IR_GPU;
    CHECK(tc_compile(cc, &src, "softmax", &cx, 1, &opt, &b, d) == TC_OK);
    tc_compile_times ti;
    CHECK(tc_binary_compile_times(b, &ti) == TC_OK);
    CHECK(ti.frontend_ms > 0 && ti.passes_ms > 0);
    CHECK(ti.lower_ms == 0 && ti.llvm_opt_ms == 0 && ti.ptx_emit_ms == 0);
    tc_binary_destroy(b);
    tc_diagnostics_destroy(d);
    tc_compiler_destroy(cc);
}

/* tc_binary_write: what the tools write for -o FILE. */
TEST(binary_write) {
    tc_compiler *cc = NULL;
    CHECK(tc_compiler_create(NULL, &cc) == TC_OK);
    tc_source src = {"softmax.tile", SOFTMAX, strlen(SOFTMAX)};
    tc_constexpr cx = {"BLOCK", TC_CONSTEXPR_INT, 128, 0};
    tc_options opt;
    tc_options_init(&opt);
    tc_binary *b = NULL;
    CHECK(tc_compile(cc, &src, "softmax", &cx, 1, &opt, &b, NULL) == TC_OK);
    char path[] = "/tmp/tilec-binary-write-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(tc_binary_write(b, path) == TC_OK);
    size_t len;
    const char *text = tc_binary_text(b, &len);
    char got[16384];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(got, 1, sizeof got, f) : 0;
    if (f)
        fclose(f);
    CHECK(len > 0 && len < sizeof got && n == len && memcmp(got, text, len) == 0);
    unlink(path);
    CHECK(tc_binary_write(b, "/nonexistent-dir/out.ir") == TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "cannot write '/nonexistent-dir/out.ir': ") != NULL);
    CHECK(tc_binary_write(NULL, path) == TC_ERROR_INVALID_ARGUMENT);
    tc_binary_destroy(b);
    tc_compiler_destroy(cc);
}

/* Which dots run on tensor cores (and so need no scratch): the layouts must
 * be mma.sync's fragments, whatever the warps; anything else is the FMA
 * path, with its scratch. */
static const char *MMA_IR =
    "#mma = #mma<version = 2, wpc = [4, 1], instr = [16, 8, 16]>\n"
    "#mma22 = #mma<version = 2, wpc = [2, 2], instr = [16, 8, 16]>\n"
    "#mmaf = #mma<version = 2, wpc = [4, 1], instr = [16, 8, 8]>\n"
    "#a = #dot_op<idx = 0, parent = #mma, kwidth = 2>\n"
    "#b = #dot_op<idx = 1, parent = #mma, kwidth = 2>\n"
    "#a22 = #dot_op<idx = 0, parent = #mma22, kwidth = 2>\n"
    "#b22 = #dot_op<idx = 1, parent = #mma22, kwidth = 2>\n"
    "#a4 = #dot_op<idx = 0, parent = #mma, kwidth = 4>\n"
    "#b4 = #dot_op<idx = 1, parent = #mma, kwidth = 4>\n"
    "#af = #dot_op<idx = 0, parent = #mmaf, kwidth = 1>\n"
    "#bf = #dot_op<idx = 1, parent = #mmaf, kwidth = 1>\n"
    "#af2 = #dot_op<idx = 0, parent = #mmaf, kwidth = 2>\n"
    "#bf2 = #dot_op<idx = 1, parent = #mmaf, kwidth = 2>\n"
    "#blk = #blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>\n"
    "kernel @k(%a: tile<128x64xf16, #a>, %b: tile<64x64xf16, #b>, %c: tile<128x64xf32, #mma>,\n"
    "          %h: tile<128x64xbf16, #a>, %g: tile<64x64xbf16, #b>,\n"
    "          %a22: tile<64x32xf16, #a22>, %b22: tile<32x64xf16, #b22>, %c22: tile<64x64xf32, #mma22>,\n"
    "          %a4: tile<128x64xf16, #a4>, %b4: tile<64x64xf16, #b4>,\n"
    "          %af: tile<64x32xf32, #af>, %bf: tile<32x64xf32, #bf>, %cf: tile<64x64xf32, #mmaf>,\n"
    "          %af2: tile<64x32xf32, #af2>, %bf2: tile<32x64xf32, #bf2>,\n"
    "          %x: tile<64x32xf16, #blk>, %y: tile<32x64xf16, #blk>, %z: tile<64x64xf32, #blk>)\n"
    "    attrs {num_warps = 4} {\n"
    "  %f16 = dot %a, %b, %c : tile<128x64xf32, #mma>\n"
    "  %bf16 = dot %h, %g, %c : tile<128x64xf32, #mma>\n"
    "  %w22 = dot %a22, %b22, %c22 : tile<64x64xf32, #mma22>\n"
    "  %kw4 = dot %a4, %b4, %c : tile<128x64xf32, #mma>\n"
    "  %tf32 = dot %af, %bf, %cf : tile<64x64xf32, #mmaf>\n"
    "  %f32kw2 = dot %af2, %bf2, %cf : tile<64x64xf32, #mmaf>\n"
    "  %fma = dot %x, %y, %z : tile<64x64xf32, #blk>\n"
    "  return\n"
    "}\n";

TEST(mma_dots) {
    IrModule *m = unit_parse_ir(MMA_IR);
    CHECK(m != NULL);
    if (!m)
        return;
    static const char *const mma[] = {"f16", "bf16", "w22", "tf32"};
    for (int i = 0; i < 4; i++) {
        CHECK(tg_dot_uses_mma(find_op(m, mma[i]), 4));
        CHECK_EQ_INT(tg_scratch_bytes(find_op(m, mma[i]), 4), 0);
    }
    /* The same layouts with 8 warps do not describe the tiles: not mma. */
    CHECK(!tg_dot_uses_mma(find_op(m, "f16"), 8));
    /* kwidth 4 with f16 and kwidth 2 with f32 are not the instructions'
     * fragments; #blocked never is. FMA, with A^T and B in scratch. */
    CHECK(!tg_dot_uses_mma(find_op(m, "kw4"), 4));
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "kw4"), 4), (64 * 128 * 2 + 64 * 4) + (64 * 64 * 2 + 64 * 4));
    CHECK(!tg_dot_uses_mma(find_op(m, "f32kw2"), 4));
    CHECK(!tg_dot_uses_mma(find_op(m, "fma"), 4));
    CHECK_EQ_INT(tg_scratch_bytes(find_op(m, "fma"), 4), 2 * (32 * 64 * 2 + 32 * 4));
    ir_module_destroy(m);
}

/* Codegen addresses shared memory through the linearity of the #shared map
 * (lower_shared.c): offset(a ^ b) = offset(a) ^ offset(b), so an element's
 * offset is the XOR of the offsets of its coordinates' bits. Checked on
 * every element of the swizzles stage-shared uses. */
static void check_shared_linear(IrModule *m, int vec, int per_phase, int max_phase, int o0, int64_t rows,
                                int64_t cols) {
    Layout l = {.kind = LAYOUT_SHARED, .rank = 2};
    l.shared.vec = vec, l.shared.per_phase = per_phase, l.shared.max_phase = max_phase;
    l.shared.order[0] = o0, l.shared.order[1] = 1 - o0;
    const Layout *sl = ir_layout_intern(m, &l);
    int64_t shape[2] = {rows, cols};
    int bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t want = 0;
            for (int64_t bit = 1; bit < rows || bit < cols; bit *= 2) {
                int64_t er[2] = {r & bit, 0}, ec[2] = {0, c & bit};
                want ^= ll_shared_offset(sl, 2, shape, er) ^ ll_shared_offset(sl, 2, shape, ec);
            }
            int64_t coord[2] = {r, c};
            bad += ll_shared_offset(sl, 2, shape, coord) != want;
        }
    CHECK_EQ_INT(bad, 0);
}

TEST(shared_offsets_linear) {
    IrModule *m = ir_module_create();
    check_shared_linear(m, 8, 1, 8, 1, 64, 64);  /* 64-wide f16 rows */
    check_shared_linear(m, 8, 2, 4, 1, 64, 32);  /* 32-wide f16 rows */
    check_shared_linear(m, 8, 4, 2, 1, 32, 16);  /* 16-wide */
    check_shared_linear(m, 8, 2, 4, 0, 32, 64);  /* K-major B: order [0, 1] */
    check_shared_linear(m, 4, 1, 8, 1, 64, 32);  /* f32 rows of 128 bytes */
    check_shared_linear(m, 8, 1, 8, 1, 16, 128); /* max_phase above the rows */
    check_shared_linear(m, 8, 8, 1, 1, 16, 8);   /* unswizzled */
    ir_module_destroy(m);
}

UNIT_SUITE(codegen, scratch_sizes, padding, kernel_metadata, errors_through_api, source_to_ptx, binary_write, mma_dots,
           shared_offsets_linear)
