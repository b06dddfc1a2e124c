// Ragged batches: B examples of one dtype and rank whose sizes may differ (sentences, time series,
// molecules), and vmap over them with f written for one example.
//
//     lanes::Ragged sentences({s0, s1, s2});              // example i: (L_i, d)
//     Tensor pooled = lanes::vmap(mean_over_time)(sentences);   // (B, d): one shape, stacked
//     lanes::Ragged hidden = lanes::vmap(encoder)(sentences);   // example i: (L_i, d)
//
// vmap(f)(..., ragged, ...) means exactly the per-example loop. A Ragged is mapped along its
// examples (its in_axes must be 0); the other arguments are mapped or not as in_axes says. The
// result has f's output tree with every leaf a Ragged; a Ragged whose examples share one shape
// converts implicitly to the stacked Tensor (B, ...).
//
// Strategy (VmapOptions::ragged): Group runs the examples of each distinct shape together as one
// call of the ordinary vmap (one trace and one batched graph per shape) and puts the results back
// in order; exact for every f. Pad runs one call over the examples padded to a common shape, with
// every primitive that combines values along a padded axis masking the padding out (reductions
// fill it with their identity, products contracting over it zero it, scans along it stop at each
// lane's length, gathers clamp to it: src/transforms/masking.h); f must not read an extent as a
// number beyond a count (mean), or Pad reports why. Auto picks by estimated cost among Group, Pad,
// and (one ragged length) Pad within buckets of similar lengths, one padded call per bucket;
// lanes::explain says which and why.
//
// Ragged leaves may sit in std::tuple, std::pair, std::vector, std::array and std::map arguments
// (not in LANES_TREE structs, whose per-example type would be another struct).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lanes/tensor.h"

namespace lanes {

struct Graph;
struct TensorType;
struct VmapOptions;

class Ragged {
 public:
  /// No examples.
  Ragged() = default;
  /// B examples of one dtype and rank (checked: the message names the first example that
  /// differs); their shapes may differ.
  explicit Ragged(std::vector<Tensor> examples);
  /// Examples packed along axis 0 of `values`: example i is the next lengths[i] rows
  /// (tf.RaggedTensor.from_row_lengths). The lengths must sum to values' first extent.
  static Ragged from_lengths(const Tensor& values, const Tensor& lengths);
  /// The B examples of `batched` along axis 0 (views); stacked() then returns `batched` itself.
  static Ragged from_stacked(const Tensor& batched);

  /// B, the number of examples.
  int64_t size() const { return static_cast<int64_t>(examples_.size()); }
  /// Example i at its own shape (negative i counts from the end).
  Tensor operator[](int64_t i) const;
  const std::vector<Tensor>& examples() const { return examples_; }
  /// (B,) int64: each example's extent along `axis`.
  Tensor lengths(int64_t axis = 0) const;
  /// (B, max extent per axis...): every example padded with `fill` at the high end of each axis.
  /// Made once per fill and kept (a Ragged is immutable).
  Tensor padded(double fill = 0) const;
  /// The examples stacked into (B, ...) when they share one shape; a lanes::Error naming two
  /// examples whose shapes differ otherwise.
  Tensor stacked() const;
  operator Tensor() const { return stacked(); }  // NOLINT: implicit on purpose (see the top)

