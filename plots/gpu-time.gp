# Where the GPUs' time went over the measurement window at one load, per policy and tenant:
# computing, in a host phase (its container's CPU work opening each iteration: scheduling,
# input preparation, sampling; the GPU waits) and idle between iterations, each the mean over
# the tenant's GPUs. The three add up to the window (the gpus table's compute_s, host_s and
# idle_s - host_s over window_s).
# Set by `slicesim plot`: $DATA (one index per series, in the order of names; one row per
# tenant: "tenant (N GPUs)" compute_% host_% idle_%), nseries, names, load, paper.
if (!paper) set title sprintf("GPU time over the measurement window at load %g, per tenant", load)
set style data histograms
set style histogram rowstacked title offset 0,-1
set style fill solid 0.8 border -1
set boxwidth 0.8
set ylabel "share of the measurement window (%)"
set yrange [0:100]
set xtics rotate by -30
if (paper) { set xtics font ",6" } else { set xtics font ",9" }
set bmargin (paper ? 5 : 6)
set key above horizontal
set grid y
# The command is built from numbers and constants only: each histogram's title is the
# expression names[s], evaluated by `plot`, never a series name spliced into the command.
cmd = "plot"
do for [s = 1:nseries] {
    cmd = cmd . sprintf("%s newhistogram \"\".names[%d] lt 1, $DATA index %d using 2:xtic(1) %s lc rgb \"#1f77b4\", '' index %d using 3 %s lc rgb \"#ff7f0e\", '' index %d using 4 %s lc rgb \"#bbbbbb\"", \
        s > 1 ? "," : "", s, s - 1, s == 1 ? "title \"compute\"" : "notitle", \
        s - 1, s == 1 ? "title \"host phases\"" : "notitle", \
        s - 1, s == 1 ? "title \"idle between iterations\"" : "notitle")
}
eval cmd
