// numpy-style printing: array([[1., 2.],
//                              [3., 4.]], dtype=float32)
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "lanes/primitive.h"
#include "lanes/tensor.h"

namespace lanes {

namespace {

constexpr int64_t kSummariseAbove = 1000;  // numpy's threshold
constexpr int64_t kEdgeItems = 3;

// Formats every element the same way, as numpy does: integers plainly; floats with the fewest
// decimals (at most 8) that give back the value, padded so the decimal points line up
// ("[ 0.5 , -1.25]"), a trailing '.' when all are whole, and scientific notation when the
// magnitudes span too much.
struct Formatter {
  DType dtype;
  bool scientific = false;
  size_t int_width = 0, frac_width = 0;

  Formatter(const std::vector<double>& values, DType d) : dtype(d) {
    if (!is_floating(d)) return;
    double max_abs = 0, min_abs = INFINITY;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      max_abs = std::max(max_abs, std::abs(v));
      if (v != 0) min_abs = std::min(min_abs, std::abs(v));
    }
    scientific = max_abs >= 1e8 || (min_abs < 1e-4 && min_abs != INFINITY) ||
                 (min_abs != INFINITY && max_abs / min_abs > 1e3 && max_abs >= 1e3);
    for (double v : values) {
      const std::string s = shortest(v);
      const size_t dot = s.find('.');
      if (dot == std::string::npos) continue;
      int_width = std::max(int_width, dot);
      frac_width = std::max(frac_width, s.size() - dot - 1);
    }
  }

  // The fewest fixed decimals (<= 8) that round-trip at the tensor's precision.
  std::string shortest(double v) const {
    if (!std::isfinite(v) || scientific) return raw(v);
    for (int p = 0;; ++p) {
      std::ostringstream os;
      os << std::fixed << std::setprecision(p) << v;
      const double back = std::stod(os.str());
      const bool exact =
          dtype == DType::Float32 ? static_cast<float>(back) == static_cast<float>(v) : back == v;
      if (exact || p == 8) return os.str() + (p == 0 ? "." : "");
    }
  }

  std::string raw(double v) const {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os << std::scientific << std::setprecision(8) << v;
    return os.str();
  }

  std::string operator()(double v) const {
    if (dtype == DType::Bool) return v != 0 ? "True" : "False";
    if (!is_floating(dtype)) return std::to_string(static_cast<int64_t>(v));
    std::string s = shortest(v);
    const size_t dot = s.find('.');
    if (dot == std::string::npos) return s;
    return std::string(int_width - dot, ' ') + s +
           std::string(frac_width - (s.size() - dot - 1), ' ');
  }
};

struct Printer {
  const Shape& shape;
  const std::vector<std::string>& cells;  // each element formatted
  size_t width;
  bool summarise;
  std::ostream& os;

  // Prints the sub-array at `dim` starting at flat index `base`; `indent` is the column of '['.
  void print(size_t dim, int64_t base, size_t indent) {
    if (dim == shape.size()) {
      const std::string& s = cells[size_t(base)];
      os << std::string(width - s.size(), ' ') << s;
      return;
    }
    int64_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
    os << '[';
    const int64_t n = shape[dim];
    for (int64_t i = 0; i < n; ++i) {
      if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
        os << "...";
        i = n - kEdgeItems;
        separator(dim, indent);
      }
      print(dim + 1, base + i * stride, indent + 1);
      if (i + 1 < n) separator(dim, indent);
    }
    os << ']';
  }

  void separator(size_t dim, size_t indent) {
    if (dim + 1 == shape.size()) {
      os << ", ";
    } else {
      os << ',' << std::string(shape.size() - dim - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& os, TypeFmt t) {
  return os << shape_str(t.type.shape) << ' ' << dtype_name(t.type.dtype);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  if (t.is_tracer()) return os << "Traced<" << dtype_name(t.dtype()) << shape_str(t.shape()) << ">";
  const bool summarise = t.numel() > kSummariseAbove;
  std::vector<std::string> cells;
  if (t.dtype() == DType::Int64) {  // exactly: a double holds 53 bits (random keys use all 64)
    for (int64_t v : t.to_vector<int64_t>()) cells.push_back(std::to_string(v));
  } else {
    const std::vector<double> values = t.to_vector<double>();
    const Formatter format(values, t.dtype());
    for (double v : values) cells.push_back(format(v));
  }
  size_t width = 0;
  for (const std::string& c : cells) width = std::max(width, c.size());
  os << "array(";
  Printer{t.shape(), cells, width, summarise, os}.print(0, 0, 6);
  const bool default_dtype =
      t.dtype() == DType::Float64 || t.dtype() == DType::Int64 || t.dtype() == DType::Bool;
  if (!default_dtype || t.numel() == 0) os << ", dtype=" << dtype_name(t.dtype());
  return os << ')';
}

}  // namespace lanes
