// lanes on a busy machine: every row of build/bench/workloads (its loop variants skipped) timed
// in one run under each condition, and each row's slowdown against quiet.
//
//     build/bench/contention [--threads N] [--workload NAME]... [--quick] [--all-variants]
//                            [--baseline OLD_WORKLOADS_BINARY] [--rounds R]
//
// Conditions, one after the other:
//   quiet    nothing else runs
//   spin     beside a spinning process (`sh -c 'while :; do :; done'`)
//   twin     beside a second copy of the same bench (restarted whenever it ends)
//   callers  two application threads calling the same (compiled) function at once
//            (workloads --callers 2: the time per call at the pair's throughput)
// Each row is the workload's best batched variant in the quiet run (the fastest that is neither
// `loop` nor a `manual` one), with --all-variants every variant. Every condition runs R times
// (--rounds, default 2), keeping each row's best median. With --baseline, the quiet runs
// alternate between that binary and this one, and each row's new/old ratio is printed (the
// same machine, the same run). The other processes share every core this one
// may use; on a machine with more cores than --threads all of them are pinned to the first N.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  int threads = 2;
  std::vector<std::string> workloads;
  bool quick = false, all_variants = false;
  std::string baseline;
  int rounds = 2;
};

// (workload, variant) -> median ms; a variant that failed maps to NaN.
using Times = std::map<std::pair<std::string, std::string>, double>;

std::string field(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  size_t begin = at + tag.size(), end;
  if (line[begin] == '"') {
    end = line.find('"', ++begin);
  } else {
    end = line.find_first_of(",}", begin);
  }
  return line.substr(begin, end - begin);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Pins this process (and what it starts) to the first n cores, when it may use more.
std::string pin_prefix(int n) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) <= n) return "";
  return "taskset -c 0-" + std::to_string(n - 1) + " ";
}

// The workloads command; a baseline binary may predate --no-loop and runs its loops too.
std::string workloads_command(const std::string& binary, const Options& o, int callers,
                              bool no_loop = true) {
  std::string cmd =
      pin_prefix(o.threads) + quote(binary) + " --json-only --threads " + std::to_string(o.threads);
  if (no_loop) cmd += " --no-loop";
  if (o.quick) cmd += " --quick";
  if (callers > 1) cmd += " --callers " + std::to_string(callers);
  for (const std::string& w : o.workloads) cmd += " --workload " + quote(w);
  return cmd;
}

Times run_workloads(const std::string& command) {
  Times t;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return t;
  char buf[1 << 16];
  while (std::fgets(buf, sizeof buf, pipe.get())) {
    const std::string line = buf;
    const std::string w = field(line, "workload"), v = field(line, "variant");
    if (w.empty()) continue;
    const std::string ms = field(line, "median_ms");
    t[{w, v}] = ms.empty() ? NAN : std::atof(ms.c_str());
  }
  return t;
}

// A background shell command in its own process group, killed with the group.
class Background {
 public:
  explicit Background(const std::string& command) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid_, pid_);
  }
  ~Background() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

 private:
  pid_t pid_ = -1;
};

std::string self_dir() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  std::string p(path, size_t(n));
  return p.substr(0, p.rfind('/'));
}

bool batched(const std::string& variant) {
  return variant != "loop" && variant.rfind("manual", 0) != 0;
}

// The rows to print: per workload the fastest batched variant of the quiet run, or every one.
std::vector<std::pair<std::string, std::string>> rows(const Times& quiet, bool all) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::string, std::pair<std::string, double>> best;
  std::vector<std::string> order;
  for (const auto& [key, ms] : quiet) {
    const auto& [w, v] = key;
    if (!batched(v) || std::isnan(ms)) continue;
    if (all) out.push_back(key);
    if (!best.count(w)) order.push_back(w);
    if (!best.count(w) || ms < best[w].second) best[w] = {v, ms};
  }
  if (!all)
    for (const std::string& w : order) out.emplace_back(w, best[w].first);
  return out;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--threads" && has_value) {
      o.threads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--workload" && has_value) {
      o.workloads.push_back(argv[++i]);
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--all-variants") {
      o.all_variants = true;
    } else if (a == "--baseline" && has_value) {
      o.baseline = argv[++i];
    } else if (a == "--rounds" && has_value) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--workload NAME]... [--quick] [--all-variants] "
                   "[--baseline OLD_WORKLOADS_BINARY] [--rounds R]\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

