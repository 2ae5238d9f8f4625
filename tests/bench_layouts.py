"""The benchmarks' ctypes records against the C structs they mirror.

    python3 tests/bench_layouts.py CC REPO

bench/*.py reach libtilec (and examples/llama_layer.c's library) through ctypes records, each
marked with the C struct it mirrors (`class X(C.Structure):  # tc_name`). A record shorter than its
struct lets the C side write past Python's buffer; a field out of place reads garbage. For every
marked record this writes a C file of static assertions, one per field (its offset, and its size
for scalars) and one for the size, includes the headers and examples/llama_layer.c (as the
library, without main) and compiles it with CC -fsyntax-only: nothing runs, so no GPU is needed.
A field the struct lacks or an offset that differs fails the compile; the compiler's messages say
which. Exit status 0 when every record matches, 1 otherwise.
"""
import ctypes as C
import importlib
import os
import re
import subprocess
import sys
import tempfile

MARK = re.compile(r"^class (\w+)\((?:C|ctypes)\.Structure\):\s*#\s*(\w+)")


def records(bench):
    """(module, class name, C struct name) for every marked record of bench/*.py."""
    out = []
    for name in sorted(os.listdir(bench)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(bench, name)) as f:
            for line in f:
                m = MARK.match(line)
                if m:
                    out.append((name[:-3], m.group(1), m.group(2)))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cc, repo = sys.argv[1], os.path.abspath(sys.argv[2])
    bench = os.path.join(repo, "bench")
    sys.path.insert(0, bench)
    found = records(bench)
    if not found:
        print("bench_layouts: no marked ctypes records in bench/*.py")
        return 1
    lines = ["#define LLAMA_LAYER_NO_MAIN", "#include <stddef.h>", "#include <tilec/tilec.h>",
             "#include <tilec/runtime.h>", "#include <tilec/stdlib.h>", '#include "examples/llama_layer.c"', ""]
    checked = 0
    for mod_name, cls_name, c_name in found:
        cls = getattr(importlib.import_module(mod_name), cls_name)
        where = f"bench/{mod_name}.py {cls_name}"
        lines.append(f'_Static_assert(sizeof({c_name}) == {C.sizeof(cls)}, "{where}: sizeof {c_name} differs");')
        for field in cls._fields_:
            fname, ftype = field[0], field[1]
            off = getattr(cls, fname).offset
            lines.append(f'_Static_assert(offsetof({c_name}, {fname}) == {off}, "{where}: {fname} is not at '
                         f'offset {off} of {c_name}");')
            if not issubclass(ftype, (C.Array, C.Structure)):
                lines.append(f'_Static_assert(sizeof((({c_name} *)0)->{fname}) == {C.sizeof(ftype)}, '
                             f'"{where}: {fname} has another size in {c_name}");')
        checked += 1
    with tempfile.TemporaryDirectory(prefix="bench-layouts-") as tmp:
        src = os.path.join(tmp, "layouts.c")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([cc, "-std=c11", "-fsyntax-only", "-I", os.path.join(repo, "include"), "-I", repo,
                            "-I", os.path.join(repo, "examples"), src], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        print(f"bench_layouts: a ctypes record of bench/ does not match its C struct (of {checked} checked)")
        return 1
    print(f"bench_layouts: {checked} ctypes records match their C structs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
