#!/usr/bin/env bash
# tilec's set-up script.
#
#   ./build.sh          install what is missing, build, and compile every kernel
#                       of lib/ (one line per kernel: name, output size, milliseconds)
#   ./build.sh test     install what is missing, build, and run every test
#
# Environment: BUILD_DIR (default build), TILEC_SANITIZE=1 for an ASan+UBSan
# build, TILEC_SANITIZE=thread for a ThreadSanitizer build (test mode then
# builds and runs the thread tests, CTest's label "threads"),
# TILEC_FUZZ_SECONDS=N to also run each fuzzer for N seconds (test mode).
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-main}
build=${BUILD_DIR:-build}
sanitize=${TILEC_SANITIZE:-0}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v python3 >/dev/null || need+=(python3)
command -v pkg-config >/dev/null || need+=(pkgconf)
[ -x /usr/lib/llvm-19/bin/llvm-config ] || need+=(llvm-19-dev)
[ -x /usr/lib/llvm-19/bin/FileCheck ] || need+=(llvm-19-tools)
command -v flex >/dev/null || need+=(flex)
command -v bison >/dev/null || need+=(bison)
[ -f /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
if [ "${TILEC_FUZZ_SECONDS:-0}" != 0 ]; then
  [ -x /usr/lib/llvm-19/bin/clang ] || need+=(clang-19)
  ls /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-19-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "build.sh: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
targets=()
case "$sanitize" in
  0) ;;
  1) cmake_args+=(-DTILEC_SANITIZE=ON) ;;
  thread) cmake_args+=(-DTILEC_TSAN=ON); targets=(--target tilec-unit fake_libcuda) ;;
  *) echo "build.sh: TILEC_SANITIZE must be 0, 1 or thread" >&2; exit 2 ;;
esac
cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" "${targets[@]}"

case "$mode" in
  main)
    "$build/tilec" --emit=ptx --time lib/*.tile
    ;;
  test)
    if [ "$sanitize" = thread ]; then
      TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" ctest --test-dir "$build" --output-on-failure -L threads
      exit
    fi
    ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
    if [ "${TILEC_FUZZ_SECONDS:-0}" != 0 ]; then
      tests/fuzz/run.sh "$build-fuzz" "$TILEC_FUZZ_SECONDS"
    fi
    ;;
  *)
    echo "usage: ./build.sh [test]" >&2
    exit 2
    ;;
esac
