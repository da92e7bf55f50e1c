#pragma once
/// Parameter shape lists for tests: matrices, vectors, a 1-element and a 0-element tensor,
/// odd sizes that leave a scalar tail.

#include "tools/workloads/seed_adam.h"

#include <llvm/ADT/ArrayRef.h>

#include <vector>

namespace widefuse::testing {

/// Small shapes of every kind, cheap to run on the reference evaluator.
inline const optim::Shape kSmallShapes[] = {{64, 32}, {7}, {1}, {0}, {3, 5, 2}, {4097}, {16, 16}};

/// `count` shapes cycling through `pattern`.
inline std::vector<optim::Shape> mixedShapes(size_t count,
                                             llvm::ArrayRef<optim::Shape> pattern = kSmallShapes) {
  std::vector<optim::Shape> shapes;
  for (size_t i = 0; i < count; ++i)
    shapes.push_back(pattern[i % pattern.size()]);
  return shapes;
}

} // namespace widefuse::testing
