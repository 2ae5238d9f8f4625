"""The training kernels on the GPU machine: tilec's LayerNorm, SwiGLU, RoPE, cross-entropy and
AdamW against PyTorch eager and torch.compile, and against the copy rate.

    python3 bench/training.py [--quick] [--json FILE]

In one process, on the same inputs (bf16 unless said; LLaMA-7B-like widths):
  - layernorm fwd / bwd, 16384 x 4096: tc_layernorm_fwd / _bwd against F.layer_norm (eager,
    compiled), its autograd backward and the backward's formula compiled (what torch.compile
    makes of a training graph's LayerNorm backward);
  - swiglu fwd / bwd, 16384 x 11008 from one [16384, 22016] gate/up tensor: tc_swiglu_fwd / _bwd
    against F.silu(g) * u, its autograd backward and the backward's formula compiled;
  - add, 16384 x 4096, a += b (a residual add): tc_add in place against Tensor.add_;
  - rope, 8 x 2048 tokens, q 32 heads and k 8 heads of 128 in place, NeoX form, cos/sin tables:
    tc_rope against the rotate-half formula, written back in place as tc_rope does;
  - cross-entropy fwd + bwd, 8192 x 128256 logits, i64 labels with some -100: tc_cross_entropy
    with dlogits in place against F.cross_entropy + backward, with the peak memory of each;
  - adamw, one step over the tensors of a LLaMA-7B-like layer (f32 parameters and gradients):
    tc_adamw against torch.optim.AdamW(fused=True) and (foreach=True).
Each is checked against PyTorch in f32 before it is timed (triton.testing.do_bench, median);
GB/s = the fewest bytes the operation must move (each input read once, each output written
once) over the time, / copy = that against a device-to-device copy measured in the same process
(bytes read + written), and the ratios to eager and compiled. A table last.
"""
import ctypes as C
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import arg_parser, find_lib, load_tilec, record, relerr, tc_check, tc_context_from_torch, write_json  # noqa: E402

PROG = "training.py"
TC_DTYPE = {"f16": 5, "bf16": 6, "f32": 7, "i32": 3, "i64": 4}
U64, I64, F32, I = C.c_uint64, C.c_int64, C.c_float, C.c_int


class RopeArgs(C.Structure):  # tc_rope_args
    _fields_ = [("dtype", I), ("tokens", I64), ("q_heads", I64), ("k_heads", I64), ("head_dim", I64),
                ("rotary_dim", I64), ("interleaved", I), ("backward", I), ("q", U64), ("k", U64),
                ("stride_qt", I64), ("stride_qh", I64), ("stride_kt", I64), ("stride_kh", I64),
                ("positions", U64), ("seqlen", I64), ("position_offset", I64), ("cos", U64), ("sin", U64),
                ("stride_cs", I64), ("max_position", I64), ("theta", F32)]


class CrossEntropyArgs(C.Structure):  # tc_cross_entropy_args
    _fields_ = [("dtype", I), ("label_dtype", I), ("rows", I64), ("vocab", I64), ("logits", U64),
                ("stride_logits", I64), ("labels", U64), ("ignore_index", I64), ("label_smoothing", F32),
                ("z_loss", F32), ("loss", U64), ("losses", U64), ("lse", U64), ("dlogits", U64),
                ("stride_dlogits", I64), ("grad_scale", F32), ("workspace", U64), ("workspace_bytes", C.c_size_t)]


class AdamwTensor(C.Structure):  # tc_adamw_tensor
    _fields_ = [("param", U64), ("grad", U64), ("exp_avg", U64), ("exp_avg_sq", U64), ("master", U64),
                ("numel", I64)]


class AdamwArgs(C.Structure):  # tc_adamw_args
    _fields_ = [("param_dtype", I), ("grad_dtype", I), ("tensors", C.POINTER(AdamwTensor)),
                ("num_tensors", C.c_size_t), ("master", I), ("lr", F32), ("beta1", F32), ("beta2", F32),
                ("eps", F32), ("weight_decay", F32), ("grad_scale", F32), ("step", U64), ("workspace", U64),
                ("workspace_bytes", C.c_size_t)]


