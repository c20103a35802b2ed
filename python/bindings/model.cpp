// Models, compilation and runs: lockstep.compile / CompiledModel / InferenceSession stand on these.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "dynamic/executable.h"
#include "inputs.h"
#include "ir/graph.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "zoo/seed_flow.h"

namespace lockstep::python {
namespace {

// A compiled model. Runs are serialised: an Executable owns one arena.
struct NativeCompiled {
  std::shared_ptr<Executable> exe;
  std::shared_ptr<const NativeModel> model;
  std::string backend;
  std::mutex mutex;
};

template <class T>
T get_or(nb::dict d, const char* key, T fallback) {
  return d.contains(key) ? nb::cast<T>(d[key]) : fallback;
}

}  // namespace

Options options_from_dict(nb::handle given) {
  Options o;
  if (given.is_none()) return o;
  nb::dict d = nb::borrow<nb::dict>(given);
  static const char* known[] = {"threads", "input_shapes", "opt_bisect_limit", "print_after_all", "fuse",
                                "observe", "safe", "max_memory", "precision", "f64_accumulate"};
  for (auto [key, value] : d) {
    std::string k = nb::cast<std::string>(nb::str(key));
    bool ok = false;
    for (const char* name : known) ok |= k == name;
    if (!ok)
      throw Error(ErrorCode::InvalidArgument,
                  "unknown option '" + k + "' (known: threads, input_shapes, opt_bisect_limit, print_after_all, fuse, "
                  "observe, safe, max_memory, precision, f64_accumulate)");
  }
  o.threads = get_or<int>(d, "threads", 0);
  if (d.contains("input_shapes") && !d["input_shapes"].is_none())
    o.input_shapes = nb::cast<std::map<std::string, Shape>>(d["input_shapes"]);
  o.opt_bisect_limit = get_or<int>(d, "opt_bisect_limit", -1);
  o.print_after_all = get_or<bool>(d, "print_after_all", false);
  o.fuse = get_or<bool>(d, "fuse", true);
  if (d.contains("observe")) o.observe = nb::cast<std::vector<std::string>>(d["observe"]);
  o.safe = get_or<bool>(d, "safe", false);
  o.max_memory_bytes = get_or<int64_t>(d, "max_memory", 0);
  o.precision = get_or<std::string>(d, "precision", "fp32");
  // A list of node-name prefixes ([] for none); absent or None: the model's default.
  if (d.contains("f64_accumulate") && !d["f64_accumulate"].is_none())
    o.f64_accumulate = nb::cast<std::vector<std::string>>(d["f64_accumulate"]);
  if (o.threads < 0) throw Error(ErrorCode::InvalidArgument, "threads must be >= 0 (given " + std::to_string(o.threads) + ")");
  if (o.max_memory_bytes < 0) throw Error(ErrorCode::InvalidArgument, "max_memory must be >= 0");
  return o;
}

nb::list describe_values(const ir::Graph& graph, bool inputs) {
  nb::list out;
  for (ir::ValueId id : inputs ? graph.inputs : graph.outputs) {
    const ir::Value& v = graph.value(id);
    nb::list shape;
    for (size_t i = 0; i < v.shape.size(); ++i) {
      const std::string param = i < v.dim_params.size() ? v.dim_params[i] : "";
      if (!param.empty()) shape.append(nb::str(param.c_str()));
      else if (v.shape[i] < 0) shape.append(nb::none());
      else shape.append(v.shape[i]);
    }
    nb::dict d;
    d["name"] = v.name;
    d["shape"] = shape;
    d["dtype"] = dtype_name(v.dtype);  // numpy's names for the five dtypes
    d["shape_known"] = v.shape_known() || !v.shape.empty();
    out.append(d);
  }
  return out;
}

void bind_model(nb::module_& m) {
  nb::class_<NativeModel>(m, "NativeModel")
      .def_static("load", [](const std::string& path) {
        nb::gil_scoped_release release;
        return NativeModel{Model::load(path), std::filesystem::absolute(path).string()};
      })
      .def_static("from_bytes", [](nb::bytes data, const std::string& base_dir) {
        std::string_view bytes(data.c_str(), data.size());
        std::string copy(bytes);
        nb::gil_scoped_release release;
        return NativeModel{Model::from_graph(onnx::import_model_bytes(copy, base_dir)), ""};
      })
      .def_static("embedded_default", [] { return NativeModel{cli::load_model_or_default(""), ""}; })
      // The report's inputs of the embedded default (what the CLI feeds it when none are given).
      .def_static("embedded_default_inputs", [] {
        nb::list arrays;
        for (Tensor& t : zoo::seed_flow_inputs()) arrays.append(to_numpy(std::move(t)));
        return arrays;
      })
      .def_prop_ro("path", [](const NativeModel& m) { return m.path; })
      .def_prop_ro("name", [](const NativeModel& m) { return m.model.graph().name; })
      .def_prop_ro("opset", [](const NativeModel& m) { return m.model.graph().opset; })
      .def_prop_ro("node_count", [](const NativeModel& m) { return m.model.graph().nodes.size(); })
      .def("inputs", [](const NativeModel& m) { return describe_values(m.model.graph(), true); })
      .def("outputs", [](const NativeModel& m) { return describe_values(m.model.graph(), false); })
      .def("node_names", [](const NativeModel& m) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& n : m.model.graph().nodes) out.emplace_back(n.name, ir::op_name(n.op));
        return out;
      })
      // The ONNX names of a node's output values, by node name (lockstep.piper finds a voice's
      // durations this way); an unknown node is an error naming it.
      .def("node_output_names", [](const NativeModel& m, const std::string& node_name) {
        const ir::Graph& g = m.model.graph();
        for (const auto& n : g.nodes)
          if (n.name == node_name) {
            std::vector<std::string> out;
            for (ir::ValueId v : n.outputs) out.push_back(g.value(v).name);
            return out;
          }
        throw Error(ErrorCode::InvalidArgument, "invalid argument: no node named '" + node_name + "' in the model");
      })
      // The model with the named values (ONNX tensor names) as more outputs after its own: an
      // intermediate value, computed by the same compiled model, returned with the rest (a voice's
      // durations for alignments, without rewriting the file). An unknown name is an error naming it.
      .def("with_outputs", [](const NativeModel& m, const std::vector<std::string>& names) {
        ir::Graph g = m.model.graph();
        for (const auto& name : names) {
          const ir::ValueId v = g.find_value(name);
          if (v == ir::kNoValue)
            throw Error(ErrorCode::InvalidArgument, "invalid argument: no value named '" + name + "' in the model");
          if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
        }
        return NativeModel{Model::from_graph(std::move(g)), ""};
      })
      .def("needs_run_time_shapes", [](const NativeModel& m, nb::handle options) {
        return dynamic::needs_run_time_shapes(m.model.graph(), options_from_dict(options));
      })
      .def("save", [](const NativeModel& m, const std::string& path) {
        nb::gil_scoped_release release;
        onnx::export_model(m.model.graph(), path);
      })
      // Inputs drawn as the CLI draws them for a seed (uniform [-1,1] floats, zero integers), with
      // the shapes bound for symbolic dims.
      .def("draw_inputs", [](const NativeModel& m, uint64_t seed) {
        cli::InputArgs args;
        args.seed = seed;
        cli::ModelInputs drawn = cli::gather_inputs(m.model.graph(), args);
        nb::list arrays;
        for (Tensor& t : drawn.tensors) arrays.append(to_numpy(std::move(t)));
        return arrays;
      });

  nb::class_<NativeCompiled>(m, "NativeCompiled")
      .def_prop_ro("backend", [](const NativeCompiled& c) { return c.backend; })
      .def_prop_ro("last_device_ms", [](const NativeCompiled& c) { return c.exe->last_device_ms(); })
      .def("kernel_implementations", [](const NativeCompiled& c) { return c.exe->kernel_implementations(); })
      .def(
          "run",
          [](NativeCompiled& c, nb::list arrays, uint64_t seed) {
            const auto& inputs = c.model->model.graph().inputs;
            std::vector<Tensor> tensors;
            for (size_t i = 0; i < arrays.size(); ++i)
              tensors.push_back(to_tensor(arrays[i], "input '" +
                                                         (i < inputs.size() ? c.model->model.graph().value(inputs[i]).name
                                                                            : std::to_string(i)) + "'"));
            std::vector<Tensor> outputs;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(c.mutex);
              RunOptions run;
              run.seed = seed;
              outputs = c.exe->run(tensors, run);
              tensors.clear();  // drop the shared inputs while the GIL is free to take
            }
            nb::list out;
            for (Tensor& t : outputs) out.append(to_numpy(std::move(t)));
            return out;
          },
          nb::arg("inputs"), nb::arg("seed") = 0)
      // Outputs left on the GPU as DLPack-capable arrays (cuda); None where the executable has no
      // device. The run synchronized, so a consumer on any stream reads finished data.
      .def(
          "run_device",
          [](NativeCompiled& c, nb::list arrays, uint64_t seed) -> nb::object {
            std::vector<Tensor> tensors;
            for (size_t i = 0; i < arrays.size(); ++i) tensors.push_back(to_tensor(arrays[i], "input"));
            std::optional<std::vector<DeviceTensor>> outputs;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(c.mutex);
              RunOptions run;
              run.seed = seed;
              outputs = c.exe->run_on_device(tensors, run);
              tensors.clear();
            }
            if (!outputs) return nb::none();
            nb::list out;
            for (DeviceTensor& t : *outputs) out.append(to_device_array(std::move(t)));
            return out;
          },
          nb::arg("inputs"), nb::arg("seed") = 0)
      // The C++ call alone, `repeats` times on inputs converted once: seconds per run (the baseline
      // of bench/python_overhead.py, which times run() from Python against it).
      .def("time_native_runs", [](NativeCompiled& c, nb::list arrays, int repeats) {
        std::vector<Tensor> tensors;
        for (size_t i = 0; i < arrays.size(); ++i) tensors.push_back(to_tensor(arrays[i], "input"));
        nb::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(c.mutex);
        c.exe->run(tensors);  // warm
        auto start = std::chrono::steady_clock::now();
        for (int r = 0; r < repeats; ++r) c.exe->run(tensors);
        std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        tensors.clear();
        return took.count() / std::max(1, repeats);
      });

  m.def(
      "compile",
      [](std::shared_ptr<NativeModel> model, const std::string& backend, nb::handle options) {
        Options o = options_from_dict(options);
        auto c = std::make_unique<NativeCompiled>();
        {
          nb::gil_scoped_release release;
          c->exe = lockstep::compile(model->model, backend, o);
        }
        c->model = model;
        c->backend = backend;
        return c;
      },
      nb::arg("model"), nb::arg("backend"), nb::arg("options").none() = nb::none());

  m.def("backends", [] {
    std::vector<std::tuple<std::string, bool, std::string>> out;
    for (const Backend* b : all_backends()) {
      std::string why;
      bool ok = b->available(&why);
      out.emplace_back(b->name(), ok, why);
    }
    return out;
  });
  m.def("conversion_stats", [] {
    const ConversionStats& s = conversion_stats();
    nb::dict d;
    d["shared"] = s.shared;
    d["copied"] = s.copied;
    d["bytes_copied"] = s.bytes_copied;
    return d;
  });
  m.def("_roundtrip_for_testing", [](nb::handle array) { return to_numpy(to_tensor(array, "array")); });
}

}  // namespace lockstep::python
