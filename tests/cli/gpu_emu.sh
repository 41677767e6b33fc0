#!/bin/bash
# The CUDA executor's own code (kernels.cu, exec_cuda.c, cu_timer.c) on cuemu, the CPU stand-in
# for the GPU and CUDA's libraries (src/exec/cuda/emu): every kernel against the CPU reference with
# either timer (CUPTI records, CUDA events), the no-GPU message, a calibration of a small model
# (resumed after a stop), a peer copy between two emulated GPUs, and a validation of every
# operator kind stored in SQLite, of a mixture of experts and of a TP 2 shard. Kernels run in
# host memory, so the sanitizer build checks every access they make. Emulated times only grow
# with the work; nothing here measures a GPU.
# Skips (77) where cuemu is not built (no CUDA headers or no C++ compiler).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
if [ -z "${SS_CUEMU_MODULE:-}" ] || [ ! -f "$SS_CUEMU_MODULE" ]; then
    echo "SKIP: cuemu is not built here (it needs CUDA's headers and a C++ compiler)"
    exit 77
fi
export SLICESIM_CUDA_MODULE=$SS_CUEMU_MODULE
unset CUEMU_DEVICES CUEMU_CUPTI
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" cat/ || fail "catalog copy"
cat >cat/models/tiny-test.ini <<'INI'
; A small decoder (GQA, gated MLP) that the CPU emulation runs in seconds.
[model]
name = tiny-test
description = tiny test decoder
layers = 2
hidden = 256
heads = 4
kv_heads = 2
head_dim = 64
ffn = 512
vocab = 1000
experts = 0
top_k = 0
max_context = 4096
dtype = bf16
gated_mlp = true
tied_embeddings = false
INI

# every kernel against the CPU reference, timed through CUPTI records, then through events
check_selftest() {
    for k in embed norm qkv_gemm rope attn_prefill attn_prefill_gemm attn_decode \
             attn_decode_1block attn_prefill_hd128 attn_decode_hd128 o_proj_gemm residual \
             mlp_up_gemm silu_mul mlp_down_gemm lm_head_gemm timer; do
        grep -Eq "^selftest $k .* ok$" "$1" || fail "self-test did not pass $k: $(cat "$1")"
    done
}
"$S" calibrate --model tiny-test --profiles cat --selftest 2>st.err || fail "self-test: $(cat st.err)"
check_selftest st.err
grep -q 'timer cupti' st.err || fail "CUPTI timer not used: $(cat st.err)"
CUEMU_CUPTI=0 "$S" calibrate --model tiny-test --profiles cat --selftest 2>st2.err ||
    fail "self-test with events: $(cat st2.err)"
check_selftest st2.err
grep -q 'timer events' st2.err || fail "events timer not used: $(cat st2.err)"
grep -q 'warning: CUPTI unavailable' st2.err || fail "no CUPTI warning: $(cat st2.err)"

# no GPU: one clear line, exit 1
CUEMU_DEVICES=0 expect_error 1 'no CUDA GPU found' \
    "$S" calibrate --model tiny-test --gpu h200 --profiles cat -o none -q
# no NVIDIA driver at all (the runtime says "insufficient driver"): said so, not a driver upgrade
CUEMU_DRIVER=0 expect_error 1 '^slicesim: calibrate: nothing measured: no CUDA GPU found: this machine has no NVIDIA driver \(cudaDriverGetVersion gives 0\)' \
    "$S" calibrate --model tiny-test --gpu h200 --profiles cat -o none -q

# a calibration of the non-attention operators (the validation below runs every kind; o_proj
# and the MLP GEMMs take qkv's path, and cost the sanitizer build most)
OPS=embed,norm,qkv,rope,residual,act,lm_head
"$S" calibrate --model tiny-test --gpu h200 --ops $OPS --reps 2 --warmup 0 --profiles cat \
    -o whole --no-selftest -q >whole.txt || fail "calibrate on cuemu: $(cat whole.txt)"
TAB=whole/tiny-test-tp1.csv
grep -q '^# device: cuemu 0' "$TAB" || fail "no device metadata"
grep -Eq '^# tool: .*timer cupti' "$TAB" || fail "no timer metadata"
for k in k_rmsnorm k_embed k_rope k_add k_silu_mul cuemu_gemm; do
    grep -q "slicesim-calibrate:cupti:$k\$" "$TAB" || fail "no row names kernel $k"
done
grep -v '^#' "$TAB" | tail -n +2 | awk -F, '$16 <= 0 || $17 > $16 || $18 < $16 {bad=1} END {exit bad}' ||
    fail "median/min/p90 out of order in $TAB"
t1=$(awk -F, '$1 == "qkv" && $12 == 1 {print $16}' "$TAB")
t4k=$(awk -F, '$1 == "qkv" && $12 == 4096 {print $16}' "$TAB")
awk -v a="$t1" -v b="$t4k" 'BEGIN {exit !(a > 0 && b > 4 * a)}' || fail "qkv 4096 tokens ($t4k us) vs 1 ($t1 us)"
# stopped after 10 points and resumed, it gives the rows of the uninterrupted run
rows() { grep -v '^#' "$1" | awk -F, '$1 == "norm" || $1 == "rope" || $1 == "act"' | sort; }
"$S" calibrate --model tiny-test --gpu h200 --ops norm,rope,act --reps 2 --warmup 0 --profiles cat \
    -o part --no-selftest -q --limit-points 10 >/dev/null 2>part.err && fail "--limit-points 10 did not stop"
