"""tc_attention_fwd against Triton and PyTorch on the GPU machine: correctness first, then speed.

For each case: random Q, K, V (fresh every run), O and LSE poisoned with NaN, tc_attention_fwd on
torch's current stream, compared with a float32 reference (softmax(Q K^T * scale) V computed by
torch, with the causal mask aligned bottom-right and K/V heads repeated for GQA/MQA). Then, at
head dims 64, 128 and 256, B4 H32 N1024 and N4096 and B1 H32 N16384, causal and not, f16 and bf16
(--quick: B4 H32 N4096 D64 f16), the time of tilec, of the Triton flash attention of baselines.py
(TMA descriptors, the best of its configurations for each shape) and of SDPA's flash and
cuDNN backends on the same inputs (triton.testing.do_bench medians), as TFLOP/s = 4 B H N^2 D
(halved when causal).

    python3 bench/attention.py [--quick] [--sweep | --sweep-only [--source FILE] [--llvm-o3] [--carveout P]]
                               [--json FILE]
    python3 bench/attention.py --bwd [--quick] [--dims 64,128,256] [--json FILE]

--bwd: tc_attention_bwd instead. A gradient check first: dQ, dK, dV against torch autograd of
scaled_dot_product_attention (float32 math on the same inputs; causal bottom-right aligned, GQA
through repeated K/V heads), for the default plan, with dQ from its own kernel and by atomics
(TILEC_ATTENTION_BWD_DQ=kernel, =atomic) and deterministic. Then at head dims 64 and 128 (--dims),
B4 H32 N1024, B4 H32 N4096 and B1 H32 N16384, causal and not, f16 (--quick: one shape), the time of
tc_attention_bwd (its plan, dQ's kernel, atomics, deterministic) against SDPA's FlashAttention-2 and
cuDNN backward passes on the same inputs (the backward alone: torch.autograd.grad of a forward
output kept from before the timing), as TFLOP/s = 2.5 x the forward's 4 B H N^2 D (halved when
causal), as FlashAttention counts them.

--sweep also times lib/attention.tile at other block sizes, warps and stages than
tc_attention_fwd's plan (SWEEP, at every shape), through tc_jit and tc_launch with the same
facts tc_attention_fwd gives the compiler. --llvm-o3 times each of them a second time compiled
with LLVM's default<O3> pipeline and -O3 instruction selection (tc_options.llvm_o3) instead of
tilec's short pipeline, in the same process. Each sweep line also gives the programs per SM the
driver reports (cuOccupancyMaxActiveBlocksPerMultiprocessor) and the kernel's shared memory;
--carveout P times each variant again after setting its preferred shared-memory carveout to P%.
"""
import ctypes as C
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import (AttentionBwdPlan, Dim3, JitVariant, attention_reference, arg_parser, find_lib,  # noqa: E402
                    load_baselines, load_tilec, relerr, stdlib_source, tc_check, tc_context_from_torch, write_json)

PROG = "attention.py"
TC_DTYPE = {"f16": 5, "bf16": 6}


def load_api(path):
    P, I, L = C.c_void_p, C.c_int, C.c_int64
    U = C.c_uint64
    return load_tilec(path, {
        "tc_attention_fwd": (I, [P, P, I, U, U, U, U, U] + [L] * 6 + [L] * 12 + [U, U, C.c_float, I]),
        "tc_attention_bwd": (I, [P, P, I] + [U] * 9 + [L] * 6 + [L] * 24 + [U, U, C.c_float, I, I, U, C.c_size_t]),
        "tc_attention_bwd_workspace_size": (I, [I] + [L] * 6 + [I, I, I, C.POINTER(C.c_size_t)]),
        "tc_attention_bwd_plan_for": (I, [I] + [L] * 6 + [I, I, I, C.POINTER(AttentionBwdPlan)]),
        "tc_launch": (I, [P, Dim3, P, C.POINTER(C.c_void_p), C.c_size_t]),
        "tc_kernel_function": (P, [P]),
        "tc_kernel_get_desc": (C.POINTER(KernelDesc), [P]),
    })


