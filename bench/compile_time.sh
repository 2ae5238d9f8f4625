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
prog=compile_time.sh
. "$here/tilec_paths.sh"

facts() { for p in "$@"; do printf -- '--divisible %s ' "$p"; done; }
att_facts=$(facts Q=16 K=16 V=16 O=16 stride_qb=8 stride_qh=8 stride_qm=8 stride_kb=8 stride_kh=8 \
    stride_kn=8 stride_vb=8 stride_vh=8 stride_vn=8 stride_ob=8 stride_oh=8 stride_om=8)
qkv_facts=$(facts Q=16 K=16 V=16 DO=16 stride_qb=8 stride_qh=8 stride_qm=8 stride_kb=8 stride_kh=8 \
    stride_kn=8 stride_vb=8 stride_vh=8 stride_vn=8 stride_dob=8 stride_doh=8 stride_dom=8)
dkdv_facts="$qkv_facts $(facts DK=16 DV=16 stride_dkb=8 stride_dkh=8 stride_dkn=8 stride_dvb=8 stride_dvh=8 \
    stride_dvn=8)"
dq_facts="$qkv_facts $(facts DQ=16 stride_dqb=8 stride_dqh=8 stride_dqm=8)"
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
# tc_attention_fwd's plans on sm_90a (stdlib/attention.c rt_attention_plan): head dim 64 under 4096
# keys on one warpgroup (BM 64, BN 64, 3 stages; EVEN_N: whole key blocks); otherwise a producer
# warpgroup and two consumer warpgroups (BM 128; BN 128 and 3 stages up to head dim 128, BN 64 and
# 2 stages at 256).
for spec in "64 64 64 false true 4 3 no" "64 64 64 false false 4 3 no" "64 64 64 true false 4 3 no" \
    "64 128 128 false false 8 3 ws" "128 128 128 false true 8 3 ws" "128 128 128 false false 8 3 ws" \
    "128 128 128 true false 8 3 ws" "256 128 64 false false 8 2 ws" "256 128 64 true false 8 2 ws"; do
    set -- $spec
    c=""; [ "$4" = true ] && c=" causal"
    [ "$5" = true ] && c="$c EVEN_N"
    ws=""; [ "$8" = ws ] && ws=--warp-specialize
    # shellcheck disable=SC2086
    run "attention D$1 BM$2 BN$3$c" "$lib/attention.tile" $att_facts -D HEAD_DIM=$1 -D D=$1 -D BM=$2 -D BN=$3 \
        -D CAUSAL=$4 -D EVEN_N=$5 --num-warps $6 --num-stages $7 $ws --kernel attention_fwd
done
# tc_attention_bwd's kernels on sm_90a (rt_attention_bwd_plan): dK and dV over key blocks, adding
# dQ by TMA reductions up to head dim 128 ("atomic"; with a producer without causal masking:
# "atomic-ws"); dQ over query blocks (with a producer where BN is 128 up to head dim 128, and at
# 256: the plan's kernel at 256, and without atomics); dK/dV with a producer at 256
for spec in "dkdv 64 128 128 false 2 atomic-ws" "dkdv 128 64 128 false 2 atomic-ws" \
    "dkdv 128 64 128 true 3 atomic" "dkdv 256 64 64 false 2 ws" \
    "dq 64 128 64 false 3 no" "dq 128 128 128 true 2 ws" "dq 256 64 64 false 2 ws"; do
    set -- $spec
    ws=""; [ "$7" = ws ] && ws=--warp-specialize
    tag=""; [ "$7" != no ] && [ "$7" != ws ] && tag=" +dQ"
    case $7 in *ws) tag="$tag WS" ;; esac
    [ "$7" = atomic ] && ws="-D ATOMIC_DQ=true --divisible DQ_ACC=16"
    [ "$7" = atomic-ws ] && ws="-D ATOMIC_DQ=true --divisible DQ_ACC=16 --warp-specialize"
    facts=$dkdv_facts; [ "$1" = dq ] && facts=$dq_facts
    # shellcheck disable=SC2086
    run "attention_bwd $1 D$2 BM$3 BN$4$tag" "$lib/attention_bwd.tile" $facts -D HEAD_DIM=$2 -D D=$2 \
        -D BM=$3 -D BN=$4 -D CAUSAL=$5 --num-warps 8 --num-stages $6 $ws --kernel "attention_bwd_$1"
done
# shellcheck disable=SC2086
run "matmul 128x256x64 w8" "$lib/matmul.tile" $mm_facts -D BM=128 -D BN=256 -D BK=64 --num-warps 8 --num-stages 3
run "BLOCK 4096" "$lib/softmax.tile $lib/rmsnorm.tile" -D BLOCK=4096
