"""Chunked prefill against a paged KV cache on the GPU machine: tc_attention_kvcache on query chunks
that attend, causally, to the cache's earlier tokens and to themselves, against tc_attention_fwd on
the same shapes with a contiguous K and V.

    python3 bench/prefill.py [--quick] [--json FILE]

For each shape (f16, head dim 128, H32 with 8 KV heads, causal bottom-right aligned; the chunk's
K and V already appended to the cache, as a server appends before it attends):
  - B1, a first chunk of 4096 tokens (no earlier tokens);
  - B1, a chunk of 2048 tokens after 8192 cached ones, and after 30720;
  - B4, chunks of 1024 after 4096 cached tokens each;
  - a mixed varlen batch in one launch: 4 sequences decoding one token after 4096 cached tokens and
    4 prefilling chunks of 512 after 1024 (cu_seqlens_q; each sequence its own length through
    seqused_k), against tc_attention_fwd on the same sequences one after the other (varlen, with
    cu_seqlens_q and cu_seqlens_k over contiguous K and V);
(--quick: the first two). The cache holds 16-token pages shuffled at random in its pool; the same
keys also go to a contiguous cache [batch, longest, KV heads, D], which tc_attention_kvcache reads
without a block table. First a check of all three against a float32 reference on the same inputs
(relative error < 1e-2), then the times (triton.testing.do_bench medians), TFLOP/s of the paged
call (the causal products actually computed: 4 * D * the (query, key) pairs a query sees) and the
ratios tc_attention_fwd's time / tc_attention_kvcache's, paged and contiguous (1.0 or more: the
chunk runs as fast as the forward kernel).
"""
import ctypes as C
import itertools
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import arg_parser, attention_reference, find_lib, relerr, tc_check  # noqa: E402
from common import tc_context_from_torch, write_json  # noqa: E402
from decode import KvArgs, load_api as kv_api  # noqa: E402

PROG = "prefill.py"
F16 = 5
U, L = C.c_uint64, C.c_int64


def load_api(path):
    P, I = C.c_void_p, C.c_int
    return kv_api(path, {"tc_attention_fwd": (I, [P, P, I, U, U, U, U, U] + [L] * 6 + [L] * 12 + [U, U, C.c_float, I])})


