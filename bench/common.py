"""What the bench scripts share: libtilec through ctypes, a tc_context in the CUcontext torch
made, the Triton baselines (baselines.py), and a line per measurement.

The scripts import it as `common` from their own folder (the repository's bench/ or the
bundle's), so it needs nothing but the standard library at import time; torch is imported
by the functions that take tensors.
"""
import argparse
import ctypes as C
import glob
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- libtilec through ctypes


class Constexpr(C.Structure):  # tc_constexpr
    _fields_ = [("name", C.c_char_p), ("kind", C.c_int), ("i", C.c_int64), ("f", C.c_double)]


class ParamSpec(C.Structure):  # tc_param_spec
    _fields_ = [("name", C.c_char_p), ("divisibility", C.c_int64)]


class Options(C.Structure):  # tc_options
    _fields_ = [("emit", C.c_int), ("num_warps", C.c_int), ("print_after", C.c_char_p),
                ("print_after_all", C.c_int), ("verify_each", C.c_int),
                ("params", C.POINTER(ParamSpec)), ("num_params", C.c_size_t), ("num_stages", C.c_int),
                ("llvm_o3", C.c_int), ("warp_specialize", C.c_int), ("specialize", C.c_void_p),
                ("specialize_user", C.c_void_p), ("persistent", C.c_int), ("line_info", C.c_int),
                ("min_programs_per_sm", C.c_int)]


class Dim3(C.Structure):  # tc_dim3
    _fields_ = [("x", C.c_uint), ("y", C.c_uint), ("z", C.c_uint)]


class AttentionPlan(C.Structure):  # tc_attention_plan
    _fields_ = [("file", C.c_char_p), ("kernel", C.c_char_p), ("constexprs", Constexpr * 16),
                ("num_constexprs", C.c_size_t), ("head_dim", C.c_int), ("block_d", C.c_int), ("block_m", C.c_int),
                ("block_n", C.c_int), ("num_warps", C.c_int), ("num_stages", C.c_int), ("warp_specialize", C.c_int),
                ("causal", C.c_int), ("varlen", C.c_int), ("grid", Dim3), ("persistent", C.c_int), ("tuned", C.c_int),
                ("min_programs_per_sm", C.c_int)]


class AttentionBwdPlan(C.Structure):  # tc_attention_bwd_plan
    _fields_ = [("preprocess", AttentionPlan), ("dkdv", AttentionPlan), ("dq", AttentionPlan),
                ("dq_atomic", C.c_int), ("workspace_bytes", C.c_size_t), ("delta_offset", C.c_size_t),
                ("dq_acc_offset", C.c_size_t), ("lse_offset", C.c_size_t)]


class JitRequest(C.Structure):  # tc_jit_request
    _fields_ = [("source", C.c_char_p), ("source_len", C.c_size_t), ("path", C.c_char_p),
                ("kernel", C.c_char_p), ("constexprs", C.POINTER(Constexpr)), ("num_constexprs", C.c_size_t),
                ("options", C.POINTER(Options)), ("arch", C.c_char_p),
                ("divisibility", C.POINTER(C.c_int64)), ("num_divisibility", C.c_size_t),
                ("args", C.POINTER(C.c_void_p)), ("num_args", C.c_size_t),
                ("diags", C.c_void_p), ("no_disk_cache", C.c_int)]


