# timeseries.gp - token hit rate and p99 latency per interval (first seed), one line
# per configuration named by its swept values, from DIR/timeseries.csv: the
# transients of nodes leaving and joining show here.
#   gnuplot -e "dir='DIR'; labels='NAME1 NAME2 ...'" timeseries.gp
set datafile separator ","
set datafile missing NaN
set terminal pngcairo size 900,700 noenhanced
set output dir."/timeseries.png"
f = dir."/timeseries.csv"
stats f using (column("config")) nooutput
n = int(STATS_max)
if (!exists("labels")) labels = ""
name(k) = words(labels) >= k ? word(labels, k) : sprintf("config %d", k)
set multiplot layout 2,1 title "over time"
set grid
set ylabel "token hit rate"
set yrange [0:1.05]
set key bottom right
plot for [k=1:n] f using (column("config") == k && column("seed") == 1 ? column("t_s") : NaN):(column("token_hit_rate")) \
     with lines lw 2 title name(k)
set ylabel "p99 latency (us)"
set xlabel "simulated time (s)"
set autoscale y
plot for [k=1:n] f using (column("config") == k && column("seed") == 1 ? column("t_s") : NaN):(column("p99_us")) \
     with lines lw 2 title name(k)
unset multiplot
