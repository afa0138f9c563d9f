#!/usr/bin/env bash
# bench/run_all.sh: what `make bench` runs after building: every benchmark at 1 and 2 threads,
# the checkpoint benchmark once, then the footprint, each printing its own table; then the
# summary of every "TARGET" line with its verdict (met / MISSED / n/a).
# Usage: bench/run_all.sh BUILD_DIR [extra flags for every bench_* binary]
# Exit status: non-zero when a benchmark failed to run (never because a target was missed).
set -uo pipefail
build=${1:?usage: run_all.sh BUILD_DIR [flags]}
shift
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()

echo "tensorgrad benchmarks vs libtorch | $(date -u '+%Y-%m-%d %H:%M UTC') | $(uname -sr)"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
  "$(grep -o 'avx512f' /proc/cpuinfo | head -1 || echo 'no avx512f')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (a benchmark adds ~1 per thread it runs; rows run well above that may be disturbed)"
echo "libtorch: $(dpkg-query -W -f='${Package} ${Version}' libtorch-dev 2>/dev/null || echo 'not installed')"

for threads in 1 2; do
  for name in overhead mlp matmul elementwise softmax_ce fashion_mnist double_backward; do
    # Fashion-MNIST: 3 epochs, so that the cosine schedule ends at a small learning rate and the engines'
    # accuracies compare (after 1 epoch at lr 0.05 rounding noise alone moves them ~1 point); a later
    # --epochs N among the extra flags overrides it.
    extra=()
    [ "$name" = fashion_mnist ] && extra=(--epochs 3)
    "$build/bench/bench_$name" --threads "$threads" "${extra[@]}" "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || failed+=("bench_$name --threads $threads (exit $rc)")
  done
done
# Checkpoint speed does not depend on the thread count: one run.
"$build/bench/bench_checkpoint" "$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || failed+=("bench_checkpoint (exit $rc)")
# Memory: activation bytes do not depend on the thread count; the recomputation overhead is
# measured on 1 thread.
"$build/bench/bench_memory" --threads 1 "$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || failed+=("bench_memory (exit $rc)")
# Mixed precision: one run on 1 thread.
"$build/bench/bench_amp" --threads 1 "$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || failed+=("bench_amp (exit $rc)")
# int8 dynamic quantization: 1 and 2 threads (oneDNN follows --threads, whatever
# OMP_NUM_THREADS says: Note [oneDNN threads]).
for t in 1 2; do
  "$build/bench/bench_quantized" --threads "$t" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed+=("bench_quantized --threads $t (exit $rc)")
done
# Layers and whole training steps of the examples: 1 and 2 threads. The 2-thread training steps run each
# engine in a process of its own (--isolate: Note [Engines in their own processes] in bench/common.h).
for name in layers train_steps; do
  for t in 1 2; do
    iso=()
    [ "$name" = train_steps ] && [ "$t" -gt 1 ] && iso=(--isolate)
    "$build/bench/bench_$name" --threads "$t" "${iso[@]}" "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || failed+=("bench_$name --threads $t (exit $rc)")
  done
done
fp_flags=()
for a in "$@"; do [ "$a" = --smoke ] && fp_flags=(--smoke); done
"$here/footprint.sh" "$build" "${fp_flags[@]}" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || failed+=("footprint.sh (exit $rc)")

echo
echo "== summary: the targets (ratios measured in the same run; lower time is better)"
printf '%-6s  %-10s  %-46s %-10s %-44s %-37s %s\n' "" "load avg" "workload" "threads" "measured" "target" "verdict"
grep '^TARGET' "$log"
met=$(grep -c '^TARGET.* met$' "$log")
missed=$(grep -c '^TARGET.* MISSED$' "$log")
echo "targets met: $met, missed: $missed; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
