// The reference evaluator's semantics beyond single ops: deferred copies, argument checking,
// documented edge cases, strided inputs and oracle mode.

#include "evaluator_test_support.h"
#include "tests/support/error_of.h"

#include "ir/error.h"

using namespace widefuse;
using namespace widefuse::testing;

TEST(Evaluator, CopiesAreDeferredToTheEnd) {
  FusionDefinition fd("deferred");
  Val x = fd.defineTensor({3}, DataType::Float, "x");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  Val x1 = x + 1.0;
  fd.copy_(x1, x);
  fd.copy_(step + 1.0, step);
  // Read after the copy was declared: must still see the entry values.
  fd.addOutput(x * step);
  auto fusion = fd.finalize();
  HostTensor xs = tensorOf(DataType::Float, {1, 2, 3});
  HostTensor steps(DataType::Float, {});
  steps.as<float>()[0] = 10;
  auto result = evaluate(*fusion, {xs.ref(), steps.ref()});
  EXPECT_EQ(result.outputs[0].as<float>()[1], 20.0f); // 2 * 10, not 3 * 11
  EXPECT_EQ(xs.as<float>()[1], 3.0f);
  EXPECT_EQ(steps.as<float>()[0], 11.0f);
  ASSERT_EQ(result.aliasFinalValues.size(), 2u);
  EXPECT_EQ(result.aliasFinalValues[0].as<float>()[2], 4.0f);
}

TEST(Evaluator, CopyCastsToTheDestinationType) {
  FusionDefinition fd;
  Val p = fd.defineTensor({2}, DataType::BFloat16, "p");
  fd.copy_(cast(p, DataType::Float) + 0.001, p);
  auto fusion = fd.finalize();
  HostTensor ps = tensorOf(DataType::BFloat16, {1.0, 256.0});
  evaluate(*fusion, {ps.ref()});
  EXPECT_EQ(ps.as<uint16_t>()[0], referenceBFloat16(1.0f + 0.001f));
  EXPECT_EQ(ps.as<uint16_t>()[1], referenceBFloat16(256.0f)); // the update is below bf16 ulp
}

TEST(Evaluator, ScalarArgumentsAreConvertedToTheOpType) {
  FusionDefinition fd;
  Val x = fd.defineTensor({2}, DataType::Float, "x");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val k = fd.defineScalar(DataType::Int32, "k");
  fd.addOutput(x * lr + k);
  auto fusion = fd.finalize();
  HostTensor xs = tensorOf(DataType::Float, {1, 3});
  auto result = evaluate(*fusion, {xs.ref(), ScalarArgument(0.1), ScalarArgument(int64_t(2))});
  EXPECT_EQ(result.outputs[0].as<float>()[1], 3.0f * float(0.1) + 2.0f);
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {xs.ref(), ScalarArgument(0.1), ScalarArgument(0.5)});
            }).find("'k'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {xs.ref(), ScalarArgument(0.1), ScalarArgument(int64_t(1) << 40)});
            }).find("does not fit"),
            std::string::npos);
}

TEST(Evaluator, BadArgumentsAreRejectedBeforeAnyWrite) {
  FusionDefinition fd("f");
  Val a = fd.defineTensor({-1}, DataType::Float, "a");
  Val b = fd.defineTensor({-1}, DataType::Float, "b");
  fd.copy_(a + b, a);
  auto fusion = fd.finalize();
  HostTensor as = tensorOf(DataType::Float, {1, 2, 3});
  HostTensor bs = tensorOf(DataType::Float, {1, 2});
  HostTensor wrongType = tensorOf(DataType::Double, {1, 2, 3});
  std::string missing = errorOf([&] { evaluate(*fusion, {as.ref()}); });
  EXPECT_NE(missing.find("a, b"), std::string::npos) << missing;
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {as.ref(), bs.ref(), bs.ref()});
            }).find("takes 2"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {as.ref(), wrongType.ref()});
            }).find("'b'"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {as.ref(), ScalarArgument(1.0)});
            }).find("the tensor"),
            std::string::npos);
  // Symbolic extents that disagree at run time: found before `a` is written.
  std::string mismatch = errorOf([&] { evaluate(*fusion, {as.ref(), bs.ref()}); });
  EXPECT_NE(mismatch.find("[3]"), std::string::npos) << mismatch;
  EXPECT_EQ(as.as<float>()[0], 1.0f);
  EXPECT_EQ(as.as<float>()[2], 3.0f);
}

