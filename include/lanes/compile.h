// compile(f): trace once per input signature, optimize the graph, run it fast (jax.jit).
//
//     auto step = lanes::compile(lanes::vmap(lanes::grad(loss), lanes::in_axes(lanes::none, 0,
//     0))); auto grads = step(params, x, y);   // first call traces, batches, optimizes; later
//     calls run
//
// The cache key is the argument types (C++ types, leaf shapes and dtypes). Tensors the function
// captures are baked in as constants at trace time, as jax.jit does; Variables it reads and
// Generators it draws from are not: they are read at each call (lanes/implicit.h), and a
// Variable of a new shape or dtype retraces. Inside another transform a compiled function is
// simply traced through.
#pragma once

#include <any>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <typeinfo>
#include <unordered_map>

#include "lanes/graph.h"
#include "lanes/implicit.h"
#include "lanes/tree.h"
#include "lanes/vmap.h"

namespace lanes {

namespace detail {

/// Graph passes run once per signature: dead code elimination, common subexpression
/// elimination, constant folding, simplification of the reshapes/transposes/broadcasts/casts
/// that batching and autodiff introduce (src/runtime/passes.cpp).
Graph optimize(const Graph& g);

/// Drops from each scan the carries its body passes through unchanged (their final value is the
/// initial one) and the ys it returns twice (src/runtime/scan_passes.cpp). Part of optimize.
Graph simplify_scans(Graph g);

/// Takes each product of a scan's xs step with one of its consts out of the loop: one product
/// over all steps before it, read by the body as a new xs (prim::Scan::hoisted_products, in
/// src/runtime/scan_passes.cpp). Part of optimize.
Graph hoist_scan_products(Graph g);

/// Rewrites a sum of dot_generals with equal dimension numbers whose outputs are larger than their
/// operands (per-step outer products of a loop's weight gradient) into one dot_general over the
/// stacked operands (src/runtime/dot_sums.cpp). Part of optimize.
Graph merge_dot_sums(const Graph& g);

/// Rewrites the sum of squares of a dot_general's output over its non-batch dims (a per-example
/// gradient norm) into the Gram matrices of its operands, when those are smaller: the product
/// never reaches memory (src/runtime/product_norms.cpp). Part of optimize.
Graph fold_product_norms(const Graph& g);

/// Groups chains of elementwise nodes of one shape into fused_elementwise nodes, each run as one
/// tiled pass over memory (src/runtime/fusion.cpp). The last step before execution.
Graph fuse_elementwise(const Graph& g);

/// Runs an optimized graph on concrete inputs without re-validating shapes per node; frees
/// each intermediate after its last use (src/runtime/executor.cpp).
std::vector<Tensor> execute(const Graph& g, const std::vector<Tensor>& inputs);
/// As above, taking the inputs: each is moved into the run (no reference count is touched, and
/// an input the caller no longer holds may be overwritten by a kernel at its last use).
std::vector<Tensor> execute(const Graph& g, std::vector<Tensor>&& inputs);

/// Writes a compiled call's cache key into `key` as bytes: `types` (the C++ argument types'
/// type_info), then each leaf's dtype, rank and dims. Its memory is reused: once the buffer is
/// large enough a call's key allocates nothing (a string of type names and decimal dims was ~10%
/// of a call that does no work).
void signature(std::string& key, const std::vector<Tensor>& leaves, const std::type_info& types);

struct CompiledEntry {
  Graph graph;
  std::any out;                         // the traced result: the structure of the output tree
  std::vector<ImplicitInput> implicit;  // hidden inputs read at each call (lanes/implicit.h)
};

/// Whether two entries read Variables of the same types (then one of them is enough).
bool same_implicit_types(const std::vector<ImplicitInput>& a, const std::vector<ImplicitInput>& b);

}  // namespace detail

template <class F>
class Compiled {
 public:
  explicit Compiled(F f) : f_(std::move(f)), cache_(std::make_shared<Cache>()) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr ((detail::has_ragged_v<Args> || ...)) {
      // Ragged arguments have no one signature to trace: a vmap over them keys its optimized
      // graphs itself, by the padded shapes (Pad) or by each group's shape (Group).
      return f_(args...);
    } else {
      std::vector<Tensor> leaves;
      (tree::flatten(args, leaves), ...);
      return call(leaves, args...);
    }
  }

