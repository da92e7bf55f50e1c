#!/usr/bin/env bash
# Runs the CPU benchmarks (segment, compile cold/warm, dispatch, host-backend throughput, the
# Python frontend's per-step overhead; when torch is installed (scripts/setup.sh --test),
# widefuse.optim next to torch's AdamW, the host backend next to torch's fused Adam and a
# triad, and the Thunder seed) and
# writes their tables, with the machine they ran on, to docs/performance_tables.md.
# Usage: benchmarks/run_cpu.sh [BUILD_DIR]   (default build; run ./scripts/setup.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
cmake --build "$BUILD_DIR" --target segment_benchmark compile_benchmark dispatch_benchmark
RESULTS=$(mktemp -d)
trap 'rm -rf "$RESULTS"' EXIT
export WIDEFUSE_CACHE_DIR="$RESULTS/kernel-cache"
for benchmark in segment_benchmark compile_benchmark dispatch_benchmark; do
  echo "benchmarks: running $benchmark" >&2
  "$BUILD_DIR/bin/$benchmark" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_format=json >"$RESULTS/$benchmark.json"
done
if [ -d "$BUILD_DIR/python/widefuse" ]; then
  echo "benchmarks: running python_dispatch_benchmark" >&2
  PYTHONPATH="$BUILD_DIR/python" "${WIDEFUSE_PYTHON:-.venv/bin/python}" \
    benchmarks/python_dispatch_benchmark.py >"$RESULTS/python_dispatch_benchmark.json"
  if "${WIDEFUSE_PYTHON:-.venv/bin/python}" -c "import torch" 2>/dev/null; then
    echo "benchmarks: running torch_optimizer_benchmark" >&2
    PYTHONPATH="$BUILD_DIR/python" "${WIDEFUSE_PYTHON:-.venv/bin/python}" \
      benchmarks/torch_optimizer_benchmark.py >"$RESULTS/torch_optimizer_benchmark.json"
    echo "benchmarks: running host_speed_benchmark" >&2
    PYTHONPATH="$BUILD_DIR/python" "${WIDEFUSE_PYTHON:-.venv/bin/python}" \
      benchmarks/host_speed_benchmark.py >"$RESULTS/host_speed_benchmark.json"
    echo "benchmarks: running thunder_benchmark (2, 50 and 1000 parameters: about 15 minutes)" >&2
    PYTHONPATH="$BUILD_DIR/python" "${WIDEFUSE_PYTHON:-.venv/bin/python}" \
      benchmarks/thunder_benchmark.py >"$RESULTS/thunder_benchmark.json"
  fi
fi
python3 benchmarks/report.py "$RESULTS"/*.json >docs/performance_tables.md
echo "benchmarks: wrote docs/performance_tables.md" >&2
