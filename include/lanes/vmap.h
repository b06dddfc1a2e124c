// vmap: the static batching transform (jax.vmap, torch.vmap, tf.vectorized_map).
//
//     auto batched = lanes::vmap(f);                      // map axis 0 of every argument
//     auto g = lanes::vmap(f, {0, lanes::none});          // per argument: axis 0 / shared
//     auto h = lanes::vmap(f, {{0, 1}, -1}, 1);           // per leaf of a pair, out axis 1
//
// vmap traces f once on one example (shapes without the mapped axis) into a graph, then runs the
// graph's batching rules on the whole batch: a few large ops instead of a loop. Inside another
// transform (vmap, grad, make_graph) the batched ops are recorded instead, which is how
// transforms compose and nest.
//
// Semantics follow jax.vmap: in_axes per argument or per leaf (int, negative int, or none for a
// value shared by all examples); all mapped sizes equal, except that a mapped axis of size 1
// broadcasts (as tf.vectorized_map); options.axis_size gives the size when nothing is mapped;
// out_axes place the batch axis of each output (none: the output must not depend on the mapped
// inputs).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "lanes/collectives.h"
#include "lanes/graph.h"
#include "lanes/implicit.h"
#include "lanes/ragged.h"
#include "lanes/tree.h"

namespace lanes {

/// `lanes::none`: an argument or output that is not mapped.
struct NoneAxis {};
inline constexpr NoneAxis none{};

/// An axis, none, or a list matching the children of a tree (per argument at the top level of
/// in_axes).
class AxisSpec {
 public:
  AxisSpec(int axis) : axis_(axis) {}      // NOLINT: implicit so that `0` and `{0, 1}` read well
  AxisSpec(int64_t axis) : axis_(axis) {}  // NOLINT
  AxisSpec(NoneAxis) {}                    // NOLINT
  AxisSpec(std::initializer_list<AxisSpec> children) : leaf_(false), children_(children) {}
  explicit AxisSpec(std::vector<AxisSpec> children)
      : leaf_(false), children_(std::move(children)) {}
  /// A spec decided when vmap resolves it, by calling `decide`: the out_axes of a language
  /// binding, whose output tree is known only once f has been traced.
  static AxisSpec deferred(std::function<AxisSpec()> decide) {
    AxisSpec s(none);
    s.decide_ = std::make_shared<const std::function<AxisSpec()>>(std::move(decide));
    return s;
  }

  bool is_deferred() const { return decide_ != nullptr; }
  AxisSpec decided() const { return is_deferred() ? (*decide_)() : *this; }
  bool is_leaf() const { return leaf_; }
  const std::optional<int64_t>& axis() const { return axis_; }
  const std::vector<AxisSpec>& children() const { return children_; }

