// More user-facing array ops (issue 19), one section per family. Same conventions as
// lanes/ops.h: numpy / jax semantics, negative axes count from the end, bad input throws
// lanes::Error naming the op, the shapes and the argument. Most are composed from the
// primitives, so they batch and differentiate through those primitives' rules.
#pragma once

#include <cstdint>
#include <utility>

#include "lanes/ops.h"

namespace lanes {

// ---- reversal ---------------------------------------------------------------------------------

/// Reverses the order of elements along each of `axes` (all axes by default), as jnp.flip.
Tensor flip(const Tensor& x, const Axes& axes = {});

}  // namespace lanes
