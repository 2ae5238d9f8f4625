#!/usr/bin/env bash
# run.sh — the one script to run on the GPU machine: every GPU test, the
# examples, and with --bench the benchmarks; a short table last.
#
#   gpu-bundle/tests/gpu/run.sh [--bench] [--quick] [--only NAME[,NAME...]] [--logs DIR]
#
#   --bench     also bench/rowwise.py, and bench/launch_overhead's figures (torch, and triton with
#               the kernels of bench/baselines.py), and
#               bench/matmul.py (tc_matmul against cuBLAS and Triton's tutorial matmul), and
#               bench/attention.py (tc_attention_fwd against Triton, SDPA flash and cuDNN; --bwd:
#               tc_attention_bwd against SDPA flash and cuDNN, with a gradient check), and
#               bench/decode.py (tc_attention_kvcache's rate of reading a KV cache), and
#               bench/prefill.py (chunked prefill through a paged cache against tc_attention_fwd)
#   --quick     the row-wise tests on cases of at most 2^20 elements, rowwise.py on one shape
#   --only      run only these tests (test_softmax, test_rmsnorm, test_layernorm, test_swiglu, test_rope, test_cross_entropy, test_adamw,
#               test_features, test_fp8, test_scan,
#               test_matmul, test_attention, test_attention_bwd, test_attention_kvcache, test_lineinfo,
#               test_random_debug, examples, bench: every
#               benchmark, bench_matmul:
#               bench/matmul.py alone, bench_attention: bench/attention.py alone (with --bwd too),
#               bench_decode: bench/decode.py and bench/prefill.py alone)
# On a Hopper GPU each test runs twice: as the runtime picks (sm_90a: wgmma) and with
# TILEC_ARCH=sm_90 (the mma.sync path); test_fp8 a third time with TILEC_ARCH=sm_80 (fp8 conversions
# in software), test_matmul, test_attention and test_attention_bwd a third time with
# TILEC_WARP_SPECIALIZE=1 (a producer warpgroup issues the TMA copies), and test_attention a fourth with
# TILEC_PERSISTENT=1 too (persistent programs); test_lineinfo (compute-sanitizer must report a bad
# store at its .tile line) runs once. A program whose log has a "tilec: ptxas:" line
# (ptxas serialized a wgmma: C7510-C7515) fails.
#
#   --logs DIR  where the programs' full output goes: test_*.log, examples.log, bench.log,
#               rowwise.json (default: $OUT if set, so that they come back from the device
#               tool, else a new folder under /tmp)
#
# It runs from the bundle that `cmake --install BUILD --prefix gpu-bundle --strip` makes
# (tests/gpu/README.md): the test programs next to this script, libtilec in ../../lib,
# the examples in ../../examples, the benchmarks in ../../bench. From a source checkout,
# point TILEC_BUNDLE at a bundle or a build directory. Every program gets a fresh,
# empty TILEC_CACHE_DIR, so the first launch of each kernel compiles it.
#
# Exit status: 0 if everything that ran passed (skips are not failures unless
# nothing ran), 1 otherwise.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=0
quick=0
only=""
logs="${OUT:-}"
while [ $# -gt 0 ]; do
    case "$1" in
    --bench) bench=1 ;;
    --quick) quick=1 ;;
    --only) only="$2"; shift ;;
    --logs) logs="$2"; shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

# Where things are: the bundle (tests/gpu/run.sh inside it), or TILEC_BUNDLE (a bundle or a build dir).
root="${TILEC_BUNDLE:-$(cd "$here/../.." && pwd)}"
find_prog() { # name, candidate folders under $root
    local name=$1; shift
    for d in "$@"; do
        if [ -x "$root/$d/$name" ] && [ -f "$root/$d/$name" ]; then echo "$root/$d/$name"; return; fi
    done
}
[ -n "$logs" ] || logs=$(mktemp -d /tmp/tilec-gpu-logs.XXXXXX)
mkdir -p "$logs"
# 7 logs (and rowwise.json): 8 files, all that come back from the device tool (8 at most);
# a further test must share one of these logs
for f in test_features test_softmax test_rmsnorm test_matmul test_attention examples bench; do : >"$logs/$f.log"; done
cache_root=$(mktemp -d /tmp/tilec-gpu-cache.XXXXXX)
trap 'rm -rf "$cache_root"' EXIT

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

