# Idle GPU slices by length at one load: GPU-seconds idle in each decade of slice length, per
# policy.
# Set by `slicesim plot`: $DATA (one row per length bucket: label then one GPU-s column per
# series), nseries, names, load, paper.
if (!paper) set title sprintf("Idle GPU slices at load %g", load)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel "GPU-seconds idle (log scale)"
set xlabel "slice length"
set grid y
set key top left
plot for [i=2:nseries+1] $DATA using i:xtic(1) title names[i-1] lc i-1
