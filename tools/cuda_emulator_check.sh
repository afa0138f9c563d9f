#!/usr/bin/env bash
# tools/cuda_emulator_check.sh: runs the CUDA backend on the CUDA emulator (tests/cuda_emulator/, no GPU):
# builds BUILD_DIR with -DTENSORGRAD_CUDA_EMULATE=ON, runs the whole CUDA suite (tensorgrad_tests
# -tc='cuda*' with TG_REQUIRE_CUDA=1, and the emulator's self-tests) with 2 emulated devices in immediate
# and in deferred stream mode, then requires each planted bug to fail the suite: a missing __syncthreads
# in the block reduction, a pinned host buffer reused before its asynchronous copy ran, and a bias
# pointer one element off in cuBLASLt's bias epilogues (linear's folded bias). Also runs the kernel
# ladder of dev/cuda/ (cuda_ladder_softmax --small: every kernel against its CPU reference) in both
# modes, and requires a missing __syncthreads in its shared-memory reduction to fail it. With "asan",
# also builds BUILD_DIR-asan with clang and address,undefined and runs the suite in deferred mode with
# the passthrough allocator (exact block sizes), plus a planted out-of-bounds device read that ASan must
# report. Deferred mode is the one ASan adds most to: a kernel runs at the stream's synchronization, so
# a block freed or a host buffer reused before then is a use-after-free ASan reports; immediate mode
# under ASan repeats what the two modes without it already ran, at four times their cost. One verdict
# line per stage; the exit status is 0 only when every stage passed.
# Usage: cuda_emulator_check.sh BUILD_DIR [asan]
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: cuda_emulator_check.sh BUILD_DIR [asan]}"
what="${2:-}"
jobs="${JOBS:-2}"
log_dir="$(mktemp -d)"
failed=0

verdict() {   # verdict STAGE PASS|FAIL DETAIL
  echo "cuda emulator: $1: $2${3:+ ($3)}"
  [ "$2" = PASS ] || failed=1
}

# "25 cases (1 failed), 3823 assertions (12 failed)" from a doctest log.
counts() {
  awk -F'|' '/^\[doctest\] test cases:/ {split($1, a, ":"); c = a[2] + 0; cf = $3 + 0}
             /^\[doctest\] assertions:/ {split($1, a, ":"); n = a[2] + 0; nf = $3 + 0}
             END {printf "%d cases (%d failed), %d assertions (%d failed)", c, cf, n, nf}' "$1"
}

build_tree() {   # build_tree DIR EXTRA_CMAKE_ARGS...
  local dir="$1"
  shift
  cmake -S . -B "$dir" -DTENSORGRAD_CUDA_EMULATE=ON -DTENSORGRAD_BUILD_BENCH=OFF -DTENSORGRAD_BUILD_EXAMPLES=OFF "$@" \
    >"$log_dir/configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" --target tensorgrad_tests cuda_emulator_tests cuda_ladder_softmax >"$log_dir/build.log" 2>&1
}

# suite STAGE DIR ENV...: the CUDA suite and the emulator's self-tests under the given environment.
suite() {
  local stage="$1" dir="$2"
  shift 2
  local out="$log_dir/$(tr -c 'a-zA-Z0-9' _ <<<"$stage").log"
  env TG_REQUIRE_CUDA=1 TG_CUDA_EMULATE_DEVICES=2 "$@" "$dir/tests/tensorgrad_tests" -tc='cuda*' >"$out" 2>&1
  local rc=$?
  env TG_CUDA_EMULATE_DEVICES=2 "$@" "$dir/tests/cuda_emulator_tests" >"$out.self" 2>&1
  local rc_self=$?
  if [ "$rc" -eq 0 ] && [ "$rc_self" -eq 0 ]; then
    verdict "$stage" PASS "suite: $(counts "$out"); self-tests: $(counts "$out.self")"
  else
    verdict "$stage" FAIL "suite exit $rc, self-tests exit $rc_self; logs in $out and $out.self"
    grep -h -B2 -A4 'ERROR\|emulator:\|runtime error\|Sanitizer' "$out" "$out.self" | head -40 >&2
  fi
}

# canary STAGE DIR FILTER ENV...: the planted bug must fail the selected cases with failed assertions.
canary() {
  local stage="$1" dir="$2" filter="$3"
  shift 3
  local out="$log_dir/canary_$(tr -c 'a-zA-Z0-9' _ <<<"$stage").log"
  env TG_REQUIRE_CUDA=1 TG_CUDA_EMULATE_DEVICES=2 "$@" "$dir/tests/tensorgrad_tests" -tc="$filter" >"$out" 2>&1
  local rc=$?
  local failures
  failures="$(grep -c ': ERROR: ' "$out")"
  if [ "$rc" -ne 0 ] && [ "$failures" -gt 0 ]; then
    verdict "$stage" PASS "caught: $failures failed assertions; $(counts "$out")"
  else
    verdict "$stage" FAIL "NOT caught: exit $rc, $failures failed assertions; log in $out"
    tail -20 "$out" >&2
  fi
}