def main():
    ap = arg_parser(__doc__, "the first two shapes only")
    args = ap.parse_args()
    import torch
    import triton
    libpath = find_lib(PROG)
    lib = load_api(libpath)
    ctx = tc_context_from_torch(lib, libpath, torch, triton, PROG)
    stream = torch.cuda.current_stream().cuda_stream

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    H, KH, D, PAGE = 32, 8, 128, 16
    dt = torch.float16
    scale = 1.0 / math.sqrt(D)
    # each case: a list of sequences (cached tokens, new tokens)
    cases = [("B1 chunk 4096, no cache", [(0, 4096)]),
             ("B1 chunk 2048 after 8192", [(8192, 2048)]),
             ("B1 chunk 2048 after 30720", [(30720, 2048)]),
             ("B4 chunks 1024 after 4096", [(4096, 1024)] * 4),
             ("mixed: 4 x 1 after 4096, 4 x 512 after 1024", [(4096, 1)] * 4 + [(1024, 512)] * 4)]
    if args.quick:
        cases = cases[:2]
    rows, bad = [], 0
    print(f"\n== chunked prefill: H{H} KV{KH} D{D} f16 causal, {PAGE}-token pages [{torch.cuda.get_device_name()}]")
    print(f"{'shape':46s} {'err page':>8s} {'err cont':>8s} {'err fwd':>8s} {'paged us':>9s} {'contig us':>9s}"
          f" {'fwd us':>9s} {'TFLOP/s':>8s} {'fwd/paged':>9s} {'fwd/contig':>10s}")
    for label, seqs in cases:
        g = torch.Generator(device="cuda").manual_seed(int.from_bytes(os.urandom(4), "little"))
        B = len(seqs)
        lens_q = [n for _, n in seqs]
        lens_k = [c + n for c, n in seqs]
        max_q, max_k = max(lens_q), max(lens_k)
        total_q, total_k = sum(lens_q), sum(lens_k)
        # packed (varlen) rows: q [total_q, H, D], k and v [total_k, KH, D]
        q = torch.randn(total_q, H, D, device="cuda", dtype=dt, generator=g)
        k = torch.randn(total_k, KH, D, device="cuda", dtype=dt, generator=g)
        v = torch.randn(total_k, KH, D, device="cuda", dtype=dt, generator=g)
        off_q = [0] + list(itertools.accumulate(lens_q))
        off_k = [0] + list(itertools.accumulate(lens_k))
        cu_q = torch.tensor(off_q, device="cuda", dtype=torch.int32)
        cu_k = torch.tensor(off_k, device="cuda", dtype=torch.int32)
        # the paged cache: each sequence's pages shuffled in the pool
        pages_per = [(n + PAGE - 1) // PAGE for n in lens_k]
        max_pages = max(pages_per)
        num_pages = sum(pages_per)
        perm = torch.randperm(num_pages, device="cuda", generator=g).to(torch.int32)
        table = torch.zeros(B, max_pages, device="cuda", dtype=torch.int32)
        kp = torch.zeros(num_pages, PAGE, KH, D, device="cuda", dtype=dt)
        vp = torch.zeros_like(kp)
        at = 0
        for b in range(B):
            n, p = lens_k[b], pages_per[b]
            table[b, :p] = perm[at:at + p]
            ks = torch.zeros(p * PAGE, KH, D, device="cuda", dtype=dt)
            vs = torch.zeros_like(ks)
            ks[:n] = k[off_k[b]:off_k[b] + n]
            vs[:n] = v[off_k[b]:off_k[b] + n]
            kp[perm[at:at + p].long()] = ks.view(p, PAGE, KH, D)
            vp[perm[at:at + p].long()] = vs.view(p, PAGE, KH, D)
            at += p
        kc = torch.zeros(B, max_k, KH, D, device="cuda", dtype=dt)
        vc = torch.zeros_like(kc)
        for b in range(B):
            kc[b, :lens_k[b]] = k[off_k[b]:off_k[b] + lens_k[b]]
            vc[b, :lens_k[b]] = v[off_k[b]:off_k[b] + lens_k[b]]
        used = torch.tensor(lens_k, device="cuda", dtype=torch.int32)
        o_kv = torch.full_like(q, float("nan"))
        o_kvc = torch.full_like(q, float("nan"))
        o_fwd = torch.full_like(q, float("nan"))
        lse = torch.empty(B, H, max_q, device="cuda", dtype=torch.float32)

        a = KvArgs()
        a.dtype, a.batch, a.heads, a.kv_heads, a.head_dim = F16, B, H, KH, D
        a.seqlen_q, a.seqlen_k = max_q, max_k
        a.q, a.o, a.lse = q.data_ptr(), o_kv.data_ptr(), 0
        a.stride_qb, a.stride_qm, a.stride_qh = 0, q.stride(0), q.stride(1)
        a.stride_ob, a.stride_om, a.stride_oh = 0, o_kv.stride(0), o_kv.stride(1)
        a.k_cache, a.v_cache = kp.data_ptr(), vp.data_ptr()
        a.stride_kb, a.stride_kn, a.stride_kh = kp.stride(0), kp.stride(1), kp.stride(2)
        a.stride_vb, a.stride_vn, a.stride_vh = vp.stride(0), vp.stride(1), vp.stride(2)
        a.block_table, a.stride_bt, a.page_size, a.num_pages = table.data_ptr(), max_pages, PAGE, num_pages
        a.seqused_k, a.cu_seqlens_q = used.data_ptr(), cu_q.data_ptr()
        a.scale, a.causal = scale, 1
        ws_bytes = C.c_size_t()
        tc_check(lib, lib.tc_attention_kvcache_workspace_size(ctx, C.byref(a), C.byref(ws_bytes)), "workspace_size")
        ws = torch.empty(max(ws_bytes.value, 16), device="cuda", dtype=torch.uint8)
        a.workspace, a.workspace_bytes = (ws.data_ptr(), ws_bytes.value) if ws_bytes.value else (0, 0)
        ac = KvArgs.from_buffer_copy(a)  # the contiguous cache
        ac.o = o_kvc.data_ptr()
        ac.k_cache, ac.v_cache, ac.block_table, ac.stride_bt, ac.page_size, ac.num_pages = \
            kc.data_ptr(), vc.data_ptr(), 0, 0, 0, 0
        ac.stride_kb, ac.stride_kn, ac.stride_kh = kc.stride(0), kc.stride(1), kc.stride(2)
        ac.stride_vb, ac.stride_vn, ac.stride_vh = vc.stride(0), vc.stride(1), vc.stride(2)
        tc_check(lib, lib.tc_attention_kvcache_workspace_size(ctx, C.byref(ac), C.byref(ws_bytes)), "workspace_size")
        wsc = torch.empty(max(ws_bytes.value, 16), device="cuda", dtype=torch.uint8)
        ac.workspace, ac.workspace_bytes = (wsc.data_ptr(), ws_bytes.value) if ws_bytes.value else (0, 0)

        def kvcache():
            return lib.tc_attention_kvcache(ctx, stream, C.byref(a))

        def kvcache_contig():
            return lib.tc_attention_kvcache(ctx, stream, C.byref(ac))

        def fwd():
            return lib.tc_attention_fwd(ctx, stream, F16, o_fwd.data_ptr(), lse.data_ptr(), q.data_ptr(),
                                        k.data_ptr(), v.data_ptr(), B, H, KH, max_q, max_k, D,
                                        0, q.stride(1), q.stride(0), 0, k.stride(1), k.stride(0),
                                        0, v.stride(1), v.stride(0), 0, o_fwd.stride(1), o_fwd.stride(0),
                                        cu_q.data_ptr(), cu_k.data_ptr(), scale, 1)
        tc_check(lib, kvcache(), "tc_attention_kvcache")
        tc_check(lib, kvcache_contig(), "tc_attention_kvcache (contiguous)")
        tc_check(lib, fwd(), "tc_attention_fwd")
        torch.cuda.synchronize()
        errs, pairs = [], 0
        for out in (o_kv, o_kvc, o_fwd):
            num = den = 0.0
            for b in range(B):
                nq, nk = lens_q[b], lens_k[b]
                qb = q[off_q[b]:off_q[b] + nq].transpose(0, 1)[None]
                kb = k[off_k[b]:off_k[b] + nk].transpose(0, 1)[None]
                vb = v[off_k[b]:off_k[b] + nk].transpose(0, 1)[None]
                ref, _ = attention_reference(qb, kb, vb, True, scale)
                got = out[off_q[b]:off_q[b] + nq].transpose(0, 1)[None].float()
                num += float(((got - ref) ** 2).sum())
                den += float((ref ** 2).sum())
            errs.append(math.sqrt(num / den) if den > 0 and math.isfinite(num) else float("nan"))
        for nq, nk in zip(lens_q, lens_k):  # query i (0-based in the chunk) sees nk - nq + i + 1 keys
            pairs += nq * (nk - nq) + nq * (nq + 1) // 2
        ok = all(e < 1e-2 for e in errs)
        bad += not ok
        t_kv, t_kvc, t_fwd = bench(kvcache), bench(kvcache_contig), bench(fwd)
        tflops = 4 * D * pairs * H / t_kv / 1e9
        print(f"{label:46s} {errs[0]:8.1e} {errs[1]:8.1e} {errs[2]:8.1e} {t_kv * 1e3:9.1f} {t_kvc * 1e3:9.1f}"
              f" {t_fwd * 1e3:9.1f} {tflops:8.1f} {t_fwd / t_kv:9.3f} {t_fwd / t_kvc:10.3f} {'ok' if ok else 'FAIL'}",
              flush=True)
        rows.append(dict(shape=label, err_kvcache=errs[0], err_contiguous=errs[1], err_fwd=errs[2],
                         kvcache_us=t_kv * 1e3, contiguous_us=t_kvc * 1e3, fwd_us=t_fwd * 1e3, tflops=tflops,
                         ratio=t_fwd / t_kv, ratio_contiguous=t_fwd / t_kvc))
    if args.json:
        write_json(args.json, rows=rows)
    print(f"prefill.py: {bad} failed correctness checks")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
