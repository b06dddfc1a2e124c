// The names of the vmaps being traced, for the collectives (lanes/collectives.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lanes::detail {

/// A named vmap while it traces its function.
struct AxisFrame {
  std::string name;
  int64_t size = 0;  // lanes over all ranks
  size_t depth = 0;  // the position its trace has in the active-trace stack
};

/// The innermost frame named `name` (a nested vmap of the same name shadows an outer one).
/// Throws lanes::Error naming `op`, the axis and the names in scope when there is none.
const AxisFrame& find_axis(const std::string& name, const char* op);

}  // namespace lanes::detail
