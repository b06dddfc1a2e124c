// A vmap sharded across the ranks of a communicator: agree on the lanes of each rank, run this
// rank's with the ordinary vmap (its collectives reaching the other ranks through MpiShard),
// gather the mapped outputs, and make every rank raise when one does.
#include <numeric>

#include "distributed/mpi_collectives.h"
#include "ir/trace.h"
#include "lanes/ops.h"
#include "lanes/vmap.h"

namespace lanes::detail {

namespace {

std::shared_ptr<const distributed::MpiCommunicator> comm_of(const VmapOptions& o) {
  distributed::mpi(*o.shard);  // checks it is lanes'
  return std::static_pointer_cast<const distributed::MpiCommunicator>(o.shard);
}

// Per output of g, whether its batched value can be mapped. Sure answers only where it is
// unmapped: a value of unmapped inputs stays unmapped (batch_graph binds it as it is), and a
// collective over the vmap's own axis gives the same value to every lane.
std::vector<bool> outputs_mapped(const Graph& flat, const VmapPlan& plan, const std::string& axis) {
  std::vector<bool> mapped(flat.types.size(), false);
  for (size_t i = 0; i < flat.num_explicit_inputs(); ++i)
    mapped[flat.inputs[i]] = plan.dims[i] != kNotMapped;
  for (const Node& n : flat.nodes) {
    bool any = false;
    for (ValueId v : n.inputs) any = any || mapped[v];
    if (const std::string* a = n.prim->axis_name(); a && *a == axis)
      any = n.prim->name() == "axis_index";
    for (ValueId v : n.outputs) mapped[v] = any;
  }
  std::vector<bool> out;
  for (ValueId v : flat.outputs) out.push_back(mapped[v]);
  return out;
}

// y, the same for every lane, broadcast to `size` lanes at axis `at` (a view).
Tensor broadcast_lanes(const Tensor& y, int64_t size, int64_t at) {
  Shape shape = y.shape();
  shape.insert(shape.begin() + at, size);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < y.ndim(); ++d) dims.push_back(d < at ? d : d + 1);
  return broadcast_in_dim(y, shape, dims);
}

uint64_t types_digest(const VmapPlan& plan) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the dtypes, ranks and dims
  auto mix = [&](int64_t v) {
    for (int k = 0; k < 8; ++k) h = (h ^ uint64_t((v >> (8 * k)) & 0xff)) * 1099511628211ull;
  };
  for (size_t i = 0; i < plan.example_types.size(); ++i) {
    const TensorType& t = plan.example_types[i];
    mix(int64_t(t.dtype));
    mix(int64_t(t.shape.size()));
    for (int64_t d : t.shape) mix(d);
    mix(plan.dims[i] == kNotMapped ? -1 : 1);
  }
  return h & 0x7fffffffffffffffull;
}

std::string example_types_str(const VmapPlan& plan) {
  std::string out;
  for (const TensorType& t : plan.example_types)
    out += (out.empty() ? "" : ", ") + std::string(dtype_name(t.dtype)) + shape_str(t.shape);
  return out;
}

}  // namespace

std::optional<ShardPlan> plan_shard(const VmapPlan& plan, const VmapOptions& options) {
  if (!options.shard) return std::nullopt;
  const auto comm = comm_of(options);
  distributed::agree(*comm, nullptr);  // a rank that failed before this call's first collective
  check(current_shard() == nullptr,
        "vmap: sharded vmaps do not nest (a vmap with "
        "VmapOptions::shard inside another)");
  // Each rank's batch size and a digest of its per-example types, which must agree: MPI would
  // otherwise combine buffers of different sizes.
  const int n = comm->size();
  std::vector<int64_t> mine{plan.size, int64_t(types_digest(plan))};
  std::vector<int64_t> all(2 * static_cast<size_t>(n));
  distributed::check_mpi(
      MPI_Allgather(mine.data(), 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm->comm()),
      "MPI_Allgather");
  std::vector<int64_t> sizes;
  for (int r = 0; r < n; ++r) {
    sizes.push_back(all[2 * size_t(r)]);
    check(all[2 * size_t(r) + 1] == mine[1], "vmap sharded over ", n, " ranks: rank ", r,
          " passed arguments whose per-example shapes or dtypes differ from rank ", comm->rank(),
          "'s (", example_types_str(plan), "); every rank maps the same function on the same ",
          "per-example types");
  }
  ShardPlan s;
  if (options.shard_inputs == ShardInputs::Whole) {
    for (int r = 0; r < n; ++r)
      check(sizes[size_t(r)] == plan.size, "vmap sharded over ", n,
            " ranks (ShardInputs::Whole): ", "rank ", r, " passed a batch of ", sizes[size_t(r)],
            " but rank ", comm->rank(), " one of ", plan.size,
            "; every rank passes the whole batch");
    s.global = plan.size;
    for (int r = 0; r < n; ++r) s.counts.push_back((r + 1) * s.global / n - r * s.global / n);
  } else {
    s.global = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    s.counts = sizes;
  }
  s.offset = std::accumulate(s.counts.begin(), s.counts.begin() + comm->rank(), int64_t(0));
  return s;
}

