// The pieces of the extension module `lockstep._lockstep`, one bind_* per concern.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "lockstep/lockstep.h"

namespace lockstep::python {

namespace nb = nanobind;

// A loaded model and where it came from (runners and reducers read a file).
struct NativeModel {
  Model model;
  std::string path;  // "" when loaded from bytes or built in
};

void bind_errors(nb::module_& m);
void bind_model(nb::module_& m);
void bind_tools(nb::module_& m);
void bind_stream(nb::module_& m);
void bind_batch(nb::module_& m);

// Options from the keyword arguments of lockstep.compile (threads=, input_shapes=, fuse=, ...);
// an unknown key is an InvalidArgument error naming it.
Options options_from_dict(nb::handle options);

// The model's graph inputs/outputs as lists of {"name", "shape", "dtype"}; symbolic dims are
// their dim_param names, unknown dims None.
nb::list describe_values(const ir::Graph& graph, bool inputs);

}  // namespace lockstep::python
