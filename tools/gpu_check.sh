#!/usr/bin/env bash
# tools/gpu_check.sh: the one prepared script for a machine with an NVIDIA GPU (DESIGN.md section 8,
# issue 4). Builds with CUDA for the local architecture (90 on H100/H200) into build-gpu, prints
# tg::cuda::info(), runs the whole suite with TG_REQUIRE_CUDA=1, the CPU-vs-CUDA parity tests,
# compute-sanitizer memcheck and racecheck on a reduced set with the passthrough allocator, the
# Fashion-MNIST example on cuda for 2 epochs and the GPU kernel benchmarks (tools/gpu_probe), then
# prints a summary table. Each stage runs under its own timeout within a total budget (default 470 s,
# under 8 minutes on one H200); a failing stage is recorded and the script goes on. Logs go to
# $OUT/gpu_check when OUT is set, else ./gpu_check_logs. Exit status: 0 when every stage that ran passed.
# Environment: TG_CUDA_ARCH (default: the GPU's compute capability, else 90), JOBS, TG_GPU_CHECK_BUDGET.
set -u
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
logs=${OUT:+$OUT/gpu_check}
logs=${logs:-$root/gpu_check_logs}
mkdir -p "$logs"
build=$root/build-gpu
budget=${TG_GPU_CHECK_BUDGET:-470}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
start=$(date +%s)

names=() statuses=() seconds=() notes=()

elapsed() { echo $(($(date +%s) - start)); }

# record NAME STATUS SECONDS NOTE
record() {
  names+=("$1") statuses+=("$2") seconds+=("$3") notes+=("$4")
  printf '== %-10s %-8s %4ss  %s\n' "$1" "$2" "$3" "$4"
}

# stage NAME MAX_SECONDS NOTE_COMMAND -- COMMAND...: runs COMMAND with its output in $logs/NAME.log, under
# timeout min(MAX_SECONDS, what is left of the budget); NOTE_COMMAND (a shell snippet reading $log)
# extracts the line shown in the summary.
stage() {
  local name=$1 max=$2 note_cmd=$3
  shift 4
  local log=$logs/$name.log left t0 rc status note
  left=$((budget - $(elapsed) - 5))
  if [ "$left" -lt 15 ]; then
    record "$name" SKIP 0 "no time left in the ${budget}s budget"
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  echo "== $name: $* (timeout ${max}s, log $log)"
  t0=$(date +%s)
  timeout --kill-after=10 "$max" "$@" > "$log" 2>&1
  rc=$?
  case $rc in
    0) status=PASS ;;
    124 | 137) status=TIMEOUT ;;
    *) status="FAIL($rc)" ;;
  esac
  note=$(log=$log bash -c "$note_cmd" 2>/dev/null | tail -n 1 | cut -c1-90)
  record "$name" "$status" $(($(date +%s) - t0)) "$note"
  if [ "$status" != PASS ]; then
    echo "-- last lines of $log:"
    tail -n 25 "$log"
  fi
}

skip() { record "$1" SKIP 0 "$2"; }

# ---- 0. the machine
{
  echo "date: $(date -u)"
  nvidia-smi 2>&1 || echo "nvidia-smi not available"
  command -v nvcc && nvcc --version
  echo "cores: $jobs"
} > "$logs/machine.log" 2>&1
arch=${TG_CUDA_ARCH:-}
if [ -z "$arch" ]; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  case $arch in '' | *[!0-9]*) arch=90 ;; esac
fi
echo "== GPU check: architecture $arch, $jobs jobs, budget ${budget}s, logs in $logs"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>/dev/null || true

# ---- 1. build (library, tests, examples; bench/ has no GPU modes: tools/gpu_probe --bench instead)
stage build 240 'grep -E "error|warning" "$log" | head -n 1; grep -c "Building" "$log" | sed "s/$/ objects built/"' -- \
  bash -c "cmake -S '$root' -B '$build' -DCMAKE_BUILD_TYPE=Release -DTENSORGRAD_CUDA=ON \
             -DCMAKE_CUDA_ARCHITECTURES=$arch -DTENSORGRAD_BUILD_BENCH=OFF &&
           cmake --build '$build' -j$jobs"
built=0
[ "${statuses[-1]}" = PASS ] && built=1

