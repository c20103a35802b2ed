#include "diff/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace lockstep::diff {

namespace {

std::string sci(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string local_cell(const NodeRow& row) { return row.local_error ? sci(*row.local_error) : "-"; }

std::vector<std::string> cells(const NodeRow& row) {
  return {std::to_string(row.index),
          row.onnx_index > 0 ? std::to_string(row.onnx_index) : "-",
          row.onnx_name,
          row.op,
          fixed(row.metrics.cosine, 10),
          sci(row.metrics.max_abs_delta),
          fixed(row.metrics.rms_ratio, 7),
          sci(row.error),
          sci(row.tolerance),
          local_cell(row),
          verdict_name(row.verdict)};
}

const std::vector<std::string> kHeader = {"#",      "onnx#",         "ONNX node", "op",        "cosine", "max_abs_delta",
                                          "rms_ratio", "rel_l2",    "tolerance", "local_err", "verdict"};

nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");  // JSON has no inf/NaN
}

}  // namespace

std::string summary_line(const BisectReport& r) {
  if (!r.diverged())
    return "agreement: all " + std::to_string(r.rows.size()) + " kernel boundaries of " + r.test +
           " are within their calibrated tolerances of " + r.ref;
  const NodeRow& row = r.rows[static_cast<size_t>(r.first_divergent)];
  std::string s = "first divergent node: #" + std::to_string(row.index) + " '" + row.onnx_name + "' (" + row.op +
                  "): rel_l2 " + sci(row.error) + " > tolerance " + sci(row.tolerance);
  if (row.verdict == Verdict::Local)
    s += "; local: replayed alone on the reference's inputs its own error is " + sci(*row.local_error);
  else if (row.verdict == Verdict::Inherited)
    s += "; inherited: replayed alone on the reference's inputs its own error is only " + sci(*row.local_error);
  return s;
}

std::string format_text(const BisectReport& r) {
  std::vector<std::vector<std::string>> rows{kHeader};
  for (const auto& row : r.rows) rows.push_back(cells(row));
  std::vector<size_t> width(kHeader.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::ostringstream out;
  out << "bisect: test " << r.test << " against " << r.ref << (r.model.empty() ? "" : " on " + r.model) << '\n';
  if (!r.fault.empty()) out << "planted fault: " << r.fault << '\n';
  out << "calibration: " << r.calibration << '\n';
  for (size_t i = 0; i < rows.size(); ++i) {
    bool mark = i > 0 && static_cast<int>(i) - 1 == r.first_divergent;
    out << (mark ? "> " : "  ");
    for (size_t c = 0; c < rows[i].size(); ++c) {
      std::string cell = rows[i][c];
      bool left = c == 2 || c == 3 || c == 10;
      if (c) out << "  ";
      if (left) out << cell << std::string(c + 1 < rows[i].size() ? width[c] - cell.size() : 0, ' ');
      else out << std::string(width[c] - cell.size(), ' ') << cell;
    }
    out << '\n';
  }
  for (const auto& o : r.outputs)
    out << "output " << o.name << ": cosine " << fixed(o.metrics.cosine, 10) << ", rel_l2 " << sci(o.metrics.rel_l2)
        << (o.agrees ? " (agrees)" : " (DISAGREES)") << '\n';
  for (const auto& note : r.notes) out << "note: " << note << '\n';
  out << summary_line(r) << '\n';
  return out.str();
}

std::string format_markdown(const BisectReport& r) {
  std::ostringstream out;
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  out << "## lockstep bisect: " << r.test << " against " << r.ref << "\n\n";
  if (!r.model.empty()) out << "Model: `" << r.model << "`\n\n";
  if (!r.fault.empty()) out << "Planted fault: " << r.fault << "\n\n";
  out << "**" << esc(summary_line(r)) << "**\n\n";
  out << "Calibration: " << r.calibration << "\n\n|";
  for (const auto& h : kHeader) out << ' ' << h << " |";
  out << "\n|";
  for (size_t c = 0; c < kHeader.size(); ++c) out << (c == 2 || c == 3 || c == 10 ? " --- |" : " ---: |");
  out << '\n';
  for (size_t i = 0; i < r.rows.size(); ++i) {
    auto c = cells(r.rows[i]);
    bool mark = static_cast<int>(i) == r.first_divergent;
    out << '|';
    for (size_t k = 0; k < c.size(); ++k) {
      std::string cell = esc(c[k]);
      if (k == 2) cell = "`" + cell + "`";
      out << ' ' << (mark ? "**" + cell + "**" : cell) << " |";
    }
    out << '\n';
  }
  if (!r.outputs.empty()) out << '\n';
  for (const auto& o : r.outputs)
    out << "- output `" << o.name << "`: cosine " << fixed(o.metrics.cosine, 10) << ", rel_l2 " << sci(o.metrics.rel_l2)
        << (o.agrees ? " (agrees)" : " (**disagrees**)") << '\n';
  for (const auto& note : r.notes) out << "\n> note: " << esc(note) << '\n';
  return out.str();
}

nlohmann::json to_json(const BisectReport& r) {
  nlohmann::json j = {{"model", r.model},
                      {"ref", r.ref},
                      {"test", r.test},
                      {"calibration", r.calibration},
                      {"tolerance", {{"safety", r.tolerance.safety}, {"floor", r.tolerance.floor}, {"cap", r.tolerance.cap}}},
                      {"agrees", !r.diverged()},
                      {"summary", summary_line(r)},
                      {"notes", r.notes},
                      {"nodes", nlohmann::json::array()},
                      {"outputs", nlohmann::json::array()}};
  if (!r.fault.empty()) j["fault_for_testing"] = r.fault;
  if (r.diverged()) {
    const NodeRow& row = r.rows[static_cast<size_t>(r.first_divergent)];
    j["first_divergent"] = {{"index", row.index}, {"onnx_name", row.onnx_name}, {"op", row.op},
                            {"verdict", verdict_name(row.verdict)}};
  } else {
    j["first_divergent"] = nullptr;
  }
  for (const auto& row : r.rows) {
    nlohmann::json n = {{"index", row.index},
                        {"onnx_index", row.onnx_index},
                        {"onnx_name", row.onnx_name},
                        {"op", row.op},
                        {"output_index", row.output_index},
                        {"cosine", number(row.metrics.cosine)},
                        {"max_abs_delta", number(row.metrics.max_abs_delta)},
                        {"rms_ratio", number(row.metrics.rms_ratio)},
                        {"rel_l2", number(row.error)},
                        {"noise", number(row.noise)},
                        {"tolerance", number(row.tolerance)},
                        {"nan_count", row.metrics.nan_count_test},
                        {"verdict", verdict_name(row.verdict)}};
    n["local_error"] = row.local_error ? number(*row.local_error) : nlohmann::json(nullptr);
    j["nodes"].push_back(n);
  }
  for (const auto& o : r.outputs)
    j["outputs"].push_back({{"name", o.name},
                            {"cosine", number(o.metrics.cosine)},
                            {"rel_l2", number(o.metrics.rel_l2)},
                            {"max_abs_delta", number(o.metrics.max_abs_delta)},
                            {"agrees", o.agrees}});
  return j;
}

}  // namespace lockstep::diff
