// vmap sharded across processes with MPI (OpenMPI; configure with -DLANES_WITH_MPI=ON, the
// default when CMake finds MPI).
//
//     int main(int argc, char** argv) {
//       lanes::distributed::init(&argc, &argv);
//       lanes::VmapOptions o;
//       o.axis_name = "batch";
//       o.shard = lanes::distributed::world();        // split the batch over the ranks
//       auto grads = lanes::vmap([&](const Tensor& x, const Tensor& y) {
//         return lanes::pmean(lanes::grad(loss)(w, x, y), "batch");  // averaged over all ranks
//       }, 0, 0, o)(xs, ys);
//       lanes::distributed::finalize();
//     }
//     // mpirun -np 4 ./train
//
// A sharded vmap splits its mapped axis across the ranks of a communicator: each rank runs its
// lanes with the ordinary vmap (batched, cached, compiled as usual), and the collectives over the
// vmap's axis_name (lanes/collectives.h) combine the lanes of every rank with MPI_Allreduce (psum,
// pmean, pmax, pmin) and MPI_Allgatherv (all_gather). Shards may be uneven (B not a multiple of
// the rank count; a rank may have no lanes at all). With ShardInputs::Whole (the default) every
// rank passes the whole batch and gets the same result as an unsharded vmap; with
// ShardInputs::Local each passes and gets only its own lanes (lanes/vmap.h).
//
// Every rank must make the same sharded calls in the same order, with the same shapes (Whole) or
// the same per-example shapes (Local), as for any MPI collective. When one rank raises (bad input,
// an error in the function), every rank raises a lanes::Error: the others at their next collective
// of the call, or at the agreement that ends every sharded call; nothing waits forever. Calls
// recorded by compile run their collectives in the compiled graph, where errors cannot be
// agreed: a rank failing there would leave the others waiting (shape errors, the usual ones, are
// caught when compile traces, which is agreed).
//
// Differentiate inside the sharded vmap (vmap(grad(f)) with pmean over the axis, as data-parallel
// training does); grad through a sharded vmap is a lanes::Error. Sharded vmaps do not nest.
#pragma once

#include <memory>

namespace lanes::distributed {

/// Whether lanes was built with MPI (LANES_WITH_MPI). Without it every function below throws
/// lanes::Error saying so.
bool available();

/// Initializes MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED) unless it is already initialized, in
/// which case lanes uses it and leaves finalizing to its owner. Idempotent.
void init(int* argc = nullptr, char*** argv = nullptr);
/// Releases lanes' communicators and finalizes MPI if init() initialized it. Idempotent.
void finalize();
/// Whether MPI is initialized (and not yet finalized).
bool initialized();

/// The ranks a sharded vmap splits its lanes across. lanes works on its own duplicate of the MPI
/// communicator, so its messages never mix with the program's. Make one from an MPI_Comm with
/// lanes::distributed::communicator (lanes/distributed_mpi.h).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
};

/// Every process (MPI_COMM_WORLD); init() must have run.
std::shared_ptr<const Communicator> world();
/// This process's rank in world() and the number of processes.
int rank();
int size();

}  // namespace lanes::distributed