echo "== tilec GPU run: $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname)"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/== GPU: /'
fi
echo "== bundle: $root; logs: $logs"

# Hopper (compute capability 9.0): the tests run on both code paths
hopper=0
if command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | grep -q '^9\.0'; then
    hopper=1
fi

# Results, one entry per program: name|cases|failed|worst16|worst32|seconds|result
results=()
ran=0
failed=0

# run_one NAME LOG PROGRAM ARGS... : runs with a fresh cache; records a row from its SUMMARY line.
run_one() {
    local name=$1 log=$2; shift 2
    local cache="$cache_root/$name"
    mkdir -p "$cache"
    local t0 t1 rc
    t0=$(date +%s.%N)
    local start
    start=$(($(wc -l <"$log" 2>/dev/null || echo 0) + 1))
    echo "==== $name: $*" >>"$log"
    # TILEC_LOG=1: compile lines, and ptxas's performance-loss reports, in the log
    TILEC_LOG="${TILEC_LOG:-1}" TILEC_CACHE_DIR="$cache" "$@" >>"$log" 2>&1
    rc=$?
    local out
    out=$(tail -n +"$start" "$log")
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    local summary cases="-" nfail="-" w16="-" w32="-" result
    summary=$(grep '^SUMMARY ' <<<"$out" | tail -1)
    if [ -n "$summary" ]; then
        cases=$(sed -n 's/.* cases=\([0-9]*\).*/\1/p' <<<"$summary")
        nfail=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' <<<"$summary")
        w16=$(sed -n 's/.* worst16=\([^ ]*\).*/\1/p' <<<"$summary")
        w32=$(sed -n 's/.* worst32=\([^ ]*\).*/\1/p' <<<"$summary")
    fi
    # a wgmma that ptxas serialized (C7510-C7515) computes the right numbers slowly: a failure
    if [ $rc = 0 ] && grep -q 'tilec: ptxas: ' <<<"$out"; then
        grep 'tilec: ptxas: ' <<<"$out" | sort | uniq -c | head -5
        rc=3
        echo "FAIL: ptxas reported a performance loss (wgmma serialized)" >>"$log"
    fi
    case $rc in
    0) result=PASS; ran=$((ran + 1)) ;;
    77) result=SKIP ;;
    *) result="FAIL (exit $rc)"; ran=$((ran + 1)); failed=$((failed + 1)) ;;
    esac
    results+=("$name|$cases|$nfail|$w16|$w32|$secs|$result")
    # what went wrong, and the summary, on the console; the whole output in the log
    grep -E 'FAIL|failed|SKIP:|error|Error' <<<"$out" | grep -v '^SUMMARY' | head -25
    [ -n "$summary" ] && echo "$summary"
    echo "-- $name: $result in ${secs}s (log: $log)"
}

