// Tensors past 2^31 elements on the host backend. A u8, a b8 and a bf16 parameter of
// 2^31 + 17 elements, each with its own 0-d step counter (the deferred write of an optimizer
// step), are updated in place with 64-bit indices; and a batched kernel whose members are
// each just small enough for 32-bit indices, but together hold more than 2^31 elements (so
// the launch's chunk prefix sums pass 2^31 / chunk size), is updated with 32-bit ones.
//
// The expected values are computed here from the element's position, not by the reference
// evaluator (which would need as much memory again and minutes): the initial value of element
// i depends on i modulo a prime, so an element written through a wrapped 32-bit offset, written
// twice or not at all shows up at the sampled positions. Guard bytes after each tensor must
// stay untouched. The tests move about 4 GiB each: ctest runs them alone (label
// `large_memory`, RUN_SERIAL); docs/testing.md says how.

#include "runtime/fusion_executor.h"

#include "ir/fusion_definition.h"
#include "ir/half_float.h"
#include "scheduler/schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>

using namespace widefuse;

namespace {

constexpr int64_t kLarge = (int64_t(1) << 31) + 17;
constexpr int64_t kGuardBytes = 64;
constexpr unsigned char kGuard = 0xA5;

/// A buffer of `elements` elements of `elementBytes` bytes followed by guard bytes; the
/// elements are left uninitialised (the test fills them).
class GuardedBuffer {
public:
  GuardedBuffer(int64_t elements, size_t elementBytes)
      : bytes_(size_t(elements) * elementBytes),
        data_(new (std::nothrow) unsigned char[bytes_ + kGuardBytes]) {
    if (data_)
      std::memset(data_.get() + bytes_, kGuard, kGuardBytes);
  }
  bool allocated() const { return data_ != nullptr; }
  template <typename T> T* as() { return reinterpret_cast<T*>(data_.get()); }
  bool guardIntact() const {
    for (int64_t i = 0; i < kGuardBytes; ++i)
      if (data_[bytes_ + i] != kGuard)
        return false;
    return true;
  }

private:
  size_t bytes_;
  std::unique_ptr<unsigned char[]> data_;
};

/// Fills `out[0, count)` with `pattern(i % period)`: one period is computed and copied on, so
/// filling 2^31 elements takes a memcpy's time.
template <typename T>
void fillPeriodic(T* out, int64_t count, int64_t period, const std::function<T(int64_t)>& pattern) {
  int64_t first = std::min(count, period);
  for (int64_t i = 0; i < first; ++i)
    out[i] = pattern(i);
  // Doubling copies: `done` stays a multiple of the period until the last, partial copy.
  for (int64_t done = first; done < count;) {
    int64_t copy = std::min(done, count - done);
    std::memcpy(out + done, out, size_t(copy) * sizeof(T));
    done += copy;
  }
}

/// The positions a test checks: both ends, the neighbourhood of every power of two from 2^30
/// on and of the 64-bit index threshold, and random ones.
std::vector<int64_t> sampledPositions(int64_t count) {
  std::vector<int64_t> positions;
  auto window = [&](int64_t center, int64_t radius) {
    for (int64_t i = std::max<int64_t>(0, center - radius); i < std::min(count, center + radius);
         ++i)
      positions.push_back(i);
  };
  window(0, 1 << 16);
  window(count, 1 << 16);
  for (int64_t power = int64_t(1) << 30; power < count; power *= 2)
    window(power, 1 << 12);
  window(kMaxInt32IndexElements, 1 << 12);
  std::mt19937_64 random(20261201);
  std::uniform_int_distribution<int64_t> anywhere(0, count - 1);
  for (int i = 0; i < (1 << 20); ++i)
    positions.push_back(anywhere(random));
  return positions;
}

/// Counts the sampled positions whose element is not `expected(i)`, reporting the first.
template <typename T>
int64_t countWrong(const T* actual, int64_t count, const std::function<T(int64_t)>& expected,
                   const std::string& what) {
  int64_t wrong = 0;
  for (int64_t i : sampledPositions(count))
    if (actual[i] != expected(i) && wrong++ == 0)
      ADD_FAILURE() << what << ": element " << i << " is " << +actual[i] << ", expected "
                    << +expected(i);
  return wrong;
}

/// p' = update(p, step), step' = step + 1: one parameter-like tensor of `dtype` and its 0-d
/// step counter, updated in place.
std::unique_ptr<Fusion> parameterStep(DataType dtype,
                                      const std::function<Val(Val p, Val step)>& update) {
  FusionDefinition fd("large_step");
  Val p = fd.defineTensor({-1}, dtype, "p");
  Val step = fd.defineTensor({}, DataType::Float, "step");
  fd.copy_(update(p, step), p);
  fd.copy_(step + 1.0, step);
  return fd.finalize();
}

/// Each test runs two steps over the same tensors, on the fast path (one vectorized loop per
/// member run). The verify path (the device emulator) checks every access of every thread:
/// 2^31 of them would take hours, so it runs the device code's 64-bit indices over small
/// tensors instead (device_emulator_test, a specialization that asks for them).
constexpr HostExecution kExecutions[] = {HostExecution::Fast, HostExecution::Fast};

ExecutorOptions hostOptions(HostExecution execution,
                            SegmentationMode mode = SegmentationMode::Auto) {
  ExecutorOptions options;
  options.backend = "host";
  options.host.execution = execution;
  options.mode = mode;
  options.host.threads = 2;
  return options;
}

/// The index width of every kernel of the executor's last run.
std::vector<unsigned> indexBits(const FusionExecutorCache& executor) {
  std::vector<unsigned> bits;
  for (const KernelPlan& plan : executor.lastCompiled()->scheduled.plans)
    bits.push_back(plan.indexBits);
  return bits;
}

/// Runs `fusion` over a `kLarge`-element tensor of `T` filled with `initial(i % 251)` and a
/// step counter of 3, once on each path of kExecutions; after run k (step 3 + k), every
/// sampled element must be `expected[k](i % 251)`.
template <typename T>
void expectLargeUpdates(const Fusion& fusion, DataType dtype,
                        const std::function<T(int64_t)>& initial,
                        const std::function<T(int64_t)> (&expected)[2]) {
  GuardedBuffer buffer(kLarge, sizeof(T));
  ASSERT_TRUE(buffer.allocated()) << "cannot allocate " << kLarge * sizeof(T) << " bytes";
  T* p = buffer.as<T>();
  fillPeriodic<T>(p, kLarge, 251, initial);
  float step = 3.0f;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(hostExecutionName(kExecutions[run]).str());
    FusionExecutorCache executor(fusion, hostOptions(kExecutions[run]));
    executor.run({TensorRef{dtype, {kLarge}, {1}, p}, TensorRef{DataType::Float, {}, {}, &step}});
    EXPECT_EQ(indexBits(executor), std::vector<unsigned>{64});
    EXPECT_EQ(step, 4.0f + float(run));
    EXPECT_EQ(countWrong<T>(
                  p, kLarge, [&](int64_t i) { return expected[run](i % 251); }, "p"),
              0);
    EXPECT_TRUE(buffer.guardIntact()) << "bytes past the tensor were written";
  }
}

