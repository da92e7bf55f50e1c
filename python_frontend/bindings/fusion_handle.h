#pragma once
/// What the two binding files share: a finished fusion, and data types by their short names
/// (the form in which they cross the boundary).

#include "ir/error.h"
#include "ir/fusion.h"
#include "segmenter/components.h"

#include <memory>
#include <string>

namespace widefuse::python {

/// A verified fusion, shared by the Python FusionDefinition and every executor made for it
/// (an executor must not outlive the fusion it runs).
struct FusionHandle {
  std::shared_ptr<const Fusion> fusion;
  /// findComponents(*fusion), where the definition's end found them (null otherwise): the
  /// executors segment from them (ExecutorOptions::components).
  std::shared_ptr<const FusionComponents> components;
};

/// The data type of a short name ("f32"); Error for an unknown name.
inline DataType dataTypeNamed(const std::string& name) {
  std::optional<DataType> type = parseDataType(name);
  if (!type)
    fail("unknown data type '{}'", name);
  return *type;
}

} // namespace widefuse::python
