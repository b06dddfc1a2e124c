// lanes' MPI communicators and the agreement every lanes collective starts with.
#pragma once

#include <mpi.h>

#include <string>

#include "lanes/distributed.h"
#include "lanes/error.h"

namespace lanes::distributed {

/// A duplicate of an MPI communicator, freed with the last holder (unless MPI is finalized).
class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MPI_Comm comm() const { return comm_; }
  /// A number naming this communicator in primitive params (CSE and cache keys).
  uint64_t id() const { return id_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  uint64_t id_;
};

/// The MPI communicator behind c (made by lanes, so always an MpiCommunicator).
const MpiCommunicator& mpi(const Communicator& c);

/// Raised on every rank but the failing one when a rank of a sharded call raises.
class RankFailed : public Error {
 public:
  using Error::Error;
};

/// The agreement every lanes collective on c starts with: each rank says whether it failed
/// (`failure`, its message, or nullptr). When any did, the lowest failing rank's message is
/// broadcast and RankFailed thrown on every rank; otherwise it returns.
void agree(const MpiCommunicator& c, const std::string* failure);

/// Throws lanes::Error naming `what` and the MPI error text when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace lanes::distributed