[ -f part/tiny-test-tp1.csv.partial ] || fail "no partial table: $(cat part.err)"
"$S" calibrate --model tiny-test --gpu h200 --ops norm,rope,act --reps 2 --warmup 0 --profiles cat \
    -o part --no-selftest -q >/dev/null 2>part2.err || fail "resume: $(cat part2.err)"
[ ! -f part/tiny-test-tp1.csv.partial ] || fail "the partial table was left behind"
[ "$(rows part/tiny-test-tp1.csv | wc -l)" -eq 39 ] || fail "resumed table: $(rows part/tiny-test-tp1.csv | wc -l) rows, want 39"
diff <(rows "$TAB") <(rows part/tiny-test-tp1.csv) >/dev/null ||
    fail "the resumed table differs from the uninterrupted one"

# a peer copy between two emulated GPUs
CUEMU_DEVICES=2 "$S" calibrate --model tiny-test --gpu h200 --ops pp_send --reps 2 --warmup 1 \
    --profiles cat -o peer --no-selftest -q >/dev/null 2>peer.err || fail "pp_send: $(cat peer.err)"
grep -q 'pp_send,.*,slicesim-calibrate:cupti:memcpy_peer$' peer/tiny-test-tp1.csv ||
    fail "pp_send was not a peer copy"

# a validation runs every operator kind of 12 iterations (prefill and decode) and stores them
printf 'request_id,arrival_s,tenant,prompt_tokens,output_tokens\n0,0.00,default,120,6\n1,0.01,default,37,9\n2,0.02,default,200,4\n3,0.03,default,64,8\n4,0.04,default,90,5\n5,0.05,default,18,7\n' >tiny.csv
"$S" validate --model tiny-test --gpu h200 --trace tiny.csv --limit 6 --iters 12 --reps 1 \
    --profiles cat --db v.db -q >val.txt 2>val.err || fail "validate on cuemu: $(cat val.err)"
[ "$(sql v.db 'SELECT count(*) FROM validation_iters')" = 12 ] || fail "validation rows"
[ "$(sql v.db 'SELECT min(measured_ms) > 0 FROM validation_iters')" = 1 ] || fail "measured times"
for k in embed norm qkv rope attn_prefill attn_decode o_proj residual mlp_up act mlp_down \
         final_norm lm_head; do
    [ "$(sql v.db "SELECT count(*) FROM validation_ops WHERE op = '$k' AND executions > 0 AND measured_ms > 0")" = 1 ] ||
        fail "validation did not run $k: $(cat val.txt)"
done
# a mixture of experts (router and expert GEMMs), and one TP rank's shard of the small model
sed -e 's/tiny-test/tiny-moe/' -e 's/^experts = 0/experts = 4/' -e 's/^top_k = 0/top_k = 2/' \
    cat/models/tiny-test.ini >cat/models/tiny-moe.ini
"$S" validate --model tiny-moe --gpu h200 --trace tiny.csv --limit 6 --iters 8 --reps 1 \
    --profiles cat --db v.db -q >/dev/null 2>moe.err || fail "validate MoE on cuemu: $(cat moe.err)"
[ "$(sql v.db "SELECT count(*) FROM validation_ops JOIN validations USING (validation_id) WHERE model = 'tiny-moe' AND op IN ('moe_router', 'mlp_up', 'mlp_down') AND executions = 16 AND validation_ops.measured_ms > 0")" = 3 ] ||
    fail "MoE operators not run: $(sql v.db "SELECT group_concat(op || ':' || executions) FROM validation_ops JOIN validations USING (validation_id) WHERE model = 'tiny-moe'")"
"$S" validate --model tiny-test --tp 2 --gpu h200 --trace tiny.csv --limit 6 --iters 8 --reps 1 \
    --profiles cat --db v.db -q >/dev/null 2>tp2.err || fail "validate TP 2 on cuemu: $(cat tp2.err)"
[ "$(sql v.db "SELECT count(*) FROM validation_iters JOIN validations USING (validation_id) WHERE tp = 2 AND validation_iters.measured_ms > 0")" = 8 ] ||
    fail "TP 2 iterations not run"
# SS_CUEMU_FULL=1: the whole quick attention grid of a head dimension 128 model, the largest
# shapes a calibration gives the kernels (prefill 4096 over 4096 cached, decode 256 x 4096);
# minutes in the optimised build, tens of minutes under the sanitizers
if [ "${SS_CUEMU_FULL:-0}" = 1 ]; then
    sed -e 's/tiny-test/tiny-hd128/' -e 's/^heads = 4/heads = 2/' -e 's/^kv_heads = 2/kv_heads = 1/' \
        -e 's/^head_dim = 64/head_dim = 128/' cat/models/tiny-test.ini >cat/models/tiny-hd128.ini
    "$S" calibrate --model tiny-hd128 --gpu h200 --ops attn_prefill,attn_decode --reps 1 \
        --warmup 0 --profiles cat -o full --no-selftest -q >/dev/null 2>full.err ||
        fail "the attention grid on cuemu: $(cat full.err)"
    [ "$(grep -c '^attn_' full/tiny-hd128-tp1.csv)" = 41 ] || fail "attention grid: not 41 points"
fi
echo "gpu_emu: ok"