 private:
  struct Cache;  // the stacked tensor a Ragged came from, padded tensors made on request
  std::vector<Tensor> examples_;
  std::shared_ptr<Cache> cache_;
};

/// How vmap runs over Ragged arguments (VmapOptions::ragged).
enum class RaggedStrategy {
  Auto,   // Group, Pad, or Pad within buckets of similar lengths, by estimated cost
  Group,  // the examples of each distinct shape as one batched call, results put back in order
  Pad,    // one call over the padded examples, the padding masked
};

namespace detail {

template <class T>
struct HasRagged : std::false_type {};
template <>
struct HasRagged<Ragged> : std::true_type {};
template <class... Ts>
struct HasRagged<std::tuple<Ts...>> : std::bool_constant<(HasRagged<Ts>::value || ...)> {};
template <class A, class B>
struct HasRagged<std::pair<A, B>> : std::bool_constant<HasRagged<A>::value || HasRagged<B>::value> {
};
template <class T>
struct HasRagged<std::vector<T>> : HasRagged<T> {};
template <class T, size_t N>
struct HasRagged<std::array<T, N>> : HasRagged<T> {};
template <class T>
struct HasRagged<std::map<std::string, T>> : HasRagged<T> {};
template <class T>
inline constexpr bool has_ragged_v = HasRagged<std::decay_t<T>>::value;

/// The per-example type of an argument: each Ragged becomes a Tensor.
template <class T>
struct ExampleOf {
  using type = T;
};
template <>
struct ExampleOf<Ragged> {
  using type = Tensor;
};
template <class... Ts>
struct ExampleOf<std::tuple<Ts...>> {
  using type = std::tuple<typename ExampleOf<Ts>::type...>;
};
template <class A, class B>
struct ExampleOf<std::pair<A, B>> {
  using type = std::pair<typename ExampleOf<A>::type, typename ExampleOf<B>::type>;
};
template <class T>
struct ExampleOf<std::vector<T>> {
  using type = std::vector<typename ExampleOf<T>::type>;
};
template <class T, size_t N>
struct ExampleOf<std::array<T, N>> {
  using type = std::array<typename ExampleOf<T>::type, N>;
};
template <class T>
struct ExampleOf<std::map<std::string, T>> {
  using type = std::map<std::string, typename ExampleOf<T>::type>;
};
template <class T>
using example_of_t = typename ExampleOf<std::decay_t<T>>::type;

/// The result type of a vmap over Ragged arguments: f's output tree with every leaf a Ragged.
template <class T>
struct RaggedOf {
  static_assert(std::is_same_v<T, Tensor>,
                "lanes: a vmap over Ragged arguments returns tuples, pairs, vectors, arrays and "
                "maps of Tensors (not LANES_TREE structs)");
  using type = Ragged;
};
template <class... Ts>
struct RaggedOf<std::tuple<Ts...>> {
  using type = std::tuple<typename RaggedOf<Ts>::type...>;
};
template <class A, class B>
struct RaggedOf<std::pair<A, B>> {
  using type = std::pair<typename RaggedOf<A>::type, typename RaggedOf<B>::type>;
};
template <class T>
struct RaggedOf<std::vector<T>> {
  using type = std::vector<typename RaggedOf<T>::type>;
};
template <class T, size_t N>
struct RaggedOf<std::array<T, N>> {
  using type = std::array<typename RaggedOf<T>::type, N>;
};
template <class T>
struct RaggedOf<std::map<std::string, T>> {
  using type = std::map<std::string, typename RaggedOf<T>::type>;
};

/// x with each Ragged leaf replaced by an undefined Tensor (where its examples will go), the
/// Raggeds collected in leaf order.
template <class T>
example_of_t<T> with_slots(const T& x, std::vector<const Ragged*>& raggeds) {
  if constexpr (std::is_same_v<T, Ragged>) {
    raggeds.push_back(&x);
    return Tensor();
  } else if constexpr (!has_ragged_v<T>) {
    return x;
  } else if constexpr (
      requires { std::tuple_size<T>::value; } &&
      !requires { typename T::value_type; }) {  // tuple, pair
    return std::apply([&](const auto&... c) { return example_of_t<T>{with_slots(c, raggeds)...}; },
                      x);
  } else if constexpr (requires { typename T::key_type; }) {  // map
    example_of_t<T> out;
    for (const auto& [k, c] : x) out.emplace(k, with_slots(c, raggeds));
    return out;
  } else {  // vector, array
    example_of_t<T> out{};
    if constexpr (requires { out.resize(0); }) out.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = with_slots(x[i], raggeds);
    return out;
  }
}

/// The tree shaped like `like` (f's output type) whose leaves are leaves[pos], ...: Raggeds.
template <class T>
typename RaggedOf<T>::type ragged_rebuild(const T& like, const std::vector<Ragged>& leaves,
                                          size_t& pos) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return leaves[pos++];
  } else if constexpr (
      requires { std::tuple_size<T>::value; } && !requires { typename T::value_type; }) {
    return std::apply(
        [&](const auto&... c) {
          return typename RaggedOf<T>::type{ragged_rebuild(c, leaves, pos)...};
        },
        like);
  } else if constexpr (requires { typename T::key_type; }) {
    typename RaggedOf<T>::type out;
    for (const auto& [k, c] : like) out.emplace(k, ragged_rebuild(c, leaves, pos));
    return out;
  } else {
    typename RaggedOf<T>::type out{};
    if constexpr (requires { out.resize(0); }) out.resize(like.size());
    for (size_t i = 0; i < like.size(); ++i) out[i] = ragged_rebuild(like[i], leaves, pos);
    return out;
  }
}

