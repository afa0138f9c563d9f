#!/usr/bin/env bash
# tools/install_deps.sh: installs the Debian/Ubuntu packages tensorgrad needs, when missing.
# As root it runs apt-get; otherwise it prints the exact command and fails. Usage: install_deps.sh [extra packages]
set -euo pipefail
packages=(cmake g++ make pkgconf doctest-dev libopenblas-dev zlib1g-dev libgloo-dev libdnnl-dev dataset-fashion-mnist fortunes "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "tensorgrad: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
else
  echo "tensorgrad: missing packages; run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
