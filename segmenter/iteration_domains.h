#pragma once
/// Which tensors of a fusion provably have the same shape at run time: the iteration domains
/// a component's written tensors fall into. Two symbolic extents are the same when pointwise
/// operands, a copy_, a cast or a broadcast's named extent equate them (nvFuser's exact map,
/// for pointwise programs); a symbolic extent equated with a static one takes its value.

#include "ir/fusion.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/IntEqClasses.h>
#include <llvm/ADT/SmallVector.h>

#include <cstdint>
#include <vector>

namespace widefuse {

/// The extent classes of every tensor dimension of one fusion.
class IterationDomains {
public:
  explicit IterationDomains(const Fusion& fusion);

  /// Per dimension of tensor `value`: its static extent (>= 0), or a negative number naming
  /// its extent class. Tensors with equal keys have equal shapes whenever the fusion runs.
  llvm::SmallVector<int64_t, 4> keyOf(const Value* value) const;

private:
  /// A new extent class.
  unsigned newClass();
  /// The class of `value`'s dimension `d`, or -1 where the extent is static.
  int classOf(const Value* value, size_t d) const;
  /// Records that extent class `a` equals class `b`.
  void equate(unsigned a, unsigned b);
  /// Records that extent class `a` equals the static extent `extent`.
  void equateStatic(unsigned a, int64_t extent);
  void addInput(const Value* value);
  void addPointwise(const Expr& expr);
  void addBroadcast(const Expr& expr);
  /// The class of a broadcast's extent value (a size value shares its tensor's class).
  int classOfExtent(const Value* extent);

  /// By value id, the class of each dimension (-1 where static).
  std::vector<llvm::SmallVector<int, 4>> classes_;
  llvm::IntEqClasses equal_;
  unsigned numClasses_ = 0;
  /// The static extent a class was equated with, by class (kSymbolicExtent when none).
  std::vector<int64_t> staticExtent_;
  llvm::DenseMap<const Value*, int> ofExtentValue_;
};

} // namespace widefuse
