#!/usr/bin/env bash
# tools/gpu_check.sh: the one prepared script for a machine with an NVIDIA GPU, built to run on a bare
# one (no apt, no network, no doctest, no OpenBLAS, maybe no zlib headers, no dataset) within one
# device session: run tools/gpu_prepare.sh here first and carry gpu-deps/ along. Stages, in order, each
# under its own time cap (the caps add up to 810 s, and a total budget of 470 s stops the run before
# 8 minutes: the stages after the budget SKIP, so a second call with --stages runs them), each giving
# one verdict line: PASS, FAIL(exit status), TIMEOUT, or SKIP with the reason:
#   build       configure (ninja when present; CUDA for TG_CUDA_ARCH only) and build only what the
#               stages need: tensorgrad_tests, train_fashion_mnist, train_gpt2, and tools/gpu_probe
#               against the installed package
#   parity      the CUDA cases of the suite (tensorgrad_tests -tc='cuda*') with TG_REQUIRE_CUDA=1, so a
#               missing GPU fails; among them the NCCL process group ('cuda: nccl*': collectives and DDP
#               at world size 1, and at 2 and 3 as processes sharing the GPU by Note [Several ranks on
#               one GPU], with a withheld collective), which fail when libnccl.so.2 cannot be loaded;
#               the CPU cases are left to CI, for time
#   gpt2, gpt2_amp
#               examples/14_train_gpt2: GPT-2 small (124M) on synthetic tokens, batch 8 x 1024, 10 steps
#               in float32 (TF32 off) and under bfloat16 autocast: median step, tokens/s, peak memory; a
#               loss that does not fall fails (the emulator runs the tiny preset)
#   gpt2_torch  tools/gpu_torch_gpt2.py: the same model, batch and steps in PyTorch eager and
#               torch.compile, float32 and bfloat16 autocast, with tokens/s ratios against the gpt2 logs
#   ladder      the softmax kernel ladder of dev/cuda/ (cuda_ladder_softmax, built here): every kernel
#               and block size against its CPU reference, with TG_REQUIRE_CUDA=1; prints its table
#   bench       tools/gpu_probe --bench: each kernel family against a device-to-device copy of the same
#               run, the GEMMs, the README's MLP step (batch 64 and 1024) and its launches per step
#   bench_torch tools/gpu_torch_bench.py: the same GEMMs and MLP steps in PyTorch eager on this GPU,
#               with the ratios (SKIP when python3 cannot import torch or torch sees no GPU)
#   memcheck, racecheck, initcheck, synccheck
#               compute-sanitizer on reduced sets of CUDA cases, with the passthrough allocator so that
#               every block has its exact size
#   train       train_fashion_mnist on cuda for 2 epochs: on the carried Fashion-MNIST
#               (gpu-deps/fashion-mnist, gpu_prepare.sh --with-data) or the installed one when present,
#               else on --synthetic images; a final accuracy below the floor fails it
#   train_amp   the same with --amp (float16 autocast and a GradScaler), the same floor
# Output: $OUT/summary.txt (the verdicts, also printed) and $OUT/gpu_check_logs.tar.gz (every log and
# the summary); without OUT, both go to ./gpu_check_logs/. Exit status 0 when no stage failed or timed out.
#
# Modes and environment:
#   --emulate (TG_GPU_CHECK_EMULATE=1)  the CUDA emulator instead of nvcc and a GPU
#       (-DTENSORGRAD_CUDA_EMULATE=ON, build-gpu-emu): build, parity, bench and train run on it, with the
#       bench's numbers meaningless (it says so); compute-sanitizer and PyTorch stages SKIP with the
#       reason. Caps and budget are multiplied by TG_GPU_CHECK_SCALE (default 12 here, 1 on a GPU).
#   --bare (TG_GPU_CHECK_BARE=1)  act as on the bare GPU machine even where this one has more:
#       find_package(doctest) and FindBLAS disabled, zlib's headers taken from gpu-deps/zlib with the
#       system's libz.so.1
#   --stages A,B,...  run only these stages (the build always runs): e.g. --stages gpt2,gpt2_amp,gpt2_torch
#       for the transformer alone; the others print SKIP "not selected"
#   TG_GPU_CHECK_ZLIB=off  build without zlib (plain IDX files only)
#   TG_CUDA_ARCH (default: the GPU's compute capability, else 90), JOBS (default: all cores),
#   TG_GPU_CHECK_BUDGET (seconds), TG_GPU_CHECK_BUILD (build folder).
set -u
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
emulate=${TG_GPU_CHECK_EMULATE:-0}
bare=${TG_GPU_CHECK_BARE:-0}
selected=""   # empty: every stage
known_stages=" build parity ladder bench bench_torch memcheck racecheck initcheck synccheck train train_amp gpt2 gpt2_amp gpt2_torch "
while [ $# -gt 0 ]; do
  arg=$1
  shift
  case $arg in
    --emulate) emulate=1 ;;
    --bare) bare=1 ;;
    --stages=*) selected=${arg#--stages=} ;;
    --stages)
      [ $# -gt 0 ] || { echo "gpu_check.sh: --stages needs a list (try --help)" >&2; exit 2; }
      selected=$1
      shift ;;
    -h | --help) sed -n '2,/^set -u$/p' "$0" | sed '$d' | cut -c3-; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
