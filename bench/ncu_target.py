"""Launches one kernel a few times, for a profiler (Nsight Compute) to measure.

    python3 bench/ncu_target.py attention [--shape B,H,N,D] [--causal] [--dtype f16|bf16] [--impl tilec|cudnn]
                                          [--bwd]
    python3 bench/ncu_target.py matmul [--shape M,N,K] [--dtype f16|bf16] [--impl tilec|cublas]

--bwd: the backward pass (tc_attention_bwd: its preprocessing, dK/dV and dQ kernels, dQ as the plan
says or as TILEC_ATTENTION_BWD_DQ=atomic or =kernel forces) or cuDNN's through torch autograd, after one forward
pass that writes O and the log-sum-exp. Runs the implementation on fresh random inputs three times (the first compiles, for tilec),
synchronizing after each. Under ncu, profile the last launch, e.g.

    ncu --launch-skip 2 --launch-count 1 --metrics gpu__time_duration.sum,... \\
        python3 bench/ncu_target.py attention --shape 4,32,4096,128

bench/ncu_profile.sh runs it with the figures bench/RESULTS.md quotes. Finds libtilec as the other
benchmarks do ($TILEC_LIB, else the bundle's lib/).
"""
import argparse
import ctypes as C
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import find_lib, load_tilec, tc_check, tc_context_from_torch  # noqa: E402

PROG = "ncu_target.py"
TC_DTYPE = {"f16": 5, "bf16": 6}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel", choices=("attention", "matmul"))
    ap.add_argument("--shape", help="attention: B,H,N,D (default 4,32,4096,128); matmul: M,N,K (default 4096^3)")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    ap.add_argument("--impl", default="tilec", choices=("tilec", "cudnn", "cublas"))
    ap.add_argument("--bwd", action="store_true", help="attention: the backward pass")
    ap.add_argument("--launches", type=int, default=3)
    args = ap.parse_args()
    import torch
    import triton
    tdt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    libpath = find_lib(PROG)
    P, I, L, U = C.c_void_p, C.c_int, C.c_int64, C.c_uint64
    lib = load_tilec(libpath, {
        "tc_attention_fwd": (I, [P, P, I, U, U, U, U, U] + [L] * 6 + [L] * 12 + [U, U, C.c_float, I]),
        "tc_matmul": (I, [P, P, I, U, U, U, U] + [L] * 9 + [I]),
        "tc_attention_bwd": (I, [P, P, I] + [U] * 9 + [L] * 6 + [L] * 24 + [U, U, C.c_float, I, I, U, C.c_size_t]),
        "tc_attention_bwd_workspace_size": (I, [I] + [L] * 6 + [I, I, I, C.POINTER(C.c_size_t)]),
    })
    ctx = tc_context_from_torch(lib, libpath, torch, triton, PROG)
    stream = C.c_void_p(torch.cuda.current_stream().cuda_stream)
    if args.kernel == "attention":
        B, H, N, D = (int(x) for x in (args.shape or "4,32,4096,128").split(","))
        q = torch.randn(B, H, N, D, device="cuda", dtype=tdt)
        k, v = torch.randn_like(q), torch.randn_like(q)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(D)
        st = [t.stride(0) for t in (q, k, v, o)]

        def run():
            if args.impl == "tilec":
                return tc_check(lib, lib.tc_attention_fwd(
                    ctx, stream, TC_DTYPE[args.dtype], o.data_ptr(), lse.data_ptr(), q.data_ptr(), k.data_ptr(),
                    v.data_ptr(), B, H, H, N, N, D, st[0], N * D, D, st[1], N * D, D, st[2], N * D, D, st[3], N * D,
                    D, 0, 0, scale, int(args.causal)), "tc_attention_fwd")
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal, scale=scale)
        if args.bwd:
            do = torch.randn_like(q)
            dq, dk, dv = (torch.empty_like(q) for _ in range(3))
            if args.impl == "tilec":
                run()  # O and the log-sum-exp
                torch.cuda.synchronize()
                n = C.c_size_t(0)
                tc_check(lib, lib.tc_attention_bwd_workspace_size(TC_DTYPE[args.dtype], B, H, H, N, N, D,
                                                                  int(args.causal), 0, 0, C.byref(n)),
                         "tc_attention_bwd_workspace_size")
                ws = torch.empty(max(n.value, 1), device="cuda", dtype=torch.uint8)
                strides = [x for t in (q, k, v, o, do, dq, dk, dv) for x in (t.stride(0), t.stride(1), t.stride(2))]

                def run():
                    return tc_check(lib, lib.tc_attention_bwd(
                        ctx, stream, TC_DTYPE[args.dtype], dq.data_ptr(), dk.data_ptr(), dv.data_ptr(),
                        do.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), B, H,
                        H, N, N, D, *strides, 0, 0, scale, int(args.causal), 0, ws.data_ptr(), ws.numel()),
                        "tc_attention_bwd")
            else:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=args.causal,
                                                                           scale=scale)

                def run():
                    torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True)
    else:
        M, N, K = (int(x) for x in (args.shape or "4096,4096,4096").split(","))
        a = torch.randn(M, K, device="cuda", dtype=tdt)
        b = torch.randn(K, N, device="cuda", dtype=tdt)
        c = torch.empty(M, N, device="cuda", dtype=tdt)

        def run():
            if args.impl == "tilec":
                return tc_check(lib, lib.tc_matmul(ctx, stream, TC_DTYPE[args.dtype], c.data_ptr(), a.data_ptr(),
                                                   b.data_ptr(), 0, M, N, K, K, 1, N, 1, N, 1, 0), "tc_matmul")
            torch.matmul(a, b, out=c)
    for _ in range(args.launches):
        run()
        torch.cuda.synchronize()
    lib.tc_context_destroy(ctx)


if __name__ == "__main__":
    main()