// The per-row minimum of several runs' medians (the least disturbed of the alternated runs).
Times min_of(const std::vector<Times>& runs) {
  Times out;
  for (const Times& t : runs)
    for (const auto& [key, ms] : t) out[key] = out.count(key) ? std::fmin(out[key], ms) : ms;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  const std::string bench = self_dir() + "/workloads";
  const std::string cmd = workloads_command(bench, o, 1);
  std::fprintf(stderr, "contention: %d threads; workloads: %s\n", o.threads, cmd.c_str());

  // Each condition runs R processes and keeps each row's best median: on these VMs a process
  // sometimes runs a row at one thread's speed for its whole life (quiet too, old binaries too),
  // and one such process would decide a slowdown either way.
  std::vector<Times> quiet_runs, old_runs, spin_runs, twin_runs, caller_runs;
  for (int r = 0; r < o.rounds; ++r) {
    if (!o.baseline.empty()) {
      std::fprintf(stderr, "contention: round %d, baseline quiet\n", r + 1);
      old_runs.push_back(run_workloads(workloads_command(o.baseline, o, 1, false)));
    }
    std::fprintf(stderr, "contention: round %d, quiet\n", r + 1);
    quiet_runs.push_back(run_workloads(cmd));
  }
  for (int r = 0; r < o.rounds; ++r) {
    std::fprintf(stderr, "contention: round %d, beside a spinning process\n", r + 1);
    const Background spinner(pin_prefix(o.threads) + "sh -c 'while :; do :; done'");
    spin_runs.push_back(run_workloads(cmd));
  }
  for (int r = 0; r < o.rounds; ++r) {
    std::fprintf(stderr, "contention: round %d, beside a second copy of itself\n", r + 1);
    const Background copy("while :; do " + cmd + " >/dev/null 2>&1; done");
    twin_runs.push_back(run_workloads(cmd));
  }
  for (int r = 0; r < o.rounds; ++r) {
    std::fprintf(stderr, "contention: round %d, two application threads calling at once\n", r + 1);
    caller_runs.push_back(run_workloads(workloads_command(bench, o, 2)));
  }
  const Times quiet = min_of(quiet_runs), old = min_of(old_runs), spin = min_of(spin_runs),
              twin = min_of(twin_runs), callers = min_of(caller_runs);

  std::printf("\nlanes beside other work: median ms and slowdown against quiet, %d threads%s\n",
              o.threads, o.quick ? " (--quick: 2 runs per cell, not for quoting)" : "");
  std::printf("%-36s %9s %9s %7s %9s %7s %9s %7s %9s %7s", "row (best batched variant)", "quiet",
              "spin", "x", "twin", "x", "2 callers", "x", "", "");
  if (!o.baseline.empty()) std::printf(" %9s %9s", "old quiet", "new/old");
  std::printf("\n");
  double worst_spin = 0, worst_twin = 0, worst_callers = 0, worst_old = 0;
  for (const auto& key : rows(quiet, o.all_variants)) {
    const double q = quiet.at(key);
    auto at = [&](const Times& t) { return t.count(key) ? t.at(key) : NAN; };
    const double s = at(spin), t = at(twin), c = at(callers);
    worst_spin = std::fmax(worst_spin, s / q);
    worst_twin = std::fmax(worst_twin, t / q);
    worst_callers = std::fmax(worst_callers, c / q);
    std::printf("%-36s %9.3f %9.3f %7.2f %9.3f %7.2f %9.3f %7.2f %9s %7s",
                (key.first + " " + key.second).c_str(), q, s, s / q, t, t / q, c, c / q, "", "");
    if (!o.baseline.empty()) {
      const double b = at(old);
      worst_old = std::fmax(worst_old, q / b);
      std::printf(" %9.3f %9.3f", b, q / b);
    }
    std::printf("\n");
  }
  std::printf(
      "worst slowdown: beside a spinning process %.2fx, beside a twin %.2fx; two callers: "
      "%.2fx per call (pair throughput %.2fx of one thread's)\n",
      worst_spin, worst_twin, worst_callers, 1 / worst_callers);
  if (!o.baseline.empty()) std::printf("worst quiet new/old: %.3f\n", worst_old);
  return 0;
}
