// Reductions in the IR: scopes, result types, the text form and the evaluator, each against
// values computed here by the recursive definition of the reduction tree
// (docs/reductions.md), which the evaluator computes with a binary counter.
#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/reduction.h"
#include "ir/verifier.h"
#include "tests/ir/evaluator_test_support.h"
#include "tests/ir/reduction_reference.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// Runs a one-output fusion built by `build` on `inputs` with the reference evaluator.
HostTensor run(const std::function<Val(FusionDefinition&, std::vector<Val>&)>& build,
               std::vector<HostTensor>& inputs, EvaluatorOptions options = {}) {
  FusionDefinition fd("reduce");
  std::vector<Val> values;
  for (HostTensor& input : inputs)
    values.push_back(fd.defineTensor(input.shape(), input.dtype()));
  fd.addOutput(build(fd, values));
  auto fusion = fd.finalize();
  std::vector<Argument> arguments;
  for (HostTensor& input : inputs)
    arguments.push_back(input.ref());
  return std::move(evaluate(*fusion, arguments, options).outputs.at(0));
}

HostTensor matrixOf(DataType dtype, int64_t rows, int64_t columns, const std::vector<double>& v) {
  HostTensor tensor(dtype, {rows, columns});
  for (size_t i = 0; i < v.size(); ++i)
    setElement(tensor, int64_t(i), v[i]);
  return tensor;
}

} // namespace

TEST(Reductions, TheDocumentedExamples) {
  auto sumOf = [](FusionDefinition&, std::vector<Val>& v) { return sum(v[0]); };
  std::vector<HostTensor> cancel{tensorOf(DataType::Float, {1e8, 1, -1e8, 1})};
  HostTensor total = run(sumOf, cancel);
  expectSameValue(total.as<float>()[0], 0.0, "(1e8 + 1) + (-1e8 + 1) in f32");
  EXPECT_EQ(total.rank(), 0u);

  std::vector<HostTensor> rows{matrixOf(DataType::Float, 2, 3, {1, 2, 3, 4, 5, 6})};
  HostTensor perRow =
      run([](FusionDefinition&, std::vector<Val>& v) { return sum(v[0], {1}); }, rows);
  ASSERT_EQ(perRow.shape(), llvm::ArrayRef<int64_t>({2}));
  EXPECT_EQ(perRow.as<float>()[0], 6);
  EXPECT_EQ(perRow.as<float>()[1], 15);

  // Accumulated in f32, rounded to bf16 once: a bf16 accumulator would give 1.
  std::vector<HostTensor> narrow{tensorOf(DataType::BFloat16, {1, 1.0 / 256, 1.0 / 256})};
  HostTensor narrowSum = run(sumOf, narrow);
  EXPECT_EQ(narrowSum.dtype(), DataType::BFloat16);
  EXPECT_EQ(elementAsDouble(narrowSum, 0), 1.0078125);

  std::vector<HostTensor> nan{tensorOf(DataType::Float, {1, NAN, 2})};
  EXPECT_TRUE(std::isnan(
      run([](FusionDefinition&, std::vector<Val>& v) { return max(v[0]); }, nan).as<float>()[0]));

  std::vector<HostTensor> bytes{tensorOf(DataType::Int8, {127, 1})};
  HostTensor wide = run(sumOf, bytes);
  EXPECT_EQ(wide.dtype(), DataType::Int64);
  EXPECT_EQ(wide.as<int64_t>()[0], 128);

  std::vector<HostTensor> negativeZero{tensorOf(DataType::Float, {-0.0})};
  expectSameValue(run(sumOf, negativeZero).as<float>()[0], 0.0, "a sum is never -0.0");
}

