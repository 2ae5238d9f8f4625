#!/usr/bin/env bash
# ncu_profile.sh — Nsight Compute's key figures for tilec's attention and matmul next to cuDNN's
# and cuBLAS's kernels on the same shapes (the figures bench/RESULTS.md quotes).
#
#   bench/ncu_profile.sh [attention|matmul|bwd|all] [SHAPE]   (from the bundle, on the GPU machine)
#
# Each line: the implementation, the kernel ncu profiled (the last of three launches of
# bench/ncu_target.py), its time, tensor-pipe activity, issue activity, warps active, the
# programs it launched and the cycles an SM was active (over the programs each SM ran: a
# program's cycles; two lengths of one shape split them into a cost per key block and one per
# program, bench/RESULTS.md), and the stall reasons as warps per issued instruction (barrier,
# long scoreboard = global memory, wait = fixed latency, math pipe throttle, MIO throttle =
# shared memory queue, short scoreboard = shared memory and MUFU results).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
what=${1:-all}
metrics=gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,\
smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,sm__cycles_active.avg,\
smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,\
smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
run() { # kernel impl shape kernel-name-regex extra...
    local kernel=$1 impl=$2 shape=$3 names=$4; shift 4
    echo "== $kernel $impl $shape $*"
    "$ncu" --kernel-name "regex:$names" --launch-skip 2 --launch-count 1 --metrics "$metrics" --csv --page raw \
        python3 "$here/ncu_target.py" "$kernel" --impl "$impl" --shape "$shape" "$@" 2>/dev/null |
        METRICS="$metrics" python3 -c '
import csv, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
if len(rows) < 3:
    sys.exit("no profile (is ncu allowed to read the counters?)")
head, units, vals = rows[0], rows[1], rows[-1]
get = lambda m: next((v for h, v in zip(head, vals) if h == m), "-")
print(f"  kernel {get("Kernel Name")[:60]}")
import os
for m in os.environ["METRICS"].split(","):
    if m in head:
        i = head.index(m)
        print(f"  {m:78s} {vals[i]:>12s} {units[i]}")
'
}
# bwd: every kernel of the backward pass's last launch, a line each: time, tensor-pipe activity,
# issue activity, registers (tilec's default, its dQ kernel, cuDNN's).
run_all() { # impl shape kernel-name-regex launches extra...
    local impl=$1 shape=$2 names=$3 count=$4; shift 4
    echo "== attention backward $impl $shape $*"
    "$ncu" --kernel-name "regex:$names" --metrics "$metrics" --csv --page raw \
        python3 "$here/ncu_target.py" attention --bwd --impl "$impl" --shape "$shape" "$@" 2>/dev/null |
        COUNT="$count" python3 -c '
import csv, os, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
if len(rows) < 3:
    sys.exit("no profile (is ncu allowed to read the counters?)")
head, units, vals = rows[0], rows[1], rows[2:][-int(os.environ["COUNT"]):]
col = lambda m: head.index(m)
for v in vals:
    t = col("gpu__time_duration.sum")
    print(f"  {v[col("Kernel Name")][:48]:48s} {v[t]:>10s} {units[t]}"
          f"  tensor {v[col("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active")]:>6s}%"
          f"  issue {v[col("smsp__issue_active.avg.pct_of_peak_sustained_active")]:>6s}%"
          f"  regs {v[col("launch__registers_per_thread")]}")
'
}
if [ "$what" = bwd ] || [ "$what" = all ]; then
    s=${2:-4,32,4096,128}
    for c in "" --causal; do
        # shellcheck disable=SC2086
        run_all tilec "$s" '^attention_bwd' 3 $c
        # shellcheck disable=SC2086
        TILEC_ATTENTION_BWD_DQ=kernel run_all tilec "$s" '^attention_bwd' 3 $c
        # shellcheck disable=SC2086
        run_all cudnn "$s" 'cudnn|fmha|flash|sm90|dgrad|bprop|backward' 4 $c
    done
fi
if [ "$what" = attention ] || [ "$what" = all ]; then
    s=${2:-4,32,4096,128}
    run attention tilec "$s" '^attention_fwd$'
    run attention cudnn "$s" 'cudnn|fmha|flash|sm90'
    run attention tilec "$s" '^attention_fwd$' --causal
    run attention cudnn "$s" 'cudnn|fmha|flash|sm90' --causal
fi
if [ "$what" = matmul ] || [ "$what" = all ]; then
    s=${2:-4096,4096,4096}
    run matmul tilec "$s" '^matmul$'
    run matmul cublas "$s" 'gemm|xmma|cutlass|sm90' 
fi
