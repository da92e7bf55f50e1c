#include "ir/error.h"
#include "ir/fusion_definition.h"
#include "ir/op_builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/support/error_of.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace widefuse;
using widefuse::testing::errorOf;

namespace {

/// The message parseFusion gives for `text`.
std::string parseError(llvm::StringRef text, llvm::StringRef source = "<input>") {
  return errorOf([&] { parseFusion(text, source); });
}

/// Checks print(parse(print(f))) == print(f) and returns the printed text.
std::string expectRoundTrip(const Fusion& fusion) {
  std::string printed = printFusion(fusion);
  std::unique_ptr<Fusion> reparsed;
  try {
    reparsed = parseFusion(printed);
  } catch (const Error& error) {
    ADD_FAILURE() << error.what() << "\nwhile parsing:\n" << printed;
    return printed;
  }
  EXPECT_EQ(printFusion(*reparsed), printed);
  EXPECT_EQ(reparsed->numExprs(), fusion.numExprs()) << printed;
  return printed;
}

/// The value `name` of a parsed fusion (fails the test when it is missing).
const Value& valueNamed(const Fusion& fusion, llvm::StringRef name) {
  const Value* value = fusion.lookup(name);
  if (!value)
    throw std::runtime_error("no value named " + name.str()); // gtest reports it
  return *value;
}

/// Operands valid for each typing rule: [4, 8] tensors of a dtype the rule accepts, with a
/// literal in the last position of binary ops so literals are exercised for every op.
llvm::SmallVector<Val, 3> operandsFor(FusionDefinition& fd, OpKind op) {
  llvm::SmallVector<Val, 3> vals;
  auto tensor = [&](DataType type) { return fd.defineTensor({4, 8}, type); };
  DataType type = DataType::Float;
  switch (opTypeRule(op)) {
  case TypeRule::Logical:
    type = DataType::Bool;
    break;
  case TypeRule::Bitwise:
  case TypeRule::Shift:
  case TypeRule::Integer:
    type = DataType::Int32;
    break;
  case TypeRule::CodeLookup:
    type = DataType::UInt8;
    break;
  case TypeRule::ComplexPart:
    type = DataType::ComplexFloat;
    break;
  default:
    break;
  }
  for (unsigned i = 0; i < opArity(op); ++i)
    vals.push_back(tensor(type));
  if (opTypeRule(op) == TypeRule::Select)
    vals[0] = fd.defineTensor({4, 8}, DataType::Bool, "cond");
  if (op == OpKind::BroadcastInDim)
    vals[0] = fd.defineTensor({8}, DataType::Float, "row");
  if (op == OpKind::ExpandBlocks)
    vals[0] = fd.defineTensor({1}, DataType::Float, "scales");
  return vals;
}

OpAttributes attributesFor(OpKind op) {
  OpAttributes attributes;
  if (op == OpKind::Cast)
    attributes.targetType = DataType::BFloat16;
  if (op == OpKind::Bitcast)
    attributes.targetType = DataType::Int32;
  if (op == OpKind::BroadcastInDim) {
    attributes.broadcastShape = {4, 8};
    attributes.broadcastDims = {1};
  }
  if (op == OpKind::ExpandBlocks) { // 32 elements: one short block of 64
    attributes.broadcastShape = {4, 8};
    attributes.block = 64;
  }
  if (isReduction(op))
    attributes.reduction = ReductionScope::Tensor;
  if (op == OpKind::CodeValue || op == OpKind::NearestCode)
    attributes.codebook = Codebook::Dynamic8Signed;
  return attributes;
}

/// A literal that each op accepts as its last operand (after its tensor operands).
Operand literalFor(OpKind op) {
  switch (opTypeRule(op)) {
  case TypeRule::Logical:
    return Operand(true);
  case TypeRule::Bitwise:
  case TypeRule::Shift:
  case TypeRule::Integer:
    return Operand(3);
  default:
    return Operand(2.5);
  }
}

} // namespace

