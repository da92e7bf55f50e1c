#include "tools/npy_file.h"

#include "ir/error.h"

#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <limits>

namespace widefuse {
namespace {

constexpr llvm::StringLiteral kMagic("\x93NUMPY");
/// numpy pads the header so that the data starts on this boundary (for memory mapping).
constexpr size_t kHeaderAlignment = 64;
/// numpy leaves room after the header dict for the first extent to grow to this many digits.
constexpr size_t kGrowthAxisMaxDigits = 21;

/// One supported NumPy type code (descr without its byte-order character).
struct DescrCode {
  llvm::StringLiteral code;
  DataType dtype;
};

constexpr DescrCode kDescrCodes[] = {
    {"b1", DataType::Bool},           {"i1", DataType::Int8},   {"i2", DataType::Int16},
    {"i4", DataType::Int32},          {"i8", DataType::Int64},  {"u1", DataType::UInt8},
    {"u2", DataType::UInt16},         {"u4", DataType::UInt32}, {"f2", DataType::Half},
    {"f4", DataType::Float},          {"f8", DataType::Double}, {"c8", DataType::ComplexFloat},
    {"c16", DataType::ComplexDouble},
};

/// The header dict's entries; each is empty until its key is seen.
struct HeaderEntries {
  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<llvm::SmallVector<int64_t, 4>> shape;
};

/// Parses the Python dict literal numpy writes as the header. Only the subset numpy produces
/// is accepted: string keys, a string descr, True/False, and a tuple of non-negative integers.
/// Every access is bounds-checked; the text comes from an untrusted file.
class HeaderParser {
public:
  HeaderParser(llvm::StringRef text, llvm::StringRef file) : text_(text), file_(file) {}

  HeaderEntries parse() {
    skipSpace();
    if (!consume('{'))
      error("the header is not a Python dict (it does not start with '{{')");
    HeaderEntries entries;
    skipSpace();
    while (!consume('}')) {
      parseEntry(entries);
      skipSpace();
      if (consume(','))
        skipSpace();
      else if (peek() != '}')
        error("expected ',' or '}}' after the value of a key");
    }
    skipSpace();
    if (pos_ != text_.size())
      error("unexpected text after the header dict");
    return entries;
  }

private:
  [[noreturn]] void error(llvm::StringRef what) {
    fail("{}: malformed .npy header: {} (at header offset {})", file_.str(), what.str(), pos_);
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }

  void parseEntry(HeaderEntries& entries) {
    if (peek() != '\'' && peek() != '"')
      error("expected a quoted key");
    std::string key = parseString();
    skipSpace();
    if (!consume(':'))
      error(fmt::format("expected ':' after key '{}'", key));
    skipSpace();
    if (key == "descr") {
      if (entries.descr)
        error("key 'descr' appears twice");
      if (peek() == '[')
        fail("{}: structured dtypes (a list descr) are not supported", file_.str());
      if (peek() != '\'' && peek() != '"')
        error("the value of 'descr' is not a string");
      entries.descr = parseString();
    } else if (key == "fortran_order") {
      if (entries.fortranOrder)
        error("key 'fortran_order' appears twice");
      entries.fortranOrder = parseBool();
    } else if (key == "shape") {
      if (entries.shape)
        error("key 'shape' appears twice");
      entries.shape = parseShape();
    } else {
      error(fmt::format("unexpected key '{}' (a .npy header has only 'descr', "
                        "'fortran_order' and 'shape')",
                        key));
    }
  }

  std::string parseString() {
    char quote = text_[pos_++];
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\')
        error("escape sequences in header strings are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size())
      error("unterminated string");
    return text_.slice(start, pos_++).str();
  }

  bool parseBool() {
    if (text_.substr(pos_).startswith("True")) {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_).startswith("False")) {
      pos_ += 5;
      return false;
    }
    error("the value of 'fortran_order' is not True or False");
  }

