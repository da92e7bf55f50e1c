#pragma once
/// Plans the body of one signature class: its member-table slots, element views, vector
/// width and chunk size.

#include "scheduler/kernel_plan.h"

#include <llvm/ADT/ArrayRef.h>

#include <string>
#include <vector>

namespace widefuse {

/// What planBody needs besides the class.
struct BodyRequest {
  unsigned index = 0;
  /// C++ prefix for the body's structs and functions.
  std::string name;
  Indexing indexing = Indexing::Flat;
  unsigned threadsPerBlock = 256;
  /// The members this kernel launch runs (decides which slots are shared by all).
  llvm::ArrayRef<unsigned> members;
  /// Flat vector loops load the next vector before computing the current one.
  bool prefetch = false;
  /// Columns of a row segment (rows bodies).
  int64_t rowSegmentColumns = 512;
};

/// Plans one body of `signature`, written with the names of its first member. Slot offsets
/// are entry offsets; the caller places shared slots in the parameter block. Appends the
/// reasons for its choices to `notes`. Throws Error for a deferred write of a tensor that is
/// not 0-d (not supported by codegen).
BodyPlan planBody(const SegmentedPhase& segmented, const SignatureClass& signature,
                  const BodyRequest& request, std::vector<std::string>& notes);

} // namespace widefuse