TEST(TextForm, EveryOpRoundTrips) {
  for (unsigned i = 0; i < kNumOpKinds; ++i) {
    OpKind op = static_cast<OpKind>(i);
    SCOPED_TRACE(opName(op).str());
    FusionDefinition fd(fmt::format("{}_fusion", opName(op).str()));
    llvm::SmallVector<Val, 3> vals = operandsFor(fd, op);
    llvm::SmallVector<Operand, 3> operands(vals.begin(), vals.end());
    Val result = fd.apply(op, operands, attributesFor(op));
    // size is a scalar, and outputs are tensors.
    fd.addOutput(op == OpKind::Size ? vals[0] * result : result);
    if (opArity(op) >= 2) { // the same op with a weak literal as the last operand
      operands.back() = literalFor(op);
      fd.addOutput(fd.apply(op, operands, attributesFor(op)));
    }
    auto fusion = fd.finalize();
    std::string printed = expectRoundTrip(*fusion);
    EXPECT_CONTAINS(printed, fmt::format(" = {}(", opName(op).str()));
    auto reparsed = parseFusion(printed);
    const Value& parsedResult = valueNamed(*reparsed, result.name());
    EXPECT_EQ(parsedResult.dtype(), result.dtype());
    EXPECT_EQ(parsedResult.extents(), result.value()->extents());
  }
}

TEST(TextForm, EveryDataTypeRoundTrips) {
  FusionDefinition fd("dtypes");
  Val source = fd.defineTensor({2, -1}, DataType::Float, "source");
  for (DataType type : kAllDataTypes) {
    std::string name = shortName(type).str();
    Val tensor = fd.defineTensor({2, -1}, type, "t_" + name);
    if (isComplex(type)) { // no complex scalars or constants: complex(re, im) of real ones
      fd.defineScalar(complexPartType(type), "s_" + name);
      fd.addOutput(mul(tensor, complex(fd.constant(1.5, complexPartType(type)), 2.0)));
    } else {
      fd.defineScalar(type, "s_" + name);
      ConstantValue payload = type == DataType::Bool  ? ConstantValue(true)
                              : isFloatingPoint(type) ? ConstantValue(1.5)
                                                      : ConstantValue(int64_t{7});
      set(fd.constant(payload, type));
    }
    fd.addOutput(cast(source, type));
    fd.addOutput(set(tensor));
  }
  auto fusion = fd.finalize();
  std::string printed = expectRoundTrip(*fusion);
  for (DataType type : kAllDataTypes) {
    std::string name = shortName(type).str();
    EXPECT_CONTAINS(printed, fmt::format("t_{0}: {0}[2, ?]", name));
    if (!isComplex(type)) {
      EXPECT_CONTAINS(printed, fmt::format("s_{0}: {0}", name));
    }
    EXPECT_CONTAINS(printed, fmt::format("cast(source, {})", name));
  }
  EXPECT_CONTAINS(printed, "set(true:b8)");
  EXPECT_CONTAINS(printed, "set(7:u16)");
  EXPECT_CONTAINS(printed, "set(1.5:bf16)");
  EXPECT_CONTAINS(printed, "complex(1.5:f64, 2.0)");
  auto reparsed = parseFusion(printed);
  EXPECT_EQ(reparsed->inputs().size(), 1 + 2 * std::size(kAllDataTypes));
}

TEST(TextForm, NestedCallsFlattenWithoutNameClashes) {
  const char* text = R"(fusion f(m: f32[4], g: f32[4], beta1: f64) {
  m1 = add(mul(m, beta1), mul(g, sub(1.0, beta1)))
  t = neg(m1)   # a user name the generated ones must avoid
  return t
}
)";
  auto fusion = parseFusion(text);
  EXPECT_EQ(fusion->numExprs(), 5u);
  EXPECT_EQ(printFusion(*fusion), R"(fusion f(m: f32[4], g: f32[4], beta1: f64) {
  t1 = mul(m, beta1)
  s = sub(1.0, beta1)
  t2 = mul(g, s)
  m1 = add(t1, t2)
  t = neg(m1)
  return t
}
)");
}