def load_api(path):
    P, S = C.c_void_p, C.c_size_t
    return load_tilec(path, {
        "tc_layernorm_fwd": (I, [P, P, I, U64, U64, U64, U64, U64, U64, I64, I64, I64, I64, F32]),
        "tc_layernorm_bwd_workspace_size": (I, [P, I64, I64, C.POINTER(S)]),
        "tc_layernorm_bwd": (I, [P, P, I, U64, U64, U64, U64, U64, U64, U64, U64, I64, I64, I64, I64, I64, U64, S]),
        "tc_swiglu_fwd": (I, [P, P, I, U64, U64, U64, I64, I64, I64, I64, I64]),
        "tc_swiglu_bwd": (I, [P, P, I, U64, U64, U64, U64, U64, I64, I64, I64, I64, I64, I64, I64]),
        "tc_add": (I, [P, P, I, U64, U64, U64, I64, I64, I64, I64, I64]),
        "tc_rope": (I, [P, P, C.POINTER(RopeArgs)]),
        "tc_cross_entropy_workspace_size": (I, [I64, C.POINTER(S)]),
        "tc_cross_entropy": (I, [P, P, C.POINTER(CrossEntropyArgs)]),
        "tc_adamw_workspace_size": (I, [C.POINTER(AdamwTensor), S, C.POINTER(S)]),
        "tc_adamw": (I, [P, P, C.POINTER(AdamwArgs)]),
    })


