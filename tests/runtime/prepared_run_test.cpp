// A PreparedRun launches the steps run() would, and its argument changes (a new grad tensor, a
// scheduled learning rate) land in the next launch after the checks run() would make; a refused
// change leaves the prepared arguments as they were.

#include "runtime/fusion_executor.h"

#include "ir/error.h"
#include "ir/fusion_definition.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <string>

using namespace widefuse;

namespace {

/// p <- p - lr * g, the shape of every optimizer's last line.
std::unique_ptr<Fusion> descent() {
  FusionDefinition fd("descent");
  Val p = fd.defineTensor({-1}, DataType::Float, "p");
  Val g = fd.defineTensor({-1}, DataType::Float, "g");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  fd.copy_(p - lr * g, p);
  return fd.finalize();
}

HostTensor filled(int64_t numel, float first, float step) {
  HostTensor tensor(DataType::Float, {numel});
  for (int64_t i = 0; i < numel; ++i)
    tensor.as<float>()[i] = first + step * float(i);
  return tensor;
}

/// `numel` dense floats at `data`.
TensorRef view(float* data, int64_t numel) {
  TensorRef ref;
  ref.data = data;
  ref.shape = {numel};
  ref.strides = {1};
  return ref;
}

bool sameBits(const HostTensor& a, const HostTensor& b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.data(), b.data(), a.byteSize()) == 0;
}

std::string messageOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

struct PreparedDescent : ::testing::TestWithParam<std::string> {
  std::unique_ptr<Fusion> fusion = descent();
  HostTensor p = filled(1000, 1.0f, 0.25f);
  HostTensor expected = p;
  HostTensor g1 = filled(1000, -2.0f, 0.5f), g2 = filled(1000, 3.0f, -0.125f);
  std::unique_ptr<FusionExecutorCache> executor;
  std::unique_ptr<PreparedRun> prepared;

  void SetUp() override {
    ExecutorOptions options;
    options.backend = GetParam();
    executor = std::make_unique<FusionExecutorCache>(*fusion, options);
    prepared = executor->prepare({p.ref(), g1.ref(), ScalarArgument(0.5)});
  }
  /// One step of the reference evaluator on `expected`.
  void expectStep(HostTensor& g, double lr) {
    evaluate(*fusion, {expected.ref(), g.ref(), ScalarArgument(lr)});
  }
};

TEST_P(PreparedDescent, ChangedGradsAndScalarsLandInTheNextLaunch) {
  prepared->launch();
  expectStep(g1, 0.5);
  prepared->rebindTensor(1, g2.data());
  prepared->setScalar(2, ScalarArgument(0.125));
  prepared->launch();
  expectStep(g2, 0.125);
  prepared->setScalar(2, ScalarArgument(int64_t(2))); // an integer converts, as in run()
  prepared->launch();
  expectStep(g2, 2.0);
  EXPECT_TRUE(sameBits(p, expected));
  EXPECT_NE(p.as<float>()[7], filled(1000, 1.0f, 0.25f).as<float>()[7]); // it did run
}

TEST_P(PreparedDescent, AGradOverlappingTheWrittenParameterIsRefusedAndNothingChanges) {
  // The parameter in the middle of an arena; the grad moves around it.
  HostTensor arena = filled(3000, -1.0f, 0.001f);
  TensorRef middle = view(arena.as<float>() + 1000, 1000);
  HostTensor expectedArena = arena;
  TensorRef expectedMiddle = view(expectedArena.as<float>() + 1000, 1000);
  auto run = executor->prepare({middle, g1.ref(), ScalarArgument(0.5)});
  for (int64_t start : {1, 999, 1999}) {
    std::string message = messageOf([&] { run->rebindTensor(1, arena.as<float>() + start); });
    EXPECT_NE(message.find("input 'g' shares memory with input 'p'"), std::string::npos)
        << start << ": " << message;
  }
  run->launch(); // still the old grad
  evaluate(*fusion, {expectedMiddle, g1.ref(), ScalarArgument(0.5)});
  // Ending where the parameter starts, or starting where it ends, is no overlap.
  for (int64_t start : {0, 2000}) {
    run->rebindTensor(1, arena.as<float>() + start);
    run->launch();
    evaluate(*fusion,
             {expectedMiddle, view(expectedArena.as<float>() + start, 1000), ScalarArgument(0.5)});
  }
  EXPECT_TRUE(sameBits(arena, expectedArena));
  // The parameter itself may move (its storage replaced), but not onto the grad.
  EXPECT_NE(messageOf([&] { run->rebindTensor(0, arena.as<float>() + 2500); }).find("share"),
            std::string::npos);
  run->rebindTensor(0, p.data());
  run->launch();
  evaluate(*fusion,
           {expected.ref(), view(expectedArena.as<float>() + 2000, 1000), ScalarArgument(0.5)});
  EXPECT_TRUE(sameBits(p, expected));
  EXPECT_TRUE(sameBits(arena, expectedArena)); // the old place is no longer written
}

TEST_P(PreparedDescent, BadChangesAreClearErrors) {
  EXPECT_NE(messageOf([&] { prepared->rebindTensor(2, g2.data()); }).find("'lr' is a scalar"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { prepared->rebindTensor(3, g2.data()); }).find("not an input 3"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { prepared->rebindTensor(1, nullptr); }).find("null data pointer"),
            std::string::npos);
  auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(g2.data()) + 2);
  EXPECT_NE(messageOf([&] { prepared->rebindTensor(1, misaligned); }).find("aligned"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { prepared->setScalar(1, ScalarArgument(0.5)); }).find("is a tensor"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { prepared->setScalar(2, ScalarArgument(true)); }).find("'lr'"),
            std::string::npos);
  prepared->launch(); // the prepared arguments are untouched
  expectStep(g1, 0.5);
  EXPECT_TRUE(sameBits(p, expected));
}

