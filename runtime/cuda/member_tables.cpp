#include "runtime/cuda/member_tables.h"

#include "ir/error.h"

namespace widefuse {
namespace {

/// Spare slots kept per table: captures in a row without a step outside capture between
/// them (a graph per batch size, say) each take one.
constexpr size_t kSpareSlots = 2;

} // namespace

MemberTables::Slot::Slot(const CudaDevice& device, size_t bytes)
    : memory(device, bytes), host{PinnedBuffer(device, bytes), PinnedBuffer(device, bytes)},
      copied{CudaEvent(device), CudaEvent(device)} {}

MemberTables::MemberTables(const CudaDevice& device, llvm::ArrayRef<size_t> tableBytes)
    : device_(device), slots_(tableBytes.size()) {
  for (size_t i = 0; i < tableBytes.size(); ++i) {
    slots_[i].bytes = tableBytes[i];
    if (tableBytes[i])
      slots_[i].current = std::make_shared<Slot>(device, tableBytes[i]);
  }
}

void* MemberTables::address(size_t launch) const {
  const Launch& table = slots_[launch];
  return table.current ? table.current->memory.pointer() : nullptr;
}

void MemberTables::upload(size_t launch, llvm::ArrayRef<std::byte> bytes, void* stream,
                          bool capturing, llvm::StringRef kernel) {
  Launch& table = slots_[launch];
  WF_ASSERT(table.current && bytes.size() <= table.bytes,
            "a {}-byte table for kernel '{}' whose table takes {} bytes", bytes.size(),
            kernel.str(), table.bytes);
  if (capturing) {
    checkCapturable(launch, kernel);
    // Eager work queued before the capture may still read the current slot.
    replaced_.push_back(std::move(table.current));
    table.current = std::move(table.spares.back());
    table.spares.pop_back();
    // A copy the graph repeats at each replay, from memory no later step writes.
    Slot& slot = *table.current;
    slot.host[0].assign(bytes);
    slot.memory.uploadAsync({slot.host[0].data(), bytes.size()}, stream);
    slot.captured = true;
    table.staleOutsideGraph = true;
    return;
  }
  if (table.current->captured) // the graph keeps reading it: the new table goes elsewhere
    table.current = std::make_shared<Slot>(device_, table.bytes);
  Slot& slot = *table.current;
  unsigned buffer = slot.next;
  slot.next ^= 1u;
  // The copy two uploads ago from this buffer has long run in the steady state.
  slot.copied[buffer].synchronize();
  slot.host[buffer].assign(bytes);
  slot.memory.uploadAsync({slot.host[buffer].data(), bytes.size()}, stream);
  slot.copied[buffer].record(stream);
  table.staleOutsideGraph = false;
}

void MemberTables::checkCapturable(size_t launch, llvm::StringRef kernel) const {
  const Launch& table = slots_[launch];
  if (table.spares.empty())
    fail("kernel '{}' keeps its member table in device memory ({} bytes), and its arguments "
         "changed in {} captures since its last launch outside capture: each takes a table "
         "made beforehand; launch once outside capture between such captures",
         kernel.str(), table.bytes, kSpareSlots);
}

void MemberTables::addTo(size_t launch, GraphHold& hold) const {
  if (slots_[launch].current)
    hold.push_back(slots_[launch].current);
}

void MemberTables::prepareForCapture() {
  replaced_.clear();
  for (Launch& table : slots_)
    while (table.bytes && table.spares.size() < kSpareSlots)
      table.spares.push_back(std::make_shared<Slot>(device_, table.bytes));
}

} // namespace widefuse
