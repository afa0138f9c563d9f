#!/usr/bin/env bash
# tests/consumer/hidden_cuda.sh BUILD_DIR SOURCE_DIR WORK_DIR: a consumer of a CUDA-enabled install on a
# machine without the CUDA toolkit. Installs BUILD_DIR, then, in a private mount namespace where the
# toolkit's folder is an empty tmpfs, configures, builds and runs tests/consumer against the install:
# the package must configure and link, the binary must start and fall back to the CPU, `ldd` must list
# no CUDA library, tg::cuda::info() must name the missing pieces (driver, cuBLAS, cuBLASLt), and
# init_process_group("nccl") must say that there is no GPU and no libnccl.so.2. Needs root (unshare -m);
# exits 77 (CTest: skipped) without it, unless CI is set, where a skip would hide the check.
set -euo pipefail
build=$1 src=$2 work=$3
if ! unshare -m true 2>/dev/null; then
  echo "hidden_cuda: cannot create a mount namespace (needs root)" >&2
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi
toolkit=$(readlink -f /usr/local/cuda 2>/dev/null || true)
[ -d "$toolkit" ] || { echo "hidden_cuda: no CUDA toolkit under /usr/local/cuda to hide" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
export TG_TOOLKIT="$toolkit" TG_SRC="$src" TG_WORK="$work"
unshare -m bash -euo pipefail -c '
  mount -t tmpfs tg-no-cuda "$TG_TOOLKIT"
  [ -z "$(ls -A "$TG_TOOLKIT")" ] || { echo "hidden_cuda: the toolkit is still visible" >&2; exit 1; }
  if nvcc --version >/dev/null 2>&1; then echo "hidden_cuda: nvcc still runs" >&2; exit 1; fi
  cmake -S "$TG_SRC" -B "$TG_WORK/build" -DCMAKE_PREFIX_PATH="$TG_WORK/prefix" -DCMAKE_BUILD_TYPE=Release > "$TG_WORK/configure.log"
  cmake --build "$TG_WORK/build" > "$TG_WORK/build.log"
  libs=$(ldd "$TG_WORK/build/consumer")
  echo "$libs"
  if echo "$libs" | grep -Ei "libcuda|libcudart|libcublas|libnvidia|libnccl|not found"; then
    echo "hidden_cuda: the consumer needs a CUDA library (above) at load time" >&2; exit 1
  fi
  out=$("$TG_WORK/build/consumer" --info --rss)
  echo "$out"
  echo "$out" | grep -q "cuda available: 0 -> ok" || { echo "hidden_cuda: no CPU fallback" >&2; exit 1; }
  echo "$out" | grep -q "driver: not found (libcuda.so.1" || { echo "hidden_cuda: info() does not name the driver" >&2; exit 1; }
  echo "$out" | grep -q "cuBLAS: not found (libcublas.so" || { echo "hidden_cuda: info() does not name cuBLAS" >&2; exit 1; }
  echo "$out" | grep -q "cuBLASLt: not found (libcublasLt.so" || { echo "hidden_cuda: info() does not name cuBLASLt" >&2; exit 1; }
  out=$("$TG_WORK/build/consumer" --nccl)
  echo "$out"
  echo "$out" | grep -q "nccl available: 0" || { echo "hidden_cuda: nccl said to be available" >&2; exit 1; }
  echo "$out" | grep -q "no usable CUDA GPU (.*); no libnccl.so.2 could be loaded (libnccl.so.2: cannot open" ||
    { echo "hidden_cuda: init_process_group(nccl) does not name the missing GPU and libnccl.so.2" >&2; exit 1; }
'
echo "hidden_cuda: ok"
