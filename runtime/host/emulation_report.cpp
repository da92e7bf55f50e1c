#include "runtime/host/emulation_report.h"

#include "runtime/host/device_emulator.h"

#include <fmt/format.h>

namespace widefuse {

llvm::StringRef emulationFaultName(EmulationFault fault) {
  switch (fault) {
  case EmulationFault::SharedRace:
    return "shared-memory race";
  case EmulationFault::BarrierDivergence:
    return "divergent barrier";
  case EmulationFault::OutOfBounds:
    return "out-of-bounds access";
  case EmulationFault::Misaligned:
    return "misaligned access";
  case EmulationFault::WarpMask:
    return "warp mask mismatch";
  case EmulationFault::TicketNotReset:
    return "ticket not reset";
  case EmulationFault::Assumption:
    return "failed device assumption";
  }
  return "fault";
}

std::string describe(EmulationReport& report, const EmulatedKernel& kernel) {
  report.lines.clear();
  std::string text = fmt::format("{} in kernel {}, block {}: {}", emulationFaultName(report.fault),
                                 report.kernel, report.block, report.detail);
  for (const EmulationSite& site : report.sites) {
    report.lines.push_back(site.pc ? kernel.lineOf(site.pc) : std::string("its end"));
    text += fmt::format("; thread {} at {}", site.thread, report.lines.back());
  }
  return text;
}

} // namespace widefuse
