# latency_cdf.gp - lookup latency CDF per configuration (first seed), named by its
# swept values, from DIR/latency.csv.
#   gnuplot -e "dir='DIR'; labels='NAME1 NAME2 ...'" latency_cdf.gp
set datafile separator ","
set datafile missing NaN
set terminal pngcairo size 900,560 noenhanced
set output dir."/latency_cdf.png"
set title "request lookup latency CDF"
set xlabel "latency (us)"
set ylabel "fraction of requests"
set logscale x
set grid
set key bottom right
f = dir."/latency.csv"
stats f using (column("config")) nooutput
n = int(STATS_max)
if (!exists("labels")) labels = ""
name(k) = words(labels) >= k ? word(labels, k) : sprintf("config %d", k)
plot for [k=1:n] f using (column("config") == k && column("seed") == 1 ? column("latency_us") : NaN):(column("quantile")) \
     with lines lw 2 title name(k)
