#!/bin/sh
# roundtrip.sh FILE — checks that the IR text form round-trips.
#
# Prints FILE with tilec-opt (parse, verify, print), prints that output
# again, and fails unless both prints are byte for byte equal; on success
# the (first) printed text goes to stdout for FileCheck. lit uses it as
# %roundtrip. tilec-opt is found on PATH (lit puts the build directory
# there) unless TILEC_OPT names it.
set -eu
opt=${TILEC_OPT:-tilec-opt}
if [ $# -ne 1 ]; then
    echo "usage: roundtrip.sh FILE" >&2
    exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/roundtrip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$opt" "$1" > "$tmp/a"
"$opt" "$tmp/a" > "$tmp/b"
if ! cmp -s "$tmp/a" "$tmp/b"; then
    echo "roundtrip.sh: printing $1 is not idempotent:" >&2
    diff "$tmp/a" "$tmp/b" >&2 || true
    exit 1
fi
cat "$tmp/a"
