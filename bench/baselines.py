"""The baselines tilec's benchmarks compare with: Triton kernels written for this project, and
PyTorch references.

bench/attention.py and bench/rowwise.py import this module through common.load_baselines() and
time tilec against it in the same process, on the same inputs. What it provides:

  CONFIGS                      (BLOCK_M, BLOCK_N, num_stages, num_warps) of the Triton attention;
                               the benchmarks time each one and keep the fastest per shape
  triton_attention(q, k, v, causal, scale, cfg, out=None, lse=None) -> out
                               attention forward (FlashAttention-2 algorithm) on [B, H, N, D]
                               f16/bf16 tensors through TMA tensor descriptors: on Hopper Triton
                               turns the descriptor loads into TMA copies and the dots into wgmma
  attention_reference(q, k, v, causal, scale) -> (o, lse)
                               the same in float32 with torch (K/V heads repeated for GQA)
  _softmax[(rows,)](out, inp, stride, n_cols, BLOCK=, num_warps=)
  _rmsnorm[(rows,)](out, inp, weight, stride, n_cols, eps, BLOCK=, num_warps=)
                               row-wise forward kernels, one row per program, the whole row in
                               one tile
  rowwise_config(n_cols) -> (BLOCK, num_warps)
                               the launch the benchmarks use for those two
  softmax_reference(x), rmsnorm_reference(x, weight, eps)
                               float32 references
  ceilings(bench)              device-to-device copy bandwidth and cuBLAS matmul rate

Run alone on the GPU machine it checks its own kernels against the references (every attention
configuration on small shapes, causal and not, f16 and bf16, head dims 64, 128 and 256), and with
`ceilings`, measures the ceilings:

    python3 bench/baselines.py [check] [ceilings]

Importing the module points TRITON_CACHE_DIR at a new, empty folder, so that the Triton compile
times the benchmarks report are those of a cold cache.
"""
import math
import os
import sys
import tempfile

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilec-bench-triton-")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import attention_reference  # noqa: E402,F401  (the float32 reference, shared with attention.py)

# ---------------------------------------------------------------- attention forward
#
# One program computes BLOCK_M query rows of one (batch, head). It keeps Q in shared memory and
# walks the keys in blocks of BLOCK_N, carrying for each row the running maximum m (in log2 units
# of the scaled scores), the running sum l of exp2(score - m), and the unnormalized output acc;
# when the maximum grows, l and acc are rescaled by exp2(m_old - m_new). At the end
# O = acc / l and LSE = (m + log2 l) * ln 2.
#
# Causal attention is bottom-right aligned: query i sees keys j <= i + (n_kv - n_q). The keys of a
# query block split into the blocks every row of it sees (no mask: the plain loop) and the
# BLOCK_M keys along the diagonal (the masked loop); the keys after those are never visited.
#
# Tensors are addressed as 2-D [rows, D] through host-side TMA descriptors, rows being
# (batch * H + head) * N + position, so the sequence lengths must be multiples of the blocks
# (a block must not run into the next head's rows); triton_attention checks that.