  llvm::SmallVector<int64_t, 4> parseShape() {
    if (!consume('('))
      error("the value of 'shape' is not a tuple");
    llvm::SmallVector<int64_t, 4> shape;
    skipSpace();
    bool sawComma = false;
    while (!consume(')')) {
      shape.push_back(parseExtent());
      skipSpace();
      sawComma = consume(',');
      skipSpace();
      if (!sawComma && peek() != ')')
        error("expected ',' or ')' in 'shape'");
    }
    // Python's `(3)` is the integer 3, not a tuple; numpy rejects it too.
    if (shape.size() == 1 && !sawComma)
      error("the value of 'shape' is not a tuple (a 1-d shape is written '(n,)')");
    return shape;
  }

  int64_t parseExtent() {
    if (peek() == '-')
      error("negative extent in 'shape'");
    if (peek() < '0' || peek() > '9')
      error("the extents in 'shape' must be non-negative integers");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        error("an extent in 'shape' is too large");
      value = value * 10 + digit;
    }
    consume('L'); // Python 2 long literals, as old numpy versions wrote them
    return value;
  }

  llvm::StringRef text_;
  llvm::StringRef file_;
  size_t pos_ = 0;
};

/// Maps a descr to a data type, or throws naming what is unsupported.
DataType dataTypeOfDescr(llvm::StringRef descr, llvm::StringRef file) {
  if (descr.size() >= 2) {
    char order = descr.front();
    llvm::StringRef code = descr.drop_front();
    for (const DescrCode& entry : kDescrCodes) {
      if (entry.code != code)
        continue;
      bool singleByte = byteSize(entry.dtype) == 1;
      if (order == '<' || (singleByte && (order == '|' || order == '>' || order == '=')))
        return entry.dtype;
      if (order == '>')
        fail("{}: big-endian data (descr '{}') is not supported; save it little-endian, e.g. "
             "a.astype('<{}')",
             file.str(), descr.str(), code.str());
    }
  }
  if (descr == "<V2" || descr == "|V2")
    fail("{}: unsupported dtype descr '{}' (raw 2-byte records, which is how ml_dtypes saves "
         "bfloat16); save bfloat16 as its uint16 bits: a.view(numpy.uint16)",
         file.str(), descr.str());
  fail("{}: unsupported dtype descr '{}' (supported: |b1, |i1, <i2, <i4, <i8, |u1, <u2, <u4, "
       "<f2, <f4, <f8, <c8, <c16)",
       file.str(), descr.str());
}

/// Reads an unsigned little-endian integer of `width` bytes at `offset` (bounds already checked).
uint32_t readLittleEndian(llvm::StringRef bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = width; i-- > 0;)
    value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

/// Checks the magic string and version and returns the header text.
llvm::StringRef headerText(llvm::StringRef bytes, llvm::StringRef file, NpyHeader& header) {
  if (bytes.empty())
    fail("{}: empty file, not a .npy file", file.str());
  if (!bytes.startswith(kMagic))
    fail("{}: not a .npy file (bad magic string; a .npy file starts with \\x93NUMPY)", file.str());
  if (bytes.size() < kMagic.size() + 2)
    fail("{}: truncated .npy header (the file ends inside the version number)", file.str());
  unsigned major = static_cast<uint8_t>(bytes[kMagic.size()]);
  unsigned minor = static_cast<uint8_t>(bytes[kMagic.size() + 1]);
  if (major < 1 || major > 3 || minor != 0)
    fail("{}: unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)", file.str(), major,
         minor);
  header.majorVersion = major;
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t lengthOffset = kMagic.size() + 2;
  if (bytes.size() < lengthOffset + lengthWidth)
    fail("{}: truncated .npy header (the file ends inside the header length)", file.str());
  size_t headerLength = readLittleEndian(bytes, lengthOffset, lengthWidth);
  size_t headerStart = lengthOffset + lengthWidth;
  if (bytes.size() - headerStart < headerLength)
    fail("{}: truncated .npy header (it says {} bytes but the file has {} after the prefix)",
         file.str(), headerLength, bytes.size() - headerStart);
  header.dataOffset = headerStart + headerLength;
  return bytes.substr(headerStart, headerLength);
}

/// Number of data bytes a shape needs, or an Error when it overflows.
size_t dataByteCount(llvm::ArrayRef<int64_t> shape, DataType dtype, llvm::StringRef file) {
  int64_t count = byteSize(dtype);
  for (int64_t extent : shape)
    if (__builtin_mul_overflow(count, extent, &count))
      fail("{}: shape ({}) has too many elements", file.str(),
           fmt::join(shape.begin(), shape.end(), ", "));
  return static_cast<size_t>(count);
}

/// Rejects bool bytes other than 0 and 1, which would be undefined behaviour as C++ bools.
void checkBoolBytes(llvm::StringRef data, llvm::StringRef file) {
  for (size_t i = 0; i < data.size(); ++i)
    if (static_cast<uint8_t>(data[i]) > 1)
      fail("{}: element {} of the bool data is byte {}, not 0 or 1", file.str(), i,
           static_cast<unsigned>(static_cast<uint8_t>(data[i])));
}

/// Python's repr of a shape tuple: `()`, `(3,)`, `(2, 3)`.
std::string shapeRepr(llvm::ArrayRef<int64_t> shape) {
  if (shape.size() == 1)
    return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape.begin(), shape.end(), ", "));
}

