// The op functors of the elementwise kernels (see elementwise_loops.h for the protocol): each
// works on a scalar T (integers, bool, and ops without a batch form) and, when `simd`, on
// xsimd::batch<float/double>. Integer arithmetic goes through the unsigned type so overflow
// wraps instead of being undefined.
#pragma once

#include <xsimd/xsimd.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/elementwise.h"
#include "kernels/vector_math.h"
#include "lanes/error.h"

namespace lanes::kernels::vm {

inline constexpr int64_t kCheapGrain = 32768;  // add, compare, ...: memory bound
inline constexpr int64_t kCostlyGrain = 8192;  // exp, log, tanh, ...: ~10x the work per element

template <class V>
inline constexpr bool kBool = std::is_same_v<V, bool>;
template <class V>
inline constexpr bool kInt = std::is_integral_v<V> && !kBool<V>;
template <class V>
inline constexpr bool kF32 = std::is_same_v<typename V::value_type, float>;

/// Two's-complement wrap-around arithmetic for integers of any width (no signed overflow).
template <class T, class Op>
T wrapping(T a, T b, Op op) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
}

struct Cheap {
  static constexpr bool simd = true;
  static constexpr int64_t grain = kCheapGrain;
};
struct Costly {
  static constexpr bool simd = true;
  static constexpr int64_t grain = kCostlyGrain;
};
struct ScalarOnly {
  static constexpr bool simd = false;
  static constexpr int64_t grain = kCheapGrain;
};

// ---- unary ------------------------------------------------------------------------------------

struct Neg : Cheap {
  template <class V>
  V operator()(V x) const {
    if constexpr (kInt<V>)
      return wrapping(V(0), x, [](auto a, auto b) { return a - b; });
    else if constexpr (std::is_floating_point_v<V>)
      return -x;
    else  // xsimd's batch negation is 0 - x on AVX-512, which makes -(+0) +0: flip the sign bit
      return xsimd::bitwise_xor(x, V(typename V::value_type(-0.0)));
  }
};

struct Abs : Cheap {
  template <class V>
  V operator()(V x) const {
    if constexpr (std::is_unsigned_v<V>)
      return x;
    else if constexpr (kInt<V>)
      return x < 0 ? Neg{}(x) : x;
    else
      return xsimd::abs(x);
  }
};

struct Sign : Cheap {
  template <class V>
  V operator()(V x) const {
    if constexpr (kInt<V>) {
      return static_cast<V>((x > 0) - (x < V(0)));
    } else {  // +-1, or x itself for +-0 and NaN
      using T = typename V::value_type;
      return xsimd::select(x > V(T(0)), V(T(1)), xsimd::select(x < V(T(0)), V(T(-1)), x));
    }
  }
};

#define LANES_FLOAT_UNARY(Name, Base, expr) \
  struct Name : Base {                      \
    template <class V>                      \
    V operator()(V x) const {               \
      return expr;                          \
    }                                       \
  };
LANES_FLOAT_UNARY(Floor, Cheap, xsimd::floor(x))
LANES_FLOAT_UNARY(Ceil, Cheap, xsimd::ceil(x))
LANES_FLOAT_UNARY(Round, Cheap, xsimd::nearbyint(x))  // the default mode: half to even
LANES_FLOAT_UNARY(Sqrt, Cheap, xsimd::sqrt(x))
LANES_FLOAT_UNARY(Rsqrt, Cheap, V(typename V::value_type(1)) / xsimd::sqrt(x))
LANES_FLOAT_UNARY(Exp, Costly, vm::exp(x))
LANES_FLOAT_UNARY(Log, Costly, xsimd::log(x))
LANES_FLOAT_UNARY(Log1p, Costly, xsimd::log1p(x))
LANES_FLOAT_UNARY(Expm1, Costly, xsimd::expm1(x))
LANES_FLOAT_UNARY(Tanh, Costly, xsimd::tanh(x))
LANES_FLOAT_UNARY(Logistic, Costly, vm::logistic(x))
#undef LANES_FLOAT_UNARY

/// Ops whose float32 lanes are evaluated in float64 (see vector_math.h).
#define LANES_DOUBLE_UNARY(Name, fn)                        \
  struct Name : Costly {                                    \
    template <class V>                                      \
    V operator()(V x) const {                               \
      if constexpr (kF32<V>)                                \
        return via_double([](auto d) { return fn(d); }, x); \
      else                                                  \
        return fn(x);                                       \
    }                                                       \
  };
LANES_DOUBLE_UNARY(Sin, xsimd::sin)
LANES_DOUBLE_UNARY(Cos, xsimd::cos)
#undef LANES_DOUBLE_UNARY

struct Erf : Costly {
  template <class V>
  V operator()(V x) const {
    if constexpr (kF32<V>)
      return via_double([](auto d) { return xsimd::erf(d); }, x);  // ~70 ulp of double: fine
    else
      return lanewise([](double d) { return std::erf(d); }, x);
  }
};

struct LogicalNot : ScalarOnly {
  bool operator()(bool x) const { return !x; }
};

// ---- binary -----------------------------------------------------------------------------------

struct Add : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kBool<V>)
      return a || b;
    else if constexpr (kInt<V>)
      return wrapping(a, b, [](auto x, auto y) { return x + y; });
    else
      return a + b;
  }
};

