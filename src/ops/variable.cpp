// lanes::Variable (lanes/variable.h): a named value behind a mutex; reads inside transforms go
// through the frames of src/transforms/implicit.cpp.
#include "lanes/variable.h"

#include "ops/internal.h"

namespace lanes {

namespace {
void check_assignable(const detail::VariableState& s, const Tensor& value, const char* op) {
  check(value.defined(), "Variable '", s.name, "': ", op, " got an undefined tensor");
  check(!detail::tracing() && !value.is_tracer(), "Variable '", s.name, "': ", op,
        " inside a traced function (vmap, grad, compile, a loop body) is not allowed: a traced "
        "function has no effects; return the new value and assign it outside");
}
}  // namespace

Variable::Variable(const Tensor& value, std::string name)
    : state_(std::make_shared<detail::VariableState>()) {
  state_->name = std::move(name);
  check(value.defined(), "Variable '", state_->name, "': needs a defined tensor");
  check(!value.is_tracer(), "Variable '", state_->name,
        "': the initial value is traced; a Variable holds a concrete tensor");
  state_->value = value;
}

void Variable::assign(const Tensor& value) const {
  check_assignable(*state_, value, "assign");
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->value = value;
}

void Variable::assign_add(const Tensor& delta) const {
  check_assignable(*state_, delta, "assign_add");
  std::lock_guard<std::mutex> lock(state_->mutex);
  const Tensor& v = state_->value;
  check(ops::broadcast_shapes(v.shape(), delta.shape(), "assign_add") == v.shape(), "Variable '",
        state_->name, "': assign_add of shape ", fmt(delta.shape()),
        " does not broadcast to the value's shape ", fmt(v.shape()));
  state_->value = cast(v + delta, v.dtype());
}

}  // namespace lanes
