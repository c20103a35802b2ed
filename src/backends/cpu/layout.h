// Compile-time activation layout: which arena values live channels-last (NWC) so that chains
// of 1-D convolutions and elementwise ops skip the NCW<->NWC reorders between them.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace lockstep::cpu {

// Per ValueId: 1 when the value is stored [N][W][C] instead of the declared [N][C][W]. Only
// rank-3 float values with >= 8 channels, produced by a Conv/ConvTranspose, float elementwise
// op, Concat, Split or Slice (of a channels-last input), and read only by conv data inputs,
// Slices, Concat/Split groups all channels-last, or elementwise ops (epilogues included) that
// also run channels-last; never graph inputs or outputs.
std::vector<char> choose_nwc(const ir::Graph& graph);

// The physical shape a channels-last node works on: the shape padded to rank 3, dims 1 and 2
// swapped. Operands with one channel or one position are stored the same in both layouts.
Shape nwc_view(const Shape& shape);

// Whether the conv can write its output channels-last (1-D, no ConvTranspose positions past
// the full result). Defined in conv.cpp, next to the geometry it depends on.
bool conv_can_write_nwc(const ir::Graph& graph, const ir::Node& node);

}  // namespace lockstep::cpu