 private:
  bool leaf_ = true;
  std::optional<int64_t> axis_;
  std::vector<AxisSpec> children_;
  std::shared_ptr<const std::function<AxisSpec()>> decide_;
};

/// Per-argument in_axes: in_axes(0, none, {0, 1}) (a braced list is a per-leaf spec).
inline AxisSpec in_axes(AxisSpec a) { return AxisSpec(std::vector<AxisSpec>{a}); }
inline AxisSpec in_axes(AxisSpec a, AxisSpec b) { return AxisSpec(std::vector<AxisSpec>{a, b}); }
inline AxisSpec in_axes(AxisSpec a, AxisSpec b, AxisSpec c) {
  return AxisSpec(std::vector<AxisSpec>{a, b, c});
}
inline AxisSpec in_axes(AxisSpec a, AxisSpec b, AxisSpec c, AxisSpec d) {
  return AxisSpec(std::vector<AxisSpec>{a, b, c, d});
}
inline AxisSpec in_axes(AxisSpec a, AxisSpec b, AxisSpec c, AxisSpec d, AxisSpec e) {
  return AxisSpec(std::vector<AxisSpec>{a, b, c, d, e});
}
inline AxisSpec in_axes(AxisSpec a, AxisSpec b, AxisSpec c, AxisSpec d, AxisSpec e, AxisSpec f) {
  return AxisSpec(std::vector<AxisSpec>{a, b, c, d, e, f});
}
/// Any number of arguments: in_axes(0, none, 0, 0, 1, 0, none, ...). C++ cannot deduce a braced
/// list through a template, so beyond six arguments a per-leaf spec is spelled AxisSpec{0, 1}.
template <class... A>
requires(sizeof...(A) > 6 && (std::is_convertible_v<const A&, AxisSpec> && ...)) AxisSpec
    in_axes(const A&... a) {
  return AxisSpec(std::vector<AxisSpec>{AxisSpec(a)...});
}

enum class Fallback {
  Warn,   // run a primitive without a batching rule once per example, warning once per primitive
  Error,  // throw lanes::Error instead (tf.vectorized_map's fallback_to_while_loop=False)
};

/// How vmap runs a cond or switch_case whose predicate or index differs between examples.
enum class CondStrategy {
  Auto,       // by estimated cost from the branches' work and each call's lane counts
  Select,     // every branch on every lane, then a per-lane select (jax)
  Partition,  // each branch on its own lanes only, gathered and scattered back (tf pfor)
};
/// How vmap runs a while_loop whose predicate differs between examples.
enum class LoopStrategy {
  Auto,     // compact once the time spent on finished lanes would pay for gathering the rest
  Mask,     // iterate until every lane is done, updating the active lanes only (jax, torch)
  Compact,  // gather the active lanes into a smaller batch whenever a quarter finish (tf pfor)
};

namespace distributed {
class Communicator;
}

/// What the ranks of a sharded vmap (VmapOptions::shard) pass in and get back.
enum class ShardInputs {
  // Every rank passes the whole batch and gets the whole result, as an unsharded vmap returns
  // it; rank r runs lanes [r * B / n, (r + 1) * B / n) (sizes differ by at most one), and mapped
  // outputs are gathered from every rank (MPI_Allgatherv).
  Whole,
  // Each rank passes only its own lanes (any number, also none) and gets its own lanes'
  // outputs; the axis is the ranks' lanes in rank order (axis_index counts from the first).
  Local,
};

struct VmapOptions {
  std::optional<int64_t> axis_size;  // the batch size when no argument is mapped
  Fallback fallback = Fallback::Warn;
  CondStrategy cond = CondStrategy::Auto;
  LoopStrategy loop = LoopStrategy::Auto;
  // Memory: run the batch in chunks of this many lanes (torch.func's chunk_size) ...
  std::optional<int64_t> chunk_size;
  // ... or let vmap pick the largest chunk whose estimated peak memory fits this budget. With
  // neither set the budget is default_vmap_memory_budget(), so a vmap that would not fit in
  // memory runs chunked instead of failing. Chunked results equal unchunked ones.
  std::optional<int64_t> max_memory_bytes;
  // Draws from a random::Generator inside f (lanes/random.h): an error by default.
  Randomness randomness = Randomness::Error;
  // The name of the mapped axis, for the collectives over it (psum, all_gather, ...:
  // lanes/collectives.h). Empty: unnamed.
  std::string axis_name;
  // Shards the mapped axis across the ranks of this communicator (lanes/distributed.h; null: not
  // sharded): each rank runs its lanes with the ordinary vmap, and the collectives over
  // axis_name combine the lanes of every rank through MPI.
  std::shared_ptr<const distributed::Communicator> shard;
  // What each rank passes to a sharded vmap and gets back (see ShardInputs).
  ShardInputs shard_inputs = ShardInputs::Whole;
  // How Ragged arguments are run (lanes/ragged.h).
  RaggedStrategy ragged = RaggedStrategy::Auto;
};

/// Half of the machine's physical memory: the budget of a vmap that sets neither chunk_size nor
/// max_memory_bytes.
int64_t default_vmap_memory_budget();

namespace detail {

/// A leaf of the arguments or outputs with its axis spec and a name for messages.
struct AxisLeaf {
  std::optional<int64_t> axis;
  std::string path;  // "argument 1", "argument 0[2]", "output 0"
};

/// Matches `spec` against the tree x: a leaf spec applies to every leaf below it.
template <class T>
void resolve_axes(const T& x, const AxisSpec& spec, const std::string& path,
                  std::vector<AxisLeaf>& out) {
  if (spec.is_deferred()) return resolve_axes(x, spec.decided(), path, out);
  if (spec.is_leaf()) {
    for (size_t i = 0, n = tree::num_leaves(x); i < n; ++i)
      out.push_back({spec.axis(), n == 1 ? path : path + "[" + std::to_string(i) + "]"});
    return;
  }
  if constexpr (std::is_same_v<T, Tensor>) {
    throw Error("vmap: axis spec for " + path + " is a list of " +
                std::to_string(spec.children().size()) + " but the value is a single Tensor");
  } else {
    size_t i = 0, n = 0;
    tree::Tree<T>::each(x, [&](const auto&) { ++n; });
    check(n == spec.children().size(), "vmap: axis spec for ", path, " has ",
          spec.children().size(), " entries but the value has ", n, " children");
    tree::Tree<T>::each(x, [&](const auto& c) {
      resolve_axes(c, spec.children()[i], path + "[" + std::to_string(i) + "]", out);
      ++i;
    });
  }
}

/// What vmap knows before tracing: the batch size and each leaf's per-example type.
struct VmapPlan {
  int64_t size = 0;
  std::vector<int64_t> dims;              // per input leaf: mapped axis (>= 0) or kNotMapped
  std::vector<TensorType> example_types;  // per input leaf, without the mapped axis
};

/// Validates the input leaves against their axes (ranges, consistent sizes) and plans the map.
VmapPlan plan_vmap(const std::vector<Tensor>& leaves, const std::vector<AxisLeaf>& axes,
                   const VmapOptions& options);

/// Runs the graph of one example on the whole batch; returns the output leaves with their batch
/// axes placed as `out_axes` says.
std::vector<Tensor> run_vmap(const Graph& g, const std::vector<Tensor>& leaves,
                             const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                             const VmapOptions& options);

/// The batched, optimized and fused graphs of one vmap, keyed by the traced example graph, for
/// calls on concrete inputs (src/runtime/vmap_cache.cpp). Copies share the cache. It holds at most
/// 8 graphs, and with them the tensors f captured when each was traced.
class VmapCache {
 public:
  VmapCache();
  /// A cache for a Jacobian's vmap, whose last leaf is always the identity basis of its type
  /// (a contract of the caller, not checked). Bases up to 4 MiB are made constants of the batched
  /// graph, which then holds one, so the passes fold the products of the basis with constants
  /// (a captured W times the identity is W) when the graph is built, not on every call.
  static VmapCache for_jacobian();
  /// How a call uses the cache. The chunks of a chunked vmap set both: a chunk of a Jacobian's
  /// basis is not the identity, and every chunk runs the same optimized graph (so the result does
  /// not depend on which chunk came first).
  struct Use {
    bool bake_basis = true;  // false: never bake the last leaf
    bool build_now = false;  // build the entry on the first call instead of the second
  };
  std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& leaves, const VmapPlan& plan,
                          const std::vector<AxisLeaf>& out_axes, const VmapOptions& options,
                          Use use) const;
  std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& leaves, const VmapPlan& plan,
                          const std::vector<AxisLeaf>& out_axes, const VmapOptions& options) const {
    return run(g, leaves, plan, out_axes, options, Use{});
  }
  /// Batched graphs held now.
  size_t size() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

/// Appends the hidden arguments f's trace made (lanes/implicit.h) to the leaves and the plan.
void append_hidden(const VmapFrame& frame, std::vector<Tensor>& leaves, VmapPlan& plan);

/// Whether any leaf is traced (then transforms trace through instead of running).
bool any_traced(const std::vector<Tensor>& leaves);

/// How many lanes of a vmap run at once (src/transforms/chunking.cpp).
struct ChunkPlan {
  int64_t chunk = 0;       // the plan's size: one piece
  bool optimized = false;  // it fits only as the optimized graph: never run the rules eagerly
  bool parallel = false;   // the chunks run at once, one per pool thread (loops of small steps)
};
/// options.chunk_size, or the most lanes whose estimated peak memory fits
/// options.max_memory_bytes (or the default budget): estimated from the example graph, then, if
/// that does not fit, from the optimized one (whose rewrites may never form the largest values).
/// Tells lanes::explain when it chunks.
ChunkPlan plan_chunk(const Graph& g, const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                     const VmapOptions& options);

/// The vmap run `chunk` lanes at a time: on concrete inputs a loop over the chunks, each from
/// `cache`, written into the outputs; under a trace (cache null) a scan over the chunks, so
/// grad and compile see a loop and the compiled graph keeps the memory bound. `parallel`: the
/// chunks run at once on the pool (a parallel loop; a scan with ScanOptions::parallel).
std::vector<Tensor> run_chunked(const Graph& g, const std::vector<Tensor>& leaves,
                                const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                const VmapOptions& options, int64_t chunk, const VmapCache* cache,
                                bool parallel = false);

/// The lanes of a sharded vmap: `counts[r]` lanes on rank r, this rank's starting at `offset`.
struct ShardPlan {
  int64_t global = 0;
  int64_t offset = 0;
  std::vector<int64_t> counts;
};
/// For a sharded vmap (options.shard), the lanes of each rank, agreed with the other ranks (a
/// collective: every rank calls it); nullopt otherwise (src/distributed/).
std::optional<ShardPlan> plan_shard(const VmapPlan& plan, const VmapOptions& options);
/// Runs this rank's lanes with the ordinary vmap (from `cache` on concrete inputs), its
/// collectives spanning every rank; ShardInputs::Whole gathers the mapped outputs.
std::vector<Tensor> run_sharded(const Graph& g, const std::vector<Tensor>& leaves,
                                const VmapPlan& plan, const ShardPlan& shard,
                                const std::vector<AxisLeaf>& out_axes, const VmapOptions& options,
                                const VmapCache& cache);
/// Runs body; when it throws on some rank, every rank of options.shard throws (the others at
/// their next collective or at the agreement this makes after body), so that none waits forever.
void sharded_call(const VmapOptions& options, const std::function<void()>& body);

/// f's example graph, traced at the padded shapes, and the hidden arguments (Generator keys) its
/// trace made.
struct TracedExample {
  Graph graph;
  std::vector<VmapFrame::Hidden> hidden;
};

/// The axes of a vmap's leaves when some are Ragged (undefined slots): every Ragged must be
/// mapped along axis 0 and every mapped Tensor must have `size` examples along its axis.
std::vector<std::optional<int64_t>> check_ragged_axes(const std::vector<Tensor>& leaves,
                                                      const std::vector<AxisLeaf>& axes,
                                                      int64_t size);

}  // namespace detail

