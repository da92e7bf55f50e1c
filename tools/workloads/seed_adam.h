#pragma once
/// The Adam step of the seed (NVIDIA/Fuser issue, rewritten by jjsjann123): torch's
/// `_single_tensor_adam` with amsgrad, weight decay and maximize off, every in-place update a
/// copy_ deferred to the end. One disconnected subgraph per parameter plus shared scalars:
/// the fusion nvFuser rejects and widefuse groups.

#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <memory>

namespace widefuse::optim {

/// Shape of one parameter tensor.
using Shape = llvm::SmallVector<int64_t, 4>;

/// Builds the seed Adam step over parameters of `shapes` (tensors of `dtype`). Inputs, per
/// parameter i: `p{i}`, `g{i}`, `m{i}`, `v{i}` and the 0-d f32 `step{i}`; then the runtime
/// f64 scalars `lr`, `beta1`, `beta2`, `eps`. Updates p, m, v and step in place.
std::unique_ptr<Fusion> buildSeedAdam(llvm::ArrayRef<Shape> shapes,
                                      DataType dtype = DataType::Float);

/// The seed's example: 2 parameters of 1024x1024.
llvm::SmallVector<Shape, 2> seedExampleShapes();

} // namespace widefuse::optim