for name in ${selected//,/ }; do
  case $known_stages in
    *" $name "*) ;;
    *) echo "gpu_check.sh: --stages: no stage '$name' (stages:$known_stages)" >&2; exit 2 ;;
  esac
done
# wanted NAME: whether --stages selects the stage (the build always runs)
wanted() { [ -z "$selected" ] || [ "$1" = build ] || [[ ",$selected," == *",$1,"* ]]; }
if [ "$emulate" = 1 ]; then
  mode=emulator scale=${TG_GPU_CHECK_SCALE:-12} build=${TG_GPU_CHECK_BUILD:-$root/build-gpu-emu}
else
  mode=gpu scale=${TG_GPU_CHECK_SCALE:-1} build=${TG_GPU_CHECK_BUILD:-$root/build-gpu}
fi
budget=${TG_GPU_CHECK_BUDGET:-$((470 * scale))}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}
deps=$root/gpu-deps
dest=${OUT:-$root/gpu_check_logs}
logs=$root/gpu_check_logs/$mode
rm -rf "$logs"
mkdir -p "$logs" "$dest" || exit 2
start=$(date +%s)

names=() statuses=() seconds=() notes=()
elapsed() { echo $(($(date +%s) - start)); }

# record NAME STATUS SECONDS NOTE: one verdict line, printed now and kept for the summary.
record() {
  names+=("$1") statuses+=("$2") seconds+=("$3") notes+=("$4")
  printf '== %-11s %-9s %5ss  %s\n' "$1" "$2" "$3" "$4"
}
skip() { record "$1" SKIP 0 "$2"; }

# stage NAME CAP NOTE_SNIPPET -- COMMAND...: runs COMMAND with its output in $logs/NAME.log under a
# timeout of min(CAP * scale, what is left of the budget). NOTE_SNIPPET (shell, reading $log) gives the
# note of the verdict line (its lines joined by "; "). Exit status 77 means SKIP (the note says why).
stage() {
  local name=$1 max=$(($2 * scale)) note_cmd=$3
  shift 4
  local log=$logs/$name.log left t0 rc status note
  if ! wanted "$name"; then
    skip "$name" "not selected (--stages $selected)"
    return
  fi
  left=$((budget - $(elapsed) - 5))
  if [ "$left" -lt 10 ]; then
    skip "$name" "no time left in the ${budget}s budget"
    return
  fi
  [ "$max" -gt "$left" ] && max=$left
  echo "-- $name: $(echo "$*" | head -n 1 | cut -c1-150) (timeout ${max}s, log $log)"
  t0=$(date +%s)
  timeout --kill-after=10 "$max" "$@" > "$log" 2>&1
  rc=$?
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124 | 137) status=TIMEOUT ;;
    *) status="FAIL($rc)" ;;
  esac
  note=$(root=$root log=$log bash -c "$note_cmd" 2>/dev/null | grep . | paste -sd '|' - | sed 's/|/; /g' | cut -c1-150)
  [ "$status" = TIMEOUT ] && note="after ${max}s; $note"
  record "$name" "$status" $(($(date +%s) - t0)) "$note"
  if [ "$status" != PASS ] && [ "$status" != SKIP ]; then
    echo "-- last lines of $log:"
    tail -n 20 "$log"
  fi
}

