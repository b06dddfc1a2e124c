// Trees: nested structures of Tensors that transforms accept as arguments and return as results
// (jax's pytrees). A tree is a Tensor (a leaf), a std::tuple, std::pair, std::vector, std::array
// or std::map<std::string, T> of trees, or a user struct registered with LANES_TREE:
//
//     struct Params { lanes::Tensor w, b; };
//     LANES_TREE(Params, w, b)   // at namespace scope, fields in order
//
// Leaves are visited depth-first in a fixed order (tuple/struct order, map key order), which is
// the order `flatten` lists them and `rebuild` consumes them.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lanes/tensor.h"

namespace lanes::tree {

/// Tree<T> describes how to visit and rebuild the children of a container type. Leaves
/// (Tensor) and unsupported types have no specialisation.
template <class T, class = void>
struct Tree;

template <class T>
concept Container = requires {
  Tree<std::decay_t<T>>::kNode;
};

template <class T>
constexpr bool is_tree_v = std::is_same_v<std::decay_t<T>, Tensor> || Container<T>;

template <class... Ts>
struct Tree<std::tuple<Ts...>> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const std::tuple<Ts...>& t, F&& f) {
    std::apply([&](const auto&... c) { (f(c), ...); }, t);
  }
  template <class F>
  static std::tuple<Ts...> map(const std::tuple<Ts...>& t, F&& f) {
    return std::apply([&](const auto&... c) { return std::tuple<Ts...>{f(c)...}; }, t);
  }
  static size_t size(const std::tuple<Ts...>&) { return sizeof...(Ts); }
};

template <class A, class B>
struct Tree<std::pair<A, B>> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const std::pair<A, B>& p, F&& f) {
    f(p.first);
    f(p.second);
  }
  template <class F>
  static std::pair<A, B> map(const std::pair<A, B>& p, F&& f) {
    return std::pair<A, B>{f(p.first), f(p.second)};  // braces: left to right
  }
  static size_t size(const std::pair<A, B>&) { return 2; }
};

template <class T>
struct Tree<std::vector<T>> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const std::vector<T>& v, F&& f) {
    for (const T& c : v) f(c);
  }
  template <class F>
  static std::vector<T> map(const std::vector<T>& v, F&& f) {
    std::vector<T> out;
    out.reserve(v.size());
    for (const T& c : v) out.push_back(f(c));
    return out;
  }
  static size_t size(const std::vector<T>& v) { return v.size(); }
};

template <class T, size_t N>
struct Tree<std::array<T, N>> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const std::array<T, N>& a, F&& f) {
    for (const T& c : a) f(c);
  }
  template <class F>
  static std::array<T, N> map(const std::array<T, N>& a, F&& f) {
    std::array<T, N> out;
    for (size_t i = 0; i < N; ++i) out[i] = f(a[i]);
    return out;
  }
  static size_t size(const std::array<T, N>&) { return N; }
};

template <class T>
struct Tree<std::map<std::string, T>> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const std::map<std::string, T>& m, F&& f) {
    for (const auto& [k, c] : m) f(c);
  }
  template <class F>
  static std::map<std::string, T> map(const std::map<std::string, T>& m, F&& f) {
    std::map<std::string, T> out;
    for (const auto& [k, c] : m) out.emplace(k, f(c));
    return out;
  }
  static size_t size(const std::map<std::string, T>& m) { return m.size(); }
};

/// Appends the leaves of `x` to `leaves`, depth-first.
template <class T>
void flatten(const T& x, std::vector<Tensor>& leaves) {
  if constexpr (std::is_same_v<T, Tensor>) {
    leaves.push_back(x);
  } else {
    static_assert(Container<T>,
                  "lanes: a transform argument or result must be a Tensor or a tree "
                  "of Tensors (tuple, pair, vector, array, map<string, T>, or a "
                  "struct registered with LANES_TREE)");
    Tree<T>::each(x, [&](const auto& c) { flatten(c, leaves); });
  }
}

template <class T>
std::vector<Tensor> flatten(const T& x) {
  std::vector<Tensor> leaves;
  flatten(x, leaves);
  return leaves;
}

/// Number of leaves of `x`.
template <class T>
size_t num_leaves(const T& x) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return 1;
  } else {
    size_t n = 0;
    Tree<T>::each(x, [&](const auto& c) { n += num_leaves(c); });
    return n;
  }
}

template <class T>
constexpr bool kIsVector = false;
template <class T>
constexpr bool kIsVector<std::vector<T>> = true;
template <class T>
constexpr bool kIsMap = false;
template <class T>
constexpr bool kIsMap<std::map<std::string, T>> = true;

