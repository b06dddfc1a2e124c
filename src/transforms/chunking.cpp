// Memory-bounded vmap: how many lanes run at once, and the loop (or scan) over the chunks.
//
// A vmap multiplies the memory of one example by the batch size: per-example gradients of a
// 1M-parameter MLP over 4096 examples would hold ~30 GB at once. torch.func makes the user pick
// chunk_size, jax makes them rewrite with lax.map. lanes estimates the peak of the batched run
// from the example graph (every value the batch carries costs its example's bytes per lane;
// each value lives from its node to its last use, as the executor frees it), so the peak for c
// lanes is max over the steps of (fixed + per_lane * c), and picks the largest c that fits.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "lanes/compile.h"
#include "lanes/control_flow.h"
#include "lanes/cost.h"
#include "lanes/ops.h"
#include "lanes/parallel.h"
#include "runtime/thread_pool.h"
#include "transforms/batching.h"

namespace lanes {

int64_t default_vmap_memory_budget() {
  static const int64_t bytes = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 2;
  return bytes;
}

namespace detail {

namespace {

// Bytes live at one step of a batched run: fixed + per_lane * lanes.
struct Footprint {
  double fixed = 0, per_lane = 0;
  Footprint& operator+=(const Footprint& o) {
    fixed += o.fixed;
    per_lane += o.per_lane;
    return *this;
  }
};

double bytes_of(const TensorType& t) {
  return double(shape_numel(t.shape)) * double(dtype_size(t.dtype));
}

// The footprint at every step of g's run, counting the values its nodes make (not its inputs or
// constants, which exist already). `mapped` says which inputs carry the batch; a node's outputs
// do when any of its inputs does. A node with sub-graphs (control flow) adds their peak while it
// runs, with every sub-graph value carrying the batch when the node does (an upper bound).
std::vector<Footprint> footprints(const Graph& g, const std::vector<bool>& mapped_inputs) {
  const std::vector<bool> live = live_nodes(g);
  std::vector<int64_t> last_use(g.types.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i])
      for (ValueId v : g.nodes[i].inputs) last_use[v] = int64_t(i);
  for (ValueId v : g.outputs) last_use[v] = int64_t(g.nodes.size());
  std::vector<char> mapped(g.types.size(), 0), input(g.types.size(), 0);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    mapped[g.inputs[i]] = mapped_inputs[i];
    input[g.inputs[i]] = 1;
  }
  auto cost = [&](ValueId v) {
    const double b = bytes_of(g.types[v]);
    return mapped[v] ? Footprint{0, b} : Footprint{b, 0};
  };
  std::vector<Footprint> steps;
  Footprint now;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!live[i]) continue;
    const Node& n = g.nodes[i];
    bool any = false;
    for (ValueId v : n.inputs) any = any || mapped[v];
    for (ValueId v : n.outputs) {
      mapped[v] = any;
      now += cost(v);
    }
    steps.push_back(now);
    for (const auto& [name, sub] : n.prim->subgraphs()) {
      for (Footprint inner : footprints(*sub, std::vector<bool>(sub->inputs.size(), any)))
        steps.push_back(inner += now);
    }
    for (ValueId v : n.inputs)
      if (last_use[v] == int64_t(i) && !input[v]) {
        const Footprint c = cost(v);
        now.fixed -= c.fixed;
        now.per_lane -= c.per_lane;
        last_use[v] = -2;  // counted once even when a node reads it twice
      }
  }
  return steps;
}

std::string gib(double bytes) {
  std::ostringstream s;
  s.precision(3);
  s << bytes / double(int64_t{1} << 30) << " GiB";
  return s.str();
}

// The per-lane bytes of the mapped outputs, which the chunked run writes into whole-batch
// outputs that live throughout.
double output_bytes_per_lane(const Graph& g, const std::vector<AxisLeaf>& out_axes) {
  double total = 0;
  for (size_t i = 0; i < g.outputs.size() && i < out_axes.size(); ++i)
    if (out_axes[i].axis) total += bytes_of(g.types[g.outputs[i]]);
  return total;
}

}  // namespace