TEST(Reductions, EmptyOperandsGiveTheirEmptyValue) {
  std::vector<HostTensor> empty{HostTensor(DataType::Float, {0})};
  auto one = [&](Val (*op)(const Val&)) {
    return run([&](FusionDefinition&, std::vector<Val>& v) { return op(v[0]); }, empty);
  };
  expectSameValue(one(sum).as<float>()[0], 0.0, "sum of nothing");
  EXPECT_FALSE(one(any).as<bool>()[0]);
  EXPECT_TRUE(one(all).as<bool>()[0]);
  EXPECT_CONTAINS(errorOf([&] { one(max); }), "max over zero elements has no value");

  // Rows: zero rows give an empty result; zero-length rows have no max.
  std::vector<HostTensor> noRows{HostTensor(DataType::Float, {0, 4})};
  HostTensor none =
      run([](FusionDefinition&, std::vector<Val>& v) { return max(v[0], {1}); }, noRows);
  EXPECT_EQ(none.shape(), llvm::ArrayRef<int64_t>({0}));
  FusionDefinition fd("empty_rows");
  Val x = fd.defineTensor({4, 0}, DataType::Float, "x");
  EXPECT_CONTAINS(errorOf([&] { min(x, {1}); }),
                  "min(x: f32[4, 0], [1]): min over zero elements has no value");
}

TEST(Reductions, SymbolicEmptyMaxFailsBeforeAnythingIsWritten) {
  FusionDefinition fd("symbolic");
  Val x = fd.defineTensor({-1}, DataType::Float, "x");
  Val p = fd.defineTensor({2}, DataType::Float, "p");
  fd.copy_(p + max(x), p);
  auto fusion = fd.finalize();
  HostTensor empty(DataType::Float, {0});
  HostTensor target = tensorOf(DataType::Float, {1, 2});
  std::vector<Argument> arguments{empty.ref(), target.ref()};
  EXPECT_CONTAINS(errorOf([&] { evaluate(*fusion, arguments); }),
                  "at run time 'x' has shape [0]: max over zero elements has no value");
  EXPECT_EQ(target.as<float>()[0], 1);
  EXPECT_EQ(target.as<float>()[1], 2);
}

TEST(Reductions, SignedZerosAndNaNDoNotDependOnTheOrder) {
  for (auto values : {std::vector<double>{0.0, -0.0}, std::vector<double>{-0.0, 0.0}}) {
    std::vector<HostTensor> x{tensorOf(DataType::Float, values)};
    expectSameValue(
        run([](FusionDefinition&, std::vector<Val>& v) { return max(v[0]); }, x).as<float>()[0],
        0.0, "max(+0, -0)");
    expectSameValue(
        run([](FusionDefinition&, std::vector<Val>& v) { return min(v[0]); }, x).as<float>()[0],
        -0.0, "min(+0, -0)");
  }
}

TEST(Reductions, IntegerSumsWrap) {
  HostTensor x(DataType::Int64, {2});
  x.as<int64_t>()[0] = std::numeric_limits<int64_t>::max();
  x.as<int64_t>()[1] = 1;
  std::vector<HostTensor> inputs{x};
  HostTensor total = run([](FusionDefinition&, std::vector<Val>& v) { return sum(v[0]); }, inputs);
  EXPECT_EQ(total.as<int64_t>()[0], std::numeric_limits<int64_t>::min());
}

TEST(Reductions, GlobalScopeCombinesEachOperandsTreeInOrder) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<double> a(5), b(2), c(0), d(9);
  for (auto* v : {&a, &b, &d})
    for (double& x : *v)
      x = referenceBFloat16ToFloat(referenceBFloat16(value(random)));
  std::vector<HostTensor> inputs{tensorOf(DataType::Float, a), tensorOf(DataType::BFloat16, b),
                                 tensorOf(DataType::Float, c), tensorOf(DataType::Float, d)};
  HostTensor total = run(
      [](FusionDefinition&, std::vector<Val>& v) {
        return sum({v[0], v[1], v[2], v[3]});
      },
      inputs);
  EXPECT_EQ(total.dtype(), DataType::Float);
  auto add = [](float x, float y) { return x + y; };
  std::vector<float> operandTrees;
  for (const auto& v : {a, b, d})
    operandTrees.push_back(*treeOf(std::vector<float>(v.begin(), v.end()), add));
  // The empty operand is missing: trees over [Ra, Rb, missing, Rd].
  float expected = add(add(operandTrees[0], operandTrees[1]), operandTrees[2]);
  expectSameValue(total.as<float>()[0], expected + 0.0f, "sum(a, b, c, d)");

  std::vector<HostTensor> mixed{tensorOf(DataType::Int32, {1, 2}), tensorOf(DataType::Bool, {1})};
  HostTensor count = run(
      [](FusionDefinition&, std::vector<Val>& v) {
        return sum({v[0], v[1]});
      },
      mixed);
  EXPECT_EQ(count.dtype(), DataType::Int64);
  EXPECT_EQ(count.as<int64_t>()[0], 4);
}

