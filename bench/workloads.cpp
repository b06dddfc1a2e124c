// The workloads of ../shared/bench/WORKLOADS.md, each in the variants loop, vmap, vmap+compile and
// manual (hand-batched), timed one after the other in this process. Prints one JSON line per
// (workload, variant), then a table of times, ratios and peak memory, and exits nonzero when the
// variants of a workload disagree (their checksums differ) or one fails.
//
//     build/bench/workloads [--workload NAME]... [--threads N] [--json-only] [--quick]
//                           [--no-loop] [--variant NAME]... [--callers N] [--roofline] [--profile]
//                           [--dump-inputs DIR]
//
// --no-loop skips the loop variants; --variant runs only the named variants (for a profiler).
// --callers N calls each variant from N application threads at once in every timed run and reports
// the wall time divided by N (the time per call at the pair's throughput): bench/contention's
// concurrent-callers condition.
//
// --roofline first measures the machine's peaks, then for each row counts the flops its loop
// variant evaluates (one untimed run under lanes::FlopCounter) and prints, per variant and for the
// row's best batched variant, the achieved GFLOP/s and GB/s and the fraction of the roofline
// bound (workloads/roofline.h), with the three primitives that took most of its time (--profile:
// every primitive).
//
// --dump-inputs DIR writes the selected workloads' inputs as .npy files and a manifest (see
// workloads/dump.h) instead of timing them: the inputs bench/peers/ reads.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "workloads/cnn.h"
#include "workloads/control_flow.h"
#include "workloads/dropout.h"
#include "workloads/dump.h"
#include "workloads/harness.h"
#include "workloads/jacobians.h"
#include "workloads/mapped.h"
#include "workloads/memory.h"
#include "workloads/per_example.h"
#include "workloads/ragged.h"
#include "workloads/roofline.h"

namespace workloads {
namespace {

const std::vector<Workload>& all_workloads() {
  static const std::vector<Workload> all{
      {"outer", outer},
      {"sqrt_images", sqrt_images},
      {"batched_dot", batched_dot},
      {"perex_linear", perex_linear},
      {"perex_mlp", perex_mlp},
      {"fc_batch_jacobian", fc_batch_jacobian},
      {"jacobian_mlp", jacobian_mlp},
      {"jacobian_square", jacobian_square},
      {"ensemble", ensemble},
      {"perex_cnn", perex_cnn},
      {"hessian", hessian},
      {"lstm_perex", lstm_perex},
      {"piecewise10", piecewise10},
      {"piecewise50", piecewise50},
      {"newton_sqrt", newton_sqrt},
      {"mandelbrot", mandelbrot},
      {"power_iter", power_iter},
      {"rnn_scan", rnn_scan},
      {"perex_grad_norms", perex_grad_norms},
      {"ode_rk4", ode_rk4},
      {"perex_mlp_dropout", perex_mlp_dropout},
      {"dropout_draws", dropout_draws},
      {"ragged_lstm", ragged_lstm},
      {"ragged_attention", ragged_attention},
      {"ragged_attention_uniform", ragged_attention_uniform},
  };
  return all;
}

struct Options {
  std::vector<std::string> names;  // empty: all
  int threads = 2;
  bool json_only = false;
  bool quick = false;                 // 3 warm-ups + 2 runs per variant, for CI smoke tests
  std::string dump_dir;               // --dump-inputs: write the inputs here and time nothing
  bool no_loop = false;               // --no-loop: skip the loop variants
  bool list = false;                  // --list: print the workloads' names and exit
  std::vector<std::string> variants;  // --variant: only these (empty: all)
  int callers = 1;                    // --callers: application threads calling each variant at once
  bool roofline = false;              // --roofline: peaks, flops and the fraction of the bound
  bool profile = false;               // --profile: --roofline, and every primitive's share
};

struct Result {
  std::string workload, variant;
  std::vector<double> ms;  // timed runs
  Checksum sums;
  double peak_mb = 0, rss_mb = 0;
  std::string error;         // nonempty when the variant threw
  std::optional<Work> work;  // with --roofline
  // With --roofline: where one warm call's time went, per primitive (lanes::FlopCounter).
  std::map<std::string, lanes::FlopCounter::PerPrimitive> profile;
  double profiled_ms = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// The q-th percentile of v, interpolating linearly between order statistics (numpy's default).
double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q / 100 * double(v.size() - 1);
  const size_t lo = size_t(at), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

/// Resets the kernel's high-water mark of resident memory (VmHWM) to what is resident now, after
/// handing freed heap memory back to the system (else one variant's garbage would count towards
/// the next one's peak); false where not allowed.
bool reset_peak_rss() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  std::ofstream f("/proc/self/clear_refs");
  f << "5" << std::flush;
  return static_cast<bool>(f);
}

/// VmHWM of this process in MB (0 where /proc is unavailable): everything resident, inputs and
/// libraries included, unlike peak_mb.
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string key;
  while (f >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      f >> kb;
      return kb / 1024;
    }
    f.ignore(1 << 12, '\n');
  }
  return 0;
}

