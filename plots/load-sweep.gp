# Throughput and latency against offered load, from experiments/load-sweep.sh.
# Input columns: rate_scale req/s output_tok/s ttft_p50 ttft_p99 tbt_p50 tbt_p99 e2e_p99 preemptions
# Usage: gnuplot -e "datafile='X.dat'; outfile='X.png'" plots/load-sweep.gp
if (!exists("datafile")) datafile = 'plots/out/load-sweep.dat'
if (!exists("outfile")) outfile = 'plots/out/load-sweep.png'
set terminal pngcairo size 1100,420 font ",10"
set output outfile
set multiplot layout 1,2 title "Llama-2-7B on 4 x A100-80G, vLLM batching, Azure-conversation-like trace"
set grid
set key top left
set xlabel "offered load (x 5.5 req/s)"
set ylabel "completed requests/s"
set y2label "output tokens/s"
set ytics nomirror
set y2tics
plot datafile using 1:2 with linespoints lw 2 title "requests/s", \
     '' using 1:3 axes x1y2 with linespoints lw 2 title "output tokens/s"
set logscale y
unset y2label
unset y2tics
set ylabel "latency (ms, log scale)"
plot datafile using 1:4 with linespoints lw 2 title "TTFT p50", \
     '' using 1:5 with linespoints lw 2 title "TTFT p99", \
     '' using 1:7 with linespoints lw 2 title "TBT p99"
unset multiplot
