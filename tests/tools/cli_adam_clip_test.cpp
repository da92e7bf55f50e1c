// `widefuse adam --max-grad-norm X [--norm-type 2|inf] [--grad-scale S]`: the two-phase step on
// the host backend, its report (phases, launches, each step's grad_norm and found_inf), the
// norms checked against the exported grads here, --verify bit for bit, a step skipped by a
// computed found_inf, compiling without running, and the options' errors.

#include "tests/tools/cli_fixture.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// The grads the run exported (initial_g{i}.npy), as doubles.
std::vector<double> exportedGrads(const std::string& directory, int params) {
  std::vector<double> values;
  for (int i = 0; i < params; ++i) {
    HostTensor grad = readNpy(fmt::format("{}/initial_g{}.npy", directory, i), DataType::Float);
    for (int64_t k = 0; k < grad.numel(); ++k)
      values.push_back(grad.as<float>()[k]);
  }
  return values;
}

/// The bytes of an exported tensor.
std::string exported(const std::string& path) {
  return readFile(path);
}

} // namespace

TEST_F(Cli, AdamClipReportsPhasesLaunchesAndEveryGradNorm) {
  CliResult json = run("adam --shapes 64x32,7,0,100 --max-grad-norm 1 --steps 3 --backend host "
                       "--mode packed --verify --json --export state");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["phases"], 2);
  EXPECT_EQ(report["launches"], 2) << "one signature class per phase, packed";
  EXPECT_EQ(report["max_grad_norm"], 1.0);
  EXPECT_EQ(report["norm_type"], 2);
  EXPECT_EQ(report["segments"]["phases"].size(), 2u);
  EXPECT_GE(report["build_seconds"].get<double>(), 0.0);
  EXPECT_EQ(report["verify"]["different_elements"], 0);
  EXPECT_EQ(report["verify"]["different_grad_norms"], 0);
  // The grads stay as drawn, so every step's norm is theirs (computed here in double).
  double squares = 0;
  for (double g : exportedGrads(file("state"), 4))
    squares += g * g;
  ASSERT_EQ(report["per_step"].size(), 3u);
  for (const nlohmann::json& step : report["per_step"]) {
    EXPECT_NEAR(step["grad_norm"].get<double>(), std::sqrt(squares), 1e-5 * std::sqrt(squares));
    EXPECT_FALSE(step.contains("found_inf"));
  }
  EXPECT_GT(std::sqrt(squares), 10.0) << "the clip to 1 should scale the grads";
  nlohmann::json manifest = nlohmann::json::parse(readFile(file("state/manifest.json")));
  EXPECT_EQ(manifest["scalars"]["max_grad_norm"], 1.0);
}

TEST_F(Cli, AdamClipInfNormIsTwoBatchedLaunchesAndTheLargestGrad) {
  CliResult json = run("adam --shapes 33,4x4 --max-grad-norm 0.5 --norm-type inf --steps 2 "
                       "--backend host --mode batched --verify --json --export state");
  ASSERT_EQ(json.exitCode, 0) << json.err;
  nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["phases"], 2);
  EXPECT_EQ(report["launches"], 2) << "the max is the reduction's own result: one class a phase";
  EXPECT_EQ(report["norm_type"], "inf");
  EXPECT_EQ(report["verify"]["different_grad_norms"], 0);
  double largest = 0;
  for (double g : exportedGrads(file("state"), 2))
    largest = std::max(largest, std::fabs(g));
  for (const nlohmann::json& step : report["per_step"])
    EXPECT_EQ(step["grad_norm"].get<double>(), largest); // an f32 value: exact
}