class KernelDesc(C.Structure):  # tc_kernel_desc
    _fields_ = [("name", C.c_char_p), ("num_warps", C.c_int), ("shared_bytes", C.c_size_t),
                ("num_params", C.c_size_t), ("params", C.c_void_p), ("num_tensor_maps", C.c_size_t),
                ("tensor_maps", C.c_void_p), ("persistent", C.c_int)]


def occupancy(lib, kernel, carveout=None):
    """Programs per SM the driver reports for a tc_kernel (cuOccupancyMaxActiveBlocksPerMultiprocessor),
    after setting its preferred shared-memory carveout (percent) when one is given."""
    cu = C.CDLL("libcuda.so.1")
    fn = C.c_void_p(lib.tc_kernel_function(kernel))
    desc = lib.tc_kernel_get_desc(kernel).contents
    if carveout is not None:
        cu.cuFuncSetAttribute(fn, 9, carveout)  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
    n = C.c_int(0)
    cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(C.byref(n), fn, 32 * desc.num_warps, C.c_size_t(desc.shared_bytes))
    return n.value, desc.shared_bytes


class Variant:
    """lib/attention.tile at block sizes, warps and stages of one's choosing, for --sweep: f16
    [B, H, N, D] tensors with D a power of two, launched through tc_jit + tc_launch with the facts
    tc_attention_fwd gives (16-byte aligned pointers, strides that are multiples of 8)."""

    def __init__(self, lib, ctx, B, H, N, D, causal, bm, bn, warps, stages, source=None, llvm_o3=False,
                 even_n=False, ws=False, pers=False, per_sm=0):
        if source:
            with open(source, "rb") as fh:
                text = fh.read()
        else:
            text = stdlib_source(lib, b"attention.tile")
        cx = [(b"T", 3, TC_DTYPE["f16"]), (b"HEAD_DIM", 0, D), (b"D", 0, D), (b"BM", 0, bm), (b"BN", 0, bn),
              (b"CAUSAL", 2, int(causal)), (b"VARLEN", 2, 0), (b"EVEN_N", 2, int(even_n))]
        names = [b"stride_q" + x for x in (b"b", b"h", b"m")] + [b"stride_k" + x for x in (b"b", b"h", b"n")] + \
                [b"stride_v" + x for x in (b"b", b"h", b"n")] + [b"stride_o" + x for x in (b"b", b"h", b"m")]
        self.strides = [H * N * D, N * D, D] * 4
        facts = [(nm, 8) for nm, v in zip(names, self.strides) if v % 8 == 0]
        self.jit = JitVariant(lib, ctx, text, b"lib/attention.tile", b"attention_fwd", cx, facts,
                              [16] * 5 + [0] * 20, warps, stages, f"tc_jit {bm}x{bn} w{warps} s{stages}",
                              llvm_o3, ws, pers, per_sm)
        self.kernel = self.jit.kernel
        self.lib = lib
        self.grid = Dim3((N + bm - 1) // bm, B * H, 1)
        # heads, kv_group, seqlen_q, seqlen_k, head_group (1: the grid's own order), the strides
        self.ints = [C.c_int32(H), C.c_int32(1), C.c_int32(N), C.c_int32(N), C.c_int32(1)] + \
            [C.c_int64(v) for v in self.strides]
        self.scale = C.c_float(1.0 / math.sqrt(D))

    def launch(self, stream, o, lse, q, k, v):
        ptrs = [C.c_uint64(x) for x in (o, lse, q, k, v, lse, lse)]  # cu_seqlens: unused without VARLEN
        vals = ptrs + self.ints + [self.scale]
        args = (C.c_void_p * 25)(*[C.cast(C.pointer(x), C.c_void_p) for x in vals])
        return self.lib.tc_launch(self.kernel, self.grid, stream, args, 25)


SWEEP = {  # head dim -> (BM, BN, warps, stages[, "even"][, "ws"][, "pers"][, "2/sm"]): "even" sets EVEN_N where
    # seqlen % BN == 0, "ws" a producer warpgroup (tc_options.warp_specialize; the warps are the consumers), "pers"
    # persistent programs (tc_options.persistent), "2/sm" two programs per SM (tc_options.min_programs_per_sm)
    64: [(64, 64, 4, 3), (64, 64, 4, 3, "even"), (64, 64, 4, 2, "even"), (64, 128, 4, 2, "even"),
         (128, 64, 4, 3), (128, 64, 4, 3, "even"), (128, 128, 8, 3, "ws"), (128, 128, 8, 3, "ws", "even"),
         (128, 128, 8, 3, "ws", "pers"), (128, 128, 8, 3, "ws", "even", "pers"), (128, 128, 8, 2, "ws", "pers"),
         (128, 128, 8, 2, "ws", "even", "pers")],
    128: [(128, 64, 4, 3), (128, 64, 4, 3, "even"), (128, 128, 8, 3, "ws"), (128, 128, 8, 3, "ws", "even"),
          (64, 64, 4, 2, "ws", "even", "2/sm"),
          (128, 128, 8, 3, "ws", "pers"), (128, 128, 8, 3, "ws", "even", "pers"), (128, 128, 8, 2, "ws", "pers"),
          (128, 128, 8, 2, "ws", "even"), (128, 128, 8, 2, "ws", "even", "pers")],
    256: [(128, 64, 8, 2, "ws"), (128, 64, 8, 2, "ws", "even"), (128, 64, 8, 2, "ws", "pers"),
          (128, 64, 8, 2, "ws", "even", "pers")],
}


def run_tilec(lib, ctx, stream, dt, q, k, v, o, lse, causal, scale, layout):
    """layout 'bhsd': tensors [B, H, S, D]; 'bshd': [B, S, H, D] (q, k, v, o given as such)."""
    hd = (1, 2) if layout == "bhsd" else (2, 1)  # the (heads, sequence) dimensions

    def strides(t):
        return (t.stride(0), t.stride(hd[0]), t.stride(hd[1]))
    B, H, M, D = q.shape[0], q.shape[hd[0]], q.shape[hd[1]], q.shape[3]
    KH, N = k.shape[hd[0]], k.shape[hd[1]]
    sq, sk, sv, so = strides(q), strides(k), strides(v), strides(o)
    return lib.tc_attention_fwd(ctx, stream, TC_DTYPE[dt], o.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr(),
                                v.data_ptr(), B, H, KH, M, N, D, *sq, *sk, *sv, *so, 0, 0, scale, int(causal))


def run_tilec_bwd(lib, ctx, stream, dt, q, k, v, o, lse, do, dq, dk, dv, ws, causal, scale, det=0):
    """tc_attention_bwd on [B, H, S, D] tensors (each with its own strides), workspace ws (a uint8 tensor)."""
    def st(t):
        return (t.stride(0), t.stride(1), t.stride(2))
    B, H, M, D = q.shape
    KH, N = k.shape[1], k.shape[2]
    strides = [x for t in (q, k, v, o, do, dq, dk, dv) for x in st(t)]
    return lib.tc_attention_bwd(ctx, stream, TC_DTYPE[dt], dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), do.data_ptr(),
                                q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), B, H, KH, M, N,
                                D, *strides, 0, 0, scale, int(causal), det, ws.data_ptr(), ws.numel())