/// Three warm-ups (compile traces on the first call; vmap builds its optimized graph on the
/// second, or on the third when f applies a transform, whose cached body is built on the
/// second), then timed runs until about a second has passed: at least 3 and at most 200 (exactly
/// 2 with --quick); a variant marked `once`, and with --quick every loop variant (it has no
/// cache to warm up), runs once, cold. Peaks are those of the timed runs:
/// the previous output is dropped before each run, so the peak is one run's working set plus its
/// output.
/// --callers: `n - 1` helper threads that call v.run() in lockstep with the timing thread, one
/// call each per run(). Started once, not per run (a thread start costs ~40 us, ten times the
/// smallest rows), and synchronized by spinning (a futex wake-up costs 30-80 us on these VMs).
class Callers {
 public:
  Callers(const Variant& v, int n) : v_(v), errors_(n) {
    for (int i = 1; i < n; ++i) helpers_.emplace_back([this, i] { helper(i); });
  }
  ~Callers() {
    stop_ = true;
    go_.fetch_add(1);
    for (std::thread& t : helpers_) t.join();
  }
  Callers(const Callers&) = delete;
  Callers& operator=(const Callers&) = delete;

  /// One call on every thread at once; this thread's output, or the first error any threw.
  Outputs run() {
    finished_.store(0);
    go_.fetch_add(1);
    Outputs out;
    try {
      out = v_.run();
    } catch (...) {
      errors_[0] = std::current_exception();
    }
    while (finished_.load() < int(helpers_.size())) std::this_thread::yield();
    for (std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(std::exchange(e, nullptr));
    return out;
  }

 private:
  void helper(int i) {
    for (uint64_t seen = 0;;) {
      uint64_t now;
      while ((now = go_.load()) == seen) std::this_thread::yield();
      seen = now;
      if (stop_) return;
      try {
        v_.run();
      } catch (...) {
        errors_[i] = std::current_exception();
      }
      finished_.fetch_add(1);
    }
  }

  const Variant& v_;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> go_{0};
  std::atomic<int> finished_{0};
  std::atomic<bool> stop_{false};
};

Result measure(const std::string& workload, const Variant& v, bool quick, int callers) {
  using Clock = std::chrono::steady_clock;
  Result r{workload, v.name};
  lanes::empty_cache();
  const bool once = v.once || (quick && v.name == "loop");
  try {
    Outputs out;
    for (int warm = 0; warm < (once ? 0 : 3); ++warm) out = v.run();
    out.clear();
    const size_t live_before = lanes::memory_stats().live_bytes;
    lanes::reset_peak_memory();
    const bool rss_reset = reset_peak_rss();
    const int min_runs = once ? 1 : quick ? 2 : 3, max_runs = once ? 1 : quick ? 2 : 200;
    const double budget_ms = quick ? 0 : 1000;
    double total_ms = 0;
    std::optional<Callers> others;
    if (callers > 1) others.emplace(v, callers);
    while (int(r.ms.size()) < max_runs && (int(r.ms.size()) < min_runs || total_ms < budget_ms)) {
      out.clear();
      const auto t0 = Clock::now();
      out = others ? others->run() : v.run();
      r.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() /
                     callers);
      total_ms += r.ms.back();
    }
    const lanes::MemoryStats mem = lanes::memory_stats();
    r.peak_mb = double(mem.peak_bytes - std::min(mem.peak_bytes, live_before)) / (1 << 20);
    r.rss_mb = rss_reset ? peak_rss_mb() : 0;
    r.sums = checksum(out);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void print_json(const Result& r, int threads, const Peaks* peaks) {
  std::printf("{\"workload\":\"%s\",\"variant\":\"%s\"", r.workload.c_str(), r.variant.c_str());
  if (!r.error.empty()) {
    std::printf(",\"error\":\"%s\"}\n", json_escape(r.error).c_str());
    std::fflush(stdout);
    return;
  }
  // (%.6g: a row of a few microseconds keeps its digits; %.4f ms rounded it to 0.1 us)
  std::printf(",\"median_ms\":%.6g,\"min_ms\":%.6g,\"runs\":%zu,\"threads\":%d", median(r.ms),
              *std::min_element(r.ms.begin(), r.ms.end()), r.ms.size(), threads);
  std::printf(",\"checksum\":%.10g,\"abs_checksum\":%.10g,\"out_shapes\":[", r.sums.sum,
              r.sums.abs);
  for (size_t i = 0; i < r.sums.shapes.size(); ++i) {
    std::printf("%s[", i ? "," : "");
    for (size_t d = 0; d < r.sums.shapes[i].size(); ++d)
      std::printf("%s%lld", d ? "," : "", static_cast<long long>(r.sums.shapes[i][d]));
    std::printf("]");
  }
  std::printf("],\"peak_mb\":%.2f,\"rss_mb\":%.1f,\"p10_ms\":%.6g", r.peak_mb, r.rss_mb,
              percentile(r.ms, 10));
  // The position-weighted sums of checksums_agree, so that another program (the peer runner of
  // scripts/bench_peers.sh) can apply the same test.
  for (const auto* sums : {&r.sums.weighted, &r.sums.weighted_sq}) {
    std::printf(",\"%s\":[", sums == &r.sums.weighted ? "weighted" : "weighted_sq");
    for (int k = 0; k < kWeights; ++k) std::printf("%s%.17g", k ? "," : "", (*sums)[k]);
    std::printf("]");
  }
  if (r.work && peaks) {
    const Roofline roof = roofline(*r.work, *peaks, median(r.ms));
    std::printf(
        ",\"flops\":%.6g,\"input_bytes\":%.6g,\"output_bytes\":%.6g,\"gflops\":%.4g"
        ",\"gbs\":%.4g,\"bound_ms\":%.4g,\"roofline\":%.4g,\"bound_by\":\"%s\"",
        r.work->flops, r.work->input_bytes, r.work->output_bytes, roof.gflops, roof.gbs,
        roof.bound_ms, roof.fraction, roof.compute_bound ? "compute" : "memory");
  }
  if (!r.profile.empty()) {  // the primitives one call evaluated (python_vs_cpp.py reads them)
    std::printf(",\"evaluations\":{");
    const char* sep = "";
    for (const auto& [name, c] : r.profile) {
      std::printf("%s\"%s\":%lld", sep, json_escape(name).c_str(),
                  static_cast<long long>(c.evaluations));
      sep = ",";
    }
    std::printf("}");
  }
  std::printf("}\n");
  std::fflush(stdout);
}

/// The variants of one workload that failed or disagree with the first variant that ran.
std::vector<std::string> disagreements(const std::vector<Result>& rs) {
  std::vector<std::string> bad;
  const Result* ref = nullptr;
  for (const Result& r : rs) {
    if (!r.error.empty()) {
      bad.push_back(r.variant + " (error)");
    } else if (!ref) {
      ref = &r;
    } else if (!checksums_agree(ref->sums, r.sums)) {
      bad.push_back(r.variant);
    }
  }
  return bad;
}

/// One line per workload; then, for variants named VARIANT:STRATEGY (vmap:mask, vmap+compile:mask,
/// manual:mask), one line per strategy under it, its ratios against manual:STRATEGY where there is
/// one, else against manual; then one line per other extra variant (rnn_scan's unrolled, a
/// vmap+compile), its time in the compile column.
void print_table(const std::vector<std::vector<Result>>& by_workload) {
  std::printf("\n%-18s %10s %10s %10s %10s | %9s %9s %9s | %9s %9s | %s\n", "workload (ms)", "loop",
              "vmap", "compile", "manual", "loop/vmap", "vmap/man", "comp/man", "vmap MB",
              "manual MB", "checksums");
  for (const auto& rs : by_workload) {
    std::map<std::string, const Result*> by;
    std::vector<std::string> strategies, extras;  // in the order they ran
    for (const Result& r : rs) {
      if (r.error.empty()) by[r.variant] = &r;
      const size_t colon = r.variant.find(':');
      if (colon == std::string::npos && r.variant != "loop" && r.variant != "vmap" &&
          r.variant != "vmap+compile" && r.variant != "manual" && r.variant != "setup")
        extras.push_back(r.variant);
      const std::string s = colon == std::string::npos ? "" : r.variant.substr(colon);
      if (!s.empty() && std::find(strategies.begin(), strategies.end(), s) == strategies.end())
        strategies.push_back(s);
    }
    auto ms = [&](const std::string& v) { return by.count(v) ? median(by[v]->ms) : NAN; };
    auto mb = [&](const std::string& v) { return by.count(v) ? by[v]->peak_mb : NAN; };
    const std::vector<std::string> bad = disagreements(rs);
    std::string agree = bad.empty() ? "agree" : "DIFFER:";
    for (const std::string& b : bad) agree += " " + b;
    auto line = [&](const std::string& label, const std::string& s, const std::string& status) {
      const double loop = ms("loop" + s), vm = ms("vmap" + s), comp = ms("vmap+compile" + s);
      const std::string manual = by.count("manual" + s) ? "manual" + s : "manual";
      const double man = ms(manual);
      std::printf("%-18s %10.3f %10.3f %10.3f %10.3f | %9.2f %9.2f %9.2f | %9.1f %9.1f | %s\n",
                  label.c_str(), loop, vm, comp, man, loop / vm, vm / man, comp / man,
                  mb("vmap" + s), mb(manual), status.c_str());
    };
    line(rs.front().workload, "", agree);
    for (const std::string& s : strategies) line("  " + s, s, "");
    for (const std::string& e : extras) {
      const double comp = ms(e), man = ms("manual");
      std::printf("%-18s %10s %10s %10.3f %10.3f | %9s %9s %9.2f | %9s %9.1f |\n",
                  ("  " + e).c_str(), "", "", comp, man, "", "", comp / man, "", mb("manual"));
    }
  }
}

/// A row's work (roofline.h): the fewest flops any of its variants evaluates in a warm call
/// (untimed; the loop is counted even under --no-loop), and the bytes of its inputs and outputs.
/// The fewest, because each variant can waste work the row does not need: a masked while_loop
/// runs finished lanes, while a per-example loop recomputes what vmap computes once for all
/// examples (hessian's loop does 5x its vmap's flops).
struct Profiled {
  std::map<std::string, lanes::FlopCounter::PerPrimitive> by_primitive;
  double ms = 0;
};

Work count_work(const std::vector<Variant>& variants, std::map<std::string, Profiled>& profiles) {
  Work w;
  w.input_bytes = input_bytes();
  w.flops = INFINITY;
  for (const Variant& v : variants) {
    const bool cold = v.once || v.name == "loop";  // no cache to warm up
    for (int warm = 0; warm < (cold ? 0 : 2); ++warm) (void)v.run();
    lanes::FlopCounter count;
    const double start = lanes::detail::counter_clock();
    const Outputs out = v.run();
    profiles[v.name] = {count.by_primitive(), (lanes::detail::counter_clock() - start) * 1e3};
    w.flops = std::min(w.flops, count.flops());
    w.output_bytes = 0;
    for (const Tensor& t : out)
      w.output_bytes += double(t.numel()) * double(lanes::dtype_size(t.dtype()));
  }
  return w;
}

/// The primitives that took most of a profiled call: name, share of the call, GFLOP/s and the
/// fraction of the FMA peak (control flow's share includes its sub-graphs').
std::string top_primitives(const Result& r, const Peaks& peaks, int n, const char* separator) {
  std::vector<std::pair<std::string, lanes::FlopCounter::PerPrimitive>> by(r.profile.begin(),
                                                                           r.profile.end());
  std::sort(by.begin(), by.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::string out;
  char buf[160];
  for (int i = 0; i < std::min<int>(n, int(by.size())); ++i) {
    const auto& [name, c] = by[size_t(i)];
    const double gflops = c.seconds > 0 ? c.flops / c.seconds / 1e9 : 0;
    std::snprintf(buf, sizeof buf, "%s%s %.0f%% (%lld calls)", i ? separator : "", name.c_str(),
                  100 * c.seconds * 1e3 / r.profiled_ms, static_cast<long long>(c.evaluations));
    out += buf;
    if (c.flops > 0) {
      std::snprintf(buf, sizeof buf, " at %.0f GFLOP/s (%.2f of peak)", gflops,
                    gflops / peaks.gflops);
      out += buf;
    }
  }
  return out;
}

void print_peaks(const Peaks& p) {
  std::printf(
      "peaks at %d threads (%s): FMA %.1f GFLOP/s (%.1f on one thread), read %.1f GB/s, "
      "non-temporal write %.1f GB/s\n",
      p.threads, p.isa, p.gflops, p.gflops_one, p.read_gbs, p.write_gbs);
}

/// Per row, its fastest batched variant (neither the loop nor manual) against the roofline.
void print_roofline(const std::vector<std::vector<Result>>& by_workload, const Peaks& peaks,
                    bool every_primitive) {
  std::printf("\n%-26s %-28s %9s %9s %9s %8s %8s %9s %8s %s\n", "roofline", "best variant", "ms",
              "MFLOP", "MB", "GFLOP/s", "GB/s", "bound ms", "fraction", "bound by");
  for (const auto& rs : by_workload) {
    const Result* best = nullptr;
    for (const Result& r : rs) {
      if (!r.error.empty() || !r.work || r.variant == "loop" || r.variant.rfind("manual", 0) == 0)
        continue;
      if (!best || median(r.ms) < median(best->ms)) best = &r;
    }
    if (!best) continue;
    const double ms = median(best->ms);
    const Roofline roof = roofline(*best->work, peaks, ms);
    std::printf("%-26s %-28s %9.4f %9.2f %9.2f %8.2f %8.2f %9.4f %8.3f %s\n",
                best->workload.c_str(), best->variant.c_str(), ms, best->work->flops / 1e6,
                (best->work->input_bytes + best->work->output_bytes) / 1e6, roof.gflops, roof.gbs,
                roof.bound_ms, roof.fraction, roof.compute_bound ? "compute" : "memory");
    if (!best->profile.empty())
      std::printf(
          "%-26s   %s\n", "",
          every_primitive
              ? top_primitives(*best, peaks, 1000, "\n                             ").c_str()
              : top_primitives(*best, peaks, 3, "; ").c_str());
  }
}

std::optional<Options> parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workload" && i + 1 < argc) {
      o.names.push_back(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      o.threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json-only") {
      o.json_only = true;
    } else if (a == "--quick") {
      o.quick = true;
      workloads::quick_mode() = true;
    } else if (a == "--dump-inputs" && i + 1 < argc) {
      o.dump_dir = argv[++i];
    } else if (a == "--no-loop") {
      o.no_loop = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--variant" && i + 1 < argc) {
      o.variants.push_back(argv[++i]);
    } else if (a == "--callers" && i + 1 < argc) {
      o.callers = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--roofline") {
      o.roofline = true;
    } else if (a == "--profile") {
      o.roofline = o.profile = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--workload NAME]... [--threads N] [--json-only] [--quick] "
                   "[--no-loop] [--variant NAME]... [--callers N] [--roofline] [--profile] "
                   "[--dump-inputs DIR] [--list]\n",
                   argv[0]);
      return std::nullopt;
    }
  }
  return o;
}

}  // namespace
}  // namespace workloads

