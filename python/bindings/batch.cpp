// Batches of a Piper voice (src/voices/piper_batch.h): lockstep.piper's synthesize_batch and the
// corpus tool stand on these.
#include <memory>

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "voices/piper.h"
#include "voices/piper_batch.h"

namespace lockstep::python {

void bind_batch(nb::module_& m) {
  // A multi-speaker voice's speaker table (None without one), and the voice with its speaker lookup
  // replaced by an input `speaker_embedding` (voices/piper.h).
  m.def("voice_speaker_embeddings", [](const NativeModel& voice) -> nb::object {
    Tensor t = voices::speaker_embeddings(voice.model);
    return t.defined() ? to_numpy(t.clone()) : nb::none();
  });
  m.def("voice_with_speaker_embedding_input", [](const NativeModel& voice) {
    return NativeModel{voices::with_speaker_embedding_input(voice.model), voice.path};
  });
  nb::class_<voices::PiperBatcher>(m, "NativeBatcher")
      .def_static(
          "create",
          [](const NativeModel& voice, const std::string& backend, nb::handle options, int lanes) {
            Options o = options_from_dict(options);
            nb::gil_scoped_release release;
            return std::make_shared<voices::PiperBatcher>(voice.model, backend, o, lanes);
          },
          nb::arg("voice"), nb::arg("backend"), nb::arg("options"), nb::arg("lanes") = 0)
      .def_prop_ro("lanes", &voices::PiperBatcher::lanes)
      // The padded batch's inputs in the voice's order and one seed per row; per row, a list of
      // the voice's outputs or the string saying why that row failed.
      .def(
          "run",
          [](voices::PiperBatcher& self, nb::list arrays, std::vector<uint64_t> seeds) {
            std::vector<Tensor> tensors;
            for (size_t i = 0; i < arrays.size(); ++i) tensors.push_back(to_tensor(arrays[i], "input " + std::to_string(i)));
            std::vector<voices::BatchResult> results;
            {
              nb::gil_scoped_release release;
              results = self.run(tensors, seeds);
            }
            nb::list out;
            for (voices::BatchResult& r : results) {
              if (!r.error.empty()) {
                out.append(nb::str(r.error.c_str()));
                continue;
              }
              nb::list outputs;
              for (Tensor& t : r.outputs) outputs.append(to_numpy(std::move(t)));
              out.append(outputs);
            }
            return out;
          },
          nb::arg("inputs"), nb::arg("seeds"));
}

}  // namespace lockstep::python
