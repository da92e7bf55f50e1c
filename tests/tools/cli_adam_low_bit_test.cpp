// `widefuse adam --state-format int8|int4|fp8 [--block-size B] [--stochastic-round]`: the
// moments block-quantized as torchao keeps them and bf16 parameters rounded stochastically,
// bit for bit against the reference evaluator; the first step's codes and scales against an
// unquantized run's moments (each code by an exhaustive search of the map); the bytes per
// parameter it reports; bad options refused by name. That the fusion is widefuse.optim's
// Adam(state_format=..., bf16_stochastic_round=...) op for op is
// tests/python_frontend/test_optim_adam_structure.py's.

#include "tests/tools/cli_fixture.h"

#include "ir/codebook.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

// Two parameters torchao's rule quantizes (4096 elements or more, a multiple of the block)
// and one it does not (it keeps f32 moments).
constexpr const char* kShapes = "64x128,4096,5";
constexpr int64_t kQuantized[] = {8192, 4096};
constexpr int64_t kElements = 8192 + 4096 + 5;

/// The state bytes of kShapes: codes and f32 scales of m and v for the quantized parameters,
/// m and v in f32 for the small one, and three f32 step counters.
int64_t expectedStateBytes(int codeBits, int64_t block) {
  int64_t bytes = 2 * 5 * 4 + 3 * 4;
  for (int64_t n : kQuantized)
    bytes += 2 * (n * codeBits / 8 + 4 * (n / block));
  return bytes;
}

/// The code of each element (int4: unpacked, the even element's in the high nibble).
std::vector<int> codesOf(const HostTensor& codes, bool packed) {
  std::vector<int> result;
  auto* bytes = static_cast<const uint8_t*>(codes.data());
  for (int64_t k = 0; k < codes.numel(); ++k) {
    if (packed) {
      result.push_back(bytes[k] >> 4);
      result.push_back(bytes[k] & 15);
    } else {
      result.push_back(bytes[k]);
    }
  }
  return result;
}

/// Checks that `codes` and `scales` hold `moment`: each block's scale its absmax, each code
/// one nearest to moment / scale in `codebook` (an exhaustive search: ties may go either way).
void expectQuantizes(const HostTensor& moment, const HostTensor& codes, const HostTensor& scales,
                     Codebook codebook, bool packed, int64_t block) {
  llvm::ArrayRef<float> table = codebookValues(codebook);
  std::vector<int> code = codesOf(codes, packed);
  ASSERT_EQ(int64_t(code.size()), moment.numel());
  for (int64_t b = 0; b < scales.numel(); ++b) {
    float absmax = 1e-12f;
    for (int64_t k = b * block; k < (b + 1) * block; ++k)
      absmax = std::max(absmax, std::fabs(moment.as<float>()[k]));
    ASSERT_EQ(scales.as<float>()[b], absmax) << "block " << b;
    for (int64_t k = b * block; k < (b + 1) * block; ++k) {
      float x = moment.as<float>()[k] / absmax;
      float best = INFINITY;
      for (float entry : table)
        best = std::min(best, std::fabs(entry - x));
      ASSERT_EQ(std::fabs(table[code[k]] - x), best) << "element " << k;
    }
  }
}

} // namespace

