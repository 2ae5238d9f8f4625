"""One LLaMA decoder layer's train step on the GPU machine: tilec (examples/llama_layer.c, loaded as
libllama_layer.so) against the same layer in PyTorch, eager and torch.compile.

    python3 bench/llama_layer.py [--quick] [--json FILE]

The layer: RMSNorm, the QKV projection, RoPE (NeoX form, theta 10000), causal attention (GQA where
kv_heads < heads), the output projection, a residual add, RMSNorm, the gate/up projection, SwiGLU,
the down projection, a residual add, then an lm head (hidden -> vocab) and a cross-entropy over the
tokens; its backward pass; one AdamW step (lr 3e-4, betas 0.9 / 0.95, eps 1e-8, weight decay 0.1 on
the five matrices, none on the two norm weights). Width: LLaMA-7B's (hidden 4096, 32 heads of 128,
MLP 11008, vocab 32000), batch 1 x 2048 tokens; --quick: hidden 2048, 16 heads of 128 with 4 KV
heads, MLP 5504, vocab 32000, batch 2 x 1024 tokens.

In one process, from the same bf16 weights and inputs (fresh every run):
  - tilec: bf16 parameters and activations with f32 master weights and Adam moments
    (llama_layer_train_step on torch's tensors and current stream);
  - PyTorch: the usual mixed precision, f32 parameters (the master weights) under
    torch.autocast(bfloat16), torch.optim.AdamW(fused=True); eager and torch.compile of the module.
First the checks: every gradient (the seven weights' and dx) and the loss of tilec, and of PyTorch's
autocast run for comparison, against the same module run in float32 on the same values (relative
Frobenius error; tilec's must be under 2e-2, its loss within 2e-3); tilec's AdamW update against
torch.optim.AdamW's on the same master weights and tilec's gradients (under 1e-3). Then each train
step (zeroed gradients, forward, backward, optimizer step) is timed with triton.testing.do_bench
(median): tokens/s, TFLOP/s and MFU, with model FLOPs = 6 * tokens * (matmul parameters) +
6 * batch * heads * seq^2 * head_dim (the causal attention's four products forward and backward,
halved for the mask; llama_layer_flops), over the H200's dense bf16 peak of 989.4 TFLOP/s. A table
last, with tilec's speed over each PyTorch variant's.
"""
import ctypes as C
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import (arg_parser, find_lib, load_tilec, record, relerr, tc_context_from_torch,  # noqa: E402
                    write_json)

PROG = "llama_layer.py"
PEAK_TFLOPS = 989.4  # H200 SXM, dense bf16
U64, I64, F32, I = C.c_uint64, C.c_int64, C.c_float, C.c_int
NAMES = ["norm1", "wqkv", "wo", "norm2", "wgate_up", "wdown", "lm_head"]  # enum llama_layer_tensor
NORMS = ("norm1", "norm2")


class Config(C.Structure):  # llama_layer_config
    _fields_ = [("batch", I64), ("seq", I64), ("hidden", I64), ("heads", I64), ("kv_heads", I64),
                ("head_dim", I64), ("mlp", I64), ("vocab", I64), ("rope_theta", F32), ("norm_eps", F32),
                ("lr", F32), ("beta1", F32), ("beta2", F32), ("adam_eps", F32), ("weight_decay", F32),
                ("deterministic", I)]


class Buffers(C.Structure):  # llama_layer_buffers
    _fields_ = [("param", U64 * len(NAMES)), ("master", U64 * len(NAMES)), ("grad", U64 * len(NAMES))]


def find_layer_lib():
    """$LLAMA_LAYER_LIB, else ../examples/libllama_layer.so (the bundle), else
    ../build*/examples/libllama_layer.so; exits if none."""
    cands = [os.environ.get("LLAMA_LAYER_LIB"), os.path.join(HERE, "..", "examples", "libllama_layer.so")]
    cands += sorted(glob.glob(os.path.join(HERE, "..", "build*", "examples", "libllama_layer.so")))
    for c in cands:
        if c and os.path.exists(c):
            return os.path.abspath(c)
    sys.exit(f"{PROG}: libllama_layer.so not found: set LLAMA_LAYER_LIB (looked in the bundle's examples/ "
             "and in build*/examples/)")


