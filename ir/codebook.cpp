#include "ir/codebook.h"

#include "ir/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

namespace widefuse {
namespace {

/// torch.linspace(start, end, steps) in f32 as ATen's scalar CPU kernel computes it: the first
/// half counts up from start, the second half down from end (the vectorised kernels fuse the
/// multiply and add on some CPUs and differ by an ulp: the tables follow the scalar one).
std::vector<float> linspace(float start, float end, int64_t steps) {
  float step = (end - start) / float(steps - 1);
  std::vector<float> values(static_cast<size_t>(steps));
  int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    float product = step * float(i < halfway ? i : steps - i - 1);
    values[size_t(i)] = i < halfway ? start + product : end - product;
  }
  return values;
}

/// bitsandbytes' create_dynamic_map (torchao's copy, without zero padding): per exponent level
/// the midpoints of linspace(0.1, 1) times 10^(level - maxExponentBits + 1), both signs for a
/// signed map, then 0 and 1, sorted.
std::vector<float> dynamicMap(bool isSigned, int maxExponentBits, int totalBits) {
  int nonSignBits = totalBits - 1;
  std::vector<float> data;
  for (int i = 0; i < maxExponentBits; ++i) {
    int64_t items = (int64_t(1) << (i + nonSignBits - maxExponentBits + (isSigned ? 0 : 1))) + 1;
    std::vector<float> bounds = linspace(0.1f, 1.0f, items);
    // torch multiplies an f32 tensor by a Python float in f32: the power is rounded first.
    float scale = float(std::pow(10.0, double(i - maxExponentBits + 1)));
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      float mean = (bounds[k] + bounds[k + 1]) / 2.0f;
      data.push_back(scale * mean);
      if (isSigned)
        data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  WF_ASSERT(data.size() == (size_t(1) << totalBits), "dynamic map of {} entries", data.size());
  std::sort(data.begin(), data.end());
  return data;
}

/// torch.linspace(0, 1, 17)[1:]: k/16 for k = 1..16 (exact in f32).
std::vector<float> linearWithoutZero() {
  std::vector<float> values = linspace(0.0f, 1.0f, 17);
  values.erase(values.begin());
  return values;
}

const std::vector<float>& table(Codebook codebook) {
  static const std::array<std::vector<float>, 4> tables = {
      dynamicMap(true, 7, 8), dynamicMap(false, 7, 8), dynamicMap(true, 3, 4), linearWithoutZero()};
  WF_ASSERT(codebook != Codebook::None, "no codebook");
  return tables[size_t(codebook) - 1];
}

} // namespace

llvm::StringRef codebookName(Codebook codebook) {
  switch (codebook) {
  case Codebook::None:
    return "none";
  case Codebook::Dynamic8Signed:
    return "dynamic8_signed";
  case Codebook::Dynamic8Unsigned:
    return "dynamic8_unsigned";
  case Codebook::Dynamic4Signed:
    return "dynamic4_signed";
  case Codebook::Linear4Unsigned:
    return "linear4_unsigned";
  }
  WF_UNREACHABLE("unknown codebook");
}

std::optional<Codebook> parseCodebook(llvm::StringRef name) {
  for (Codebook codebook : kAllCodebooks)
    if (codebookName(codebook) == name)
      return codebook;
  return std::nullopt;
}

std::string codebookNames() {
  std::vector<std::string> names;
  for (Codebook codebook : kAllCodebooks)
    names.push_back(codebookName(codebook).str());
  return fmt::format("{}", fmt::join(names, " "));
}

llvm::ArrayRef<float> codebookValues(Codebook codebook) {
  return table(codebook);
}

float codeValue(Codebook codebook, uint64_t code) {
  const std::vector<float>& values = table(codebook);
  return values[code & (values.size() - 1)];
}

uint8_t nearestCode(Codebook codebook, float x) {
  const std::vector<float>& values = table(codebook);
  size_t code = 0;
  for (size_t step = values.size() / 2; step > 0; step /= 2)
    if (x >= values[code + step])
      code += step;
  size_t up = std::min(code + 1, values.size() - 1);
  float half = (values[up] - values[code]) * 0.5f;
  if (x - values[code] >= half)
    code = up;
  return uint8_t(code);
}

std::vector<float> codeValues(Codebook codebook, llvm::ArrayRef<int64_t> codes) {
  std::vector<float> values(codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    values[i] = codeValue(codebook, uint64_t(codes[i]));
  return values;
}

std::vector<uint8_t> nearestCodes(Codebook codebook, llvm::ArrayRef<float> values) {
  std::vector<uint8_t> codes(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    codes[i] = nearestCode(codebook, values[i]);
  return codes;
}

} // namespace widefuse
