#pragma once
/// The member tables a specialization keeps in device memory (TableLocation::DeviceMemory:
/// more members than fit the kernel parameters). A table is uploaded from page-locked memory
/// on the launch's stream, so a step never waits for the previous one's copy to be staged, and
/// it can be uploaded under CUDA graph capture, whatever the member count: the captured copy
/// reads page-locked memory that belongs to the graph from then on.
///
/// A table lives in a slot: device memory and the page-locked memory it is copied from. A
/// slot a graph captured (a captured upload, or a launch that reads it) is the graph's: later
/// uploads outside capture go to a new slot. A capture takes a spare slot, made before the
/// capture (nothing is allocated under capture); outside capture the spares are refilled.

#include "runtime/cuda/cuda_event.h"
#include "runtime/cuda/graph_hold.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <memory>
#include <vector>

namespace widefuse {

/// The device tables of one specialization's launches.
class MemberTables {
public:
  /// `tableBytes[i]`: launch i's table size in bytes; 0 when it keeps its table in the
  /// kernel parameters.
  MemberTables(const CudaDevice& device, llvm::ArrayRef<size_t> tableBytes);

  /// The device address launch i's kernels read its table from (null without one).
  void* address(size_t launch) const;
  /// Whether launch i must upload its table before its next launch although its bindings
  /// did not change: the slot it reads was last written by a captured copy, which runs only
  /// when the graph is replayed.
  bool stale(size_t launch) const { return slots_[launch].staleOutsideGraph; }

  /// Throws Error naming `kernel` when an upload of launch i's table under capture would find
  /// no spare slot (asked before a captured step queues anything).
  void checkCapturable(size_t launch, llvm::StringRef kernel) const;
  /// Queues the upload of launch i's `bytes` on `stream`. Outside capture: into its slot, or
  /// a new one when a graph holds it. Under capture (`capturing`): into a spare slot, which
  /// the graph then holds (checkCapturable first).
  void upload(size_t launch, llvm::ArrayRef<std::byte> bytes, void* stream, bool capturing,
              llvm::StringRef kernel);
  /// Records that a graph captured a launch reading launch i's slot.
  void markCaptured(size_t launch) {
    if (slots_[launch].current)
      slots_[launch].current->captured = true;
  }
  /// Adds launch i's slot to `hold`.
  void addTo(size_t launch, GraphHold& hold) const;
  /// Outside capture: frees slots that captures replaced and refills the spares.
  void prepareForCapture();

private:
  /// Device memory and the page-locked memory it is uploaded from, double-buffered outside
  /// capture (each with the event of its last copy).
  struct Slot {
    Slot(const CudaDevice& device, size_t bytes);
    DeviceBuffer memory;
    PinnedBuffer host[2];
    CudaEvent copied[2];
    unsigned next = 0;
    bool captured = false;
  };
  struct Launch {
    size_t bytes = 0;
    std::shared_ptr<Slot> current;
    std::vector<std::shared_ptr<Slot>> spares;
    bool staleOutsideGraph = false;
  };

  const CudaDevice& device_;
  std::vector<Launch> slots_;
  /// Slots a capture replaced while work outside it may still read them: freed outside
  /// capture.
  std::vector<std::shared_ptr<Slot>> replaced_;
};

} // namespace widefuse
