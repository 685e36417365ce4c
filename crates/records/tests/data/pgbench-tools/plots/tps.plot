set terminal pngcairo size 640,480 enhanced font ',10'
set output "tps.png"
set title "TPS"
set grid xtics ytics
set xlabel "Time during test"
set ylabel "TPS"
set xdata time
set timefmt "%s"
plot "tpsdata.txt" using 1:2 with lines

