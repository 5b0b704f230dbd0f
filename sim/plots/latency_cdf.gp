# latency_cdf.gp - lookup latency CDF per configuration (first seed), from
# DIR/latency.csv.   gnuplot -e "dir='DIR'" latency_cdf.gp
set datafile separator ","
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
n = int(STATS_max) + 1
plot for [k=0:n-1] f using (column("config") == k && column("seed") == 1 ? column("latency_us") : NaN):(column("quantile")) \
     with lines lw 2 title sprintf("config %d", k)