struct Sub : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kInt<V>)
      return wrapping(a, b, [](auto x, auto y) { return x - y; });
    else
      return a - b;
  }
};

struct Mul : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kBool<V>)
      return a && b;
    else if constexpr (kInt<V>)
      return wrapping(a, b, [](auto x, auto y) { return x * y; });
    else
      return a * b;
  }
};

struct Div : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kInt<V>) {
      if (b == 0) return 0;  // no SIGFPE: x / 0 == 0
      if constexpr (std::is_signed_v<V>)
        if (b == -1) return Neg{}(a);  // INT_MIN / -1 wraps
      return static_cast<V>(a / b);
    } else {
      return a / b;
    }
  }
};

/// Integer power by squaring (wrapping); a negative exponent gives 1 / a^-b truncated: 0 unless
/// |a| == 1.
template <class V>
V int_pow(V a, V b) {
  if constexpr (std::is_signed_v<V>) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
  }
  V result = 1;
  while (b > 0) {
    if (b & 1) result = Mul{}(result, a);
    a = Mul{}(a, a);
    b = static_cast<V>(b >> 1);
  }
  return result;
}

struct Pow : Costly {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kInt<V>)
      return int_pow(a, b);
    else if constexpr (kF32<V>)
      return via_double([](auto x, auto y) { return pow_for_float(x, y); }, a, b);
    else
      return lanewise([](double x, double y) { return std::pow(x, y); }, a, b);
  }
};

/// NaN-propagating maximum / minimum (jnp.maximum): a + b is NaN when either is.
struct Max : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return a < b ? b : a;
    else
      return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, xsimd::max(a, b));
  }
};

struct Min : Cheap {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>)
      return b < a ? b : a;
    else
      return xsimd::select(xsimd::isnan(a) | xsimd::isnan(b), a + b, xsimd::min(a, b));
  }
};

struct Atan2 : Costly {
  template <class V>
  V operator()(V a, V b) const {
    if constexpr (kF32<V>)
      return via_double([](auto y, auto x) { return vm::atan2(y, x); }, a, b);
    else
      return vm::atan2(a, b);
  }
};

#define LANES_COMPARE(Name, op)       \
  struct Name : ScalarOnly {          \
    template <class T>                \
    bool operator()(T a, T b) const { \
      return a op b;                  \
    }                                 \
  };
LANES_COMPARE(Eq, ==)
LANES_COMPARE(Ne, !=)
LANES_COMPARE(Lt, <)
LANES_COMPARE(Le, <=)
LANES_COMPARE(Gt, >)
LANES_COMPARE(Ge, >=)
#undef LANES_COMPARE

// Bitwise on integers; on bools (0 or 1) the logical op.
#define LANES_BITWISE(Name, op)    \
  struct Name : ScalarOnly {       \
    template <class T>             \
    T operator()(T a, T b) const { \
      return T(a op b);            \
    }                              \
  };
LANES_BITWISE(And, &)
LANES_BITWISE(Or, |)
LANES_BITWISE(Xor, ^)
#undef LANES_BITWISE

// Shifts by a count outside [0, width) are defined here (C++ leaves them undefined): numpy's
// results, 0 for a left shift, the sign (0 or -1) for a right one.
struct ShiftLeft : ScalarOnly {
  template <class T>
  T operator()(T a, T count) const {
    using U = std::make_unsigned_t<T>;
    constexpr T width = T(sizeof(T) * 8);
    return count < T(0) || count >= width ? T(0) : T(U(a) << U(count));
  }
};
struct ShiftRight : ScalarOnly {
  template <class T>
  T operator()(T a, T count) const {
    constexpr T width = T(sizeof(T) * 8);
    if (count < T(0) || count >= width) return a < T(0) ? T(-1) : T(0);
    return T(a >> count);  // arithmetic for signed T (C++20)
  }
};

}  // namespace lanes::kernels::vm

namespace lanes::kernels {

/// Calls fn(functor) with the functor of `op` for element type T.
template <class T, class Fn>
void with_unary(UnaryOp op, Fn&& fn) {
  if constexpr (std::is_floating_point_v<T>) {
    // clang-format off (it reflows the macro cases differently on every run)
    switch (op) {
#define LANES_CASE(Name) \
  case UnaryOp::Name:    \
    return fn(vm::Name{});
      LANES_CASE(Exp)
      LANES_CASE(Log)
      LANES_CASE(Log1p)
      LANES_CASE(Expm1)
      LANES_CASE(Sqrt)
      LANES_CASE(Rsqrt)
      LANES_CASE(Tanh)
      LANES_CASE(Logistic)
      LANES_CASE(Sin)
      LANES_CASE(Cos)
      LANES_CASE(Erf)
      LANES_CASE(Floor)
      LANES_CASE(Ceil)
      LANES_CASE(Round)
#undef LANES_CASE
      default:
        break;
    }
    // clang-format on
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (op == UnaryOp::LogicalNot) return fn(vm::LogicalNot{});
  } else {
    if (op == UnaryOp::Neg) return fn(vm::Neg{});
    if (op == UnaryOp::Abs) return fn(vm::Abs{});
    if (op == UnaryOp::Sign) return fn(vm::Sign{});
  }
  throw Error(detail::concat(unary_name(op), ": unsupported dtype ", dtype_name(dtype_of<T>())));
}

}  // namespace lanes::kernels