def bwd_workspace(lib, torch, dt, B, H, KH, M, N, D, causal, det):
    n = C.c_size_t(0)
    tc_check(lib, lib.tc_attention_bwd_workspace_size(TC_DTYPE[dt], B, H, KH, M, N, D, int(causal), 0, det,
                                                      C.byref(n)), "tc_attention_bwd_workspace_size")
    return torch.empty(n.value, device="cuda", dtype=torch.uint8)


def with_dq(mode, fn):
    """fn() with TILEC_ATTENTION_BWD_DQ set to mode (None: unset)."""
    old = os.environ.pop("TILEC_ATTENTION_BWD_DQ", None)
    if mode:
        os.environ["TILEC_ATTENTION_BWD_DQ"] = mode
    try:
        return fn()
    finally:
        os.environ.pop("TILEC_ATTENTION_BWD_DQ", None)
        if old is not None:
            os.environ["TILEC_ATTENTION_BWD_DQ"] = old


# name, dQ mode (TILEC_ATTENTION_BWD_DQ), deterministic
BWD_VARIANTS = (("tilec", None, 0), ("kernel", "kernel", 0), ("atomic", "atomic", 0), ("determ", None, 1))


def main_bwd(args, lib, ctx, torch, triton):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    stream = torch.cuda.current_stream().cuda_stream
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}
    rows, bad = [], 0

    def sdpa_ref(q, k, v, causal, scale, do):
        """dQ, dK, dV of scaled_dot_product_attention by torch autograd, in float32 (math backend)."""
        rep = q.shape[1] // k.shape[1]
        qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
        kr, vr = kf.repeat_interleave(rep, dim=1), vf.repeat_interleave(rep, dim=1)
        mask, seen = None, None
        if causal:
            n_q, n_kv = q.shape[2], k.shape[2]
            i = torch.arange(n_q, device=q.device)[:, None]
            j = torch.arange(n_kv, device=q.device)[None, :]
            mask = j <= i + (n_kv - n_q)
            # a row that sees no key has O = 0 and no gradient: SDPA would give NaN there, so such rows
            # see every key and their output is multiplied by 0
            seen = mask.any(dim=1)
            mask = mask | ~seen[:, None]
        with sdpa_kernel(SDPBackend.MATH):
            out = F.scaled_dot_product_attention(qf, kr, vr, attn_mask=mask, scale=scale)
        if seen is not None:
            out = out * seen[:, None].to(out.dtype)
        return torch.autograd.grad(out, (qf, kf, vf), do.float())

    def grad_scales(q, k, v, causal, scale, do):
        """The size of the terms whose difference dQ and dK are (dS = P (dP - Delta)): the norms of
        P (|dP| + |Delta|) |K| scale and its transpose times |Q|. Rounding can only be accurate relative to
        them; with one key dQ and dK are exactly 0 (dP = Delta) and a relative error means nothing."""
        B, H, M, D = q.shape
        KH, N = k.shape[1], k.shape[2]
        rep = H // KH
        qf, dof = q.float(), do.float()
        kf, vf = k.float().repeat_interleave(rep, dim=1), v.float().repeat_interleave(rep, dim=1)
        s = qf @ kf.transpose(-1, -2) * scale
        if causal:
            i = torch.arange(M, device=q.device)[:, None]
            j = torch.arange(N, device=q.device)[None, :]
            s = s.masked_fill(~(j <= i + (N - M)), float("-inf"))
        p = torch.softmax(s, dim=-1).nan_to_num(0.0)
        dp = dof @ vf.transpose(-1, -2)
        delta = (dof * (p @ vf)).sum(-1, keepdim=True)
        mag = p * (dp.abs() + delta.abs())
        dq = (mag @ kf.abs()) * abs(scale)
        dk = ((mag.transpose(-1, -2) @ qf.abs()) * abs(scale)).view(B, KH, rep, N, D).sum(2)
        return dq.norm().item(), dk.norm().item(), 0.0

    def grad_err(out, ref, floor):
        """||out - ref|| / max(||ref||, floor) (grad_scales), NaN if out is not finite."""
        o = out.float()
        if not torch.isfinite(o).all():
            return float("nan")
        den = max(ref.norm().item(), floor)
        diff = (o - ref).norm().item()
        return diff / den if den > 0 else diff

    cases = [  # B, H, KH, M, N, D, causal, dtype
        (1, 2, 2, 1, 1, 64, False, "f16"),
        (2, 4, 4, 17, 17, 64, True, "f16"),
        (1, 4, 4, 1000, 1000, 64, True, "bf16"),
        (1, 2, 2, 1000, 2049, 128, False, "f16"),
        (1, 2, 2, 777, 300, 128, True, "bf16"),
        (1, 8, 1, 333, 517, 64, True, "f16"),   # MQA
        (2, 16, 2, 256, 700, 128, False, "bf16"),  # GQA 8:1
        (1, 2, 2, 129, 257, 32, True, "f16"),
        (1, 2, 2, 130, 300, 96, False, "f16"),
        (1, 2, 2, 200, 200, 256, True, "bf16"),
    ]
    print(f"{'case':44s} {'variant':8s} {'dQ err':>10s} {'dK err':>10s} {'dV err':>10s}  result")
    for (B, H, KH, M, N, D, causal, dt) in cases:
        g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
        q = torch.randn(B, H, M, D, device="cuda", dtype=tdt[dt], generator=g)
        k = torch.randn(B, KH, N, D, device="cuda", dtype=tdt[dt], generator=g)
        v = torch.randn(B, KH, N, D, device="cuda", dtype=tdt[dt], generator=g)
        do = torch.randn(B, H, M, D, device="cuda", dtype=tdt[dt], generator=g)
        scale = 1.0 / math.sqrt(D)
        o = torch.full_like(q, float("nan"))
        lse = torch.full((B, H, M), float("nan"), device="cuda", dtype=torch.float32)
        tc_check(lib, run_tilec(lib, ctx, stream, dt, q, k, v, o, lse, causal, scale, "bhsd"), "tc_attention_fwd")
        ref = sdpa_ref(q, k, v, causal, scale, do)
        floors = grad_scales(q, k, v, causal, scale, do)
        name = f"B{B} H{H} KH{KH} M{M} N{N} D{D} {'causal' if causal else 'full'} {dt}"
        for (variant, mode, det) in BWD_VARIANTS:
            dq, dk, dv = torch.full_like(q, float("nan")), torch.full_like(k, float("nan")), \
                torch.full_like(v, float("nan"))
            ws = with_dq(mode, lambda: bwd_workspace(lib, torch, dt, B, H, KH, M, N, D, causal, det))
            ws.fill_(255)
            tc_check(lib, with_dq(mode, lambda: run_tilec_bwd(lib, ctx, stream, dt, q, k, v, o, lse, do, dq, dk, dv,
                                                              ws, causal, scale, det)), "tc_attention_bwd")
            torch.cuda.synchronize()
            errs = [grad_err(x, r, f) for x, r, f in zip((dq, dk, dv), ref, floors)]
            ok = all(e < 1e-2 for e in errs)  # NaN fails
            bad += not ok
            print(f"{name:44s} {variant:8s}" + "".join(f" {e:10.2e}" for e in errs) + f"  {'ok' if ok else 'FAIL'}",
                  flush=True)
            rows.append(dict(group="check", name=name, variant=variant, dq=errs[0], dk=errs[1], dv=errs[2], ok=ok))

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    dims = [int(d) for d in args.dims.split(",")] if args.dims else [64, 128]
    shapes = [(B, H, N, D) for D in dims for (B, H, N) in ((4, 32, 1024), (4, 32, 4096), (1, 32, 16384))]
    if args.quick:
        shapes = [(4, 32, 4096, 64)]
    cols = [v[0] for v in BWD_VARIANTS] + ["flash", "cudnn"]
    print("\n== attention backward: TFLOP/s [B, H, N, D] f16 (2.5 x the forward's FLOPs)")
    print(f"{'shape':28s}" + "".join(f"{c:>8s}" for c in cols) + f" {'/flash':>8s} {'/cudnn':>8s}  (ratios: tilec's)")
    for (B, H, N, D) in shapes:
        for causal in (False, True):
            q = torch.randn(B, H, N, D, device="cuda", dtype=torch.float16)
            k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
            o, lse = torch.empty_like(q), torch.empty(B, H, N, device="cuda", dtype=torch.float32)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)
            scale = 1.0 / math.sqrt(D)
            flop = 2.5 * 4 * B * H * N * N * D * (0.5 if causal else 1.0)
            tc_check(lib, run_tilec(lib, ctx, stream, "f16", q, k, v, o, lse, causal, scale, "bhsd"),
                     "tc_attention_fwd")
            res = {}
            for (variant, mode, det) in BWD_VARIANTS:
                ws = with_dq(mode, lambda: bwd_workspace(lib, torch, "f16", B, H, H, N, N, D, causal, det))

                def tilec():
                    return run_tilec_bwd(lib, ctx, stream, "f16", q, k, v, o, lse, do, dq, dk, dv, ws, causal, scale,
                                         det)
                tc_check(lib, with_dq(mode, tilec), "tc_attention_bwd")
                res[variant] = with_dq(mode, lambda: bench(tilec))
                del ws
            for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                try:
                    with sdpa_kernel(be):
                        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
                        out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale)
                        res[name] = bench(lambda: torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True))
                        del out, qg, kg, vg
                except RuntimeError as e:
                    print(f"[{name}] unavailable: {str(e).splitlines()[0][:120]}")
            tf = {n: flop / ms / 1e9 for n, ms in res.items()}
            shape = f"B{B} H{H} N{N} D{D}{' causal' if causal else ''}"
            ratios = [tf["tilec"] / tf[c] if c in tf else 0.0 for c in ("flash", "cudnn")]
            print(f"{shape:28s}" + "".join(f"{tf.get(c, 0):8.1f}" for c in cols) +
                  "".join(f" {r:8.3f}" for r in ratios), flush=True)
            rows.append(dict(group="attention_bwd", shape=shape, **{f"{n}_tflops": x for n, x in tf.items()}))
            del q, k, v, do, o, lse, dq, dk, dv
            torch.cuda.empty_cache()
    lib.tc_context_destroy(ctx)
    if args.json:
        write_json(args.json, rows=rows)
    print(f"\nattention.py --bwd: {bad} failed gradient check(s)")
    return 1 if bad else 0


