# PNG plots of benchmark results with gnuplot (sourced by the benchmark
# scripts, not run). They go to $PLOT_DIR (default docs/plots of the
# checkout), where docs/benchmarks.md shows them. Every function does nothing but say so when gnuplot
# is missing (apt-get install gnuplot-nox), so a benchmark never fails for
# want of a picture.
PLOT_DIR=${PLOT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/docs/plots}

plot_available() {
  command -v gnuplot >/dev/null 2>&1 && return 0
  echo "(gnuplot not installed: no plot written)" >&2
  return 1
}

# plot_latency_runs PNG TITLE WRITES_FILE LABEL1 LOGDIR1 [LABEL2 LOGDIR2 ...]
# Per-request latency over time, one panel per run (pgbench -l logs:
# fields 3 = latency in us, 5 and 6 = end time), seconds from the run's
# first request; WRITES_FILE holds the epoch times (seconds, fractions
# allowed) of the committed writes, one a line, marked as vertical lines in
# the panel of the run they fall in.
plot_latency_runs() {
  plot_available || return 0
  local png=$1 title=$2 writes=$3; shift 3
  local tmp n=0 script panels=$(($# / 2))
  tmp=$(mktemp -d)
  script="set terminal pngcairo size 1200,$((260 * panels + 60)) font ',10' noenhanced
set output '$png'
set multiplot layout $panels,1 title '$title'
set logscale y
set yrange [0.01:20000]
set ylabel 'latency (ms)'
set grid ytics
set key top right"
  while [ $# -ge 2 ]; do
    local label=$1 dir=$2 start
    shift 2
    n=$((n + 1))
    # Requests by end time; the run starts at its first request's end.
    cat "$dir"/tx.* | awk '{ printf "%.6f %.3f\n", $5 + $6 / 1e6 - $3 / 1e6, $3 / 1000 }' | sort -n >"$tmp/run$n"
    start=$(head -1 "$tmp/run$n" | cut -d' ' -f1)
    awk -v s="$start" '{ printf "%.3f %s\n", $1 - s, $2 }' "$tmp/run$n" >"$tmp/rel$n"
    local end
    end=$(tail -1 "$tmp/rel$n" | cut -d' ' -f1)
    : >"$tmp/writes$n"
    [ -s "$writes" ] && awk -v s="$start" -v e="$end" '{ t = $1 - s; if (t >= 0 && t <= e) print t }' "$writes" >"$tmp/writes$n"
    script="$script
unset arrow
$(awk '{ printf "set arrow from %s, graph 0 to %s, graph 1 nohead lc rgb \"#d62728\" dt 2\n", $1, $1 }' "$tmp/writes$n")
set xlabel 'seconds into the run (dashed: a committed write)'
plot '$tmp/rel$n' using 1:2 with dots lc rgb '#1f77b4' title '$label'"
  done
  script="$script
unset multiplot"
  gnuplot <<<"$script" && echo "plot: $png"
  rm -rf "$tmp"
}

# plot_series PNG TITLE XLABEL YLABEL XAXIS DATA COLUMN_TITLES...
# Lines with points: DATA has x in column 1 and one series per further
# column (whitespace-separated, "-" for a missing value); XAXIS = log (base
# 2), lin, or cat (the x values as evenly spaced labels), with "+logy" for
# a logarithmic y axis (series orders of magnitude apart).
plot_series() {
  plot_available || return 0
  local png=$1 title=$2 xlabel=$3 ylabel=$4 logx=$5 data=$6; shift 6
  local col=2 plots="" using logy=
  [[ $logx == *+logy ]] && { logy=1; logx=${logx%+logy}; }
  for name in "$@"; do
    using="1:$col"; [ "$logx" = cat ] && using="0:$col:xtic(1)"
    plots="${plots:+$plots, }'$data' using $using with linespoints lw 2 pt 7 title '$name'"
    col=$((col + 1))
  done
  gnuplot <<EOF && echo "plot: $png"
set terminal pngcairo size 900,600 font ',10' noenhanced
set output '$png'
set title '$title'
set xlabel '$xlabel'
set ylabel '$ylabel'
set grid
set key below height 1
set datafile missing '-'
$([ "$logx" = log ] && echo 'set logscale x 2')
$(if [ -n "$logy" ]; then echo 'set logscale y'; else echo 'set yrange [0:*]'; fi)
plot $plots
EOF
}
