#!/usr/bin/env bash
# The GPU check, run on the GPU machine in one call (see docs/performance.md, "GPU"):
#   device run: bash benchmarks/gpu/run.sh   with carry: ["gpu-bundle"]
# after benchmarks/gpu/bundle.sh here. In order: the gpu-labelled tests; where the machine has
# two GPUs, a two-rank clipped step (FSDP2 and DDP on NCCL, one rank per GPU, beside torch);
# the Adam benchmark (widefuse batched and per-component over real parameter lists, f32 and
# bf16, and the batched kernel under other schedules) next to torch's fused and foreach Adam
# and a device copy of the same bytes, joined into tables; one optimizer step from Python
# (widefuse.optim, the Thunder seed step) beside torch's fused Adam, and the clipped step
# (clip_grad_norm_ + AdamW against widefuse.optim.AdamW(max_grad_norm=1.0) and a copy of its
# bytes), host and device time; `widefuse adam` verified against the oracle; Nsight Compute
# profiles of two batched kernels. Results go to $OUT (or ./gpu-results): log.txt,
# table.md and the JSON behind it, adam.json, optim_step.json, ncu.txt. About seven minutes on
# an H200.
#
# Without a GPU, WIDEFUSE_GPU_DOUBLE=1 runs the same steps on the CUDA driver double (named by
# WIDEFUSE_CUDA_DRIVER_LIBRARY and WIDEFUSE_NVRTC_LIBRARY, as for its ctest tests), with the
# bundle in WIDEFUSE_GPU_BUNDLE (default gpu-bundle). Its emulator runs every kernel on the CPU,
# so the steps are narrowed: half of each gpu-labelled executable's tests; the benchmark on the
# tiny cases, two repetitions of one iteration; torch_adam.py marks each case not measured (no
# torch.cuda); optim_step.py steps the tiny preset on the CPU; nvidia-smi and ncu say they did
# not run. It checks that each step runs and the files' format, never speed:
# `ctest --test-dir build -R benchmarks_gpu_run_on_driver_double` (about a minute).
set -uo pipefail
# Resolved before the cd, so that a relative path means the caller's directory.
BUNDLE=${WIDEFUSE_GPU_BUNDLE:+$(realpath "$WIDEFUSE_GPU_BUNDLE")}
cd "$(dirname "$0")/../.."
BUNDLE=${BUNDLE:-gpu-bundle}
RESULTS=${OUT:-gpu-results}
mkdir -p "$RESULTS"
# One log of everything printed, beside the JSON results (the device tool returns 8 files).
exec > >(tee "$RESULTS/log.txt") 2>&1
BUNDLE_LIB=$(realpath -m "$BUNDLE/lib")
export LD_LIBRARY_PATH="$BUNDLE_LIB:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
status=0
step() { echo "== $* ($(date +%T))"; }

# What the double mode narrows; the GPU run keeps the settings its tables were measured with.
DOUBLE=${WIDEFUSE_GPU_DOUBLE:-}
if [[ -n $DOUBLE ]]; then
  if [[ -z ${WIDEFUSE_CUDA_DRIVER_LIBRARY:-} || -z ${WIDEFUSE_NVRTC_LIBRARY:-} ]]; then
    echo "WIDEFUSE_GPU_DOUBLE needs WIDEFUSE_CUDA_DRIVER_LIBRARY and WIDEFUSE_NVRTC_LIBRARY"
    exit 2
  fi
  export WIDEFUSE_CACHE_DIR=${WIDEFUSE_CACHE_DIR:-/tmp/widefuse-cache}
  CASES=(--small-cases)
  TIMING=(--benchmark_repetitions=2 --benchmark_min_time=0)
  OPTIM=(--device=cpu --model=tiny) # torch here has no CUDA tensors for widefuse.optim
  # Every other test of each gpu-labelled executable (gtest's sharding), half the emulator's
  # time: ctest runs them all on the double as *_on_driver_double.
  export GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=0
  # The emulator takes a good share of the GPU's limits, more beside other tests on a loaded
  # CPU: each step's limit is taken 4 times.
  timeout() { command timeout $(($1 * 4)) "${@:2}"; }
