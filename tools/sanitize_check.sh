#!/usr/bin/env bash
# tools/sanitize_check.sh: the sanitizer stages of .ci/run (clang, CUDA off). asan: builds build-asan
# with address,undefined and runs the whole CTest suite, then requires the broken canary
# (tests/sanitizer_canary.cpp) to be caught. tsan: builds build-tsan with thread and runs the
# concurrency tests (the thread pool's among them), then its canary. Usage: sanitize_check.sh [asan|tsan|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
jobs="${JOBS:-2}"
cxx="${CXX:-clang++}"
# Line tables, not full debug information: sanitizer reports name file and line, and the builds compile
# ~10% faster (the emulator's ASan build and tools/run_fuzzers.sh use the same flags).
flags="${TG_SANITIZER_BUILD_FLAGS:--O2 -gline-tables-only -DNDEBUG}"
tools/install_deps.sh clang libclang-rt-14-dev

if [ "$what" = asan ] || [ "$what" = all ]; then
  echo "== ASan+UBSan: configure and build (build-asan)"
  cmake -S . -B build-asan -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORGRAD_CUDA=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DTENSORGRAD_SANITIZE=address,undefined -DTENSORGRAD_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  echo "== ASan+UBSan: the whole suite"
  # allocator_may_return_null: the out-of-memory tests need malloc to fail the way it does without ASan.
  (cd build-asan && ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:strict_string_checks=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j"$jobs")
  echo "== ASan+UBSan: canary"
  tools/sanitizer_canary.sh build-asan/tests/sanitizer_canary heap-overflow:AddressSanitizer \
    use-after-free:AddressSanitizer tensor-overflow:AddressSanitizer tensor-use-after-free:AddressSanitizer \
    "signed-overflow:runtime error"
fi

if [ "$what" = tsan ] || [ "$what" = all ]; then
  echo "== TSan: configure and build (build-tsan)"
  cmake -S . -B build-tsan -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORGRAD_CUDA=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DTENSORGRAD_SANITIZE=thread -DTENSORGRAD_BUILD_EXAMPLES=OFF \
    -DTENSORGRAD_BUILD_BENCH=OFF >/dev/null
  cmake --build build-tsan -j"$jobs" --target tensorgrad_tests sanitizer_canary
  echo "== TSan: the concurrency tests"
  # Threads in these: backward from 8 threads, grad mode per thread, the DataLoader's prefetch thread,
  # the CPU thread pool (core/parallel.cpp).
  concurrency='no_grad: *,independent graphs backward concurrently*,data: DataLoader*,*concurren*,*thread*'
  build-tsan/tests/tensorgrad_tests -ltc -tc="$concurrency" | grep -v '^\[doctest\]\|^====' || true
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp" \
    build-tsan/tests/tensorgrad_tests -tc="$concurrency"
  echo "== TSan: canary"
  tools/sanitizer_canary.sh build-tsan/tests/sanitizer_canary data-race:ThreadSanitizer
fi
