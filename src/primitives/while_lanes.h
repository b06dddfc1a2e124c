// A while loop whose predicate differs per lane (a lane while, from vmap): the loop that runs it
// and the policy that decides when to compact its lanes (LoopStrategy).
#pragma once

#include <vector>

#include "primitives/control_flow.h"

namespace lanes::prim {

/// The step of a lane while: inputs (carry, consts, pred), outputs (carry', pred') where carry'
/// is where(pred, body(carry, consts), carry) and pred' is cond(carry', consts). One graph, so
/// the select and the next test fuse into the body's own pass (a finished lane keeps its carry,
/// so its pred' stays false).
GraphPtr lane_step(const Graph& cond, const Graph& body, size_t n_carry);

/// Runs the loop: cond once, then the step until no lane runs, compacting the running lanes into
/// a smaller working set as `lanes.options.loop` says. Inputs (carry, consts), outputs the carry.
std::vector<Tensor> run_lane_loop(const detail::LaneRunners& cond, const detail::LaneRunners& step,
                                  size_t n_carry, const Lanes& lanes, std::vector<Tensor> in);

}  // namespace lanes::prim