for t in test_features test_fp8 test_scan test_softmax test_rmsnorm test_layernorm test_swiglu test_rope \
    test_cross_entropy test_adamw \
    test_matmul test_attention \
    test_attention_bwd test_attention_kvcache test_lineinfo test_random_debug; do
    wanted "$t" || continue
    log="$logs/$t.log"
    # the backward's and the KV cache's share the forward's log, the other language tests
    # test_features' (8 files at most)
    [ "$t" = test_attention_bwd ] || [ "$t" = test_attention_kvcache ] && log="$logs/test_attention.log"
    [ "$t" = test_layernorm ] || [ "$t" = test_swiglu ] || [ "$t" = test_rope ] || [ "$t" = test_cross_entropy ] ||
        [ "$t" = test_adamw ] && log="$logs/test_rmsnorm.log"
    [ "$t" = test_fp8 ] || [ "$t" = test_scan ] || [ "$t" = test_lineinfo ] || [ "$t" = test_random_debug ] &&
        log="$logs/test_features.log"
    prog=$(find_prog "$t" tests/gpu .)
    if [ -z "$prog" ]; then
        results+=("$t|-|-|-|-|-|MISSING")
        failed=$((failed + 1))
        continue
    fi
    args=()
    [ $quick = 1 ] && [ "$t" != test_features ] && [ "$t" != test_fp8 ] && [ "$t" != test_scan ] &&
        [ "$t" != test_random_debug ] && args+=(--quick)
    echo "== $t ${args[*]:-}"
    run_one "$t" "$log" "$prog" "${args[@]}"
    # on Hopper the default is sm_90a (wgmma); the mma.sync path must stay correct too
    if [ "$hopper" = 1 ] && [ "$t" != test_lineinfo ]; then
        echo "== $t ${args[*]:-} (TILEC_ARCH=sm_90)"
        TILEC_ARCH=sm_90 run_one "$t sm_90" "$log" "$prog" "${args[@]}"
    fi
    # fp8 conversions without the fp8 instructions (sm_80's integer code), on this GPU
    if [ "$hopper" = 1 ] && [ "$t" = test_fp8 ]; then
        echo "== $t ${args[*]:-} (TILEC_ARCH=sm_80)"
        TILEC_ARCH=sm_80 run_one "$t sm_80" "$log" "$prog" "${args[@]}"
    fi
    # and the dot kernels with a producer warpgroup (warp specialization), whatever the library picks
    if [ "$hopper" = 1 ] && { [ "$t" = test_matmul ] || [ "$t" = test_attention ] || [ "$t" = test_attention_bwd ]; }; then
        echo "== $t ${args[*]:-} (TILEC_WARP_SPECIALIZE=1)"
        TILEC_WARP_SPECIALIZE=1 run_one "$t ws" "$log" "$prog" "${args[@]}"
    fi
    # and attention as persistent programs wherever they can be (a producer, no packed sequences)
    if [ "$hopper" = 1 ] && [ "$t" = test_attention ]; then
        echo "== $t ${args[*]:-} (TILEC_WARP_SPECIALIZE=1 TILEC_PERSISTENT=1)"
        TILEC_WARP_SPECIALIZE=1 TILEC_PERSISTENT=1 run_one "$t persistent" "$log" "$prog" "${args[@]}"
    fi
done

if wanted examples; then
    for ex in jit_softmax stdlib_rmsnorm stdlib_attention llama_layer aot_softmax; do
        prog=$(find_prog "$ex" examples)
        [ -n "$prog" ] || continue
        exargs=()
        [ "$ex" = llama_layer ] && exargs=(--tiny --check) # one train step against a float64 reference
        echo "== example $ex"
        run_one "example $ex" "$logs/examples.log" "$prog" "${exargs[@]}"
        tail -2 "$logs/examples.log"
    done
fi

# bench/launch_overhead runs once, with the examples (which check that tc_launch stays
# within 1.2x a bare cuLaunchKernel) or with --bench (its figures go in the table).
bench_lines=()
if wanted examples || { [ $bench = 1 ] && wanted bench; }; then
    prog=$(find_prog launch_overhead bench)
    if [ -n "$prog" ]; then
        largs=(10000)
        wanted examples && largs+=(--max-ratio 1.2)
        echo "== bench launch_overhead"
        run_one "bench launch_overhead" "$logs/bench.log" "$prog" "${largs[@]}"
        tail -2 "$logs/bench.log"
        if [ $bench = 1 ]; then
            while IFS= read -r l; do bench_lines+=("$l"); done < <(grep '^launch_overhead:' "$logs/bench.log")
        fi
    fi
