#!/usr/bin/env bash
# Compile time and peak memory of tilec against source size, for generated
# sources of the shapes that stress the front end and the passes
# (tests/fuzz/gen_deep.py): one markdown table row per input.
#
#   bench/scaling.sh [BUILD_DIR]      (default build)
#
# Columns: shape, N (its size parameter), source bytes, exit status, wall
# seconds and peak resident memory (/usr/bin/time -v) of
# `tilec --emit=ptx` (tilec-opt --pass=inline,canonicalize,cse,dce for IR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| shape | N | source | exit | time (s) | peak memory |"
echo "|---|---:|---:|---:|---:|---:|"
row() { # shape n
  local shape=$1 n=$2 ext=tile
  [[ $shape == ir-* ]] && ext=tir
  local f="$tmp/$shape-$n.$ext"
  python3 tests/fuzz/gen_deep.py "$shape" "$n" "$f"
  local cmd=("$build/tilec" --emit=ptx "$f")
  [ $ext = tir ] && cmd=("$build/tilec-opt" --pass=inline,canonicalize,cse,dce "$f")
  local rc=0
  /usr/bin/time -v -o "$tmp/time" "${cmd[@]}" >/dev/null 2>"$tmp/err" || rc=$?
  local wall kb
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time" | awk -F: '{print $(NF-1)*60 + $NF}')
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
  printf "| %s | %s | %s KB | %s | %.2f | %s MB |\n" "$shape" "$n" "$(( ($(wc -c <"$f") + 1023) / 1024 ))" \
    "$rc" "$wall" "$(( kb / 1024 ))"
}
for n in 30 256 300 3000 10000; do row func-chain $n; done
for n in 30 256 1000 5000; do row func-work $n; done
for n in 50 500 5000 25000 50000; do row let-chain $n; done
for n in 100 256 10000 100000; do row long-expr $n; done
for n in 30 300 3000 20000; do row kernels $n; done
for n in 10 100 1000 5000 10000; do row ir-chain $n; done
