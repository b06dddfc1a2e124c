// Helpers of the tests that look at what compile makes of a function: the graph it runs, the
// nodes of a kind in it, and random inputs.
#pragma once

#include <string>

#include "lanes/lanes.h"

/// Standard normal values of `shape`, cast to `dtype`.
inline lanes::Tensor randn(const lanes::Shape& shape, uint64_t seed,
                           lanes::DType dtype = lanes::kFloat32) {
  return lanes::cast(lanes::random::normal(lanes::random::key(seed), shape), dtype);
}

/// Nodes of primitive `name` in g.
inline int count(const lanes::Graph& g, const std::string& name) {
  int n = 0;
  for (const lanes::Node& node : g.nodes) n += node.prim->name() == name;
  return n;
}

/// The graph compile runs for f on args.
template <class F, class... Args>
lanes::Graph compiled_graph(F f, const Args&... args) {
  return lanes::detail::fuse_elementwise(lanes::detail::optimize(lanes::make_graph(f)(args...)));
}