TEST(TextForm, NestedCallsInCopyAndReturn) {
  auto fusion = parseFusion("fusion f(x: f32[4], step: f32[]) {\n"
                            "  copy_(neg(x), x)\n"
                            "  copy_(0.0, step)\n"
                            "  return mul(x, 2)\n"
                            "}\n");
  EXPECT_EQ(printFusion(*fusion), "fusion f(x: f32[4], step: f32[]) {\n"
                                  "  t = neg(x)\n"
                                  "  t1 = mul(x, 2)\n"
                                  "  copy_(t, x)\n"
                                  "  copy_(0.0, step)\n"
                                  "  return t1\n"
                                  "}\n");
}

TEST(TextForm, DeepNestingIsBounded) {
  auto nested = [](int depth) {
    std::string call;
    for (int i = 0; i < depth; ++i)
      call += "neg(";
    call += "x" + std::string(depth, ')');
    return fmt::format("fusion f(x: f32[4]) {{\n  y = {}\n}}\n", call);
  };
  EXPECT_EQ(parseFusion(nested(200))->numExprs(), 200u);
  EXPECT_CONTAINS(parseError(nested(100000)), "nested more than 256 deep");
}

TEST(TextForm, HandwrittenTextPrintsCanonically) {
  const char* text = "# leading comment\n"
                     "fusion   k( a:f16[3,?],n:i32 ,\n  b: b8[] )\n"
                     "{\n"
                     "  x = cast(a, f32)  # trailing comment\n"
                     "  y = bitcast(x, i32)\n"
                     "  z = broadcast_in_dim(b, [2, 4], [])\n"
                     "  w = shift_left(y, n)\n"
                     "  copy_(true, b)\n"
                     "  return w, z\n"
                     "}";
  EXPECT_EQ(printFusion(*parseFusion(text)), R"(fusion k(a: f16[3, ?], n: i32, b: b8[]) {
  x = cast(a, f32)
  y = bitcast(x, i32)
  z = broadcast_in_dim(b, [2, 4], [])
  w = shift_left(y, n)
  copy_(true, b)
  return w, z
}
)");
}

namespace {

/// The seed Adam step for one parameter, as a user would write it.
constexpr const char* kAdamText = R"(# Adam, one parameter tensor; step is a 0-d tensor.
fusion adam_step(p: f32[1024, 1024], g: f32[1024, 1024], m: f32[1024, 1024], v: f32[1024, 1024],
                 step: f32[], lr: f64, beta1: f64, beta2: f64, eps: f64) {
  step1 = add(step, 1.0)
  m1 = add(mul(m, beta1), mul(g, sub(1.0, beta1)))
  v1 = add(mul(v, beta2), mul(mul(g, g), sub(1.0, beta2)))
  bias1 = sub(1.0, pow(beta1, step1))
  bias2 = sub(1.0, pow(beta2, step1))
  step_size = div(lr, bias1)
  denom = add(div(sqrt(v1), sqrt(bias2)), eps)
  p1 = sub(p, div(mul(step_size, m1), denom))
  copy_(p1, p)
  copy_(m1, m)
  copy_(v1, v)
  copy_(step1, step)
}
)";

} // namespace

TEST(TextForm, SeedAdamParsesWithRightTypes) {
  auto fusion = parseFusion(kAdamText, "adam.wf");
  EXPECT_EQ(fusion->name(), "adam_step");
  EXPECT_EQ(fusion->inputs().size(), 9u);
  EXPECT_EQ(fusion->aliases().size(), 4u);
  const Value& p1 = valueNamed(*fusion, "p1");
  EXPECT_EQ(formatType(p1), "f32[1024, 1024]");
  const Value& step1 = valueNamed(*fusion, "step1");
  EXPECT_EQ(formatType(step1), "f32[]");
  EXPECT_TRUE(step1.isTensor());
  EXPECT_EQ(formatType(valueNamed(*fusion, "bias1")), "f32[]");
  EXPECT_EQ(formatType(valueNamed(*fusion, "step_size")), "f32[]");
  EXPECT_EQ(formatType(valueNamed(*fusion, "denom")), "f32[1024, 1024]");
  std::string printed = expectRoundTrip(*fusion);
  // The header is over 100 columns, so each parameter gets its own line.
  EXPECT_EQ(printed.substr(0, printed.find(')') + 4),
            "fusion adam_step(\n    p: f32[1024, 1024],\n    g: f32[1024, 1024],\n"
            "    m: f32[1024, 1024],\n    v: f32[1024, 1024],\n    step: f32[],\n"
            "    lr: f64,\n    beta1: f64,\n    beta2: f64,\n    eps: f64) {\n");
  EXPECT_CONTAINS(printed, "\n  copy_(step1, step)\n}\n");
}

