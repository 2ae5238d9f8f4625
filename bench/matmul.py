"""Matrix multiply on the GPU machine: tilec's tc_matmul against cuBLAS (torch.matmul) and Triton.

    python3 bench/matmul.py [--quick] [--json FILE]

In one process, on the same inputs: C = A B for 4096^3, 8192^3 and 4096 x 11008 x 4096 (M x N x K;
--quick: 4096^3 only),
row-major f16 and bf16, with
  - tilec: tc_matmul (libtilec through ctypes, launched on torch tensors' pointers and
    torch's current stream, in the CUcontext torch made);
  - cuBLAS: torch.matmul;
  - Triton: the matmul kernel of Triton's tutorial (03-matrix-multiplication: grouped
    program order, masked K tail), autotuned over the tutorial's first five CUDA configs,
    written out below;
and at 4096^3 f16 the fused epilogue: tc_matmul with a bias and GELU (tanh) against
torch's addmm + gelu. Each result is first checked against torch in f32 (relative
Frobenius error, which must be under 1e-2), then timed with triton.testing.do_bench
(median); TFLOP/s = 2 M N K / time. The table last gives the ratios tilec / cuBLAS and
tilec / Triton, which are the figures that count (bench/RESULTS.md).

Finds libtilec at $TILEC_LIB, else ../lib/libtilec.so.0 (the bundle), else
../build*/libtilec.so.0. Exits 1 if a tilec result is wrong.
"""
import ctypes as C
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import (Constexpr, JitVariant, arg_parser, by_shape, find_lib, load_tilec, record,  # noqa: E402
                    relerr, stdlib_source, tc_check, tc_context_from_torch, write_json)

os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="tritoncache-matmul-"))

TC_DTYPE = {"f16": 5, "bf16": 6}
TC_ACTIVATION = {"none": 0, "relu": 1, "gelu_tanh": 2, "gelu_erf": 3, "silu": 4}


# ---------------------------------------------------------------- libtilec through ctypes

class Dim3(C.Structure):  # tc_dim3
    _fields_ = [("x", C.c_uint), ("y", C.c_uint), ("z", C.c_uint)]


class MatmulPlan(C.Structure):  # tc_matmul_plan
    _fields_ = [("file", C.c_char_p), ("kernel", C.c_char_p), ("constexprs", Constexpr * 12),
                ("num_constexprs", C.c_size_t), ("block_m", C.c_int), ("block_n", C.c_int), ("block_k", C.c_int),
                ("group_m", C.c_int), ("a_order", C.c_int), ("b_order", C.c_int), ("c_order", C.c_int),
                ("even_k", C.c_int), ("num_warps", C.c_int), ("warp_specialize", C.c_int), ("grid", Dim3),
                ("persistent", C.c_int), ("num_stages", C.c_int), ("tuned", C.c_int)]


def load_matmul_api(path):
    P, I, I64, U64 = C.c_void_p, C.c_int, C.c_int64, C.c_uint64
    return load_tilec(path, {
        "tc_matmul": (I, [P, P, I, U64, U64, U64, U64, I64, I64, I64, I64, I64, I64, I64, I64, I64, I]),
        "tc_matmul_plan_for": (I, [I, I64, I64, I64, I64, I64, I64, I64, I64, I64, I, I, C.POINTER(MatmulPlan)]),
        "tc_launch": (I, [P, Dim3, P, C.POINTER(C.c_void_p), C.c_size_t]),
    })


