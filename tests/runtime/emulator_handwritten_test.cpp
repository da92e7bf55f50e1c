// The device emulator on hand-written kernels: warp collectives keep lane semantics in every
// thread order, a mask naming lanes that do not call is reported, an access past a buffer is
// out of bounds with its line, and a result that depends on the interleaving fails the launch.

#include "runtime/host/device_emulator.h"

#include "tests/support/error_of.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using namespace widefuse;
using namespace widefuse::testing;

namespace {

/// The line of `source` holding `text` (1-based), as reports name it.
int lineOf(const std::string& source, const std::string& text) {
  size_t at = source.find(text);
  return at == std::string::npos ? -1
                                 : int(std::count(source.begin(), source.begin() + at, '\n')) + 1;
}

/// A launch's parameter block holding `parameters`' bytes.
template <typename Parameters> std::vector<std::byte> bytesOf(const Parameters& parameters) {
  std::vector<std::byte> bytes(sizeof parameters);
  std::memcpy(bytes.data(), &parameters, sizeof parameters);
  return bytes;
}

constexpr const char* kWarpKernel = R"(
struct warp_params {
  unsigned* out;
  const int* in;
};
extern "C" __global__ void warp_ops(const warp_params p) {
  const unsigned t = threadIdx.x;
  const int v = p.in[t];
  int s = v;
  for (int o = 16; o > 0; o /= 2)
    s += __shfl_down_sync(0xffffffffu, s, o);
  unsigned* out = p.out + t * 8;
  out[0] = unsigned(s);
  out[1] = __ballot_sync(0xffffffffu, v & 1);
  out[2] = unsigned(__any_sync(0xffffffffu, v > 90));
  out[3] = unsigned(__all_sync(0xffffffffu, v >= 0));
  out[4] = unsigned(__shfl_xor_sync(0xffffffffu, v, 1));
  out[5] = unsigned(__shfl_up_sync(0xffffffffu, v, 1));
  out[6] = unsigned(__shfl_sync(0xffffffffu, v, 3, 8));
  out[7] = __activemask();
}
)";

} // namespace

TEST(WarpCollectives, KeepLaneSemanticsInEveryThreadOrder) {
  auto kernel = EmulatedKernel::compile(kWarpKernel, "warp_ops", "warp_params");
  constexpr unsigned kThreads = 64;
  std::vector<int> in(kThreads);
  for (unsigned t = 0; t < kThreads; ++t)
    in[t] = int((t * 37 + 11) % 97);
  for (const char* order : {"forward", "reverse", "shuffle:1", "shuffle:2"}) {
    std::vector<unsigned> out(kThreads * 8, 0);
    struct {
      unsigned* out;
      const int* in;
    } parameters{out.data(), in.data()};
    std::vector<std::byte> bytes(sizeof parameters);
    std::memcpy(bytes.data(), &parameters, sizeof parameters);
    EmulationOptions options;
    options.order = parseBlockOrder(order);
    emulateLaunch(*kernel, bytes, 1, kThreads,
                  {{out.data(), out.size() * 4, "out"}, {in.data(), in.size() * 4, "in"}}, options);
    for (unsigned warp = 0; warp < kThreads / 32; ++warp) {
      const int* v = in.data() + warp * 32;
      int s[32];
      std::copy(v, v + 32, s);
      for (int o = 16; o > 0; o /= 2) {
        int next[32];
        for (int l = 0; l < 32; ++l)
          next[l] = s[l] + (l + o < 32 ? s[l + o] : s[l]);
        std::copy(next, next + 32, s);
      }
      unsigned ballot = 0;
      bool any = false, all = true;
      for (int l = 0; l < 32; ++l) {
        ballot |= unsigned(v[l] & 1) << l;
        any = any || v[l] > 90;
        all = all && v[l] >= 0;
      }
      for (int l = 0; l < 32; ++l) {
        const unsigned* got = out.data() + (warp * 32 + l) * 8;
        SCOPED_TRACE(fmt::format("{}: warp {} lane {}", order, warp, l));
        EXPECT_EQ(got[0], unsigned(s[l]));
        EXPECT_EQ(got[1], ballot);
        EXPECT_EQ(got[2], unsigned(any));
        EXPECT_EQ(got[3], unsigned(all));
        EXPECT_EQ(got[4], unsigned(v[l ^ 1]));
        EXPECT_EQ(got[5], unsigned(v[l > 0 ? l - 1 : l]));
        EXPECT_EQ(got[6], unsigned(v[l / 8 * 8 + 3]));
        EXPECT_EQ(got[7], 0xffffffffu);
      }
    }
  }
}

TEST(WarpCollectives, AMaskNamingLanesThatDoNotCallIsReported) {
  std::string source = R"(
struct mask_params {
  int* out;
};
extern "C" __global__ void half_warp(const mask_params p) {
  int v = int(threadIdx.x);
  if (threadIdx.x % 32 < 16)
    v = __shfl_sync(0xffffffffu, v, 0);
  p.out[threadIdx.x] = v;
}
)";
  auto kernel = EmulatedKernel::compile(source, "half_warp", "mask_params");
  std::vector<int> out(32, 0);
  int* pointer = out.data();
  std::vector<std::byte> bytes(sizeof pointer);
  std::memcpy(bytes.data(), &pointer, sizeof pointer);
  std::string message = errorOf([&] {
    emulateLaunch(*kernel, bytes, 1, 32, {{out.data(), 128, "out"}}, {});
  });
  EXPECT_NE(message.find("warp mask mismatch in kernel half_warp, block 0"), std::string::npos)
      << message;
  EXPECT_NE(message.find(fmt::format("at half_warp.cu:{}", lineOf(source, "v = __shfl_sync"))),
            std::string::npos)
      << message;
}

