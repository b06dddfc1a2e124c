// lanes::explain: what vmap did to a function, for users who want to see what runs.
//
//     std::cout << lanes::explain(lanes::vmap(f), x, w);
//
// reports the graph of one example with every value marked mapped or not (unmapped values are
// computed once for the whole batch), the batched graph that runs, every broadcast of an
// unmapped value to the batch (a free stride-0 view, or a real copy with its bytes), and every
// primitive that fell back to the per-example loop. Neither jax nor PyTorch reports this.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "lanes/graph.h"
#include "lanes/vmap.h"

namespace lanes {

struct Explanation {
  struct Broadcast {
    std::string where;          // the primitive whose rule broadcast
    Shape shape;                // the broadcast (batched) shape
    int64_t bytes = 0;          // of the broadcast shape
    bool materialized = false;  // a real copy (else a stride-0 view)
  };
  int64_t batch_size = 0;
  Graph example;                      // one example, as traced
  std::vector<int64_t> example_dims;  // per value of `example`: its batch dim or kNotMapped
  Graph batched;                      // what runs on the batch
  std::vector<Broadcast> broadcasts;
  std::vector<std::string> fallbacks;  // primitives run by the per-example loop
  // How each batched cond or while ran: its strategy ("select", "partition", "mask",
  // "compact") and the lane counts behind the choice.
  std::vector<std::string> control_flow;
  // Whether the outermost chunked vmap ran its batch in chunks: "chunked: 4096 lanes in 32
  // chunks of 128 (estimated peak 29.8 GiB unchunked, budget 1 GiB)"; empty when it did not.
  std::string chunking;
  // The custom rules (lanes/custom.h) vmap met: a custom_vmap rule by name, custom_vjp and
  // custom_jvp functions whose rules lanes batched.
  std::vector<std::string> custom_rules;
  // How a vmap over Ragged arguments ran: "pad: 112 distinct shapes, padding 74% of the padded
  // work; estimated cost pad ..., group ..." or "group: ..." with the reason.
  std::string ragged;
  int64_t materialized_bytes() const;
};

std::ostream& operator<<(std::ostream& os, const Explanation& e);

namespace detail {
/// Collects what the vmaps run while it lives report (the outermost vmap's view).
class ExplainScope {
 public:
  ExplainScope();
  ~ExplainScope();
  Explanation take();
};
}  // namespace detail

/// Traces `batched(args...)` (no computation happens) and reports what the vmap did.
template <class F, class... Args>
Explanation explain(const Vmapped<F>& batched, const Args&... args) {
  detail::ExplainScope scope;
  if constexpr ((detail::has_ragged_v<Args> || ...)) {
    // Ragged arguments: the choice depends on the lengths, so the call runs (no batched graph).
    (void)batched(args...);
    return scope.take();
  } else {
    Graph g = make_graph(batched)(args...);
    Explanation e = scope.take();
    e.batched = std::move(g);
    return e;
  }
}

}  // namespace lanes
