#!/usr/bin/env bash
# Installs a build into a fresh prefix as a user would (`cmake --install`) and
# checks what lands there, then builds and runs a small consumer program
# against it twice: with CMake's find_package(tilec), and with pkg-config.
#
#   tests/install/run.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$2
src=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

fail() { echo "install: FAIL: $*"; exit 1; }
libdir=
for d in "$prefix"/lib "$prefix"/lib64 "$prefix"/lib/*-linux-gnu; do
  if [ -z "$libdir" ] && [ -e "$d/libtilec.so" ]; then libdir=${d#"$prefix"/}; fi
done
[ -n "$libdir" ] || fail "no libtilec.so under $prefix/lib"
for f in bin/tilec bin/tilec-opt "$libdir/libtilec.so" "$libdir/libtilec.so.0" include/tilec/tilec.h \
         include/tilec/runtime.h include/tilec/stdlib.h include/tilec/aot.h share/tilec/lib/softmax.tile \
         share/tilec/lib/attention.tile share/tilec/docs/language.md "$libdir/cmake/tilec/tilecConfig.cmake" \
         "$libdir/cmake/tilec/tilecConfigVersion.cmake" "$libdir/pkgconfig/tilec.pc"; do
  [ -e "$prefix/$f" ] || fail "$f is not installed"
done
[ -L "$prefix/$libdir/libtilec.so" ] && [ -L "$prefix/$libdir/libtilec.so.0" ] || fail "soname links missing"
for d in tests bench examples; do
  [ ! -e "$prefix/$d" ] || fail "a plain install must not create $d/"
done
"$prefix/bin/tilec" --version | grep -q '^tilec ' || fail "the installed tilec does not run"

# find_package(tilec)
cmake -S "$src/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$prefix/$libdir" "$work/cmake-build/consumer" "$(cat "$work/cmake-build/tile_dir.txt")"

# pkg-config
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pkg-config --exists 'tilec >= 0.1' || fail "pkg-config does not find tilec"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/pc-consumer" "$src/consumer/main.c" $(pkg-config --cflags --libs tilec)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir tilec)" "$work/pc-consumer" "$(pkg-config --variable=tiledir tilec)"
echo "install: ok ($prefix)"
