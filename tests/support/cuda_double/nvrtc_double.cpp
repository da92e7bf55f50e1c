// The NVRTC half of the CUDA driver double: a libnvrtc stand-in whose "cubin" is the source
// itself, behind a magic line, so that the driver double can build the very kernel the runtime
// asked for with the host compiler and run it. Chosen with WIDEFUSE_NVRTC_LIBRARY; see
// driver_double.cpp for what the pair checks. The ptxas statistics it reports are invented (32
// registers, no spills): tests of register use need the real NVRTC.

#include "tests/support/cuda_double/double_format.h"

#include <cstring>
#include <string>
#include <vector>

#define WF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Program {
  std::string source;
  std::string log;
  std::string ptx;
  std::string image;
};

constexpr int kSuccess = 0, kInvalidInput = 4, kCompilationError = 6;
const int kArchs[] = {75, 80, 86, 89, 90, 100, 120};

} // namespace

// The fake NVRTCs of tests/support/cuda_double/CMakeLists.txt are this source with a real
// version; the double itself reports one no real NVRTC has.
#ifndef WIDEFUSE_NVRTC_DOUBLE_MAJOR
#define WIDEFUSE_NVRTC_DOUBLE_MAJOR 99
#define WIDEFUSE_NVRTC_DOUBLE_MINOR 0
#endif

/// 99.0 for the double, a version no real NVRTC has, so that kernel cache keys (which include
/// it) never mix the double's images with real cubins; a fake's version otherwise.
WF_EXPORT int nvrtcVersion(int* major, int* minor) {
  *major = WIDEFUSE_NVRTC_DOUBLE_MAJOR;
  *minor = WIDEFUSE_NVRTC_DOUBLE_MINOR;
  return kSuccess;
}

WF_EXPORT const char* nvrtcGetErrorString(int result) {
  switch (result) {
  case kSuccess:
    return "NVRTC_SUCCESS";
  case kInvalidInput:
    return "NVRTC_ERROR_INVALID_INPUT";
  case kCompilationError:
    return "NVRTC_ERROR_COMPILATION";
  default:
    return "NVRTC_ERROR (driver double)";
  }
}

WF_EXPORT int nvrtcGetNumSupportedArchs(int* count) {
  *count = int(std::size(kArchs));
  return kSuccess;
}

WF_EXPORT int nvrtcGetSupportedArchs(int* archs) {
  std::memcpy(archs, kArchs, sizeof(kArchs));
  return kSuccess;
}

WF_EXPORT int nvrtcCreateProgram(Program** program, const char* source, const char*, int,
                                 const char* const*, const char* const*) {
  if (!program || !source)
    return kInvalidInput;
  *program = new Program{source, {}, {}};
  return kSuccess;
}

WF_EXPORT int nvrtcDestroyProgram(Program** program) {
  delete *program;
  *program = nullptr;
  return kSuccess;
}

WF_EXPORT int nvrtcCompileProgram(Program* program, int optionCount, const char* const* options) {
  std::string arch;
  for (int i = 0; i < optionCount; ++i)
    if (std::strncmp(options[i], "-arch=", 6) == 0)
      arch = options[i] + 6;
  std::string entry = widefuse::cuda_double::entryName(program->source);
  if (entry.empty()) {
    program->log = "driver double: no `extern \"C\" __global__ void NAME(` in the source";
    return kCompilationError;
  }
  // The lines the runtime's ptxas parser reads (runtime/cuda_compiler.cpp).
  program->log = "ptxas info    : Compiling entry function '" + entry + "' for '" + arch +
                 "'\nptxas info    : Function properties for " + entry +
                 "\nptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes "
                 "spill loads\nptxas info    : Used 32 registers, used 0 barriers\n";
  program->image = widefuse::cuda_double::kImageMagic + program->source;
  // No PTX: a stand-in naming the entry, which is what the runtime looks for in it.
  program->ptx = "// the NVRTC double compiles no PTX\n.visible .entry " + entry + "(\n)\n";
  return kSuccess;
}

WF_EXPORT int nvrtcGetProgramLogSize(Program* program, size_t* size) {
  *size = program->log.size() + 1;
  return kSuccess;
}

WF_EXPORT int nvrtcGetProgramLog(Program* program, char* log) {
  std::memcpy(log, program->log.c_str(), program->log.size() + 1);
  return kSuccess;
}

WF_EXPORT int nvrtcGetPTXSize(Program* program, size_t* size) {
  *size = program->ptx.size() + 1;
  return kSuccess;
}

WF_EXPORT int nvrtcGetPTX(Program* program, char* ptx) {
  std::memcpy(ptx, program->ptx.c_str(), program->ptx.size() + 1);
  return kSuccess;
}

WF_EXPORT int nvrtcGetCUBINSize(Program* program, size_t* size) {
  *size = program->image.size() + 1;
  return kSuccess;
}

WF_EXPORT int nvrtcGetCUBIN(Program* program, char* cubin) {
  std::memcpy(cubin, program->image.c_str(), program->image.size() + 1);
  return kSuccess;
}
