// A lock for critical sections of a few instructions that several threads enter at once (the
// pool's job list, the tensor block cache). A std::mutex that a thread finds held puts it to sleep
// on a futex, and waking costs 30-80 us on these VMs, more than most of the work it guards; this
// one spins, and yields the core when the holder was preempted.
#pragma once

#include <sched.h>

#include <atomic>
#include <thread>

namespace lanes::runtime {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins > 100) {
          sched_yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace lanes::runtime
