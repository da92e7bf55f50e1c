#!/usr/bin/env bash
# The GPU check, run on the GPU machine in one call (see docs/performance.md, "GPU"):
#   device run: bash benchmarks/gpu/run.sh   with carry: ["gpu-bundle"]
# after benchmarks/gpu/bundle.sh here. Runs the gpu-labelled tests, then the CUDA Adam
# benchmark (per-component vs batched) and the dispatch benchmark, and writes the results to
# $OUT (or ./gpu-results) as text and JSON. Expected to finish in about two minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULTS=${OUT:-gpu-results}
mkdir -p "$RESULTS"
export LD_LIBRARY_PATH="$PWD/gpu-bundle/lib:${LD_LIBRARY_PATH:-}"
export WIDEFUSE_CACHE_DIR=/tmp/widefuse-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$RESULTS/gpu.txt"
status=0
for test in runtime_cuda_device_test runtime_cuda_executor_test; do
  timeout 300 "gpu-bundle/$test" 2>&1 | tee -a "$RESULTS/tests.txt" || status=1
done
timeout 300 gpu-bundle/cuda_benchmark --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out="$RESULTS/cuda_benchmark.json" \
  2>&1 | tee "$RESULTS/cuda_benchmark.txt" || status=1
timeout 120 gpu-bundle/dispatch_benchmark --benchmark_filter=dispatch \
  2>&1 | tee "$RESULTS/dispatch.txt" || status=1
timeout 120 gpu-bundle/widefuse adam --verify --json >"$RESULTS/adam.json" 2>&1 || status=1
exit $status
