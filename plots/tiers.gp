# SLA violations and TTFT p99 per tier at one load, per policy.
# Set by `slicesim plot`: $SLA and $TTFT (one row per tier: tier then one column per series),
# nseries, names, load, paper.
set multiplot layout 1,2 title (paper ? "" : sprintf("Tiers at load %g", load))
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set grid y
set key top left
set xlabel "tier (0 = most demanding)"
set ylabel "requests violating their SLA (%)"
set yrange [0:100]
plot for [i=2:nseries+1] $SLA using i:xtic(1) title names[i-1] lc i-1
set yrange [*:*]
set logscale y
set ylabel "TTFT p99 (ms, log scale)"
plot for [i=2:nseries+1] $TTFT using i:xtic(1) title names[i-1] lc i-1
unset multiplot