/// Magic, version, length and padded header, as numpy's _wrap_header lays them out.
std::string wrapHeader(const std::string& dict) {
  size_t textLength = dict.size() + 1; // the final newline
  bool fitsVersion1 = true;
  size_t lengthWidth = 2;
  size_t padding =
      kHeaderAlignment - (kMagic.size() + 2 + lengthWidth + textLength) % kHeaderAlignment;
  if (textLength + padding > std::numeric_limits<uint16_t>::max()) {
    fitsVersion1 = false;
    lengthWidth = 4;
    padding = kHeaderAlignment - (kMagic.size() + 2 + lengthWidth + textLength) % kHeaderAlignment;
  }
  size_t headerLength = textLength + padding;
  if (headerLength > std::numeric_limits<uint32_t>::max())
    fail("cannot write a .npy header of {} bytes", headerLength);
  std::string out(kMagic);
  out.push_back(static_cast<char>(fitsVersion1 ? 1 : 2));
  out.push_back(0);
  for (size_t i = 0; i < lengthWidth; ++i)
    out.push_back(static_cast<char>((headerLength >> (8 * i)) & 0xff));
  out += dict;
  out.append(padding, ' ');
  out.push_back('\n');
  return out;
}

} // namespace

llvm::StringRef npyDescr(DataType dtype) {
  switch (dtype) {
  case DataType::Bool:
    return "|b1";
  case DataType::Int8:
    return "|i1";
  case DataType::Int16:
    return "<i2";
  case DataType::Int32:
    return "<i4";
  case DataType::Int64:
    return "<i8";
  case DataType::UInt8:
  case DataType::Float8_e4m3fn: // NumPy has no fp8: stored as their bits, as bf16
  case DataType::Float8_e5m2:
  case DataType::Float8_e8m0fnu:
    return "|u1";
  case DataType::UInt16:
  case DataType::BFloat16:
    return "<u2";
  case DataType::UInt32:
    return "<u4";
  case DataType::Half:
    return "<f2";
  case DataType::Float:
    return "<f4";
  case DataType::Double:
    return "<f8";
  case DataType::ComplexFloat:
    return "<c8";
  case DataType::ComplexDouble:
    return "<c16";
  }
  WF_ASSERT(false, "unknown data type {}", static_cast<int>(dtype));
}

