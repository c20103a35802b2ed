// Options::f64_accumulate's default per backend (docs/accuracy.md). lockstep.h's
// default_f64_accumulate / resolve_f64_accumulate give the cpu's (a Piper voice's text encoder);
// cuda's adds the voice's flows: on the joe voice they take cuda within 1e-5 of float64 with
// noise off at no measurable cost a call (bench/RESULTS.md, 2026-12-06).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lockstep/lockstep.h"

namespace lockstep {

std::vector<std::string> default_f64_accumulate_for(const ir::Graph& graph, std::string_view backend);
// The option when set, else the backend's default.
std::vector<std::string> resolve_f64_accumulate_for(const ir::Graph& graph, const Options& options,
                                                    std::string_view backend);

}  // namespace lockstep
