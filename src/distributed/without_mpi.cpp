// lanes built without MPI (LANES_WITH_MPI off): sharding is unavailable, and says so.
#include "lanes/distributed.h"
#include "lanes/vmap.h"

namespace lanes {

namespace {
[[noreturn]] void no_mpi(const char* what) {
  fail(what,
       ": lanes was built without MPI; configure it with -DLANES_WITH_MPI=ON (needs an MPI "
       "such as OpenMPI: apt-get install libopenmpi-dev openmpi-bin)");
}
}  // namespace

namespace distributed {
bool available() { return false; }
void init(int*, char***) { no_mpi("lanes::distributed::init"); }
void finalize() {}
bool initialized() { return false; }
std::shared_ptr<const Communicator> world() { no_mpi("lanes::distributed::world"); }
int rank() { no_mpi("lanes::distributed::rank"); }
int size() { no_mpi("lanes::distributed::size"); }
}  // namespace distributed

namespace detail {
std::optional<ShardPlan> plan_shard(const VmapPlan&, const VmapOptions& options) {
  if (options.shard) no_mpi("vmap with VmapOptions::shard");
  return std::nullopt;
}
std::vector<Tensor> run_sharded(const Graph&, const std::vector<Tensor>&, const VmapPlan&,
                                const ShardPlan&, const std::vector<AxisLeaf>&, const VmapOptions&,
                                const VmapCache&) {
  no_mpi("vmap with VmapOptions::shard");
}
void sharded_call(const VmapOptions& options, const std::function<void()>& body) {
  if (options.shard) no_mpi("vmap with VmapOptions::shard");
  body();
}
}  // namespace detail

}  // namespace lanes
