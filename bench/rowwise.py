"""Row-wise kernels on the GPU machine: tilec's standard library against Triton and PyTorch.

    python3 bench/rowwise.py [--quick] [--json FILE]

In one process, on the same inputs (the shapes of docs/gpu.md):
  - softmax f16 and RMSNorm bf16 forward, 32768x4096, 8192x8192, 65536x1024 (and, without
    --quick, the widest single tile 4096x16384 and the vocabulary-wide rows 4096x32000,
    4096x50257 and 1024x131072, Triton's single tile only up to 65536 columns): tilec's
    tc_softmax_fwd / tc_rmsnorm_fwd (libtilec through ctypes, launched on torch tensors'
    pointers and torch's current stream, in the CUcontext torch made), the Triton kernels
    of baselines.py, torch eager and torch.compile; each checked against torch in f32
    (relative error) before it is timed with triton.testing.do_bench (median); GB/s =
    bytes read + written / time; the ratio tilec / Triton.
  - compile time: source to PTX in process (tc_compile of each specialization the
    entry points pick, median of 20), Triton's compile of its softmax (first kernel of
    the process, and a second variant); tc_jit in a new process with an empty disk
    cache (compile + driver link) and again with the cache warm (the cubin is loaded).
  - launch overhead: bench/launch_overhead (tc_launch against a bare cuLaunchKernel,
    10,000 empty launches), when it is found next to this script or under build*/bench.

Finds libtilec at $TILEC_LIB, else ../lib/libtilec.so.0 (the bundle), else
../build*/libtilec.so.0; the Triton kernels in baselines.py next to this script (when
Triton cannot import them the Triton columns are left empty). Prints a line per
measurement and a table last.
"""
import argparse
import ctypes as C
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import (Constexpr, JitRequest, Options, ParamSpec, arg_parser, by_shape, find_lib, load_baselines,  # noqa: E402
                    load_tilec, record, relerr, tc_check, tc_context_from_torch, write_json)

# ---------------------------------------------------------------- libtilec through ctypes

TC_DTYPE = {"i1": 0, "i8": 1, "i16": 2, "i32": 3, "i64": 4, "f16": 5, "bf16": 6, "f32": 7, "f64": 8}
TC_EMIT_PTX = 6
TC_STDLIB = {"softmax_fwd": 0, "softmax_bwd": 1, "rmsnorm_fwd": 2, "rmsnorm_bwd": 3}


class Source(C.Structure):  # tc_source
    _fields_ = [("name", C.c_char_p), ("text", C.c_char_p), ("len", C.c_size_t)]


class Target(C.Structure):  # tc_target
    _fields_ = [("arch", C.c_char_p)]


class Plan(C.Structure):  # tc_stdlib_plan
    _fields_ = [("file", C.c_char_p), ("kernel", C.c_char_p), ("constexprs", Constexpr * 3),
                ("num_constexprs", C.c_size_t), ("block", C.c_int64), ("single_tile", C.c_int),
                ("num_warps", C.c_int), ("aligned_params", ParamSpec * 16), ("num_aligned_params", C.c_size_t),
                ("grid_y", C.c_uint)]


def load_stdlib_api(path):
    P, I, I64, U64, V = C.c_void_p, C.c_int, C.c_int64, C.c_uint64, None
    return load_tilec(path, {
        "tc_context_create": (I, [I, C.POINTER(P)]),
        "tc_softmax_fwd": (I, [P, P, I, U64, U64, I64, I64, I64, I64]),
        "tc_rmsnorm_fwd": (I, [P, P, I, U64, U64, U64, U64, I64, I64, I64, I64, C.c_float]),
        "tc_stdlib_plan_for": (I, [I, I, I64, C.POINTER(Plan)]),
        "tc_compiler_create": (I, [C.POINTER(Target), C.POINTER(P)]),
        "tc_compiler_destroy": (V, [P]),
        "tc_compile": (I, [P, C.POINTER(Source), C.c_char_p, C.POINTER(Constexpr), C.c_size_t,
                           C.POINTER(Options), C.POINTER(P), P]),
        "tc_binary_text": (C.c_char_p, [P, C.POINTER(C.c_size_t)]),
        "tc_binary_destroy": (V, [P]),
        "tc_diagnostics_create": (I, [C.POINTER(P)]),
        "tc_diagnostics_destroy": (V, [P]),
        "tc_diagnostics_text": (C.c_char_p, [P]),
    })


