#pragma once
/// The objects the two binding files share: a finished fusion and its input facts.

#include "ir/fusion.h"

#include <memory>

namespace widefuse::python {

/// A verified fusion, shared by the Python FusionDefinition and every executor made for it
/// (an executor must not outlive the fusion it runs).
struct FusionHandle {
  std::shared_ptr<const Fusion> fusion;
};

} // namespace widefuse::python
