// The roofline of a workload row (issue 29): how far its best variant is from what this machine
// allows. The machine's peaks come from micro-benchmarks in this process (peaks.cpp: FMA
// throughput, read bandwidth, non-temporal write bandwidth, at the bench's thread count); a row's
// work is the flops its per-example loop evaluates (lanes::FlopCounter: every multiply-add of
// every example's own iterations, nothing a mask or padding adds) and the bytes it must move at
// least: its inputs read once and its outputs written once.
//
// The bound is max(flops / FMA peak, input bytes / read bandwidth + output bytes / write
// bandwidth); the fraction printed is bound / measured time (1 is the limit). A row whose inputs
// and outputs stay in the last-level cache between calls can beat the memory term (the peaks are
// measured on buffers larger than the cache).
#pragma once

#include <algorithm>

namespace workloads {

struct Peaks {
  int threads = 0;
  double gflops = 0;      // float32 FMA throughput of all threads, 2 flops per FMA lane
  double gflops_one = 0;  // of one thread alone
  double read_gbs = 0;    // summing a buffer larger than the cache
  double write_gbs = 0;   // non-temporal stores to such a buffer
  const char* isa = "";   // the vector width the FMA loop ran at
};

/// Measures the peaks at `threads` threads (about two seconds; quick: a tenth of that).
Peaks measure_peaks(int threads, bool quick);

/// What one call of a row must do.
struct Work {
  double flops = 0;
  double input_bytes = 0, output_bytes = 0;
};

struct Roofline {
  double gflops = 0, gbs = 0;  // achieved
  double bound_ms = 0;         // the roofline's time for this work
  double fraction = 0;         // bound_ms / measured ms
  bool compute_bound = false;  // which term set the bound
};

inline Roofline roofline(const Work& w, const Peaks& p, double ms) {
  const double compute_ms = w.flops / (p.gflops * 1e6);
  const double memory_ms =
      w.input_bytes / (p.read_gbs * 1e6) + w.output_bytes / (p.write_gbs * 1e6);
  Roofline r;
  r.gflops = w.flops / (ms * 1e6);
  r.gbs = (w.input_bytes + w.output_bytes) / (ms * 1e6);
  r.bound_ms = std::max(compute_ms, memory_ms);
  r.fraction = r.bound_ms / ms;
  r.compute_bound = compute_ms >= memory_ms;
  return r;
}

}  // namespace workloads
