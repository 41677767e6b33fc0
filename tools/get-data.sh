#!/bin/bash
# Fetch the public traces and operator profiles that slicesim's data-dependent tests,
# benchmarks and README examples read, from their public repositories at pinned commits, into
# DIR (default: $SLICESIM_DATA, else ../shared/data beside the checkout). Needs git and network
# access to github.com; when a fetch fails, DIR is left as it was and one line says why. Tests
# that need a data set skip (exit 77) when it is absent.
#
#   bash tools/get-data.sh [--list] [DIR]
#
# --list prints the sources and what goes where, and fetches nothing.
set -eu
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
}

list=0
dir=""
for a in "$@"; do
    case "$a" in
    --list) list=1 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "get-data: unknown option '$a' (see --help)" >&2; exit 2 ;;
    *) [ -z "$dir" ] || { echo "get-data: one DIR only" >&2; exit 2; }; dir=$a ;;
    esac
done
dir=${dir:-${SLICESIM_DATA:-../shared/data}}

# name | repository | commit | FROM=TO pairs (a path in the repository = where it goes under
# DIR; a trailing / copies a folder's contents) | licence
sources=(
"azure-llm-2023|https://github.com/Azure/AzurePublicDataset|b469a113cedca53ddc3bdea71a143dc4b7d8700c|data/AzureLLMInferenceTrace_conv.csv=traces/azure-llm-2023/ data/AzureLLMInferenceTrace_code.csv=traces/azure-llm-2023/|CC-BY 4.0; cite Patel et al., Splitwise, ISCA 2024"
"mooncake|https://github.com/kvcache-ai/Mooncake|3b5a594133958449a1feaf1c9e0fc1b553e34a28|FAST25-release/traces/synthetic_trace.jsonl=traces/mooncake/ FAST25-release/traces/conversation_trace.jsonl=traces/mooncake/|Apache-2.0; cite the Mooncake FAST'25 paper"
"servegen|https://github.com/alibaba/ServeGen|f891d1189eb32b3868dfc443800c4150548c282a|data/=traces/servegen/|Apache-2.0; cite Xiang et al., ServeGen, arXiv:2505.09999"
"vidur|https://github.com/microsoft/vidur|7d47513363ec447a741ac5e47241580b47724fbf|data/profiling/compute/=profiles/vidur/compute/ data/profiling/network/=profiles/vidur/network/ data/processed_traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv=traces/vidur/|MIT"
)

if [ $list -eq 1 ]; then
    echo "slicesim data sets, fetched into $dir:"
    for s in "${sources[@]}"; do
        IFS='|' read -r name repo commit pairs lic <<<"$s"
        printf '  %s: %s @ %s (%s)\n' "$name" "$repo" "${commit:0:12}" "$lic"
        for pr in $pairs; do
            printf '      %s -> %s/%s\n' "${pr%%=*}" "$dir" "${pr#*=}"
        done
    done
    cat <<'EOF'
  serving/vllm-0.15-h100-blis (not fetched): per-stage latencies and replayable traces of real
    vLLM 0.15.1 serving runs on H100, assembled from the measurements the BLIS project published
    (github.com/inference-sim/training and github.com/inference-sim/sim-to-real-accuracy-validation);
    the tests and benchmarks that need them skip without them.
EOF
    exit 0
fi

command -v git >/dev/null || { echo "get-data: git is needed (apt-get install git)" >&2; exit 1; }
# Everything is fetched into a temporary folder first and copied into DIR only once every source
# came, so a failure (no network, most often) leaves DIR as it was: not created if it was not
# there. A failure says in one line what failed and what to do instead of git's own words.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage="$work/data"
mkdir -p "$stage"
export GIT_TERMINAL_PROMPT=0 # fail rather than ask for credentials
# fetch_failed NAME REPO ERRFILE: the one line, then exit 1
fetch_failed() {
    local why
    why=$(grep -v '^[[:space:]]*$' "$3" | tail -n 1 | sed 's/^\(fatal\|error\): //')
    echo "get-data: cannot fetch $1 from $2 (${why:-git failed}); nothing was written to" \
        "$dir. Check the network access to github.com and run it again, or set SLICESIM_DATA" \
        "to a copy of the data that exists" >&2
    exit 1
}
for s in "${sources[@]}"; do
    IFS='|' read -r name repo commit pairs lic <<<"$s"
    echo "get-data: $name: $repo @ ${commit:0:12}"
    clone="$work/$name"
    froms=""
    for pr in $pairs; do froms="$froms ${pr%%=*}"; done
    # Only the tree of one commit and only the blobs of the paths wanted.
    { git clone -q --filter=blob:none --no-checkout "$repo" "$clone" &&
        # shellcheck disable=SC2086
        git -C "$clone" sparse-checkout set --no-cone $froms &&
        git -C "$clone" checkout -q "$commit"; } 2>"$work/err" ||
        fetch_failed "$name" "$repo" "$work/err"
    for pr in $pairs; do
        from=${pr%%=*} to="$stage/${pr#*=}"
        mkdir -p "$to"
        if [ -d "$clone/$from" ]; then
            cp -R "$clone/$from/." "$to"
        else
            cp "$clone/$from" "$to"
        fi
        printf 'Fetched by slicesim tools/get-data.sh on %s: %s at commit %s, %s. Licence: %s.\n' \
            "$(date -u +%Y-%m-%d)" "$repo" "$commit" "$from" "$lic" >>"$stage/SOURCES.txt"
        echo "  $from -> $dir/${pr#*=}"
    done
    rm -rf "$clone"
done
# Every source came: into DIR (SOURCES.txt appended to, as each fetch adds its lines).
mkdir -p "$dir"
cat "$stage/SOURCES.txt" >>"$dir/SOURCES.txt"
rm "$stage/SOURCES.txt"
cp -R "$stage/." "$dir"
echo "get-data: done; run the tests with SLICESIM_DATA=$dir (the default is ../shared/data)"