class Variant:
    """lib/matmul.tile at tile sizes and warps of one's choosing (not tc_matmul's plan), for
    --sweep: row-major f16/bf16 operands whose sizes are multiples of 8 and of BK, launched
    through tc_jit + tc_launch with the facts tc_matmul would give."""

    def __init__(self, lib, ctx, dt, M, N, K, bm, bn, bk, warps, stages=3, group_m=8):
        cx = [(b"T", 3, TC_DTYPE[dt]), (b"BM", 0, bm), (b"BN", 0, bn), (b"BK", 0, bk), (b"GROUP_M", 0, group_m),
              (b"A_ORDER", 0, 1), (b"B_ORDER", 0, 1), (b"C_ORDER", 0, 1), (b"EVEN_K", 2, int(K % bk == 0)),
              (b"HAS_BIAS", 2, 0), (b"ACT", 0, 0)]
        names = [b"M", b"N", b"K", b"stride_am", b"stride_ak", b"stride_bk", b"stride_bn", b"stride_cm",
                 b"stride_cn"]
        vals = [M, N, K, K, 1, N, 1, N, 1]
        facts = [(nm, 8) for nm, v in zip(names, vals) if v % 8 == 0]
        self.jit = JitVariant(lib, ctx, stdlib_source(lib, b"matmul.tile"), b"lib/matmul.tile", b"matmul", cx, facts,
                              [16, 16, 16, 16] + [0] * 9, warps, stages, f"tc_jit {bm}x{bn}x{bk} w{warps} s{stages}")
        self.kernel = self.jit.kernel
        self.lib = lib
        self.grid = Dim3(((M + bm - 1) // bm) * ((N + bn - 1) // bn), 1, 1)
        self.ints = [C.c_int32(M), C.c_int32(N), C.c_int32(K)] + [C.c_int64(v) for v in vals[3:]]

    def launch(self, stream, c, a, b):
        ptrs = [C.c_uint64(c), C.c_uint64(a), C.c_uint64(b), C.c_uint64(c)]  # bias: unused
        vals = ptrs + self.ints
        args = (C.c_void_p * 13)(*[C.cast(C.pointer(v), C.c_void_p) for v in vals])
        return self.lib.tc_launch(self.kernel, self.grid, stream, args, 13)


SWEEP = [(128, 128, 64, 4, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 3), (128, 128, 32, 4, 4),
         (128, 128, 32, 4, 5), (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 256, 32, 8, 4),
         (256, 128, 64, 8, 3), (256, 128, 32, 8, 4), (128, 64, 64, 4, 3), (64, 128, 64, 4, 3),
         (64, 256, 64, 4, 3), (128, 128, 64, 4, 1)]


# ---------------------------------------------------------------- Triton's tutorial matmul

def triton_matmul_kernel():
    import triton
    import triton.language as tl

    # The tutorial's get_cuda_autotune_config(), its first five entries (the last three are
    # 2-warp configs for small problems).
    configs = [
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                      num_stages=3, num_warps=8),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        tl.assume(pid_m >= 0)
        tl.assume(pid_n >= 0)
        tl.assume(stride_am > 0)
        tl.assume(stride_ak > 0)
        tl.assume(stride_bn > 0)
        tl.assume(stride_bk > 0)
        tl.assume(stride_cm > 0)
        tl.assume(stride_cn > 0)
        offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
        offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
        offs_k = tl.arange(0, BLOCK_SIZE_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
            a_ptrs += BLOCK_SIZE_K * stride_ak
            b_ptrs += BLOCK_SIZE_K * stride_bk
        c = accumulator.to(c_ptr.dtype.element_ty)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)

    def matmul(a, b, c):
        M, K = a.shape
        _, N = b.shape
        grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                            c.stride(1))
        return c

    return matmul, matmul_kernel


# ---------------------------------------------------------------- the comparison

ROWS = []


def row(group, name, shape, ms=None, tflops=None, **extra):
    record(ROWS, group, name, shape, ms, "tflops", tflops, "TFLOP/s", extra, 22, 20)


def main():
    ap = arg_parser(__doc__, "4096^3 only")
    ap.add_argument("--sweep", action="store_true",
                    help="also time lib/matmul.tile at other tiles and warps (SWEEP) at 4096^3 f16, to tune the plan")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    import triton

    libpath = find_lib("matmul.py")
    lib = load_matmul_api(libpath)
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 references are f32
    ctx = tc_context_from_torch(lib, libpath, torch, triton, "matmul.py")
    arch = lib.tc_context_arch(ctx).decode()
    tri_matmul, tri_kernel = triton_matmul_kernel()

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")

    # (M, N, K): the cubes, and a LLaMA-7B MLP projection (4096 tokens x 11008 x 4096)
    sizes = [(4096, 4096, 4096)] if args.quick else [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096)]
    bad = 0
    for (M, N, K) in sizes:
        n = M if M == N == K else 0
        for dt in ("f16", "bf16"):
            tdt = torch.float16 if dt == "f16" else torch.bfloat16
            shape = f"{n}^3 {dt}" if n else f"{M}x{N}x{K} {dt}"
            flop = 2.0 * M * N * K
            torch.manual_seed(0)
            a = torch.randn(M, K, device="cuda", dtype=tdt)
            b = torch.randn(K, N, device="cuda", dtype=tdt)
            ref = a.float() @ b.float()
            stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)

            plan = MatmulPlan()
            tc_check(lib, lib.tc_matmul_plan_for(TC_DTYPE[dt], M, N, K, K, 1, N, 1, N, 1, 0, 0, C.byref(plan)),
                     "tc_matmul_plan_for")
            c = torch.full((M, N), float("nan"), device="cuda", dtype=tdt)

            def tilec():
                return lib.tc_matmul(ctx, stream, TC_DTYPE[dt], c.data_ptr(), a.data_ptr(), b.data_ptr(), 0, M, N, K,
                                     K, 1, N, 1, N, 1, TC_ACTIVATION["none"])

            t0 = time.perf_counter()
            tc_check(lib, tilec(), "tc_matmul")
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            err = relerr(c, ref)
            ok = err < 1e-2
            bad += not ok
            ms = bench(tilec)
            row("matmul", "tilec", shape, ms, flop / ms / 1e9, relerr=err, ok=ok,
                tile=f"{plan.block_m}x{plan.block_n}x{plan.block_k}", warps=plan.num_warps, first_call_ms=first_ms)

            c2 = torch.empty_like(c)
            ms = bench(lambda: torch.matmul(a, b, out=c2))
            row("matmul", "cuBLAS", shape, ms, flop / ms / 1e9, relerr=relerr(torch.matmul(a, b), ref))

            c3 = torch.full_like(c, float("nan"))
            tri_matmul(a, b, c3)  # autotunes on the first call
            torch.cuda.synchronize()
            cfg = tri_kernel.best_config
            ms = bench(lambda: tri_matmul(a, b, c3))
            row("matmul", "triton", shape, ms, flop / ms / 1e9, relerr=relerr(c3, ref),
                config=f"{cfg.kwargs['BLOCK_SIZE_M']}x{cfg.kwargs['BLOCK_SIZE_N']}x{cfg.kwargs['BLOCK_SIZE_K']}"
                       f" w{cfg.num_warps} s{cfg.num_stages}")

            if n == 4096 and dt == "f16":
                # the fused epilogue: act(A B + bias) in one kernel, against torch's two
                bias = torch.randn(N, device="cuda", dtype=tdt)
                ref2 = F.gelu(ref + bias.float(), approximate="tanh")
                c.fill_(float("nan"))

                def tilec_epi():
                    return lib.tc_matmul(ctx, stream, TC_DTYPE[dt], c.data_ptr(), a.data_ptr(), b.data_ptr(),
                                         bias.data_ptr(), M, N, K, K, 1, N, 1, N, 1, TC_ACTIVATION["gelu_tanh"])

                tc_check(lib, tilec_epi(), "tc_matmul (bias, gelu)")
                torch.cuda.synchronize()
                err = relerr(c, ref2)
                ok = err < 1e-2
                bad += not ok
                ms = bench(tilec_epi)
                row("epilogue", "tilec", shape + " +bias gelu", ms, flop / ms / 1e9, relerr=err, ok=ok)
                ms = bench(lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh"))
                row("epilogue", "torch addmm+gelu", shape + " +bias gelu", ms, flop / ms / 1e9)
            if args.sweep and n == 4096 and dt == "f16":
                for bm, bn, bk, w, st in SWEEP:
                    try:
                        v = Variant(lib, ctx, dt, M, N, K, bm, bn, bk, w, st)
                    except RuntimeError as e:
                        print(f"[sweep] {bm}x{bn}x{bk} w{w} s{st}: {str(e).splitlines()[0][:200]}", flush=True)
                        continue
                    c.fill_(float("nan"))
                    go = lambda: v.launch(stream, c.data_ptr(), a.data_ptr(), b.data_ptr())
                    tc_check(lib, go(), "tc_launch")
                    torch.cuda.synchronize()
                    err = relerr(c, ref)
                    ms = bench(go)
                    row("sweep", f"tilec {bm}x{bn}x{bk} w{w} s{st}", shape, ms, flop / ms / 1e9, relerr=err)
            del a, b, c, c2, c3, ref
            torch.cuda.empty_cache()
    lib.tc_context_destroy(ctx)

    # ---- the table ----
    print()
    print(f"== matmul: {torch.cuda.get_device_name()}, tilec for {arch}, {time.strftime('%Y-%m-%d %H:%M')} ==")
    print(f"{'shape':26s} {'tilec':>8s} {'cuBLAS':>8s} {'triton':>8s} {'tilec/cuBLAS':>12s} {'tilec/triton':>12s} "
          f"{'tilec relerr':>12s}  tilec tile   (TFLOP/s)")
    for group, base in (("matmul", "cuBLAS"), ("epilogue", "torch addmm+gelu")):
        for shape, got in by_shape(ROWS, group):
            tf = lambda n: got[n]["tflops"] if n in got else None
            f = lambda v: f"{v:8.1f}" if v else f"{'-':>8s}"
            t, cb, tr = tf("tilec"), tf(base), tf("triton")
            r1 = f"{t / cb:12.3f}" if t and cb else f"{'-':>12s}"
            r2 = f"{t / tr:12.3f}" if t and tr else f"{'-':>12s}"
            e = got["tilec"]["relerr"] if "tilec" in got else float("nan")
            tile = got["tilec"].get("tile", "") if "tilec" in got else ""
            print(f"{shape:26s} {f(t)} {f(cb)} {f(tr)} {r1} {r2} {e:12.2e}  {tile}{'' if e < 1e-2 else '  WRONG'}")
    print("(epilogue rows: the cuBLAS column is torch's addmm + gelu, two kernels)")
    for r in ROWS:
        if r["group"] == "sweep":
            print(f"sweep {r['name']:28s} {r['shape']:12s} {r['tflops']:8.1f} TFLOP/s  relerr {r['relerr']:.2e}")
    if args.json:
        write_json(args.json, rows=ROWS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
