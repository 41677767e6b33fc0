# Sourced by slice-capacity.sh, slice-regimes.sh and slice-compare.sh: the settings their
# shipped results (docs/slice-capacity.md, the rows of docs/claims.md that cite them) were made
# with, before slice-vs-container.ini moved to today's engine and a 600 s window. ENGINE puts
# every tenant on the 2023 eager engine (vllm-eager) with Sarathi's own 512-token budget (the
# "on a 2023 eager engine" sensitivity row); WINDOW is the 1200 s window (after 120 s of
# warm-up) of those runs; TRACE has chat replay the shipped trace file, as they did. ENGINE=""
# WINDOW="" TRACE="" runs the scenario as shipped: vllm-0.15, a 2048-token budget, 600 s, chat's
# traffic drawn from the trace's generator with each seed.
ENGINE=${ENGINE-"--set tenant.chat.engine=vllm-eager --set tenant.code.engine=vllm-eager
 --set tenant.assist.engine=vllm-eager --set policy.token_budget=512"}
WINDOW=${WINDOW-"--set run.duration_s=1200 --set run.warmup_s=120"}
TRACE=${TRACE-"--set tenant.chat.synthetic= --set tenant.chat.trace=$PWD/traces/azure-conv-synth.csv"}
