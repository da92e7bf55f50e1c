#include "tests/support/error_of.h"
#include "tools/npy_file.h"

#include "ir/error.h"
#include "tests/support/temp_dir.h"
#include "tests/tools/numpy_samples.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

using namespace widefuse;
using widefuse::testing::errorOf;
using namespace widefuse::npy_samples;

namespace {

/// A .npy file with an arbitrary header text, for malformed-header cases.
std::string makeNpy(const std::string& header, const std::string& data = {}, unsigned version = 1) {
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(version));
  out.push_back(0);
  size_t width = version == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i)
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  return out + header + data;
}

/// A header dict as numpy writes it, with the given values spliced in.
std::string headerOf(const std::string& descr, const std::string& shape,
                     const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

/// The message readNpyBytes gives for these bytes.
std::string readError(const std::string& bytes, std::optional<DataType> expected = {}) {
  return errorOf([&] { readNpyBytes(bytes, "in.npy", expected); });
}

/// A tensor whose bytes follow a pattern valid for its type (0/1 for bool).
HostTensor patterned(DataType dtype, llvm::ArrayRef<int64_t> shape) {
  HostTensor tensor(dtype, shape);
  auto* bytes = static_cast<uint8_t*>(tensor.data());
  for (size_t i = 0; i < tensor.byteSize(); ++i)
    bytes[i] = dtype == DataType::Bool ? i % 2 : static_cast<uint8_t>(i * 37 + 11);
  return tensor;
}

void expectSameTensor(const HostTensor& actual, const HostTensor& expected) {
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(actual.byteSize(), expected.byteSize());
  // memcmp of a null pointer is undefined even for 0 bytes.
  if (actual.byteSize() > 0) {
    EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.byteSize()));
  }
}

} // namespace

TEST(NpyFile, RoundTripsEveryDataTypeAndShape) {
  const std::vector<llvm::SmallVector<int64_t, 4>> shapes = {{}, {1}, {0, 3}, {2, 3}, {2, 1, 5}};
  for (DataType dtype : kAllDataTypes) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(fmt::format("{} ({})", shortName(dtype).str(), fmt::join(shape, ", ")));
      HostTensor tensor = patterned(dtype, shape);
      std::string bytes = npyBytes(tensor);
      EXPECT_EQ(bytes.size() - tensor.byteSize(), 128u) << "header padded to 64 bytes";
      expectSameTensor(readNpyBytes(bytes, "round-trip.npy", dtype), tensor);
    }
  }
}

TEST(NpyFile, RoundTripsThroughAFile) {
  TempDir dir;
  HostTensor tensor = patterned(DataType::Double, {4, 2});
  writeNpy(dir.file("t.npy"), tensor);
  expectSameTensor(readNpy(dir.file("t.npy")), tensor);
  expectSameTensor(readNpy(dir.file("t.npy"), DataType::Double), tensor);
}

TEST(NpyFile, WritesTheSameBytesAsNumpy) {
  HostTensor arange(DataType::Float, {2, 3});
  for (int i = 0; i < 6; ++i)
    arange.as<float>()[i] = static_cast<float>(i);
  EXPECT_EQ(npyBytes(arange), bytesOf(kNumpyF32Arange2x3));

  HostTensor scalar(DataType::Int64, {});
  scalar.as<int64_t>()[0] = -7;
  EXPECT_EQ(npyBytes(scalar), bytesOf(kNumpyI64Scalar));

  HostTensor flags(DataType::Bool, {3});
  flags.as<uint8_t>()[0] = 1;
  flags.as<uint8_t>()[2] = 1;
  EXPECT_EQ(npyBytes(flags), bytesOf(kNumpyBoolVector));

  EXPECT_EQ(npyBytes(HostTensor(DataType::Half, {0, 3})), bytesOf(kNumpyF16Empty0x3));

  HostTensor one(DataType::UInt16, {1});
  one.as<uint16_t>()[0] = 0x3f80;
  EXPECT_EQ(npyBytes(one), bytesOf(kNumpyU2OneElement));
}

