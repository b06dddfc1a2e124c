#include "lanes/dtype.h"

#include <sstream>

#include "lanes/error.h"

namespace lanes {

size_t dtype_size(DType d) {
  return visit_dtype(d, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "uint8";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

// Without a stream: graph keys and primitive params build these on every vmap call, and an
// ostringstream's locale set-up cost more than the rest of the key.
std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ')';
}

}  // namespace lanes