namespace {

// The largest chunk of lanes whose every step fits beside the whole-batch outputs (the batch
// size when all fit), and the peak of the unchunked run.
struct Fit {
  double lanes = 0, peak = 0;
};
Fit fit(const Graph& g, const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
        double budget) {
  std::vector<bool> mapped(g.inputs.size(), false);
  for (size_t i = 0; i < plan.dims.size() && i < mapped.size(); ++i)
    mapped[i] = plan.dims[i] != kNotMapped;
  const double size = double(plan.size);
  const double outputs = output_bytes_per_lane(g, out_axes) * size;
  Fit f{size, 0};
  for (const Footprint& step : footprints(g, mapped)) {
    f.peak = std::max(f.peak, step.fixed + step.per_lane * size);
    if (step.per_lane > 0)
      f.lanes = std::min(f.lanes, (budget - outputs - step.fixed) / step.per_lane);
  }
  return f;
}

}  // namespace

namespace {

// ---- parallel chunks: loops of small steps run one chunk of lanes per thread ----------------
//
// A scan or while_loop whose steps are small kernels spends its time handing each kernel to the
// pool and waiting for it: ode_rk4's per-example gradients (100 RK4 steps on (128, 64) values,
// forward and back, ~4000 kernels of a few microseconds) took 28.5 ms on one thread and 30.6 on
// two. Its lanes are independent, so the vmap runs one chunk of them per thread instead, each
// chunk's kernels inline on its own thread: the row went from 32.5 to 23.7 ms, mandelbrot,
// newton_sqrt and power_iter 0.80-0.84x. Chunked results equal unchunked ones.

// A step's value is small when the whole batch of it holds at most this many elements (1 MiB of
// float32: ode_rk4's per-example weight gradients, (128, 64, 16), accumulate in its reverse loop).
constexpr double kSmallStep = 1 << 18;

struct LoopScan {
  bool loop = false;     // the graph runs a scan or a while_loop
  bool eligible = true;  // no draws, effects or collectives; every value in a loop small
};

void scan_loops(const Graph& g, int64_t size, bool in_loop, LoopScan& s) {
  for (const Node& n : g.nodes) {
    const std::string name = n.prim->name();
    if (name.rfind("random", 0) == 0 || n.prim->has_effects() || n.prim->axis_name()) {
      s.eligible = false;
      return;
    }
    if (in_loop)
      for (ValueId v : n.outputs)
        if (double(shape_numel(g.types[v].shape)) * double(size) > kSmallStep) s.eligible = false;
    const bool loop = name == "scan" || name == "while";
    s.loop = s.loop || loop;
    for (const auto& [what, sub] : n.prim->subgraphs()) scan_loops(*sub, size, in_loop || loop, s);
    if (!s.eligible) return;
  }
}

// One piece, or as many equal chunks as threads (up to 4 a thread, of 4 lanes at least) when g
// is a loop of small steps.
ChunkPlan parallel_chunks(const Graph& g, int64_t size, bool optimized) {
  const int threads = num_threads();
  if (threads < 2 || runtime::in_parallel_region()) return {size, optimized};
  LoopScan s;
  scan_loops(g, size, false, s);
  if (!s.loop || !s.eligible) return {size, optimized};
  for (int64_t chunks = threads; chunks <= 4 * threads; ++chunks)
    if (size % chunks == 0 && size / chunks >= 4) {
      batching::note_chunking(concat("parallel: ", size, " lanes in ", chunks, " chunks of ",
                                     size / chunks, ", one per thread at a time (a loop of small ",
                                     "steps: each chunk's kernels run on its own thread)"));
      return {size / chunks, optimized, true};
    }
  return {size, optimized};
}

}  // namespace

