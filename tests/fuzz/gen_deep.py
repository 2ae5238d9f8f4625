#!/usr/bin/env python3
"""Generates tile sources and IR of a given shape and size, for the depth and
scaling tests (tests/lit, tests/fuzz/deep.sh) and bench/scaling.sh.

    gen_deep.py SHAPE N [OUT]

SHAPE:
  func-chain   N funcs, each calling the next (g0 -> g1 -> ... -> gN-1), and
               a kernel calling g0: call depth N
  func-work    as func-chain, each func doing a little arithmetic besides
  deep-calls   N funcs (at most 256 are nested), each calling the next
               inside 250 nested negations: call depth times expression depth
  let-chain    one kernel of N `let xI = xI-1 + 1.0;`
  long-expr    one kernel storing `x + x + ... + x` (N terms, one left-deep
               expression)
  lets-and-ifs one kernel of N `let`s, then N / 5 runtime `if`s and N / 5
               loops that each update one `var` (symbols in scope times
               control-flow statements)
  kernels      N small kernels
  guards       one kernel of N `if (x == I) { return; }`, each nesting the
               rest of the kernel one region deeper
  ir-chain     IR text: N funcs, each calling the next, and a kernel (the
               input of tilec-opt --pass=inline)
  ir-dag       IR text: N funcs, each calling the next twice (2^N copies)
  ir-loops     IR text: N funcs, each calling the next inside a `for` (the
               inlined kernel nests N loops)
Writes to OUT, or to stdout.
"""
import sys


def func_chain(n, work):
    out = []
    for i in range(n):
        body = f"return g{i + 1}(x);" if i + 1 < n else "return x;"
        if work:
            body = (f"let y = x * 2.0 + 1.0; let z = maximum(y, x);"
                    + (f" return g{i + 1}(z - y);" if i + 1 < n else " return z - y;"))
        out.append(f"func g{i}(f32 x) {{ {body} }}")
    out.append("kernel k(f32* out) {\n    store(out, g0(f32(1.0)));\n}")
    return "\n".join(out) + "\n"


def deep_calls(n):
    out = []
    for i in range(n):
        inner = f"g{i + 1}(x)" if i + 1 < n else "x"
        out.append(f"func g{i}(f32 x) {{ return {'-(' * 250}{inner}{')' * 250}; }}")
    out.append("kernel k(f32* out) {\n    store(out, g0(f32(1.0)));\n}")
    return "\n".join(out) + "\n"


def let_chain(n):
    lines = ["kernel k(f32* out) {", "    let x0 = load(out);"]
    lines += [f"    let x{i} = x{i - 1} + 1.0;" for i in range(1, n)]
    lines += [f"    store(out, x{n - 1});", "}"]
    return "\n".join(lines) + "\n"


def long_expr(n):
    return ("kernel k(f32* out) {\n    let x = f32(1.0);\n    store(out, "
            + " + ".join(["x"] * n) + ");\n}\n")


def lets_and_ifs(n):
    lines = ["kernel k(f32* out, i32 c) {", "    var acc = f32(0.0);"]
    lines += [f"    let x{i} = f32({i}.0);" for i in range(n)]
    lines += [f"    if (c > {i}) {{ acc = acc + x{i}; }}" for i in range(n // 5)]
    lines += [f"    for (j{i} in range(0, c)) {{ acc = acc * x{i}; }}" for i in range(n // 5)]
    lines += ["    store(out, acc);", "}"]
    return "\n".join(lines) + "\n"


def kernels(n):
    return "".join(f"kernel k{i}(f32* out) {{ store(out, f32({i})); }}\n" for i in range(n))


def ir_chain(n):
    out = []
    for i in range(n):
        tail = (f"  %r = call %y {{callee = @g{i + 1}}} : f32\n  return %r" if i + 1 < n
                else "  return %y")
        out.append(f"func @g{i}(%x: f32) -> (f32) {{\n  %c = constant {{value = 2.0}} : f32\n"
                   f"  %y = mul %x, %c : f32\n{tail}\n}}")
    out.append("kernel @k(%out: ptr<f32>) {\n  %c = constant {value = 1.0} : f32\n"
               "  %v = call %c {callee = @g0} : f32\n  store %out, %v\n  return\n}")
    return "\n".join(out) + "\n"


def ir_dag(n):
    out = []
    for i in range(n):
        if i + 1 < n:
            tail = (f"  %a = call %x {{callee = @g{i + 1}}} : f32\n"
                    f"  %b = call %a {{callee = @g{i + 1}}} : f32\n  return %b")
        else:
            tail = "  return %x"
        out.append(f"func @g{i}(%x: f32) -> (f32) {{\n{tail}\n}}")
    out.append("kernel @k(%out: ptr<f32>) {\n  %c = constant {value = 1.0} : f32\n"
               "  %v = call %c {callee = @g0} : f32\n  store %out, %v\n  return\n}")
    return "\n".join(out) + "\n"


def guards(n):
    lines = ["kernel k(i32* out, i32 x) {"]
    lines += [f"    if (x == {i}) {{ return; }}" for i in range(n)]
    lines += ["    store(out, x);", "}"]
    return "\n".join(lines) + "\n"


def ir_loops(n):
    out = []
    for i in range(n):
        body = f"    %r = call %acc {{callee = @g{i + 1}}} : i32\n    yield %r" if i + 1 < n else "    yield %acc"
        out.append(f"func @g{i}(%n: i32) -> (i32) {{\n  %one = constant {{value = 1}} : i32\n"
                   f"  %s = for %one, %n, %one, %n : i32 {{\n  ^bb(%i: i32, %acc: i32):\n{body}\n  }}\n"
                   "  return %s\n}")
    out.append("kernel @k(%out: ptr<i32>, %n: i32) {\n"
               "  %v = call %n {callee = @g0} : i32\n  store %out, %v\n  return\n}")
    return "\n".join(out) + "\n"


SHAPES = {
    "func-chain": lambda n: func_chain(n, False),
    "func-work": lambda n: func_chain(n, True),
    "deep-calls": deep_calls,
    "let-chain": let_chain,
    "long-expr": long_expr,
    "lets-and-ifs": lets_and_ifs,
    "kernels": kernels,
    "guards": guards,
    "ir-chain": ir_chain,
    "ir-dag": ir_dag,
    "ir-loops": ir_loops,
}

if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in SHAPES:
        sys.exit(__doc__)
    text = SHAPES[sys.argv[1]](int(sys.argv[2]))
    if len(sys.argv) == 4:
        with open(sys.argv[3], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
