#!/usr/bin/env bash
# tools/sanitizer_canary.sh: proves a sanitizer build really checks something. Runs the deliberately
# broken tests/sanitizer_canary.cpp in each given mode and fails unless every run dies (non-zero exit)
# with the expected report. Usage: sanitizer_canary.sh CANARY_BINARY MODE:REPORT_PATTERN...
#   e.g. sanitizer_canary.sh build-asan/tests/sanitizer_canary heap-overflow:AddressSanitizer
set -uo pipefail
canary="$1"
shift
[ -x "$canary" ] || { echo "sanitizer canary: $canary is not an executable (built with TENSORGRAD_SANITIZE?)" >&2; exit 1; }
failed=0
for spec in "$@"; do
  mode="${spec%%:*}"
  pattern="${spec#*:}"
  out="$("$canary" "$mode" 2>&1)"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q -- "$pattern" <<<"$out"; then
    echo "sanitizer canary: $mode caught (exit $rc, \"$pattern\": $(grep -m1 -- "$pattern" <<<"$out" | cut -c1-120))"
  else
    echo "sanitizer canary: $mode was NOT caught (exit $rc, no \"$pattern\" in its output): the sanitizer is not working" >&2
    printf '%s\n' "$out" | tail -20 >&2
    failed=1
  fi
done
exit $failed
