#!/bin/sh
# Source-to-PTX compile time of the standard library's kernels as the entry points specialize
# them (constexprs, warps, stages, alignment facts), with tilec's LLVM pipeline and with LLVM's
# default<O3> (--llvm-O3): `tilec --time`, median of 21 compiles in one process each.
#
#   bench/compile_time.sh [TILEC]     (default: gpu-bundle/bin/tilec or build/tilec)
#
# Triton's compile of one attention variant is about half a second on the GPU machine
# (docs/gpu.md; bench/rowwise.py measures Triton's compile of its softmax).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tilec=${1:-}
for t in "$here/../bin/tilec" "$here/../build/tilec" "$here/../gpu-bundle/bin/tilec"; do
    [ -z "$tilec" ] && [ -x "$t" ] && tilec=$t
done
[ -n "$tilec" ] || { echo "compile_time.sh: no tilec binary found; pass its path" >&2; exit 1; }
lib="$here/../share/tilec/lib"
[ -d "$lib" ] || lib="$here/../lib"

facts() { for p in "$@"; do printf -- '--divisible %s ' "$p"; done; }
att_facts=$(facts Q=16 K=16 V=16 O=16 stride_qb=8 stride_qh=8 stride_qm=8 stride_kb=8 stride_kh=8 \
    stride_kn=8 stride_vb=8 stride_vh=8 stride_vn=8 stride_ob=8 stride_oh=8 stride_om=8)
mm_facts=$(facts c=16 a=16 b=16 bias=16 M=8 N=8 K=8 stride_am=8 stride_bk=8 stride_cm=8)

run() { # label, files (one argument), then tilec options
    label=$1; files=$2; shift 2
    for mode in "" --llvm-O3; do
        # shellcheck disable=SC2086
        "$tilec" --emit=ptx $mode "$@" --time $files 2>&1 | sed 's|^.*/||' | while read -r line; do
            printf '%-28s %-9s %s\n' "$label" "${mode:-tilec}" "$line"
        done
    done
}

echo "tilec: $tilec ($("$tilec" --version))"
# tc_attention_fwd's plans (stdlib/attention.c attn_plan): BM 128, 3 stages, 4 warps up to head dim 128
# (EVEN_N: whole key blocks, head dim up to 64, not causal)
for spec in "64 64 false true" "64 64 false false" "64 64 true false" "128 64 false false" \
    "128 64 true false" "256 32 false false"; do
    set -- $spec
    w=4; [ "$1" -gt 128 ] && w=8
    c=""; [ "$3" = true ] && c=" causal"
    [ "$4" = true ] && c=" EVEN_N"
    # shellcheck disable=SC2086
    run "attention D$1 BN$2$c" "$lib/attention.tile" $att_facts -D HEAD_DIM=$1 -D D=$1 -D BM=128 -D BN=$2 \
        -D CAUSAL=$3 -D EVEN_N=$4 --num-warps $w --num-stages 3
done
# shellcheck disable=SC2086
run "matmul 128x256x64 w8" "$lib/matmul.tile" $mm_facts -D BM=128 -D BN=256 -D BK=64 --num-warps 8 --num-stages 3
run "BLOCK 4096" "$lib/softmax.tile $lib/rmsnorm.tile" -D BLOCK=4096
