#pragma once
/// The fingerprint of a run's arguments: everything the argument checks, the run-time shapes,
/// the specialization and the launch bindings depend on. Equal fingerprints give equal
/// checks, shapes and bindings, which is what lets the steady state skip all of them.

#include "ir/arguments.h"

#include <llvm/ADT/ArrayRef.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace widefuse {

/// Per tensor its dtype, rank, pointer, shape and strides; per scalar its kind and bits. Shared
/// and immutable: caches compare fingerprints by pointer first.
using Fingerprint = std::shared_ptr<const std::vector<int64_t>>;

/// The fingerprint of `arguments`.
Fingerprint fingerprintOf(llvm::ArrayRef<Argument> arguments);

/// The fingerprint of `arguments` written into `words` (which allocates nothing when it
/// already holds one of arguments of the same shapes).
void fingerprintInto(llvm::ArrayRef<Argument> arguments, std::vector<int64_t>& words);

/// True when `arguments` have fingerprint `fingerprint`; compares without building one, so the
/// steady state allocates nothing.
bool hasFingerprint(llvm::ArrayRef<Argument> arguments, const std::vector<int64_t>& fingerprint);

} // namespace widefuse