TEST(TextForm, HeaderSplitsOnlyBeyondHundredColumns) {
  auto fusion = parseFusion("fusion f() {\n}\n");
  EXPECT_EQ(printFusion(*fusion), "fusion f() {\n}\n");
  // "fusion NAME(a: f32[1]) {" is 20 columns plus the name.
  std::string name80(80, 'n'), name81(81, 'n');
  std::string fits = fmt::format("fusion {}(a: f32[1]) {{\n}}\n", name80);
  ASSERT_EQ(fits.find('\n'), 100u);
  EXPECT_EQ(printFusion(*parseFusion(fits)), fits);
  EXPECT_EQ(printFusion(*parseFusion(fmt::format("fusion {}(a: f32[1]) {{\n}}\n", name81))),
            fmt::format("fusion {}(\n    a: f32[1]) {{\n}}\n", name81));
}

TEST(TextForm, LiteralsRoundTrip) {
  struct Case {
    const char* written;
    const char* printed;
  };
  const Case cases[] = {
      {"0.1", "0.1"},
      {"1e-08", "1e-08"},
      {"-0.0", "-0.0"},
      {"inf", "inf"},
      {"-inf", "-inf"},
      {"nan", "nan"},
      {"1e300", "1e+300"},
      {"5e-324", "5e-324"},
      {"3", "3"},
      {"-7", "-7"},
      {"true", "true"},
      {"false", "false"},
      {"2.", "2.0"},
      {".5", "0.5"},
      {"1E3", "1000.0"},
      {"1.0:f32", "1.0:f32"},
      {"1:f64", "1.0:f64"},
      {"-2:i32", "-2:i32"},
      {"true:b8", "true:b8"},
      {"-inf:f16", "-inf:f16"},
      {"nan:bf16", "nan:bf16"},
      {"255:u8", "255:u8"},
      {"-128:i8", "-128:i8"},
      {"4294967295:u32", "4294967295:u32"},
      {"-9223372036854775808", "-9223372036854775808"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.written);
    std::string text = fmt::format("fusion f() {{\n  y = set({})\n}}\n", c.written);
    auto fusion = parseFusion(text);
    std::string expected = fmt::format("fusion f() {{\n  y = set({})\n}}\n", c.printed);
    EXPECT_EQ(printFusion(*fusion), expected);
    EXPECT_EQ(printFusion(*parseFusion(expected)), expected);
  }
  auto fusion = parseFusion("fusion f() {\n  y = set(-0.0)\n  z = set(5e-324)\n}\n");
  const Value* zero = valueNamed(*fusion, "y").definition()->operand(0);
  EXPECT_TRUE(zero->isWeak());
  EXPECT_EQ(zero->dtype(), DataType::Double);
  EXPECT_TRUE(std::signbit(std::get<double>(*zero->constant())));
  const Value* tiny = valueNamed(*fusion, "z").definition()->operand(0);
  EXPECT_EQ(std::get<double>(*tiny->constant()), std::numeric_limits<double>::denorm_min());
}

TEST(TextForm, LiteralKindsAndWeakness) {
  auto fusion = parseFusion("fusion f(x: f16[4]) {\n  a = add(x, 3)\n  b = add(x, 2.0:f32)\n"
                            "  c = set(7:i64)\n  d = set(true)\n}\n");
  const Value* three = valueNamed(*fusion, "a").definition()->operand(1);
  EXPECT_TRUE(three->isWeak());
  EXPECT_EQ(three->dtype(), DataType::Int64);
  EXPECT_EQ(std::get<int64_t>(*three->constant()), 3);
  EXPECT_EQ(valueNamed(*fusion, "a").dtype(), DataType::Half); // weak: no promotion
  const Value* two = valueNamed(*fusion, "b").definition()->operand(1);
  EXPECT_FALSE(two->isWeak());
  EXPECT_EQ(two->dtype(), DataType::Float);
  EXPECT_EQ(std::get<double>(*two->constant()), 2.0);
  EXPECT_EQ(valueNamed(*fusion, "c").definition()->operand(0)->dtype(), DataType::Int64);
  EXPECT_FALSE(valueNamed(*fusion, "c").definition()->operand(0)->isWeak());
  EXPECT_EQ(valueNamed(*fusion, "d").definition()->operand(0)->dtype(), DataType::Bool);
}

