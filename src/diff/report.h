// The divergence table of a BisectReport as text, markdown, JSON and a self-contained HTML page.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "diff/bisect.h"

namespace lockstep::diff {

// One line per kernel boundary plus a summary naming the divergent node and its verdict.
std::string format_text(const BisectReport& report);
std::string format_markdown(const BisectReport& report);
nlohmann::json to_json(const BisectReport& report);
// One page, no external resources: inline CSS, an inline SVG plot of log10(error) and log10
// (tolerance) against the node index with the divergent node marked, and the table.
std::string format_html(const BisectReport& report);

// The summary sentence the formats share ("first divergent node: #12 'x' (Conv): local ...").
std::string summary_line(const BisectReport& report);

}  // namespace lockstep::diff
