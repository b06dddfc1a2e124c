// The steps of a fused program as fused.cpp runs them on each tile (fused_steps.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/fused.h"

namespace lanes::kernels {

// A StepGroup (fused.h) of a conversion, a unary op and a conversion runs as one loop, which
// overlaps the op with the conversions that the step-by-step order ran each alone.

/// The program's steps as groups, in order.
std::vector<StepGroup> plan_groups(const FusedProgram& p);

/// For each register, the register buffer its tile is written to (inputs: their own).
std::vector<int32_t> plan_buffers(const FusedProgram& p, const std::vector<StepGroup>& groups);

/// Runs group g on the n elements of a tile: its inputs where `reg` says, its result to `out`.
void run_group(const FusedProgram& p, const StepGroup& g, const char* const* reg, char* out,
               int64_t n);

}  // namespace lanes::kernels
