# hitrate.gp - token and page hit rate against the cluster's slot memory, one point
# per configuration and seed, from DIR/summary.csv.   gnuplot -e "dir='DIR'" hitrate.gp
set datafile separator ","
set terminal pngcairo size 900,560 noenhanced
set output dir."/hitrate.png"
set title "hit rate vs cache capacity"
set xlabel "cluster slot memory (GiB)"
set ylabel "hit rate"
set yrange [0:1.05]
set grid
set key bottom right
f = dir."/summary.csv"
plot f using (column("cluster_slot_bytes")/2**30):(column("token_hit_rate")) with linespoints pt 7 title "token hit rate", \
     f using (column("cluster_slot_bytes")/2**30):(column("page_hit_rate")) with points pt 6 title "page hit rate"
