// The loop of a lane while and its compaction policy. The step runs masked (a finished lane keeps
// its carry) with the next test fused in, so the working set is the result until a compaction:
// then the finished lanes' rows go to the result and the running ones are gathered into a
// smaller working set, with the mapped consts they read.
#include "primitives/while_lanes.h"

#include <algorithm>
#include <atomic>

#include "lanes/ops.h"

namespace lanes::prim {

GraphPtr lane_step(const Graph& cond, const Graph& body, size_t n_carry) {
  std::vector<TensorType> types = detail::input_types(body);
  types.push_back({{}, DType::Bool});
  detail::Closed c = detail::trace_closed(types, [&](const std::vector<Tensor>& a) {
    std::vector<Tensor> in(a.begin(), a.end() - 1);
    std::vector<Tensor> out = eval_graph(body, in);
    for (size_t k = 0; k < n_carry; ++k) in[k] = out[k] = where(a.back(), out[k], a[k]);
    out.push_back(eval_graph(cond, in)[0]);
    return out;
  });
  check(c.lifted.empty(), "while: the lane step lifted a constant (a bug in lanes)");
  return c.graph;
}

namespace {

// Per lane, the bytes of the carries and of the mapped consts: what a compaction moves and keeps.
struct LaneBytes {
  double carry = 0, consts = 0;
};

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.storage() && a.storage() == b.storage() && a.offset() == b.offset() &&
         a.dtype() == b.dtype() && a.shape() == b.shape() && a.strides() == b.strides();
}

// When to gather the running lanes into a smaller working set.
// - Memory, for every strategy that compacts: after the first compaction the whole batch's result
//   stays beside the new working set, the step's output and the running lanes' mapped consts. It
//   happens only once that fits in 1.2x of what the masked loop holds (its carries in and out and
//   the mapped consts it reads), so compacting never costs much more memory than masking.
// - Compact: whenever a quarter of the working set has finished.
// - Auto, ski rental: the work each step spends on finished lanes adds up, and the loop compacts
//   once that idle work reaches what compacting would cost (the bytes it moves). Masking then
//   never wastes more than compaction would have cost, and compacting never costs more than
//   masking had already wasted: a Newton solve whose lanes finish close together stays masked, a
//   Mandelbrot set whose lanes escape early compacts early. Both sides are estimates from the
//   graph and the shapes, never clocks: the choice, and so the result's bits, depend on the
//   inputs alone (lanes/determinism.h), not on what else the machine is doing.
class Compaction {
 public:
  Compaction(LoopStrategy strategy, LaneBytes bytes, int64_t lanes, double step_work)
      : strategy_(strategy), bytes_(bytes), lanes_(double(lanes)), step_work_(step_work) {}

  bool wanted(int64_t real, int64_t running, int64_t width, int64_t to, bool first) const {
    if (strategy_ == LoopStrategy::Mask || to >= width) return false;
    if (first && !fits(to)) return false;
    if (strategy_ == LoopStrategy::Compact) return running * 4 < real * 3;
    return idle_ >= cost(moved(real, running, to, first));
  }
  // Bytes a compaction reads and writes: the predicate, the finished rows written back (the
  // first compaction keeps them in place), the running rows and their mapped consts gathered.
  double moved(int64_t real, int64_t running, int64_t to, bool first) const {
    return double(real) + (first ? 0.0 : double(real - running) * bytes_.carry) +
           double(to) * (bytes_.carry + bytes_.consts);
  }
  // A step over `width` lanes of which `running` still run.
  void stepped(int64_t width, int64_t running) {
    idle_ += kSecondsPerElement * step_work_ * double(width - running);
  }
  void compacted() { idle_ = 0; }

 private:
  // A compaction's fixed cost (a few allocations and index vectors) and cost per byte, and a
  // step's cost per element of its work (detail::work_of of the per-lane step): measured on a
  // 2-core Zen 4 with 65536 Newton lanes (~6 us, ~0.1 ns per byte; the step ~0.3 ns per element
  // at 2 threads). Only where Auto switches depends on them, never a value.
  static constexpr double kFixed = 6e-6, kSecondsPerByte = 0.1e-9, kSecondsPerElement = 0.3e-9;
  double cost(double bytes) const { return kFixed + bytes * kSecondsPerByte; }
  bool fits(int64_t to) const {
    const double masked = lanes_ * (2 * bytes_.carry + bytes_.consts);
    return lanes_ * bytes_.carry + double(to) * (2 * bytes_.carry + bytes_.consts) <= 1.2 * masked;
  }

  LoopStrategy strategy_;
  LaneBytes bytes_;
  double lanes_, step_work_, idle_ = 0;
};

class LaneLoop {
 public:
  LaneLoop(const detail::LaneRunners& cond, const detail::LaneRunners& step, size_t n_carry,
           const Lanes& lanes, std::vector<Tensor> in)
      : cond_(cond),
        step_(step),
        nc_(n_carry),
        lanes_(lanes),
        work_(std::make_move_iterator(in.begin()),
              std::make_move_iterator(in.begin() + int64_t(n_carry))),
        consts_(in.begin() + int64_t(n_carry), in.end()),
        policy_(lanes.options.loop, lane_bytes(), lanes.size, detail::work_of(step.graph())) {}

