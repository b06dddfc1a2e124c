#include "distributed/mpi_comm.h"

#include <atomic>
#include <climits>
#include <mutex>

#include "lanes/distributed_mpi.h"

namespace lanes::distributed {

namespace {
std::atomic<uint64_t> next_id{1};
std::mutex world_mutex;
std::shared_ptr<const Communicator> world_comm;
bool we_initialized = false;

bool mpi_finalized() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}
}  // namespace

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(what, " failed: ", std::string(text, size_t(len)));
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : id_(next_id++) {
  check(initialized(),
        "lanes::distributed: MPI is not initialized (call lanes::distributed::init "
        "first)");
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  // Errors come back as codes (check_mpi raises them) instead of aborting every process.
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm_);
}

const MpiCommunicator& mpi(const Communicator& c) {
  const auto* m = dynamic_cast<const MpiCommunicator*>(&c);
  check(m != nullptr, "lanes::distributed: a Communicator not made by lanes");
  return *m;
}

void agree(const MpiCommunicator& c, const std::string* failure) {
  // The lowest failing rank speaks: MPI_MIN over (rank or INT_MAX for healthy ranks).
  const int mine = failure ? c.rank() : INT_MAX;
  int first = INT_MAX;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, c.comm()), "MPI_Allreduce");
  if (first == INT_MAX) return;
  std::string message = c.rank() == first ? *failure : std::string();
  int64_t len = int64_t(message.size());
  check_mpi(MPI_Bcast(&len, 1, MPI_INT64_T, first, c.comm()), "MPI_Bcast");
  message.resize(size_t(len));
  check_mpi(MPI_Bcast(message.data(), int(len), MPI_CHAR, first, c.comm()), "MPI_Bcast");
  throw RankFailed(detail::concat("rank ", first, " of ", c.size(), " raised: ", message));
}

bool available() { return true; }

void init(int* argc, char*** argv) {
  if (initialized()) return;
  check(!mpi_finalized(), "lanes::distributed::init: MPI was already finalized");
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  we_initialized = true;
}

void finalize() {
  {
    std::lock_guard<std::mutex> lock(world_mutex);
    world_comm.reset();
  }
  if (we_initialized && initialized()) MPI_Finalize();
  we_initialized = false;
}

bool initialized() {
  int on = 0;
  MPI_Initialized(&on);
  return on != 0 && !mpi_finalized();
}

std::shared_ptr<const Communicator> communicator(MPI_Comm comm) {
  return std::make_shared<const MpiCommunicator>(comm);
}

std::shared_ptr<const Communicator> world() {
  std::lock_guard<std::mutex> lock(world_mutex);
  if (!world_comm) world_comm = communicator(MPI_COMM_WORLD);
  return world_comm;
}

int rank() { return world()->rank(); }
int size() { return world()->size(); }

}  // namespace lanes::distributed