# ---- 2. tg::cuda::info() through an installed consumer (find_package), which the benchmark reuses
if [ $built -eq 1 ]; then
  stage info 90 'grep -E "CUDA: |cuda:0|smoke" "$log" | head -n 3 | tr "\n" " "' -- \
    bash -c "rm -rf '$build/probe' && cmake --install '$build' --prefix '$build/probe/prefix' > /dev/null &&
             cmake -S '$root/tools/gpu_probe' -B '$build/probe/build' -DCMAKE_BUILD_TYPE=Release \
                   -DCMAKE_PREFIX_PATH='$build/probe/prefix' > /dev/null &&
             cmake --build '$build/probe/build' -j$jobs > /dev/null && '$build/probe/build/gpu_probe'"
  cat "$logs/info.log"
else
  skip info "no build"
fi

# ---- 3. the whole suite, a missing GPU failing instead of skipping
if [ $built -eq 1 ]; then
  stage suite 170 'grep -E "tests passed|tests failed" "$log"' -- \
    env TG_REQUIRE_CUDA=1 ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 150
else
  skip suite "no build"
fi

# ---- 4. the CPU-vs-CUDA parity tests alone, with their messages (cases run per dtype)
tests=$build/tests/tensorgrad_tests
if [ $built -eq 1 ]; then
  stage parity 90 'grep -E "test cases:" "$log"' -- env TG_REQUIRE_CUDA=1 "$tests" -tc="cuda*"
else
  skip parity "no build"
fi

# ---- 5-6. compute-sanitizer on a reduced set, real bounds (passthrough allocator)
sanitizer=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -z "$sanitizer" ] && [ -x "$c" ] && sanitizer=$c
done
memcheck_set="cuda parity: every op and gradient in float32*,cuda: tensors move*,cuda: creation*,cuda parity: every op in int64*,cuda: an out-of-range*,cuda: optimizer*,cuda: pinned*"
if [ $built -eq 1 ] && [ -n "$sanitizer" ]; then
  stage memcheck 110 'grep -E "ERROR SUMMARY|test cases:" "$log" | tr "\n" " "' -- \
    env TG_REQUIRE_CUDA=1 TG_CUDA_ALLOCATOR=passthrough "$sanitizer" --tool memcheck --leak-check no \
    --error-exitcode 3 "$tests" -tc="$memcheck_set"
  # racecheck looks at shared memory: the block reductions (reductions, softmax, cross-entropy rows)
  stage racecheck 80 'grep -E "RACECHECK SUMMARY|ERROR SUMMARY|test cases:" "$log" | tr "\n" " "' -- \
    env TG_REQUIRE_CUDA=1 TG_CUDA_ALLOCATOR=passthrough TG_CUDA_PARITY_FILTER=rows "$sanitizer" --tool racecheck \
    --error-exitcode 3 "$tests" -tc="cuda parity: every op and gradient in float32*,cuda: reductions*"
elif [ $built -eq 1 ]; then
  skip memcheck "compute-sanitizer not found"
  skip racecheck "compute-sanitizer not found"
else
  skip memcheck "no build"
  skip racecheck "no build"
fi

# ---- 7. the Fashion-MNIST example on the GPU, 2 epochs
data=/usr/share/datasets/fashion-mnist
if [ $built -eq 1 ] && { [ -f "$data/train-images-idx3-ubyte.gz" ] || [ -f "$data/train-images-idx3-ubyte" ]; }; then
  stage train 100 'grep -E "test accuracy" "$log"' -- \
    "$build/examples/train_fashion_mnist" --device cuda --epochs 2 --checkpoint "$logs/fmnist.safetensors"
elif [ $built -eq 1 ]; then
  skip train "Fashion-MNIST not in $data (apt-get install dataset-fashion-mnist)"
else
  skip train "no build"
fi

# ---- 8. GPU kernel benchmarks (bytes or FLOPs per call against the H200's 4.3 TB/s and cuBLAS)
if [ -x "$build/probe/build/gpu_probe" ]; then
  stage bench 90 'grep -E "binary add, float4" "$log"' -- "$build/probe/build/gpu_probe" --bench --reps 10
  cat "$logs/bench.log"
else
  skip bench "gpu_probe was not built"
fi

# ---- summary
echo
echo "== tools/gpu_check.sh summary (architecture $arch, $(elapsed)s of ${budget}s, logs in $logs)"
printf '%-10s %-9s %6s  %s\n' stage status seconds note
failed=0
for i in "${!names[@]}"; do
  printf '%-10s %-9s %6s  %s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}" "${notes[$i]}"
  case ${statuses[$i]} in PASS | SKIP) ;; *) failed=1 ;; esac
done | tee "$logs/summary.txt"
grep -qE ' (FAIL|TIMEOUT)' "$logs/summary.txt" && failed=1
exit $failed
