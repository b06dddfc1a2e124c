// Implicit inputs (lanes/implicit.h): the frames that turn reads of Variables and draws from
// Generators inside a trace into hidden inputs of the transform that traces.
#include "lanes/implicit.h"

#include <utility>

#include "lanes/compile.h"

#include <map>

#include "ir/trace.h"
#include "kernels/random.h"
#include "lanes/random.h"
#include "lanes/variable.h"
#include "lanes/vmap.h"

namespace lanes::detail {

class Frame {
 public:
  virtual ~Frame() = default;
  /// The value of var / the next key of gen inside this frame; `below` is the number of frames
  /// outside it, which give the values it feeds in.
  virtual Tensor read(const std::shared_ptr<VariableState>& var, size_t below) = 0;
  virtual Tensor next_key(const std::shared_ptr<GeneratorState>& gen, size_t below) = 0;
};

namespace {

thread_local std::vector<Frame*> frames;  // innermost last

Tensor int64_scalar(uint64_t v) {
  return tensor(std::vector<int64_t>{static_cast<int64_t>(v)}, Shape{});
}

// Outside every frame: the value now, and the key fold_in(key, n) of the n-th draw (the kernel's
// hash of counter n, as random::fold_in computes it).
Tensor read_in(const std::shared_ptr<VariableState>& var, size_t n) {
  return n == 0 ? var->get() : frames[n - 1]->read(var, n - 1);
}

Tensor key_in(const std::shared_ptr<GeneratorState>& gen, size_t n) {
  if (n > 0) return frames[n - 1]->next_key(gen, n - 1);
  const uint64_t k = gen->key, c = gen->counter.fetch_add(1, std::memory_order_relaxed);
  const auto y =
      kernels::threefry2x32({uint32_t(k >> 32), uint32_t(k)}, {uint32_t(c >> 32), uint32_t(c)});
  return int64_scalar(uint64_t(y[0]) << 32 | y[1]);
}

void push(Frame* f) { frames.push_back(f); }
void pop(Frame* f) {
  // Frames end in reverse order of creation (RAII), also when an exception unwinds them.
  if (!frames.empty() && frames.back() == f) frames.pop_back();
}

TensorType type_of(const Tensor& t) { return {t.shape(), t.dtype()}; }

// ---- compile ------------------------------------------------------------------------------------

class CompileState : public Frame {
 public:
  CompileState() : depth_(trace_depth()) {}

  Tensor read(const std::shared_ptr<VariableState>& var, size_t) override {
    auto [it, fresh] = vars_.try_emplace(var.get());
    if (fresh) {
      const Tensor now = var->get();
      it->second = add_hidden_input(depth_, type_of(now));
      order_.push_back({var, nullptr, type_of(now), 0});
      slot_[var.get()] = order_.size() - 1;
    }
    return it->second;
  }

  // Draw j of the call: fold_in(key, c + j) with c the counter fed at the call.
  Tensor next_key(const std::shared_ptr<GeneratorState>& gen, size_t) override {
    auto [it, fresh] = gens_.try_emplace(gen.get());
    if (fresh) {
      it->second = add_hidden_input(depth_, {Shape{}, DType::Int64});
      order_.push_back({nullptr, gen, {Shape{}, DType::Int64}, 0});
      slot_[gen.get()] = order_.size() - 1;
    }
    int64_t& j = order_[slot_[gen.get()]].draws;
    const Tensor data = j == 0 ? it->second : it->second + j;
    ++j;
    return random::fold_in(random::Key{int64_scalar(gen->key)}, data).bits;
  }

  std::vector<ImplicitInput> order_;

 private:
  size_t depth_;
  std::map<const void*, Tensor> vars_, gens_;
  std::map<const void*, size_t> slot_;
};

// ---- vmap ---------------------------------------------------------------------------------------

thread_local Tensor pending_lanes;  // LaneExamples: for the next VmapState

class VmapState : public Frame {
 public:
  VmapState(Randomness randomness, int64_t size)
      : depth_(trace_depth()),
        randomness_(randomness),
        size_(size),
        lanes_of_(std::exchange(pending_lanes, Tensor())) {}

