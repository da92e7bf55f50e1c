#pragma once
/// Signature classes: components that differ only in extents (and in constant values, which
/// are lifted into per-member values) share one kernel body.

#include "segmenter/segmented_fusion.h"

#include <llvm/ADT/ArrayRef.h>

#include <vector>

namespace widefuse {

/// True when every tensor of the component can be flattened to 1-D: dense inputs and no
/// broadcast. Such components ignore ranks in their signature.
bool isFlattenable(const Component& component);

/// Groups components by their structural key without extents and constant values (and
/// without ranks for flattenable components), in order of first member. Constants that differ
/// within a class are recorded as lifted.
std::vector<SignatureClass> classifySignatures(llvm::ArrayRef<Component> components);

/// The constants a component's body reads, in a fixed structural order (the order lifted
/// constant positions refer to).
llvm::SmallVector<const Value*, 8> constantsOf(const Component& component);

/// The subgraph view of a component, for structural keys.
Subgraph subgraphOf(const Component& component);

} // namespace widefuse
