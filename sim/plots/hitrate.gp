# hitrate.gp - token and page hit rate against the cluster's slot memory, from
# DIR/summary.csv: one line per value of the sweeps that do not change the slot
# memory (pcsim's "series" column), named by them; seeds of one point averaged.
#   gnuplot -e "dir='DIR'; series='NAME1 NAME2 ...'" hitrate.gp
if (!exists("series")) series = "all"
set datafile separator ","
set datafile missing NaN
set terminal pngcairo size 900,560 noenhanced
set output dir."/hitrate.png"
set title "hit rate vs cache capacity"
set xlabel "cluster slot memory (GiB)"
set ylabel "hit rate"
set yrange [0:1.05]
set grid
set key bottom right
f = dir."/summary.csv"
ns = words(series)
plot for [s=1:ns] f using (column("series") == s ? column("cluster_slot_bytes")/2**30 : NaN):(column("token_hit_rate")) \
       smooth unique with linespoints lw 2 pt 7 lc s title "token hit rate".(ns > 1 ? ", ".word(series, s) : ""), \
     for [s=1:ns] f using (column("series") == s ? column("cluster_slot_bytes")/2**30 : NaN):(column("page_hit_rate")) \
       smooth unique with linespoints dt 2 pt 6 lc s title "page hit rate".(ns > 1 ? ", ".word(series, s) : "")
