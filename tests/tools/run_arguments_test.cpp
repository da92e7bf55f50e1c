#include "tests/support/error_of.h"
#include "tools/run_arguments.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "tests/support/temp_dir.h"
#include "tools/npy_file.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace widefuse;
using widefuse::testing::errorOf;

namespace {

std::string scalarError(llvm::StringRef text, DataType dtype) {
  return errorOf([&] { parseScalarValue(text, dtype, "s"); });
}

/// x: f32[2], lr: f64, n: u8; returns x * lr + n.
std::unique_ptr<Fusion> smallFusion() {
  FusionDefinition fd("small");
  Val x = fd.defineTensor({2}, DataType::Float, "x");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  Val n = fd.defineScalar(DataType::UInt8, "n");
  fd.addOutput(x * lr + n);
  return fd.finalize();
}

} // namespace

TEST(RunArguments, SplitsAssignmentsAtTheFirstEquals) {
  Assignment assignment = parseAssignment("x=a=b.npy", "--input");
  EXPECT_EQ(assignment.name, "x");
  EXPECT_EQ(assignment.value, "a=b.npy");
  EXPECT_EQ(errorOf([] { parseAssignment("x", "--input"); }),
            "--input expects NAME=FILE.npy, got 'x'");
  EXPECT_EQ(errorOf([] { parseAssignment("=1", "--scalar"); }),
            "--scalar expects NAME=VALUE, got '=1'");
  EXPECT_EQ(errorOf([] { parseAssignment("lr=", "--scalar"); }),
            "--scalar expects NAME=VALUE, got 'lr='");
}

TEST(RunArguments, ParsesBools) {
  EXPECT_EQ(parseScalarValue("true", DataType::Bool, "s"), ScalarArgument(true));
  EXPECT_EQ(parseScalarValue("false", DataType::Bool, "s"), ScalarArgument(false));
  EXPECT_EQ(scalarError("1", DataType::Bool), "scalar 's' (b8): expected true or false, got '1'");
}

TEST(RunArguments, ParsesIntegersWithinTheirType) {
  EXPECT_EQ(parseScalarValue("-128", DataType::Int8, "s"), ScalarArgument(int64_t{-128}));
  EXPECT_EQ(parseScalarValue("+7", DataType::Int32, "s"), ScalarArgument(int64_t{7}));
  EXPECT_EQ(parseScalarValue("4294967295", DataType::UInt32, "s"),
            ScalarArgument(int64_t{4294967295}));
  EXPECT_EQ(parseScalarValue("-9223372036854775808", DataType::Int64, "s"),
            ScalarArgument(INT64_MIN));
  EXPECT_EQ(scalarError("128", DataType::Int8),
            "scalar 's' (i8): 128 does not fit in i8 (-128..127)");
  EXPECT_EQ(scalarError("-1", DataType::UInt16),
            "scalar 's' (u16): -1 does not fit in u16 (0..65535)");
  EXPECT_EQ(scalarError("9223372036854775808", DataType::Int64),
            "scalar 's' (i64): 9223372036854775808 does not fit in i64");
  for (const char* text : {"1.0", "1e3", "", "0x10", "+-1", " 1", "1 ", "one"})
    EXPECT_NE(scalarError(text, DataType::Int32).find("expected an integer"), std::string::npos)
        << text;
}