template <class F>
class Vmapped {
 public:
  /// `cache` may be shared with another Vmapped (a Jacobian reuses its graphs across calls).
  Vmapped(F f, AxisSpec in_axes, AxisSpec out_axes, VmapOptions options,
          detail::VmapCache cache = {})
      : f_(std::move(f)),
        in_(std::move(in_axes)),
        out_(std::move(out_axes)),
        opt_(options),
        cache_(std::move(cache)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr ((detail::has_ragged_v<Args> || ...)) {
      return call_ragged(args...);
    } else {
      if (!opt_.shard) return call(args...);
      // Sharded across ranks: when one rank raises, every rank raises (lanes/distributed.h).
      std::optional<decltype(call(args...))> result;
      detail::sharded_call(opt_, [&] { result.emplace(call(args...)); });
      return std::move(*result);
    }
  }

  /// Batched graphs cached for concrete calls (see detail::VmapCache).
  size_t cache_size() const { return cache_.size(); }

 private:
  // The axis of every argument leaf, in_axes matched against the arguments' trees.
  template <class... Args>
  std::vector<detail::AxisLeaf> in_axes_of(const Args&... args) const {
    std::vector<detail::AxisLeaf> axes;
    if (in_.is_leaf()) {
      size_t i = 0;
      ((detail::resolve_axes(args, in_, "argument " + std::to_string(i++), axes)), ...);
    } else {
      check(in_.children().size() == sizeof...(Args), "vmap: in_axes has ", in_.children().size(),
            " entries but the function got ", sizeof...(Args), " arguments");
      size_t i = 0;
      ((detail::resolve_axes(args, in_.children()[i], "argument " + std::to_string(i), axes), ++i),
       ...);
    }
    return axes;
  }

