#!/usr/bin/env bash
# tools/run_fuzzers.sh: builds the libFuzzer targets of tests/fuzz/ (clang, address+undefined, in
# build-fuzz) and runs each for SECONDS over a scratch copy of its committed seed corpus
# (tests/fuzz/corpus/<target>/ is never written to). Prints executions and corpus size per target;
# exits 1 when any target crashed, with the saved input and the command that replays it. Inputs are
# at most 4 KiB, so -malloc_limit_mb=32 flags any single allocation that a header forced.
# Usage: tools/run_fuzzers.sh [SECONDS=60]   (env: FUZZ_BUILD=build-fuzz, JOBS=2, CXX=clang++)
set -euo pipefail
seconds="${1:-60}"
cd "$(dirname "$0")/.."
root="$(pwd)"
build="${FUZZ_BUILD:-build-fuzz}"
targets=(fuzz_checkpoint fuzz_idx fuzz_ops fuzz_shapes)

cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${TG_SANITIZER_BUILD_FLAGS:--O2 -gline-tables-only -DNDEBUG}" \
  -DTENSORGRAD_CUDA=OFF -DTENSORGRAD_FUZZ=ON \
  -DTENSORGRAD_BUILD_TESTS=OFF -DTENSORGRAD_BUILD_EXAMPLES=OFF -DTENSORGRAD_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target "${targets[@]}"

work="$root/$build/fuzz-run"
rm -rf "$work"
mkdir -p "$work"
summary=()
failed=0
for t in "${targets[@]}"; do
  seeds="$root/tests/fuzz/corpus/$t"
  corpus="$work/$t-corpus"
  crashes="$work/$t-crashes"
  mkdir -p "$corpus" "$crashes"
  cp "$seeds"/* "$corpus"/
  n_seeds=$(ls "$corpus" | wc -l)
  echo "== $t: ${seconds}s from $n_seeds seeds"
  rc=0
  ( cd "$work" && TMPDIR="$work" ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="print_stacktrace=1" \
      "$root/$build/tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=32 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" ) >"$work/$t.log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$work/$t.log" | tail -1 || true)
  n_corpus=$(ls "$corpus" | wc -l)
  line="$t: ${execs:-?} executions in ${seconds}s, corpus $n_seeds -> $n_corpus files, ${cov:-no coverage line}"
  if [ "$rc" -ne 0 ]; then
    failed=1
    line="$line, CRASHED (exit $rc)"
    # the first report: a violated contract with the program that broke it (fuzz::bug prints it up to
    # libFuzzer's "deadly signal" line), or a sanitizer's error and summary lines
    if grep -q 'contract violated' "$work/$t.log"; then
      sed -n '/contract violated/,/deadly signal/p' "$work/$t.log" | head -40
    else
      grep -E 'ERROR|runtime error|SUMMARY' "$work/$t.log" | head -5 || true
    fi
    for c in "$crashes"/*; do
      [ -e "$c" ] && echo "   saved input: $c   replay: $build/tests/fuzz/$t $c"
    done
    echo "   log: $work/$t.log"
  fi
  echo "$line"
  summary+=("$line")
done
echo "== fuzz summary"
printf '  %s\n' "${summary[@]}"
exit $failed
