// A fusion whose update reads a reduction, through the command line as a user would give it:
// `segment` and `compile` report its phases, `run` runs them and writes what the reference
// evaluator gives, bit for bit.

#include "tests/tools/cli_fixture.h"

#include "ir/evaluator.h"

#include <nlohmann/json.hpp>

#include <cstring>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// p -= g * min(1, 1 / sqrt(sum(g * g))): the clip reads the total, a reduction.
constexpr const char* kClipText = R"(fusion clip(p: f32[?], g: f32[?]) {
  s = sum(mul(g, g))
  c = minimum(div(1.0, sqrt(s)), 1.0)
  copy_(sub(p, mul(g, c)), p)
  return s
}
)";

} // namespace

TEST_F(Cli, AFusionInPhasesSegmentsCompilesAndRuns) {
  writeFile(file("clip.wf"), kClipText);
  CliResult segmented = run("segment clip.wf");
  ASSERT_EQ(segmented.exitCode, 0) << segmented.err;
  EXPECT_NE(segmented.out.find("2 phases"), std::string::npos) << segmented.out;
  EXPECT_NE(segmented.out.find("kept between phases: 's'"), std::string::npos) << segmented.out;

  CliResult compiled = run("compile clip.wf --json");
  ASSERT_EQ(compiled.exitCode, 0) << compiled.err;
  nlohmann::json report = nlohmann::json::parse(compiled.out);
  EXPECT_EQ(report["launches"], 2);
  EXPECT_EQ(report["segments"]["phases"].size(), 2u);

  HostTensor p(DataType::Float, {700}), g(DataType::Float, {700});
  for (int i = 0; i < 700; ++i) {
    p.as<float>()[i] = 0.25f * float(i % 13);
    g.as<float>()[i] = 0.125f * float(i % 7) - 0.25f;
  }
  writeNpy(file("p.npy"), p);
  writeNpy(file("g.npy"), g);
  std::unique_ptr<Fusion> fusion = parseFusion(kClipText, "clip.wf");
  EvaluationResult expected = evaluate(*fusion, {p.ref(), g.ref()});
  CliResult ran =
      run("run clip.wf --input p=p.npy --input g=g.npy --out out --backend host --host-execution "
          "verify --block-order reverse");
  ASSERT_EQ(ran.exitCode, 0) << ran.err;
  HostTensor s = readNpy(file("out/s.npy"), DataType::Float);
  HostTensor updated = readNpy(file("out/p.npy"), DataType::Float);
  EXPECT_EQ(std::memcmp(s.data(), expected.outputs[0].data(), 4), 0);
  EXPECT_EQ(std::memcmp(updated.data(), p.data(), p.byteSize()), 0) << "p, updated in place";
  EXPECT_EQ(nlohmann::json::parse(ran.out)["phases"].size(), 2u);
}
