#pragma once
/// What the device emulator found wrong in a launch, as compute-sanitizer words it on a GPU:
/// the kind of fault, the kernel, block and threads, and the lines of the generated text.

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>

#include <memory>
#include <string>
#include <vector>

namespace widefuse {

class EmulatedKernel;

/// The checks the emulator runs.
enum class EmulationFault {
  SharedRace,        // two threads access a shared byte between barriers, one of them writing
  BarrierDivergence, // a barrier not reached by every thread of its block
  OutOfBounds,       // an access outside every buffer the launch was given
  Misaligned,        // an access not aligned to its size (the device faults)
  WarpMask,          // a warp collective whose mask does not match the lanes that call it
  TicketNotReset,    // a ticket left non-zero after the launch (the next launch goes wrong)
  Assumption,        // a device-side assumption that does not hold (__builtin_assume)
};

/// The fault's name in reports (`shared-memory race`, ...).
llvm::StringRef emulationFaultName(EmulationFault fault);

/// A place in the kernel: a thread and the code address it was at.
struct EmulationSite {
  unsigned thread = 0;
  void* pc = nullptr;
};

/// One fault: where, and what.
struct EmulationReport {
  EmulationFault fault = EmulationFault::OutOfBounds;
  std::string kernel;
  unsigned block = 0;
  /// The threads involved, each with its code address (the line is looked up when printed).
  std::vector<EmulationSite> sites;
  /// What happened, in words (the address, the buffer, the barrier's threads).
  std::string detail;
  /// Filled by describe(): `<kernel>.cu:<line>` per site.
  std::vector<std::string> lines;
};

/// Resolves each site's code address to a line of the kernel's generated text and formats the
/// report: `<fault> in kernel <k>, block <b>: <detail>; thread <t> at <k>.cu:<line>; ...`.
std::string describe(EmulationReport& report, const EmulatedKernel& kernel);

} // namespace widefuse