TEST(Reductions, RowsOfAnInnermostDimensionFollowedByOnes) {
  HostTensor x(DataType::Float, {2, 3, 1});
  for (int i = 0; i < 6; ++i)
    x.as<float>()[i] = float(i + 1);
  std::vector<HostTensor> inputs{x};
  HostTensor rows =
      run([](FusionDefinition&, std::vector<Val>& v) { return sum(v[0], {1}); }, inputs);
  ASSERT_EQ(rows.shape(), llvm::ArrayRef<int64_t>({2, 1}));
  EXPECT_EQ(rows.as<float>()[0], 6);
  EXPECT_EQ(rows.as<float>()[1], 15);
}

/// Every op, tensor and rows scope, every dtype it allows, random lengths 1..70: the evaluator
/// against the recursive tree over this test's own conversions.
TEST(Reductions, EveryOpAndDtypeAgainstTheRecursiveTree) {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> unit(-1, 1);
  const DataType types[] = {DataType::Bool,     DataType::Int8,   DataType::Int16,
                            DataType::Int32,    DataType::Int64,  DataType::UInt8,
                            DataType::UInt16,   DataType::UInt32, DataType::Half,
                            DataType::BFloat16, DataType::Float,  DataType::Double};
  for (DataType dtype : types)
    for (OpKind op : {OpKind::Sum, OpKind::Max, OpKind::Min, OpKind::Any, OpKind::All})
      for (bool byRows : {false, true}) {
        SCOPED_TRACE(fmt::format("{} of {}{}", opName(op).str(), shortName(dtype).str(),
                                 byRows ? " by rows" : ""));
        int64_t rows = byRows ? 3 : 1, length = 1 + int64_t(random() % 70);
        std::vector<double> values;
        for (int64_t i = 0; i < rows * length; ++i) {
          // Floats with every mantissa bit in use, so that the order of the adds shows.
          double v = isFloatingPoint(dtype)    ? std::ldexp(unit(random), int(random() % 9) - 4)
                     : dtype == DataType::Bool ? double(random() % 2)
                                               : double(random() % 100);
          if (random() % 9 == 0)
            v = 0; // runs of zeros for any/all, of both signs for max/min
          if (isFloatingPoint(dtype) && random() % 13 == 0)
            v = -0.0;
          if (isFloatingPoint(dtype) && random() % 41 == 0)
            v = NAN;
          values.push_back(v);
        }
        HostTensor x = byRows ? matrixOf(dtype, rows, length, values) : tensorOf(dtype, values);
        std::vector<HostTensor> inputs{x};
        Val (*byTensor)(const Val&) = nullptr;
        Val (*byDims)(const Val&, llvm::ArrayRef<int64_t>) = nullptr;
        switch (op) {
        case OpKind::Sum:
          byTensor = sum, byDims = sum;
          break;
        case OpKind::Max:
          byTensor = max, byDims = max;
          break;
        case OpKind::Min:
          byTensor = min, byDims = min;
          break;
        case OpKind::Any:
          byTensor = any, byDims = any;
          break;
        default:
          byTensor = all, byDims = all;
          break;
        }
        HostTensor result =
            run([&](FusionDefinition&,
                    std::vector<Val>& v) { return byRows ? byDims(v[0], {1}) : byTensor(v[0]); },
                inputs);
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<double> row(values.begin() + r * length, values.begin() + (r + 1) * length);
          for (double& v : row) // the element as stored
            v = elementAsDouble(x, &v - row.data() + r * length);
          double expected = 0;
          std::vector<float> asFloat(row.begin(), row.end());
          switch (op) {
          case OpKind::Sum:
            if (dtype == DataType::Double)
              expected = *treeOf(row, [](double a, double b) { return a + b; }) + 0.0;
            else if (isFloatingPoint(dtype))
              expected =
                  roundTo(dtype, *treeOf(asFloat, [](float a, float b) { return a + b; }) + 0.0f);
            else
              expected = double(*treeOf(std::vector<int64_t>(row.begin(), row.end()),
                                        [](int64_t a, int64_t b) { return a + b; }));
            break;
          case OpKind::Max:
            expected = *treeOf(row, referenceMax);
            break;
          case OpKind::Min:
            expected = *treeOf(row, referenceMin);
            break;
          case OpKind::Any:
            expected = std::any_of(row.begin(), row.end(), [](double v) { return v != 0; });
            break;
          default:
            expected = std::all_of(row.begin(), row.end(), [](double v) { return v != 0; });
            break;
          }
          if (op == OpKind::Any || op == OpKind::All)
            EXPECT_EQ(result.dtype(), DataType::Bool);
          expectSameValue(elementAsDouble(result, r), expected, fmt::format("row {}", r));
        }
      }
}