def main():
    ap = arg_parser(__doc__, "correctness cases and one timing shape only")
    ap.add_argument("--bwd", action="store_true", help="the backward pass (tc_attention_bwd) instead")
    ap.add_argument("--dims", help="the head dims to time (default: 64,128,256; with --bwd 64,128)")
    ap.add_argument("--sweep", action="store_true", help="also time other block sizes, warps and stages")
    ap.add_argument("--sweep-only", action="store_true", help="the sweep alone: no correctness cases, no baselines")
    ap.add_argument("--source", help="with --sweep: compile this file instead of the library's attention.tile")
    ap.add_argument("--carveout", type=int, help="with --sweep: set this preferred shared-memory carveout (percent) "
                    "on each variant and time it again")
    ap.add_argument("--llvm-o3", action="store_true",
                    help="with --sweep: time each variant also compiled with LLVM's default<O3> pipeline")
    args = ap.parse_args()
    import torch
    import triton
    libpath = find_lib(PROG)
    lib = load_api(libpath)
    ctx = tc_context_from_torch(lib, libpath, torch, triton, PROG)
    if args.bwd:
        return main_bwd(args, lib, ctx, torch, triton)
    stream = torch.cuda.current_stream().cuda_stream
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16}
    rows, bad = [], 0

    # ---- correctness ----
    if args.sweep_only:
        args.sweep = True
    cases = [] if args.sweep_only else [  # B, H, KH, M, N, D, causal, dtype, layout
        (1, 2, 2, 1, 1, 64, False, "f16", "bhsd"),
        (2, 4, 4, 17, 17, 64, True, "f16", "bhsd"),
        (1, 4, 4, 1000, 1000, 64, True, "bf16", "bshd"),
        (1, 2, 2, 1000, 4097, 128, False, "f16", "bhsd"),
        (1, 2, 2, 4097, 1000, 128, True, "bf16", "bhsd"),
        (1, 8, 1, 333, 517, 64, True, "f16", "bshd"),   # MQA
        (2, 16, 2, 256, 700, 128, False, "bf16", "bhsd"),  # GQA 8:1
        (1, 2, 2, 129, 257, 32, True, "f16", "bhsd"),
        (1, 2, 2, 130, 300, 96, False, "f16", "bhsd"),
        (1, 2, 2, 200, 200, 256, True, "bf16", "bhsd"),
    ]
    print(f"{'case':58s} {'O relerr':>10s} {'LSE maxerr':>10s}  result")
    for (B, H, KH, M, N, D, causal, dt, layout) in cases:
        g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
        q = torch.randn(B, H, M, D, device="cuda", dtype=tdt[dt], generator=g)
        k = torch.randn(B, KH, N, D, device="cuda", dtype=tdt[dt], generator=g)
        v = torch.randn(B, KH, N, D, device="cuda", dtype=tdt[dt], generator=g)
        scale = 1.0 / math.sqrt(D)
        ref_o, ref_lse = attention_reference(q, k, v, causal, scale)
        if layout == "bshd":
            qa, ka, va = (t.transpose(1, 2).contiguous() for t in (q, k, v))
            o = torch.full((B, M, H, D), float("nan"), device="cuda", dtype=tdt[dt])
        else:
            qa, ka, va = q, k, v
            o = torch.full((B, H, M, D), float("nan"), device="cuda", dtype=tdt[dt])
        lse = torch.full((B, H, M), float("nan"), device="cuda", dtype=torch.float32)
        tc_check(lib, run_tilec(lib, ctx, stream, dt, qa, ka, va, o, lse, causal, scale, layout), "tc_attention_fwd")
        torch.cuda.synchronize()
        out = o.transpose(1, 2) if layout == "bshd" else o
        err = relerr(out, ref_o)
        fin = torch.isfinite(ref_lse)
        lerr = (lse[fin] - ref_lse[fin]).abs().max().item() if fin.any() else 0.0
        lse_ok = bool(torch.equal(torch.isfinite(lse), fin))
        ok = err < 1e-2 and lerr < 1e-2 and lse_ok
        bad += not ok
        name = f"B{B} H{H} KH{KH} M{M} N{N} D{D} {'causal' if causal else 'full'} {dt} {layout}"
        print(f"{name:58s} {err:10.2e} {lerr:10.2e}  {'ok' if ok else 'FAIL'}", flush=True)
        rows.append(dict(group="check", name=name, relerr=err, lse_err=lerr, ok=ok))

    # ---- speed (the shapes of docs/gpu.md) ----
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    baselines = None if args.sweep_only else load_baselines()

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    # head dims 64, 128, 256 at B4 H32 N1024 and N4096 and B1 H32 N16384, f16 and bf16 (--quick: one)
    shapes = [(B, H, N, D, dt) for D in (64, 128, 256) for (B, H, N) in ((4, 32, 1024), (4, 32, 4096), (1, 32, 16384))
              for dt in ("f16", "bf16")]
    if args.dims:
        shapes = [s for s in shapes if s[3] in [int(d) for d in args.dims.split(",")]]
    if args.sweep_only:
        shapes = [s for s in shapes if s[4] == "f16" and s[3] in SWEEP]
    if args.quick:
        shapes = [(4, 32, 4096, 64, "f16")]
    cols = ("tilec", "triton", "flash", "cudnn")
    print("\n== attention: TFLOP/s [B, H, N, D]")
    print(f"{'shape':31s}" + "".join(f"{c:>8s}" for c in cols) +
          f" {'/triton':>8s} {'/flash':>8s} {'/cudnn':>8s}  (TFLOP/s; ratios are tilec's)")
    for (B, H, N, D, dt) in shapes:
        for causal in (False, True):
            q = torch.randn(B, H, N, D, device="cuda", dtype=torch.float16 if dt == "f16" else torch.bfloat16)
            k, v = torch.randn_like(q), torch.randn_like(q)
            o = torch.empty_like(q)
            lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
            scale = 1.0 / math.sqrt(D)
            flop = 4 * B * H * N * N * D * (0.5 if causal else 1.0)

            def tilec():
                return run_tilec(lib, ctx, stream, dt, q, k, v, o, lse, causal, scale, "bhsd")
            tc_check(lib, tilec(), "tc_attention_fwd")
            res = {"tilec": bench(tilec)}
            if baselines is not None:
                best = None
                for cfg in baselines.CONFIGS:
                    try:
                        baselines.triton_attention(q, k, v, causal, scale, cfg)
                        ms = bench(lambda: baselines.triton_attention(q, k, v, causal, scale, cfg))
                    except Exception:  # a configuration that does not fit
                        continue
                    if best is None or ms < best[0]:
                        best = (ms, cfg)
                if best:
                    res["triton"] = best[0]
            for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                if args.sweep_only and name == "cudnn":
                    continue
                try:
                    with sdpa_kernel(be):
                        res[name] = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                                  scale=scale))
                except RuntimeError as e:
                    print(f"[{name}] unavailable: {str(e).splitlines()[0][:120]}")
            tf = {n: flop / ms / 1e9 for n, ms in res.items()}
            shape = f"B{B} H{H} N{N} D{D}{' causal' if causal else ''} {dt}"
            ratios = [tf["tilec"] / tf[c] if c in tf else 0.0 for c in cols[1:]]
            print(f"{shape:31s}" + "".join(f"{tf.get(c, 0):8.1f}" for c in cols) +
                  "".join(f" {r:8.3f}" for r in ratios), flush=True)
            rows.append(dict(group="attention", shape=shape, **{f"{n}_tflops": x for n, x in tf.items()}))
            if args.sweep:
                lib_out = o.clone()  # the library's plan, which the GPU tests check against float64
                for (cfg, o3) in [(c, o3) for c in SWEEP[D] for o3 in ((False, True) if args.llvm_o3 else (False,))]:
                    bm, bn, w, st = cfg[:4]
                    even = "even" in cfg[4:] and N % bn == 0
                    if "even" in cfg[4:] and not even:
                        continue
                    ws = "ws" in cfg[4:]
                    pers = "pers" in cfg[4:]
                    per_sm = 2 if "2/sm" in cfg[4:] else 0
                    what = f"BM{bm} BN{bn} w{w} s{st}{' EVEN_N' if even else ''}{' WS' if ws else ''}" \
                           f"{' PERSISTENT' if pers else ''}{' 2/SM' if per_sm else ''}{' O3' if o3 else ''}"
                    try:
                        var = Variant(lib, ctx, B, H, N, D, causal, bm, bn, w, st, args.source, o3, even, ws, pers,
                                      per_sm)
                    except RuntimeError as e:
                        print(f"[sweep] {what}: {str(e).splitlines()[0][:160]}", flush=True)
                        continue
                    o.fill_(float("nan"))

                    def go():
                        return var.launch(stream, o.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr(),
                                          v.data_ptr())
                    tc_check(lib, go(), "tc_launch")
                    torch.cuda.synchronize()
                    ms = bench(go)
                    diff = (o.float() - lib_out.float()).abs().max().item()
                    ok = bool(torch.isfinite(o).all()) and diff < 2e-2
                    occ, smem = occupancy(lib, var.kernel)
                    print(f"[sweep] {shape:26s} {what}: {flop / ms / 1e9:7.1f} TFLOP/s"
                          f"  ({occ} per SM, {smem // 1024} KB)"
                          f"{'' if ok else f'  WRONG OUTPUT (max |diff| from the plan {diff:.3g})'}", flush=True)
                    if args.carveout is not None:
                        occ, _ = occupancy(lib, var.kernel, args.carveout)
                        ms = bench(go)
                        print(f"[sweep] {shape:26s} {what} carveout {args.carveout}: {flop / ms / 1e9:7.1f} TFLOP/s"
                              f"  ({occ} per SM)", flush=True)
                    rows.append(dict(group="sweep", shape=shape, name=what, tflops=flop / ms / 1e9, finite=ok))
            del q, k, v, o, lse
            torch.cuda.empty_cache()
    lib.tc_context_destroy(ctx)
    if args.json:
        write_json(args.json, rows=rows)
    print(f"\nattention.py: {bad} failed correctness case(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
