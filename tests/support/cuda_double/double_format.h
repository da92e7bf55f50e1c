#pragma once
/// What the two halves of the CUDA driver double agree on: the "cubin" the NVRTC double
/// produces is kImageMagic followed by the kernel's CUDA source.

#include <string>

namespace widefuse::cuda_double {

/// First bytes of a driver-double image.
inline constexpr const char* kImageMagic = "WIDEFUSE DRIVER DOUBLE IMAGE\n";

/// The name of the first `extern "C" __global__ void NAME(` in `source` ("" when none).
inline std::string entryName(const std::string& source) {
  const std::string marker = "extern \"C\" __global__ void ";
  size_t at = source.find(marker);
  if (at == std::string::npos)
    return {};
  size_t begin = at + marker.size(), end = source.find('(', begin);
  return end == std::string::npos ? std::string() : source.substr(begin, end - begin);
}

/// The type of the single by-value parameter of kernel `name`: the word before `params)` in
/// `extern "C" __global__ void name(const __grid_constant__ TYPE params)` ("" when the
/// signature has another form).
inline std::string parameterType(const std::string& source, const std::string& name) {
  const std::string marker = "extern \"C\" __global__ void " + name + "(const __grid_constant__ ";
  size_t at = source.find(marker);
  if (at == std::string::npos)
    return {};
  size_t begin = at + marker.size(), end = source.find(' ', begin);
  return end == std::string::npos ? std::string() : source.substr(begin, end - begin);
}

} // namespace widefuse::cuda_double