fi
if [ $bench = 1 ] && wanted bench; then
    if [ -f "$root/bench/rowwise.py" ]; then
        echo "== bench rowwise.py"
        rargs=(--json "$logs/rowwise.json")
        [ $quick = 1 ] && rargs+=(--quick)
        lib=""
        for c in "$root/lib/libtilec.so.0" "$root/libtilec.so.0"; do [ -f "$c" ] && lib=$c && break; done
        TILEC_LIB="${TILEC_LIB:-$lib}" PYTHONUNBUFFERED=1 run_one "bench rowwise.py" "$logs/bench.log" \
            python3 "$root/bench/rowwise.py" "${rargs[@]}"
        # its table: from the "== rowwise" line to the end
        while IFS= read -r l; do bench_lines+=("$l"); done < <(sed -n '/^== rowwise/,$p' "$logs/bench.log")
    else
        echo "run.sh: no bench/rowwise.py in $root"
    fi
fi

# bench_py WANT SCRIPT MARKER [ARGS...]: runs bench/SCRIPT ARGS (with --quick when given) when --bench and
# `bench` or WANT are wanted; its table (from the MARKER line on) goes to bench.log and to the
# console's table (no JSON, to stay within the files that come back)
bench_py() {
    local want=$1 script=$2 marker=$3
    shift 3 # the rest: the script's arguments
    [ $bench = 1 ] && { wanted bench || wanted "$want"; } || return 0
    if [ ! -f "$root/bench/$script" ]; then
        echo "run.sh: no bench/$script in $root"
        return 0
    fi
    echo "== bench $script"
    local pargs=("$@") lib="" c
    [ $quick = 1 ] && pargs+=(--quick)
    for c in "$root/lib/libtilec.so.0" "$root/libtilec.so.0"; do [ -f "$c" ] && lib=$c && break; done
    TILEC_LIB="${TILEC_LIB:-$lib}" PYTHONUNBUFFERED=1 run_one "bench $script${pargs[0]:+ ${pargs[*]}}" "$logs/bench.log" \
        python3 "$root/bench/$script" "${pargs[@]+"${pargs[@]}"}"
    while IFS= read -r l; do bench_lines+=("$l"); done < <(sed -n "/^$marker/,\$p" "$logs/bench.log" | grep -v '^tilec: ')
}
# tc_matmul against cuBLAS and Triton's tutorial matmul
bench_py bench_matmul matmul.py "== matmul"
# tc_attention_fwd against bench/baselines.py's Triton attention and SDPA (flash, cuDNN)
bench_py bench_attention attention.py "== attention"
# tc_attention_bwd against SDPA's FlashAttention-2 and cuDNN backward passes, after a gradient check
bench_py bench_attention attention.py "== attention backward" --bwd
# tc_attention_kvcache: decode's rate of reading the cache against the copy rate, SDPA flash and cuDNN
bench_py bench_decode decode.py "== decode"
# tc_attention_kvcache on prefill chunks through a paged cache against tc_attention_fwd, contiguous
bench_py bench_decode prefill.py "== chunked prefill"

# ---- the table ----
echo
for l in "${bench_lines[@]+"${bench_lines[@]}"}"; do echo "$l"; done
[ ${#bench_lines[@]} -gt 0 ] && echo
printf '%-24s %6s %6s %10s %10s %8s  %s\n' test cases failed worst16 worst32 seconds result
for r in "${results[@]+"${results[@]}"}"; do
    IFS='|' read -r name cases nfail w16 w32 secs result <<<"$r"
    printf '%-24s %6s %6s %10s %10s %8s  %s\n' "$name" "$cases" "$nfail" "$w16" "$w32" "$secs" "$result"
done
echo "(worst16 / worst32: the largest ||out - ref|| / ||ref|| over f16+bf16 / f32 cases; limits 1e-2 / 1e-5)"
if [ $failed -gt 0 ] || [ $ran -eq 0 ]; then
    echo "run.sh: $failed failed, $ran ran"
    exit 1
fi
echo "run.sh: all $ran passed"
exit 0