def stdlib_spec(lib, op, dtype, cols):
    """The plan of an entry point and its source: what tc_compile needs to compile the same kernel."""
    plan = Plan()
    tc_check(lib, lib.tc_stdlib_plan_for(TC_STDLIB[op], TC_DTYPE[dtype], cols, C.byref(plan)), "tc_stdlib_plan_for")
    text, n = C.c_char_p(), C.c_size_t()
    tc_check(lib, lib.tc_stdlib_source(plan.file, C.byref(text), C.byref(n)), "tc_stdlib_source")
    return plan, text.value[: n.value]


def compile_ms(lib, op, dtype, cols, reps=20):
    """Median milliseconds of tc_compile (source to PTX, sm_90a) of the specialization for aligned inputs."""
    plan, text = stdlib_spec(lib, op, dtype, cols)
    cc = C.c_void_p()
    tc_check(lib, lib.tc_compiler_create(C.byref(Target(b"sm_90a")), C.byref(cc)), "tc_compiler_create")
    opt = Options()
    lib.tc_options_init(C.byref(opt))
    opt.emit, opt.num_warps = TC_EMIT_PTX, plan.num_warps
    opt.params = C.cast(plan.aligned_params, C.POINTER(ParamSpec))
    opt.num_params = plan.num_aligned_params
    src = Source(b"lib/" + plan.file, text, len(text))
    diags = C.c_void_p()
    lib.tc_diagnostics_create(C.byref(diags))
    times, size = [], 0
    for _ in range(reps):
        b = C.c_void_p()
        t0 = time.perf_counter()
        st = lib.tc_compile(cc, C.byref(src), plan.kernel, plan.constexprs, plan.num_constexprs, C.byref(opt),
                            C.byref(b), diags)
        times.append((time.perf_counter() - t0) * 1e3)
        if st != 0:
            raise RuntimeError(f"tc_compile {op} {dtype} {cols}: {lib.tc_diagnostics_text(diags).decode()}")
        n = C.c_size_t()
        lib.tc_binary_text(b, C.byref(n))
        size = n.value
        lib.tc_binary_destroy(b)
    lib.tc_diagnostics_destroy(diags)
    lib.tc_compiler_destroy(cc)
    return statistics.median(times), size, plan


def jit_probe(libpath, op, dtype, cols):
    """Run in a fresh process: milliseconds of one tc_jit of the entry point's specialization."""
    lib = load_stdlib_api(libpath)
    ctx = C.c_void_p()
    tc_check(lib, lib.tc_context_create(0, C.byref(ctx)), "tc_context_create")
    plan, text = stdlib_spec(lib, op, dtype, cols)
    opt = Options()
    lib.tc_options_init(C.byref(opt))
    opt.num_warps = plan.num_warps
    # the entry point's facts for aligned arguments, all by name (the same code; another cache key)
    opt.params = C.cast(plan.aligned_params, C.POINTER(ParamSpec))
    opt.num_params = plan.num_aligned_params
    req = JitRequest()
    lib.tc_jit_request_init(C.byref(req))
    req.source, req.source_len, req.path, req.kernel = text, len(text), b"lib/" + plan.file, plan.kernel
    req.constexprs = C.cast(plan.constexprs, C.POINTER(Constexpr))
    req.num_constexprs = plan.num_constexprs
    req.options = C.pointer(opt)
    k = C.c_void_p()
    t0 = time.perf_counter()
    st = lib.tc_jit(ctx, C.byref(req), C.byref(k))
    ms = (time.perf_counter() - t0) * 1e3
    tc_check(lib, st, "tc_jit")
    print(json.dumps({"ms": ms}))


# ---------------------------------------------------------------- the comparison

ROWS = []


def row(group, name, shape, ms=None, gbps=None, **extra):
    record(ROWS, group, name, shape, ms, "gbps", gbps, "GB/s", extra, 26, 22, in_ms=group == "compile")