else
  export WIDEFUSE_CACHE_DIR=/tmp/widefuse-cache
  CASES=()
  TIMING=(--benchmark_repetitions=3 --benchmark_min_time=0.2)
  OPTIM=()
fi

step gpu
if [[ -n $DOUBLE ]]; then
  echo "nvidia-smi not run: no GPU, the CUDA driver double stands in for one"
  echo "driver double: $WIDEFUSE_CUDA_DRIVER_LIBRARY, $WIDEFUSE_NVRTC_LIBRARY"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv
fi

step tests
for test in runtime_cuda_device_test runtime_cuda_executor_test runtime_cuda_adam_test; do
  timeout 60 "$BUNDLE/$test" --gtest_brief=1 2>&1 || status=1
done

step two ranks
# One rank per GPU on NCCL (FSDP2 and DDP, clipped, beside torch), where there are two GPUs.
GPUS=0
[[ -n $DOUBLE ]] || GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if ((GPUS >= 2)); then
  LD_LIBRARY_PATH="$BUNDLE_LIB" PYTHONPATH=$(realpath -m "$BUNDLE/python") timeout 240 \
    python3 -m pytest -q -p no:cacheprovider -m gpu -k two_gpus \
    tests/python_frontend/test_optim_mesh_clip.py 2>&1 || status=1
else
  echo "two-rank step not run: $GPUS GPU(s), it needs two"
fi

step adam benchmark
"$BUNDLE/cuda_benchmark" --list-cases "${CASES[@]}" >"$RESULTS/cases.json" || status=1
timeout 200 "$BUNDLE/cuda_benchmark" "${CASES[@]}" "${TIMING[@]}" \
  --benchmark_report_aggregates_only=true --benchmark_out="$RESULTS/cuda_benchmark.json" \
  2>&1 || status=1
LD_LIBRARY_PATH= timeout 120 python3 benchmarks/gpu/torch_adam.py "$RESULTS/cases.json" "$RESULTS/torch.json" \
  2>&1 || status=1
LD_LIBRARY_PATH= python3 benchmarks/gpu/report.py "$RESULTS/cases.json" "$RESULTS/cuda_benchmark.json" \
  "$RESULTS/torch.json" | tee "$RESULTS/table.md" || status=1

step optimizer steps from Python
# widefuse.optim and the Thunder seed step beside torch's fused Adam: host and device time.
LD_LIBRARY_PATH="$BUNDLE_LIB" PYTHONPATH=$(realpath -m "$BUNDLE/python") timeout 240 \
  python3 benchmarks/gpu/optim_step.py "$RESULTS/optim_step.json" "${OPTIM[@]}" 2>&1 || status=1

step widefuse adam
for model in seed tiny; do
  timeout 30 "$BUNDLE/widefuse" adam --model $model --backend cuda --verify --json \
    >>"$RESULTS/adam.json" 2>&1 || status=1
done
# The clipped step with GradScaler's inf check inside it: two launches, verified.
timeout 30 "$BUNDLE/widefuse" adam --model tiny --backend cuda --max-grad-norm 1 \
  --grad-scale 1024 --mode packed --verify --json >>"$RESULTS/adam.json" 2>&1 || status=1

step profile
if [[ -n $DOUBLE ]]; then
  echo "ncu not run: Nsight Compute needs a GPU, not the driver double" | tee "$RESULTS/ncu.txt"
elif command -v ncu >/dev/null; then
  for case in gpt2-f32 llama7b-8layers-bf16; do
    timeout 45 ncu --clock-control none --set basic --section MemoryWorkloadAnalysis \
      --section Occupancy --kernel-name regex:adam --launch-skip 3 --launch-count 1 \
      "$BUNDLE/cuda_benchmark" --benchmark_filter="adam/$case/batched" \
      --benchmark_min_time=0.01 >>"$RESULTS/ncu.txt" 2>&1 || echo "ncu failed (see ncu.txt)"
  done
else
  echo "ncu not run: Nsight Compute is not installed here" | tee "$RESULTS/ncu.txt"
fi
step done "status $status"
exit $status