  // Ragged arguments (lanes/ragged.h): one call of the ordinary vmap over the padded examples
  // with the padding masked (Pad), or one per distinct example shape with the results put back
  // in order (Group); Auto picks by estimated cost.
  template <class... Args>
  auto call_ragged(const Args&... args) const {
    check(!opt_.shard, "vmap: Ragged arguments do not compose with a sharded vmap yet");
    // One Generator key per call whatever the strategy runs; lane i's is fold_in(K, i).
    detail::RaggedCallFrame keys;
    std::vector<const Ragged*> raggeds;
    const std::tuple<detail::example_of_t<Args>...> slots{detail::with_slots(args, raggeds)...};
    std::vector<Tensor> leaves;
    std::apply([&](const auto&... s) { (tree::flatten(s, leaves), ...); }, slots);
    const std::vector<detail::AxisLeaf> axes =
        std::apply([&](const auto&... s) { return in_axes_of(s...); }, slots);
    const int64_t size = raggeds.front()->size();
    const std::vector<std::optional<int64_t>> in = detail::check_ragged_axes(leaves, axes, size);
    const std::vector<std::vector<int64_t>> groups = detail::group_by_shape(raggeds, size);
    using Out = std::invoke_result_t<const F&, const detail::example_of_t<Args>&...>;
    std::optional<Out> like;
    auto out_axes_of = [&](const Out& shape) {
      std::vector<detail::AxisLeaf> out_axes;
      detail::resolve_axes(shape, out_, "output", out_axes);
      std::vector<std::optional<int64_t>> out;
      for (const detail::AxisLeaf& a : out_axes) {
        check(a.axis.has_value(), "vmap: ", a.path, " has out_axes none, which Ragged arguments ",
              "do not support yet (each example's output is returned)");
        out.push_back(a.axis);
      }
      return out;
    };
    if (opt_.ragged != RaggedStrategy::Group) {
      const detail::TraceAt trace_at = [&](const std::vector<TensorType>& types,
                                           const std::vector<int64_t>& lanes) {
        Out out{};
        detail::TracedExample t;
        detail::LaneExamples ids(tensor(lanes));
        detail::VmapFrame frame(opt_.randomness, int64_t(lanes.size()));  // draws: hidden inputs
        t.graph = std::apply(
            [&](const auto&... s) { return detail::trace<F>(f_, &out, types, s...); }, slots);
        t.hidden = frame.hidden();
        if (!like) like.emplace(std::move(out));
        return t;
      };
      const auto plan =
          detail::plan_padded(*pad_cache_, trace_at, raggeds, leaves, in, groups.size(), opt_);
      if (plan) {
        size_t pos = 0;
        return detail::ragged_rebuild(
            *like,
            detail::run_padded(*pad_cache_, trace_at, *plan, leaves, in, out_axes_of(*like), opt_),
            pos);
      }
    }
    std::vector<std::vector<Tensor>> outputs;
    for (const std::vector<int64_t>& members : groups) {
      const std::vector<Tensor> group = detail::group_leaves(leaves, raggeds, in, members);
      const std::tuple<detail::example_of_t<Args>...> example_args = std::apply(
          [&](const auto&... s) {
            size_t pos = 0;
            return std::tuple<detail::example_of_t<Args>...>{tree::rebuild(s, group, pos)...};
          },
          slots);
      detail::LaneExamples lanes(tensor(members));  // the group's lanes draw as their examples
      Out out = std::apply([&](const auto&... a) { return call(a...); }, example_args);
      outputs.push_back(tree::flatten(out));
      if (!like) like.emplace(std::move(out));
    }
    const Out shape = like ? *like : Out{};
    size_t pos = 0;
    return detail::ragged_rebuild(shape, detail::ungroup(outputs, out_axes_of(shape), groups, size),
                                  pos);
  }