TEST(TextForm, ApiConstantsPrintInParsableForm) {
  // The C++ API accepts any payload with any dtype; the printer writes the dtype's form.
  FusionDefinition fd("api");
  Val x = fd.defineTensor({4}, DataType::Float, "x");
  fd.addOutput(add(x, fd.constant(int64_t{2}, DataType::Float)));
  set(fd.constant(300.0, DataType::Int32));
  set(fd.constant(int64_t{1}, DataType::Bool));
  std::string printed = expectRoundTrip(*fd.finalize());
  EXPECT_CONTAINS(printed, "add(x, 2.0:f32)");
  EXPECT_CONTAINS(printed, "set(300:i32)");
  EXPECT_CONTAINS(printed, "set(true:b8)");
}

TEST(TextForm, LayoutsAndSymbolicExtentsRoundTrip) {
  const char* text = "fusion f(a: f32[?, 8]{stride_order=[0, 1], contiguity=[true, false]}, "
                     "b: f32[4, ?]{contiguity=[false, true]}, c: f32[?]{stride_order=[0]}, "
                     "d: f16[2, 3, ?]{stride_order=[1, 2, 0]}) {\n"
                     "  x = add(a, b)\n"
                     "  y = broadcast_in_dim(c, [4, ?], [1])\n"
                     "  z = broadcast_in_dim(d, [5, -1, 3, ?], [1, 2, 3])\n"
                     "  return x, y, z\n"
                     "}\n";
  auto fusion = parseFusion(text);
  const Value& a = valueNamed(*fusion, "a");
  EXPECT_EQ(a.extents()[0], kSymbolicExtent);
  EXPECT_EQ(a.layout().strideOrder, (llvm::SmallVector<int64_t, 4>{0, 1}));
  EXPECT_EQ(a.layout().contiguity, (llvm::SmallVector<bool, 4>{true, false}));
  EXPECT_TRUE(valueNamed(*fusion, "b").layout().strideOrder.empty());
  EXPECT_EQ(formatType(valueNamed(*fusion, "x")), "f32[4, 8]");
  EXPECT_EQ(formatType(valueNamed(*fusion, "y")), "f32[4, ?]");
  EXPECT_EQ(formatType(valueNamed(*fusion, "z")), "f16[5, 2, 3, ?]");
  // c's layout is the default one, so it is not printed; -1 prints as ?.
  EXPECT_EQ(expectRoundTrip(*fusion),
            "fusion f(\n"
            "    a: f32[?, 8]{stride_order=[0, 1], contiguity=[true, false]},\n"
            "    b: f32[4, ?]{contiguity=[false, true]},\n"
            "    c: f32[?],\n"
            "    d: f16[2, 3, ?]{stride_order=[1, 2, 0]}) {\n"
            "  x = add(a, b)\n"
            "  y = broadcast_in_dim(c, [4, ?], [1])\n"
            "  z = broadcast_in_dim(d, [5, ?, 3, ?], [1, 2, 3])\n"
            "  return x, y, z\n"
            "}\n");
}

TEST(TextForm, EmptyLayoutIsDefault) {
  auto fusion = parseFusion("fusion f(a: f32[2]{}, b: f32[2, 3]{stride_order=[1, 0]}) {\n}\n");
  EXPECT_EQ(printFusion(*fusion), "fusion f(a: f32[2], b: f32[2, 3]) {\n}\n");
}

