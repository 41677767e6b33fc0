# Idle GPU time by the length of the idle slice it comes in, at one load, per policy: the share
# of all idle GPU time in slices up to each length (a cumulative distribution over the decades
# of slice length the idle_slices table keeps), so a policy whose idle time comes in short
# slices rises early.
# Set by `slicesim plot`: $DATA (one index per series: slice_length_ms cumulative_share, from
# the shortest decade's upper edge), nseries, names, load, paper, pts.
if (!paper) set title sprintf("Idle GPU time by idle-slice length at load %g", load)
set logscale x
set xrange [0.01:100000]
set format x "%g"
set xlabel "idle slice length up to (ms, log scale)"
set ylabel "share of idle GPU time"
set yrange [0:1]
set grid
set key bottom right
plot for [i=0:nseries-1] $DATA index i using 1:2 with linespoints lw 2 dt 1+i%5 \
         pt pts[i%8+1] lc i+1 title names[i+1]