  template <class... Args>
  auto call(const Args&... args) const {
    std::vector<Tensor> leaves;
    (tree::flatten(args, leaves), ...);
    const std::vector<detail::AxisLeaf> axes = in_axes_of(args...);
    detail::VmapPlan plan = detail::plan_vmap(leaves, axes, opt_);
    // A sharded vmap agrees with the other ranks on the lanes each one runs.
    const std::optional<detail::ShardPlan> shard = detail::plan_shard(plan, opt_);
    using Out = std::invoke_result_t<const F&, const Args&...>;
    Out out{};
    // Variables read and Generators drawn from inside f become hidden arguments.
    const Graph g = [&] {
      detail::AxisNameScope axis(opt_.axis_name, shard ? shard->global : plan.size);
      detail::VmapFrame frame(opt_.randomness, plan.size);
      Graph traced = detail::trace<F>(f_, &out, plan.example_types, args...);
      detail::append_hidden(frame, leaves, plan);
      return traced;
    }();
    std::vector<detail::AxisLeaf> out_axes;
    detail::resolve_axes(out, out_, "output", out_axes);
    if (shard)
      return tree::rebuild(out,
                           detail::run_sharded(g, leaves, plan, *shard, out_axes, opt_, cache_));
    // Inside another transform the batched example is recorded into the enclosing trace; on
    // concrete inputs it runs optimized, from the cache.
    const bool traced = detail::any_traced(leaves) || !g.captured.empty();
    // A graph holding collectives over the axes of enclosing vmaps, which only they evaluate, is
    // recorded into the enclosing trace too, never run from the cache.
    const bool foreign = detail::reads_other_axes(g, opt_.axis_name);
    const detail::ChunkPlan chunks = detail::plan_chunk(g, plan, out_axes, opt_);
    if (chunks.chunk < plan.size) {
      // Each chunk would combine only its own lanes.
      check(!detail::has_collectives(g), "vmap: chunking (VmapOptions::chunk_size or ",
            "max_memory_bytes) does not yet compose with collectives (psum, all_gather, ...) in ",
            "the mapped function; run it unchunked");
      return tree::rebuild(out, detail::run_chunked(g, leaves, plan, out_axes, opt_, chunks.chunk,
                                                    traced ? nullptr : &cache_, chunks.parallel));
    }
    if (traced || foreign)
      return tree::rebuild(out, detail::run_vmap(g, leaves, plan, out_axes, opt_));
    return tree::rebuild(out,
                         cache_.run(g, leaves, plan, out_axes, opt_, {true, chunks.optimized}));
  }

  F f_;
  AxisSpec in_, out_;
  VmapOptions opt_;
  detail::VmapCache cache_;
  std::shared_ptr<detail::PadCache> pad_cache_ = detail::make_pad_cache();
};

/// The batched version of f (see the top of this file).
template <class F>
Vmapped<F> vmap(F f, AxisSpec in_axes = 0, AxisSpec out_axes = 0, VmapOptions options = {}) {
  return Vmapped<F>(std::move(f), std::move(in_axes), std::move(out_axes), options);
}

}  // namespace lanes