class JitVariant:
    """One specialization of a library kernel compiled through tc_jit, as the standard library would
    compile it but with constexprs, warps and stages of one's choosing (the benchmarks' --sweep).
    cx: (name, kind, value) constexprs (kind 0 int, 2 bool, 3 dtype); facts: (param name,
    divisibility) for integers; div: per-parameter pointer alignment in bytes (0: unknown);
    llvm_o3: LLVM's default<O3> pipeline instead of tilec's (tc_options.llvm_o3); ws: a producer
    warpgroup (tc_options.warp_specialize); pers: persistent programs (tc_options.persistent);
    per_sm: tc_options.min_programs_per_sm (0: no bound). Holds every ctypes object the request
    points to, and .kernel."""

    def __init__(self, lib, ctx, text, path, kernel, cx, facts, div, warps, stages, what, llvm_o3=False, ws=False,
                 pers=False, per_sm=0):
        self.text = text
        self.cx = (Constexpr * len(cx))(*[Constexpr(nm, kind, v, 0.0) for nm, kind, v in cx])
        self.facts = (ParamSpec * len(facts))(*[ParamSpec(nm, d) for nm, d in facts])
        self.opt = Options()
        lib.tc_options_init(C.byref(self.opt))
        self.opt.num_warps = warps
        self.opt.num_stages = stages
        self.opt.llvm_o3 = int(llvm_o3)
        self.opt.warp_specialize = int(ws)
        self.opt.persistent = int(pers)
        self.opt.min_programs_per_sm = int(per_sm)
        self.opt.params = C.cast(self.facts, C.POINTER(ParamSpec))
        self.opt.num_params = len(facts)
        self.div = (C.c_int64 * len(div))(*div)
        req = JitRequest()
        lib.tc_jit_request_init(C.byref(req))
        req.source, req.source_len, req.path, req.kernel = text, len(text), path, kernel
        req.constexprs = C.cast(self.cx, C.POINTER(Constexpr))
        req.num_constexprs = len(cx)
        req.options = C.pointer(self.opt)
        req.divisibility = C.cast(self.div, C.POINTER(C.c_int64))
        req.num_divisibility = len(div)
        self.kernel = C.c_void_p()
        tc_check(lib, lib.tc_jit(ctx, C.byref(req), C.byref(self.kernel)), what)


def stdlib_source(lib, name):
    """The text of a library kernel file (tc_stdlib_source), as bytes."""
    text, n = C.c_char_p(), C.c_size_t()
    tc_check(lib, lib.tc_stdlib_source(name, C.byref(text), C.byref(n)), "tc_stdlib_source")
    return text.value[: n.value]


def find_lib(prog):
    """$TILEC_LIB, else ../lib/libtilec.so.0 (the bundle), else ../build*/libtilec.so.0; exits if none."""
    cands = [os.environ.get("TILEC_LIB"), os.path.join(HERE, "..", "lib", "libtilec.so.0")]
    cands += sorted(glob.glob(os.path.join(HERE, "..", "build*", "libtilec.so.0")))
    for c in cands:
        if c and os.path.exists(c):
            return os.path.abspath(c)
    sys.exit(f"{prog}: libtilec.so.0 not found: set TILEC_LIB (looked next to the bundle and in build*/)")


def load_tilec(path, sig):
    """libtilec with restype and argtypes set for the functions both scripts call and those of
    sig ({name: (restype, argtypes)})."""
    lib = C.CDLL(path)
    P, I = C.c_void_p, C.c_int
    common = {
        "tc_version": (C.c_char_p, []),
        "tc_status_string": (C.c_char_p, [I]),
        "tc_last_error": (C.c_char_p, []),
        "tc_context_create_from": (I, [P, C.POINTER(P)]),
        "tc_context_destroy": (I, [P]),
        "tc_context_arch": (C.c_char_p, [P]),
        "tc_stdlib_source": (I, [C.c_char_p, C.POINTER(C.c_char_p), C.POINTER(C.c_size_t)]),
        "tc_options_init": (None, [C.POINTER(Options)]),
        "tc_jit_request_init": (None, [C.POINTER(JitRequest)]),
        "tc_jit": (I, [P, C.POINTER(JitRequest), C.POINTER(P)]),
    }
    for name, (res, args) in {**common, **sig}.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def tc_check(lib, st, what):
    if st != 0:
        raise RuntimeError(f"{what}: {lib.tc_status_string(st).decode()}: {lib.tc_last_error().decode()}")


