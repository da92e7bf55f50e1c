#pragma once
// Fusions whose values read reductions, for the phase tests: the segmenter's (where each
// phase's work goes) and the runtime's (the phases run to the whole fusion's bits).

#include "ir/fusion_definition.h"
#include "tools/workloads/seed_adam.h"

#include <fmt/format.h>
#include <llvm/ADT/ArrayRef.h>

#include <memory>
#include <vector>

namespace widefuse::testing {

/// Adam with the gradients clipped by their global norm first (torch's clip_grad_norm_),
/// returning the squared norm.
inline std::unique_ptr<Fusion> clippedAdam(llvm::ArrayRef<optim::Shape> shapes) {
  FusionDefinition fd("clipped_adam");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  std::vector<Val> params, grads, moments, squares;
  for (size_t i = 0; i < shapes.size(); ++i) {
    params.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("g{}", i)));
    moments.push_back(fd.defineTensor(shapes[i], DataType::Float, fmt::format("m{}", i)));
    squares.push_back(grads.back() * grads.back());
  }
  Val squared = sum(squares);
  Val coefficient = minimum(1.0 / (sqrt(squared) + 1e-6), 1.0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    Val g = grads[i] * coefficient;
    Val m1 = moments[i] * 0.9 + g * 0.1;
    fd.copy_(params[i] - lr * m1, params[i]);
    fd.copy_(m1, moments[i]);
  }
  fd.addOutput(squared);
  return fd.finalize();
}

/// Per-tensor norms read by each parameter's own update, as LAMB's trust ratio.
inline std::unique_ptr<Fusion> lambLike() {
  FusionDefinition fd("lamb_like");
  for (int i = 0; i < 3; ++i) {
    Val p = fd.defineTensor({4, 5 + i}, DataType::Float, fmt::format("p{}", i));
    Val g = fd.defineTensor({4, 5 + i}, DataType::Float, fmt::format("g{}", i));
    Val u = g * 0.5 + p * 0.01;
    Val trust = sqrt(sum(p * p)) / sqrt(sum(u * u));
    fd.copy_(p - u * trust, p);
  }
  return fd.finalize();
}

/// A reduction over rows of values that read an earlier reduction: three phases.
inline std::unique_ptr<Fusion> reductionChain() {
  FusionDefinition fd("chain");
  Val x = fd.defineTensor({8}, DataType::Float, "x");
  Val y = fd.defineTensor({3, 8}, DataType::Float, "y");
  Val first = sum(x * x);
  Val second = max(y * first, {1}); // rows, reading the first result
  fd.addOutput(x + broadcast_in_dim(second, {3, 8}, {0}) * 0.0 + first);
  fd.addOutput(second);
  return fd.finalize();
}

/// A norm only returned, beside an update that does not read it: one phase.
inline std::unique_ptr<Fusion> loggedNorm() {
  FusionDefinition fd("logged");
  Val p = fd.defineTensor({6}, DataType::Float, "p");
  Val g = fd.defineTensor({6}, DataType::Float, "g");
  fd.copy_(p - g * 0.1, p);
  fd.addOutput(sum(g * g));
  return fd.finalize();
}

/// q is written from its entry value but read again by the phase after the reduction.
inline std::unique_ptr<Fusion> movedWrite() {
  FusionDefinition fd("moved");
  Val p = fd.defineTensor({5}, DataType::Float, "p");
  Val q = fd.defineTensor({5}, DataType::Float, "q");
  fd.copy_(q * 2.0, q);
  Val s = sum(p);
  fd.addOutput(q + s);
  return fd.finalize();
}

/// p is reduced and written in phase 1; the reduction reads p's entry value.
inline std::unique_ptr<Fusion> samePhaseWrite() {
  FusionDefinition fd("same_phase");
  Val p = fd.defineTensor({7}, DataType::Float, "p");
  Val q = fd.defineTensor({7}, DataType::Float, "q");
  fd.copy_(p * 0.5, p);
  fd.copy_(q * sum(p), q);
  return fd.finalize();
}

/// Each row minus its maximum: the row maxima read back along their rows.
inline std::unique_ptr<Fusion> rowShift() {
  FusionDefinition fd("rows");
  Val x = fd.defineTensor({-1, 6}, DataType::Float, "x");
  Val rowMax = max(x, {1});
  Val shifted = x - broadcast_in_dim_to_extents(rowMax, {size(x, 0), 6}, {0});
  fd.addOutput(shifted);
  return fd.finalize();
}

} // namespace widefuse::testing
