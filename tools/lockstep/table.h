// A plain text table with aligned columns, for terminal reports.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace lockstep::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size(); }
  void separator() { rows_.push_back({}); }  // an empty row prints as a rule
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Number formats shared by the reports.
std::string fmt_fixed(double v, int digits);  // "0.9999999991"
std::string fmt_sci(double v);                // "1.234e-07"

}  // namespace lockstep::cli
