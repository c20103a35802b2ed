// Streaming a Piper voice inside a sentence (src/voices/piper_stream.h): lockstep.piper's
// synthesize(..., stream=True) stands on these.
#include <memory>
#include <mutex>

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "voices/piper_stream.h"

namespace lockstep::python {
namespace {

struct NativeStreamer {
  std::unique_ptr<voices::PiperStreamer> streamer;
  std::mutex mutex;  // one window at a time: the executables own one arena each
};

// One sentence in progress; keeps its streamer alive.
struct NativeStream {
  std::shared_ptr<NativeStreamer> owner;
  std::unique_ptr<voices::PiperStream> stream;
};

}  // namespace

void bind_stream(nb::module_& m) {
  nb::class_<NativeStream>(m, "NativeStream")
      .def_prop_ro("frames", [](const NativeStream& s) { return s.stream->frames(); })
      .def_prop_ro("durations", [](const NativeStream& s) -> nb::object {
        return s.stream->durations().defined() ? to_numpy(s.stream->durations()) : nb::none();
      })
      // The next window's float32 samples, None after the last.
      .def("next", [](NativeStream& s) -> nb::object {
        Tensor samples;
        bool more;
        {
          nb::gil_scoped_release release;
          std::lock_guard<std::mutex> lock(s.owner->mutex);
          more = s.stream->next(&samples);
        }
        return more ? to_numpy(std::move(samples)) : nb::none();
      });

  nb::class_<NativeStreamer>(m, "NativeStreamer")
      .def_static(
          "create",
          [](const NativeModel& voice, const std::string& backend, nb::handle options, int64_t first, int64_t largest,
             int64_t context, bool window_flow) {
            auto s = std::make_shared<NativeStreamer>();
            voices::StreamWindows w;
            w.first = first;
            w.largest = largest;
            w.context = context;
            w.window_flow = window_flow;
            Options o = options_from_dict(options);
            nb::gil_scoped_release release;
            s->streamer = std::make_unique<voices::PiperStreamer>(voice.model, backend, o, w);
            return s;
          },
          nb::arg("voice"), nb::arg("backend"), nb::arg("options"), nb::arg("first") = 48, nb::arg("largest") = 192,
          nb::arg("context") = 48, nb::arg("window_flow") = false)
      .def_prop_ro("cut", [](const NativeStreamer& s) { return s.streamer->cut(); })
      .def_prop_ro("phase", [](const NativeStreamer& s) { return s.streamer->phase(); })
      .def_prop_ro("reach", [](const NativeStreamer& s) { return s.streamer->reach(); })
      .def_prop_ro("context", [](const NativeStreamer& s) { return s.streamer->windows().context; })
      // Runs the front (text encoder, durations, flow) on the voice's inputs; the sentence's
      // windows come from the returned stream's next().
      .def(
          "start",
          [](const std::shared_ptr<NativeStreamer>& self, nb::list arrays, uint64_t seed) {
            std::vector<Tensor> tensors;
            for (size_t i = 0; i < arrays.size(); ++i) tensors.push_back(to_tensor(arrays[i], "input " + std::to_string(i)));
            auto out = std::make_unique<NativeStream>();
            out->owner = self;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(self->mutex);
              RunOptions run;
              run.seed = seed;
              out->stream = self->streamer->start(tensors, run);
              tensors.clear();
            }
            return out;
          },
          nb::arg("inputs"), nb::arg("seed") = 0);
}

}  // namespace lockstep::python
