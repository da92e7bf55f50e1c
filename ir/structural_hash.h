#pragma once
/// Canonical structural keys of fusions and subgraphs: two subgraphs with equal keys compute
/// the same function of their inputs, so they can share one kernel body.

#include "ir/fusion.h"

#include <llvm/ADT/ArrayRef.h>

#include <cstdint>
#include <vector>

namespace widefuse {

/// What a structural key leaves out.
struct StructuralKeyOptions {
  /// Include tensor extents; leave them out for a signature that any shapes share.
  bool includeExtents = true;
  /// Include tensor ranks; leave them out when every tensor is dense and will be flattened
  /// to 1-D (then a matrix and a vector run the same body).
  bool includeRanks = true;
  /// Include the values of constants; leave them out when differing constants will become
  /// per-member values (constant lifting).
  bool includeConstantValues = true;
};

/// A reduction and the position of the operand a subgraph contributes to it.
using Contribution = std::pair<const Expr*, unsigned>;

/// A subgraph to key: its inputs in a canonical order, its expressions in topological order,
/// its in-place updates and plain outputs.
struct Subgraph {
  llvm::ArrayRef<const Value*> inputs;
  llvm::ArrayRef<const Expr*> exprs;
  llvm::ArrayRef<Alias> aliases;
  llvm::ArrayRef<const Value*> outputs;
  /// Reductions it contributes an operand to: (the reduction, which operand). The reduction
  /// itself may read values outside the subgraph (a global one); only the op, scope, result
  /// type and this operand are keyed.
  llvm::ArrayRef<Contribution> contributions = {};
};

/// An exact structural description (a token sequence), compared for equality; hash() is for
/// hash tables only. Values are named by position, never by name.
class StructuralKey {
public:
  bool operator==(const StructuralKey& other) const { return tokens_ == other.tokens_; }
  bool operator<(const StructuralKey& other) const { return tokens_ < other.tokens_; }
  /// A 64-bit FNV-1a hash of the tokens, stable across runs and machines.
  uint64_t hash() const;
  /// Appends one token (used by the key builder).
  void append(uint64_t token) { tokens_.push_back(token); }

private:
  std::vector<uint64_t> tokens_;
};

/// The key of a subgraph. Every operand of its expressions must be one of its inputs, a
/// constant, or the result of one of its expressions.
StructuralKey structuralKey(const Subgraph& subgraph, const StructuralKeyOptions& options = {});

/// The key of a whole fusion (inputs in declaration order).
StructuralKey structuralKey(const Fusion& fusion, const StructuralKeyOptions& options = {});

} // namespace widefuse