def tc_context_from_torch(lib, libpath, torch, triton, prog):
    """Prints the versions line, then a tc_context in the CUcontext torch made current (its
    primary context, created by a first allocation); exits if there is none."""
    print(f"{lib.tc_version().decode()} ({libpath}); torch {torch.__version__}, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the primary context exists and is current on this thread
    cuda = C.CDLL("libcuda.so.1")
    cu_ctx = C.c_void_p()
    if cuda.cuCtxGetCurrent(C.byref(cu_ctx)) != 0 or not cu_ctx.value:
        sys.exit(f"{prog}: cuCtxGetCurrent found no context after torch's first allocation")
    ctx = C.c_void_p()
    tc_check(lib, lib.tc_context_create_from(cu_ctx, C.byref(ctx)), "tc_context_create_from")
    return ctx


# ---------------------------------------------------------------- the comparison

def arg_parser(doc, quick_help):
    """The options both scripts take: --quick (what it leaves out: quick_help) and --json FILE."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--json", help="write every measurement to this file")
    return ap


def load_baselines():
    """baselines.py next to this file (the Triton kernels and PyTorch references the scripts
    compare with), imported; None, with the reason printed, if it cannot be imported (Triton
    missing, or one without tensor descriptors). Importing it points TRITON_CACHE_DIR at a new,
    empty folder."""
    path = os.path.join(HERE, "baselines.py")
    try:
        spec = importlib.util.spec_from_file_location("baselines", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    except (ImportError, OSError) as e:
        print(f"{path}: not imported ({type(e).__name__}: {e}): no Triton column", flush=True)
        return None
    return mod


def record(rows, group, name, shape, ms, rate_key, rate, rate_unit, extra, name_width, shape_width, in_ms=False):
    """Appends a measurement to rows and prints its line: `[group] name shape time rate key=value...`,
    the time in microseconds (in_ms: milliseconds), the rate (rows' rate_key) in rate_unit."""
    rows.append(dict(group=group, name=name, shape=shape, ms=ms, **{rate_key: rate}, **extra))
    t = "" if ms is None else f"{ms:10.2f} ms" if in_ms else f"{ms * 1e3:10.1f} us"
    r = f"{rate:8.1f} {rate_unit}" if rate is not None else ""
    e = " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items())
    print(f"[{group}] {name:{name_width}s} {shape:{shape_width}s} {t} {r} {e}", flush=True)


def by_shape(rows, group):
    """For the table: each shape of group's rows, in order, with its rows by name."""
    for shape in dict.fromkeys(r["shape"] for r in rows if r["group"] == group):
        yield shape, {r["name"]: r for r in rows if r["group"] == group and r["shape"] == shape}


def relerr(out, ref):
    """Relative Frobenius error of out against the f32 reference ref; NaN if out is not finite."""
    import torch
    o = out.float()
    if not torch.isfinite(o).all():
        return float("nan")
    return ((o - ref).norm() / ref.norm()).item()


def write_json(path, **data):
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1)


def attention_reference(q, k, v, causal, scale):
    """softmax(q kᵀ * scale) v in float32: q [B, H, n_q, D], k and v [B, KH, n_kv, D] with KH
    dividing H. Causal: bottom-right aligned (query i sees keys j <= i + n_kv - n_q); a row that
    sees no key gets O = 0 and LSE = -inf. Returns (o [B, H, n_q, D], lse [B, H, n_q], natural log)."""
    import torch
    rep = q.shape[1] // k.shape[1]
    kf = k.float().repeat_interleave(rep, dim=1)
    vf = v.float().repeat_interleave(rep, dim=1)
    s = torch.matmul(q.float(), kf.transpose(-1, -2)) * scale
    n_q, n_kv = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(n_q, device=q.device)[:, None]
        j = torch.arange(n_kv, device=q.device)[None, :]
        s = s.masked_fill(j > i + (n_kv - n_q), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.matmul(p, vf), lse
