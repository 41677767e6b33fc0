# Output throughput and goodput against offered load, one line per policy, with the 95 %
# interval over seeds as error bars.
# Set by `slicesim plot`: $DATA (one index per series: load out_tok_s goodput_tok_s and their
# interval half-widths), nseries, names (an array: names[i] is series i's name), paper (1: a
# paper's single column, no title), pts (point types, one per series in turn).
if (!paper) set title "Throughput against load"
set xlabel "load (x the scenario's arrival rates)"
set ylabel "tokens/s"
set grid
set key below horizontal
set yrange [0:*]
set bars small
plot for [i=0:nseries-1] $DATA index i using 1:2:4 with yerrorlines lw 2 dt 1 \
         pt pts[i%8+1] lc i+1 title names[i+1]." output", \
     for [i=0:nseries-1] $DATA index i using 1:3:5 with yerrorlines lw 2 dt 2 \
         pt pts[i%8+1] lc i+1 title names[i+1]." goodput"