TEST(TextForm, OpAndValueNamesDoNotClash) {
  // A value may be named like an op or a layout key: a following '(' makes a call.
  const char* text = "fusion f(add: f32[4], contiguity: f32[4]) {\n"
                     "  neg = add(add, contiguity)\n"
                     "  y = neg(neg)\n"
                     "  return y\n"
                     "}\n";
  EXPECT_EQ(printFusion(*parseFusion(text)), text);
}

TEST(TextFormErrors, UndefinedName) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = add(x, q)\n}\n", "k.wf");
  EXPECT_CONTAINS(message, "k.wf:2:14: ");
  EXPECT_CONTAINS(message, "undefined name 'q'");
  // A name used before its definition is undefined at that point.
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(z)\n  z = neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:11: undefined name 'z'");
}

TEST(TextFormErrors, DuplicateName) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = neg(x)\n  y = abs(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:3: duplicate name 'y' (first defined at 2:3)");
  message = parseError("fusion f(x: f32[4], x: f64) {\n}\n");
  EXPECT_CONTAINS(message, "<input>:1:21: duplicate name 'x'");
  message = parseError("fusion f(x: f32[4]) {\n  x = neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: duplicate name 'x'");
}

TEST(TextFormErrors, WrongArgumentCount) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = add(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:7: ");
  EXPECT_CONTAINS(message, "'add' expects 2 arguments, got 1");
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(x, mul(x, x), [1, 2])\n}\n");
  EXPECT_CONTAINS(message, "'neg' expects 1 argument, got 3");
  message = parseError("fusion f(x: f32[4]) {\n  y = cast(x)\n}\n");
  EXPECT_CONTAINS(message, "'cast' expects 2 arguments (a value and a dtype), got 1");
  message = parseError("fusion f(x: f32[4]) {\n  y = broadcast_in_dim(x, [4])\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:7: 'broadcast_in_dim' expects 3 arguments");
  message = parseError("fusion f(x: f32[4]) {\n  copy_(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: 'copy_' expects 2 arguments");
  EXPECT_CONTAINS(message, "got 1");
}

TEST(TextFormErrors, UnknownOpAndDtype) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = frobnicate(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:7: unknown op 'frobnicate'");
  message = parseError("fusion f(x: f33[4]) {\n}\n");
  EXPECT_CONTAINS(message, "<input>:1:13: unknown dtype 'f33'");
  EXPECT_CONTAINS(message, "bf16");
  message = parseError("fusion f(x: f32[4]) {\n  y = cast(x, float)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:15: unknown dtype 'float'");
  message = parseError("fusion f(x: f32[4]) {\n  y = add(x, 1.0:half)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:18: unknown dtype 'half'");
}

TEST(TextFormErrors, MalformedNumbers) {
  for (const char* bad : {"1.2.3", "1e", "12abc", "1e+", "3_000"}) {
    SCOPED_TRACE(bad);
    std::string message =
        parseError(fmt::format("fusion f(x: f32[4]) {{\n  y = add(x, {})\n}}\n", bad));
    EXPECT_CONTAINS(message, "<input>:2:14: malformed number '" + std::string(bad) + "'");
  }
  EXPECT_CONTAINS(parseError("fusion f() {\n  y = set(1e999)\n}\n"),
                  "<input>:2:11: number '1e999' is out of the range of f64");
  EXPECT_CONTAINS(parseError("fusion f() {\n  y = set(99999999999999999999)\n}\n"),
                  "does not fit in 64 bits");
  EXPECT_CONTAINS(parseError("fusion f(x: f32[4, 2.5]) {\n}\n"),
                  "<input>:1:20: expected an integer, got '2.5'");
}

TEST(TextFormErrors, TypedLiteralMismatch) {
  std::string message = parseError("fusion f() {\n  y = set(1.5:i32)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:11: '1.5:i32': i32 is an integer dtype");
  message = parseError("fusion f() {\n  y = set(300:i8)\n}\n");
  EXPECT_CONTAINS(message, "'300:i8': 300 is outside the range of i8 (-128 to 127)");
  message = parseError("fusion f() {\n  y = set(-1:u32)\n}\n");
  EXPECT_CONTAINS(message, "'-1:u32'");
  message = parseError("fusion f() {\n  y = set(1:b8)\n}\n");
  EXPECT_CONTAINS(message, "true:b8 or false:b8");
  message = parseError("fusion f() {\n  y = set(true:f32)\n}\n");
  EXPECT_CONTAINS(message, "'true:f32'");
}

