# Sourced by slice-capacity.sh and slice-regimes.sh: the tuned baselines of slice-vs-container.ini
# as capacity bundles, with headroom (8 GPUs, all allocated):
#  - realloc-hr: re-allocation every 60 s; every tenant may grow to 6 containers;
#  - llumnix-hr LAYOUT: Llumnix (dispatch and migration) with auto-scaling every 10 s; standby
#    containers hold GPUs from the start, so LAYOUT says how the 8 are split (the default: chat
#    starts on 2 and may scale to 5, code runs on 2 and assist on 1).
REALLOC_HR="realloc-hr:policy.cluster=container+policy.realloc_period_s=60+policy.ops=home"
REALLOC_HR+="+tenant.chat.max_replicas=6+tenant.code.max_replicas=6+tenant.assist.max_replicas=6"
LLUMNIX_LAYOUT="+tenant.chat.max_replicas=5+tenant.code.replicas=2+tenant.assist.replicas=1"
llumnix_hr() { # llumnix_hr [LAYOUT]
    echo "llumnix-hr:policy.cluster=llumnix+policy.routing=llumnix+policy.ops=home"`
        `"+policy.scale_period_s=10${1:-$LLUMNIX_LAYOUT}"
}
# The same two with their period searched at every probe (capacity's knob search,
# KEY=V1|V2|..., from the period above), as tuned baselines of equal effort:
#  - realloc-tuned: realloc_period_s over RT_PERIODS;
#  - llumnix-tuned LAYOUT: scale_period_s over LT_PERIODS.
# (A script may set RT_PERIODS and LT_PERIODS before sourcing this: slice-regimes.sh widens
# them.)
RT_PERIODS=${RT_PERIODS:-"60|10|15|20|30|45|90|120|180|300"}
LT_PERIODS=${LT_PERIODS:-"10|1|2|5|15|20|30|45|60|120"}
REALLOC_TUNED="realloc-tuned:policy.cluster=container+policy.realloc_period_s=$RT_PERIODS"
REALLOC_TUNED+="+policy.ops=home+tenant.chat.max_replicas=6+tenant.code.max_replicas=6"
REALLOC_TUNED+="+tenant.assist.max_replicas=6"
llumnix_tuned() { # llumnix_tuned [LAYOUT]
    echo "llumnix-tuned:policy.cluster=llumnix+policy.routing=llumnix+policy.ops=home"`
        `"+policy.scale_period_s=$LT_PERIODS${1:-$LLUMNIX_LAYOUT}"
}
