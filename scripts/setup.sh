#!/usr/bin/env bash
# Installs what a fresh machine lacks and builds widefuse into build/ (binaries in build/bin/);
# `setup.sh --test` also installs what the test suite needs (see below).
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config zlib1g-dev libtinfo-dev
  llvm-14-dev llvm-14-tools    # LLVM ADT/Support; FileCheck and lit for codegen tests
  python3 python3-venv python3-dev  # lit; the Python frontend's environment and headers
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libboost-context-dev         # fibers: the device emulator's CUDA threads
  libgtest-dev libbenchmark-dev
  ccache                       # reuses objects across builds and clones (see BUILD_LAUNCHER)
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

# Python frontend: a virtual environment (.venv) with nanobind, scikit-build-core, numpy,
# ml_dtypes and pytest from the Python package index; reinstalled when the list changes.
# `--test` adds the test suite's requirements (torch and Lightning Thunder, about 3 GB with
# torch's CUDA libraries), which widefuse itself does not need.
VENV=${WIDEFUSE_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating the Python environment $VENV"
  python3 -m venv "$VENV"
fi
# Installs requirements file $1 when it differs from what stamp file $2 says was installed.
install_requirements() {
  if ! cmp -s "$1" "$VENV/$2"; then
    echo "setup: installing $1 into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$1"
    cp "$1" "$VENV/$2"
  fi
}
install_requirements python_frontend/requirements.txt .widefuse-requirements
# The test requirements download while the C++ build runs (most of the time is the network).
TEST_INSTALL=""
if [ "${1:-}" = "--test" ]; then
  install_requirements python_frontend/requirements-test.txt .widefuse-test-requirements &
  TEST_INSTALL=$!
fi
PYTHON=$(cd "$VENV/bin" && pwd)/python

BUILD_DIR=${WIDEFUSE_BUILD_DIR:-build}
# ccache, with paths under the repository taken as relative to it: a fresh clone elsewhere on the
# same machine (CI's) reuses the objects of an earlier build of the same sources.
source scripts/build_launcher.sh
# The value of CMake cache entry $1 in the build directory.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; }
if [ ! -f "$BUILD_DIR/build.ninja" ] || [ "$(cache_value Python_EXECUTABLE)" != "$PYTHON" ] ||
   [ "$(cache_value CMAKE_CXX_COMPILER_LAUNCHER)" != "$BUILD_LAUNCHER" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$PYTHON" -DCMAKE_CXX_COMPILER_LAUNCHER="$BUILD_LAUNCHER" >/dev/null
fi
cmake --build "$BUILD_DIR"
[ -z "$TEST_INSTALL" ] || wait "$TEST_INSTALL"
