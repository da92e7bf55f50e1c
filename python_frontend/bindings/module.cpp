// widefuse._widefuse: the C++ half of the Python package. The public API lives in the
// pure-Python modules of python_frontend/widefuse, which call into this one.
#include "python_frontend/bindings/bindings.h"

NB_MODULE(_widefuse, module) {
  module.doc() = "widefuse's C++ core: fusion builder, text form, segmenter report and executor.";
  widefuse::python::bindDefinition(module);
  widefuse::python::bindExecutor(module);
  widefuse::python::bindStructureKey(module);
  widefuse::python::bindTracedValues(module);
  widefuse::python::bindArgumentReader(module);
  widefuse::python::bindBoundState(module);
}