TEST(PreparedRun, ChangesRewriteTheTablesOfEveryModeInPlace) {
  // Many members (per-component: a launch each; batched/packed: one table) with new grads and
  // a new learning rate every step, the host backend's tables patched in place; a plain run()
  // of other arrays on the same executor in between takes the tables over, and the prepared
  // step after it binds them again.
  FusionDefinition fd("descents");
  Val lr = fd.defineScalar(DataType::Double, "lr");
  std::vector<Val> params, grads;
  for (int i = 0; i < 12; ++i) {
    params.push_back(fd.defineTensor({-1}, DataType::Float, fmt::format("p{}", i)));
    grads.push_back(fd.defineTensor({-1}, DataType::Float, fmt::format("g{}", i)));
    fd.copy_(params.back() - lr * grads.back() * double(i + 1), params.back());
  }
  auto fusion = fd.finalize();
  for (SegmentationMode mode :
       {SegmentationMode::PerComponent, SegmentationMode::Batched, SegmentationMode::Packed}) {
    SCOPED_TRACE(modeName(mode).str());
    std::vector<HostTensor> p, expected, g[2], other;
    for (int i = 0; i < 12; ++i) {
      p.push_back(filled(100 + 371 * i, 1.0f + i, 0.25f));
      expected.push_back(p.back());
      other.push_back(p.back());
      for (int k = 0; k < 2; ++k)
        g[k].push_back(filled(100 + 371 * i, float(k) - 0.5f * i, 0.125f * (k + 1)));
    }
    auto arguments = [&](std::vector<HostTensor>& ps, std::vector<HostTensor>& gs, double rate) {
      std::vector<Argument> list = {ScalarArgument(rate)};
      for (int i = 0; i < 12; ++i) {
        list.push_back(ps[i].ref());
        list.push_back(gs[i].ref());
      }
      return list;
    };
    ExecutorOptions options;
    options.backend = "host";
    options.mode = mode;
    FusionExecutorCache executor(*fusion, options);
    auto prepared = executor.prepare(arguments(p, g[0], 0.5));
    for (int step = 0; step < 6; ++step) {
      double rate = 0.5 / (step + 1);
      for (int i = 0; i < 12; ++i)
        prepared->rebindTensor(size_t(2 + 2 * i), g[step % 2][i].data());
      prepared->setScalar(0, ScalarArgument(rate));
      prepared->launch();
      evaluate(*fusion, arguments(expected, g[step % 2], rate));
      if (step == 3)
        executor.run(arguments(other, g[1], 0.25));
    }
    std::vector<HostTensor> otherExpected;
    for (int i = 0; i < 12; ++i) {
      EXPECT_TRUE(sameBits(p[i], expected[i])) << "member " << i;
      otherExpected.push_back(filled(100 + 371 * i, 1.0f + i, 0.25f));
    }
    evaluate(*fusion, arguments(otherExpected, g[1], 0.25));
    for (int i = 0; i < 12; ++i)
      EXPECT_TRUE(sameBits(other[i], otherExpected[i])) << "run() on member " << i;
  }
}

TEST(PreparedRun, AnExtentInputKeepsItsPreparedValueWhileRunTakesNewOnes) {
  // p <- p + broadcast(row, [k, ?]): k decides a shape, so a prepared run may not change it;
  // run() with another k (and a matching p) checks and binds anew.
  FusionDefinition fd("extent");
  Val p = fd.defineTensor({-1, -1}, DataType::Float, "p");
  Val row = fd.defineTensor({-1}, DataType::Float, "row");
  Val k = fd.defineScalar(DataType::Int64, "k");
  fd.copy_(p + broadcast_in_dim_to_extents(row, {k, -1}, {1}), p);
  auto fusion = fd.finalize();
  ExecutorOptions options;
  options.backend = "host";
  FusionExecutorCache executor(*fusion, options);
  HostTensor r = filled(5, 0.5f, 1.0f);
  for (int64_t rows : {3, 2, 3}) {
    HostTensor q(DataType::Float, {rows, 5}), expected(DataType::Float, {rows, 5});
    for (int64_t i = 0; i < rows * 5; ++i)
      q.as<float>()[i] = expected.as<float>()[i] = float(i) * 0.25f;
    executor.run({q.ref(), r.ref(), ScalarArgument(rows)});
    evaluate(*fusion, {expected.ref(), r.ref(), ScalarArgument(rows)});
    EXPECT_TRUE(sameBits(q, expected)) << rows << " rows";
    EXPECT_EQ(q.as<float>()[rows * 5 - 1], float(rows * 5 - 1) * 0.25f + 4.5f);
  }
  HostTensor q(DataType::Float, {3, 5});
  auto prepared = executor.prepare({q.ref(), r.ref(), ScalarArgument(int64_t(3))});
  prepared->setScalar(2, ScalarArgument(int64_t(3))); // the same value is no change
  std::string message = messageOf([&] { prepared->setScalar(2, ScalarArgument(int64_t(2))); });
  EXPECT_NE(message.find("input 'k' is an output extent (broadcast_in_dim's shape), and a "
                         "prepared run keeps its shapes"),
            std::string::npos)
      << message;
  message = messageOf([&] { executor.run({q.ref(), r.ref(), ScalarArgument(int64_t(2))}); });
  EXPECT_NE(message.find("shape [3, 5]"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Backends, PreparedDescent, ::testing::Values("host", "reference"),
                         [](const auto& info) { return info.param; });

} // namespace