TEST(LargeTensors, AU8ParameterOf2To31Plus17ElementsIsUpdatedInPlace) {
  // p' = p * 3 + u8(step), wrapping modulo 256; steps 3 and 4.
  auto fusion = parameterStep(DataType::UInt8,
                              [](Val p, Val step) { return p * 3 + cast(step, DataType::UInt8); });
  const std::function<uint8_t(int64_t)> expected[2] = {
      [](int64_t r) { return uint8_t(r * 3 + 3); },
      [](int64_t r) { return uint8_t((r * 3 + 3) * 3 + 4); }};
  expectLargeUpdates<uint8_t>(
      *fusion, DataType::UInt8, [](int64_t r) { return uint8_t(r); }, expected);
}

TEST(LargeTensors, AB8ParameterOf2To31Plus17ElementsIsUpdatedInPlace) {
  // p' = p != (step > 0): every run negates p. Bools are bytes 0/1.
  auto fusion = parameterStep(DataType::Bool, [](Val p, Val step) { return ne(p, gt(step, 0.0)); });
  auto initial = [](int64_t r) { return uint8_t((r * r) % 7 < 3); };
  const std::function<uint8_t(int64_t)> expected[2] = {
      [=](int64_t r) { return uint8_t(!initial(r)); }, initial};
  expectLargeUpdates<uint8_t>(*fusion, DataType::Bool, initial, expected);
}

