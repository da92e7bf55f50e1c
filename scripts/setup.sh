#!/usr/bin/env bash
# Installs what a fresh machine lacks and builds widefuse into build/ (binaries in build/bin/).
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config zlib1g-dev libtinfo-dev
  llvm-14-dev llvm-14-tools    # LLVM ADT/Support; FileCheck and lit for codegen tests
  python3                      # runs lit
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev
)

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
    { $SUDO apt-get update -q >/dev/null && \
      $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# NVRTC is loaded at run time (dlopen), so the build does not need it; kernel compilation does.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && [ ! -e /usr/local/cuda/lib64/libnvrtc.so ]; then
  echo "setup: warning: no NVRTC (CUDA Toolkit, e.g. /usr/local/cuda); compiling kernels for" \
       "the GPU will fail with a clear error, the host and reference backends still work" >&2
fi

BUILD_DIR=${WIDEFUSE_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR"
