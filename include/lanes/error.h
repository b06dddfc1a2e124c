// lanes::Error: the one exception type lanes throws for bad input.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lanes {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "(2, 3)" for {2, 3}, "()" for a scalar shape: how every message prints shapes.
std::string shape_str(const std::vector<int64_t>& shape);

/// Streams a shape as shape_str does, without building the string unless an error is thrown:
/// check(ok, "matmul: lhs ", fmt(a.shape()), ...).
struct ShapeFmt {
  const std::vector<int64_t>& shape;
};
inline ShapeFmt fmt(const std::vector<int64_t>& shape) { return {shape}; }
inline std::ostream& operator<<(std::ostream& os, ShapeFmt s) { return os << shape_str(s.shape); }

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
}  // namespace detail

/// Throws lanes::Error with the parts streamed together: check(ok, "sum: axis ", a, " out of
/// range").
template <class... Parts>
void check(bool ok, const Parts&... parts) {
  if (!ok) throw Error(detail::concat(parts...));
}

/// Throws like a failed check. For hot paths whose message parts cost something to compute (a
/// primitive's name or description): `if (!ok) fail(describe(p), ...)` computes them only then.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::concat(parts...));
}

}  // namespace lanes
