"""tc_attention_kvcache (decode against a KV cache) on the GPU machine: correctness, then the rate at
which it reads the cache, against the device-to-device copy rate and SDPA's flash and cuDNN backends.

    python3 bench/decode.py [--quick] [--json FILE]

For each shape (f16, head dim 128, one new query token per sequence unless said):
  - B64 H32 KV-heads 8, 4096 keys: the serving batch;
  - the same through a paged cache of 16-token pages (pages shuffled at random in the pool);
  - B1 H32 KV-heads 8, 131072 keys, contiguous and paged: one long sequence (split-KV's case);
  - B8 H32 KV-heads 8, 4 new tokens each (speculative decoding, causal), 8192 keys;
  - the first two with an fp8 (e4m3) cache and per-KV-head scales (its keys and values quantized from
    the f16 ones; the reference reads the quantized values back, the rate counts its bytes);
(--quick: the first two). First a check of each tilec variant against a float32 reference on the
same inputs (relative error < 1e-2), then the times (triton.testing.do_bench medians): tilec, and
SDPA's flash and cuDNN backends on the contiguous cache as [B, KV-heads, N, D] with enable_gqa
(each KV head read once per group; where a backend refuses that, its K and V are repeated to the
query heads first, outside the timing, and it then reads the group's bytes once per query head:
the table says so). The rate is the cache's K and V bytes over the time, in GB/s, and its ratio to
the copy rate measured in the same process (torch's device-to-device copy of a buffer of the
cache's size: bytes read plus bytes written over the time).
"""
import ctypes as C
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import (AttentionPlan, arg_parser, attention_reference, find_lib, load_tilec, relerr,  # noqa: E402
                    tc_check, tc_context_from_torch, write_json)

PROG = "decode.py"
TC_DTYPE = {"f16": 5, "bf16": 6, "e4m3": 9}
U, L = C.c_uint64, C.c_int64


class KvArgs(C.Structure):  # tc_attention_kvcache_args
    _fields_ = [("dtype", C.c_int), ("batch", L), ("heads", L), ("kv_heads", L), ("head_dim", L),
                ("seqlen_q", L), ("seqlen_k", L), ("q", U), ("o", U), ("lse", U),
                ("stride_qb", L), ("stride_qh", L), ("stride_qm", L), ("stride_ob", L), ("stride_oh", L),
                ("stride_om", L), ("k_cache", U), ("v_cache", U), ("stride_kb", L), ("stride_kh", L),
                ("stride_kn", L), ("stride_vb", L), ("stride_vh", L), ("stride_vn", L), ("block_table", U),
                ("stride_bt", L), ("page_size", L), ("num_pages", L), ("seqused_k", U), ("cu_seqlens_q", U),
                ("scale", C.c_float), ("causal", C.c_int), ("num_splits", C.c_int), ("workspace", U),
                ("workspace_bytes", C.c_size_t), ("kv_dtype", C.c_int), ("k_scale", U), ("v_scale", U)]


class KvPlan(C.Structure):  # tc_attention_kvcache_plan
    _fields_ = [("attention", AttentionPlan), ("combine", AttentionPlan), ("group", C.c_int),
                ("num_splits", C.c_int), ("split_keys", L), ("workspace_bytes", C.c_size_t),
                ("lse_part_offset", C.c_size_t), ("o_part_offset", C.c_size_t), ("gathered", C.c_int),
                ("gather", AttentionPlan), ("k_offset", C.c_size_t), ("v_offset", C.c_size_t),
                ("kv_head_stride", L)]


def load_api(path, more=None):
    """libtilec with the KV cache's calls declared, and those of more ({name: (restype, argtypes)})."""
    P, I = C.c_void_p, C.c_int
    return load_tilec(path, {
        "tc_attention_kvcache": (I, [P, P, C.POINTER(KvArgs)]),
        "tc_attention_kvcache_workspace_size": (I, [P, C.POINTER(KvArgs), C.POINTER(C.c_size_t)]),
        "tc_attention_kvcache_plan_for": (I, [C.POINTER(KvArgs), I, C.POINTER(KvPlan)]),
        "tc_context_multiprocessors": (I, [P]),
        **(more or {}),
    })