# "27 cases (0 failed), 5210 assertions (0 failed)" from a doctest log.
counts='awk -F"|" "/^\[doctest\] test cases:/ {split(\$1, a, \":\"); c = a[2] + 0; cf = \$3 + 0}
  /^\[doctest\] assertions:/ {split(\$1, a, \":\"); n = a[2] + 0; nf = \$3 + 0}
  END {if (c) printf \"%d cases (%d failed), %d assertions (%d failed)\", c, cf, n, nf}" "$log"'

# ---- the machine
{
  echo "date: $(date -u)"
  echo "mode: $mode, bare: $bare, jobs: $jobs, budget: ${budget}s, build: $build"
  [ -f "$deps/source.txt" ] && cat "$deps/source.txt"
  uname -a
  nvidia-smi 2>&1 || echo "nvidia-smi not available"
  command -v nvcc && nvcc --version
  command -v compute-sanitizer && compute-sanitizer --version
  cmake --version | head -n 1
  command -v ninja && ninja --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -n 1
  free -g 2>/dev/null
} > "$logs/machine.log" 2>&1
arch=${TG_CUDA_ARCH:-}
if [ -z "$arch" ]; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  case $arch in '' | *[!0-9]*) arch=90 ;; esac
fi
echo "== tools/gpu_check.sh ($mode$([ "$bare" = 1 ] && echo ', bare'); $jobs jobs, budget ${budget}s; logs in $logs)"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader 2>/dev/null || true

# ---- configuration: what this machine lacks comes from gpu-deps/ (tools/gpu_prepare.sh). Every
# switch is passed explicitly, ON or OFF, so that a build folder configured by an earlier run with
# other switches (CMake keeps them in its cache) is configured as this run says.
cfg=(-DCMAKE_BUILD_TYPE=Release -DTENSORGRAD_BUILD_BENCH=OFF -DTENSORGRAD_BUILD_TESTS=ON -DTENSORGRAD_BUILD_EXAMPLES=ON)
if [ "$emulate" = 1 ]; then
  cfg+=(-DTENSORGRAD_CUDA_EMULATE=ON)
else
  cfg+=(-DTENSORGRAD_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$arch")
fi
gen=()   # ninja when present (the GPU machine may have no make); a configured folder keeps its generator
[ ! -f "$build/CMakeCache.txt" ] && command -v ninja > /dev/null && gen=(-G Ninja)
config_notes=()
if [ -f "$deps/doctest/doctest/doctest.h" ]; then
  cfg+=("-DTENSORGRAD_DOCTEST_DIR=$deps/doctest")
  config_notes+=("doctest from gpu-deps")
else
  cfg+=(-DTENSORGRAD_DOCTEST_DIR=)
fi
on_if_bare=$([ "$bare" = 1 ] && echo ON || echo OFF)
cfg+=("-DCMAKE_DISABLE_FIND_PACKAGE_doctest=$on_if_bare" "-DCMAKE_DISABLE_FIND_PACKAGE_BLAS=$on_if_bare")
# zlib: the system's headers, else gpu-deps/zlib's with the system's libz.so.1 (zlib's gz* ABI has been
# stable for a decade), else none (plain IDX files only). zlib holds the switches for the library and
# for gpu_probe's configure (the installed package looks for zlib again).
have_zlib=1
libz=$(ldconfig -p 2> /dev/null | awk '$1 == "libz.so.1" && /x86-64/ {print $NF; exit}')
for c in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib64/libz.so.1 /lib64/libz.so.1; do
  [ -z "$libz" ] && [ -f "$c" ] && libz=$c
done
if [ "${TG_GPU_CHECK_ZLIB:-}" = off ]; then
  zlib=(-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON) have_zlib=0
  config_notes+=("no zlib (TG_GPU_CHECK_ZLIB=off)")
elif [ "$bare" = 0 ] && echo '#include <zlib.h>' | ${CXX:-c++} -E -x c++ - > /dev/null 2>&1; then
  # FindZLIB searches again (an earlier run may have cached gpu-deps' headers)
  zlib=(-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=OFF -UZLIB_INCLUDE_DIR -UZLIB_LIBRARY -UZLIB_LIBRARY_RELEASE -UZLIB_LIBRARY_DEBUG)
  config_notes+=("system zlib")
elif [ -f "$deps/zlib/zlib.h" ] && [ -n "$libz" ]; then
  zlib=(-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=OFF "-DZLIB_INCLUDE_DIR=$deps/zlib" "-DZLIB_LIBRARY=$libz")
  config_notes+=("zlib headers from gpu-deps, $libz")
else
  zlib=(-DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON) have_zlib=0
  config_notes+=("no zlib (no headers here or in gpu-deps, or no libz.so.1)")
fi
[ "$bare" = 1 ] && config_notes+=("OpenBLAS disabled")
cfg+=("${zlib[@]}")
tests=$build/tests/tensorgrad_tests
probe=$build/probe/build/gpu_probe
trainer=$build/examples/train_fashion_mnist
emu_env=(TG_GPU_CHECK=1)   # never empty: bash before 4.4 calls an empty array under set -u unbound
[ "$emulate" = 1 ] && emu_env+=(TG_CUDA_EMULATE_DEVICES=1)   # the one device of the H200 machine

# ---- 1. build
q() { printf '%q ' "$@"; }
build_cmd="set -e
$(q cmake -S "$root" -B "$build" ${gen[@]+"${gen[@]}"} "${cfg[@]}")
$(q cmake --build "$build" -j"$jobs" --target tensorgrad_tests train_fashion_mnist train_gpt2)
rm -rf $(q "$build/probe")
$(q cmake --install "$build" --prefix "$build/probe/prefix")
$(q cmake -S "$root/tools/gpu_probe" -B "$build/probe/build" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_PREFIX_PATH=$build/probe/prefix" "${zlib[@]}")
$(q cmake --build "$build/probe/build" -j"$jobs")"
echo "$build_cmd" > "$logs/build_commands.txt"
echo "-- build commands: $logs/build_commands.txt"
stage build 190 'grep -m1 -E "error:|FAILED:|CMake Error" "$log" ||
  grep -E "^-- tensorgrad: (the CUDA backend runs on|CUDA backend ON|NCCL backend|zlib|OpenBLAS|doctest)" "$log" |
  sed "s/^-- tensorgrad: //; s/ (.*//; s|$root/||"' -- bash -c "$build_cmd"
built=0
[ "${statuses[-1]}" = PASS ] && built=1
info="(no build)"
if [ $built -eq 1 ]; then
  # tg::cuda::info() through the installed package, for the summary
  env "${emu_env[@]}" timeout 60 "$probe" > "$logs/info.log" 2>&1
  info=$(grep -E "^CUDA: |^  cuda:0 " "$logs/info.log" | sed 's/^  //' | paste -sd '|' - | sed 's/|/; /g')
fi

# ---- 2. parity: the CUDA cases, a missing GPU failing instead of skipping
if [ $built -eq 1 ]; then
  stage parity 90 "$counts" -- env TG_REQUIRE_CUDA=1 "${emu_env[@]}" "$tests" -tc='cuda*'
else
  skip parity "no build"
fi

# ---- 2a. the transformer: GPT-2 small on synthetic tokens, then PyTorch on the same shape
gpt2=$build/examples/train_gpt2
if [ "$emulate" = 1 ]; then
  gpt2_args=(--device cuda --preset tiny --steps 30 --lr 3e-3 --check)   # host fibers: the tiny shape only
else
  gpt2_args=(--device cuda --preset gpt2 --batch-size 8 --steps 10 --warmup 3 --check)
fi
gpt2_note='grep -m1 "^median step" "$log" | sed "s/ over [0-9]* steps//"; grep -m1 "^loss" "$log"'
if [ $built -eq 1 ]; then
  stage gpt2 60 "$gpt2_note" -- env "${emu_env[@]}" "$gpt2" "${gpt2_args[@]}"
  stage gpt2_amp 45 "$gpt2_note" -- env "${emu_env[@]}" "$gpt2" "${gpt2_args[@]}" --amp
else
  skip gpt2 "no build"
  skip gpt2_amp "no build"
fi
if [ "$emulate" = 1 ]; then
  skip gpt2_torch "emulator: PyTorch on a GPU is the reference, and there is none"
elif ! python3 -c 'import torch' > /dev/null 2>&1; then
  skip gpt2_torch "python3 cannot import torch"
else
  stage gpt2_torch 150 'grep -E "^(eager|compile) " "$log" | sed "s/  */ /g"' -- \
    python3 "$root/tools/gpu_torch_gpt2.py" --batch-size 8 --steps 10 --warmup 3 \
    --ours "$logs/gpt2.log" --ours-amp "$logs/gpt2_amp.log"
fi

# ---- 2b. the kernel ladder of dev/cuda/: built in its own stage, so that a broken ladder fails only it
if [ $built -eq 1 ]; then
  stage ladder 30 'grep -m1 -E "^(all |FAILED)" "$log"
    sed -nE "s/^  fastest on \(([0-9]+), ([0-9]+)\): kernel ([0-9]+) at block ([0-9]+), .* ([0-9.]+ GB\/s)/\1x\2: kernel \3, \5/p" "$log"' -- \
    bash -c "$(q cmake --build "$build" --target cuda_ladder_softmax) && $(q env TG_REQUIRE_CUDA=1 "${emu_env[@]}" "$build/dev/cuda/cuda_ladder_softmax")"
  sed -n '/^softmax forward ladder/,$p' "$logs/ladder.log"   # the table
else
  skip ladder "no build"
fi

# ---- 3. bench, then PyTorch on the same rows
tsv=$logs/bench.tsv
if [ $built -eq 1 ] && [ "$emulate" = 1 ]; then
  stage bench 35 'echo "emulator: times meaningless for a GPU; $(grep -c " ms " "$log") rows; $(grep -m1 "MLP step" "$log" | sed "s/  */ /g; s/ (no counter.*//")"' -- \
    env "${emu_env[@]}" "$probe" --bench --reps 2 --log2n 14 --tsv "$tsv"
elif [ $built -eq 1 ]; then
  stage bench 35 'grep -m1 "^CUDA: not available" "$log"; sed -n "s|^copy D2D.* \([0-9.]*\) GB/s.*|copy D2D \1 GB/s|p" "$log"
    grep -m1 "MLP step, batch 64 " "$log" | sed "s/  */ /g"' -- \
    "$probe" --bench --reps 10 --tsv "$tsv"
else
  skip bench "no build"
fi
if [ "$emulate" = 1 ]; then
  skip bench_torch "emulator: PyTorch on a GPU is the reference, and there is none"
elif [ ! -s "$tsv" ]; then
  skip bench_torch "no bench rows ($tsv)"
elif ! python3 -c 'import torch' > /dev/null 2>&1; then
  skip bench_torch "python3 cannot import torch"
else
  stage bench_torch 30 'grep -m1 "MLP step, batch 64 " "$log" | sed "s/  */ /g"; grep -m1 "sees no CUDA" "$log"' -- \
    python3 "$root/tools/gpu_torch_bench.py" "$tsv" --reps 10
fi

# ---- 4. compute-sanitizer on reduced sets, exact block sizes (passthrough allocator)
sanitizer=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [ -z "$sanitizer" ] && [ -x "$c" ] && sanitizer=$c
done
# NAME CAP PARITY_FILTER CASES TOOL_FLAGS: racecheck and synccheck look at shared memory and barriers,
# so they get the block reductions (the parity rows named "rows": reductions, softmax, cross-entropy).
sanitize_sets=(
  "memcheck|55||cuda parity: every op and gradient in float32*,cuda: tensors move*,cuda: creation*,cuda parity: *int64*,cuda: an out-of-range*,cuda: optimizer*,cuda: pinned*|--tool memcheck --leak-check no"
  "racecheck|35|rows|cuda parity: every op and gradient in float32*,cuda: reductions*|--tool racecheck"
  "initcheck|30||cuda: tensors move*,cuda: creation*,cuda: optimizer*,cuda: reductions*,cuda: the tutorial MLP*|--tool initcheck"
  "synccheck|20|rows|cuda parity: every op and gradient in float32*,cuda: reductions*|--tool synccheck"
)
for entry in "${sanitize_sets[@]}"; do
  IFS='|' read -r name cap filter cases flags <<< "$entry"
  if ! wanted "$name"; then
    skip "$name" "not selected (--stages $selected)"
    continue
  fi
  if [ $built -eq 0 ]; then
    skip "$name" "no build"
    continue
  fi
  # a set that selects nothing would pass without checking anything
  n=$(env "${emu_env[@]}" "$tests" -ltc -tc="$cases" 2>/dev/null | awk -F': ' '/passing the current filters/ {print $2}')
  if [ "${n:-0}" -eq 0 ]; then
    record "$name" FAIL 0 "the case filter selects no test case: $cases"
  elif [ "$emulate" = 1 ]; then
    skip "$name" "emulator: compute-sanitizer needs a GPU (its set selects $n cases)"
  elif [ -z "$sanitizer" ]; then
    skip "$name" "compute-sanitizer not found"
  else
    # shellcheck disable=SC2086  # flags are words
    stage "$name" "$cap" 'grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -n 1; '"$counts" -- \
      env TG_REQUIRE_CUDA=1 TG_CUDA_ALLOCATOR=passthrough ${filter:+TG_CUDA_PARITY_FILTER=$filter} \
      "$sanitizer" $flags --error-exitcode 3 "$tests" -tc="$cases"
  fi
done

# ---- 5. training on the GPU, 2 epochs: a carried or installed Fashion-MNIST, else synthetic images
data=""
for d in "$deps/fashion-mnist" /usr/share/datasets/fashion-mnist; do
  [ -f "$d/train-images-idx3-ubyte.gz" ] && [ -z "$data" ] && data=$d
done
[ "$have_zlib" = 0 ] && data=""   # the dataset is gzip: a build without zlib trains on synthetic images
train_args=(--device cuda --epochs 2 --checkpoint "$build/gpu_check_train.safetensors")
if [ "$emulate" = 1 ]; then
  train_args+=(--synthetic 2000 --min-accuracy 0.9)   # the emulator runs a GPU step in host fibers: slow
elif [ -n "$data" ]; then
  train_args+=(--data "$data" --min-accuracy 0.8)     # 2 epochs of Fashion-MNIST reach about 86%
else
  train_args+=(--synthetic 20000 --min-accuracy 0.9)
fi
train_note='grep -m1 "^data:" "$log" | sed "s/ from .*//"; grep -E "^trained|FAIL|error" "$log" | tail -n 1'
if [ $built -eq 1 ]; then
  stage train 20 "$train_note" -- env "${emu_env[@]}" "$trainer" "${train_args[@]}"
  # the same run in mixed precision: float16 autocast with a GradScaler on CUDA, same accuracy floor
  stage train_amp 20 "$train_note" -- env "${emu_env[@]}" "$trainer" "${train_args[@]}" --amp \
    --checkpoint "$build/gpu_check_train_amp.safetensors"
else
  skip train "no build"
  skip train_amp "no build"
fi

# ---- summary and archive
failed=0
{
  echo "tools/gpu_check.sh summary: $mode mode$([ "$bare" = 1 ] && echo ' (bare)'), $(elapsed)s of a ${budget}s budget, $jobs jobs, CUDA arch $([ "$emulate" = 1 ] && echo 'none (emulator)' || echo "$arch")"
  [ -f "$deps/source.txt" ] && head -n 2 "$deps/source.txt"
  printf 'configuration: %s\n' "$(IFS=';'; echo "${config_notes[*]:-system packages}" | sed 's/;/; /g')"
  echo "$info"
  printf '%-11s %-9s %7s  %s\n' stage status seconds note
  for i in "${!names[@]}"; do
    printf '%-11s %-9s %7s  %s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}" "${notes[$i]}"
    case ${statuses[$i]} in PASS | SKIP) ;; *) failed=1 ;; esac
  done
  echo "overall: $([ $failed -eq 0 ] && echo PASS || echo FAIL) (logs: gpu_check_logs.tar.gz)"
} > "$logs/summary.txt"
grep -qE '^overall: FAIL' "$logs/summary.txt" && failed=1
# a runaway log (a sanitizer reporting the same error a million times) keeps its head and tail
for f in "$logs"/*; do
  if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 4000000 ]; then
    { head -c 2000000 "$f"; printf '\n[... %s bytes cut by gpu_check.sh ...]\n' "$(stat -c %s "$f")"; tail -c 2000000 "$f"; } > "$f.cut"
    mv "$f.cut" "$f"
  fi
done
tar -czf "$dest/gpu_check_logs.tar.gz" -C "$(dirname "$logs")" "$(basename "$logs")"
[ "$dest" != "$logs" ] && cp "$logs/summary.txt" "$dest/summary.txt"
echo
cat "$logs/summary.txt"
exit $failed
