// The IR verifier: structural invariants every pass must keep (tested in tests/ir/verify_test.cpp).
#pragma once

#include "ir/graph.h"

namespace lockstep::ir {

// Throws Error(InvalidModel) naming the node for a malformed graph: ids out of range, a value read
// before it is produced (cycle / not topological), two producers, a graph output nobody produces.
// Throws Error(Internal) for an inconsistent epilogue or memory plan (only passes create those).
void verify(const Graph& graph);

// True when `from` broadcasts (numpy rules) to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to);

}  // namespace lockstep::ir
