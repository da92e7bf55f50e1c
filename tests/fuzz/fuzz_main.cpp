// fuzz_differential: random fusions on the reference evaluator and the host backend in every
// mode x block order x thread count, compared bit for bit and with a float64 oracle. A
// failure is reduced and printed with the command that reproduces it. See docs/testing.md.

#include "tests/fuzz/generator.h"
#include "tests/fuzz/oracle.h"
#include "tests/fuzz/reducer.h"
#include "tests/fuzz/replay.h"
#include "tests/fuzz/runner.h"

#include "ir/parser.h"
#include "ir/printer.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace widefuse;
using namespace widefuse::fuzz;

namespace {

struct Settings {
  uint64_t seed = 20260601;
  uint64_t cases = 200; // the CI budget (tests/fuzz/CMakeLists.txt)
  /// First case index run: a long campaign can be run in shards (cases derive from the seed
  /// and their index alone, so shards [0, k) and [k, n) together are the campaign [0, n)).
  uint64_t from = 0;
  std::optional<uint64_t> onlyCase;
  bool oracle = true;
  bool reduce = true;
  bool verbose = false;
  std::vector<std::string> replay;
  std::string replayOne;
  GeneratorOptions generator;
  /// Threads running cases (each case still runs its configurations one after another).
  unsigned jobs = 1;
  /// One case in this many (index 0, N, 2N, ...) also runs its verify configurations, in the
  /// device emulator; the others run the fast path only. 1: every case.
  unsigned verifyShare = 1;
};

struct Figures {
  uint64_t cases = 0, passed = 0, mismatches = 0, configurationRuns = 0, verifiedCases = 0;
  GeneratorStats generator;
};

/// Prints a failure: the message, the reduced text form and the command that reproduces it.
void report(const Settings& settings, uint64_t index, const FuzzCase& fuzzCase,
            const RunOutcome& outcome, const RunnerOptions& runner) {
  std::string command =
      fmt::format("build/bin/fuzz_differential --seed {} --case {}", settings.seed, index);
  fmt::print("MISMATCH in case {} ({}):\n  {}\n", index, outcome.signature, outcome.message);
  if (!settings.reduce) {
    fmt::print("{}\nreproduce: {}\n", printFusion(*fuzzCase.fusion), command);
    return;
  }
  Reduction reduced = reduceCase(fuzzCase, outcome, runner);
  // The run-time shapes, in the form tests/fuzz/regressions/*.wf read (tests/fuzz/replay.h).
  std::string shapes;
  // Held in a local: a range-for over a temporary's inputs() would read a destroyed fusion.
  std::unique_ptr<Fusion> reducedFusion = parseFusion(reduced.text, "reduced");
  for (const Value* input : reducedFusion->inputs())
    if (input->isTensor())
      shapes += fmt::format("# shape {}: [{}]\n", input->name(),
                            fmt::join(fuzzCase.inputs.at(input->name()).shape, ", "));
  fmt::print("reduced ({} candidates tried) to:\n{}{}still: {}\nreproduce: {}\n",
             reduced.candidatesTried, shapes, reduced.text, reduced.outcome.message, command);
}

void printFigures(const Settings& settings, const Figures& f, double seconds) {
  const GeneratorStats& g = f.generator;
  uint64_t first = settings.onlyCase.value_or(settings.from);
  fmt::print("fuzz_differential: seed {}, {} cases (indices {}..{}) in {:.1f} s\n", settings.seed,
             f.cases, first, first + f.cases - 1, seconds);
  fmt::print("  configurations per case: {} ({} host runs), float64 oracle: {} ({} values "
             "compared)\n",
             allConfigs().size(), f.configurationRuns, settings.oracle ? "on" : "off",
             oracleComparedValues());
  fmt::print("  cases verified in the device emulator: {} (one in {})\n", f.verifiedCases,
             settings.verifyShare);
  fmt::print("  expressions built: {}; op applications the typing rules rejected (discards): {}; "
             "cases the reference or the backend refused (documented limitations): {}\n",
             g.builtExprs, g.rejectedOps, g.rejectedCases);
  fmt::print("  computed NaNs replaced before signbit/copysign/bitcast read their sign: {}\n",
             g.nanSignGuards);
  fmt::print("  lower-rank outputs beside their component's domain (split by shape): {}\n",
             g.narrowOutputs);
  fmt::print("  reductions drawn: {} (read by a pointwise op of a later pass: {}; over several "
             "components: {}; max/min of operands without elements drawn as sum: {}; over rows "
             "longer than a segment: {}); cases run in 2+ phases: {}\n",
             g.reductions, g.reductionsRead, g.reductionsAcross, g.emptyMaxMin, g.segmentedRows,
             g.multiPhaseCases);
  fmt::print("  reduction forms covered ({}): {}\n", g.reductionForms.size(),
             fmt::join(g.reductionForms, " "));
  fmt::print("  ops covered ({}): {}\n", g.opsCovered.size(), fmt::join(g.opsCovered, " "));
  fmt::print("  dtypes covered ({}): {}\n", g.dtypesCovered.size(),
             fmt::join(g.dtypesCovered, " "));
  fmt::print("  cast/bitcast pairs covered: {}\n", g.castPairs.size());
  fmt::print("  passed: {}, mismatches: {}\n", f.passed, f.mismatches);
}

/// One case's result: its generator figures, its outcome, and the case itself when it failed
/// (for the report).
struct CaseResult {
  GeneratorStats stats;
  RunOutcome outcome;
  std::optional<FuzzCase> failed;
  /// Its configurations: all of them, or the fast path's (Settings::verifyShare).
  const RunnerOptions* runner = nullptr;
};

/// The cases the campaign's threads are running, for a crash report (-1: none).
std::vector<std::atomic<int64_t>>* inFlight = nullptr;

/// On a fatal signal, names the cases in flight (a crash in a case is a finding too), then
/// dies of the signal. Only async-signal-safe calls.
void reportCrash(int signal) {
  if (inFlight) {
    char text[64];
    for (std::atomic<int64_t>& running : *inFlight) {
      int64_t index = running.load();
      if (index < 0)
        continue;
      int length = std::snprintf(text, sizeof text, "fuzz_differential: case %lld was running\n",
                                 static_cast<long long>(index));
      if (length > 0)
        (void)!write(2, text, size_t(length));
    }
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

CaseResult runOne(const Settings& settings, uint64_t index, const RunnerOptions& runner) {
  CaseResult result;
  FuzzCase fuzzCase =
      generateCase(caseSeed(settings.seed, index), settings.generator, result.stats);
  if (settings.verbose || settings.onlyCase)
    fmt::print("case {}:\n{}", index, printFusion(*fuzzCase.fusion));
  std::fflush(stdout); // a crash still shows which case it was
  result.outcome = runCase(fuzzCase, runner);
  result.runner = &runner;
  if (result.outcome.kind == RunOutcome::Kind::Mismatch)
    result.failed = std::move(fuzzCase);
  return result;
}

int runCampaign(const Settings& settings) {
  auto start = std::chrono::steady_clock::now();
  RunnerOptions runner;
  runner.oracle = settings.oracle;
  RunnerOptions fastOnly = runner;
  fastOnly.configs.clear();
  for (const RunConfig& config : runner.configs)
    if (config.execution == HostExecution::Fast)
      fastOnly.configs.push_back(config);
  unsigned share = std::max(1u, settings.verifyShare);
  uint64_t first = settings.onlyCase.value_or(settings.from);
  uint64_t last = settings.onlyCase ? first + 1 : settings.cases;
  if (first >= last)
    throw std::invalid_argument(
        fmt::format("--from {} leaves no case to run: it must be below --cases {}", first, last));
  // Cases derive from (seed, index) alone, so threads may take them in any order; results are
  // gathered and reported in index order.
  std::vector<CaseResult> results(last - first);
  unsigned jobs = std::max(1u, std::min<unsigned>(settings.jobs, unsigned(last - first)));
  std::vector<std::atomic<int64_t>> running(jobs);
  for (std::atomic<int64_t>& slot : running)
    slot = -1;
  inFlight = &running;
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    std::signal(signal, reportCrash);
  std::atomic<uint64_t> next{first};
  std::exception_ptr broken; // a broken case (a generator bug) stops the campaign
  std::mutex brokenMutex;
  auto work = [&](unsigned job) {
    for (uint64_t index = next++; index < last; index = next++) {
      running[job] = int64_t(index);
      try {
        results[index - first] =
            runOne(settings, index, index % share == 0 || settings.onlyCase ? runner : fastOnly);
      } catch (const std::exception& error) {
        // Name the case, so that `--case N` reproduces it.
        std::lock_guard<std::mutex> lock(brokenMutex);
        if (!broken)
          broken = std::make_exception_ptr(std::runtime_error(
              fmt::format("case {} (seed {}): {}", index, settings.seed, error.what())));
        next = last;
      }
    }
    running[job] = -1;
  };
  std::vector<std::thread> threads;
  for (unsigned job = 1; job < jobs; ++job)
    threads.emplace_back(work, job);
  work(0);
  for (std::thread& thread : threads)
    thread.join();
  if (broken)
    std::rethrow_exception(broken);
  Figures figures;
  for (uint64_t index = first; index < last; ++index) {
    CaseResult& result = results[index - first];
    figures.generator.add(result.stats);
    ++figures.cases;
    const RunOutcome& outcome = result.outcome;
    if (outcome.kind == RunOutcome::Kind::Rejected) {
      ++figures.generator.rejectedCases;
      if (settings.verbose)
        fmt::print("  case {}: {}\n", index, outcome.message);
      continue;
    }
    figures.configurationRuns += outcome.kind == RunOutcome::Kind::Pass
                                     ? result.runner->configs.size()
                                     : outcome.configIndex + 1;
    figures.verifiedCases += result.runner == &runner;
    if (outcome.kind == RunOutcome::Kind::Pass) {
      ++figures.passed;
      continue;
    }
    ++figures.mismatches;
    report(settings, index, *result.failed, outcome, *result.runner);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printFigures(settings, figures, seconds);
  return figures.mismatches == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"widefuse differential fuzzer: random fusions, host backend vs reference"};
  Settings settings;
  app.add_option("--seed", settings.seed, "campaign seed (printed; cases derive from it)");
  app.add_option("--cases", settings.cases, "number of cases");
  app.add_option("--from", settings.from,
                 "start at this case index: runs cases FROM..cases-1 (a campaign in shards)");
  app.add_option("--case", settings.onlyCase, "run only this case of the campaign (reproduce)");
  app.add_flag("!--no-oracle", settings.oracle, "skip the float64 oracle comparison");
  app.add_flag("!--no-reduce", settings.reduce, "print failures without reducing them");
  app.add_flag("--verbose", settings.verbose, "print every case's text form");
  app.add_option("--replay", settings.replay, "run these regression .wf files instead")
      ->check(CLI::ExistingFile);
  app.add_option("--replay-one", settings.replayOne,
                 "run one regression file in this process (what --replay runs in each child)")
      ->check(CLI::ExistingFile);
  app.add_option("--max-components", settings.generator.maxComponents, "components per fusion");
  app.add_option("--max-exprs", settings.generator.maxExprsPerComponent,
                 "expressions per component");
  app.add_option("--verify-share", settings.verifyShare,
                 "verify (device emulator) one case in this many; the rest run the fast path")
      ->check(CLI::PositiveNumber);
  app.add_option("--jobs", settings.jobs, "threads running cases (results are the same)")
      ->check(CLI::Range(1u, 256u));
  CLI11_PARSE(app, argc, argv);
  try {
    if (!settings.replayOne.empty())
      return replayOne(settings.replayOne) ? 0 : 1;
    if (!settings.replay.empty())
      return replayRegressions(settings.replay) ? 0 : 1;
    return runCampaign(settings);
  } catch (const std::exception& e) {
    fmt::print("fuzz_differential: {}\n", e.what());
    return 2;
  }
}
