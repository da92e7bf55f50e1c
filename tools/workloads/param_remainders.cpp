#include "tools/workloads/param_remainders.h"

#include <cstring>

namespace widefuse::optim {

Val reconstructMaster(Val param, Val remainder) {
  Val high = cast(bitcast(param, DataType::Int16), DataType::Int32);
  Val low = cast(remainder, DataType::Int32);
  high = where(lt(low, 0), high - 1, high); // a negative remainder: the high half was rounded up
  return bitcast(bitwise_or(shift_left(high, 16), bitwise_and(low, 0xFFFF)), DataType::Float);
}

std::pair<Val, Val> splitMaster(Val master) {
  Val bits = bitcast(master, DataType::Int32);
  Val low = cast(bitwise_and(bits, 0xFFFF), DataType::Int16); // wraps: top bit set is negative
  Val high = shift_right(bits, 16);
  high = where(lt(low, 0), high + 1, high); // round the high half up (ties away from zero)
  return {bitcast(cast(high, DataType::Int16), DataType::BFloat16), low};
}

SplitMaster splitMasterValue(float master) {
  uint32_t bits;
  std::memcpy(&bits, &master, 4);
  auto low = uint16_t(bits & 0xFFFF);
  auto high = uint16_t(bits >> 16);
  if (low & 0x8000)
    ++high; // wraps 0xFFFF to 0
  SplitMaster split;
  split.paramBits = high;
  std::memcpy(&split.remainder, &low, 2);
  return split;
}

float reconstructMasterValue(uint16_t paramBits, int16_t remainder) {
  uint16_t high = paramBits;
  if (remainder < 0)
    --high; // wraps 0 to 0xFFFF
  uint16_t low;
  std::memcpy(&low, &remainder, 2);
  uint32_t bits = uint32_t(high) << 16 | low;
  float master;
  std::memcpy(&master, &bits, 4);
  return master;
}

} // namespace widefuse::optim
