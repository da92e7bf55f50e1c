#pragma once
// Shared by the runtime tests: small kernels and scoped environment variables.

#include <llvm/ADT/StringRef.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace widefuse::testing {

/// True when `text` contains `part` (reads well in EXPECT_TRUE with a streamed message).
inline bool contains(llvm::StringRef text, llvm::StringRef part) {
  return text.contains(part);
}

/// A kernel that compiles in a fraction of a second; `name` becomes its entry function and
/// `addend` changes its text (so several sources make several cache keys).
inline std::string addKernelSource(const std::string& name, int addend = 1) {
  return "extern \"C\" __global__ void " + name +
         "(float* out, const float* in, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n)\n"
         "    out[i] = in[i] + " +
         std::to_string(addend) + ".0f;\n}\n";
}

/// The value the host test kernel stores, distinctive enough to be found in its machine code.
inline constexpr int kHostKernelMagic = 0x5A5A1234;

/// A host kernel (what HostKernelCache compiles) whose `<name>_host_fast_block` stores
/// `kHostKernelMagic + addend + block` at out[block], `out` being the parameter block's first
/// field; a compiler may add WF_TEST_EXTRA with -D (so two compilers build different code).
inline std::string hostKernelSource(const std::string& name, int addend = 0) {
  return "#ifndef WF_TEST_EXTRA\n#define WF_TEST_EXTRA 0\n#endif\n"
         "extern \"C\" void " +
         name +
         "_host_fast_block(const void* parameters, unsigned block, unsigned) {\n"
         "  int* out = *static_cast<int* const*>(parameters);\n"
         "  out[block] = " +
         std::to_string(kHostKernelMagic) + " + " + std::to_string(addend) +
         " + WF_TEST_EXTRA + int(block);\n}\n";
}

/// Sets (or, with nullopt, unsets) an environment variable for one scope, then restores it.
/// Tests in one executable run one after another, so this does not race.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;
  ~ScopedEnvironment() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char* name_;
  std::optional<std::string> old_;
};

} // namespace widefuse::testing
