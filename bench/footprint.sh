#!/usr/bin/env bash
# bench/footprint.sh: the footprint benchmark. Compiles bench/footprint/tg_user.cpp (<tensorgrad.h>)
# and bench/footprint/torch_user.cpp (<torch/torch.h>) with the same flags (-std=c++17 -O2, plus what a CMake
# consumer of each library gets, from BUILD_DIR/bench/footprint.env): compile wall time (median of 3),
# binary sizes, the summed file sizes of the shared libraries each binary loads (ldd closure), startup +
# 10 training steps wall time, and the size of libtensorgrad.a. Usage: bench/footprint.sh BUILD_DIR [--smoke]
set -euo pipefail
build=${1:?usage: footprint.sh BUILD_DIR [--smoke]}
smoke=0
[ "${2:-}" = "--smoke" ] && smoke=1
env_file="$build/bench/footprint.env"
[ -f "$env_file" ] || { echo "footprint.sh: $env_file missing: configure with TENSORGRAD_BUILD_BENCH=ON" >&2; exit 1; }
# shellcheck disable=SC1090
. "$env_file"
src="$TG_SOURCE_DIR/bench/footprint"
work="$build/bench/footprint_work"
mkdir -p "$work"
reps=3
[ $smoke -eq 1 ] && reps=1

now() { date +%s.%N; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# human-readable MB of a byte count
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
# sum of the file sizes of every shared library BINARY loads (unique real paths), and their count
ldd_closure() {
  ldd "$1" | awk '/=>/ && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | xargs -r readlink -f | sort -u |
    xargs -r stat -L -c %s | awk '{ s += $1; n++ } END { printf "%d %d\n", s, n }'
}

# compile NAME SOURCE CFLAGS LINK: sets the globals c_med c_all bin_size strip_size lib_bytes lib_count run_s
measure() {
  local name=$1 file=$2 cflags=$3 link=$4 times=() t0 t1 i
  for ((i = 0; i < reps; i++)); do
    t0=$(now)
    # shellcheck disable=SC2086
    $CXX -std=c++17 -O2 $cflags -c "$file" -o "$work/$name.o"
    t1=$(now)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
  done
  c_med=$(median "${times[@]}")
  c_all="${times[*]}"
  # shellcheck disable=SC2086
  $CXX -O2 "$work/$name.o" -o "$work/$name" $link
  bin_size=$(stat -c %s "$work/$name")
  strip -o "$work/$name.stripped" "$work/$name"
  strip_size=$(stat -c %s "$work/$name.stripped")
  read -r lib_bytes lib_count < <(ldd_closure "$work/$name")
  t0=$(now)
  "$work/$name" > "$work/$name.out"
  t1=$(now)
  run_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  tail -n 1 "$work/$name.out" | grep -q "step 9 loss" || { echo "footprint.sh: $name did not train" >&2; exit 1; }
}

echo
echo "== footprint: one user file that trains the MLP 784-128-10 (-std=c++17 -O2) | load $(cut -d' ' -f1-3 /proc/loadavg)$([ $smoke -eq 1 ] && echo ' | SMOKE')"
measure tg_user "$src/tg_user.cpp" "$TG_CFLAGS" "$TG_LINK"
tg_c=$c_med tg_all=$c_all tg_bin=$bin_size tg_strip=$strip_size tg_lib=$lib_bytes tg_libn=$lib_count tg_run=$run_s
have_torch=0
if [ "$TORCH_FOUND" = "ON" ] && [ $smoke -eq 0 ]; then
  measure torch_user "$src/torch_user.cpp" "$TORCH_CFLAGS" "$TORCH_LINK"
  th_c=$c_med th_all=$c_all th_bin=$bin_size th_strip=$strip_size th_lib=$lib_bytes th_libn=$lib_count th_run=$run_s
  have_torch=1
fi
a_size=$(stat -c %s "$TG_LIB")

row() { printf '%-44s  %-26s  %-26s  %s\n' "$@"; }
row "measure" "tensorgrad" "libtorch" "tg/torch"
row "-------" "----------" "--------" "--------"
ratio() { [ $have_torch -eq 1 ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3fx", a / b }' || echo "n/a"; }
if [ $have_torch -eq 1 ]; then
  row "compile wall s, median ($reps runs)" "$tg_c ($tg_all)" "$th_c ($th_all)" "$(ratio "$tg_c" "$th_c")"
  row "binary size" "$(mb "$tg_bin")" "$(mb "$th_bin")" "$(ratio "$tg_bin" "$th_bin")"
  row "binary size, stripped" "$(mb "$tg_strip")" "$(mb "$th_strip")" "$(ratio "$tg_strip" "$th_strip")"
  row "shared libraries loaded (ldd closure)" "$(mb "$tg_lib") in $tg_libn files" "$(mb "$th_lib") in $th_libn files" "$(ratio "$tg_lib" "$th_lib")"
  row "binary + shared libraries" "$(mb $((tg_bin + tg_lib)))" "$(mb $((th_bin + th_lib)))" "$(ratio $((tg_bin + tg_lib)) $((th_bin + th_lib)))"
  row "run: load + 10 steps, wall s" "$tg_run" "$th_run" "$(ratio "$tg_run" "$th_run")"
else
  row "compile wall s, median ($reps runs)" "$tg_c ($tg_all)" "n/a" "n/a"
  row "binary size" "$(mb "$tg_bin")" "n/a" "n/a"
  row "binary size, stripped" "$(mb "$tg_strip")" "n/a" "n/a"
  row "shared libraries loaded (ldd closure)" "$(mb "$tg_lib") in $tg_libn files" "n/a" "n/a"
  row "run: load + 10 steps, wall s" "$tg_run" "n/a" "n/a"
fi
row "libtensorgrad.a" "$(mb "$a_size")" "" ""
if [ $smoke -eq 0 ]; then
  if [ $have_torch -eq 1 ]; then
    r=$(ratio "$tg_c" "$th_c")
    v=$(awk -v a="$tg_c" -v b="$th_c" 'BEGIN { print (a <= 0.2 * b) ? "met" : "MISSED" }')
  else
    r="n/a" v="n/a"
  fi
  printf 'TARGET  load %-5s  %-46s %-10s %-44s %-37s %s\n' "$(cut -d' ' -f1 /proc/loadavg)" \
    "compile time of one user file" "-" "$r libtorch ($tg_c s vs ${th_c:-n/a} s)" "target <= 0.2x" "$v"
fi
echo "(load at end $(cut -d' ' -f1-3 /proc/loadavg))"