def main():
    ap = arg_parser(__doc__, "only the first shape, fewer compile repetitions")
    ap.add_argument("--jit-probe", nargs=3, metavar=("OP", "DTYPE", "COLS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    libpath = find_lib("rowwise.py")
    if args.jit_probe:
        op, dtype, cols = args.jit_probe
        return jit_probe(libpath, op, dtype, int(cols))

    import torch
    import torch.nn.functional as F
    import triton

    baselines = load_baselines()  # sets TRITON_CACHE_DIR

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=50, rep=200, return_mode="median")

    lib = load_stdlib_api(libpath)
    ctx = tc_context_from_torch(lib, libpath, torch, triton, "rowwise.py")
    arch = lib.tc_context_arch(ctx).decode()

    shapes = [(32768, 4096), (8192, 8192), (65536, 1024)]
    if args.quick:
        shapes = shapes[:1]
    reps = 5 if args.quick else 20

    # ---- compile time ----
    for (M, N) in shapes:
        for op, dt in (("softmax_fwd", "f16"), ("rmsnorm_fwd", "bf16")):
            ms, size, plan = compile_ms(lib, op, dt, N, reps)
            row("compile", f"tc_compile {op}", f"{dt} cols={N}", ms=ms,
                block=plan.block, warps=plan.num_warps, ptx_kb=size / 1024.0)
    if baselines:
        x = torch.randn(64, 1000, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        for label, B, w in (("triton softmax (1st kernel)", 1024, 4), ("triton softmax (2nd variant)", 2048, 8)):
            t0 = time.perf_counter()
            baselines._softmax[(64,)](y, x, 1000, 1000, BLOCK=B, num_warps=w)
            torch.cuda.synchronize()
            row("compile", label, f"BLOCK={B} w{w}", ms=(time.perf_counter() - t0) * 1e3)
    with tempfile.TemporaryDirectory(prefix="tilec-cache-") as cache:
        env = dict(os.environ, TILEC_CACHE_DIR=cache)
        for label in ("tc_jit, empty disk cache", "tc_jit, warm disk cache"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--jit-probe", "softmax_fwd", "f16",
                                  str(shapes[0][1])], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"[compile] {label}: probe failed:\n{out.stdout}{out.stderr}")
                continue
            ms = json.loads(out.stdout.strip().splitlines()[-1])["ms"]
            row("compile", label, f"f16 cols={shapes[0][1]}", ms=ms, note="new process")

    # ---- softmax f16 and RMSNorm bf16 (and vocabulary-wide rows: the loop plan) ----
    eps = 1e-6
    long_rows = [] if args.quick else [(4096, 16384), (4096, 32000), (4096, 50257), (1024, 131072)]
    for (M, N) in shapes + long_rows:
        torch.manual_seed(0)
        x = torch.randn(M, N, device="cuda", dtype=torch.float16)
        nbytes = 2 * x.numel() * 2
        B = triton.next_power_of_2(N)
        w = 8 if B >= 2048 else 4
        stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
        shape = f"{M}x{N} f16"

        y = torch.empty_like(x)
        ref = torch.softmax(x.float(), -1)

        def tilec_softmax():
            return lib.tc_softmax_fwd(ctx, stream, TC_DTYPE["f16"], y.data_ptr(), x.data_ptr(), M, N, N, N)

        y.fill_(float("nan"))
        tc_check(lib, tilec_softmax(), "tc_softmax_fwd")
        torch.cuda.synchronize()
        err = relerr(y, ref)
        ms = bench(tilec_softmax)
        row("softmax", "tilec", shape, ms, nbytes / ms / 1e6, relerr=err, ok=err < 1e-2)
        if baselines and B <= 65536:  # Triton's kernel holds the row in one tile
            y2 = torch.empty_like(x)
            baselines._softmax[(M,)](y2, x, N, N, BLOCK=B, num_warps=w)
            ms = bench(lambda: baselines._softmax[(M,)](y2, x, N, N, BLOCK=B, num_warps=w))
            row("softmax", "triton", shape, ms, nbytes / ms / 1e6, relerr=relerr(y2, ref))
        ms = bench(lambda: torch.softmax(x, -1))
        row("softmax", "torch eager", shape, ms, nbytes / ms / 1e6)
        cs = torch.compile(lambda t: torch.softmax(t, -1))
        cs(x)
        ms = bench(lambda: cs(x))
        row("softmax", "torch.compile", shape, ms, nbytes / ms / 1e6)

        xb = x.to(torch.bfloat16)
        g = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        yb = torch.empty_like(xb)
        rstd = torch.empty(M, device="cuda", dtype=torch.float32)
        refb = F.rms_norm(xb.float(), (N,), g.float(), eps)
        shape = f"{M}x{N} bf16"

        def tilec_rmsnorm():
            return lib.tc_rmsnorm_fwd(ctx, stream, TC_DTYPE["bf16"], yb.data_ptr(), rstd.data_ptr(), xb.data_ptr(),
                                      g.data_ptr(), M, N, N, N, eps)

        yb.fill_(float("nan"))
        tc_check(lib, tilec_rmsnorm(), "tc_rmsnorm_fwd")
        torch.cuda.synchronize()
        err = relerr(yb, refb)
        ms = bench(tilec_rmsnorm)
        row("rmsnorm", "tilec", shape, ms, nbytes / ms / 1e6, relerr=err, ok=err < 1e-2)
        if baselines and B <= 65536:
            yb2 = torch.empty_like(xb)
            baselines._rmsnorm[(M,)](yb2, xb, g, N, N, eps, BLOCK=B, num_warps=w)
            ms = bench(lambda: baselines._rmsnorm[(M,)](yb2, xb, g, N, N, eps, BLOCK=B, num_warps=w))
            row("rmsnorm", "triton", shape, ms, nbytes / ms / 1e6, relerr=relerr(yb2, refb))
        ms = bench(lambda: F.rms_norm(xb, (N,), g, eps))
        row("rmsnorm", "torch eager", shape, ms, nbytes / ms / 1e6)
        cr = torch.compile(lambda t: F.rms_norm(t, (N,), g, eps))
        cr(xb)
        ms = bench(lambda: cr(xb))
        row("rmsnorm", "torch.compile", shape, ms, nbytes / ms / 1e6)
        del x, y, xb, yb, ref, refb
        torch.cuda.empty_cache()

    # ---- launch overhead ----
    lo = [os.path.join(HERE, "launch_overhead")] + sorted(glob.glob(os.path.join(HERE, "..", "build*", "bench",
                                                                                 "launch_overhead")))
    lo = next((p for p in lo if os.access(p, os.X_OK)), None)
    overhead = []
    if lo:
        out = subprocess.run([lo, "10000"], capture_output=True, text=True)
        overhead = [l for l in out.stdout.splitlines() if l.startswith("launch_overhead:")]
        for l in overhead:
            print(l)
        if out.returncode != 0:
            print(f"launch_overhead exited with {out.returncode}: {out.stderr.strip()}")
    else:
        print("rowwise.py: bench/launch_overhead not found: launch overhead not measured")
    lib.tc_context_destroy(ctx)

    # ---- the table ----
    print()
    print(f"== rowwise: {torch.cuda.get_device_name()}, tilec for {arch}, {time.strftime('%Y-%m-%d %H:%M')} ==")
    print(f"{'kernel':8s} {'shape':16s} {'tilec':>8s} {'triton':>8s} {'eager':>8s} {'compile':>8s} "
          f"{'tilec/triton':>12s} {'tilec relerr':>12s}   (GB/s)")
    bad = 0
    for group in ("softmax", "rmsnorm"):
        for shape, got in by_shape(ROWS, group):
            gb = lambda n: got[n]["gbps"] if n in got else None
            f = lambda v: f"{v:8.0f}" if v else f"{'-':>8s}"
            t, tr = gb("tilec"), gb("triton")
            ratio = f"{t / tr:12.3f}" if t and tr else f"{'-':>12s}"
            e = got["tilec"]["relerr"] if "tilec" in got else float("nan")
            bad += not (e < 1e-2)
            print(f"{group:8s} {shape:16s} {f(t)} {f(tr)} {f(gb('torch eager'))} {f(gb('torch.compile'))} "
                  f"{ratio} {e:12.2e}{'' if e < 1e-2 else '  WRONG'}")
    for r in ROWS:
        if r["group"] == "compile":
            print(f"compile  {r['name']:30s} {r['shape']:18s} {r['ms']:9.2f} ms")
    for l in overhead:
        print(l)
    if args.json:
        write_json(args.json, rows=ROWS, launch_overhead=overhead)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