TEST(TextFormErrors, UnexpectedTokenAndEndOfInput) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = add(x, , x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:14: unexpected ','");
  message = parseError("fusion f(x: f32[4]) {\n  y = add(x,");
  EXPECT_CONTAINS(message, "<input>:2:13: unexpected end of input");
  message = parseError("");
  EXPECT_CONTAINS(message, "<input>:1:1: unexpected end of input (expected 'fusion'");
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(x) z = neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:14: unexpected 'z' after the end of a statement");
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(x) @\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:14: unexpected character '@'");
  message = parseError("fusion f(x: f32[4]) {\n}\nfusion g() {\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:1: unexpected 'fusion' after the closing '}'");
  message = parseError("fusion f(x: f32[4]{order=[0]}) {\n}\n");
  EXPECT_CONTAINS(message, "<input>:1:20: unknown layout key 'order'");
  message = parseError("fusion f(x: f32[4]) {\n  neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: the result of 'neg(...)' must be assigned");
}

TEST(TextFormErrors, ReturnMustBeLast) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  return x\n  y = neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:3: 'return' must be the last statement (return at 2:3)");
  EXPECT_CONTAINS(message, "'y'");
  message = parseError("fusion f(x: f32[4]) {\n  return x\n  return x\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:3: 'return' must be the last statement");
}

TEST(TextFormErrors, MissingClosingBrace) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = neg(x)\n");
  EXPECT_CONTAINS(message, "<input>:3:1: missing '}' at the end of fusion 'f' (opened at 1:21)");
}

TEST(TextFormErrors, PlainAssignmentSuggestsSet) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = x\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:7: 'y = x' is a plain assignment");
  EXPECT_CONTAINS(message, "write 'y = set(x)'");
  message = parseError("fusion f() {\n  y = -1.0:f32\n}\n");
  EXPECT_CONTAINS(message, "write 'y = set(-1.0:f32)'");
}

TEST(TextFormErrors, BuilderErrorsGetTheStatementLocation) {
  std::string message = parseError(
      "fusion f(x: f32[4], n: i32[4]) {\n  ok = neg(x)\n  y = add(ok, shift_left(x, n))\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:3: ");
  EXPECT_CONTAINS(message, "shift");
  message = parseError("fusion f(x: f32[4], w: f32[8]) {\n  y = add(x, w)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: ");
  EXPECT_CONTAINS(message, "'w'");
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(x)\n  copy_(y, x)\n  copy_(x, x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:4:3: ");
  EXPECT_CONTAINS(message, "two copies into one input");
  message = parseError("fusion f(x: f32[4]) {\n  y = neg(x)\n  copy_(x, y)\n}\n");
  EXPECT_CONTAINS(message, "<input>:3:3: ");
  EXPECT_CONTAINS(message, "'y' is not an input");
  message = parseError("fusion f(x: f32[4], s: f64) {\n  return x, s\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: output 's'");
  message = parseError("fusion f(x: f32[4]) {\n  inf = neg(x)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:3: invalid value name 'inf'");
  message = parseError("fusion f(x: f32[2, 3]{stride_order=[0, 0]}) {\n}\n");
  EXPECT_CONTAINS(message, "<input>:1:10: input 'x': stride_order must be a permutation");
  message = parseError("fusion f(x: f32[-3]) {\n}\n");
  EXPECT_CONTAINS(message, "<input>:1:10: input 'x': extent -3 is negative");
}

TEST(TextFormErrors, DtypeWhereValueExpected) {
  std::string message = parseError("fusion f(x: f32[4]) {\n  y = add(x, f32)\n}\n");
  EXPECT_CONTAINS(message, "<input>:2:14: expected a value, got the dtype name 'f32'");
  message = parseError("fusion f(x: f32[4]) {\n  y = mul(x, add)\n}\n");
  EXPECT_CONTAINS(message, "undefined name 'add' (to call the op, write add(...))");
}
