#!/bin/bash
# The CUDA executor on a real GPU: every kernel against the CPU reference (calibrate
# --selftest), a small calibration whose table loads and is monotone enough to use, and a short
# validation stored in SQLite. Skips (exit 77) with one line when this build has no CUDA
# executor or the machine has no GPU.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

if ! "$S" calibrate --model llama-2-7b --selftest >selftest.out 2>selftest.err; then
    if grep -Eq 'no CUDA GPU found|no GPU executor in this build|--gpu-index' selftest.err; then
        echo "SKIP: $(head -1 selftest.err)"
        exit 77
    fi
    fail "self-test failed: $(cat selftest.err)"
fi
grep -q 'WRONG' selftest.err && fail "self-test: $(cat selftest.err)"
for k in embed norm qkv_gemm rope attn_prefill attn_prefill_gemm attn_decode attn_decode_1block \
         attn_prefill_hd128 attn_decode_hd128 o_proj_gemm \
         residual mlp_up_gemm silu_mul mlp_down_gemm lm_head_gemm timer; do
    grep -Eq "^selftest $k .* ok$" selftest.err || fail "self-test did not check $k: $(cat selftest.err)"
done
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" cat/ || fail "catalog copy"
"$S" calibrate --model llama-2-7b --ops qkv,attn_decode,norm --reps 5 --warmup 2 --profiles cat \
    -o tab --no-selftest -q >report || fail "calibrate on the GPU failed"
TAB=tab/llama-2-7b-tp1.csv
grep -q '^# device: ' "$TAB" || fail "no device metadata"
grep -Eq '^# tool: .*timer (cupti|events)' "$TAB" || fail "no timer metadata"
grep -v '^#' "$TAB" | tail -n +2 | awk -F, '$16 <= 0 || $17 > $16 || $18 < $16 {bad=1} END {exit bad}' ||
    fail "median/min/p90 out of order in $TAB"
# a GEMM over 4096 tokens takes longer than over 1 token
t1=$(awk -F, '$1 == "qkv" && $12 == 1 {print $16}' "$TAB")
t4k=$(awk -F, '$1 == "qkv" && $12 == 4096 {print $16}' "$TAB")
awk -v a="$t1" -v b="$t4k" 'BEGIN {exit !(b > 4 * a)}' || fail "qkv 4096 tokens ($t4k us) vs 1 ($t1 us)"
"$S" validate --model llama-2-7b --limit 8 --iters 12 --reps 2 --profiles cat --db v.db -q \
    >val.txt || fail "validate on the GPU failed"
[ "$(sql v.db 'SELECT count(*) FROM validation_iters')" = 12 ] || fail "validation rows"
[ "$(sql v.db 'SELECT min(measured_ms) > 0 FROM validation_iters')" = 1 ] || fail "measured times"
echo "gpu_exec: ok"
cat selftest.err report val.txt
