#!/bin/sh
# roundtrip.sh [OPTION...] FILE — checks that the IR text form round-trips.
#
# Prints FILE with tilec-opt (parse, verify, print), prints that output
# again, and fails unless both prints are byte for byte equal; on success
# the (first) printed text goes to stdout for FileCheck. The OPTIONs go to
# both tilec-opt runs (-g: print with locations). lit uses it as
# %roundtrip. tilec-opt is found on PATH (lit puts the build directory
# there) unless TILEC_OPT names it.
set -eu
opt=${TILEC_OPT:-tilec-opt}
if [ $# -lt 1 ]; then
    echo "usage: roundtrip.sh [OPTION...] FILE" >&2
    exit 2
fi
opts=
while [ $# -gt 1 ]; do
    opts="$opts $1"
    shift
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/roundtrip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# $opts unquoted on purpose: one word per option
"$opt" $opts "$1" > "$tmp/a"
"$opt" $opts "$tmp/a" > "$tmp/b"
if ! cmp -s "$tmp/a" "$tmp/b"; then
    echo "roundtrip.sh: printing $1 is not idempotent:" >&2
    diff "$tmp/a" "$tmp/b" >&2 || true
    exit 1
fi
cat "$tmp/a"
