#!/usr/bin/env bash
# The GPU check, run on the GPU machine in one call (see docs/performance.md, "GPU"):
#   device run: bash benchmarks/gpu/run.sh   with carry: ["gpu-bundle"]
# after benchmarks/gpu/bundle.sh here. In order: the gpu-labelled tests; the Adam benchmark
# (widefuse batched and per-component over real parameter lists, f32 and bf16, and the batched
# kernel under other schedules) next to torch's fused and foreach Adam and a device copy of
# the same bytes, joined into tables; one optimizer step from Python (widefuse.optim, the
# Thunder seed step) beside torch's fused Adam, and the clipped step (clip_grad_norm_ + AdamW
# against widefuse.optim.AdamW(max_grad_norm=1.0) and a copy of its bytes), host and device
# time; `widefuse adam` verified
# against the oracle; Nsight
# Compute profiles of two batched kernels. Results go to $OUT (or ./gpu-results): log.txt,
# table.md and the JSON behind it, adam.json, optim_step.json, ncu.txt. About seven minutes on
# an H200.
set -uo pipefail
cd "$(dirname "$0")/../.."
RESULTS=${OUT:-gpu-results}
mkdir -p "$RESULTS"
# One log of everything printed, beside the JSON results (the device tool returns 8 files).
exec > >(tee "$RESULTS/log.txt") 2>&1
export LD_LIBRARY_PATH="$PWD/gpu-bundle/lib:${LD_LIBRARY_PATH:-}"
export WIDEFUSE_CACHE_DIR=/tmp/widefuse-cache PYTHONUNBUFFERED=1
BUNDLE=gpu-bundle
status=0
step() { echo "== $* ($(date +%T))"; }

step gpu
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
  --format=csv

step tests
for test in runtime_cuda_device_test runtime_cuda_executor_test runtime_cuda_adam_test; do
  timeout 60 "$BUNDLE/$test" --gtest_brief=1 2>&1 || status=1
done

step adam benchmark
"$BUNDLE/cuda_benchmark" --list-cases >"$RESULTS/cases.json" || status=1
timeout 200 "$BUNDLE/cuda_benchmark" --benchmark_repetitions=3 --benchmark_min_time=0.2 \
  --benchmark_report_aggregates_only=true --benchmark_out="$RESULTS/cuda_benchmark.json" \
  2>&1 || status=1
LD_LIBRARY_PATH= timeout 120 python3 benchmarks/gpu/torch_adam.py "$RESULTS/cases.json" "$RESULTS/torch.json" \
  2>&1 || status=1
LD_LIBRARY_PATH= python3 benchmarks/gpu/report.py "$RESULTS/cases.json" "$RESULTS/cuda_benchmark.json" \
  "$RESULTS/torch.json" | tee "$RESULTS/table.md" || status=1

step optimizer steps from Python
# widefuse.optim and the Thunder seed step beside torch's fused Adam: host and device time.
LD_LIBRARY_PATH="$PWD/gpu-bundle/lib" PYTHONPATH="$PWD/gpu-bundle/python" timeout 240 \
  python3 benchmarks/gpu/optim_step.py "$RESULTS/optim_step.json" 2>&1 || status=1

step widefuse adam
for model in seed tiny; do
  timeout 30 "$BUNDLE/widefuse" adam --model $model --backend cuda --verify --json \
    >>"$RESULTS/adam.json" 2>&1 || status=1
done
# The clipped step with GradScaler's inf check inside it: two launches, verified.
timeout 30 "$BUNDLE/widefuse" adam --model tiny --backend cuda --max-grad-norm 1 \
  --grad-scale 1024 --mode packed --verify --json >>"$RESULTS/adam.json" 2>&1 || status=1

step profile
if command -v ncu >/dev/null; then
  for case in gpt2-f32 llama7b-8layers-bf16; do
    timeout 45 ncu --clock-control none --set basic --section MemoryWorkloadAnalysis \
      --section Occupancy --kernel-name regex:adam --launch-skip 3 --launch-count 1 \
      "$BUNDLE/cuda_benchmark" --benchmark_filter="adam/$case/batched" \
      --benchmark_min_time=0.01 >>"$RESULTS/ncu.txt" 2>&1 || echo "ncu failed (see ncu.txt)"
  done
fi
step done "status $status"
exit $status