int main(int argc, char** argv) {
  using namespace workloads;
  const std::optional<Options> opt = parse(argc, argv);
  if (!opt) return 2;
  for (const std::string& name : opt->names) {
    const auto& all = all_workloads();
    if (std::none_of(all.begin(), all.end(), [&](const Workload& w) { return w.name == name; })) {
      std::fprintf(stderr, "unknown workload %s; the workloads are:", name.c_str());
      for (const Workload& w : all) std::fprintf(stderr, " %s", w.name.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  std::vector<Workload> selected;  // in the order of WORKLOADS.md
  for (const Workload& w : all_workloads())
    if (opt->names.empty() ||
        std::find(opt->names.begin(), opt->names.end(), w.name) != opt->names.end())
      selected.push_back(w);
  if (opt->list) {  // the names, one per line, for scripts (bench/peers/python_vs_cpp.py)
    for (const Workload& w : selected) std::printf("%s\n", w.name.c_str());
    return 0;
  }
  lanes::set_num_threads(opt->threads);
  if (!opt->dump_dir.empty()) {
    try {
      dump_inputs(opt->dump_dir, selected);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    std::printf("wrote the inputs of %zu workloads to %s\n", selected.size(),
                opt->dump_dir.c_str());
    return 0;
  }

  std::optional<Peaks> peaks;
  if (opt->roofline) {
    peaks = measure_peaks(opt->threads, opt->quick);
    if (!opt->json_only) print_peaks(*peaks);
    std::fprintf(stderr,
                 "{\"peaks\":{\"threads\":%d,\"isa\":\"%s\",\"gflops\":%.4g,\"gflops_one\":%.4g,"
                 "\"read_gbs\":%.4g,\"write_gbs\":%.4g}}\n",
                 peaks->threads, peaks->isa, peaks->gflops, peaks->gflops_one, peaks->read_gbs,
                 peaks->write_gbs);
  }

  std::vector<std::vector<Result>> results;
  bool ok = true;
  for (const Workload& w : selected) {
    std::vector<Result>& rs = results.emplace_back();
    try {
      input_bytes() = 0;
      const std::vector<Variant> variants = w.setup();
      std::optional<Work> work;
      std::map<std::string, Profiled> profiles;
      if (peaks) work = count_work(variants, profiles);
      for (const Variant& v : variants) {
        if (opt->no_loop && v.name == "loop") continue;
        if (!opt->variants.empty() &&
            std::find(opt->variants.begin(), opt->variants.end(), v.name) == opt->variants.end())
          continue;
        rs.push_back(measure(w.name, v, opt->quick, opt->callers));
        rs.back().work = work;
        rs.back().profile = profiles[v.name].by_primitive;
        rs.back().profiled_ms = profiles[v.name].ms;
        print_json(rs.back(), opt->threads, peaks ? &*peaks : nullptr);
      }
    } catch (const std::exception& e) {  // setup itself failed
      rs.push_back({w.name, "setup", {}, {}, 0, 0, e.what()});
      print_json(rs.back(), opt->threads, nullptr);
    }
    for (const std::string& bad : disagreements(rs)) {
      std::fprintf(stderr, "%s: variant %s disagrees with the first variant (checksums)\n",
                   w.name.c_str(), bad.c_str());
      ok = false;
    }
    lanes::empty_cache();
  }
  if (!opt->json_only) {
    print_table(results);
    if (peaks) print_roofline(results, *peaks, opt->profile);
  }
  return ok ? 0 : 1;
}
