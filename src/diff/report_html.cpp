// The HTML page of a bisect report: self-contained (inline CSS and SVG, no script, no external
// resource) so that it can be attached to a bug report. tests/diff/report_html_test.cpp renders it
// in headless Chromium.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "diff/report.h"

namespace lockstep::diff {

namespace {

constexpr double kPlotWidth = 1100, kPlotHeight = 380;
constexpr double kLeft = 70, kRight = 20, kTop = 20, kBottom = 50;
constexpr double kLogMin = -12, kLogMax = 2;  // log10 range of the plot; 0 and inf are clamped

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string num(double v, const char* fmt = "%.3e") {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double log_clamped(double v) {
  if (std::isnan(v) || v >= std::pow(10.0, kLogMax)) return kLogMax;
  if (v <= std::pow(10.0, kLogMin)) return kLogMin;
  return std::log10(v);
}

std::string plot(const BisectReport& r) {
  const double w = kPlotWidth - kLeft - kRight, h = kPlotHeight - kTop - kBottom;
  const size_t n = r.rows.size();
  auto x = [&](double index) { return kLeft + (n <= 1 ? w / 2 : (index - 1) / static_cast<double>(n - 1) * w); };
  auto y = [&](double value) { return kTop + (kLogMax - log_clamped(value)) / (kLogMax - kLogMin) * h; };
  std::ostringstream s;
  s << "<svg id=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kPlotWidth << "\" height=\"" << kPlotHeight
    << "\" viewBox=\"0 0 " << kPlotWidth << ' ' << kPlotHeight << "\" role=\"img\" aria-label=\"log10 error per node\">\n";
  s << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << w << "\" height=\"" << h
    << "\" fill=\"#fbfbfd\" stroke=\"#888\"/>\n";
  for (int e = static_cast<int>(kLogMin); e <= static_cast<int>(kLogMax); e += 2) {
    double yy = y(std::pow(10.0, e));
    s << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << yy << "\" y2=\"" << yy
      << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 8 << "\" y=\"" << yy + 4
      << "\" text-anchor=\"end\" class=\"tick\">1e" << e << "</text>\n";
  }
  const size_t step = std::max<size_t>(1, n / 10);
  for (size_t i = 1; i <= n; i += step)
    s << "<text x=\"" << x(static_cast<double>(i)) << "\" y=\"" << kTop + h + 18
      << "\" text-anchor=\"middle\" class=\"tick\">" << i << "</text>\n";
  s << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << kPlotHeight - 8
    << "\" text-anchor=\"middle\">kernel boundary (node index)</text>\n";
  s << "<text x=\"16\" y=\"" << kTop + h / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << kTop + h / 2
    << ")\">rel L2 error (log10)</text>\n";
  if (r.diverged()) {
    double xx = x(r.first_divergent + 1.0);
    s << "<line id=\"divergent-marker\" x1=\"" << xx << "\" x2=\"" << xx << "\" y1=\"" << kTop << "\" y2=\"" << kTop + h
      << "\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n";
  }
  auto polyline = [&](const char* id, const char* colour, const char* extra, auto value_of) {
    s << "<polyline id=\"" << id << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\" " << extra
      << " points=\"";
    for (size_t i = 0; i < n; ++i) s << x(static_cast<double>(i + 1)) << ',' << y(value_of(r.rows[i])) << ' ';
    s << "\"/>\n";
  };
  polyline("tolerance-line", "#ff7f0e", "stroke-dasharray=\"6 4\"", [](const NodeRow& row) { return row.tolerance; });
  polyline("error-line", "#1f77b4", "", [](const NodeRow& row) { return row.error; });
  for (size_t i = 0; i < n; ++i) {
    const NodeRow& row = r.rows[i];
    bool bad = row.verdict != Verdict::Ok;
    bool first = static_cast<int>(i) == r.first_divergent;
    s << "<circle cx=\"" << x(static_cast<double>(i + 1)) << "\" cy=\"" << y(row.error) << "\" r=\""
      << (first ? 6 : (bad ? 3 : 2)) << "\" fill=\"" << (first ? "#d62728" : (bad ? "#e377c2" : "#1f77b4"))
      << "\"><title>#" << row.index << ' ' << html_escape(row.onnx_name) << ": " << num(row.error) << "</title></circle>\n";
  }
  s << "<g class=\"legend\"><line x1=\"" << kLeft + 10 << "\" x2=\"" << kLeft + 40 << "\" y1=\"" << kTop + 14
    << "\" y2=\"" << kTop + 14 << "\" stroke=\"#1f77b4\" stroke-width=\"2\"/><text x=\"" << kLeft + 46 << "\" y=\""
    << kTop + 18 << "\">rel L2 error</text><line x1=\"" << kLeft + 150 << "\" x2=\"" << kLeft + 180 << "\" y1=\""
    << kTop + 14 << "\" y2=\"" << kTop + 14 << "\" stroke=\"#ff7f0e\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/><text x=\""
    << kLeft + 186 << "\" y=\"" << kTop + 18 << "\">tolerance</text></g>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace

std::string format_html(const BisectReport& r) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>lockstep bisect: "
    << html_escape(r.test) << " against " << html_escape(r.ref) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\n"
    << "h1{font-size:20px} .summary{font-size:15px;padding:8px 12px;border-left:4px solid #2ca02c;background:#f3faf3}\n"
    << ".summary.bad{border-color:#d62728;background:#fdf3f3}\n"
    << "table{border-collapse:collapse;font-size:12px;margin-top:16px} th,td{padding:2px 8px;border-bottom:1px solid #eee}\n"
    << "td.num{text-align:right;font-family:monospace} td.name{font-family:monospace}\n"
    << "tr.bad td{background:#fff4f4} tr.divergent td{background:#ffd6d6;font-weight:bold}\n"
    << ".tick{font-size:11px;fill:#555} svg text{font-size:12px} .notes{color:#8a6d3b}\n"
    << "</style></head><body>\n";
  s << "<h1>lockstep bisect: " << html_escape(r.test) << " against " << html_escape(r.ref) << "</h1>\n";
  if (!r.model.empty()) s << "<p>Model: <code>" << html_escape(r.model) << "</code></p>\n";
  if (!r.fault.empty()) s << "<p>Planted fault: " << html_escape(r.fault) << "</p>\n";
  s << "<p class=\"summary" << (r.diverged() ? " bad" : "") << "\" id=\"summary\">" << html_escape(summary_line(r))
    << "</p>\n";
  s << "<p>Calibration: " << html_escape(r.calibration) << "</p>\n";
  s << plot(r);
  for (const auto& note : r.notes) s << "<p class=\"notes\">note: " << html_escape(note) << "</p>\n";
  s << "<table id=\"nodes\"><thead><tr><th>#</th><th>onnx#</th><th>ONNX node</th><th>op</th><th>cosine</th>"
       "<th>max_abs_delta</th><th>rms_ratio</th><th>rel_l2</th><th>tolerance</th><th>local error</th><th>verdict</th>"
       "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const NodeRow& row = r.rows[i];
    std::string cls = static_cast<int>(i) == r.first_divergent ? "node divergent"
                                                                : (row.verdict == Verdict::Ok ? "node" : "node bad");
    s << "<tr class=\"" << cls << "\" id=\"node-" << row.index << "\"><td class=\"num\">" << row.index
      << "</td><td class=\"num\">" << (row.onnx_index > 0 ? std::to_string(row.onnx_index) : "-")
      << "</td><td class=\"name\">" << html_escape(row.onnx_name) << "</td><td>" << html_escape(row.op)
      << "</td><td class=\"num\">" << num(row.metrics.cosine, "%.10f") << "</td><td class=\"num\">"
      << num(row.metrics.max_abs_delta) << "</td><td class=\"num\">" << num(row.metrics.rms_ratio, "%.7f")
      << "</td><td class=\"num\">" << num(row.error) << "</td><td class=\"num\">" << num(row.tolerance)
      << "</td><td class=\"num\">" << (row.local_error ? num(*row.local_error) : "-") << "</td><td>"
      << verdict_name(row.verdict) << "</td></tr>\n";
  }
  s << "</tbody></table>\n";
  if (!r.outputs.empty()) {
    s << "<ul>\n";
    for (const auto& o : r.outputs)
      s << "<li>output <code>" << html_escape(o.name) << "</code>: cosine " << num(o.metrics.cosine, "%.10f")
        << ", rel_l2 " << num(o.metrics.rel_l2) << (o.agrees ? " (agrees)" : " (disagrees)") << "</li>\n";
    s << "</ul>\n";
  }
  // Inline, read-only: records the plot's laid-out size so a headless browser's DOM dump shows
  // that the SVG rendered (tests/diff/report_html_test.cpp).
  s << "<script>(function(){var l=document.getElementById('error-line');if(l&&l.getBBox){var b=l.getBBox();"
       "document.body.setAttribute('data-plot-bbox',Math.round(b.width)+'x'+Math.round(b.height));}})();</script>\n";
  s << "</body></html>\n";
  return s.str();
}

}  // namespace lockstep::diff
