#!/usr/bin/env bash
# Sets everything up, then runs every test: the release build's suite (C++ and the Python
# frontend's pytest suite), and the C++ tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh --test

echo "== tests (release build)"
ctest --test-dir build --output-on-failure -j "$(nproc)"

echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
# -O1 -g1 (line tables: what sanitizer reports print) builds in half the time of -O2 -g.
source scripts/build_launcher.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWIDEFUSE_SANITIZE=ON \
  -DCMAKE_CXX_COMPILER_LAUNCHER="$BUILD_LAUNCHER" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DWIDEFUSE_BUILD_BENCHMARKS=OFF -DWIDEFUSE_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan
# intercept_tls_get_addr=0: with it, LeakSanitizer's exit scan faults in its own tracer in every
# process whose threads hold the thread-local blocks of the device emulator's kernels (their
# __shared__ storage); dynamic TLS blocks are malloc'd and reachable from the threads' own
# TLS either way, so leaks are still found.
ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -LE no_sanitizer