  std::vector<Tensor> run() {
    const int64_t B = lanes_.size;
    consts_w_ = consts_;
    lane_.resize(size_t(B));
    for (int64_t b = 0; b < B; ++b) lane_[b] = b;
    real_ = width_ = B;
    Tensor pred = cond_.run(B, with_consts())[0];
    for (;;) {
      pred = pred.contiguous();
      // Branch-free over bytes (bool is one byte), so the count vectorizes: with 65536 lanes a
      // scan with a branch per lane was most of a Newton solve's time.
      const uint8_t* p = reinterpret_cast<const uint8_t*>(pred.data<bool>());
      int64_t running = 0;
      for (int64_t j = 0; j < real_; ++j) running += p[j];
      if (running == 0) break;
      const int64_t to = std::min(width_, detail::lane_bucket(running));
      if (policy_.wanted(real_, running, width_, to, result_.empty())) {
        compact(p, running, to);
        policy_.compacted();
        pred = lanes::full({to}, 1.0, DType::Bool);
      }
      std::vector<Tensor> args = with_consts();
      args.push_back(std::move(pred));
      std::vector<Tensor> out = step_.run(width_, args);
      args.clear();
      pred = std::move(out.back());
      out.pop_back();
      work_ = std::move(out);
      policy_.stepped(width_, running);
    }
    if (result_.empty()) return std::move(work_);  // never compacted: every lane in place
    std::vector<int64_t> rows(static_cast<size_t>(real_));
    for (int64_t j = 0; j < real_; ++j) rows[j] = j;
    write_back(rows);
    return std::move(result_);
  }

 private:
  // A const that is the same tensor as an earlier one (cond and body each lifted it) is gathered
  // once: same_[i] is the first such const, or i.
  LaneBytes lane_bytes() {
    LaneBytes b;
    auto per_lane = [&](const Tensor& t) {
      return lanes_.size == 0 ? 0.0
                              : double(t.numel() / lanes_.size * int64_t(dtype_size(t.dtype())));
    };
    for (const Tensor& c : work_) b.carry += per_lane(c);
    for (size_t i = 0; i < consts_.size(); ++i) {
      same_.push_back(i);
      for (size_t j = 0; j < i && same_[i] == i; ++j)
        if (same_tensor(consts_[j], consts_[i])) same_[i] = j;
      if (lanes_.mapped[nc_ + i] && same_[i] == i) b.consts += per_lane(consts_[i]);
    }
    return b;
  }

  std::vector<Tensor> with_consts() const {
    std::vector<Tensor> a = work_;
    a.insert(a.end(), consts_w_.begin(), consts_w_.end());
    return a;
  }

  // The running lanes (p over the first real_ positions) gathered into `to` positions, the last
  // ones repeating a running lane; the finished ones' rows written to the result.
  void compact(const uint8_t* p, int64_t running, int64_t to) {
    running_.resize(size_t(real_));
    finished_.resize(size_t(real_));
    int64_t nr = 0, nf = 0;
    for (int64_t j = 0; j < real_; ++j) {  // a branch per lane mispredicts on mixed lanes
      running_[nr] = finished_[nf] = j;
      nr += p[j];
      nf += p[j] ^ 1;
    }
    running_.resize(size_t(nr));
    finished_.resize(size_t(nf));
    if (result_.empty()) {
      // The first compaction meets every lane in place: the working set becomes the result (its
      // finished rows are final), the running lanes move to a smaller one.
      for (const Tensor& c : work_) result_.push_back(owned(c));
      work_ = result_;
    } else {
      write_back(finished_);
    }
    running_.resize(size_t(to), running_[0]);
    ids_.resize(size_t(to));
    for (int64_t j = 0; j < to; ++j) ids_[j] = lane_[running_[j]];
    for (Tensor& c : work_) c = gather_rows(c, running_);
    for (size_t i = 0; i < consts_.size(); ++i)
      if (lanes_.mapped[nc_ + i])
        consts_w_[i] = same_[i] < i ? consts_w_[same_[i]] : gather_rows(consts_[i], ids_);
    lane_.swap(ids_);
    real_ = running;
    width_ = to;
  }

  // Rows `rows` of the working set to their lanes' rows of the result.
  void write_back(const std::vector<int64_t>& rows) {
    to_.resize(rows.size());
    for (size_t j = 0; j < rows.size(); ++j) to_[j] = lane_[rows[j]];
    for (size_t k = 0; k < work_.size(); ++k) scatter_rows(work_[k], rows, result_[k], to_);
  }

  const detail::LaneRunners &cond_, &step_;
  size_t nc_;
  const Lanes& lanes_;
  std::vector<Tensor> work_, consts_, consts_w_, result_;  // result_: made at the first compaction
  std::vector<size_t> same_;
  Compaction policy_;
  std::vector<int64_t> lane_;  // working position -> lane; the first real_ are distinct
  std::vector<int64_t> running_, finished_, ids_, to_;
  int64_t real_ = 0, width_ = 0;
};

}  // namespace

std::vector<Tensor> run_lane_loop(const detail::LaneRunners& cond, const detail::LaneRunners& step,
                                  size_t n_carry, const Lanes& lanes, std::vector<Tensor> in) {
  return LaneLoop(cond, step, n_carry, lanes, std::move(in)).run();
}

}  // namespace lanes::prim