TEST_F(Cli, AdamGradScaleComputesFoundInfAndSkips) {
  // grad / 4 is exact in f32: the norm is a quarter of the drawn grads'.
  CliResult scaled = run("adam --shapes 50,3x3 --max-grad-norm 1 --grad-scale 4 --steps 2 "
                         "--backend host --verify --json --export state");
  ASSERT_EQ(scaled.exitCode, 0) << scaled.err;
  nlohmann::json report = nlohmann::json::parse(scaled.out);
  EXPECT_EQ(report["phases"], 2);
  EXPECT_EQ(report["verify"]["different_elements"], 0);
  double squares = 0;
  for (double g : exportedGrads(file("state"), 2))
    squares += (g / 4) * (g / 4);
  for (const nlohmann::json& step : report["per_step"]) {
    EXPECT_EQ(step["found_inf"], false);
    EXPECT_NEAR(step["grad_norm"].get<double>(), std::sqrt(squares), 1e-5 * std::sqrt(squares));
  }

  // grad / 1e-39 overflows f32 for |grad| > 0.34: every step is skipped, nothing changes.
  CliResult skipped = run("adam --shapes 50,3x3 --max-grad-norm 1 --grad-scale 1e-39 --steps 2 "
                          "--backend host --verify --json --export skipped");
  ASSERT_EQ(skipped.exitCode, 0) << skipped.err;
  report = nlohmann::json::parse(skipped.out);
  EXPECT_EQ(report["verify"]["different_grad_norms"], 0);
  for (const nlohmann::json& step : report["per_step"]) {
    EXPECT_EQ(step["found_inf"], true);
    EXPECT_TRUE(step["grad_norm"].is_null()) << "not finite";
  }
  for (const char* name : {"p0", "m0", "v0", "step0", "p1", "m1", "v1", "step1"})
    EXPECT_EQ(exported(file(fmt::format("skipped/final_{}.npy", name))),
              exported(file(fmt::format("skipped/initial_{}.npy", name))))
        << name << " changed in a skipped step";
  HostTensor found = readNpy(file("skipped/final_found_inf.npy"), DataType::Float);
  EXPECT_EQ(found.as<float>()[0], 1.0f);

  CliResult text = run("adam --shapes 50,3x3 --grad-scale 1e-39 --steps 1 --backend host");
  ASSERT_EQ(text.exitCode, 0) << text.err;
  EXPECT_NE(text.out.find("step 1: found_inf 1 (skipped"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("step counters are now 0"), std::string::npos) << text.out;
}

TEST_F(Cli, AdamClipTextReportAndCompileOnly) {
  CliResult text =
      run("adam --shapes 8,4 --max-grad-norm 0.5 --steps 2 --backend host --verify --mode packed");
  ASSERT_EQ(text.exitCode, 0) << text.err;
  for (const char* line :
       {"grads clipped to total L2 norm 0.5", "phases: 2", "2 launches per step",
        "step 2: grad_norm", "verify grad_norm: 0 of 2 steps differ: bit for bit identical"})
    EXPECT_NE(text.out.find(line), std::string::npos) << line << " in\n" << text.out;

  CliResult none = run("adam --shapes 8,4 --max-grad-norm 0.5 --backend none --mode packed --json");
  ASSERT_EQ(none.exitCode, 0) << none.err;
  nlohmann::json report = nlohmann::json::parse(none.out);
  EXPECT_EQ(report["phases"], 2);
  EXPECT_EQ(report["launches"], 2);
  EXPECT_EQ(report["kernels"], 2) << "one kernel per phase";
}

TEST_F(Cli, AdamClipOptionErrorsNameTheOption) {
  expectOneLineError(run("adam --max-grad-norm=-1 --backend none"),
                     "--max-grad-norm '-1': use a finite number >= 0");
  expectOneLineError(run("adam --max-grad-norm abc --backend none"),
                     "--max-grad-norm 'abc': use a finite number >= 0");
  expectOneLineError(run("adam --max-grad-norm inf --backend none"),
                     "--max-grad-norm 'inf': use a finite number >= 0");
  expectOneLineError(run("adam --max-grad-norm 1 --norm-type 3 --backend none"),
                     "--norm-type '3': use 2 or inf");
  expectOneLineError(run("adam --norm-type inf --backend none"),
                     "--norm-type 'inf' is the norm of --max-grad-norm: add --max-grad-norm X");
  expectOneLineError(run("adam --grad-scale 0 --backend none"),
                     "--grad-scale '0': use a finite number > 0");
  expectOneLineError(run("adam --grad-scale nan --backend none"),
                     "--grad-scale 'nan': use a finite number > 0");
}