TEST(LargeTensors, ABF16ParameterOf2To31Plus17ElementsIsUpdatedInPlace) {
  // p' = p * (step - 5): p * -2, then * -1 (steps 3 and 4), exact in bf16 for the small
  // integers used.
  auto fusion = parameterStep(DataType::BFloat16, [](Val p, Val step) { return p * (step - 5.0); });
  const std::function<uint16_t(int64_t)> expected[2] = {
      [](int64_t r) { return toBFloat16Bits(-2.0 * double(r - 125)); },
      [](int64_t r) { return toBFloat16Bits(2.0 * double(r - 125)); }};
  expectLargeUpdates<uint16_t>(
      *fusion, DataType::BFloat16, [](int64_t r) { return toBFloat16Bits(double(r - 125)); },
      expected);
}

TEST(LargeTensors, AMemberTablePast2To31ElementsOfSmallMembersIsUpdated) {
  // Three members of one signature class in one batched launch: two of the largest size that
  // still takes 32-bit indices and one of 17 elements after them, so the chunk prefix sums
  // and the members' total pass 2^31 / chunk size and 2^31 while each member is small.
  const int64_t sizes[] = {kMaxInt32IndexElements - 1, kMaxInt32IndexElements - 1, 17};
  FusionDefinition fd("table_step");
  std::vector<Val> params, steps;
  for (int k = 0; k < 3; ++k) {
    params.push_back(fd.defineTensor({-1}, DataType::UInt8, fmt::format("p{}", k)));
    steps.push_back(fd.defineTensor({}, DataType::Float, fmt::format("step{}", k)));
  }
  for (int k = 0; k < 3; ++k) {
    fd.copy_(params[k] * 3 + cast(steps[k], DataType::UInt8), params[k]);
    fd.copy_(steps[k] + 1.0, steps[k]);
  }
  auto fusion = fd.finalize();

  std::vector<std::unique_ptr<GuardedBuffer>> buffers;
  const float stepValues0[3] = {3.0f, 10.0f, 20.0f};
  float stepValues[3] = {3.0f, 10.0f, 20.0f};
  std::vector<Argument> arguments;
  // Each member's pattern is shifted by 37 k, so a member reading another's data shows too.
  auto initial = [](int k) { return [k](int64_t i) { return uint8_t((i + 37 * k) % 251); }; };
  for (int k = 0; k < 3; ++k) {
    buffers.push_back(std::make_unique<GuardedBuffer>(sizes[k], 1));
    ASSERT_TRUE(buffers.back()->allocated()) << "cannot allocate " << sizes[k] << " bytes";
    uint8_t* p = buffers.back()->as<uint8_t>();
    fillPeriodic<uint8_t>(p, sizes[k], 251, initial(k));
    arguments.push_back(TensorRef{DataType::UInt8, {sizes[k]}, {1}, p});
    arguments.push_back(TensorRef{DataType::Float, {}, {}, &stepValues[k]});
  }
  // After run `run`, member k holds update^(run+1) of its initial value,
  // the update at step s being v * 3 + s.
  auto expected = [&](int k, int run, int64_t i) {
    uint8_t value = initial(k)(i);
    for (int r = 0; r <= run; ++r)
      value = uint8_t(value * 3 + uint8_t(stepValues0[k] + float(r)));
    return value;
  };
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(hostExecutionName(kExecutions[run]).str());
    FusionExecutorCache executor(*fusion, hostOptions(kExecutions[run], SegmentationMode::Batched));
    executor.run(arguments);
    ASSERT_EQ(executor.lastCompiled()->numLaunches(), 1u);
    EXPECT_EQ(executor.lastCompiled()->scheduled.launches[0].members.size(), 3u);
    EXPECT_EQ(indexBits(executor), std::vector<unsigned>{32});
    for (int k = 0; k < 3; ++k) {
      SCOPED_TRACE("member " + std::to_string(k));
      EXPECT_EQ(countWrong<uint8_t>(
                    buffers[k]->as<uint8_t>(), sizes[k],
                    [&](int64_t i) { return expected(k, run, i); }, "p"),
                0);
      EXPECT_TRUE(buffers[k]->guardIntact()) << "bytes past the tensor were written";
      EXPECT_EQ(stepValues[k], stepValues0[k] + float(run + 1));
    }
  }
}

} // namespace
