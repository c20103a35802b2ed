#include "table.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace lockstep::cli {

// Display width: UTF-8 continuation bytes take no column.
static size_t width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

void Table::print(std::ostream& out) const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) w[i] = width(header_[i]);
  for (const auto& row : rows_)
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      text += cell;
      if (i + 1 < w.size()) text += std::string(w[i] - width(cell) + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  size_t total = 0;
  for (size_t x : w) total += x + 2;
  line(header_);
  out << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
  for (const auto& row : rows_) {
    if (row.empty()) out << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
    else line(row);
  }
}

std::string fmt_fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string fmt_sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

}  // namespace lockstep::cli