TEST(Reductions, OracleModeAccumulatesInDouble) {
  std::vector<HostTensor> x{tensorOf(DataType::Float, {1e8, 1, 1, 1})};
  HostTensor declared = run([](FusionDefinition&, std::vector<Val>& v) { return sum(v[0]); }, x);
  EXPECT_EQ(declared.as<float>()[0], 1e8f); // (1e8 + 1) + (1 + 1): each 1 is lost in f32
  EvaluatorOptions oracle;
  oracle.oracle = true;
  HostTensor exact =
      run([](FusionDefinition&, std::vector<Val>& v) { return sum(v[0]); }, x, oracle);
  EXPECT_EQ(exact.as<double>()[0], 1e8 + 3);
}

TEST(Reductions, AnyAndAllReadComplexValuesAsNonZero) {
  HostTensor z(DataType::ComplexFloat, {2});
  z.as<float>()[0] = 0, z.as<float>()[1] = 0, z.as<float>()[2] = 0, z.as<float>()[3] = 1;
  std::vector<HostTensor> inputs{z};
  EXPECT_TRUE(
      run([](FusionDefinition&, std::vector<Val>& v) { return any(v[0]); }, inputs).as<bool>()[0]);
  EXPECT_FALSE(
      run([](FusionDefinition&, std::vector<Val>& v) { return all(v[0]); }, inputs).as<bool>()[0]);
  FusionDefinition fd("complex");
  Val c = fd.defineTensor({2}, DataType::ComplexFloat, "z");
  EXPECT_CONTAINS(errorOf([&] { sum(c); }), "sum of complex operands is not supported yet");
  EXPECT_CONTAINS(errorOf([&] { max(c); }), "complex numbers have no order");
}

TEST(Reductions, ScopesTheyDoNotCoverAreRefusedByName) {
  FusionDefinition fd("refused");
  Val x = fd.defineTensor({4, 8}, DataType::Float, "x");
  Val y = fd.defineTensor({8}, DataType::Float, "y");
  Val s = fd.defineScalar(DataType::Double, "s");
  EXPECT_CONTAINS(errorOf([&] { sum(x, {0}); }),
                  "sum(x: f32[4, 8], [0]): reducing dimension 0 is not supported: only every "
                  "dimension (sum(x)) or the innermost one ([1])");
  EXPECT_CONTAINS(errorOf([&] { sum(x, llvm::ArrayRef<int64_t>{}); }),
                  "name the dimensions to reduce, or write sum(x)");
  EXPECT_CONTAINS(errorOf([&] { sum(x, {1, 1}); }), "dimension 1 is named twice");
  EXPECT_CONTAINS(errorOf([&] { sum(x, {-1}); }), "dimension -1 is outside the operand's rank");
  EXPECT_CONTAINS(errorOf([&] { sum(s); }), "reductions take tensors; 's' is a scalar");
  EXPECT_CONTAINS(errorOf([&] { sum({x, s}); }), "reductions take tensors; 's' is a scalar");
  // Every dimension is the tensor scope; so is [0] of a rank-1 tensor.
  EXPECT_EQ(sum(x, {0, 1}).rank(), 0u);
  EXPECT_EQ(sum(y, {0}).rank(), 0u);
  EXPECT_EQ(sum(x, {1}).value()->extents(), llvm::ArrayRef<int64_t>({4}));
  EXPECT_EQ(sum({x, y}).dtype(), DataType::Float);
}