  // An unmapped hidden argument holding the value outside.
  Tensor read(const std::shared_ptr<VariableState>& var, size_t below) override {
    auto [it, fresh] = vars_.try_emplace(var.get());
    if (fresh) {
      const Tensor outside = read_in(var, below);
      it->second = add_hidden_input(depth_, type_of(outside));
      hidden_.push_back({outside, false});
    }
    return it->second;
  }

  // One key K from outside per call; lane keys K (Same) or fold_in(K, i) (Different); draw j of
  // the call uses fold_in(lane key, j).
  Tensor next_key(const std::shared_ptr<GeneratorState>& gen, size_t below) override {
    check(randomness_ != Randomness::Error,
          "vmap: the function draws from a random::Generator, which VmapOptions::randomness = "
          "Randomness::Error (the default) forbids; set VmapOptions::randomness to "
          "Randomness::Different (independent draws per lane) or Randomness::Same (one draw "
          "shared by every lane), or pass explicit keys");
    auto [it, fresh] = lanes_.try_emplace(gen.get());
    if (fresh) {
      const Tensor k = key_in(gen, below);
      if (randomness_ == Randomness::Same) {
        it->second.key = add_hidden_input(depth_, {Shape{}, DType::Int64});
        hidden_.push_back({k, false});
      } else {
        const Tensor examples = lanes_of_.defined() ? lanes_of_ : arange(size_, DType::Int64);
        const Tensor lane_keys = random::fold_in_each(broadcast_to(k, {size_}), examples);
        it->second.key = add_hidden_input(depth_, {Shape{}, DType::Int64});
        hidden_.push_back({lane_keys, true});
      }
    }
    return random::fold_in(random::Key{it->second.key}, uint64_t(it->second.draws++)).bits;
  }

  std::vector<VmapFrame::Hidden> hidden_;

 private:
  struct Lane {
    Tensor key;  // the lane's key, a hidden argument of the vmap's trace
    int64_t draws = 0;
  };
  size_t depth_;
  Randomness randomness_;
  int64_t size_;
  Tensor lanes_of_;  // the examples the lanes stand for (LaneExamples), or 0 .. size-1
  std::map<const void*, Tensor> vars_;
  std::map<const void*, Lane> lanes_;
};

// ---- a vmap over Ragged arguments ---------------------------------------------------------------

class RaggedCallState : public Frame {
 public:
  Tensor read(const std::shared_ptr<VariableState>& var, size_t below) override {
    return read_in(var, below);
  }
  Tensor next_key(const std::shared_ptr<GeneratorState>& gen, size_t below) override {
    auto [it, fresh] = keys_.try_emplace(gen.get());
    if (fresh) it->second = key_in(gen, below);
    return it->second;
  }

 private:
  std::map<const void*, Tensor> keys_;
};

// ---- grad over Variables ----------------------------------------------------------------------

class OverrideState : public Frame {
 public:
  OverrideState(const std::vector<std::shared_ptr<VariableState>>& vars,
                const std::vector<Tensor>& values) {
    for (size_t i = 0; i < vars.size(); ++i) values_[vars[i].get()] = values[i];
  }
  Tensor read(const std::shared_ptr<VariableState>& var, size_t below) override {
    auto it = values_.find(var.get());
    return it != values_.end() ? it->second : read_in(var, below);
  }
  Tensor next_key(const std::shared_ptr<GeneratorState>& gen, size_t below) override {
    return key_in(gen, below);
  }