TEST(NpyFile, ReadsNumpyFiles) {
  HostTensor arange = readNpyBytes(bytesOf(kNumpyF32Arange2x3), "arange.npy");
  EXPECT_EQ(arange.dtype(), DataType::Float);
  EXPECT_EQ(arange.shape(), llvm::ArrayRef<int64_t>({2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(arange.as<float>()[i], static_cast<float>(i));

  HostTensor scalar = readNpyBytes(bytesOf(kNumpyI64Scalar), "scalar.npy");
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(scalar.as<int64_t>()[0], -7);

  HostTensor flags = readNpyBytes(bytesOf(kNumpyBoolVector), "flags.npy", DataType::Bool);
  EXPECT_EQ(flags.as<uint8_t>()[0], 1);
  EXPECT_EQ(flags.as<uint8_t>()[1], 0);
  EXPECT_EQ(flags.as<uint8_t>()[2], 1);

  HostTensor empty = readNpyBytes(bytesOf(kNumpyF16Empty0x3), "empty.npy");
  EXPECT_EQ(empty.dtype(), DataType::Half);
  EXPECT_EQ(empty.shape(), llvm::ArrayRef<int64_t>({0, 3}));
  EXPECT_EQ(empty.byteSize(), 0u);
}

TEST(NpyFile, ReadsVersion2And3Headers) {
  HostTensor v2 = readNpyBytes(bytesOf(kNumpyI8V2), "v2.npy");
  EXPECT_EQ(v2.dtype(), DataType::Int8);
  EXPECT_EQ(v2.as<int8_t>()[0], 1);
  EXPECT_EQ(v2.as<int8_t>()[1], -2);
  EXPECT_EQ(parseNpyHeader(bytesOf(kNumpyI8V2), "v2.npy").majorVersion, 2u);

  HostTensor v3 = readNpyBytes(bytesOf(kNumpyU4V3), "v3.npy");
  EXPECT_EQ(v3.dtype(), DataType::UInt32);
  EXPECT_EQ(v3.as<uint32_t>()[0], 7u);
}

TEST(NpyFile, WritesVersion2OnlyWhenTheHeaderNeedsIt) {
  EXPECT_EQ(npyBytes(HostTensor(DataType::Float, {2, 3}))[6], 1);
  // 30000 zero extents: a header longer than version 1.0's 16-bit length allows.
  llvm::SmallVector<int64_t, 4> shape(30000, 0);
  HostTensor wide(DataType::Float, shape);
  std::string bytes = npyBytes(wide);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes.size() % 64, 0u);
  NpyHeader header = parseNpyHeader(bytes, "wide.npy");
  EXPECT_EQ(header.majorVersion, 2u);
  EXPECT_EQ(header.shape.size(), 30000u);
  expectSameTensor(readNpyBytes(bytes, "wide.npy"), wide);
}

TEST(NpyFile, StoresBFloat16AsUInt16Bits) {
  HostTensor bf16(DataType::BFloat16, {1});
  bf16.as<uint16_t>()[0] = 0x3f80;
  std::string bytes = npyBytes(bf16);
  EXPECT_EQ(bytes, bytesOf(kNumpyU2OneElement));
  EXPECT_EQ(readNpyBytes(bytes, "bits.npy").dtype(), DataType::UInt16);
  HostTensor back = readNpyBytes(bytes, "bits.npy", DataType::BFloat16);
  EXPECT_EQ(back.dtype(), DataType::BFloat16);
  EXPECT_EQ(back.as<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(npyDescr(DataType::BFloat16), "<u2");
}

TEST(NpyFile, RejectsAnotherDataTypeThanExpected) {
  std::string message = readError(bytesOf(kNumpyF32Arange2x3), DataType::Double);
  EXPECT_EQ(message, "in.npy: holds f32 data (descr '<f4') but f64 was expected");
  message = readError(makeNpy(headerOf("<f2", "(1,)"), "\0\0"), DataType::BFloat16);
  EXPECT_NE(message.find("holds f16 data (descr '<f2') but bf16 was expected"), std::string::npos)
      << message;
  EXPECT_NE(message.find("uint16 bits"), std::string::npos) << message;
  // A bf16 file is not a uint16 tensor's substitute the other way round.
  EXPECT_NE(readError(bytesOf(kNumpyU2OneElement), DataType::Half).find("holds u16 data"),
            std::string::npos);
}

TEST(NpyFile, RejectsBadMagic) {
  EXPECT_EQ(readError(""), "in.npy: empty file, not a .npy file");
  EXPECT_NE(readError("PK\x03\x04 a zip file").find("not a .npy file (bad magic string"),
            std::string::npos);
  EXPECT_NE(readError("\x93NUM").find("bad magic"), std::string::npos);
}

TEST(NpyFile, RejectsTruncatedHeaders) {
  std::string full = bytesOf(kNumpyF32Arange2x3);
  EXPECT_NE(readError(full.substr(0, 7)).find("truncated .npy header"), std::string::npos);
  EXPECT_NE(readError(full.substr(0, 9)).find("truncated .npy header"), std::string::npos);
  EXPECT_EQ(readError(full.substr(0, 50)),
            "in.npy: truncated .npy header (it says 118 bytes but the file has 40 after the "
            "prefix)");
  // Every prefix fails cleanly; under AddressSanitizer this also checks no read goes past it.
  for (size_t length = 0; length < full.size(); ++length)
    EXPECT_FALSE(readError(full.substr(0, length)).empty()) << length;
}

TEST(NpyFile, RejectsUnsupportedVersions) {
  std::string bytes = bytesOf(kNumpyF32Arange2x3);
  bytes[6] = 4;
  EXPECT_EQ(readError(bytes),
            "in.npy: unsupported .npy format version 4.0 (supported: 1.0, 2.0, 3.0)");
  bytes[6] = 1;
  bytes[7] = 1;
  EXPECT_NE(readError(bytes).find("version 1.1"), std::string::npos);
}

TEST(NpyFile, RejectsHeadersThatAreNotADict) {
  EXPECT_NE(readError(makeNpy("['descr', '<f4']\n")).find("the header is not a Python dict"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)"))
                .find("malformed .npy header"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy(headerOf("<f4", "(1,)") + "x")).find("unexpected text after"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr: '<f4'}")).find("malformed .npy header"), std::string::npos);
  EXPECT_NE(readError(makeNpy("{descr: '<f4'}")).find("expected a quoted key"), std::string::npos);
  EXPECT_NE(readError(makeNpy(headerOf("<f4", "(1,)", "maybe"))).find("not True or False"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}"))
                .find("escape sequences"),
            std::string::npos);
}

TEST(NpyFile, RejectsMissingExtraAndRepeatedKeys) {
  EXPECT_EQ(readError(makeNpy("{'descr': '<f4', 'fortran_order': False, }\n")),
            "in.npy: malformed .npy header: no 'shape' key");
  EXPECT_EQ(readError(makeNpy("{'shape': (), 'fortran_order': False, }\n")),
            "in.npy: malformed .npy header: no 'descr' key");
  EXPECT_EQ(readError(makeNpy("{'shape': (), 'descr': '<f4'}\n")),
            "in.npy: malformed .npy header: no 'fortran_order' key");
  EXPECT_NE(readError(makeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (), "
                              "'extra': 1}"))
                .find("unexpected key 'extra'"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr': '<f4', 'descr': '<f4'}")).find("'descr' appears twice"),
            std::string::npos);
}

TEST(NpyFile, ReadsNumpysComplex64) {
  HostTensor tensor = readNpyBytes(bytesOf(kNumpyC8), "c8.npy", std::nullopt);
  ASSERT_EQ(tensor.dtype(), DataType::ComplexFloat);
  EXPECT_EQ(tensor.as<float>()[0], 1.0f); // np.array([1+2j], dtype='<c8')
  EXPECT_EQ(tensor.as<float>()[1], 2.0f);
}

TEST(NpyFile, RejectsUnsupportedDescrs) {
  std::string strings = bytesOf(kNumpyC8);
  strings.replace(strings.find("<c8"), 3, "<U1"); // a NumPy string dtype
  EXPECT_NE(readError(strings).find("unsupported dtype descr '<U1'"), std::string::npos);
  std::string message = readError(bytesOf(kMlDtypesBf16));
  EXPECT_NE(message.find("unsupported dtype descr '<V2'"), std::string::npos) << message;
  EXPECT_NE(message.find("a.view(numpy.uint16)"), std::string::npos) << message;
  EXPECT_NE(readError(makeNpy(headerOf("<u8", "(1,)"), std::string(8, '\0')))
                .find("unsupported dtype descr '<u8'"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy(headerOf("|f4", "(1,)"), std::string(4, '\0')))
                .find("unsupported dtype descr '|f4'"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy(headerOf("f", "(1,)"))).find("unsupported dtype descr 'f'"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}"))
                .find("structured dtypes"),
            std::string::npos);
  EXPECT_NE(readError(makeNpy("{'descr': 4, 'fortran_order': False, 'shape': ()}"))
                .find("'descr' is not a string"),
            std::string::npos);
}

TEST(NpyFile, AcceptsAnyByteOrderMarkForSingleByteTypes) {
  EXPECT_EQ(readNpyBytes(makeNpy(headerOf("<u1", "(1,)"), "\x05"), "u1.npy").dtype(),
            DataType::UInt8);
  EXPECT_EQ(readNpyBytes(makeNpy(headerOf(">i1", "(1,)"), "\x05"), "i1.npy").dtype(),
            DataType::Int8);
}

TEST(NpyFile, RejectsBigEndianData) {
  EXPECT_EQ(readError(bytesOf(kNumpyF8BigEndian)),
            "in.npy: big-endian data (descr '>f8') is not supported; save it little-endian, "
            "e.g. a.astype('<f8')");
}

TEST(NpyFile, RejectsFortranOrder) {
  std::string message = readError(bytesOf(kNumpyF4Fortran));
  EXPECT_NE(message.find("Fortran-ordered data (fortran_order: True) is not supported"),
            std::string::npos)
      << message;
}

TEST(NpyFile, RejectsDataOfTheWrongLength) {
  std::string full = bytesOf(kNumpyF32Arange2x3);
  EXPECT_EQ(readError(full.substr(0, full.size() - 1)),
            "in.npy: the data is too short: shape (2, 3) of f32 needs 24 bytes, the file has 23");
  EXPECT_EQ(readError(full + "abcd"),
            "in.npy: the data is too long: shape (2, 3) of f32 needs 24 bytes, the file has 28");
  EXPECT_NE(readError(bytesOf(kNumpyF16Empty0x3) + "x").find("too long"), std::string::npos);
}

TEST(NpyFile, RejectsBadShapes) {
  auto shapeError = [](const std::string& shape) {
    return readError(makeNpy(headerOf("<f4", shape), std::string(4, '\0')));
  };
  EXPECT_NE(shapeError("(-1,)").find("negative extent"), std::string::npos);
  EXPECT_NE(shapeError("(2, -3)").find("negative extent"), std::string::npos);
  EXPECT_NE(shapeError("('a',)").find("non-negative integers"), std::string::npos);
  EXPECT_NE(shapeError("(2.5,)").find("expected ',' or ')'"), std::string::npos);
  EXPECT_NE(shapeError("(1)").find("is not a tuple"), std::string::npos);
  EXPECT_NE(shapeError("[1]").find("is not a tuple"), std::string::npos);
  EXPECT_NE(shapeError("(1,").find("malformed .npy header"), std::string::npos);
  EXPECT_NE(shapeError("(99999999999999999999999,)").find("too large"), std::string::npos);
  EXPECT_NE(shapeError("(4294967296, 4294967296)").find("too many elements"), std::string::npos);
  // A huge but representable shape fails on the data length, before any allocation.
  EXPECT_NE(shapeError("(1000000000000,)").find("too short"), std::string::npos);
  // Python 2 long literals, as old numpy versions wrote them.
  EXPECT_EQ(
      readNpyBytes(makeNpy(headerOf("<f4", "(1L,)"), std::string(4, '\0')), "py2.npy").numel(), 1);
}

TEST(NpyFile, RejectsBoolBytesOtherThanZeroAndOne) {
  EXPECT_EQ(readError(makeNpy(headerOf("|b1", "(3,)"), std::string("\x01\x00\x02", 3))),
            "in.npy: element 2 of the bool data is byte 2, not 0 or 1");
}

TEST(NpyFile, SurvivesCorruptedBytes) {
  // Random corruption either decodes or throws widefuse::Error; nothing else (ASan checks
  // the reads).
  std::mt19937 random(1234);
  std::string original = bytesOf(kNumpyF32Arange2x3);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes = original;
    for (int flips = 1 + trial % 4; flips > 0; --flips)
      bytes[random() % std::min<size_t>(bytes.size(), 140)] = static_cast<char>(random());
    try {
      readNpyBytes(bytes, "fuzz.npy");
    } catch (const Error&) {
    }
  }
}

TEST(NpyFile, ReportsUnreadableAndUnwritableFiles) {
  TempDir dir;
  std::string missing = dir.file("missing.npy");
  EXPECT_EQ(errorOf([&] { readNpy(missing); }),
            "cannot read '" + missing + "': No such file or directory");
  std::string message = errorOf([&] { readNpy(dir.file("")); });
  EXPECT_NE(message.find("cannot read"), std::string::npos) << message;
  std::string nowhere = dir.file("no/such/dir/out.npy");
  EXPECT_EQ(errorOf([&] { writeNpy(nowhere, HostTensor(DataType::Float, {1})); }),
            "cannot write '" + nowhere + "': No such file or directory");
}
