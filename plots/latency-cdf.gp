# Distribution of TTFT and E2E latency at one load, one line per policy.
# Set by `slicesim plot`: $TTFT and $E2E (one index per series: latency_ms cumulative_fraction),
# nseries, names, load, paper.
set multiplot layout 1,2 title (paper ? "" : sprintf("Latency CDF at load %g", load))
set grid
set key bottom right
set logscale x
set yrange [0:1]
set ylabel "fraction of requests"
set xlabel "TTFT (ms, log scale)"
plot for [i=0:nseries-1] $TTFT index i using 1:2 with lines lw 2 dt 1+i%5 lc i+1 title names[i+1]
set xlabel "end-to-end latency (ms, log scale)"
plot for [i=0:nseries-1] $E2E index i using 1:2 with lines lw 2 dt 1+i%5 lc i+1 title names[i+1]
unset multiplot