TEST_F(Cli, AdamQuantizesItsMomentsAsTheFirstStepComputesThem) {
  const std::string common = fmt::format("adam --shapes {} --optimizer adamw --weight-decay 0.01 "
                                         "--steps 1 --backend host --json --export",
                                         kShapes);
  ASSERT_EQ(run(common + " plain").exitCode, 0);
  struct Case {
    const char* format;
    int bits;
    int64_t block;
    Codebook first, second;
  };
  for (Case c : {Case{"int8", 8, 256, Codebook::Dynamic8Signed, Codebook::Dynamic8Unsigned},
                 Case{"int4", 4, 128, Codebook::Dynamic4Signed, Codebook::Linear4Unsigned},
                 Case{"int4", 4, 64, Codebook::Dynamic4Signed, Codebook::Linear4Unsigned}}) {
    std::string directory = fmt::format("{}-{}", c.format, c.block);
    CliResult json = run(fmt::format("{} {} --state-format {} --block-size {}", common, directory,
                                     c.format, c.block));
    ASSERT_EQ(json.exitCode, 0) << json.err;
    nlohmann::json report = nlohmann::json::parse(json.out);
    EXPECT_EQ(report["state_format"], c.format);
    EXPECT_EQ(report["state_bytes"], expectedStateBytes(c.bits, c.block));
    EXPECT_DOUBLE_EQ(report["state_bytes_per_element"].get<double>(),
                     double(expectedStateBytes(c.bits, c.block) - 12) / kElements);
    // The first step's moments from zero state are the unquantized run's.
    for (int i = 0; i < 2; ++i)
      for (auto [name, codebook] : {std::pair{"m", c.first}, std::pair{"v", c.second}}) {
        HostTensor moment = readNpy(file(fmt::format("plain/final_{}{}.npy", name, i)));
        HostTensor codes =
            readNpy(file(fmt::format("{}/final_{}{}_codes.npy", directory, name, i)));
        HostTensor scales =
            readNpy(file(fmt::format("{}/final_{}{}_scale.npy", directory, name, i)));
        EXPECT_EQ(codes.dtype(), DataType::UInt8);
        expectQuantizes(moment, codes, scales, codebook, c.bits == 4, c.block);
      }
  }
  // fp8: each value is m / scale rounded to e4m3fn (3 mantissa bits), scale = absmax / 448.
  ASSERT_EQ(run(common + " fp8 --state-format fp8").exitCode, 0);
  HostTensor moment = readNpy(file("plain/final_m0.npy"));
  HostTensor codes = readNpy(file("fp8/final_m0_codes.npy"), DataType::Float8_e4m3fn);
  HostTensor scales = readNpy(file("fp8/final_m0_scale.npy"));
  EXPECT_EQ(codes.dtype(), DataType::Float8_e4m3fn); // its bits, as NumPy has no fp8
  for (int64_t k = 0; k < moment.numel(); ++k) {
    float scale = scales.as<float>()[k / 256];
    double decoded = floatingElement(codes, k) * scale, exact = moment.as<float>()[k];
    // Half an ulp of e4m3fn: 2^-4 relative for normal codes, 2^-10 for subnormal ones.
    double bound = std::fabs(exact) * (0x1p-4 + 0x1p-20) + scale * 0x1p-10;
    ASSERT_LE(std::fabs(decoded - exact), bound) << k;
  }
}

TEST_F(Cli, AdamWithQuantizedStateAndStochasticRoundingEqualsTheEvaluator) {
  for (const char* options :
       {"--state-format int8 --amsgrad --grad-scale 2 --max-grad-norm 1",
        "--state-format int4 --param-dtype bf16 --stochastic-round --mode packed",
        "--state-format fp8 --param-dtype bf16 --master-weights fp32 --stochastic-round"}) {
    CliResult json = run(fmt::format("adam --shapes {} --optimizer adamw --weight-decay 0.01 {} "
                                     "--steps 3 --backend host --block-order reverse --verify "
                                     "--json",
                                     kShapes, options));
    ASSERT_EQ(json.exitCode, 0) << json.err;
    nlohmann::json report = nlohmann::json::parse(json.out);
    EXPECT_EQ(report["verify"]["different_elements"], 0) << options;
    EXPECT_GT(report["verify"]["elements"], kElements) << options;
  }
  // Stochastic rounding: the bits are the same in any block order, and differ from torch's
  // bf16 path's.
  std::string run1 = "adam --shapes 4096 --param-dtype bf16 --steps 2 --backend host --json";
  ASSERT_EQ(run(run1 + " --stochastic-round --block-order shuffle:3 --export a").exitCode, 0);
  ASSERT_EQ(run(run1 + " --stochastic-round --export b").exitCode, 0);
  ASSERT_EQ(run(run1 + " --state-dtype f32 --export nearest").exitCode, 0);
  HostTensor a = readNpy(file("a/final_p0.npy")), b = readNpy(file("b/final_p0.npy"));
  HostTensor nearest = readNpy(file("nearest/final_p0.npy"));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byteSize()), 0);
  EXPECT_NE(std::memcmp(a.data(), nearest.data(), a.byteSize()), 0);
  HostTensor seed = readNpy(file("a/final_seed0.npy"));
  EXPECT_EQ(seed.dtype(), DataType::Int64);
}

TEST_F(Cli, AdamRefusesBadStorageOptionsByName) {
  expectOneLineError(run("adam --state-format int3"),
                     "--state-format 'int3': use int8, int4 or fp8");
  expectOneLineError(run("adam --state-format int8 --block-size 100"),
                     "block size 100: a block is a power of two");
  expectOneLineError(run("adam --block-size 64"), "add --state-format");
  expectOneLineError(run("adam --stochastic-round"),
                     "stochastic rounding writes bf16 parameters, not f32");
  expectOneLineError(run("adam --param-dtype bf16 --master-weights remainders --stochastic-round"),
                     "remainders keep that value exactly");
}
