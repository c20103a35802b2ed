// Which data-dependent selections a run speculates on instead of stopping for the host.
// A NonZero over an interval test (And of two comparisons with constants, seen through Not and
// Expand) is predicted to select every element (or, under an odd number of Nots, none): the
// spline flows of a Piper voice's duration predictor test whether each value lies inside the
// spline's interval, and it nearly always does. A predicted NonZero becomes a constant of the
// segment, so the segment runs on past it; its mask goes to the host and is checked after the
// segment, and a run whose mask disagrees redoes that segment without predictions
// (docs/dynamic-shapes.md "Predicted selections"). The rule reads only the graph, so which path
// a call takes is a function of its inputs alone.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace lockstep::dynamic {

enum class Prediction : uint8_t { None, AllTrue, AllFalse };

// Per node of `graph`: the prediction for each NonZero the rule covers, None elsewhere.
std::vector<Prediction> predict_selections(const ir::Graph& graph);

// The mask a prediction stands for (every element true or every element false) in `shape`.
Tensor predicted_mask(Prediction prediction, DType dtype, const Shape& shape);

// Whether `mask` is what `prediction` said.
bool prediction_holds(Prediction prediction, const Tensor& mask);

}  // namespace lockstep::dynamic
