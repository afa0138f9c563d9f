#!/usr/bin/env bash
# The floors rule of docs/architecture.md, checked on the sources: a file under src/tensorgrad/<floor>/
# includes only headers of its own floor or of floors below it, and no file of backend/cuda/ (the
# kernels) includes prim/ or autograd/. Prints every offending include and exits 1 when there is one.
# Usage: tools/check_floors.sh [repository root]   (CTest runs it as the floors test)
#        tools/check_floors.sh --self-test          (the check itself: it must refuse an include that runs up)
set -euo pipefail
if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/src/tensorgrad/core" "$tmp/src/tensorgrad/ops"
  printf '#include "tensorgrad/core/a.h"\n' > "$tmp/src/tensorgrad/ops/b.h"
  printf '#include "tensorgrad/core/c.h"\n' > "$tmp/src/tensorgrad/core/a.h"
  "$0" "$tmp" > /dev/null || { echo "self-test FAILED: a downward include was refused"; exit 1; }
  printf '#pragma once\n#include <tensorgrad/ops/b.h>\n' > "$tmp/src/tensorgrad/core/c.h"
  if out=$("$0" "$tmp"); then echo "self-test FAILED: core/ including ops/ passed"; exit 1; fi
  grep -q "core/c.h includes tensorgrad/ops/b.h: ops is above core" <<<"$out" ||
    { echo "self-test FAILED: unexpected report: $out"; exit 1; }
  echo "self-test passed: an include from core/ up to ops/ is refused"
  exit 0
fi
root=${1:-$(dirname "$0")/..}
cd "$root/src/tensorgrad"
floors=(core kernels backend prim autograd ops distributed nn optim data io quantization)
rank() {
  local i
  for i in "${!floors[@]}"; do [ "${floors[$i]}" = "$1" ] && { echo "$i"; return; }; done
  echo -1
}
bad=0
while IFS= read -r file; do
  from=${file%%/*}
  rf=$(rank "$from")
  if [ "$rf" -lt 0 ]; then echo "$file: not in a floor (${floors[*]})"; bad=1; continue; fi
  while IFS= read -r inc; do
    to=${inc%%/*}
    rt=$(rank "$to")
    if [ "$rt" -lt 0 ]; then echo "$file includes tensorgrad/$inc: not a floor"; bad=1
    elif [ "$rt" -gt "$rf" ]; then echo "$file includes tensorgrad/$inc: $to is above $from"; bad=1
    fi
  done < <(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]tensorgrad/\([^>"]*\)[>"].*|\1|p' "$file")
done < <(find . -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.inc' \) | sed 's|^\./||' | sort)
if [ "$bad" -ne 0 ]; then echo "floors: includes that run up (docs/architecture.md)"; exit 1; fi
echo "floors: every include of src/tensorgrad/ runs down or stays on its floor"