  /// For F a function of the flat leaf list (const std::vector<Tensor>&): the call on a list the
  /// caller gives up, whose leaves are moved into the run, not copied (Python's jit calls this).
  auto call_taking(std::vector<Tensor>&& leaves) const { return call(leaves, leaves); }

  /// Number of traces kept: one per signature, and per types of the Variables read.
  size_t cache_size() const {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    return cache_->entries.size();
  }

 private:
  // `leaves` are the leaves of args (or args itself, the leaf list): moved into the run at the
  // end, when args is no longer read.
  template <class... Args>
  auto call(std::vector<Tensor>& leaves, const Args&... args) const {
    using Out = std::invoke_result_t<const F&, const Args&...>;
    // Inside another transform a compiled function is traced through, also on concrete
    // arguments: the Variables it reads are the enclosing transform's inputs then.
    if (detail::any_traced(leaves) || detail::tracing()) return f_(args...);
    thread_local std::string key;  // (a trace below may call another compiled function)
    detail::signature(key, leaves, typeid(std::tuple<Args...>));
    std::shared_ptr<const detail::CompiledEntry> entry;
    {
      // The entry whose Variables have the types they have now (it reads their values and
      // advances its Generators: a call's state is taken once, under the lock). The last entry
      // found is tried first: a function called again on one signature skips the hash.
      std::lock_guard<std::mutex> lock(cache_->mutex);
      if (cache_->last && key == cache_->last_key &&
          detail::read_implicit(cache_->last->implicit, leaves)) {
        entry = cache_->last;
      } else {
        auto [it, end] = cache_->entries.equal_range(key);
        for (; it != end && !entry; ++it)
          if (detail::read_implicit(it->second->implicit, leaves)) entry = it->second;
        if (entry) {
          cache_->last = entry;
          cache_->last_key = key;
        }
      }
    }
    if (!entry) {
      const std::string signature = key;
      Out out{};
      auto fresh = std::make_shared<detail::CompiledEntry>();
      {
        detail::CompileFrame frame;
        Graph g = detail::trace<F>(f_, &out, detail::leaf_types(args...), args...);
        fresh->implicit = frame.inputs();
        fresh->graph = detail::fuse_elementwise(detail::optimize(g));
      }
      fresh->out = std::move(out);
      std::lock_guard<std::mutex> lock(cache_->mutex);
      check(detail::read_implicit(fresh->implicit, leaves),
            "compile: a Variable the function reads changed shape or dtype while it was traced");
      auto [it, end] = cache_->entries.equal_range(signature);
      bool known = false;
      for (; it != end; ++it)
        known |= detail::same_implicit_types(it->second->implicit, fresh->implicit);
      if (!known) cache_->entries.emplace(signature, fresh);
      entry = std::move(fresh);
    }
    return tree::rebuild(std::any_cast<const Out&>(entry->out),
                         detail::execute(entry->graph, std::move(leaves)));
  }

  struct Cache {
    mutable std::mutex mutex;
    std::unordered_multimap<std::string, std::shared_ptr<const detail::CompiledEntry>> entries;
    std::string last_key;  // the key of `last`, the entry the last call found
    std::shared_ptr<const detail::CompiledEntry> last;
  };
  F f_;
  std::shared_ptr<Cache> cache_;
};

/// f traced and optimized once per input signature (see the top of this file).
template <class F>
Compiled<F> compile(F f) {
  return Compiled<F>(std::move(f));
}

}  // namespace lanes