TEST(DeviceEmulator, AnAccessPastAnInputIsOutOfBoundsWithItsLine) {
  std::string source = R"(
struct copy_params {
  float* out;
  const float* in;
  int n;
};
extern "C" __global__ void off_by_one(const copy_params p) {
  for (int i = int(threadIdx.x); i <= p.n; i += int(blockDim.x))
    p.out[i] = p.in[i];
}
)";
  auto kernel = EmulatedKernel::compile(source, "off_by_one", "copy_params");
  std::vector<float> in(100, 1.0f), out(200, 0.0f);
  struct {
    float* out;
    const float* in;
    int n;
  } parameters{out.data(), in.data(), 100};
  std::vector<std::byte> bytes(sizeof parameters);
  std::memcpy(bytes.data(), &parameters, sizeof parameters);
  std::string message = errorOf([&] {
    emulateLaunch(*kernel, bytes, 1, 64,
                  {{out.data(), out.size() * 4, "out"}, {in.data(), in.size() * 4, "in"}}, {});
  });
  EXPECT_NE(message.find("out-of-bounds access in kernel off_by_one, block 0: a read of 4 "
                         "bytes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("0 bytes past the end of in"), std::string::npos) << message;
  EXPECT_NE(message.find("thread 36 at off_by_one.cu:"), std::string::npos) << message;
}
TEST(DeviceEmulator, AResultThatDependsOnTheInterleavingFailsTheLaunch) {
  // Every thread stores its index to one global word: no shared-memory race to see, but the
  // word ends up holding whichever thread stored last.
  std::string source = R"(
struct last_params {
  unsigned* out;
  const unsigned* in;
};
extern "C" __global__ void last_writer(const last_params p) {
  p.out[blockIdx.x] = p.in[blockIdx.x] + threadIdx.x;
}
)";
  auto kernel = EmulatedKernel::compile(source, "last_writer", "last_params");
  std::vector<unsigned> in = {100, 200}, out = {7, 7};
  struct {
    unsigned* out;
    const unsigned* in;
  } parameters{out.data(), in.data()};
  std::vector<EmulationBuffer> buffers = {{out.data(), 8, "out"}, {in.data(), 8, "in"}};
  EmulationOptions options;
  options.order = {BlockOrder::Kind::Forward, 0};
  // One run in forward order: thread 63 stores last.
  emulateLaunch(*kernel, bytesOf(parameters), 2, 64, buffers, options);
  EXPECT_EQ(out, (std::vector<unsigned>{163, 263}));
  out = {7, 7};
  options.interleavings = 3;
  std::string message =
      errorOf([&] { emulateLaunch(*kernel, bytesOf(parameters), 2, 64, buffers, options); });
  EXPECT_CONTAINS(message, "kernel last_writer: the result depends on the interleaving: byte 0 "
                           "of out is 0xa3 after the forward run and");
  EXPECT_CONTAINS(
      message, fmt::format("after the {} run", formatBlockOrder(interleaving(options.order, 1))));
}

TEST(DeviceEmulator, ARaceFreeKernelKeepsItsBytesInEveryInterleaving) {
  // Each thread adds its own element in place (a load and a store of one address, of which
  // the instrumented build reports only the load): the runs start from the same bytes (the
  // second and third run do not add again) and agree.
  std::string source = R"(
struct add_params {
  unsigned* data;
};
extern "C" __global__ void add_own(const add_params p) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  p.data[i] += i;
}
)";
  auto kernel = EmulatedKernel::compile(source, "add_own", "add_params");
  std::vector<unsigned> data(128, 5);
  unsigned* pointer = data.data();
  EmulationOptions options;
  options.order = {BlockOrder::Kind::Reverse, 0};
  options.interleavings = 3;
  emulateLaunch(*kernel, bytesOf(pointer), 4, 32, {{data.data(), 512, "data"}}, options);
  for (unsigned i = 0; i < 128; ++i)
    EXPECT_EQ(data[i], 5 + i) << i;
}

TEST(DeviceEmulator, AReadModifyWriteIsAWriteToTheRaceCheck) {
  // `s[t] += 1` loads and stores one address, and both are accesses: thread 0 reading s[1]
  // while thread 1 updates it, with no barrier between them, is a race.
  std::string source = R"(
struct rmw_params {
  int* out;
};
extern "C" __global__ void read_modify_write(const rmw_params p) {
  __shared__ int s[64];
  s[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  s[threadIdx.x] += 1;
  p.out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
)";
  auto kernel = EmulatedKernel::compile(source, "read_modify_write", "rmw_params");
  std::vector<int> out(64, 0);
  int* pointer = out.data();
  std::string message = errorOf([&] {
    emulateLaunch(*kernel, bytesOf(pointer), 1, 64, {{out.data(), 256, "out"}}, {});
  });
  EXPECT_CONTAINS(message, "shared-memory race in kernel read_modify_write, block 0: write after "
                           "read");
  EXPECT_CONTAINS(message,
                  fmt::format("read_modify_write.cu:{}", lineOf(source, "s[threadIdx.x] += 1")));
}
