# Output throughput and goodput against offered load, one line per policy.
# Set by `slicesim plot`: $DATA (one index per series: load out_tok_s goodput_tok_s, means over
# seeds), nseries, names (an array: names[i] is series i's name), what (the sweep's name).
set title sprintf("Throughput against load (%s)", what)
set xlabel "load (x the scenario's arrival rates)"
set ylabel "tokens/s"
set grid
set key outside right top
set yrange [0:*]
plot for [i=0:nseries-1] $DATA index i using 1:2 with linespoints lw 2 pt 7 lc i+1 \
         title names[i+1]." output", \
     for [i=0:nseries-1] $DATA index i using 1:3 with linespoints lw 2 dt 2 pt 6 lc i+1 \
         title names[i+1]." goodput"
