#!/usr/bin/env bash
# The layers of tilec look down only (docs/design.md, "Layers"):
#
#   base  <-  ir  <-  frontend, target  <-  passes  <-  codegen, interp  <-  driver  <-  runtime  <-  stdlib  <-  tools
#
# Every #include "folder/..." in a layer's .c and .h files must name the
# layer itself, a layer below it, or the public API (include/tilec/, which
# every layer may use). frontend and target are side by side: neither
# includes the other, nor do codegen and interp. A file's own folder may be included without a path
# ("x.h"). runtime and stdlib use the compiler only through the public API:
# they include nothing of ir, frontend, target, passes or codegen, and of
# driver only kernel_meta.h, the kernel metadata and the bridge to
# tc_compile, which itself uses nothing but the public API (base, under
# everything, holds the last error and byte buffers).
# tools use only the public API. This script lists every include that
# breaks the rule and fails if there is one, except the ones listed in
# tests/layering/exceptions.txt, each a known debt: that list may only
# shrink (an exception that no longer occurs fails the check too, so that
# it is removed from the list).
#
#   tests/layering/check.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/../..}"
rank() {
  case $1 in
    base) echo -1 ;; ir) echo 0 ;; frontend | target) echo 1 ;; passes) echo 2 ;; codegen | interp) echo 3 ;; driver) echo 4 ;;
    runtime) echo 5 ;; stdlib) echo 6 ;; tools) echo 7 ;; *) echo "" ;;
  esac
}
exceptions=tests/layering/exceptions.txt
bad=0
checked=0
seen=()
for layer in base ir frontend target passes codegen interp driver runtime stdlib tools; do
  [ -d "$layer" ] || continue
  mine=$(rank "$layer")
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
    checked=$((checked + 1))
    case $inc in
      tilec/*) continue ;;                    # the public API
      */*) dir=${inc%%/*} ;;
      *) continue ;;                          # same folder
    esac
    [ "$dir" = .. ] && dir=$(cut -d/ -f2 <<<"$inc")
    theirs=$(rank "$dir")
    compiler=0
    case $layer:$inc in
      runtime:driver/kernel_meta.h | stdlib:driver/kernel_meta.h) ;;
      runtime:* | stdlib:*) [ "$theirs" -ge 0 ] && [ "$theirs" -le 4 ] && compiler=1 ;;
    esac
    if [ "$layer" = tools ] || [ -z "$theirs" ] || [ $compiler = 1 ] ||
       { [ "$dir" != "$layer" ] && [ "$theirs" -ge "$mine" ]; }; then
      if grep -qxF "$file $inc" "$exceptions"; then
        seen+=("$file $inc")
      else
        echo "layering: $file includes \"$inc\": $layer may not include $dir"
        bad=1
      fi
    fi
  done < <(grep -rHn --include='*.c' --include='*.h' '^#include "' "$layer" | grep -v '"[a-z_]*\.def"' || true)
done
while IFS= read -r e; do
  case $e in '' | '#'*) continue ;; esac
  found=0
  for x in "${seen[@]}"; do [ "$x" = "$e" ] && found=1; done
  if [ $found = 0 ]; then
    echo "layering: exceptions.txt lists \"$e\", which no longer occurs: remove it"
    bad=1
  fi
done <"$exceptions"
[ $bad = 0 ] && echo "layering: ok ($checked includes checked, ${#seen[@]} known exceptions)"
exit $bad
