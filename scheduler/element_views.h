#pragma once
/// Which values of a component are computed per element (and under which views) and which
/// once per chunk.

#include "scheduler/cpp_names.h"
#include "scheduler/kernel_plan.h"

#include <vector>

namespace widefuse {

/// True for a value computed once per chunk rather than per element: scalars, and 0-d
/// tensors of a component whose domain is not 0-d.
bool isUniformValue(const Value& value, const Component& component);

/// The view of a rank-1 tensor with one element per block of `block` domain elements
/// (expand_blocks' operand, a block reduction's result): element i of the domain reads its
/// element i / block. Distinct from every dimension view (its first entry is negative).
ElementView blockView(int64_t block);

/// The block of a blockView, or 0 for any other view.
int64_t blockOfView(const ElementView& view);

/// The element values of `component` that its writes need, each under every view it is
/// read in (strided bodies: a value before broadcast_in_dim may be read under several),
/// in emission order: input loads first, then expression results in topological order.
/// Names are claimed from `names`.
std::vector<ElementInstance> computeElementInstances(const Component& component, Indexing indexing,
                                                     CppNames& names);

} // namespace widefuse
