#include "runtime/backend.h"

namespace widefuse {

LoadedFusion::~LoadedFusion() = default;

bool LoadedFusion::runChanged(llvm::ArrayRef<Argument>, llvm::ArrayRef<uint8_t>, const Fingerprint&,
                              const std::shared_ptr<std::vector<int64_t>>&, std::optional<void*>) {
  return false;
}

Backend::~Backend() = default;

bool Backend::holdsArguments(llvm::ArrayRef<Argument>) const {
  return false;
}

bool KeptTensor::holds(DataType dtype, llvm::ArrayRef<int64_t> shape) const {
  return owner && ref.dtype == dtype && llvm::ArrayRef<int64_t>(ref.shape) == shape;
}

int Backend::deviceOf(const Fusion&, llvm::ArrayRef<Argument>, const ExecutorOptions&) const {
  return 0;
}

KeptTensor Backend::allocate(DataType dtype, llvm::ArrayRef<int64_t> shape, const Placement&,
                             const ExecutorOptions&) const {
  auto tensor = std::make_shared<HostTensor>(dtype, shape);
  return {tensor->ref(), tensor};
}

void Backend::compile(CompiledFusion&, const ExecutorOptions&) const {}

DeviceDescription Backend::targetDevice(const std::optional<std::string>& arch, int) const {
  return arch ? deviceForArch(*arch) : defaultDevice();
}

} // namespace widefuse
