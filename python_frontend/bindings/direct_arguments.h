#pragma once
/// The arguments of an execute() that its Python checks would pass as they are, found in one
/// C++ walk (direct_arguments): a first call over a traced optimizer's tens of thousands of
/// tensors spent microseconds on each in Python.

#include "ir/host_tensor.h"

namespace widefuse::python {

/// A plain dense torch CPU tensor of its input's dtype and rank, read once by
/// direct_arguments (`_widefuse._DirectTensor`); the executor takes its TensorRef as it is.
struct DirectTensor {
  TensorRef ref;
};

} // namespace widefuse::python
