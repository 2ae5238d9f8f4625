#!/bin/sh
# Runs generated deep and long inputs (tests/fuzz/gen_deep.py) through the
# tools: each must end in its expected way (exit 0, or exit 1 with the named
# error) within a time bound, never crash or run on.
#   deep.sh BUILD_DIR
build=$1
gen="python3 $(dirname "$0")/gen_deep.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
# check NAME EXPECTED_EXIT PATTERN SECONDS COMMAND...
check() {
  name=$1 want=$2 pattern=$3 limit=$4
  shift 4
  start=$(date +%s)
  timeout "$limit" "$@" >"$tmp/out" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  if [ $rc -ne "$want" ]; then
    echo "FAIL: $name exited with $rc (want $want) after ${took}s"; tail -5 "$tmp/out"; status=1
  elif [ -n "$pattern" ] && ! grep -q "$pattern" "$tmp/out"; then
    echo "FAIL: $name: no '$pattern' in the output"; tail -5 "$tmp/out"; status=1
  else
    echo "ok: $name (exit $rc, ${took}s)"
  fi
}
$gen func-chain 10000 "$tmp/func-chain.tile"
check "10,000 chained funcs" 1 "error: calls nested too deeply" 20 "$build/tilec" --emit=ir "$tmp/func-chain.tile"
$gen func-work 256 "$tmp/func-work.tile"
check "256 nested calls" 0 "" 20 "$build/tilec" --emit=ptx "$tmp/func-work.tile"
$gen deep-calls 300 "$tmp/deep-calls.tile"
check "300 nested calls in 250-deep expressions" 1 "error: calls" 20 "$build/tilec" --emit=ir "$tmp/deep-calls.tile"
$gen let-chain 100000 "$tmp/let-chain.tile"
check "100,000 lets" 0 "" 30 "$build/tilec" --emit=ptx "$tmp/let-chain.tile"
$gen lets-and-ifs 20000 "$tmp/lets-and-ifs.tile"
check "20,000 lets, 4,000 ifs and 4,000 loops" 0 "" 20 "$build/tilec" --emit=ir "$tmp/lets-and-ifs.tile"
$gen long-expr 100000 "$tmp/long-expr.tile"
check "a 100,000-term sum" 1 "error: nesting too deep" 20 "$build/tilec" --emit=ir "$tmp/long-expr.tile"
$gen ir-chain 5000 "$tmp/ir-chain.tir"
check "5,000 chained IR funcs" 0 "" 20 "$build/tilec-opt" --pass=inline,canonicalize,cse,dce "$tmp/ir-chain.tir"
exit $status
