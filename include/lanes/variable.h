// Variables: named mutable tensors (tf.Variable) that traced and compiled functions read at each
// call.
//
//     lanes::Variable w(lanes::zeros({784, 10}), "w");
//     auto step = lanes::compile([&](const Tensor& x) { return lanes::matmul(x, w.read()); });
//     step(x);                       // reads w's value now
//     w.assign_add(delta);           // same shape and dtype: step's cache stays valid
//     auto g = lanes::grad(loss, {w, b})(x, y);   // one gradient per Variable
//     w.assign_add(g[0] * -0.1);     // an SGD step
//
// read() inside a transform is not a constant: compile makes it a hidden input fed at each
// call (a new shape or dtype retraces), vmap an unmapped hidden argument (lanes/implicit.h).
// assign() and assign_add() while any transform traces (inside vmap, grad, compile, a loop body)
// are a lanes::Error naming the Variable: a traced function has no effects; return the new value
// and assign it outside.
//
// Threads: reads are safe from any number of threads at once, also while one thread assigns:
// a read sees the whole old value or the whole new one (tensors are immutable; an assign swaps
// the handle under a mutex), and a compiled call reads each Variable once, at its start. Writes
// from several threads are serialized; the last one wins, and assign_add is an atomic
// read-modify-write. Order writes against reads yourself where it matters (an optimizer step
// assigns after the gradients it uses were computed).
//
// Copies of a Variable share one value (a handle, like a Python reference to a tf.Variable).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lanes/autodiff.h"
#include "lanes/implicit.h"
#include "lanes/tensor.h"

namespace lanes {

namespace detail {
struct VariableState {
  std::string name;
  mutable std::mutex mutex;
  Tensor value;
  Tensor get() const {
    std::lock_guard<std::mutex> lock(mutex);
    return value;
  }
};
}  // namespace detail

class Variable {
 public:
  /// A Variable holding `value` (concrete, defined); `name` is for messages.
  explicit Variable(const Tensor& value, std::string name = "");
  /// The value (inside a transform: as the top of this file says).
  Tensor read() const { return detail::read_variable(state_); }
  /// Replaces the value; any shape and dtype (compiled functions reading it retrace on a new
  /// one). Not while tracing.
  void assign(const Tensor& value) const;
  /// value += delta (broadcast into the value's shape and dtype), atomically. Not while tracing.
  void assign_add(const Tensor& delta) const;
  const std::string& name() const { return state_->name; }
  Shape shape() const { return state_->get().shape(); }
  DType dtype() const { return state_->get().dtype(); }
  const std::shared_ptr<detail::VariableState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::VariableState> state_;
};

namespace detail {

/// value_and_grad of f(args...) with respect to the values of `vars`: f is traced with every
/// read of vars[i] giving the traced value being differentiated.
template <class F>
struct VariableGrad {
  F f;
  std::vector<Variable> vars;
  bool value = false;

  template <class... Args>
  auto operator()(const Args&... args) const {
    std::vector<std::shared_ptr<VariableState>> states;
    std::vector<Tensor> values;
    for (const Variable& v : vars) {
      states.push_back(v.state());
      values.push_back(v.read());  // in the context of the call (compile: a hidden input)
    }
    auto with_values = [&](const std::vector<Tensor>& vs, const Args&... a) {
      VariableOverride scope(states, vs);
      return f(a...);
    };
    return lanes::value_and_grad(with_values)(values, args...);
  }
};

}  // namespace detail

/// The gradient of f (returning a 0-d float) with respect to each Variable's value:
/// grad(f, {w, b})(args...) is a std::vector<Tensor>, one per Variable, in order.
template <class F>
auto grad(F f, std::vector<Variable> vars) {
  return [vg = detail::VariableGrad<F>{std::move(f), std::move(vars)}](const auto&... args) {
    return vg(args...).second;
  };
}
/// (f(args...), the gradients as grad(f, vars) gives them).
template <class F>
auto value_and_grad(F f, std::vector<Variable> vars) {
  return detail::VariableGrad<F>{std::move(f), std::move(vars)};
}

}  // namespace lanes