def main():
    ap = arg_parser(__doc__, "smaller shapes")
    args = ap.parse_args()
    libpath = find_lib(PROG)

    import torch
    import torch.nn.functional as F
    import triton

    lib = load_api(libpath)
    ctx = tc_context_from_torch(lib, libpath, torch, triton, PROG)
    q = args.quick
    rows = []
    failed = []

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    def stream():
        return torch.cuda.current_stream().cuda_stream

    def ptr(t):
        return t.data_ptr()

    def check(name, err, tol):
        if not (err < tol):  # NaN fails
            failed.append(f"{name}: error {err:.3g} (tolerance {tol:g})")
        return err

    # the copy rate: bytes read + written per second, of a copy of 2 GiB
    src = torch.empty(1 << 30, dtype=torch.float16, device="cuda").normal_()
    dst = torch.empty_like(src)
    copy_ms = bench(lambda: dst.copy_(src))
    copy_gbs = 2 * src.numel() * 2 / copy_ms / 1e6
    del src, dst
    print(f"copy: {copy_gbs:.0f} GB/s", flush=True)

    def compare(group, shape, byte_count, fns):
        """Times each of fns ({name: fn}), records GB/s and the ratios of tilec to the others."""
        ms = {name: bench(fn) for name, fn in fns.items()}
        for name, t in ms.items():
            gbs = byte_count / t / 1e6
            extra = {"copy": gbs / copy_gbs}
            if name == "tilec":
                extra.update({f"x{other}": ms[other] / t for other in ms if other != "tilec"})
            record(rows, group, name, shape, t, "gbs", gbs, "GB/s", extra, 8, 36)

    def compiled(fn):
        try:
            return torch.compile(fn)
        except Exception as e:  # noqa: BLE001 - torch.compile's failures vary
            print(f"torch.compile unavailable: {e}", flush=True)
            return None

    # ---- LayerNorm ----
    M, N = (2048, 4096) if q else (16384, 4096)
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) + 1
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    mean = torch.empty(M, device="cuda")
    rstd = torch.empty(M, device="cuda")

    def ln_fwd():
        tc_check(lib, lib.tc_layernorm_fwd(ctx, stream(), TC_DTYPE["bf16"], ptr(y), ptr(mean), ptr(rstd), ptr(x),
                                           ptr(w), ptr(b), M, N, N, N, 1e-5), "tc_layernorm_fwd")
    ln_fwd()
    ref = F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5)
    check("layernorm fwd", relerr(y, ref), 1e-2)
    ln_c = compiled(lambda: F.layer_norm(x, (N,), w, b, 1e-5))
    fns = {"tilec": ln_fwd, "eager": lambda: F.layer_norm(x, (N,), w, b, 1e-5)}
    if ln_c:
        fns["compile"] = ln_c
    compare("layernorm", f"fwd bf16 {M}x{N}", (2 * M * N + 2 * N) * 2 + 8 * M, fns)

    dy = torch.randn_like(x)
    dx = torch.empty_like(x)
    dw = torch.empty(N, device="cuda")
    db = torch.empty(N, device="cuda")
    ws_bytes = C.c_size_t()
    tc_check(lib, lib.tc_layernorm_bwd_workspace_size(ctx, M, N, C.byref(ws_bytes)), "workspace")
    ws = torch.empty(ws_bytes.value, dtype=torch.uint8, device="cuda")

    def ln_bwd():
        tc_check(lib, lib.tc_layernorm_bwd(ctx, stream(), TC_DTYPE["bf16"], ptr(dx), ptr(dw), ptr(db), ptr(dy),
                                           ptr(x), ptr(w), ptr(mean), ptr(rstd), M, N, N, N, N, ptr(ws),
                                           ws_bytes.value), "tc_layernorm_bwd")
    ln_bwd()
    xr, wr, br = (t.float().requires_grad_() for t in (x, w, b))
    F.layer_norm(xr, (N,), wr, br, 1e-5).backward(dy.float())
    check("layernorm dx", relerr(dx, xr.grad), 1e-2)
    check("layernorm dweight", relerr(dw, wr.grad), 1e-3)
    check("layernorm dbias", relerr(db, br.grad), 1e-3)
    xe = x.detach().requires_grad_()
    we = w.detach().requires_grad_()
    be = b.detach().requires_grad_()
    out_e = F.layer_norm(xe, (N,), we, be, 1e-5)
    fns = {"tilec": ln_bwd, "eager": lambda: torch.autograd.grad(out_e, (xe, we, be), dy, retain_graph=True)}

    def ln_bwd_formula():  # the backward graph torch.compile makes of a LayerNorm (dx in bf16, dw and db in f32)
        xhat = (x.float() - mean[:, None]) * rstd[:, None]
        gw = dy.float() * w.float()
        dxf = rstd[:, None] * (gw - gw.mean(1, keepdim=True) - xhat * (gw * xhat).mean(1, keepdim=True))
        return dxf.to(x.dtype), (dy.float() * xhat).sum(0), dy.float().sum(0)
    ln_bwd_c = compiled(ln_bwd_formula)
    if ln_bwd_c:
        check("layernorm dx (compiled formula)", relerr(ln_bwd_c()[0], xr.grad), 1e-2)
        fns["compile"] = ln_bwd_c
    compare("layernorm", f"bwd bf16 {M}x{N}", 3 * M * N * 2 + 8 * M + 8 * N, fns)

    # ---- SwiGLU ----
    M, H = (2048, 11008) if q else (16384, 11008)
    gu = torch.randn(M, 2 * H, device="cuda", dtype=torch.bfloat16)
    h = torch.empty(M, H, device="cuda", dtype=torch.bfloat16)
    g_ptr, u_ptr = ptr(gu), ptr(gu) + H * 2

    def sw_fwd():
        tc_check(lib, lib.tc_swiglu_fwd(ctx, stream(), TC_DTYPE["bf16"], ptr(h), g_ptr, u_ptr, M, H, H, 2 * H, 2 * H),
                 "tc_swiglu_fwd")
    sw_fwd()
    g, u = gu[:, :H], gu[:, H:]
    check("swiglu fwd", relerr(h, F.silu(g.float()) * u.float()), 1e-2)
    sw_eager = lambda: F.silu(g) * u  # noqa: E731
    fns = {"tilec": sw_fwd, "eager": sw_eager}
    sw_c = compiled(sw_eager)
    if sw_c:
        fns["compile"] = sw_c
    compare("swiglu", f"fwd bf16 {M}x{H}", 3 * M * H * 2, fns)
    dh = torch.randn_like(h)
    dgu = torch.empty_like(gu)

    def sw_bwd():
        tc_check(lib, lib.tc_swiglu_bwd(ctx, stream(), TC_DTYPE["bf16"], ptr(dgu), ptr(dgu) + H * 2, ptr(dh), g_ptr,
                                        u_ptr, M, H, 2 * H, 2 * H, H, 2 * H, 2 * H), "tc_swiglu_bwd")
    sw_bwd()
    gr = g.float().requires_grad_()
    ur = u.float().requires_grad_()
    (F.silu(gr) * ur).backward(dh.float())
    check("swiglu dgate", relerr(dgu[:, :H], gr.grad), 1e-2)
    check("swiglu dup", relerr(dgu[:, H:], ur.grad), 1e-2)
    ge = g.detach().requires_grad_()
    ue = u.detach().requires_grad_()
    out_e = F.silu(ge) * ue
    fns = {"tilec": sw_bwd, "eager": lambda: torch.autograd.grad(out_e, (ge, ue), dh, retain_graph=True)}

    def sw_bwd_formula():  # the backward graph torch.compile makes of silu(g) * u
        gf, uf, df = g.float(), u.float(), dh.float()
        s = torch.sigmoid(gf)
        return (df * uf * s * (1 + gf * (1 - s))).to(g.dtype), (df * gf * s).to(u.dtype)
    sw_bwd_c = compiled(sw_bwd_formula)
    if sw_bwd_c:
        check("swiglu dgate (compiled formula)", relerr(sw_bwd_c()[0], gr.grad), 1e-2)
        fns["compile"] = sw_bwd_c
    compare("swiglu", f"bwd bf16 {M}x{H}", 5 * M * H * 2, fns)

    # ---- the residual add, in place ----
    M, N = (2048, 4096) if q else (16384, 4096)
    ra = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    rb = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    want = ra.float() + rb.float()

    def add():
        tc_check(lib, lib.tc_add(ctx, stream(), TC_DTYPE["bf16"], ptr(ra), ptr(ra), ptr(rb), M, N, N, N, N), "tc_add")
    add()
    check("add", relerr(ra, want), 1e-2)
    add_eager = lambda: ra.add_(rb)  # noqa: E731
    fns = {"tilec": add, "eager": add_eager}
    add_c = compiled(add_eager)
    if add_c:
        fns["compile"] = add_c
    compare("add", f"in place bf16 {M}x{N}", 3 * M * N * 2, fns)

    # ---- RoPE ----
    B, S, QH, KH, D = (2, 1024, 32, 8, 128) if q else (8, 2048, 32, 8, 128)
    T = B * S
    qt = torch.randn(T, QH, D, device="cuda", dtype=torch.bfloat16)
    kt = torch.randn(T, KH, D, device="cuda", dtype=torch.bfloat16)
    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, device="cuda", dtype=torch.float64) / D))
    ang = torch.arange(S, device="cuda", dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().float().contiguous(), ang.sin().float().contiguous()

    def rope_ref(t, heads):
        t = t.float().view(B, S, heads, D)
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        t1, t2 = t[..., : D // 2], t[..., D // 2:]
        return torch.cat((t1 * c - t2 * s, t2 * c + t1 * s), -1).view(T, heads, D)

    want_q, want_k = rope_ref(qt, QH), rope_ref(kt, KH)
    a = RopeArgs(dtype=TC_DTYPE["bf16"], tokens=T, q_heads=QH, k_heads=KH, head_dim=D, q=ptr(qt), k=ptr(kt),
                 stride_qt=QH * D, stride_qh=D, stride_kt=KH * D, stride_kh=D, seqlen=S, cos=ptr(cos), sin=ptr(sin),
                 stride_cs=D // 2, max_position=S)
    q0, k0 = qt.clone(), kt.clone()

    def rope():
        tc_check(lib, lib.tc_rope(ctx, stream(), C.byref(a)), "tc_rope")
    rope()
    check("rope q", relerr(qt, want_q), 1e-2)
    check("rope k", relerr(kt, want_k), 1e-2)
    qt.copy_(q0)
    kt.copy_(k0)

    def rope_eager():  # in place, as tc_rope: the rotated values written back into q and k
        for t, heads in ((qt, QH), (kt, KH)):
            v = t.view(B, S, heads, D)
            c, s = cos[None, :, None, :].to(t.dtype), sin[None, :, None, :].to(t.dtype)
            t1, t2 = v[..., : D // 2], v[..., D // 2:]
            v.copy_(torch.cat((t1 * c - t2 * s, t2 * c + t1 * s), -1))
    fns = {"tilec": rope, "eager": rope_eager}  # each rotates in place every run: the same work on new values
    rope_c = compiled(rope_eager)
    if rope_c:
        fns["compile"] = rope_c
    compare("rope", f"bf16 {T} tokens q{QH} k{KH} d{D}", 2 * T * (QH + KH) * D * 2 + S * D * 4, fns)

    # ---- cross-entropy, forward and backward: LLaMA-3's vocabulary, and GPT-2's (odd: rows off 16-byte
    # boundaries) ----
    def ce_case(R, V):
        logits = torch.randn(R, V, device="cuda", dtype=torch.bfloat16) * 2
        labels = torch.randint(0, V, (R,), device="cuda", dtype=torch.int64)
        labels[::17] = -100
        loss = torch.empty(1, device="cuda")
        ce_ws = C.c_size_t()
        tc_check(lib, lib.tc_cross_entropy_workspace_size(R, C.byref(ce_ws)), "workspace")
        ws = torch.empty(ce_ws.value, dtype=torch.uint8, device="cuda")
        x0 = logits.clone()
        ca = CrossEntropyArgs(dtype=TC_DTYPE["bf16"], label_dtype=TC_DTYPE["i64"], rows=R, vocab=V, logits=ptr(logits),
                              stride_logits=V, labels=ptr(labels), ignore_index=-100, loss=ptr(loss),
                              dlogits=ptr(logits), stride_dlogits=V, grad_scale=1.0, workspace=ptr(ws),
                              workspace_bytes=ce_ws.value)
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()

        def ce():
            tc_check(lib, lib.tc_cross_entropy(ctx, stream(), C.byref(ca)), "tc_cross_entropy")
        ce()
        torch.cuda.synchronize()
        tilec_peak = torch.cuda.max_memory_allocated() - base
        xr = x0.float().requires_grad_()
        lr_ = F.cross_entropy(xr, labels, ignore_index=-100)
        lr_.backward()
        check("cross-entropy loss", abs(loss.item() - lr_.item()) / abs(lr_.item()), 1e-4)
        check("cross-entropy dlogits", relerr(logits, xr.grad), 1e-2)
        del xr
        xe = x0.clone().requires_grad_()

        def ce_eager():
            F.cross_entropy(xe, labels, ignore_index=-100).backward()
            xe.grad = None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        ce_eager()
        torch.cuda.synchronize()
        eager_peak = torch.cuda.max_memory_allocated() - base
        fns = {"tilec": ce, "eager": ce_eager}
        ce_c = compiled(ce_eager)
        if ce_c:
            fns["compile"] = ce_c
        # the logits read twice is the least a fused forward and backward can do: once for the
        # log-sum-exp, once for the gradient, written over them
        compare("cross-entropy", f"fwd+bwd bf16 {R}x{V}", 3 * R * V * 2 + R * 8, fns)
        print(f"cross-entropy peak memory beyond the inputs: tilec {tilec_peak / 2**20:.1f} MiB, eager "
              f"{eager_peak / 2**20:.1f} MiB (logits {R * V * 2 / 2**20:.0f} MiB)", flush=True)

    for R, V in ((1024, 128256), (1024, 50257)) if q else ((8192, 128256), (8192, 50257)):
        ce_case(R, V)

    # ---- AdamW: one step over a LLaMA-7B-like layer's tensors, f32 ----
    shapes = [(4096, 4096)] * 4 + [(11008, 4096)] * 3 + [(4096,)] * 2
    if q:
        shapes = shapes[:3]
    params = [torch.randn(*s, device="cuda") for s in shapes]
    grads = [torch.randn_like(p) * 1e-3 for p in params]
    ms_, vs_ = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    step = torch.zeros(1, dtype=torch.int32, device="cuda")
    ts = (AdamwTensor * len(params))(*[AdamwTensor(ptr(p), ptr(g), ptr(m), ptr(v), 0, p.numel())
                                       for p, g, m, v in zip(params, grads, ms_, vs_)])
    aw_ws = C.c_size_t()
    tc_check(lib, lib.tc_adamw_workspace_size(ts, len(params), C.byref(aw_ws)), "workspace")
    ws = torch.empty(aw_ws.value, dtype=torch.uint8, device="cuda")
    aa = AdamwArgs(param_dtype=TC_DTYPE["f32"], grad_dtype=TC_DTYPE["f32"], tensors=ts, num_tensors=len(params),
                   master=0, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1, grad_scale=1.0,
                   step=ptr(step), workspace=ptr(ws), workspace_bytes=aw_ws.value)
    tparams = [p.clone().requires_grad_() for p in params]
    for p, g in zip(tparams, grads):
        p.grad = g.clone()
    opt_ref = torch.optim.AdamW(tparams, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, foreach=True)

    def adamw():
        tc_check(lib, lib.tc_adamw(ctx, stream(), C.byref(aa)), "tc_adamw")
    adamw()
    opt_ref.step()
    err = max(relerr(p, r.detach()) for p, r in zip(params, tparams))
    check("adamw params", err, 1e-5)
    numel = sum(p.numel() for p in params)
    fns = {"tilec": adamw, "foreach": opt_ref.step}
    try:
        fused = torch.optim.AdamW(tparams, lr=1e-3, weight_decay=0.1, fused=True)
        fns["fused"] = fused.step
    except (RuntimeError, TypeError) as e:
        print(f"fused AdamW unavailable: {e}", flush=True)
    # params, grads, m and v read and params, m, v written: 7 f32 arrays
    compare("adamw", f"f32 {len(params)} tensors {numel / 1e6:.0f}M", 7 * numel * 4, fns)

    print("\n| kernel | shape | tilec GB/s | / copy | / eager | / compile |\n|---|---|---|---|---|---|")
    for r in rows:
        if r["name"] == "tilec":
            xe_ = r.get("xeager", r.get("xforeach", float("nan")))
            xc_ = r.get("xcompile", r.get("xfused", float("nan")))
            print(f"| {r['group']} | {r['shape']} | {r['gbs']:.0f} | {r['copy']:.3f} | {xe_:.3f} | {xc_:.3f} |")
    if args.json:
        write_json(args.json, copy_gbs=copy_gbs, rows=rows, failed=failed)
    print(f"\n{PROG}: {len(failed)} failed check(s)" + ("".join(f"\n  {f}" for f in failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
