// The pieces every workload of bench/workloads.cpp shares: what a workload and a variant are,
// slicing and stacking examples for the loop variants, and the output checksums.
#pragma once

#include <lanes/lanes.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace workloads {

using lanes::Shape;
using lanes::Tensor;

/// Whether the run is a --quick smoke test (CI): a workload too heavy for one may shrink.
inline bool& quick_mode() {
  static bool quick = false;
  return quick;
}

/// What a variant returns: the leaves of its output tree, in tree order.
using Outputs = std::vector<Tensor>;

/// One way to compute a workload (loop, vmap, vmap+compile, manual). Its inputs are captured.
/// A variant too slow to repeat (the loop of a while_loop workload) sets `once`: it runs one
/// timed run and no warm-up.
struct Variant {
  std::string name;
  std::function<Outputs()> run;
  bool once = false;
};

/// A workload of WORKLOADS.md. setup() draws the inputs (fixed seeds) and returns the variants,
/// which capture them; it runs only when the workload is selected, and the inputs die with the
/// variants.
struct Workload {
  std::string name;
  std::vector<Variant> (*setup)();
};

/// What one setup() recorded.
struct InputLog {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<std::pair<std::string, double>> params;
};

/// The log setup() writes to during a dump; null otherwise.
inline InputLog*& input_log() {
  static InputLog* log = nullptr;
  return log;
}

/// The bytes of the inputs the running setup() named; main() resets it before each setup().
inline double& input_bytes() {
  static double bytes = 0;
  return bytes;
}

/// Records the workload's inputs by name when dumping (--dump-inputs, see dump.h): the arrays
/// the peer scripts of bench/peers/ read, so a setup() names every input its variants use.
/// They also count towards the row's input bytes (the roofline's reads, roofline.h).
inline void inputs(std::initializer_list<std::pair<const char*, Tensor>> named) {
  for (const auto& [name, t] : named) {
    input_bytes() += double(t.numel()) * double(lanes::dtype_size(t.dtype()));
    if (InputLog* log = input_log()) log->tensors.emplace_back(name, t);
  }
}

/// Records a number the peers need (a threshold, a tolerance, a step count) when dumping.
inline double param(const std::string& name, double v) {
  if (InputLog* log = input_log()) log->params.emplace_back(name, v);
  return v;
}

template <class T>
Outputs leaves(const T& tree) {
  return lanes::tree::flatten(tree);
}

/// Example i of a batch along axis 0 (a view, as a loop over a batch would take it).
inline Tensor example(const Tensor& x, int64_t i) {
  return lanes::squeeze(lanes::slice_axis(x, 0, i, i + 1), 0);
}

/// Standard normal numbers times `scale` from their own fixed seed.
inline Tensor normal(uint64_t seed, const Shape& shape, double scale = 1.0) {
  return lanes::random::normal(lanes::random::key(seed), shape) * scale;
}

/// Integer class labels in [0, classes).
inline Tensor labels(uint64_t seed, int64_t n, int64_t classes) {
  const Tensor u = lanes::random::uniform(lanes::random::key(seed), {n}, 0.0, double(classes));
  return lanes::cast(u, lanes::kInt32);  // truncation: 0 .. classes - 1
}

/// The loop variant's shape: calls per_example(i) for i < n, each returning a tree, and stacks
/// the results leaf by leaf along a new axis 0.
template <class F>
Outputs loop_stack(int64_t n, F&& per_example) {
  std::vector<Outputs> per_leaf;  // per_leaf[leaf][i]
  for (int64_t i = 0; i < n; ++i) {
    const Outputs out = leaves(per_example(i));
    per_leaf.resize(out.size());
    for (size_t j = 0; j < out.size(); ++j) per_leaf[j].push_back(out[j]);
  }
  Outputs stacked;
  for (const Outputs& xs : per_leaf) stacked.push_back(lanes::stack(xs));
  return stacked;
}

/// Sums over every output element, in double. `sum` and `abs` are the checksums WORKLOADS.md
/// asks for. They cannot see a transposed or permuted result (a Jacobian and its transpose have
/// the same sums), so each element is also weighted by kWeights pseudo-random weights in [1, 2)
/// that depend on its position; the correctness gate compares those sums too.
inline constexpr int kWeights = 4;
struct Checksum {
  double sum = 0, abs = 0;
  std::array<double, kWeights> weighted{}, weighted_sq{};  // sum of w x and of (w x)^2
  std::vector<Shape> shapes;
  double bytes = 0;  // of the outputs
};

/// splitmix64: a cheap hash whose 64 bits give the kWeights 16-bit weights of a position.
inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

inline Checksum checksum(const Outputs& outs) {
  Checksum c;
  uint64_t position = 0;
  for (const Tensor& leaf : outs) {
    c.shapes.push_back(leaf.shape());
    c.bytes += double(leaf.numel()) * double(lanes::dtype_size(leaf.dtype()));
    const Tensor t = leaf.contiguous();
    lanes::visit_dtype(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i, ++position) {
        const double v = static_cast<double>(p[i]);
        c.sum += v;
        c.abs += std::abs(v);
        const uint64_t h = mix(position);
        for (int k = 0; k < kWeights; ++k) {
          const double wv = (1.0 + double((h >> (16 * k)) & 0xffff) / 65536.0) * v;
          c.weighted[k] += wv;
          c.weighted_sq[k] += wv * wv;
        }
      }
    });
  }
  return c;
}

/// Whether two variants computed the same thing up to float32 reassociation. The sums must agree
/// to `rtol` relative to the sum of absolute values (a sum can cancel to about zero). A permuted
/// result moves each weighted sum by about the root of the weighted squares (a random walk),
/// while rounding moves it by orders of magnitude less, so a tenth of that root is the bar.
inline bool checksums_agree(const Checksum& a, const Checksum& b, double rtol = 1e-3) {
  if (a.shapes != b.shapes) return false;
  const double scale = std::max(a.abs, b.abs);
  if (std::abs(a.sum - b.sum) > rtol * scale || std::abs(a.abs - b.abs) > rtol * scale)
    return false;
  for (int k = 0; k < kWeights; ++k) {
    const double spread = std::sqrt(std::max(a.weighted_sq[k], b.weighted_sq[k]));
    if (std::abs(a.weighted[k] - b.weighted[k]) > 0.1 * spread) return false;
  }
  return true;
}

}  // namespace workloads
