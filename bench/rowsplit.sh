#!/bin/sh
# Long rows: one program a row against a row split over a thread-block cluster of 8 (the kernels'
# CLUSTER constexpr: softmax and RMSNorm forward and backward, cross-entropy), with `tilec tune` on
# the GPU (cold L2 before each launch, median of 20), the alignment facts the library passes for
# rows on 16-byte boundaries (`--divisible`: without them every load is scalar), and a copy kernel
# of the same bytes for the ratio. For each kernel and shape it prints how many configurations
# were timed and the best configuration of each kind (CLUSTER 1, CLUSTER 8).
#
#   bench/rowsplit.sh [TILEC]     (default: the bundle's bin/tilec, or build/tilec)
#
# ROWSPLIT_SHAPES (DTYPE:ROWS:COLS, space-separated) replaces the shapes timed.
#
# The library's sources have no CLUSTER axis in their @autotune clauses (the entry points choose
# the split themselves: stdlib/rowwise.c, row_cluster()); this script times copies of them with
# `CLUSTER = [1, 8]` added, in a temporary folder, and launches CLUSTER programs a row.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prog=rowsplit.sh
. "$here/tilec_paths.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEC_CACHE_DIR="$work/cache"

# the kernels with a CLUSTER axis: the first @autotune clause of each kernel named below
split() { # file kernel (an awk regular expression)
    awk -v k="$2" '
        /^@autotune\(/ { n = 0 }
        /^@autotune\(/ || n > 0 {
            held[++n] = $0
            if ($0 !~ /^kernel /)
                next
            if ($0 ~ "^kernel " k "\\(")
                sub(/key = \[[^]]*\], /, "&CLUSTER = [1, 8], ", held[1])
            for (i = 1; i <= n; i++)
                print held[i]
            n = 0
            next
        }
        { print }' "$lib/$1" >"$work/$1"
}
split softmax.tile 'softmax_(fwd|bwd)'
split rmsnorm.tile 'rmsnorm_(fwd|bwd)'
split cross_entropy.tile ce_row
cat >"$work/copy.tile" <<'EOF'
@autotune(key = [n], BLOCK = [2048, 4096, 8192], num_warps = [4, 8])
kernel copy(T* out, const T* x, i64 n, constexpr dtype T = f16, constexpr i32 BLOCK = 4096) {
    let o = i64(program_id(0)) * BLOCK + i64(arange(0, BLOCK));
    store(out + o, load(x + o, o < n, 0), o < n);
}
EOF

# tilec tune's verbose list, fastest first: the count of configurations timed, then the best line
# of each kind; a failed tune prints its error
tune() { # label, then tilec tune arguments
    label=$1
    shift
    echo "== $label"
    if ! "$tilec" tune "$@" --force --verbose --reps 20 >"$work/out" 2>&1; then
        sed 's/^/   failed: /' "$work/out"
        return 0
    fi
    sed -n '2p' "$work/out"
    if grep -q 'CLUSTER=' "$work/out"; then
        grep -m1 '^  .*CLUSTER=1,' "$work/out" || echo "   no CLUSTER=1 configuration timed"
        grep -m1 '^  .*CLUSTER=8,' "$work/out" || echo "   no CLUSTER=8 configuration timed"
    else
        sed -n '3p' "$work/out"
    fi
}
shapes=${ROWSPLIT_SHAPES:-f16:1024:131072 bf16:2048:128256 f16:512:262144 bf16:4096:65544 f16:4096:50257 bf16:4096:32000}
for shape in $shapes; do
    IFS=: read -r t rows cols <<EOF
$shape
EOF
    stride=$(((cols + 7) / 8 * 8)) # rows on 16-byte boundaries, as the tensors users pad
    b=$((rows * stride * 2))
    f="--divisible n_cols=8"
    [ $((cols % 8)) -eq 0 ] || f=""
    tune "copy $t ${rows}x$cols" "$work/copy.tile" --kernel copy -D T="$t" --arg out=buffer:$b --arg x=buffer:$b \
        --arg n=$((rows * stride)) --grid 'cdiv(n, BLOCK)'
    tune "softmax_fwd $t ${rows}x$cols" "$work/softmax.tile" --kernel softmax_fwd -D T="$t" -D SINGLE_TILE=false \
        --arg out=buffer:$b --arg x=buffer:$b --arg stride_out=$stride --arg stride_x=$stride --arg n_cols=$cols \
        --divisible stride_out=8 --divisible stride_x=8 $f --grid "$rows * CLUSTER"
    tune "softmax_bwd $t ${rows}x$cols" "$work/softmax.tile" --kernel softmax_bwd -D T="$t" --arg dx=buffer:$b \
        --arg y=buffer:$b --arg dy=buffer:$b --arg stride_dx=$stride --arg stride_y=$stride --arg stride_dy=$stride \
        --arg n_cols=$cols --divisible stride_dx=8 --divisible stride_y=8 --divisible stride_dy=8 $f \
        --grid "$rows * CLUSTER"
    tune "rmsnorm_fwd $t ${rows}x$cols" "$work/rmsnorm.tile" --kernel rmsnorm_fwd -D T="$t" -D SINGLE_TILE=false \
        --arg y=buffer:$b --arg rstd=buffer:$((rows * 4)) --arg x=buffer:$b --arg weight=buffer:$((stride * 2)) \
        --arg stride_y=$stride --arg stride_x=$stride --arg n_cols=$cols --arg eps=1e-6 --divisible stride_y=8 \
        --divisible stride_x=8 $f --grid "$rows * CLUSTER"
    tune "rmsnorm_bwd $t ${rows}x$cols" "$work/rmsnorm.tile" --kernel rmsnorm_bwd -D T="$t" --arg dx=buffer:$b \
        --arg dweight=buffer:$((stride * 4)) --arg dy=buffer:$b --arg x=buffer:$b --arg weight=buffer:$((stride * 2)) \
        --arg rstd=buffer:$((rows * 4)) --arg stride_dx=$stride --arg stride_dy=$stride --arg stride_x=$stride \
        --arg n_cols=$cols --divisible stride_dx=8 --divisible stride_dy=8 --divisible stride_x=8 $f \
        --grid "$rows * CLUSTER"
    # cross-entropy, the gradient written over the logits (same:logits) as the library does when
    # asked; tilec tune fills the i32 labels with 0..7 (every row valid) and count with random
    # floats (gradients of no meaning, the same work)
    tune "ce_row $t ${rows}x$cols" "$work/cross_entropy.tile" --kernel ce_row -D T="$t" -D L=i32 \
        --arg logits=buffer:$b --arg dlogits=same:logits --arg losses=buffer:$((rows * 4)) \
        --arg lse_out=buffer:$((rows * 4)) --arg labels=buffer:$((rows * 4)) --arg count=buffer:4 \
        --arg stride_x=$stride --arg stride_d=$stride --arg vocab=$cols --arg ignore_index=-100 --arg smoothing=0 \
        --arg z=0 --arg grad_scale=1 --divisible stride_x=8 --divisible stride_d=8 $(echo "$f" | sed 's/n_cols/vocab/') \
        --grid "$rows * CLUSTER"
done
