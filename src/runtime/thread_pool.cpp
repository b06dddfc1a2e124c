#include "runtime/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/spin_lock.h"

namespace lanes::runtime {
namespace {

// How long an idle worker looks for the next job before it sleeps (LANES_SPIN_US, default 300).
// A lane loop or a scan issues jobs microseconds apart, and waking a sleeping worker costs
// 30-80 us on these VMs, so a worker that slept after 50 us made rnn_scan 10-20% slower; one
// that spun for milliseconds would hold the core against other processes' threads. While it
// spins it yields the core to any other runnable thread.
std::chrono::microseconds worker_spin() {
  static const std::chrono::microseconds spin = [] {
    const char* v = std::getenv("LANES_SPIN_US");
    return std::chrono::microseconds(v && std::atoi(v) >= 0 ? std::atoi(v) : 300);
  }();
  return spin;
}

// For this long after its last job a worker spins without yielding: a job published while it
// sits in sched_yield would wait for the syscall, and short jobs come back to back.
constexpr auto kPureSpin = std::chrono::microseconds(20);

// How long a caller spins for the chunks workers hold before it sleeps: about two of its own
// chunk-times past its last chunk (a worker that started its last chunk in time is done by then),
// at least kCallerMinSpin, at most kCallerMaxSpin. Beside another process a caller that slept
// after a few microseconds lost its core: the OS gave the idle core to the other process's thread,
// and the woken caller then waited for that thread's time slice, once for each of a row's jobs
// that a preempted worker held up (perex_grad_norms beside a spinning process, 4 rounds
// alternated: 164-178 ms with that, 150-174 ms spinning; 97 ms quiet).
constexpr auto kCallerMinSpin = std::chrono::microseconds(10);
constexpr auto kCallerMaxSpin = std::chrono::microseconds(2000);

thread_local bool t_in_region = false;
thread_local int t_call_depth = 0;  // CallScopes open on this thread

// Marks the thread as running chunks for the scope (nested calls run inline).
struct RegionScope {
  bool outer = t_in_region;
  RegionScope() { t_in_region = true; }
  ~RegionScope() { t_in_region = outer; }
};

// A job's chunks are dealt into one contiguous slice per thread, and each thread claims from its
// own slice first, in order, then from the others': on a quiet machine every thread touches the
// same part of the data in consecutive ops (as a static split does, so a chain of ops keeps its
// operands in that core's cache), and a slice whose thread has not started is simply taken by
// the others.
struct Job {
  const ChunkFn* fn;
  int64_t n;
  int32_t chunks, slices;
  std::unique_ptr<std::atomic<int32_t>[]> next;  // per slice: its next unclaimed chunk
  std::atomic<int32_t> done{0};  // chunks finished (run, or skipped after a failure)
  std::atomic<bool> failed{false};
  std::mutex error_lock;
  std::exception_ptr error;

  Job(const ChunkFn& f, int64_t n_, int32_t c, int32_t threads)
      : fn(&f),
        n(n_),
        chunks(c),
        slices(std::min(c, threads)),
        next(new std::atomic<int32_t>[size_t(slices)]) {
    for (int32_t s = 0; s < slices; ++s) next[s].store(slice_begin(s), std::memory_order_relaxed);
  }

  int32_t slice_begin(int32_t s) const { return int32_t(int64_t(chunks) * s / slices); }

  bool has_unclaimed() const {
    for (int32_t s = 0; s < slices; ++s)
      if (next[s].load(std::memory_order_relaxed) < slice_begin(s + 1)) return true;
    return false;
  }

  // Claims and runs chunks until none is left, from slice `home` on. A chunk's fn is called only
  // after the claim, so the caller, which waits for every claimed chunk, outlives each call.
  // Returns the number of chunks this thread ran.
  int32_t work(int32_t home) {
    RegionScope region;
    int32_t ran = 0;
    for (int32_t k = 0; k < slices; ++k) {
      const int32_t s = (home + k) % slices, end = slice_begin(s + 1);
      for (int32_t i; (i = next[s].fetch_add(1, std::memory_order_relaxed)) < end; ++ran) run(i);
    }
    return ran;
  }

