# tilec_paths.sh — sourced by the bench shell scripts: sets $tilec (the first argument of the
# script, else the bundle's bin/tilec, build/tilec or gpu-bundle/bin/tilec next to bench/) and
# $lib (the installed share/tilec/lib, else the source tree's lib/). Needs $here (bench/) and
# $prog (the script's name, for the message).
tilec=${1:-}
for t in "$here/../bin/tilec" "$here/../build/tilec" "$here/../gpu-bundle/bin/tilec"; do
    [ -z "$tilec" ] && [ -x "$t" ] && tilec=$t
done
[ -n "$tilec" ] || { echo "$prog: no tilec binary found; pass its path" >&2; exit 1; }
lib="$here/../share/tilec/lib"
[ -d "$lib" ] || lib="$here/../lib"
