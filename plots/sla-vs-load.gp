# SLA violations and TTFT p99 against offered load, one line per policy.
# Set by `slicesim plot`: $DATA (one index per series: load sla_violation_% ttft_p99_ms, means
# over seeds), nseries, names, what.
set multiplot layout 1,2 title sprintf("SLA against load (%s)", what)
set grid
set key top left
set xlabel "load (x the scenario's arrival rates)"
set ylabel "requests violating their SLA (%)"
set yrange [0:100]
plot for [i=0:nseries-1] $DATA index i using 1:2 with linespoints lw 2 pt 7 lc i+1 \
         title names[i+1]
set yrange [*:*]
set logscale y
set ylabel "TTFT p99 (ms, log scale)"
plot for [i=0:nseries-1] $DATA index i using 1:3 with linespoints lw 2 pt 7 lc i+1 \
         title names[i+1]
unset multiplot