def main():
    ap = arg_parser(__doc__, "the first two shapes only")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    libpath = find_lib(PROG)
    lib = load_api(libpath)
    ctx = tc_context_from_torch(lib, libpath, torch, triton, PROG)
    stream = torch.cuda.current_stream().cuda_stream
    sms = lib.tc_context_multiprocessors(ctx)

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    # B, H, KH, new tokens, keys, D, page size (0: contiguous), causal, cache type
    shapes = [(64, 32, 8, 1, 4096, 128, 0, False, "f16"), (64, 32, 8, 1, 4096, 128, 16, False, "f16"),
              (1, 32, 8, 1, 131072, 128, 0, False, "f16"), (1, 32, 8, 1, 131072, 128, 16, False, "f16"),
              (8, 32, 8, 4, 8192, 128, 16, True, "f16"),
              (64, 32, 8, 1, 4096, 128, 0, False, "e4m3"), (64, 32, 8, 1, 4096, 128, 16, False, "e4m3")]
    if args.quick:
        shapes = shapes[:2]
    rows, bad = [], 0
    print(f"\n== decode: KV bytes read per second [{torch.cuda.get_device_name()}, {sms} SMs]")
    print(f"{'shape':44s} {'splits':>6s} {'err':>8s} {'tilec us':>9s} {'GB/s':>7s} {'/copy':>6s}"
          f" {'flash us':>9s} {'cudnn us':>9s} {'/flash':>7s} {'/cudnn':>7s}")
    for (B, H, KH, M, N, D, page, causal, kvt) in shapes:
        dt = torch.float16
        g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
        q = torch.randn(B, M, H, D, device="cuda", dtype=dt, generator=g)
        k = torch.randn(B, N, KH, D, device="cuda", dtype=dt, generator=g)
        v = torch.randn(B, N, KH, D, device="cuda", dtype=dt, generator=g)
        scale = 1.0 / math.sqrt(D)
        a = KvArgs()
        if kvt == "e4m3":  # per-KV-head scales; k and v become what the cache holds, dequantized
            ks = torch.rand(KH, device="cuda", generator=g) * 1.5 + 0.25
            vs = torch.rand(KH, device="cuda", generator=g) * 1.5 + 0.25
            k8 = (k.float() / ks[:, None]).to(torch.float8_e4m3fn)
            v8 = (v.float() / vs[:, None]).to(torch.float8_e4m3fn)
            k, v = (k8.float() * ks[:, None]).to(dt), (v8.float() * vs[:, None]).to(dt)
            kc, vc = k8, v8
            a.kv_dtype, a.k_scale, a.v_scale = TC_DTYPE["e4m3"], ks.data_ptr(), vs.data_ptr()
        else:
            kc, vc = k, v
        kv_bytes = 2 * kc.numel() * kc.element_size()
        a.dtype, a.batch, a.heads, a.kv_heads, a.head_dim = TC_DTYPE["f16"], B, H, KH, D
        a.seqlen_q, a.seqlen_k = M, N
        o = torch.full_like(q, float("nan"))
        a.q, a.o = q.data_ptr(), o.data_ptr()
        a.stride_qb, a.stride_qm, a.stride_qh = q.stride(0), q.stride(1), q.stride(2)
        a.stride_ob, a.stride_om, a.stride_oh = o.stride(0), o.stride(1), o.stride(2)
        used = torch.full((B,), N, device="cuda", dtype=torch.int32)
        a.seqused_k = used.data_ptr()
        a.scale, a.causal = scale, int(causal)
        if page:
            pages = B * N // page
            perm = torch.randperm(pages, device="cuda", generator=g).to(torch.int32)
            table = perm.view(B, N // page).contiguous()
            kp = torch.empty(pages, page, KH, D, device="cuda", dtype=kc.dtype)
            vp = torch.empty_like(kp)
            kp.view(torch.uint8)[table.view(-1).long()] = kc.view(torch.uint8).view(B * N // page, page, KH, -1)
            vp.view(torch.uint8)[table.view(-1).long()] = vc.view(torch.uint8).view(B * N // page, page, KH, -1)
            a.k_cache, a.v_cache = kp.data_ptr(), vp.data_ptr()
            a.stride_kb, a.stride_kn, a.stride_kh = kp.stride(0), kp.stride(1), kp.stride(2)
            a.stride_vb, a.stride_vn, a.stride_vh = vp.stride(0), vp.stride(1), vp.stride(2)
            a.block_table, a.stride_bt, a.page_size, a.num_pages = table.data_ptr(), N // page, page, pages
        else:
            a.k_cache, a.v_cache = kc.data_ptr(), vc.data_ptr()
            a.stride_kb, a.stride_kn, a.stride_kh = kc.stride(0), kc.stride(1), kc.stride(2)
            a.stride_vb, a.stride_vn, a.stride_vh = vc.stride(0), vc.stride(1), vc.stride(2)
        ws_bytes = C.c_size_t()
        tc_check(lib, lib.tc_attention_kvcache_workspace_size(ctx, C.byref(a), C.byref(ws_bytes)), "workspace_size")
        ws = torch.empty(max(ws_bytes.value, 16), device="cuda", dtype=torch.uint8)
        a.workspace, a.workspace_bytes = (ws.data_ptr(), ws_bytes.value) if ws_bytes.value else (0, 0)
        plan = KvPlan()
        tc_check(lib, lib.tc_attention_kvcache_plan_for(C.byref(a), sms, C.byref(plan)), "plan_for")

        def tilec():
            return lib.tc_attention_kvcache(ctx, stream, C.byref(a))
        tc_check(lib, tilec(), "tc_attention_kvcache")
        torch.cuda.synchronize()
        # the reference on [B, H, M, D] / [B, KH, N, D]
        qh, kh, vh = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        ref, _ = attention_reference(qh, kh, vh, causal, scale)
        err = relerr(o.transpose(1, 2), ref)
        ok = err < 1e-2
        bad += not ok
        t_tc = bench(tilec)
        res = {}
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            if page or kvt != "f16":
                continue
            for gqa in (True, False):
                try:
                    kk, vv = (kh, vh) if gqa else (kh.repeat_interleave(H // KH, 1), vh.repeat_interleave(H // KH, 1))
                    extra = {"enable_gqa": True} if gqa else {}
                    with sdpa_kernel(be):
                        F.scaled_dot_product_attention(qh, kk, vv, is_causal=causal, scale=scale, **extra)
                        res[name] = (bench(lambda: F.scaled_dot_product_attention(qh, kk, vv, is_causal=causal,
                                                                                   scale=scale, **extra)), gqa)
                    break
                except RuntimeError as e:
                    if not gqa:
                        print(f"[{name}] unavailable: {str(e).splitlines()[0][:120]}")
        # the copy rate on a buffer of the cache's size
        buf = torch.empty(kv_bytes // 2, device="cuda", dtype=torch.float16)
        dst = torch.empty_like(buf)
        t_copy = bench(lambda: dst.copy_(buf))
        copy_rate = 2 * buf.numel() * 2 / t_copy / 1e6  # GB/s: read + write
        rate = kv_bytes / t_tc / 1e6
        shape = f"B{B} H{H} KV{KH} q{M} N{N} D{D} {'paged' + str(page) if page else 'contig'}" \
                f"{' causal' if causal else ''}{' ' + kvt if kvt != 'f16' else ''}"
        fl = res.get("flash"), res.get("cudnn")
        cols = "".join(f" {x[0] * 1e3:8.1f}{'' if x[1] else '*'}" if x else f" {'-':>9s}" for x in fl)
        ratios = "".join(f" {x[0] / t_tc:7.3f}" if x else f" {'-':>7s}" for x in fl)
        print(f"{shape:44s} {plan.num_splits:6d} {err:8.1e} {t_tc * 1e3:9.1f} {rate:7.0f} {rate / copy_rate:6.3f}"
              f"{cols}{ratios}  copy {copy_rate:.0f} GB/s {'ok' if ok else 'FAIL'}", flush=True)
        rows.append(dict(shape=shape, splits=plan.num_splits, err=err, tilec_us=t_tc * 1e3, gbps=rate,
                         copy_gbps=copy_rate, **{f"{n}_us": x[0] * 1e3 for n, x in res.items()}))
    print("(* : the backend refused enable_gqa; timed on K and V repeated to the query heads)")
    if args.json:
        write_json(args.json, rows=rows)
    print(f"decode.py: {bad} failed correctness checks")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