TEST(RunArguments, ParsesFloatsWithinTheirType) {
  EXPECT_EQ(parseScalarValue("2.5", DataType::Double, "s"), ScalarArgument(2.5));
  EXPECT_EQ(parseScalarValue("3", DataType::Float, "s"), ScalarArgument(3.0));
  EXPECT_EQ(parseScalarValue("-1e-3", DataType::Half, "s"), ScalarArgument(-1e-3));
  EXPECT_EQ(parseScalarValue("-inf", DataType::Float, "s"),
            ScalarArgument(-std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(std::isnan(std::get<double>(parseScalarValue("nan", DataType::BFloat16, "s"))));
  // Values that round to the largest finite value fit; those that round to infinity do not.
  EXPECT_EQ(parseScalarValue("65519", DataType::Half, "s"), ScalarArgument(65519.0));
  EXPECT_EQ(scalarError("65520", DataType::Half),
            "scalar 's' (f16): 65520 does not fit in f16 (it would become infinity)");
  EXPECT_EQ(parseScalarValue("3.4e38", DataType::Float, "s"), ScalarArgument(3.4e38));
  EXPECT_NE(scalarError("3.5e38", DataType::Float).find("does not fit in f32"), std::string::npos);
  EXPECT_NE(scalarError("3.4e38", DataType::BFloat16).find("does not fit in bf16"),
            std::string::npos);
  EXPECT_NE(scalarError("1e400", DataType::Double).find("does not fit in f64"), std::string::npos);
  EXPECT_EQ(parseScalarValue("1e-400", DataType::Double, "s"), ScalarArgument(0.0));
  for (const char* text : {"", " 1", "1 ", "1.5x", "true", "--1"})
    EXPECT_NE(scalarError(text, DataType::Float).find("expected a number"), std::string::npos)
        << text;
}

TEST(RunArguments, BindsInInputOrder) {
  TempDir dir;
  HostTensor x(DataType::Float, {2});
  x.as<float>()[1] = 4.0f;
  writeNpy(dir.file("x.npy"), x);
  auto fusion = smallFusion();
  BoundArguments bound =
      bindArguments(*fusion, {{"x", dir.file("x.npy")}}, {{"n", "7"}, {"lr", "0.5"}});
  ASSERT_EQ(bound.arguments.size(), 3u);
  const auto& view = std::get<TensorRef>(bound.arguments[0]);
  EXPECT_EQ(view.dtype, DataType::Float);
  EXPECT_EQ(static_cast<const float*>(view.data)[1], 4.0f);
  EXPECT_EQ(std::get<ScalarArgument>(bound.arguments[1]), ScalarArgument(0.5));
  EXPECT_EQ(std::get<ScalarArgument>(bound.arguments[2]), ScalarArgument(int64_t{7}));
}

TEST(RunArguments, NamesWhatIsWrongWithTheBinding) {
  auto fusion = smallFusion();
  auto bindError = [&](std::vector<Assignment> tensors, std::vector<Assignment> scalars) {
    return errorOf([&] { bindArguments(*fusion, tensors, scalars); });
  };
  EXPECT_EQ(bindError({}, {}),
            "fusion 'small' needs --input x=FILE.npy (f32[2]), --scalar lr=VALUE (f64), "
            "--scalar n=VALUE (u8)");
  EXPECT_EQ(bindError({{"x", "x.npy"}, {"y", "y.npy"}}, {{"lr", "1"}, {"n", "1"}}),
            "--input y: fusion 'small' has no input named 'y'");
  EXPECT_EQ(bindError({{"x", "a.npy"}, {"x", "b.npy"}}, {{"lr", "1"}, {"n", "1"}}),
            "--input x is given twice");
  EXPECT_EQ(bindError({{"x", "x.npy"}}, {{"lr", "1"}, {"lr", "2"}, {"n", "1"}}),
            "--scalar lr is given twice");
  EXPECT_EQ(bindError({{"lr", "lr.npy"}}, {}),
            "--input lr: 'lr' is a scalar input; give it as --scalar lr=VALUE (f64)");
  EXPECT_EQ(bindError({}, {{"x", "1"}}),
            "--scalar x: 'x' is a tensor input; give it as --input x=FILE.npy (f32[2])");
  EXPECT_EQ(bindError({{"x", "/nonexistent/x.npy"}}, {{"lr", "1"}, {"n", "300"}}),
            "scalar 'n' (u8): 300 does not fit in u8 (0..255)");
  EXPECT_EQ(bindError({{"x", "/nonexistent/x.npy"}}, {{"lr", "1"}, {"n", "3"}}),
            "input 'x': cannot read '/nonexistent/x.npy': No such file or directory");
}