ChunkPlan plan_chunk(const Graph& g_in, const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                     const VmapOptions& options) {
  const int64_t size = plan.size;
  if (options.chunk_size) {
    check(*options.chunk_size > 0, "vmap: options.chunk_size must be positive, got ",
          *options.chunk_size);
    const int64_t chunk = std::max<int64_t>(1, std::min(*options.chunk_size, size));
    if (chunk < size)
      batching::note_chunking(concat("chunked: ", size, " lanes in ", (size + chunk - 1) / chunk,
                                     " chunks of ", chunk, " (options.chunk_size)"));
    return {chunk, false};
  }
  if (options.max_memory_bytes)
    check(*options.max_memory_bytes > 0, "vmap: options.max_memory_bytes must be positive, got ",
          *options.max_memory_bytes);
  if (size <= 1) return {std::max<int64_t>(size, 1), false};
  const double budget = double(options.max_memory_bytes.value_or(default_vmap_memory_budget()));
  const Graph g = has_calls(g_in) ? inline_calls(g_in) : g_in;
  Fit f = fit(g, plan, out_axes, budget);
  if (f.lanes >= double(size)) return parallel_chunks(g, size, false);
  // The example graph does not fit: plan the optimized one, which the run then uses (a
  // per-example gradient norm, for one, never forms the gradients there).
  const double raw_peak = f.peak;
  f = fit(optimize(g), plan, out_axes, budget);
  if (f.lanes >= double(size)) {
    batching::note_chunking(concat("one piece: the optimized graph's estimated peak ", gib(f.peak),
                                   " fits the budget of ", gib(budget),
                                   " (the example graph's: ", gib(raw_peak), ")"));
    return parallel_chunks(g, size, true);
  }
  int64_t chunk = std::max<int64_t>(1, int64_t(f.lanes));
  // No one-lane remainder where a smaller chunk avoids it: a matrix product whose lanes fold into
  // M or N becomes a matrix-vector product for one lane, which sums in another order (a result
  // would then differ from the unchunked one in the last bit).
  while (chunk > 2 && size % chunk == 1) --chunk;
  batching::note_chunking(concat("chunked: ", size, " lanes in ", (size + chunk - 1) / chunk,
                                 " chunks of ", chunk, " (estimated peak ", gib(f.peak),
                                 " unchunked, budget ", gib(budget),
                                 f.lanes < 1 ? "; one lane alone exceeds it" : "", ")"));
  return {chunk, true};
}

namespace {

// Lanes [lo, hi) of the mapped leaves (a mapped axis of size 1 broadcasts: kept whole).
std::vector<Tensor> chunk_leaves(const std::vector<Tensor>& leaves, const VmapPlan& plan,
                                 int64_t lo, int64_t hi) {
  std::vector<Tensor> out = leaves;
  for (size_t i = 0; i < leaves.size(); ++i)
    if (plan.dims[i] != kNotMapped && leaves[i].shape()[plan.dims[i]] == plan.size)
      out[i] = slice_axis(leaves[i], plan.dims[i], lo, hi);
  return out;
}

// The outputs' axes for one chunk: mapped ones at 0 (placed where out_axes says at the end).
std::vector<AxisLeaf> at_front(std::vector<AxisLeaf> out_axes) {
  for (AxisLeaf& a : out_axes)
    if (a.axis) a.axis = 0;
  return out_axes;
}

// The whole-batch output: the chunk outputs (batch at axis 0) concatenated, the batch moved.
Tensor place(Tensor whole, const AxisLeaf& out) {
  const int64_t rank = whole.ndim();
  const int64_t a = *out.axis;
  check(a >= -rank && a < rank, "vmap: out_axes ", a, " for ", out.path, " is out of range for ",
        "its batched rank ", rank);
  return a == 0 ? whole : moveaxis(whole, 0, a < 0 ? a + rank : a);
}

// Concrete inputs: each chunk runs from the cache and is copied into the whole outputs; with
// `parallel`, all chunks first, at once on the pool.
std::vector<Tensor> run_chunk_loop(const Graph& g, const std::vector<Tensor>& leaves,
                                   const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                   const VmapOptions& options, int64_t chunk,
                                   const VmapCache& cache, bool parallel) {
  const std::vector<AxisLeaf> front = at_front(out_axes);
  const int64_t n_chunks = (plan.size + chunk - 1) / chunk;
  auto run_chunk = [&](int64_t c) {
    const int64_t lo = c * chunk, hi = std::min(plan.size, lo + chunk);
    VmapPlan part = plan;
    part.size = hi - lo;
    return cache.run(g, chunk_leaves(leaves, plan, lo, hi), part, front, options, {false, true});
  };
  std::vector<std::vector<Tensor>> ran(size_t(parallel ? n_chunks : 0));
  FlopCounter* const counting = detail::current_flop_counter();
  if (parallel)
    parallel_for(n_chunks, 1, [&](int64_t c0, int64_t c1) {
      const FlopsOnBehalf on_behalf(counting);
      for (int64_t c = c0; c < c1; ++c) ran[size_t(c)] = run_chunk(c);
    });
  std::vector<Tensor> whole(out_axes.size());
  for (int64_t lo = 0; lo < plan.size; lo += chunk) {
    const int64_t hi = std::min(plan.size, lo + chunk);
    const std::vector<Tensor> outs =
        parallel ? std::move(ran[size_t(lo / chunk)]) : run_chunk(lo / chunk);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!out_axes[k].axis) {
        if (lo == 0) whole[k] = outs[k];
        continue;
      }
      const Tensor piece = outs[k].contiguous();
      if (lo == 0) {
        Shape shape = piece.shape();
        shape[0] = plan.size;
        whole[k] = Tensor::empty(shape, piece.dtype());
      }
      const size_t row = size_t(piece.numel() / std::max<int64_t>(piece.shape()[0], 1)) *
                         dtype_size(piece.dtype());
      if (piece.numel() > 0)
        std::memcpy(static_cast<char*>(whole[k].raw_mutable_data()) + size_t(lo) * row,
                    piece.raw_data(), row * size_t(hi - lo));
    }
  }
  for (size_t k = 0; k < whole.size(); ++k)
    if (out_axes[k].axis) whole[k] = place(whole[k], out_axes[k]);
  return whole;
}