std::vector<Tensor> run_sharded(const Graph& g0, const std::vector<Tensor>& leaves,
                                const VmapPlan& plan, const ShardPlan& shard,
                                const std::vector<AxisLeaf>& out_axes, const VmapOptions& options,
                                const VmapCache& cache) {
  const auto comm = comm_of(options);
  distributed::MpiShard context(comm);
  context.axis = options.axis_name;
  context.offset = shard.offset;
  context.global = shard.global;
  context.counts = shard.counts;
  ShardScope scope(&context);
  const bool whole = options.shard_inputs == ShardInputs::Whole;
  const int64_t count = shard.counts[size_t(comm->rank())];

  // This rank's lanes: a view of each mapped leaf (one of size 1 broadcasts, as in any vmap).
  std::vector<Tensor> local = leaves;
  VmapPlan local_plan = plan;
  if (whole) {
    local_plan.size = count;
    for (size_t i = 0; i < leaves.size(); ++i) {
      const int64_t d = plan.dims[i];
      if (d != kNotMapped && leaves[i].shape()[d] == plan.size)
        local[i] = slice_axis(leaves[i], d, shard.offset, shard.offset + count);
    }
  }
  // Outputs every lane shares come back unmapped, for a broadcast here rather than a gather.
  const Graph& g = g0;
  std::vector<bool> mapped(out_axes.size(), true);
  std::vector<AxisLeaf> local_axes = out_axes;
  if (whole) {
    mapped = outputs_mapped(has_calls(g) ? inline_calls(g) : g, plan, options.axis_name);
    for (size_t i = 0; i < local_axes.size(); ++i)
      if (!mapped[i]) local_axes[i].axis.reset();
  }
  // Under a trace (compile, grad) the collectives are recorded; a concrete call inside one would
  // record some of them (bind does, for communicating primitives) and run others from the cache:
  // every rank records, rather than risk ranks communicating in different orders.
  std::vector<Tensor> outs = any_traced(local) || !g.captured.empty() ||
                                     reads_other_axes(g, options.axis_name) || trace_depth() > 0
                                 ? run_vmap(g, local, local_plan, local_axes, options)
                                 : cache.run(g, local, local_plan, local_axes, options);
  if (!whole) return outs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!out_axes[i].axis) continue;
    const int64_t rank = outs[i].ndim() + (mapped[i] ? 0 : 1);
    const int64_t a = *out_axes[i].axis < 0 ? *out_axes[i].axis + rank : *out_axes[i].axis;
    check(a >= 0 && a < rank, "vmap: out_axes ", *out_axes[i].axis, " for ", out_axes[i].path,
          " is out of range for its batched rank ", rank);
    outs[i] = mapped[i] ? context.allgather(outs[i], a) : broadcast_lanes(outs[i], shard.global, a);
  }
  return outs;
}

void sharded_call(const VmapOptions& options, const std::function<void()>& body) {
  const auto comm = comm_of(options);
  try {
    body();
  } catch (const distributed::RankFailed&) {
    throw;  // agreed already: another rank failed
  } catch (const std::exception& e) {
    // Tell the others, who wait in a collective of this call or in the agreement below.
    const std::string message = e.what();
    try {
      distributed::agree(*comm, &message);
    } catch (const distributed::RankFailed&) {
    }
    throw;
  }
  distributed::agree(*comm, nullptr);
}

}  // namespace lanes::detail
