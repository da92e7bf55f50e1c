#pragma once
/// Parts of a connected subgraph: where one subgraph becomes several kernel bodies, each
/// recomputing what it shares with the others. A subgraph splits where its writes differ in
/// shape (separate kernels) and where it reduces in different ways (bodies of one launch).
/// docs/segmenter.md sections 2.4 and 2.5.

#include "segmenter/iteration_domains.h"
#include "segmenter/segmented_fusion.h"

#include <llvm/ADT/DenseSet.h>

#include <optional>
#include <string>
#include <vector>

namespace widefuse {

/// A set of one fusion's values, by id: a flat array, as every operand of every expression is
/// looked up several times (a fusion of many parameters has millions).
class ValueSet {
public:
  explicit ValueSet(const Fusion& fusion) : members_(fusion.numValues()) {}
  bool count(const Value* value) const { return members_[value->id()]; }
  void insert(const Value* value) { members_[value->id()] = true; }

private:
  std::vector<bool> members_;
};

/// Adds the shared expressions `expr` reads, transitively, to `needed`. Extent values and
/// earlier phases' results are read, not computed, and add nothing.
void collectSharedCone(const Expr* expr, const ValueSet& shared,
                       llvm::DenseSet<const Expr*>& needed);

/// The value whose shape a write spans: a block reduction's result (one element per block)
/// is written by the kernel that reduces its operand, over the operand's elements.
const Value* spannedValue(const Value* written);

/// Part of a component: what one kernel body computes, and the expressions it needs.
struct ComponentPart {
  Component component;
  llvm::DenseSet<const Expr*> exprs;
};

/// `component` (computing `exprs`) as one part per iteration domain its written tensors fall
/// into: the parts run as separate kernels. 0-d writes go with the first part. Empty when
/// the writes fall into one domain (every optimizer step).
std::vector<ComponentPart> splitByDomain(const IterationDomains& domains,
                                         const Component& component,
                                         const llvm::DenseSet<const Expr*>& exprs,
                                         const ValueSet& shared);

/// `component` as one part per way it reduces: over all elements (tensor and global scopes),
/// over rows of each dimension, by blocks (the writes that read block reductions). A kernel
/// body reduces one way; the parts run side by side in one launch. Writes that read no
/// reduction go with the first part of: all elements, blocks, rows. Empty when it reduces
/// one way or not at all.
std::vector<ComponentPart> splitByReduction(const Component& component,
                                            const llvm::DenseSet<const Expr*>& exprs,
                                            const ValueSet& shared);

/// Why parts split by domain cannot run as separate kernels: one reads a copy_ destination
/// another writes (every read must see the entry value). Nullopt when they can.
std::optional<std::string> domainPartHazard(const Fusion& fusion,
                                            llvm::ArrayRef<ComponentPart> parts);

/// Why parts split by reduction cannot run side by side: one reads a copy_ destination
/// another writes in the same launch. Nullopt when they can.
std::optional<std::string> reductionPartHazard(const Fusion& fusion,
                                               llvm::ArrayRef<ComponentPart> parts);

/// True when the written tensors may have one shape at run time (equal ranks; static extents
/// equal where both are static): one kernel can then run them, checked at run time.
bool mayShareDomain(const Component& component);

/// How a component reduces, in words: "over all elements", "over rows of dimension 1", "by
/// blocks", "nothing" (for notes and messages).
std::string reductionWay(const Component& component);

} // namespace widefuse