  void run(int32_t i) {
    if (!failed.load(std::memory_order_relaxed)) {
      try {
        (*fn)(n * i / chunks, n * (i + 1) / chunks);
      } catch (...) {
        const std::lock_guard<std::mutex> hold(error_lock);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_all();
  }

  // Waits for the chunks other threads claimed: spinning for about two of this thread's
  // chunk-times (it began its `ran` chunks at `start`), then asleep on a futex. The clock is read
  // only when something is left to wait for.
  void wait(std::chrono::steady_clock::time_point start, int32_t ran) {
    int32_t d = done.load(std::memory_order_acquire);
    if (d < chunks) {
      const auto now = std::chrono::steady_clock::now();
      const auto spin = std::clamp<std::chrono::nanoseconds>(2 * (now - start) / std::max(ran, 1),
                                                             kCallerMinSpin, kCallerMaxSpin);
      const auto until = now + spin;
      for (int i = 1; d < chunks; ++i) {
        cpu_relax();
        d = done.load(std::memory_order_acquire);
        if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
      }
    }
    while (d < chunks) {
      done.wait(d, std::memory_order_acquire);
      d = done.load(std::memory_order_acquire);
    }
  }
};

// Moves the calling worker off `core` (a caller's): it pins itself to the index-th allowed core
// after that one and, once it runs there, takes its whole mask back, so the OS may still move it
// whenever other work needs the core.
//
// Why: Linux starts a thread on its creator's core, may wake a sleeping caller on the core of the
// worker that woke it, and moves threads together while another process briefly takes a core (a
// `python3` reading the benchmark's output). A worker sharing its core with the caller, spinning
// and yielding, only runs when the caller pauses, so the caller runs every chunk itself until the
// load balancer separates them, 50-100 ms later or more: in 4 of 10 processes of `workloads
// --workload hessian` every call took one thread's 0.22 ms instead of 0.13 ms (the whole run of a
// short benchmark or script), and the caller shared the worker's core in 97% of their calls.
void move_off_core(int core, int index) {
  cpu_set_t allowed;
  if (core < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int count = CPU_COUNT(&allowed);
  if (count < 2) return;
  int target = core;
  for (int step = 0; step < 1 + index % (count - 1); ++step) {
    do target = (target + 1) % CPU_SETSIZE;
    while (!CPU_ISSET(target, &allowed));
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(target, &one);
  if (sched_setaffinity(0, sizeof one, &one) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
}

// A worker moves off a caller's core at most this often: beside another process's threads the
// cores are shared whatever it does, and a move costs a system call or two (~10-20 us).
constexpr auto kMoveInterval = std::chrono::milliseconds(10);

int default_threads() {
  for (const char* var : {"LANES_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return cores();
}

class Pool {
 public:
  Pool() : threads_(default_threads()) { grow(threads_ - 1); }

  ~Pool() {
    stop_.store(true);
    wake_workers();
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void set_threads(int n) {
    n = std::max(1, n);
    threads_.store(n);
    grow(n - 1);
    wake_workers();  // workers above the new count go back to sleep; new ones start
  }

  void enter_call() { callers_.fetch_add(1, std::memory_order_relaxed); }
  void leave_call() { callers_.fetch_sub(1, std::memory_order_relaxed); }

  void run(int64_t n, int32_t chunks, const ChunkFn& fn) {
    const CallScope call;
    caller_core_.store(sched_getcpu(), std::memory_order_relaxed);
    auto job = std::make_shared<Job>(fn, n, chunks, threads());
    publish(job);
    const auto start = std::chrono::steady_clock::now();
    const int32_t ran = job->work(0);
    retire(job);
    job->wait(start, ran);
    if (job->error) std::rethrow_exception(job->error);
  }

 private:
  void grow(int workers) {
    const std::lock_guard<std::mutex> hold(workers_lock_);
    const int creator_core = sched_getcpu();
    while (static_cast<int>(workers_.size()) < workers) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index, creator_core] {
        move_off_core(creator_core, index);
        worker_loop(index);
      });
    }
  }

  void publish(const std::shared_ptr<Job>& job) {
    {
      const std::lock_guard<SpinLock> hold(jobs_lock_);
      jobs_.push_back(job);
      open_jobs_.fetch_add(1, std::memory_order_release);
    }
    // Saturated: no worker may take the job (take_job), so waking one only costs the callers a
    // core. The callers finish their jobs alone; the first job published after a caller leaves
    // wakes the workers again.
    if (!saturated()) wake_workers();
  }

  bool saturated() const { return callers_.load(std::memory_order_relaxed) >= threads(); }

  void retire(const std::shared_ptr<Job>& job) {
    const std::lock_guard<SpinLock> hold(jobs_lock_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job));
    open_jobs_.fetch_sub(1, std::memory_order_relaxed);
  }

  void wake_workers() {
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();  // a futex call only when a worker sleeps
  }

  // A worker helps only while fewer callers than threads are running jobs: as many callers as
  // threads fill the cores themselves, and a worker beside them would oversubscribe the cores
  // (a caller then waits whenever the OS preempts the worker inside its chunk).
  std::shared_ptr<Job> take_job() {
    if (open_jobs_.load(std::memory_order_acquire) == 0 || saturated()) return nullptr;
    const std::lock_guard<SpinLock> hold(jobs_lock_);
    for (const std::shared_ptr<Job>& job : jobs_)
      if (job->has_unclaimed()) return job;
    return nullptr;
  }

  bool active(int index) const { return index + 1 < threads(); }

  void worker_loop(int index) {
    uint32_t last = epoch_.load(std::memory_order_relaxed);
    auto moved = std::chrono::steady_clock::now() - kMoveInterval;
    while (!stop_.load(std::memory_order_relaxed)) {
      const uint32_t seen = epoch_.load(std::memory_order_acquire);
      if (active(index)) {
        // On each job published, a worker on the publishing caller's core moves off it: a worker
        // beside its caller only runs while the caller pauses (move_off_core). Checked whether it
        // then takes part or not: a worker that shares the core still gets some chunks, when the
        // OS preempts the caller.
        if (seen != last && !saturated()) {
          const int core = caller_core_.load(std::memory_order_relaxed);
          if (sched_getcpu() == core) {  // the clock only then: this runs on every job
            const auto now = std::chrono::steady_clock::now();
            if (now - moved >= kMoveInterval) {
              moved = now;
              move_off_core(core, index);
            }
          }
        }
        last = seen;
        if (std::shared_ptr<Job> job = take_job()) {
          job->work((index + 1) % job->slices);
          continue;
        }
        if (spin_for_work(seen)) continue;
      }
      epoch_.wait(seen, std::memory_order_acquire);
    }
  }

  // Spins (pausing, then yielding the core to any other runnable thread) until a job is
  // published, worker_spin() passes or the callers fill the cores; whether a job was published.
  bool spin_for_work(uint32_t seen) const {
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + worker_spin(), yield_from = start + kPureSpin;
    for (int i = 0;; ++i) {
      if (epoch_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_relaxed))
        return true;
      if (saturated()) return false;  // the callers fill the cores: sleep until one leaves
      if (i % 64 == 63) {
        const auto now = std::chrono::steady_clock::now();
        if (now > until) return false;
        if (now > yield_from) sched_yield();
      } else {
        cpu_relax();
      }
    }
  }

  std::atomic<int> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> epoch_{0};    // bumped on every publish: what sleeping workers wait on
  std::atomic<int> open_jobs_{0};     // jobs_.size(), read without the lock
  std::atomic<int> callers_{0};       // threads inside a CallScope
  std::atomic<int> caller_core_{-1};  // the core of the last caller to publish a job
  SpinLock jobs_lock_;                // guards jobs_ (spin_lock.h says why not a mutex)
  std::mutex workers_lock_;           // guards workers_
  std::vector<std::shared_ptr<Job>> jobs_;
  std::vector<std::thread> workers_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

// Read once: chunk_count asks on every parallel_for.
int cores() {
  static const int count = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return count;
}

int pool_threads() { return pool().threads(); }

void set_pool_threads(int n) { pool().set_threads(n); }

bool in_parallel_region() { return t_in_region; }

CallScope::CallScope() {
  if (t_call_depth++ == 0 && !t_in_region) pool().enter_call();
}

CallScope::~CallScope() {
  if (--t_call_depth == 0 && !t_in_region) pool().leave_call();
}

int64_t max_chunks() {
  static const int64_t chunks = 4 * int64_t(cores());
  return chunks;
}

int64_t chunk_count(int64_t n, int64_t grain) {
  const int64_t most = std::min(max_chunks(), n / std::max<int64_t>(grain, 1)), c = cores();
  return most <= c ? most : most / c * c;
}

void run_chunks(int64_t n, int64_t chunks, const ChunkFn& fn) {
  if (n <= 0) return;
  chunks = std::clamp<int64_t>(chunks, 1, n);
  if (chunks == 1) return fn(0, n);
  if (t_in_region || pool_threads() == 1) {
    RegionScope region;  // chunk boundaries as with threads, so results match
    for (int64_t i = 0; i < chunks; ++i) fn(n * i / chunks, n * (i + 1) / chunks);
    return;
  }
  pool().run(n, static_cast<int32_t>(chunks), fn);
}

}  // namespace lanes::runtime