TEST(Reductions, TextFormRoundTripsEveryScope) {
  const char* text = "fusion r(x: f32[4, 8], y: bf16[3], b: b8[2, 2]) {\n"
                     "  t = sum(x)\n"
                     "  g = max(x, y)\n"
                     "  r = min(x, [1])\n"
                     "  a = any(b)\n"
                     "  e = all(b, [1])\n"
                     "  n = sum(mul(y, y))\n"
                     "  return t, g, r, a, e, n\n"
                     "}\n";
  auto fusion = parseFusion(text);
  std::string printed = printFusion(*fusion);
  EXPECT_EQ(printFusion(*parseFusion(printed)), printed);
  EXPECT_CONTAINS(printed, "g = max(x, y)");
  EXPECT_CONTAINS(printed, "r = min(x, [1])");
  EXPECT_CONTAINS(printed, "e = all(b, [1])");
  EXPECT_EQ(fusion->lookup("g")->dtype(), DataType::Float);
  EXPECT_EQ(fusion->lookup("r")->extents(), llvm::ArrayRef<int64_t>({4}));
  EXPECT_EQ(fusion->lookup("e")->dtype(), DataType::Bool);
  // Every dimension prints as the tensor scope.
  EXPECT_CONTAINS(printFusion(*parseFusion("fusion f(x: f32[2, 3]) {\n  s = sum(x, [0, 1])\n"
                                           "  return s\n}\n")),
                  "s = sum(x)\n");
  EXPECT_CONTAINS(errorOf([] {
                    parseFusion("fusion f(x: f32[2, 3], y: f32[3]) {\n"
                                "  s = sum(x, y, [1])\n  return s\n}\n");
                  }),
                  "a reduction over rows takes one operand");
  EXPECT_CONTAINS(errorOf([] {
                    parseFusion("fusion f(x: f32[2, 3]) {\n"
                                "  s = sum(x, [1], x)\n  return s\n}\n");
                  }),
                  "after the dims list");
  EXPECT_CONTAINS(errorOf([] {
                    parseFusion("fusion f(x: f32[2, 3]) {\n"
                                "  s = sum()\n  return s\n}\n");
                  }),
                  "a reduction takes one or more tensors");
}

TEST(Reductions, TheVerifierChecksScopesAndTypes) {
  Fusion fusion("bad");
  Value* x = fusion.addTensorInput("x", DataType::Float, {4, 8});
  ValueType zeroD;
  zeroD.dtype = DataType::Float;
  OpAttributes rows;
  rows.reduction = ReductionScope::Rows;
  rows.dim = 0; // not innermost
  fusion.appendExpr(OpKind::Sum, {x}, rows, zeroD, "s");
  EXPECT_CONTAINS(errorOf([&] { verify(fusion); }), "scope rows reduces the innermost dimension");

  Fusion scoped("scoped");
  Value* y = scoped.addTensorInput("y", DataType::Float, {4});
  OpAttributes onAdd;
  onAdd.reduction = ReductionScope::Tensor;
  ValueType same;
  same.extents = {4};
  scoped.appendExpr(OpKind::Neg, {y}, onAdd, same, "n");
  EXPECT_CONTAINS(errorOf([&] { verify(scoped); }), "takes no reduction scope");

  Fusion typed("typed");
  Value* z = typed.addTensorInput("z", DataType::Int32, {4});
  ValueType wrong; // a sum of integers is i64
  wrong.dtype = DataType::Int32;
  OpAttributes tensor;
  tensor.reduction = ReductionScope::Tensor;
  typed.appendExpr(OpKind::Sum, {z}, tensor, wrong, "s");
  EXPECT_CONTAINS(errorOf([&] { verify(typed); }), "'s' has type i32[] but sum gives i64");
}
