#include "ir/structural_hash.h"

#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

using namespace widefuse;

namespace {

/// a*scale + b over tensors of `shape`, with `scale` a literal.
std::unique_ptr<Fusion> axpy(llvm::ArrayRef<int64_t> shape, double scale,
                             DataType dtype = DataType::Float) {
  FusionDefinition fd("axpy");
  Val a = fd.defineTensor(shape, dtype, "a");
  Val b = fd.defineTensor(shape, dtype, "b");
  fd.copy_(a * scale + b, a);
  return fd.finalize();
}

} // namespace

TEST(StructuralKey, NamesDoNotMatterStructureDoes) {
  FusionDefinition fd("other_name");
  Val x = fd.defineTensor({4}, DataType::Float, "x");
  Val y = fd.defineTensor({4}, DataType::Float, "y");
  fd.copy_(x * 2.0 + y, x);
  auto renamed = fd.finalize();
  EXPECT_EQ(structuralKey(*axpy({4}, 2.0)), structuralKey(*renamed));
  EXPECT_EQ(structuralKey(*axpy({4}, 2.0)).hash(), structuralKey(*renamed).hash());
  EXPECT_FALSE(structuralKey(*axpy({4}, 2.0)) == structuralKey(*axpy({4}, 2.0, DataType::Half)));
}

TEST(StructuralKey, ExtentsAndConstantsCanBeIgnored) {
  auto small = axpy({4}, 2.0), large = axpy({1024}, 2.0), otherScale = axpy({4}, 3.0);
  EXPECT_FALSE(structuralKey(*small) == structuralKey(*large));
  StructuralKeyOptions noExtents{.includeExtents = false};
  EXPECT_EQ(structuralKey(*small, noExtents), structuralKey(*large, noExtents));
  EXPECT_FALSE(structuralKey(*small) == structuralKey(*otherScale));
  StructuralKeyOptions signature{.includeExtents = false, .includeConstantValues = false};
  EXPECT_EQ(structuralKey(*small, signature), structuralKey(*otherScale, signature));
  EXPECT_EQ(structuralKey(*large, signature).hash(), structuralKey(*otherScale, signature).hash());
}

TEST(StructuralKey, OperandOrderAndAliasesMatter) {
  FusionDefinition fd("swapped");
  Val a = fd.defineTensor({4}, DataType::Float, "a");
  Val b = fd.defineTensor({4}, DataType::Float, "b");
  fd.copy_(b * 2.0 + a, a); // operands swapped relative to axpy
  auto swapped = fd.finalize();
  EXPECT_FALSE(structuralKey(*axpy({4}, 2.0)) == structuralKey(*swapped));
  FusionDefinition fd2("other_destination");
  Val c = fd2.defineTensor({4}, DataType::Float, "a");
  Val d = fd2.defineTensor({4}, DataType::Float, "b");
  fd2.copy_(c * 2.0 + d, d); // writes b instead of a
  EXPECT_FALSE(structuralKey(*axpy({4}, 2.0)) == structuralKey(*fd2.finalize()));
}
