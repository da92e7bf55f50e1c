#include "runtime/argument_fingerprint.h"

#include <cstring>

namespace widefuse {
namespace {

/// The fingerprint's words in order, to `visit`, which returns false to stop.
template <typename Visit>
bool forEachFingerprintWord(llvm::ArrayRef<Argument> arguments, Visit visit) {
  for (const Argument& argument : arguments) {
    if (const TensorRef* tensor = std::get_if<TensorRef>(&argument)) {
      if (!visit(int64_t(tensor->dtype) << 8 | int64_t(tensor->shape.size())) ||
          !visit(int64_t(reinterpret_cast<intptr_t>(tensor->data))))
        return false;
      for (int64_t extent : tensor->shape)
        if (!visit(extent))
          return false;
      for (int64_t stride : tensor->strides)
        if (!visit(stride))
          return false;
      continue;
    }
    const ScalarArgument& scalar = std::get<ScalarArgument>(argument);
    int64_t bits = 0;
    std::visit([&](auto value) { std::memcpy(&bits, &value, sizeof value); }, scalar);
    if (!visit(-1 - int64_t(scalar.index())) || !visit(bits))
      return false;
  }
  return true;
}

} // namespace

Fingerprint fingerprintOf(llvm::ArrayRef<Argument> arguments) {
  std::vector<int64_t> words;
  fingerprintInto(arguments, words);
  return std::make_shared<const std::vector<int64_t>>(std::move(words));
}

void fingerprintInto(llvm::ArrayRef<Argument> arguments, std::vector<int64_t>& words) {
  words.clear();
  forEachFingerprintWord(arguments, [&](int64_t word) {
    words.push_back(word);
    return true;
  });
}

bool hasFingerprint(llvm::ArrayRef<Argument> arguments, const std::vector<int64_t>& fingerprint) {
  size_t position = 0;
  bool same = forEachFingerprintWord(arguments, [&](int64_t word) {
    return position < fingerprint.size() && fingerprint[position++] == word;
  });
  return same && position == fingerprint.size();
}

} // namespace widefuse
