#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time,
# seeded with every test input of the repository.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS
#
# fuzz_frontend: .tile sources (lib/, tests/lit/**/*.tile)
# fuzz_ir:       IR text (tests/lit/**/*.tir)
# fuzz_cache:    JIT disk cache entries (seeds: real entries that fuzz_cache
#                itself writes with rt_cache_encode, TILEC_FUZZ_CACHE_SEEDS)
# fuzz_tune_table: the autotuner's tuning tables (seeds: valid tables that
#                fuzz_tune_table itself writes, TILEC_FUZZ_TUNE_SEEDS, and lib/tuning.tsv)
# A crash, a leak, a sanitizer report or a timeout fails the run; the input that
# caused it is left in BUILD_DIR/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-fuzz}
seconds=${2:-60}
cc=/usr/lib/llvm-19/bin/clang
cxx=/usr/lib/llvm-19/bin/clang++
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=$cc -DCMAKE_CXX_COMPILER=$cxx -DTILEC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_frontend fuzz_ir fuzz_cache fuzz_tune_table

run() { # name, corpus seeds...
  local name=$1; shift
  local corpus="$build/corpus-$name"
  mkdir -p "$corpus" "$build/artifacts"
  for f in "$@"; do cp "$f" "$corpus/" 2>/dev/null || true; done
  echo "fuzz: $name for ${seconds}s from $(ls "$corpus" | wc -l) seeds"
  ASAN_OPTIONS=detect_leaks=1 "$build/tests/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$corpus" 2>&1 | tail -n 12
}
# Deep and long seeds (func chains past the call-depth limit, calls inside deep
# expressions, let chains, long sums, many kernels; IR call chains, call DAGs
# and nested loops in funcs), each under -max_len, for mutations to start from.
deep="$build/seeds-deep"
mkdir -p "$deep"
gen() { python3 tests/fuzz/gen_deep.py "$1" "$2" "$deep/$1-$2.$3"; }
gen func-chain 300 tile; gen func-work 260 tile; gen deep-calls 80 tile; gen let-chain 2000 tile
gen long-expr 300 tile; gen kernels 1000 tile
gen ir-chain 400 tir; gen ir-dag 24 tir; gen ir-loops 260 tir
shopt -s globstar nullglob
run fuzz_frontend lib/*.tile tests/lit/**/*.tile tests/fuzz/regressions/*.tile "$deep"/*.tile
run fuzz_ir tests/lit/**/*.tir tests/fuzz/regressions/*.tir "$deep"/*.tir
mkdir -p "$build/corpus-fuzz_cache"
TILEC_FUZZ_CACHE_SEEDS="$build/corpus-fuzz_cache" "$build/tests/fuzz_cache" -runs=0 "$build/corpus-fuzz_cache" >/dev/null 2>&1
run fuzz_cache
mkdir -p "$build/corpus-fuzz_tune_table"
TILEC_FUZZ_TUNE_SEEDS="$build/corpus-fuzz_tune_table" "$build/tests/fuzz_tune_table" -runs=0 \
  "$build/corpus-fuzz_tune_table" >/dev/null 2>&1
run fuzz_tune_table lib/tuning.tsv
echo "fuzz: no crash"
