#pragma once
/// Small .npy files written by real NumPy, embedded byte for byte so that the tests check
/// compatibility with NumPy itself rather than with our own writer.

#include <cstddef>
#include <string>

namespace widefuse::npy_samples {

// Bytes written by NumPy 2.4.6 (`numpy.save`, or `numpy.lib.format.write_array` for the
// version 2.0 and 3.0 files) and ml_dtypes 0.6.0, generated once and embedded here.

/// np.arange(6, dtype='<f4').reshape(2, 3)
inline constexpr char kNumpyF32Arange2x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    "                                                          \x0a\x00\x00\x00\x00\x00"
    "\x00\x80\x3f\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@";
/// np.array(-7, dtype='<i8')
inline constexpr char kNumpyI64Scalar[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }    "
    "                                                          \x0a\xf9\xff\xff\xff\xff"
    "\xff\xff\xff";
/// np.array([True, False, True])
inline constexpr char kNumpyBoolVector[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }  "
    "                                                          \x0a\x01\x00\x01";
/// np.zeros((0, 3), dtype='<f2')
inline constexpr char kNumpyF16Empty0x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (0, 3), }"
    "                                                          \x0a";
/// np.array([0x3f80], dtype='<u2'): the bits of bfloat16 1.0
inline constexpr char kNumpyU2OneElement[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }  "
    "                                                          \x0a\x80\x3f";
/// np.array([1, -2], dtype='|i1'), format version 2.0
inline constexpr char kNumpyI8V2[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '|i1', 'fortran_order': False, 'shape': ("
    "2,), }                                                          \x0a\x01\xfe";
/// np.array([7], dtype='<u4'), format version 3.0
inline constexpr char kNumpyU4V3[] =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<u4', 'fortran_order': False, 'shape': ("
    "1,), }                                                          \x0a\x07\x00\x00\x00";
/// np.array([1.5], dtype='>f8')
inline constexpr char kNumpyF8BigEndian[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }  "
    "                                                          \x0a\x3f\xf8\x00\x00\x00"
    "\x00\x00\x00";
/// np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3))
inline constexpr char kNumpyF4Fortran[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), } "
    "                                                          \x0a\x00\x00\x00\x00\x00"
    "\x00@@\x00\x00\x80\x3f\x00\x00\x80@\x00\x00\x00@\x00\x00\xa0@";
/// np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16)
inline constexpr char kMlDtypesBf16[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }  "
    "                                                          \x0a\x80\x3f\x00@";
/// np.array([1+2j], dtype='<c8')
inline constexpr char kNumpyC8[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }  "
    "                                                          \x0a\x00\x00\x80\x3f\x00"
    "\x00\x00@";

/// The bytes of a literal, embedded NULs included.
template <size_t N> std::string bytesOf(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

} // namespace widefuse::npy_samples