/// The examples of each distinct shape (of every Ragged at that example), in order of first
/// appearance; checks that every Ragged has `size` examples.
std::vector<std::vector<int64_t>> group_by_shape(const std::vector<const Ragged*>& raggeds,
                                                 int64_t size);

/// The inner call's leaves for one group: a Ragged slot (undefined leaf, Raggeds in order)
/// becomes its members' examples stacked on axis 0; a leaf mapped along axis a becomes its
/// members' slices along a; an unmapped leaf stays.
std::vector<Tensor> group_leaves(const std::vector<Tensor>& leaves,
                                 const std::vector<const Ragged*>& raggeds,
                                 const std::vector<std::optional<int64_t>>& axes,
                                 const std::vector<int64_t>& members);

/// Puts each group's outputs (batched along `axes`) back into per-example order: one Ragged per
/// output leaf.
std::vector<Ragged> ungroup(const std::vector<std::vector<Tensor>>& outputs,
                            const std::vector<std::optional<int64_t>>& axes,
                            const std::vector<std::vector<int64_t>>& groups, int64_t size);

struct PadCache;  // what Pad traced and found, per padded signature (src/transforms/ragged_pad.cpp)
struct PadPlan;   // one call's choice and inputs
std::shared_ptr<PadCache> make_pad_cache();
struct TracedExample;  // f's example graph and the hidden arguments its trace made (vmap.h)
/// Traces f's example at these leaf types, for a batch whose lanes are these examples (their
/// indices draw the lanes' random keys).
using TraceAt =
    std::function<TracedExample(const std::vector<TensorType>&, const std::vector<int64_t>&)>;

/// Pad's plan for one call: null when the strategy is Auto and Group is estimated faster (or
/// Pad cannot mask f). `trace_at` traces f's example at the given leaf types (Ragged slots at
/// their padded shapes); with RaggedStrategy::Pad an f Pad cannot mask is a lanes::Error saying
/// why.
std::shared_ptr<const PadPlan> plan_padded(PadCache& cache, const TraceAt& trace_at,
                                           const std::vector<const Ragged*>& raggeds,
                                           const std::vector<Tensor>& leaves,
                                           const std::vector<std::optional<int64_t>>& in_axes,
                                           size_t num_groups, const VmapOptions& options,
                                           std::vector<int64_t> lanes = {});

/// Runs the plan: one Ragged per output leaf (axis: each output's batch axis). A bucketed plan
/// makes one padded call per bucket (through the cache and trace_at again).
std::vector<Ragged> run_padded(PadCache& cache, const TraceAt& trace_at, const PadPlan& plan,
                               const std::vector<Tensor>& leaves,
                               const std::vector<std::optional<int64_t>>& in_axes,
                               const std::vector<std::optional<int64_t>>& out_axes,
                               const VmapOptions& options);

}  // namespace detail
}  // namespace lanes
