// `lockstep._lockstep`: the extension under the pure-Python package python/lockstep.
#include "bindings.h"

NB_MODULE(_lockstep, m) {
  m.doc() = "lockstep's C++ library, for the lockstep package (import lockstep, not this)";
  lockstep::python::bind_errors(m);
  lockstep::python::bind_model(m);
  lockstep::python::bind_tools(m);
  lockstep::python::bind_stream(m);
  lockstep::python::bind_batch(m);
}
