#pragma once
/// The in-place hazard plan: which copy_ destinations may be overwritten while other threads
/// of the same kernel still read them, and how each is resolved inside the kernel.

#include "segmenter/segmented_fusion.h"

#include <llvm/ADT/ArrayRef.h>

#include <vector>

namespace widefuse {

/// Plans every copy_ of every component. A destination read only at the position it is
/// written (p, m, v) stays a plain in-place update; one read at other positions (a 0-d
/// `step` read by every element, a broadcast read) becomes a deferred write that happens
/// once, after every block has finished reading. Never adds a kernel.
std::vector<HazardPlan> planAliases(llvm::ArrayRef<Component> components);

} // namespace widefuse