# ladder STAGE DIR [canary] ENV...: the softmax kernel ladder of dev/cuda/ on small matrices, which must
# pass; with "canary", ENV plants a bug and the ladder must fail instead, with kernels disagreeing.
ladder() {
  local stage="$1" dir="$2" expect=pass
  shift 2
  if [ "${1:-}" = canary ]; then
    expect=fail
    shift
  fi
  local out="$log_dir/ladder_$(tr -c 'a-zA-Z0-9' _ <<<"$stage").log"
  env TG_CUDA_EMULATE_DEVICES=2 "$@" "$dir/dev/cuda/cuda_ladder_softmax" --small >"$out" 2>&1
  local rc=$?
  local mismatches
  mismatches="$(grep -c 'MISMATCH' "$out")"
  if [ "$expect" = pass ] && [ "$rc" -eq 0 ]; then
    verdict "$stage" PASS "$(tail -n 1 "$out")"
  elif [ "$expect" = fail ] && [ "$rc" -ne 0 ] && [ "$mismatches" -gt 0 ]; then
    verdict "$stage" PASS "caught: $mismatches kernel runs disagree with the reference"
  else
    verdict "$stage" FAIL "exit $rc, $mismatches kernel runs disagree; log in $out"
    grep -E 'MISMATCH|emulator:' "$out" | head -10 >&2
  fi
}

# The last __syncthreads of block_reduce_shared (dev/cuda/softmax_forward.cu): every thread has read
# the result before the next reduction overwrites it.
ladder_src=dev/cuda/softmax_forward.cu
ladder_barrier="$(awk '/block_reduce_shared\(float v/ {inside = 1} inside && /__syncthreads\(\)/ {n = NR}
                       inside && /return result/ {print n; exit}' "$ladder_src")"

# The first __syncthreads of block_allreduce (backend/cuda/kernels.cuh): partial results written, read by warp 0.
kernels=src/tensorgrad/backend/cuda/kernels.cuh
barrier_line="$(awk '/block_allreduce\(/ {inside = 1} inside && /__syncthreads\(\)/ {print NR; exit}' "$kernels")"

if build_tree "$build" -DCMAKE_BUILD_TYPE=Release; then
  verdict "build ($build)" PASS
  suite "suite, immediate streams" "$build" TG_CUDA_EMULATE_MODE=immediate
  suite "suite, deferred streams" "$build" TG_CUDA_EMULATE_MODE=deferred
  ladder "kernel ladder (dev/cuda), immediate streams" "$build" TG_CUDA_EMULATE_MODE=immediate
  ladder "kernel ladder (dev/cuda), deferred streams" "$build" TG_CUDA_EMULATE_MODE=deferred
  ladder "canary: missing __syncthreads at softmax_forward.cu:$ladder_barrier" "$build" canary \
    TG_CUDA_EMULATE_CANARY="no-barrier:softmax_forward.cu:$ladder_barrier"
  canary "canary: missing __syncthreads at kernels.cuh:$barrier_line" "$build" 'cuda parity*' \
    TG_CUDA_EMULATE_CANARY="no-barrier:kernels.cuh:$barrier_line"
  canary "canary: pinned buffer reused before its copy ran (deferred)" "$build" 'cuda: pinned*' \
    TG_CUDA_EMULATE_MODE=deferred TG_CUDA_EMULATE_CANARY=early-host-reuse
  canary "canary: cuBLASLt's bias read and bias gradient written one element off" "$build" 'cuda*linear*' \
    TG_CUDA_EMULATE_CANARY=wrong-bias-pointer
else
  verdict "build ($build)" FAIL "see $log_dir/build.log"
  tail -30 "$log_dir/configure.log" "$log_dir/build.log" >&2
fi

if [ "$what" = asan ]; then
  tools/install_deps.sh clang libclang-rt-14-dev >/dev/null
  asan="$build-asan"
  if build_tree "$asan" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${TG_SANITIZER_BUILD_FLAGS:--O2 -gline-tables-only -DNDEBUG}" \
    -DTENSORGRAD_SANITIZE=address,undefined; then
    verdict "ASan+UBSan build ($asan)" PASS
    export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:strict_string_checks=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    suite "ASan+UBSan suite, deferred streams, passthrough allocator" "$asan" TG_CUDA_EMULATE_MODE=deferred \
      TG_CUDA_ALLOCATOR=passthrough
    out="$log_dir/asan_canary.log"
    TG_CUDA_EMULATE_PLANT=out-of-bounds "$asan/tests/cuda_emulator_tests" -tc='*planted*' >"$out" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && grep -q 'AddressSanitizer: heap-buffer-overflow' "$out"; then
      verdict "ASan canary: a kernel reads one element past a cudaMalloc block" PASS "caught: exit $rc"
    else
      verdict "ASan canary: a kernel reads one element past a cudaMalloc block" FAIL "NOT caught: exit $rc; log in $out"
      tail -20 "$out" >&2
    fi
  else
    verdict "ASan+UBSan build ($asan)" FAIL "see $log_dir/build.log"
    tail -30 "$log_dir/configure.log" "$log_dir/build.log" >&2
  fi
fi

[ "$failed" -eq 0 ] && echo "cuda emulator: all stages passed" || echo "cuda emulator: FAILED (logs in $log_dir)"
exit $failed
