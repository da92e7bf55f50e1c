#!/usr/bin/env bash
# Prepares the GPU check on this machine: the GPU machine has CUDA, CMake and ninja but not
# LLVM 14, fmt or Google Benchmark, so the test and benchmark executables travel prebuilt with
# the shared libraries they need, in gpu-bundle/ (ignored by git; name it in the device tool's
# `carry`). Then run benchmarks/gpu/run.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${WIDEFUSE_BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target runtime_cuda_device_test runtime_cuda_executor_test \
  runtime_cuda_adam_test \
  cuda_benchmark dispatch_benchmark widefuse _widefuse widefuse_python_sources
rm -rf gpu-bundle && mkdir -p gpu-bundle/lib
for binary in runtime_cuda_device_test runtime_cuda_executor_test runtime_cuda_adam_test \
              cuda_benchmark \
              dispatch_benchmark widefuse; do
  cp "$BUILD_DIR/bin/$binary" gpu-bundle/
  # Libraries outside the C runtime, which the GPU machine may lack.
  ldd "$BUILD_DIR/bin/$binary" | awk '/=> \// {print $3}' |
    grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
    xargs -r -I{} cp -n {} gpu-bundle/lib/
done
# The Python package (benchmarks/gpu/optim_step.py), built for this machine's Python: on another
# version it does not import there, and that step says so.
cp -r "$BUILD_DIR/python" gpu-bundle/python
ldd gpu-bundle/python/widefuse/_widefuse*.so | awk '/=> \// {print $3}' |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
  xargs -r -I{} cp -n {} gpu-bundle/lib/
grep -qx '/gpu-bundle/' .git/info/exclude 2>/dev/null || echo '/gpu-bundle/' >>.git/info/exclude
du -sh gpu-bundle