def load_layer(path):
    """libllama_layer.so, after libtilec (load_tilec) so that it binds to the same libtilec."""
    lib = C.CDLL(path)
    P = C.c_void_p
    sig = {
        "llama_layer_create": (I, [P, C.POINTER(Config), C.POINTER(Buffers), C.POINTER(P)]),
        "llama_layer_destroy": (I, [P]),
        "llama_layer_error": (C.c_char_p, []),
        "llama_layer_train_step": (I, [P, P, U64, U64, U64]),
        "llama_layer_forward_backward": (I, [P, P, U64, U64, U64]),
        "llama_layer_adamw": (I, [P, P]),
        "llama_layer_read_loss": (I, [P, C.POINTER(F32)]),
        "llama_layer_flops": (C.c_double, [C.POINTER(Config)]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def main():
    ap = arg_parser(__doc__, "a smaller width (hidden 2048, GQA 16/4 heads, batch 2 x 1024 tokens)")
    args = ap.parse_args()
    libpath = find_lib(PROG)

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import triton

    tc = load_tilec(libpath, {})
    ctx = tc_context_from_torch(tc, libpath, torch, triton, PROG)
    layer_path = find_layer_lib()
    ll = load_layer(layer_path)
    print(f"{PROG}: {layer_path}", flush=True)

    if args.quick:
        B, S, D, H, KVH, HD, FF, V = 2, 1024, 2048, 16, 4, 128, 5504, 32000
    else:
        B, S, D, H, KVH, HD, FF, V = 1, 2048, 4096, 32, 32, 128, 11008, 32000
    T, Q, KV = B * S, H * HD, KVH * HD
    cfg = Config(batch=B, seq=S, hidden=D, heads=H, kv_heads=KVH, head_dim=HD, mlp=FF, vocab=V, rope_theta=10000.0,
                 norm_eps=1e-5, lr=3e-4, beta1=0.9, beta2=0.95, adam_eps=1e-8, weight_decay=0.1, deterministic=0)
    shape = f"B{B} S{S} D{D} H{H}/{KVH}x{HD} F{FF} V{V}"
    flops = ll.llama_layer_flops(C.byref(cfg))
    print(f"{PROG}: {shape}; model FLOPs per step = 6 * tokens * (matmul params) + 6 * batch * heads * seq^2 * "
          f"head_dim = {flops / 1e12:.4g} TFLOP; MFU over {PEAK_TFLOPS} TFLOP/s", flush=True)
    failed = []
    rows = []

    def check(name, err, tol):
        if not (err < tol):  # NaN fails
            failed.append(f"{name}: error {err:.3g} (tolerance {tol:g})")
        return err

    def ll_check(st, what):
        if st != 0:
            raise RuntimeError(f"{what}: {ll.llama_layer_error().decode()}")

    def stream():
        return torch.cuda.current_stream().cuda_stream

    def adamw(weights):
        """torch.optim.AdamW over weights (in llama_layer_tensor's order) with the layer's hyperparameters:
        weight decay on the matrices, none on the norm weights; fused where it can be."""
        groups = [{"params": [w for n, w in zip(NAMES, weights) if n not in NORMS], "weight_decay": cfg.weight_decay},
                  {"params": [w for n, w in zip(NAMES, weights) if n in NORMS], "weight_decay": 0.0}]
        hyper = dict(lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.adam_eps)
        try:
            return torch.optim.AdamW(groups, fused=True, **hyper)
        except (RuntimeError, TypeError) as e:
            print(f"fused AdamW unavailable ({e}): foreach", flush=True)
            return torch.optim.AdamW(groups, foreach=True, **hyper)

    # ---- the PyTorch layer ----
    class RMSNorm(nn.Module):
        def __init__(self, n, eps):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):  # in f32, rounded once to x's type, as tc_rmsnorm_fwd
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()).to(x.dtype)

    inv = 1.0 / (10000.0 ** (torch.arange(0, HD, 2, device="cuda", dtype=torch.float32) / HD))
    ang = torch.arange(S, device="cuda", dtype=torch.float32)[:, None] * inv[None, :]
    cos_t, sin_t = ang.cos(), ang.sin()  # [S, HD / 2]; token t is at position t % S

    def rope(t):  # [B, S, heads, HD], NeoX form, in t's type
        c, s = cos_t[None, :, None, :].to(t.dtype), sin_t[None, :, None, :].to(t.dtype)
        t1, t2 = t[..., : HD // 2], t[..., HD // 2:]
        return torch.cat((t1 * c - t2 * s, t2 * c + t1 * s), -1)

    def attention(q, k, v):  # [B, heads, S, HD]
        if H != KVH:
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            except TypeError:  # torch before 2.5
                k, v = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = RMSNorm(D, cfg.norm_eps)
            self.wqkv = nn.Linear(D, Q + 2 * KV, bias=False)
            self.wo = nn.Linear(Q, D, bias=False)
            self.norm2 = RMSNorm(D, cfg.norm_eps)
            self.wgate_up = nn.Linear(D, 2 * FF, bias=False)
            self.wdown = nn.Linear(FF, D, bias=False)
            self.lm_head = nn.Linear(D, V, bias=False)

        def weights(self):  # in llama_layer_tensor's order
            return [self.norm1.weight, self.wqkv.weight, self.wo.weight, self.norm2.weight, self.wgate_up.weight,
                    self.wdown.weight, self.lm_head.weight]

        def forward(self, x, labels):  # x [B * S, D]
            q, k, v = self.wqkv(self.norm1(x)).split([Q, KV, KV], -1)
            q, k = rope(q.view(B, S, H, HD)), rope(k.view(B, S, KVH, HD))
            o = attention(q.transpose(1, 2), k.transpose(1, 2), v.view(B, S, KVH, HD).transpose(1, 2))
            h = x + self.wo(o.transpose(1, 2).reshape(T, Q))
            g, u = self.wgate_up(self.norm2(h)).chunk(2, -1)
            y = h + self.wdown(F.silu(g) * u)
            return F.cross_entropy(self.lm_head(y).float(), labels)

    # ---- the same weights and inputs for all: uniform, variance 1 / fan_in, norm weights near 1, rounded to
    # bf16 (the f32 parameters of PyTorch's module hold the bf16 values exactly) ----
    model = Layer().cuda()
    with torch.no_grad():
        for name, w in zip(NAMES, model.weights()):
            if name in NORMS:
                w.uniform_(0.8, 1.2)
            else:
                a = (3.0 / w.shape[1]) ** 0.5
                w.uniform_(-a, a)
            w.copy_(w.bfloat16().float())
    init = [w.detach().clone() for w in model.weights()]
    x = (torch.rand(T, D, device="cuda") * 2 - 1).mul_(3.0 ** 0.5).bfloat16()
    labels = torch.randint(0, V, (T,), device="cuda", dtype=torch.int64)
    labels32 = labels.int()

    # ---- tilec's layer on torch's tensors ----
    params = [w.bfloat16() for w in init]
    masters = [w.clone() for w in init]
    grads = [torch.empty(w.shape, device="cuda", dtype=torch.float32 if n in NORMS else torch.bfloat16)
             for n, w in zip(NAMES, init)]
    dx = torch.empty_like(x)
    for t in grads + [dx]:
        t.fill_(float("nan"))  # what the step must write
    buf = Buffers()
    for i in range(len(NAMES)):
        buf.param[i], buf.master[i], buf.grad[i] = params[i].data_ptr(), masters[i].data_ptr(), grads[i].data_ptr()
    layer = C.c_void_p()
    ll_check(ll.llama_layer_create(ctx, C.byref(cfg), C.byref(buf), C.byref(layer)), "llama_layer_create")

    def read_loss():
        v = C.c_float()
        ll_check(ll.llama_layer_read_loss(layer, C.byref(v)), "llama_layer_read_loss")
        return v.value

    # ---- the checks ----
    # float32 reference: the module in f32, no autocast, on the same values
    ref = Layer().cuda()
    ref.load_state_dict(model.state_dict())
    xr = x.float().requires_grad_()
    torch.backends.cuda.matmul.allow_tf32 = False
    loss_ref = ref(xr, labels)
    loss_ref.backward()
    ref_grads = [w.grad for w in ref.weights()] + [xr.grad]
    # PyTorch's autocast run (for comparison)
    xa = x.clone().requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss_amp = model(xa, labels)
    loss_amp.backward()
    amp_grads = [w.grad for w in model.weights()] + [xa.grad]
    # tilec: forward and backward alone (the weights stay as they are)
    ll_check(ll.llama_layer_forward_backward(layer, stream(), x.data_ptr(), labels32.data_ptr(), dx.data_ptr()),
             "llama_layer_forward_backward")
    torch.cuda.synchronize()
    loss_tilec = read_loss()
    lref = loss_ref.item()
    print(f"loss: tilec {loss_tilec:.6f}, autocast {loss_amp.item():.6f}, float32 {lref:.6f}", flush=True)
    check("loss", abs(loss_tilec - lref) / abs(lref), 2e-3)
    print(f"{'gradient':10s} {'tilec':>9s} {'autocast':>9s}   (||x - float32|| / ||float32||)", flush=True)
    for name, g_t, g_a, g_r in zip(NAMES + ["dx"], grads + [dx], amp_grads, ref_grads):
        e_t = check(f"grad {name}", relerr(g_t, g_r), 2e-2)
        e_a = relerr(g_a, g_r)
        print(f"{name:10s} {e_t:9.2e} {e_a:9.2e}", flush=True)
    del ref, xr, ref_grads, amp_grads, xa

    # tilec's AdamW step against torch.optim.AdamW's on the same master weights and tilec's gradients
    pw = [w.clone().requires_grad_() for w in init]
    for p, g in zip(pw, grads):
        p.grad = g.float()
    ref_opt = adamw(pw)
    ref_opt.step()
    ll_check(ll.llama_layer_adamw(layer, stream()), "llama_layer_adamw")
    torch.cuda.synchronize()
    for name, m, p, w0 in zip(NAMES, masters, pw, init):
        e = check(f"adamw {name}", relerr(m - w0, (p.detach() - w0)), 1e-3)
        print(f"adamw update {name:10s} {e:9.2e}", flush=True)
    del pw, ref_opt

    # ---- the timings ----
    def bench(fn):
        for _ in range(3):  # compiles, autotuning, first allocations
            fn()
        torch.cuda.synchronize()
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    def tilec_step():
        ll_check(ll.llama_layer_train_step(layer, stream(), x.data_ptr(), labels32.data_ptr(), dx.data_ptr()),
                 "llama_layer_train_step")

    opt = adamw(model.weights())
    xt = x.clone().requires_grad_()

    def torch_step(m):
        def step():
            opt.zero_grad(set_to_none=True)
            xt.grad = None
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(xt, labels)
            loss.backward()
            opt.step()
        return step

    fns = {"tilec": tilec_step, "eager": torch_step(model)}
    try:
        fns["compile"] = torch_step(torch.compile(model))
    except Exception as e:  # noqa: BLE001 - torch.compile's failures vary
        print(f"torch.compile unavailable: {e}", flush=True)
    ms = {}
    for name, fn in fns.items():
        try:
            ms[name] = bench(fn)
        except Exception as e:  # noqa: BLE001 - a compile that fails at its first call
            if name == "tilec":
                raise
            print(f"{name}: failed ({type(e).__name__}: {e})", flush=True)
    for name, t in ms.items():
        tps = T / (t * 1e-3)
        tflops = flops / (t * 1e-3) / 1e12
        extra = {"tflops": tflops, "mfu": tflops / PEAK_TFLOPS}
        if name == "tilec":
            extra.update({f"x{other}": ms[other] / t for other in ms if other != "tilec"})
        record(rows, "llama_layer", name, shape, t, "tokens_s", tps, "tokens/s", extra, 8, len(shape), in_ms=True)

    print("\n| train step | ms | tokens/s | TFLOP/s | MFU | tilec speed / this |\n|---|---|---|---|---|---|")
    for r in rows:
        ratio = ms[r["name"]] / ms["tilec"] if "tilec" in ms else float("nan")
        print(f"| {r['name']} | {r['ms']:.2f} | {r['tokens_s']:.0f} | {r['tflops']:.0f} | {100 * r['mfu']:.1f}% | "
              f"{ratio:.3f} |")
    if "compile" in ms:
        print(f"\ntilec / torch.compile: {ms['compile'] / ms['tilec']:.3f}x the speed", flush=True)
    ll_check(ll.llama_layer_destroy(layer), "llama_layer_destroy")
    tc.tc_context_destroy(ctx)
    if args.json:
        write_json(args.json, shape=shape, flops=flops, peak_tflops=PEAK_TFLOPS, rows=rows, failed=failed)
    print(f"\n{PROG}: {len(failed)} failed check(s)" + ("".join(f"\n  {f}" for f in failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
