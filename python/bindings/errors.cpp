// lockstep::Error -> the matching lockstep.Error subclass (python/lockstep/_errors.py), carrying
// the code, the node, the op and the message.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

#include "lockstep/error.h"

namespace lockstep::python {

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      nb::object errors = nb::module_::import_("lockstep._errors");
      nb::object exc = errors.attr("_from_native")(error_code_name(e.code()), e.what(), e.node(), e.op(),
                                                   e.message());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
  m.def("error_code_names", [] {
    std::vector<std::string> names;
    for (int c = 0; c <= static_cast<int>(ErrorCode::Internal); ++c)
      names.push_back(error_code_name(static_cast<ErrorCode>(c)));
    return names;
  }, "Every lockstep error code, in declaration order.");
  // For the error-class tests: raise a native error of this code through the translator.
  m.def("_raise_for_testing", [](const std::string& code, const std::string& message, const std::string& node,
                                 const std::string& op) {
    for (int c = 0; c <= static_cast<int>(ErrorCode::Internal); ++c)
      if (code == error_code_name(static_cast<ErrorCode>(c))) throw Error(static_cast<ErrorCode>(c), message, node, op);
    throw Error(ErrorCode::InvalidArgument, "unknown error code '" + code + "'");
  });
}

}  // namespace lockstep::python