TEST(Evaluator, OverlappingWrittenInputsAreRejected) {
  FusionDefinition fd;
  Val a = fd.defineTensor({4}, DataType::Float, "a");
  Val b = fd.defineTensor({4}, DataType::Float, "b");
  fd.copy_(a + 1.0, a);
  fd.copy_(b + 1.0, b);
  auto fusion = fd.finalize();
  HostTensor shared = tensorOf(DataType::Float, {1, 2, 3, 4});
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {shared.ref(), shared.ref()});
            }).find("share memory"),
            std::string::npos);
  TensorRef broadcastView = shared.ref();
  broadcastView.strides = {0};
  HostTensor other = tensorOf(DataType::Float, {1, 2, 3, 4});
  EXPECT_NE(errorOf([&] {
              evaluate(*fusion, {broadcastView, other.ref()});
            }).find("overlap"),
            std::string::npos);
}

TEST(Evaluator, AnEmptyWrittenInputWithZeroStridesIsAccepted) {
  // An empty clone may have zero strides (torch's grad of an empty layer): no element, so
  // none overlaps another.
  FusionDefinition fd;
  Val a = fd.defineTensor({kSymbolicExtent, kSymbolicExtent}, DataType::Float, "a");
  fd.copy_(a + 1.0, a);
  auto fusion = fd.finalize();
  float unused = 0.0f;
  TensorRef empty{DataType::Float, {2, 0}, {0, 1}, &unused};
  EXPECT_NO_THROW(evaluate(*fusion, {empty}));
  EXPECT_EQ(unused, 0.0f);
}

TEST(Evaluator, ACopyDestinationMustNotOverlapAnyOtherInput) {
  FusionDefinition fd;
  Val written = fd.defineTensor({3}, DataType::Float, "written");
  Val read = fd.defineTensor({3}, DataType::Float, "read");
  fd.copy_(written + 1.0, written);
  fd.addOutput(read * 2.0);
  auto fusion = fd.finalize();
  HostTensor storage = tensorOf(DataType::Float, {0, 1, 2, 3, 4, 5});
  auto view = [&](int64_t first) {
    TensorRef ref = storage.ref();
    ref.shape = {3};
    ref.data = storage.as<float>() + first;
    return ref;
  };
  // The same memory, or a partial overlap either way round: the read would not see the
  // entry values.
  for (auto [first, second] : {std::pair{0, 0}, {0, 2}, {2, 0}})
    EXPECT_NE(errorOf([&] {
                evaluate(*fusion, {view(first), view(second)});
              }).find("input 'read' shares memory with input 'written', which is written by copy_"),
              std::string::npos)
        << first << " " << second;
  EXPECT_EQ(storage.as<float>()[0], 0.0f); // the refused runs wrote nothing
  // Adjacent spans do not overlap.
  EvaluationResult result = evaluate(*fusion, {view(0), view(3)});
  EXPECT_EQ(storage.as<float>()[0], 1.0f);
  EXPECT_EQ(result.outputs[0].as<float>()[0], 6.0f);
}

TEST(Evaluator, StridedInputsAreReadAndWrittenInPlace) {
  FusionDefinition fd;
  Val x = fd.defineTensor({2, 2}, DataType::Int32, "x");
  fd.copy_(x * 10, x);
  auto fusion = fd.finalize();
  HostTensor storage = tensorOf(DataType::Int32, {1, 2, 3, 4});
  TensorRef transposed = storage.ref();
  transposed.shape = {2, 2};
  transposed.strides = {1, 2};
  evaluate(*fusion, {transposed});
  EXPECT_EQ(storage.as<int32_t>()[0], 10);
  EXPECT_EQ(storage.as<int32_t>()[3], 40);
}

