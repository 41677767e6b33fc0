# SLA violations and TTFT p99 against offered load, one line per policy, with the 95 %
# interval over seeds as error bars, and the SLA-miss bound.
# Set by `slicesim plot`: $DATA (one index per series: load sla_violation_% ttft_p99_ms and
# their interval half-widths), nseries, names, paper, pts, sla_bound (%; 0: none).
set multiplot layout 1,2 title (paper ? "" : "SLA against load")
set grid
set key top left
set bars small
set xlabel "load (x the scenario's arrival rates)"
set ylabel "requests violating their SLA (%)"
set yrange [0:100]
if (sla_bound > 0) {
    set arrow 1 from graph 0, first sla_bound to graph 1, first sla_bound nohead \
        dt 3 lw 1.5 lc rgb "gray30" front
    set label 1 sprintf("bound %g %%", sla_bound) at graph 0.98, first sla_bound right \
        offset 0, 0.7 tc rgb "gray30" front
}
plot for [i=0:nseries-1] $DATA index i using 1:2:4 with yerrorlines lw 2 dt 1+i%5 \
         pt pts[i%8+1] lc i+1 title names[i+1]
unset arrow 1
unset label 1
set yrange [*:*]
set logscale y
set ylabel "TTFT p99 (ms, log scale)"
plot for [i=0:nseries-1] $DATA index i using 1:3:5 with yerrorlines lw 2 dt 1+i%5 \
         pt pts[i%8+1] lc i+1 title names[i+1]
unset multiplot