/// The structure of `x` without its leaves, for comparing two trees of one C++ type: vectors
/// as [..], maps as {key: ..}, fixed-size nodes (tuple, pair, array, struct) as (..), a leaf as
/// *. Two trees of one type with equal leaf counts can still differ here (vector sizes, keys).
template <class T>
void describe(const T& x, std::string& out) {
  if constexpr (std::is_same_v<T, Tensor>) {
    out += '*';
  } else {
    constexpr bool is_map = kIsMap<T>, is_vector = kIsVector<T>;
    out += is_map ? '{' : is_vector ? '[' : '(';
    bool first = true;
    if constexpr (is_map) {
      for (const auto& [k, c] : x) {
        out += first ? "" : ", ";
        first = false;
        out += k + ": ";
        describe(c, out);
      }
    } else {
      Tree<T>::each(x, [&](const auto& c) {
        out += first ? "" : ", ";
        first = false;
        describe(c, out);
      });
    }
    out += is_map ? '}' : is_vector ? ']' : ')';
  }
}

template <class T>
std::string describe(const T& x) {
  std::string out;
  describe(x, out);
  return out;
}

namespace detail {
/// rebuild's walk: kMove takes the leaves out of the vector (no reference count is touched).
template <bool kMove, class T>
T rebuild_from(const T& like,
               std::conditional_t<kMove, std::vector<Tensor>&, const std::vector<Tensor>&> leaves,
               size_t& pos) {
  if constexpr (std::is_same_v<T, Tensor>) {
    check(pos < leaves.size(), "tree: too few leaves to rebuild the structure");
    if constexpr (kMove)
      return std::move(leaves[pos++]);
    else
      return leaves[pos++];
  } else {
    return Tree<T>::map(like, [&](const auto& c) { return rebuild_from<kMove>(c, leaves, pos); });
  }
}
}  // namespace detail

/// A tree shaped like `like` whose leaves are leaves[pos], leaves[pos + 1], ...; advances pos.
template <class T>
T rebuild(const T& like, const std::vector<Tensor>& leaves, size_t& pos) {
  return detail::rebuild_from<false>(like, leaves, pos);
}

template <class T>
T rebuild(const T& like, const std::vector<Tensor>& leaves) {
  size_t pos = 0;
  T out = rebuild(like, leaves, pos);
  check(pos == leaves.size(), "tree: ", leaves.size(), " leaves given for a structure of ", pos);
  return out;
}

/// As above, moving the leaves into the tree.
template <class T>
T rebuild(const T& like, std::vector<Tensor>&& leaves) {
  size_t pos = 0;
  T out = detail::rebuild_from<true>(like, leaves, pos);
  check(pos == leaves.size(), "tree: ", leaves.size(), " leaves given for a structure of ", pos);
  return out;
}

}  // namespace lanes::tree

// ---- LANES_TREE(Type, field...) -------------------------------------------------------------

#define LANES_TREE_EXPAND(x) x
#define LANES_TREE_EACH_1(f, x) f(x)
#define LANES_TREE_EACH_2(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_1(f, __VA_ARGS__))
#define LANES_TREE_EACH_3(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_2(f, __VA_ARGS__))
#define LANES_TREE_EACH_4(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_3(f, __VA_ARGS__))
#define LANES_TREE_EACH_5(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_4(f, __VA_ARGS__))
#define LANES_TREE_EACH_6(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_5(f, __VA_ARGS__))
#define LANES_TREE_EACH_7(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_6(f, __VA_ARGS__))
#define LANES_TREE_EACH_8(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_7(f, __VA_ARGS__))
#define LANES_TREE_EACH_9(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_8(f, __VA_ARGS__))
#define LANES_TREE_EACH_10(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_9(f, __VA_ARGS__))
#define LANES_TREE_EACH_11(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_10(f, __VA_ARGS__))
#define LANES_TREE_EACH_12(f, x, ...) f(x), LANES_TREE_EXPAND(LANES_TREE_EACH_11(f, __VA_ARGS__))
#define LANES_TREE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, name, ...) name
#define LANES_TREE_EACH(f, ...)                                                                   \
  LANES_TREE_EXPAND(LANES_TREE_PICK(                                                              \
      __VA_ARGS__, LANES_TREE_EACH_12, LANES_TREE_EACH_11, LANES_TREE_EACH_10, LANES_TREE_EACH_9, \
      LANES_TREE_EACH_8, LANES_TREE_EACH_7, LANES_TREE_EACH_6, LANES_TREE_EACH_5,                 \
      LANES_TREE_EACH_4, LANES_TREE_EACH_3, LANES_TREE_EACH_2, LANES_TREE_EACH_1)(f, __VA_ARGS__))
#define LANES_TREE_VISIT(field) f(x.field)
#define LANES_TREE_MAP(field) f(x.field)

/// Registers a struct (an aggregate whose listed fields are trees, up to 12) as a tree node.
#define LANES_TREE(Type, ...)                                    \
  template <>                                                    \
  struct lanes::tree::Tree<Type> {                               \
    static constexpr bool kNode = true;                          \
    template <class F>                                           \
    static void each(const Type& x, F&& f) {                     \
      LANES_TREE_EACH(LANES_TREE_VISIT, __VA_ARGS__);            \
    }                                                            \
    template <class F>                                           \
    static Type map(const Type& x, F&& f) {                      \
      return Type{LANES_TREE_EACH(LANES_TREE_MAP, __VA_ARGS__)}; \
    }                                                            \
  };
