# The eight regimes of slice-vs-container.ini that experiments/slice-regimes.sh and
# experiments/sharing.sh compare bundles in (sourced): each changes one thing of the scenario
# (slice-regimes.sh's header says what). regime NAME puts the regime's --set assignments into
# sets[] and Llumnix's standby layout into LLX (LLUMNIX_LAYOUT from slice-baselines.sh, which
# the caller sources first); MODE=eager keeps skewed's chat on the eager runs' trace.
CODE="duration=1200 prompt=lognormal:2000:0.6 output=lognormal:150:0.8"
ASSIST="duration=1200 prompt=lognormal:600:0.5 output=lognormal:250:0.7"
# chat's generator as slice-vs-container.ini has it, for 1800 s
CHAT_1800="rate=5.5 duration=1800 arrival=poisson"
CHAT_1800+=" prompt=quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921"
CHAT_1800+=" output=quantiles:0=7,0.5=129,0.9=478.3,0.99=601,1=819"

# The regime's --set assignments into sets[], and llumnix-hr's standby layout into LLX (chat
# starts on 2 and may scale into the GPUs the others leave).
regime() {
    LLX=$LLUMNIX_LAYOUT
    case $1 in
    base) sets=() ;;
    balanced) sets=(--set tenant.chat.rate_scale=0.7
                    --set "tenant.code.synthetic=rate=4 arrival=gamma cv=2 $CODE"
                    --set "tenant.assist.synthetic=rate=3 $ASSIST") ;;
    skewed) sets=(--set tenant.chat.rate_scale=3
                  --set "tenant.code.synthetic=rate=1 arrival=gamma cv=2 $CODE"
                  --set "tenant.assist.synthetic=rate=0.5 $ASSIST")
            # rate_scale compresses chat's generated 1200 s to 400 s, short of the 600 s
            # window: generate 1800 s (the eager runs' trace file lasts an hour)
            [ "${MODE:-today}" = eager ] || sets+=(--set "tenant.chat.synthetic=$CHAT_1800") ;;
    big-chat) sets=(--set tenant.chat.model=llama-2-13b) ;;
    moe-code) sets=(--set tenant.code.model=mixtral-8x7b --set tenant.code.tp=2
                    --set tenant.code.replicas=2 --set tenant.assist.replicas=2)
              LLX="+tenant.chat.max_replicas=5+tenant.code.replicas=1+tenant.assist.replicas=1" ;;
    bursty) sets=(--set "tenant.code.synthetic=rate=2 arrival=gamma cv=4 $CODE"
                  --set "tenant.assist.synthetic=rate=1 arrival=gamma cv=4 $ASSIST") ;;
    tight-sla|loose-sla)
        local ttft=500 tbt=100
        [ "$1" = tight-sla ] || { ttft=10000; tbt=500; }
        sets=()
        for t in chat code assist; do
            sets+=(--set tenant.$t.sla_ttft_ms=$ttft --set tenant.$t.sla_tbt_ms=$tbt)
        done ;;
    *) echo "regimes: unknown regime '$1'" >&2; exit 2 ;;
    esac
}

