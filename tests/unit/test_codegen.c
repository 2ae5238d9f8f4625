/*
 * test_codegen.c — codegen's interface to the passes (scratch sizes, their
 * padding) and to launchers (kernel metadata on tc_binary), and its error
 * paths through the public API. The generated code itself is checked by
 * the lit tests in tests/lit/codegen (FileCheck and ptxas).
 */
#include "codegen/codegen.h"
#include "tilec/runtime.h"
#include "tilec/tilec.h"
#include "unit.h"

#include <string.h>

static IrModule *parse(const char *text) {
    static Source src;
    src.name = "<test>";
    src.text = text;
    src.len = strlen(text);
    DiagList d;
    diag_init(&d);
    IrModule *m = ir_parse(&src, &d);
    if (diag_has_errors(&d)) {
        Buf b;
        buf_init(&b);
        diag_render(&d, &b);
        fprintf(stderr, "%s", b.data);
        buf_free(&b);
    }
    diag_free(&d);
    return m;
}

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
    IrModule *m = parse(SCRATCH_IR);
    CHECK(m != NULL);
    if (!m)
        return;
    /* axis 1: lanes and registers only. */
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "r1"), 4), 0);
    /* axis 0: warps (2,0) (4,0) move along it: 4 x 64 x 4 bytes. */
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "r0"), 4), 4 * 64 * 4);
    /* 64x64 f32 with 256-byte rows: + 4 bytes per row. */
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "c"), 4), 64 * 64 * 4 + 64 * 4);
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "same"), 4), 0);
    /* A^T [32][64] f16: 4096 bytes, rows of 128: + 32 pads of 4; B [32][64]
     * f16 the same. */
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "d"), 4), 2 * (4096 + 32 * 4));
    /* Scalar atomic: one element; a 64-element tile on 128 threads has warp
     * copies: every element. */
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "a"), 4), 16);
    CHECK_EQ_INT(cg_scratch_bytes(find_op(m, "b"), 4), 64 * 4);
    /* The kernel: the largest offset + size (the convert at 1024). */
    CHECK_EQ_INT(cg_kernel_shared_bytes(m->first, 4), 1024 + 64 * 64 * 4 + 64 * 4);
    ir_module_destroy(m);
}

TEST(padding) {
    /* The worked example of scratch.c: 64x64 f32, (r, c) at 4c + 260r. */
    CgPadding p = cg_scratch_padding(64 * 4, 4);
    CHECK_EQ_INT(p.interval, 256);
    CHECK_EQ_INT(p.pad, 4);
    CHECK_EQ_INT(cg_padded_offset(p, (1 * 64 + 0) * 4), 260);
    CHECK_EQ_INT(cg_padded_offset(p, (31 * 64 + 5) * 4), 31 * 260 + 20);
    /* Short rows and 8-byte elements: 128-byte intervals, 8-byte pads. */
    p = cg_scratch_padding(16, 8);
    CHECK_EQ_INT(p.interval, 128);
    CHECK_EQ_INT(p.pad, 8);
    CHECK_EQ_INT(cg_padded_offset(p, 128), 136);
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
        CHECK(strstr(ptx, ".version 8.0") != NULL);
        CHECK(strstr(ptx, ".entry softmax(") != NULL);
        CHECK(strstr(ptx, "shfl.sync.bfly") != NULL);
        CHECK(strstr(ptx, "ex2.approx") != NULL);
        CHECK_EQ_INT(tc_binary_kernel_count(b), 1);
        CHECK_EQ_INT(tc_binary_kernel_num_params(b, 0), 3);
    }
    tc_binary_destroy(b);
    tc_diagnostics_destroy(d);
    tc_compiler_destroy(cc);
}

UNIT_SUITE(codegen, scratch_sizes, padding, kernel_metadata, errors_through_api, source_to_ptx)
