#!/bin/sh
# Replays every input the fuzzers once crashed on (tests/fuzz/regressions/)
# through the tools: each must end with a diagnostic (exit 1) or succeed
# (exit 0), never crash or trip a sanitizer.
#   regressions.sh BUILD_DIR
build=$1
dir=$(dirname "$0")/regressions
status=0
for f in "$dir"/*; do
  case "$f" in
    *.tile) "$build/tilec" --emit=ir "$f" >/dev/null 2>&1 ;;
    *.tir) "$build/tilec-opt" --pass=inline,canonicalize,cse,dce "$f" >/dev/null 2>&1 ;;
    *) continue ;;
  esac
  rc=$?
  if [ $rc -gt 1 ]; then
    echo "FAIL: $f exited with $rc"
    status=1
  else
    echo "ok: $f (exit $rc)"
  fi
done
exit $status