@triton.jit
def _attn_fwd_blocks(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, lo, hi, offs_m, kv_shift, qk_scale,
                     BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr):
    """Folds keys lo .. hi (multiples of BLOCK_N) of one head into (acc, l_i, m_i). DIAGONAL: mask
    the scores of keys a row does not see (key > row + kv_shift)."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([kv_row0 + start_n, 0]).T
        s = tl.dot(q, k)
        if DIAGONAL:
            seen = (offs_m[:, None] + kv_shift) >= (start_n + offs_n[None, :])
            s = s * qk_scale + tl.where(seen, 0.0, -1.0e6)
            m_new = tl.maximum(m_i, tl.max(s, 1))
            s = s - m_new[:, None]
        else:
            # the scale is positive, so the maximum of the scaled scores is the scaled maximum
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([kv_row0 + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(desc_q, desc_k, desc_v, desc_o, lse_ptr, sm_scale, n_q, n_kv,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)  # batch * H + head
    q_row0 = bh * n_q + pid_m * BLOCK_M
    kv_row0 = bh * n_kv
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): the loop uses exp2

    q = desc_q.load([q_row0, 0])
    if CAUSAL:
        kv_shift = n_kv - n_q
        diag = tl.multiple_of(pid_m * BLOCK_M + kv_shift, BLOCK_N)  # first key not seen by every row
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, 0, diag, offs_m, kv_shift,
                                         qk_scale, BLOCK_N, False)
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, diag, diag + BLOCK_M, offs_m,
                                         kv_shift, qk_scale, BLOCK_N, True)
    else:
        acc, l_i, m_i = _attn_fwd_blocks(acc, l_i, m_i, q, desc_k, desc_v, kv_row0, 0, n_kv, offs_m, 0,
                                         qk_scale, BLOCK_N, False)

    lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # ln(2): natural-log LSE, as tilec writes it
    tl.store(lse_ptr + bh * n_q + offs_m, lse)
    desc_o.store([q_row0, 0], (acc / l_i[:, None]).to(q.dtype))


# BLOCK_M 128 (two wgmma row groups of 64 per warpgroup); BLOCK_N, stages and warps as the Triton
# attention tutorial tunes them on Hopper with TMA.
CONFIGS = [(bm, bn, stages, warps) for bm in (128,) for bn in (64, 128) for stages in (2, 3, 4) for warps in (4, 8)]


def triton_attention(q, k, v, causal, scale, cfg, out=None, lse=None):
    """Attention forward with the Triton kernel above: q [B, H, n_q, D], k and v [B, H, n_kv, D],
    contiguous, f16 or bf16, D a power of two from 16 to 256, scale > 0; cfg one of CONFIGS.
    Returns out ([B, H, n_q, D], allocated unless given); lse ([B, H, n_q] f32, natural log) is
    written when given, else into a scratch tensor. Raises ValueError for inputs the kernel does
    not handle (the benchmarks skip the configuration), and Triton's OutOfResources for a
    configuration that does not fit in shared memory."""
    bm, bn, stages, warps = cfg
    if q.dim() != 4 or k.shape != v.shape or k.shape[:2] != q.shape[:2] or k.shape[3] != q.shape[3]:
        raise ValueError(f"shapes q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: want [B, H, N, D]")
    B, H, n_q, D = q.shape
    n_kv = k.shape[2]
    if q.dtype not in (torch.float16, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"dtypes {q.dtype}, {k.dtype}, {v.dtype}: want f16 or bf16, all the same")
    if D not in (16, 32, 64, 128, 256):
        raise ValueError(f"head dim {D}: want a power of two from 16 to 256")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("q, k and v must be contiguous")
    if bm % bn or n_q % bm or n_kv % bn:
        raise ValueError(f"n_q {n_q} must be a multiple of BLOCK_M {bm}, n_kv {n_kv} of BLOCK_N {bn}, "
                         "and BLOCK_M of BLOCK_N")
    if causal and n_kv < n_q:
        raise ValueError(f"causal with n_q {n_q} > n_kv {n_kv}: rows that see no key are not handled")
    if not scale > 0:
        raise ValueError(f"scale {scale}: want > 0")
    if out is None:
        out = torch.empty_like(q)
    if lse is None:
        lse = torch.empty((B, H, n_q), device=q.device, dtype=torch.float32)
    desc_q = TensorDescriptor(q, shape=[B * H * n_q, D], strides=[D, 1], block_shape=[bm, D])
    desc_k = TensorDescriptor(k, shape=[B * H * n_kv, D], strides=[D, 1], block_shape=[bn, D])
    desc_v = TensorDescriptor(v, shape=[B * H * n_kv, D], strides=[D, 1], block_shape=[bn, D])
    desc_o = TensorDescriptor(out, shape=[B * H * n_q, D], strides=[D, 1], block_shape=[bm, D])
    grid = (n_q // bm, B * H, 1)
    _attn_fwd[grid](desc_q, desc_k, desc_v, desc_o, lse, scale, n_q, n_kv,
                    HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal), num_stages=stages, num_warps=warps)
    return out


# ---------------------------------------------------------------- row-wise kernels
#
# One program per row, the whole row in one tile of BLOCK >= n_cols elements, computed in f32:
# the form Triton's tutorials use for rows that fit in registers. Input and output share the
# row stride.


@triton.jit
def _softmax(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(in_ptr + row * row_stride + cols, mask=inside, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=inside)


@triton.jit
def _rmsnorm(out_ptr, in_ptr, weight_ptr, row_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(in_ptr + row * row_stride + cols, mask=inside, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(weight_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * row_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=inside)


def rowwise_config(n_cols):
    """(BLOCK, num_warps) for _softmax and _rmsnorm on rows of n_cols elements."""
    block = triton.next_power_of_2(n_cols)
    return block, 8 if block >= 2048 else 4


def softmax_reference(x):
    """Softmax over the last dimension, in float32."""
    return torch.softmax(x.float(), dim=-1)


def rmsnorm_reference(x, weight, eps):
    """x / sqrt(mean(x²) + eps) * weight over the last dimension, in float32."""
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()


# ---------------------------------------------------------------- ceilings


def ceilings(bench):
    """What the GPU reaches at best, timed with bench(fn) -> milliseconds: a device-to-device copy
    of 1 GiB (GB/s, bytes read + written) and cuBLAS matmuls at 8192³ (TFLOP/s). Returns
    {name: rate}."""
    out = {}
    x = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16).normal_()
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    out["d2d copy GB/s"] = 2 * x.numel() * x.element_size() / ms / 1e6
    del x, y
    n = 8192
    for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        ms = bench(lambda: a @ b)
        out[f"matmul {name} 8192^3 TFLOP/s"] = 2 * n**3 / ms / 1e9
        del a, b
    torch.cuda.empty_cache()
    return out


# ---------------------------------------------------------------- self-check


def _relerr(out, ref):
    o = out.float()
    if not torch.isfinite(o).all():
        return float("nan")
    return ((o - ref).norm() / ref.norm()).item()


def check():
    """Every kernel here against its reference on fresh random inputs, outputs poisoned with NaN
    first. Returns the number of failures."""
    from triton.runtime.errors import OutOfResources
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    g = torch.Generator(device="cuda").manual_seed(seed)
    bad = 0
    dts = {"f16": torch.float16, "bf16": torch.bfloat16}
    # B, H, n_q, n_kv, D, causal, dtype
    cases = [(2, 3, 256, 256, 64, False, "f16"), (2, 3, 256, 256, 64, True, "f16"),
             (1, 2, 512, 512, 128, False, "bf16"), (1, 2, 512, 512, 128, True, "f16"),
             (1, 2, 256, 768, 128, True, "bf16"), (1, 2, 256, 640, 64, False, "f16"),
             (1, 2, 256, 256, 256, False, "f16"), (1, 2, 384, 512, 256, True, "bf16")]
    for (B, H, n_q, n_kv, D, causal, dt) in cases:
        q = torch.randn(B, H, n_q, D, device="cuda", dtype=dts[dt], generator=g)
        k = torch.randn(B, H, n_kv, D, device="cuda", dtype=dts[dt], generator=g)
        v = torch.randn(B, H, n_kv, D, device="cuda", dtype=dts[dt], generator=g)
        scale = 1.0 / math.sqrt(D)
        ref_o, ref_lse = attention_reference(q, k, v, causal, scale)
        ran = 0
        for cfg in CONFIGS:
            if n_q % cfg[0] or n_kv % cfg[1]:
                continue
            o = torch.full_like(q, float("nan"))
            lse = torch.full((B, H, n_q), float("nan"), device="cuda", dtype=torch.float32)
            try:
                triton_attention(q, k, v, causal, scale, cfg, out=o, lse=lse)
                torch.cuda.synchronize()
            except OutOfResources:
                continue
            ran += 1
            err = _relerr(o, ref_o)
            lerr = (lse - ref_lse).abs().max().item()
            ok = err < 1e-2 and lerr < 1e-2
            bad += not ok
            if not ok:
                print(f"attention B{B} H{H} n_q{n_q} n_kv{n_kv} D{D} {'causal' if causal else 'full'} {dt} {cfg}: "
                      f"O relerr {err:.2e}, LSE maxerr {lerr:.2e}  FAIL")
        bad += ran == 0
        print(f"attention B{B} H{H} n_q{n_q} n_kv{n_kv} D{D} {'causal' if causal else 'full'} {dt}: "
              f"{ran} configurations ran{'' if ran else '  FAIL (none fits)'}", flush=True)
    for (M, N) in ((37, 1000), (64, 4096), (3, 12288)):
        block, warps = rowwise_config(N)
        x = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=g)
        y = torch.full_like(x, float("nan"))
        _softmax[(M,)](y, x, N, N, BLOCK=block, num_warps=warps)
        err = _relerr(y, softmax_reference(x))
        xb = x.to(torch.bfloat16)
        w = torch.randn(N, device="cuda", dtype=torch.bfloat16, generator=g)
        yb = torch.full_like(xb, float("nan"))
        _rmsnorm[(M,)](yb, xb, w, N, N, 1e-6, BLOCK=block, num_warps=warps)
        errb = _relerr(yb, rmsnorm_reference(xb, w, 1e-6))
        for name, e in (("softmax f16", err), ("rmsnorm bf16", errb)):
            ok = e < 1e-2
            bad += not ok
            print(f"{name} {M}x{N}: relerr {e:.2e}  {'ok' if ok else 'FAIL'}")
    print(f"baselines.py: {bad} failure(s)")
    return bad


if __name__ == "__main__":
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}", flush=True)
    parts = sys.argv[1:] or ["check"]
    failures = 0
    for part in parts:
        if part == "check":
            failures += check()
        elif part == "ceilings":
            def bench(fn):
                return triton.testing.do_bench(fn, warmup=50, rep=200, return_mode="median")
            for name, rate in ceilings(bench).items():
                print(f"[ceiling] {name}: {rate:.1f}")
        else:
            sys.exit(f"baselines.py: unknown part {part!r} (check, ceilings)")
    sys.exit(1 if failures else 0)
