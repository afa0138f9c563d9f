#!/usr/bin/env bash
# tools/install_deps.sh: installs the Debian/Ubuntu packages tensorgrad needs, when missing.
# As root it runs apt-get; otherwise it prints the exact command and fails. Usage: install_deps.sh [extra packages]
# On Fedora (dnf) and Arch (pacman) it installs nothing: it prints that distribution's package names and
# the CMake commands to build without the Makefile (whose targets run this script first), and fails.
set -euo pipefail
packages=(cmake g++ make pkgconf doctest-dev libopenblas-dev zlib1g-dev libgloo-dev libdnnl-dev dataset-fashion-mnist fortunes "$@")

# Another distribution: what to install there and how to configure (docs/build.md, "Other distributions").
other_distribution() {   # other_distribution NAME INSTALL-COMMAND [extra Debian packages...]
  local name=$1 install=$2
  shift 2
  {
    echo "tensorgrad: tools/install_deps.sh installs Debian/Ubuntu packages only; on $name, install:"
    echo "  $install"
    echo "optional there:"
    if [ "$name" = Fedora ]; then
      echo "  sudo dnf install -y gloo-devel   # Fedora 43 and later; without it tg::distributed has no gloo backend"
    else
      echo "  Gloo: no package in Arch's repositories: tg::distributed has no gloo backend"
    fi
    echo "  oneDNN: the distribution's package is oneDNN 3, whose API tensorgrad does not build against"
    echo "    (it uses oneDNN 2, Debian 12's libdnnl-dev); leave it out, or configure with"
    echo "    -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON where it is installed. Without it convolutions run as"
    echo "    im2col + GEMM, bfloat16 products through float32, int8 Linear layers on a reference loop."
    echo "  Fashion-MNIST: no package; the trainer takes --data DIR (the four IDX files) or --synthetic N"
    echo "  fortune-mod: text for examples 10_train_char_transformer and 18_word_language_model (give its folder with --data)"
    if [ $# -gt 0 ]; then
      echo "also asked for, by their Debian names: $*"
    fi
    echo "then build and test with CMake (the Makefile's targets run this script first):"
    echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release"
    echo "  cmake --build build -j2 && (cd build && ctest --output-on-failure -j2)"
    echo "  build/examples/train_fashion_mnist --data DIR   # or --synthetic 60000"
  } >&2
  exit 1
}
if ! command -v dpkg-query >/dev/null 2>&1; then
  if command -v dnf >/dev/null 2>&1; then
    other_distribution Fedora "sudo dnf install -y cmake gcc-c++ make pkgconf-pkg-config doctest-devel openblas-devel zlib-devel" "$@"
  elif command -v pacman >/dev/null 2>&1; then
    other_distribution Arch "sudo pacman -S --needed cmake gcc make pkgconf doctest openblas zlib" "$@"
  fi
fi

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
