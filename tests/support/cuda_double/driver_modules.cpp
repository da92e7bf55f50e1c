// The driver double's modules and launches (driver_double.cpp has the rest of the driver): a
// "cubin" from the NVRTC double is the kernel's source, built by the host compiler; a launch
// is decoded with the kernel's own description of its pointers and run in the device emulator
// when its stream reaches it. A module unloaded while a graph still launches it makes that
// replay a violation.

#include "tests/support/cuda_double/double_format.h"
#include "tests/support/cuda_double/double_state.h"
#include "tests/support/cuda_double/launch_checker.h"

#include "codegen/launch_abi.h"
#include "runtime/host/host_compiler.h"
#include "scheduler/kernel_abi.h"

#include <cstring>
#include <memory>
#include <vector>

using namespace widefuse;
using namespace widefuse::cuda_double;

namespace {

int failLaunchIn = 0, failLaunchResult = 0;
/// Modules unloaded so far (a replay may still name them).
std::vector<std::unique_ptr<Module>> unloaded;

} // namespace

void widefuse::cuda_double::forgetPlantedFailures() {
  failLaunchIn = failLaunchResult = 0;
}

WF_EXPORT void wf_double_fail_launch(int nth, int result) {
  WF_LOCK;
  failLaunchIn = nth;
  failLaunchResult = result;
}

WF_EXPORT int cuModuleLoadData(Module** module, const void* image) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  const char* text = static_cast<const char*>(image);
  size_t magic = std::strlen(kImageMagic);
  if (std::strncmp(text, kImageMagic, magic) != 0)
    return kInvalidImage; // a real cubin: the double runs only what its NVRTC double made
  std::string source = text + magic;
  std::string name = entryName(source);
  auto loaded = std::make_unique<Module>();
  loaded->name = name;
  loaded->device = currentDevice;
  try {
    loaded->kernel = EmulatedKernel::compile(source, name, parameterType(source, name));
  } catch (const std::exception&) {
    return kInvalidImage;
  }
  loaded->abi = static_cast<const wf_launch_abi*>(loaded->kernel->symbol(name + "_launch_abi"));
  bool widefuse = source.find("wf_entry_header") != std::string::npos;
  if (widefuse && !loaded->abi)
    return kInvalidImage; // a widefuse kernel without its launch description
  *module = loaded.release();
  return kSuccess;
}

WF_EXPORT int cuModuleUnload(Module* module) {
  WF_LOCK;
  model().drainAll(); // queued launches of the module still need it
  // A graph may still launch it: kept, unloaded, so that a replay is a violation, not a
  // crash. The kernel itself (a built shared object) goes.
  module->unloaded = true;
  module->kernel.reset();
  unloaded.emplace_back(module);
  return kSuccess;
}

WF_EXPORT int cuModuleGetFunction(Module** function, Module* module, const char* name) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  if (module->name != name)
    return kNotFound;
  *function = module; // one kernel per module
  return kSuccess;
}

WF_EXPORT int cuFuncGetAttribute(int* value, int, Module*) {
  *value = 0;
  return kSuccess;
}

WF_EXPORT int cuFuncGetParamInfo(Module* function, size_t index, size_t* offset, size_t* size) {
  if (index != 0)
    return kInvalidValue;
  *offset = 0;
  *size = function->kernel->parameterBytes();
  return kSuccess;
}

WF_EXPORT int cuOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Module*, int, size_t) {
  *blocks = kResidentBlocks;
  return kSuccess;
}

WF_EXPORT int cuLaunchKernel(Module* function, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ, unsigned,
                             void* stream, void** parameters, void**) {
  WF_LOCK;
  WF_NEED_CONTEXT;
  if (failLaunchIn > 0 && --failLaunchIn == 0)
    return failLaunchResult;
  Stream* queue = model().streamOf(stream, currentDevice);
  if (!queue || gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1 || !parameters)
    return kInvalidValue;
  if (function->device != currentDevice)
    return kInvalidHandle;
  if (function->abi && blockX != function->abi->threads_per_block)
    return kInvalidValue; // the kernel is written for its own block size
  WF_CAPTURE_REFUSES("the launch of kernel '" + function->name + "'", /*unsafe=*/false, queue);
  ++counters.launches;
  counters.legacyStreamWrites += queue->legacy;
  // The driver copies the argument during the call.
  auto block = std::make_shared<std::vector<std::byte>>(
      static_cast<const std::byte*>(parameters[0]),
      static_cast<const std::byte*>(parameters[0]) + function->kernel->parameterBytes());
  uint64_t seed = counters.launches;
  submit(*queue, "the launch of kernel '" + function->name + "'", {},
         [function, block, gridX, blockX, seed](Operation& self) {
           if (model().stickyError())
             return; // the context is lost: nothing more runs
           if (function->unloaded) {
             model().violate(self.what + " runs a kernel whose module was unloaded");
             return;
           }
           if (function->abi)
             checkLaunchPointers(model(), self, *function, *block);
           if (!model().stickyError())
             runLaunch(model(), self, *function, *block, gridX, blockX, seed);
         });
  return kSuccess;
}
