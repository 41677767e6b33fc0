# Where each GPU's time went at one load: compute, host phases (the engine's CPU work, the GPU
# idle) and idle time between iterations, per policy.
# Set by `slicesim plot`: $DATA (one row per GPU: "policy/gpuN" compute_% host_% idle_%),
# what, load.
set title sprintf("GPU time at load %g (%s)", load, what)
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.8
set ylabel "share of the run (%)"
set yrange [0:100]
set xtics rotate by -60 font ",8"
set key outside right top
set grid y
plot $DATA using 2:xtic(1) title "compute" lc rgb "#1f77b4", \
     '' using 3 title "host phases" lc rgb "#ff7f0e", \
     '' using 4 title "idle" lc rgb "#bbbbbb"
