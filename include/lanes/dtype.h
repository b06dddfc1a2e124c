// Element types and type promotion.
//
// Promotion follows jax (jnp.promote_types) restricted to lanes' dtypes, which for this set is a
// total order:
//
//     Bool < UInt8 < Int32 < Int64 < Float32 < Float64
//
// so promote_types(a, b) is simply the larger of the two. For example int32 + float32 -> float32
// (jax, not numpy's float64), uint8 + int32 -> int32, bool + anything -> anything.
//
// C++ scalars mixed with tensors are "weakly typed", as Python scalars are in jax: they take the
// tensor's dtype unless the scalar's kind is higher. `f32_tensor * 2.0` stays float32,
// `int32_tensor + 1` stays int32, `int32_tensor * 0.5` becomes float32 (the default float), and
// `bool_tensor + 1` becomes int32.
//
// True division `a / b` of integer or bool tensors gives float32 (jnp.true_divide); the `div`
// primitive on integers truncates toward zero (lax.div).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

namespace lanes {

enum class DType : uint8_t { Bool, UInt8, Int32, Int64, Float32, Float64 };

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

/// Size of one element in bytes.
size_t dtype_size(DType d);
/// "float32", "int64", ... as numpy spells them.
const char* dtype_name(DType d);
inline bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64; }
inline bool is_integral(DType d) {
  return d == DType::UInt8 || d == DType::Int32 || d == DType::Int64;
}

/// The dtype both operands are converted to (see the table above).
inline DType promote_types(DType a, DType b) { return a < b ? b : a; }

/// Result dtype of `tensor (dtype d) op scalar` for a weakly typed scalar.
inline DType promote_weak(DType d, bool scalar_is_floating) {
  if (scalar_is_floating) return is_floating(d) ? d : DType::Float32;
  return d == DType::Bool ? DType::Int32 : d;
}

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else
    static_assert(sizeof(T) == 0, "lanes: unsupported element type");
}

template <class T>
struct TypeTag {
  using type = T;
};

/// Calls fn(TypeTag<T>{}) with T the C++ type of `d`: the one switch over dtypes kernels use.
template <class Fn>
decltype(auto) visit_dtype(DType d, Fn&& fn) {
  switch (d) {
    case DType::Bool:
      return fn(TypeTag<bool>{});
    case DType::UInt8:
      return fn(TypeTag<uint8_t>{});
    case DType::Int32:
      return fn(TypeTag<int32_t>{});
    case DType::Int64:
      return fn(TypeTag<int64_t>{});
    case DType::Float32:
      return fn(TypeTag<float>{});
    case DType::Float64:
      break;
  }
  return fn(TypeTag<double>{});
}

}  // namespace lanes