NpyHeader parseNpyHeader(llvm::StringRef bytes, llvm::StringRef nameForMessages,
                         std::optional<DataType> expected) {
  NpyHeader header;
  llvm::StringRef file = nameForMessages;
  HeaderEntries entries = HeaderParser(headerText(bytes, file, header), file).parse();
  if (!entries.descr)
    fail("{}: malformed .npy header: no 'descr' key", file.str());
  if (!entries.fortranOrder)
    fail("{}: malformed .npy header: no 'fortran_order' key", file.str());
  if (!entries.shape)
    fail("{}: malformed .npy header: no 'shape' key", file.str());
  header.descr = *entries.descr;
  header.dtype = dataTypeOfDescr(header.descr, file);
  header.shape = std::move(*entries.shape);
  // A Fortran-ordered array with at most one extent > 1 has the same bytes as in C order, but
  // numpy only writes fortran_order True for real column-major data, so reject it plainly.
  if (*entries.fortranOrder)
    fail("{}: Fortran-ordered data (fortran_order: True) is not supported; save a C-ordered "
         "array, e.g. numpy.ascontiguousarray(a)",
         file.str());
  if (expected == DataType::BFloat16 && header.dtype == DataType::UInt16)
    header.dtype = DataType::BFloat16;
  if (expected && isFloat8(*expected) && header.dtype == DataType::UInt8)
    header.dtype = *expected;
  if (expected && *expected != header.dtype)
    fail("{}: holds {} data (descr '{}') but {} was expected{}", file.str(),
         shortName(header.dtype).str(), header.descr, shortName(*expected).str(),
         *expected == DataType::BFloat16 ? " (bf16 is stored as its uint16 bits, descr '<u2')"
         : isFloat8(*expected)           ? " (fp8 is stored as its uint8 bits, descr '|u1')"
                                         : "");
  return header;
}

HostTensor readNpyBytes(llvm::StringRef bytes, llvm::StringRef nameForMessages,
                        std::optional<DataType> expected) {
  NpyHeader header = parseNpyHeader(bytes, nameForMessages, expected);
  size_t needed = dataByteCount(header.shape, header.dtype, nameForMessages);
  llvm::StringRef data = bytes.substr(header.dataOffset);
  if (data.size() != needed)
    fail("{}: the data is too {}: shape {} of {} needs {} bytes, the file has {}",
         nameForMessages.str(), data.size() < needed ? "short" : "long", shapeRepr(header.shape),
         shortName(header.dtype).str(), needed, data.size());
  if (header.dtype == DataType::Bool)
    checkBoolBytes(data, nameForMessages);
  HostTensor tensor(header.dtype, header.shape);
  if (!data.empty())
    std::memcpy(tensor.data(), data.data(), data.size());
  return tensor;
}

HostTensor readNpy(llvm::StringRef path, std::optional<DataType> expected) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fail("cannot read '{}': {}", path.str(), buffer.getError().message());
  return readNpyBytes((*buffer)->getBuffer(), path, expected);
}

std::string npyBytes(const HostTensor& tensor) {
  llvm::ArrayRef<int64_t> shape = tensor.shape();
  WF_ASSERT(tensor.byteSize() == static_cast<size_t>(tensor.numel()) * byteSize(tensor.dtype()),
            "tensor of shape {} has {} bytes", shapeRepr(shape), tensor.byteSize());
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npyDescr(tensor.dtype()).str(), shapeRepr(shape));
  if (!shape.empty())
    dict.append(kGrowthAxisMaxDigits - fmt::formatted_size("{}", shape[0]), ' ');
  std::string out = wrapHeader(dict);
  if (tensor.byteSize() > 0)
    out.append(static_cast<const char*>(tensor.data()), tensor.byteSize());
  return out;
}

void writeNpy(llvm::StringRef path, const HostTensor& tensor) {
  std::string bytes = npyBytes(tensor);
  std::error_code code;
  llvm::raw_fd_ostream stream(path, code, llvm::sys::fs::OF_None);
  if (code)
    fail("cannot write '{}': {}", path.str(), code.message());
  stream << bytes;
  stream.close();
  if (stream.has_error()) {
    std::string message = stream.error().message();
    stream.clear_error();
    fail("cannot write '{}': {}", path.str(), message);
  }
}

} // namespace widefuse
