#include "tests/support/cuda_double/launch_checker.h"

#include "scheduler/kernel_abi.h"

#include "ir/error.h"

#include <cstring>

namespace widefuse::cuda_double {
namespace {

template <typename T> T readAt(const std::byte* bytes, unsigned offset) {
  T value;
  std::memcpy(&value, bytes + offset, sizeof(T));
  return value;
}

/// Checks one pointer a launch passes: [pointer, pointer + bytes) inside a live allocation of
/// its device, written in order.
void checkPointer(StreamModel& model, const Operation& launch, int device, const void* pointer,
                  size_t bytes, const std::string& where) {
  if (!pointer || bytes == 0)
    return; // empty tensors may have no memory; a dereference would crash the host build
  uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  Allocation* allocation = model.find(address);
  if (!allocation) {
    model.violate(launch.what + " passes " + where +
                  " pointing outside every live device allocation (host memory, or freed)");
    return;
  }
  if (allocation->device != device)
    model.violate(launch.what + " on device " + std::to_string(device) + " passes " + where +
                  " in the memory of device " + std::to_string(allocation->device));
  if (!model.find(address, bytes))
    model.violate(launch.what + " passes " + where + " reaching " + std::to_string(bytes) +
                  " bytes, past the end of its allocation");
  model.checkOrdered(launch, *allocation, where);
}

/// The bytes a pointer field reaches for a member of `numel` elements (0: nothing to check).
size_t reachBytes(const wf_pointer_field& field, int64_t numel) {
  if (field.reach == wf_reach_one)
    return field.element_bytes;
  if (numel <= 0)
    return 0; // an empty member reads nothing; its pointer may be anything
  return field.reach == wf_reach_numel ? size_t(numel) * field.element_bytes : field.element_bytes;
}

/// The member table a launch reads, or null after reporting why it cannot be read.
const std::byte* memberTable(StreamModel& model, const Operation& launch, const Module& module,
                             const std::vector<std::byte>& parameters, int members) {
  const wf_launch_abi& abi = *module.abi;
  size_t tableBytes = size_t(members) * abi.entry_bytes;
  if (abi.table_in_parameters) {
    if (abi.table_offset + tableBytes > parameters.size()) {
      model.violate(launch.what + " names " + std::to_string(members) +
                    " members, more than its parameter block holds");
      return nullptr;
    }
    return parameters.data() + abi.table_offset;
  }
  void* table = readAt<void*>(parameters.data(), abi::kTableOffset);
  checkPointer(model, launch, module.device, table, tableBytes, "the member table");
  return model.stickyError() ? nullptr : static_cast<const std::byte*>(table);
}

} // namespace

void checkLaunchPointers(StreamModel& model, const Operation& launch, const Module& module,
                         const std::vector<std::byte>& parameters) {
  const wf_launch_abi& abi = *module.abi;
  const std::byte* block = parameters.data();
  int members = readAt<int32_t>(block, abi::kNumMembersOffset);
  if (members < 0) {
    model.violate(launch.what + " names a negative number of members");
    return;
  }
  checkPointer(model, launch, module.device, readAt<void*>(block, abi::kTicketsOffset),
               size_t(members) * sizeof(uint32_t), "the tickets");
  for (unsigned f = 0; f < abi.field_count; ++f)
    if (abi.fields[f].body == -1)
      checkPointer(model, launch, module.device, readAt<void*>(block, abi.fields[f].offset),
                   reachBytes(abi.fields[f], 1),
                   std::string("the shared tensor '") + abi.fields[f].name + "'");
  const std::byte* table = memberTable(model, launch, module, parameters, members);
  if (!table)
    return; // do not read through a bad table
  for (int m = 0; m < members; ++m) {
    const std::byte* entry = table + size_t(m) * abi.entry_bytes;
    int body = readAt<int32_t>(entry, abi::kEntryBodyOffset);
    int64_t numel = readAt<int64_t>(entry, abi::kEntryNumelOffset);
    for (unsigned f = 0; f < abi.field_count; ++f)
      if (abi.fields[f].body == body)
        checkPointer(model, launch, module.device, readAt<void*>(entry, abi.fields[f].offset),
                     reachBytes(abi.fields[f], numel),
                     "member " + std::to_string(m) + "'s tensor '" + abi.fields[f].name + "'");
  }
}

void runLaunch(StreamModel& model, const Operation& launch, const Module& module,
               const std::vector<std::byte>& parameters, unsigned grid, unsigned threads,
               uint64_t seed) {
  std::vector<EmulationBuffer> buffers;
  model.forEachAllocation(module.device, [&](const Allocation& allocation) {
    buffers.push_back(
        {reinterpret_cast<const void*>(allocation.base), allocation.size, "a device allocation"});
  });
  EmulationOptions options;
  options.order = {BlockOrder::Kind::Shuffle, seed};
  options.interleavings = 3; // the same bytes in three orders of blocks and threads
  try {
    emulateLaunch(*module.kernel, parameters, grid, threads, buffers, options);
  } catch (const Error& error) {
    model.violate(launch.what + " faults: " + error.what());
  }
}

} // namespace widefuse::cuda_double
