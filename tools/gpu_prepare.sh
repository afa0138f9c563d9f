#!/usr/bin/env bash
# tools/gpu_prepare.sh: run HERE, before tools/gpu_check.sh runs on a GPU machine that has the CUDA
# toolkit, CMake, ninja, compute-sanitizer and maybe PyTorch, but no apt, no network, no doctest, no
# OpenBLAS and maybe no zlib headers. Copies what that machine lacks into gpu-deps/ (ignored by git,
# carried to the GPU machine with the working tree):
#   gpu-deps/doctest/doctest/doctest.h              the doctest header (-DTENSORGRAD_DOCTEST_DIR)
#   gpu-deps/doctest/doctest.cmake, doctestAddTests.cmake   one CTest entry per test case
#   gpu-deps/zlib/zlib.h, zconf.h                   zlib's headers, used with the machine's libz.so.1
#   gpu-deps/source.txt                             the commit and the uncommitted changes it was made from
#   gpu-deps/fashion-mnist/*.gz                     only with --with-data: the dataset (30 MB of the 64 MiB
#                                                   that may be carried); without it, training is synthetic
# then prints the command to give the device tool. OpenBLAS is not copied: the library's blocked GEMM
# runs instead. Nothing here is committed. Usage: gpu_prepare.sh [--with-data]
set -euo pipefail
cd "$(dirname "$0")/.."
with_data=0
for arg in "$@"; do
  case $arg in
    --with-data) with_data=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;;
    *) echo "gpu_prepare.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
deps=gpu-deps
rm -rf "$deps"
mkdir -p "$deps/doctest/doctest" "$deps/zlib"

# The header files the compiler itself finds for an #include (c++ -M lists every file it opened).
header_path() {   # header_path 'doctest/doctest.h' NAME -> the path of NAME among the files <$1> pulls in
  echo "#include <$1>" | ${CXX:-c++} -M -x c++ - 2>/dev/null | tr ' \\' '\n\n' | grep -E "/$2\$" | head -n 1
}

doctest_h=$(header_path doctest/doctest.h doctest.h)
[ -n "$doctest_h" ] || { echo "gpu_prepare.sh: doctest/doctest.h not found here (apt-get install doctest-dev)" >&2; exit 1; }
cp "$doctest_h" "$deps/doctest/doctest/"
scripts=""
for d in /usr/lib/cmake/doctest /usr/local/lib/cmake/doctest /usr/lib/x86_64-linux-gnu/cmake/doctest /usr/share/doctest/cmake; do
  if [ -f "$d/doctest.cmake" ] && [ -f "$d/doctestAddTests.cmake" ]; then scripts=$d; break; fi
done
if [ -n "$scripts" ]; then
  cp "$scripts/doctest.cmake" "$scripts/doctestAddTests.cmake" "$deps/doctest/"
else
  echo "gpu_prepare.sh: no doctest.cmake found: CTest will run the suite as one entry" >&2
fi

zlib_h=$(header_path zlib.h zlib.h)
zconf_h=$(header_path zlib.h zconf.h)
if [ -n "$zlib_h" ] && [ -n "$zconf_h" ]; then
  cp "$zlib_h" "$zconf_h" "$deps/zlib/"
else
  rmdir "$deps/zlib"
  echo "gpu_prepare.sh: no zlib headers here: the GPU build reads plain IDX files only unless it has its own" >&2
fi

if [ $with_data -eq 1 ]; then
  data=/usr/share/datasets/fashion-mnist
  mkdir -p "$deps/fashion-mnist"
  cp "$data"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$deps/fashion-mnist/"
fi

{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown) ($(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo '?'))"
  echo "uncommitted changes: $(git status --porcelain 2>/dev/null | grep -vc '^??' || true) tracked files"
  echo "prepared: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
} > "$deps/source.txt"

echo "gpu_prepare.sh: $deps/ holds $(find "$deps" -type f | wc -l) files, $(du -sh "$deps" | cut -f1):"
find "$deps" -type f | sort | sed 's/^/  /'
cat <<EOF

On the GPU machine (device tool "run"), with carry ["$deps"] and timeout_s 540:
  tools/gpu_check.sh
It writes \$OUT/summary.txt and \$OUT/gpu_check_logs.tar.gz (every log). Here, on the CUDA emulator
(no GPU; simulates the bare machine: no doctest, OpenBLAS or system zlib headers):
  JOBS=1 tools/gpu_check.sh --emulate --bare
EOF
