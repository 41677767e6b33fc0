# Each bundle's capacity: the highest load it sustains within the SLA-miss bound, the mean over
# seeds with its 95 % Student-t interval, from the capacities table of the newest capacity
# command stored under the sweep; each label carries the bundle's ratio to the reference (the
# first bundle).
# Set by `slicesim plot`: $DATA (one row per bundle: "label" capacity lo hi), paper.
if (!paper) set title "Capacity at the SLA-miss bound"
set style data histograms
set style histogram errorbars gap 1 lw 1.5
set style fill solid 0.8 border -1
set boxwidth 0.7
set ylabel "capacity (load x the scenario's rates)"
set yrange [0:*]
set grid y
set xtics rotate by -20
unset key
plot $DATA using 2:3:4:xtic(1) lc rgb "#1f77b4"