 private:
  std::map<const void*, Tensor> values_;
};

// ---- loop bodies ------------------------------------------------------------------------------

class LoopBodyState : public Frame {
 public:
  explicit LoopBodyState(const char* loop) : loop_(loop) {}
  Tensor read(const std::shared_ptr<VariableState>& var, size_t below) override {
    return read_in(var, below);  // the value of the call: the same on every iteration
  }
  Tensor next_key(const std::shared_ptr<GeneratorState>&, size_t) override {
    fail("random::Generator: a draw inside a ", loop_,
         " body, which is traced once and runs on every iteration, would repeat the same numbers "
         "each time; draw before the loop, or from an explicit key folded with the loop index "
         "(random::fold_in(key, i))");
  }

 private:
  const char* loop_;
};

}  // namespace

// ---- public entry points ----------------------------------------------------------------------

bool tracing() { return trace_depth() > 0; }

Tensor read_variable(const std::shared_ptr<VariableState>& var) {
  return read_in(var, frames.size());
}

Tensor generator_key(const std::shared_ptr<GeneratorState>& gen) {
  return key_in(gen, frames.size());
}

bool read_implicit(const std::vector<ImplicitInput>& inputs, std::vector<Tensor>& values) {
  const size_t start = values.size();
  for (const ImplicitInput& in : inputs) {
    if (!in.var) {
      values.emplace_back();
      continue;
    }
    Tensor v = in.var->get();
    if (v.dtype() != in.type.dtype || v.shape() != in.type.shape) {
      values.resize(start);
      return false;
    }
    values.push_back(std::move(v));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].gen)
      values[start + i] = int64_scalar(
          inputs[i].gen->counter.fetch_add(uint64_t(inputs[i].draws), std::memory_order_relaxed));
  return true;
}

bool same_implicit_types(const std::vector<ImplicitInput>& a, const std::vector<ImplicitInput>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].var != b[i].var || a[i].gen != b[i].gen || a[i].type.dtype != b[i].type.dtype ||
        a[i].type.shape != b[i].type.shape)
      return false;
  return true;
}

CompileFrame::CompileFrame() : frame_(std::make_unique<CompileState>()) { push(frame_.get()); }
CompileFrame::~CompileFrame() { pop(frame_.get()); }
std::vector<ImplicitInput> CompileFrame::inputs() const {
  return static_cast<const CompileState&>(*frame_).order_;
}

VmapFrame::VmapFrame(Randomness randomness, int64_t size)
    : frame_(std::make_unique<VmapState>(randomness, size)) {
  push(frame_.get());
}
VmapFrame::~VmapFrame() { pop(frame_.get()); }
std::vector<VmapFrame::Hidden> VmapFrame::hidden() const {
  return static_cast<const VmapState&>(*frame_).hidden_;
}

VariableOverride::VariableOverride(const std::vector<std::shared_ptr<VariableState>>& vars,
                                   const std::vector<Tensor>& values)
    : frame_(std::make_unique<OverrideState>(vars, values)) {
  push(frame_.get());
}
VariableOverride::~VariableOverride() { pop(frame_.get()); }

LaneExamples::LaneExamples(Tensor lanes) { pending_lanes = std::move(lanes); }
LaneExamples::~LaneExamples() { pending_lanes = Tensor(); }

RaggedCallFrame::RaggedCallFrame() : frame_(std::make_unique<RaggedCallState>()) {
  push(frame_.get());
}
RaggedCallFrame::~RaggedCallFrame() { pop(frame_.get()); }

LoopBodyFrame::LoopBodyFrame(const char* loop) : frame_(std::make_unique<LoopBodyState>(loop)) {
  push(frame_.get());
}
LoopBodyFrame::~LoopBodyFrame() { pop(frame_.get()); }

void append_hidden(const VmapFrame& frame, std::vector<Tensor>& leaves, VmapPlan& plan) {
  for (const VmapFrame::Hidden& h : frame.hidden()) {
    leaves.push_back(h.value);
    plan.dims.push_back(h.mapped ? 0 : kNotMapped);
    Shape example = h.value.shape();
    if (h.mapped) example.erase(example.begin());
    plan.example_types.push_back({example, h.value.dtype()});
  }
}

}  // namespace lanes::detail
