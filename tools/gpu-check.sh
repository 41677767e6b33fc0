#!/bin/bash
# The GPU check of the CUDA executor, as one script for a machine with an NVIDIA GPU (an H200 is
# the target): build (or use a binary packed here with --pack), check every kernel against the
# CPU reference, calibrate the quick grid of Llama-2-7B and Llama-3-8B at TP 1 into
# OUT/<gpu>/, and validate a short simulated schedule of each model against the roofline and
# against the tables just measured, and measure two processes' kernels co-located under time
# slicing and MPS against the sharing model. Everything it makes goes to OUT (default: $OUT, else
# results/gpu-check); the tables are then committed as profiles/<gpu>/.
#
#   bash tools/gpu-check.sh [--backend cuda|sim] [--models "a b"] [--grid quick|full]
#   bash tools/gpu-check.sh --pack     # here: build a release binary + the libraries it needs
#                                      # into .gpu/ (git-ignored), for a machine that lacks them
#
# On the device machine: carry .gpu and run `bash tools/gpu-check.sh`. --backend sim rehearses
# the whole script on a machine without a GPU (the roofline plays the GPU).
set -u
cd "$(dirname "$0")/.."
backend=cuda
models="llama-2-7b llama-3-8b"
grid=quick
pack=0
while [ $# -gt 0 ]; do
    case $1 in
    --backend) backend=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --pack) pack=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"

if [ "$pack" = 1 ]; then
    set -e
    rm -rf build-gpu-pack .gpu
    bash tools/quiet.sh meson setup build-gpu-pack --buildtype=release -Dcuda=enabled \
        -Dcuemu=disabled -Dmpi=disabled -Dtests=disabled -Dgnuplot=disabled
    ninja -C build-gpu-pack src/slicesim src/libslicesim-cuda.so
    mkdir -p .gpu/bin .gpu/lib
    cp build-gpu-pack/src/slicesim build-gpu-pack/src/libslicesim-cuda.so .gpu/bin/
    # the non-CUDA shared libraries they need (the CUDA ones come with the toolkit). Not the C
    # and C++ runtimes: the GPU machine has its own, and Debian 12's libstdc++ and libgcc_s
    # would ask for a newer glibc (2.36, 2.35) than an older system there provides.
    ldd .gpu/bin/slicesim .gpu/bin/libslicesim-cuda.so | awk '/=> \// {print $3}' | sort -u |
        grep -Ev 'libc\.so|libm\.so|libdl|libpthread|librt\.so|libutil|ld-linux|libstdc\+\+|libgcc_s|libcuda|libcublas|libcupti|libnvidia' |
        while read -r lib; do cp -L "$lib" .gpu/lib/; done
    need=$(objdump -T .gpu/bin/* .gpu/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
    echo "gpu-check: the packed files need glibc ${need#GLIBC_} or newer"
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
    du -sh .gpu
    echo "gpu-check: packed .gpu/ (carry it, then run: bash tools/gpu-check.sh)"
    exit 0
fi

OUT=${OUT:-results/gpu-check}
mkdir -p "$OUT"
LOG=$OUT/gpu-check.log
exec > >(tee "$LOG") 2>&1
echo "== gpu-check: $(date -u +%FT%TZ) backend=$backend grid=$grid models=$models"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv

S=""
if command -v meson >/dev/null && command -v ninja >/dev/null &&
    { [ -f build-gpu/build.ninja ] ||
      meson setup build-gpu --buildtype=release -Dcuda=$([ "$backend" = cuda ] && echo enabled || echo auto) \
          -Dcuemu=disabled -Dmpi=disabled -Dtests=disabled -Dgnuplot=disabled >"$OUT/build.log" 2>&1; } &&
    ninja -C build-gpu >>"$OUT/build.log" 2>&1; then
    S=build-gpu/src/slicesim
    echo "built here: $S"
elif [ -x .gpu/bin/slicesim ]; then
    S=.gpu/bin/slicesim
    export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export SLICESIM_CUDA_MODULE=$PWD/.gpu/bin/libslicesim-cuda.so
    echo "could not build here (see build.log); using the packed binary $S"
else
    echo "gpu-check: no build and no packed binary (.gpu/); see $OUT/build.log" >&2
    exit 1
fi
"$S" --version
gpu_opt=()
[ "$backend" = sim ] && gpu_opt=(--gpu h200)
status=0

if [ "$backend" = cuda ]; then
    echo "== self-test (every kernel against the CPU reference)"
    "$S" calibrate --model llama-2-7b --selftest || status=1
fi

for m in $models; do
    echo "== calibrate $m TP 1, $grid grid"
    start=$(date +%s)
    "$S" calibrate --backend "$backend" "${gpu_opt[@]}" --model "$m" --tp 1 --grid "$grid" \
        -o "$OUT/tables" --no-selftest || status=1
    echo "   $(($(date +%s) - start)) s"
done

# the catalog plus the new tables, for --cost profile (outside OUT: only results come back)
CAT=$(mktemp -d)
trap 'rm -rf "$CAT"' EXIT
cp -r profiles/hardware profiles/models profiles/engines "$CAT/"
gpu=$(sed -n 's/^# gpu: //p' "$OUT"/tables/*.csv 2>/dev/null | head -1)
[ -n "$gpu" ] && mkdir -p "$CAT/$gpu" && cp "$OUT"/tables/*.csv "$CAT/$gpu/"

for m in $models; do
    for cost in roofline profile; do
        for rate in 1 8; do
            echo "== validate $m TP 1 against the $cost cost model, arrival rate x$rate"
            "$S" validate --backend "$backend" "${gpu_opt[@]}" --model "$m" --tp 1 --limit 96 \
                --rate-scale $rate --iters 150 --reps 3 --cost "$cost" --profiles "$CAT" \
                --db "$OUT/validate.db" --name "gpu-check $m $cost x$rate" -q || status=1
        done
    done
done
# co-location (docs/guide/gpu-sharing.md): a prefill-shaped GEMM beside a decode-shaped one in
# two processes, each alone and then together, under time slicing and under MPS (its control
# daemon started for the run and stopped after), against the simulator's sharing model
cgpu=${gpu:-h200}
m0=${models%% *}
echo "== co-location of $m0's GEMMs, time slicing"
"$S" validate --colocate time --backend "$backend" --gpu "$cgpu" --model "$m0" --seconds 3 \
    --json >"$OUT/colocate-time.json" && cat "$OUT/colocate-time.json" || status=1
if [ "$backend" = cuda ] && command -v nvidia-cuda-mps-control >/dev/null &&
    nvidia-cuda-mps-control -d 2>/dev/null; then
    for share in 0.5 1; do
        echo "== co-location of $m0's GEMMs, MPS, each process at $share of the SMs"
        "$S" validate --colocate mps --sm-share $share --backend cuda --gpu "$cgpu" \
            --model "$m0" --seconds 3 --json >"$OUT/colocate-mps-$share.json" &&
            cat "$OUT/colocate-mps-$share.json" || status=1
    done
    echo quit | nvidia-cuda-mps-control
elif [ "$backend" = sim ]; then
    "$S" validate --colocate mps --backend sim --gpu "$cgpu" --model "$m0" --seconds 1 \
        --json >"$OUT/colocate-mps-0.5.json" || status=1
else
    echo "   MPS: skipped (nvidia-cuda-mps-control missing or refused to start)"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv
echo "== gpu-check: done (status $status); tables in $OUT/tables, validations in $OUT/validate.db"
exit $status
