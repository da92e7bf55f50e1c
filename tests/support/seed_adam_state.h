#pragma once
// The seed's Adam state as host tensors, for the tests that run it on a backend and compare
// it with the reference evaluator.

#include "tests/support/host_comparison.h"

#include "ir/evaluator.h"
#include "ir/fusion.h"
#include "ir/host_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <vector>

namespace widefuse::testing {

/// The seed's Adam state for some shapes: per parameter p, g, m, v, step (tensors, possibly
/// strided views into larger buffers), then lr, beta1, beta2, eps.
struct AdamState {
  std::vector<HostTensor> buffers; // storage
  std::vector<TensorRef> views;    // p, g, m, v, step per parameter
  std::vector<Argument> arguments() const {
    std::vector<Argument> list(views.begin(), views.end());
    for (double scalar : {1e-3, 0.9, 0.999, 1e-8})
      list.push_back(ScalarArgument(scalar));
    return list;
  }
  AdamState clone() const {
    AdamState copy;
    copy.buffers = buffers;
    for (size_t i = 0; i < views.size(); ++i) {
      TensorRef view = views[i];
      view.data = copy.buffers[i].data();
      copy.views.push_back(view);
    }
    return copy;
  }
};

/// Random initial state; parameter `transposed` gets column-major (non-contiguous) tensors.
inline AdamState initialAdamState(const Fusion& fusion, int transposed) {
  AdamState state;
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i + 4 < fusion.inputs().size(); ++i) {
    const Value* input = fusion.inputs()[i];
    llvm::SmallVector<int64_t, 4> shape(input->extents().begin(), input->extents().end());
    bool columnMajor = int(i / 5) == transposed && shape.size() == 2;
    HostTensor buffer(input->dtype(), shape);
    int role = int(i % 5); // p, g, m, v, step
    for (int64_t k = 0; k < buffer.numel(); ++k)
      buffer.as<float>()[k] = role == 4   ? float(3 + i / 5 % 4)
                              : role == 3 ? std::fabs(normal(random)) * 0.01f
                                          : normal(random);
    TensorRef view = buffer.ref();
    if (columnMajor)
      view.strides = {1, shape[0]}; // the same buffer read as a transposed matrix
    state.buffers.push_back(std::move(buffer));
    state.views.push_back(view);
  }
  for (size_t i = 0; i < state.views.size(); ++i) // the buffers have moved
    state.views[i].data = state.buffers[i].data();
  return state;
}

/// Elements that differ between two states, over every tensor.
inline int64_t stateDifferences(const AdamState& actual, const AdamState& expected) {
  int64_t differences = 0;
  for (size_t i = 0; i < actual.buffers.size(); ++i)
    differences +=
        countDifferences(actual.buffers[i], expected.buffers[i], fmt::format("tensor {}", i));
  return differences;
}

} // namespace widefuse::testing
