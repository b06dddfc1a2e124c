// The MPI side of lanes/distributed.h, for programs that use MPI themselves (needs <mpi.h> and a
// lanes built with LANES_WITH_MPI).
#pragma once

#include <mpi.h>

#include <memory>

#include "lanes/distributed.h"

namespace lanes::distributed {

/// The ranks of `comm`, for VmapOptions::shard; lanes duplicates it (MPI_Comm_dup, a collective
/// over comm) and frees its duplicate when the last holder lets go.
std::shared_ptr<const Communicator> communicator(MPI_Comm comm);

}  // namespace lanes::distributed
