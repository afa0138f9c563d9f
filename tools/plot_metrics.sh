#!/usr/bin/env bash
# tools/plot_metrics.sh: draws a training example's metrics (the CSV its --metrics flag writes) as a PNG
# with gnuplot, so that a run can be looked at instead of scrolled: every column against the first
# (the step or the epoch); columns named *accuracy* on the right axis (0 to 1), the others (losses) on
# the left; `lr` and `seconds` columns are left out. Installs gnuplot-nox when missing (as root).
# Usage: plot_metrics.sh METRICS.csv [OUT.png]   (OUT defaults to METRICS.png)
set -euo pipefail
csv="${1:?usage: plot_metrics.sh METRICS.csv [OUT.png]}"
out="${2:-${csv%.csv}.png}"
[ -r "$csv" ] || { echo "plot_metrics: cannot read $csv" >&2; exit 2; }
command -v gnuplot >/dev/null || "$(dirname "$0")/install_deps.sh" gnuplot-nox
IFS=, read -r -a columns < "$csv"
[ "${#columns[@]}" -ge 2 ] || { echo "plot_metrics: $csv has no header of at least two columns" >&2; exit 2; }
[ "$(wc -l < "$csv")" -ge 2 ] || { echo "plot_metrics: $csv has no data rows" >&2; exit 2; }
plots=()
right=0
for i in "${!columns[@]}"; do
  [ "$i" -eq 0 ] && continue
  name="${columns[$i]//$'\r'/}"
  case "$name" in lr|seconds) continue ;; esac
  axis=x1y1
  if [[ "$name" == *accuracy* ]]; then axis=x1y2; right=1; fi
  plots+=("'$csv' every ::1 using 1:$((i + 1)) with linespoints axes $axis title '${name//_/ }'")
done
[ "${#plots[@]}" -gt 0 ] || { echo "plot_metrics: $csv has nothing to plot besides lr and seconds" >&2; exit 2; }
{
  echo "set terminal png size 900,540 noenhanced"   # underscores in names print as they are
  echo "set output '$out'"
  echo "set datafile separator ','"
  echo "set datafile missing ''"
  echo "set key outside below"
  echo "set grid"
  echo "set xlabel '${columns[0]//_/ }'"
  echo "set ylabel 'loss'"
  if [ "$right" -eq 1 ]; then echo "set y2label 'accuracy'"; echo "set y2range [0:1]"; echo "set y2tics"; echo "set ytics nomirror"; fi
  echo "set title '$(basename "$csv")'"
  (IFS=,; echo "plot ${plots[*]}")
} | gnuplot
[ "$(head -c 4 "$out" | tail -c 3)" = PNG ] || { echo "plot_metrics: gnuplot wrote no PNG to $out" >&2; exit 1; }
echo "plot_metrics: wrote $out"