TEST(Evaluator, DocumentedEdgeCases) {
  std::vector<HostTensor> ints = {tensorOf(DataType::Int32, {7, -7, INT32_MIN, 5}),
                                  tensorOf(DataType::Int32, {0, 0, -1, 40})};
  HostTensor remainder = runOneOp([](auto& v) { return fmod(v[0], v[1]); }, ints);
  EXPECT_EQ(remainder.as<int32_t>()[0], 0); // integer fmod by zero is 0, no trap
  EXPECT_EQ(remainder.as<int32_t>()[2], 0); // INT_MIN % -1 does not overflow
  HostTensor shifted = runOneOp([](auto& v) { return shift_left(v[0], v[1]); }, ints);
  EXPECT_EQ(shifted.as<int32_t>()[3], 0); // shift by >= width gives 0
  HostTensor absolute = runOneOp([](auto& v) { return abs(v[0]); }, ints);
  EXPECT_EQ(absolute.as<int32_t>()[2], INT32_MIN); // wraps like two's complement
  std::vector<HostTensor> floats = {tensorOf(DataType::Float, {NAN, 2.5, -0.5, 1.0}),
                                    tensorOf(DataType::Float, {1.0, 1.0, 1.0, NAN})};
  HostTensor maxima = runOneOp([](auto& v) { return maximum(v[0], v[1]); }, floats);
  EXPECT_TRUE(std::isnan(maxima.as<float>()[0]));
  EXPECT_TRUE(std::isnan(maxima.as<float>()[3]));
  HostTensor rounded = runOneOp([](auto& v) { return round(v[0]); }, floats);
  EXPECT_EQ(rounded.as<float>()[1], 2.0f); // ties to even
  HostTensor signs = runOneOp([](auto& v) { return sign(v[0]); }, floats);
  EXPECT_EQ(signs.as<float>()[0], 0.0f); // sign(NaN) is 0, as in PyTorch
  std::vector<HostTensor> powers = {tensorOf(DataType::Int64, {2, -1, 1, 3}),
                                    tensorOf(DataType::Int64, {-1, -3, -5, 4})};
  HostTensor power = runOneOp([](auto& v) { return pow(v[0], v[1]); }, powers);
  EXPECT_EQ(power.as<int64_t>()[0], 0);
  EXPECT_EQ(power.as<int64_t>()[1], -1);
  EXPECT_EQ(power.as<int64_t>()[2], 1);
  EXPECT_EQ(power.as<int64_t>()[3], 81);
}

TEST(Evaluator, OracleModeComputesInDouble) {
  FusionDefinition fd;
  Val x = fd.defineTensor({1}, DataType::Float, "x");
  fd.addOutput((x + 1.0) - x);
  fd.copy_(x * 3.0, x);
  auto fusion = fd.finalize();
  HostTensor xs = tensorOf(DataType::Float, {1e8});
  auto oracle = evaluate(*fusion, {xs.ref()}, {.oracle = true});
  ASSERT_EQ(oracle.outputs[0].dtype(), DataType::Double);
  EXPECT_EQ(oracle.outputs[0].as<double>()[0], 1.0);
  EXPECT_EQ(xs.as<float>()[0], 1e8f); // oracle mode writes nothing back
  EXPECT_EQ(oracle.aliasFinalValues[0].as<double>()[0], 3e8);
  auto plain = evaluate(*fusion, {xs.ref()});
  EXPECT_EQ(plain.outputs[0].as<float>()[0], 0.0f); // 1e8f + 1 rounds back to 1e8f
}

TEST(Evaluator, ZeroElementTensors) {
  FusionDefinition fd;
  Val x = fd.defineTensor({0, 3}, DataType::Float, "x");
  fd.copy_(x * 2.0, x);
  fd.addOutput(x + 1.0);
  auto fusion = fd.finalize();
  HostTensor xs(DataType::Float, {0, 3});
  auto result = evaluate(*fusion, {xs.ref()});
  EXPECT_EQ(result.outputs[0].numel(), 0);
}

TEST(Evaluator, CopyNeedsTheSameShapeAtRunTime) {
  FusionDefinition fd;
  Val source = fd.defineTensor({-1, -1}, DataType::Float, "source");
  Val destination = fd.defineTensor({-1, -1}, DataType::Float, "destination");
  fd.copy_(source * 2.0, destination);
  auto fusion = fd.finalize();
  HostTensor a(DataType::Float, {2, 8}), b(DataType::Float, {8, 2});
  std::string message = errorOf([&] { evaluate(*fusion, {a.ref(), b.ref()}); });
  EXPECT_NE(message.find("[2, 8]"), std::string::npos) << message;
}

TEST(Evaluator, WhereOfLiteralsPromotesLikePyTorch) {
  FusionDefinition fd;
  Val condition = fd.defineTensor({2}, DataType::Bool, "condition");
  EXPECT_EQ(where(condition, 1.0, 0.0).dtype(), DataType::Float); // torch.where -> float32
  Val i = fd.defineTensor({2}, DataType::Int32, "i");
  EXPECT_NE(errorOf([&] { lerp(i, i, 0.5); }).find("floating"), std::string::npos);
}

TEST(TensorRef, DenseWhenStridesAreRowMajorOrTheTensorIsEmpty) {
  TensorRef view;
  view.shape = {2, 3};
  view.strides = {3, 1};
  EXPECT_TRUE(view.isContiguous());
  view.strides = {1, 2};
  EXPECT_FALSE(view.isContiguous());
  view.shape = {1, 3};
  view.strides = {7, 1}; // a size-1 dimension's stride never matters
  EXPECT_TRUE(view.isContiguous());
  view.shape = {0, 3};
  view.strides = {0, 0}; // NumPy's strides for an empty array
  EXPECT_TRUE(view.isContiguous());
}