// Under a trace: a scan over the full chunks (the batch axis of each mapped leaf split into
// (chunks, chunk)), then the remainder, so the recorded graph holds one chunk's values at once.
std::vector<Tensor> run_chunk_scan(const Graph& g, const std::vector<Tensor>& leaves,
                                   const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                   const VmapOptions& options, int64_t chunk, bool parallel) {
  const int64_t full = plan.size / chunk, done = full * chunk;
  const std::vector<AxisLeaf> front = at_front(out_axes);
  std::vector<size_t> split;  // the leaves the scan slices
  std::vector<Tensor> xs;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (plan.dims[i] == kNotMapped || leaves[i].shape()[plan.dims[i]] != plan.size) continue;
    Tensor x = slice_axis(moveaxis(leaves[i], plan.dims[i], 0), 0, 0, done);
    Shape shape = x.shape();
    shape[0] = chunk;
    shape.insert(shape.begin(), full);
    split.push_back(i);
    xs.push_back(reshape(x, shape));
  }
  VmapPlan part = plan;
  part.size = chunk;
  for (size_t i : split) part.dims[i] = 0;
  auto step = [&](const std::tuple<>&, const std::vector<Tensor>& x) {
    std::vector<Tensor> in = leaves;
    for (size_t k = 0; k < split.size(); ++k) in[split[k]] = x[k];
    return std::pair<std::tuple<>, std::vector<Tensor>>({}, run_vmap(g, in, part, front, options));
  };
  ScanOptions scan_options{full};
  scan_options.parallel = parallel;
  std::vector<Tensor> ys = scan(step, std::tuple<>{}, xs, scan_options).second;
  std::vector<Tensor> rest;
  if (done < plan.size) {
    VmapPlan tail = plan;
    tail.size = plan.size - done;
    rest = run_vmap(g, chunk_leaves(leaves, plan, done, plan.size), tail, front, options);
  }
  for (size_t k = 0; k < ys.size(); ++k) {
    if (!out_axes[k].axis) {
      ys[k] = ys[k][0];
      continue;
    }
    Shape shape(ys[k].shape().begin() + 1, ys[k].shape().end());
    shape[0] = done;
    ys[k] = reshape(ys[k], shape);
    if (!rest.empty()) ys[k] = concatenate({ys[k], rest[k]}, 0);
    ys[k] = place(ys[k], out_axes[k]);
  }
  return ys;
}

}  // namespace

std::vector<Tensor> run_chunked(const Graph& g, const std::vector<Tensor>& leaves,
                                const VmapPlan& plan, const std::vector<AxisLeaf>& out_axes,
                                const VmapOptions& options, int64_t chunk, const VmapCache* cache,
                                bool parallel) {
  check(out_axes.size() == g.outputs.size(), "vmap: out_axes gives ", out_axes.size(), " axes for ",
        g.outputs.size(), " outputs");
  if (cache) return run_chunk_loop(g, leaves, plan, out_axes, options, chunk, *cache, parallel);
  return run_chunk_scan(g, leaves, plan, out_axes, options, chunk, parallel);
}

}  // namespace detail
}  // namespace lanes
