// vmap over Ragged arguments by grouping (RaggedStrategy::Group, lanes/ragged.h): the examples
// of each distinct shape run as one call of the ordinary vmap, and the results go back in order.
#include <map>

#include "lanes/array_ops.h"
#include "lanes/ops.h"
#include "lanes/vmap.h"

namespace lanes::detail {

std::vector<std::optional<int64_t>> check_ragged_axes(const std::vector<Tensor>& leaves,
                                                      const std::vector<AxisLeaf>& axes,
                                                      int64_t size) {
  std::vector<std::optional<int64_t>> out;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const AxisLeaf& a = axes[i];
    if (!leaves[i].defined()) {  // a Ragged's slot
      check(a.axis == std::optional<int64_t>(0), "vmap: ", a.path,
            " is a Ragged, which vmap maps along its examples: its in_axes must be 0, got ",
            a.axis ? std::to_string(*a.axis) : std::string("none"));
    } else if (a.axis) {
      const Tensor& t = leaves[i];
      const int64_t axis = *a.axis < 0 ? *a.axis + t.ndim() : *a.axis;
      check(axis >= 0 && axis < t.ndim(), "vmap: in_axes ", *a.axis, " of ", a.path,
            " is out of range for shape ", fmt(t.shape()));
      check(t.shape(axis) == size, "vmap: ", a.path, " has ", t.shape(axis),
            " examples along axis ", *a.axis, " but the Ragged arguments have ", size);
      out.push_back(axis);
      continue;
    }
    out.push_back(a.axis);
  }
  return out;
}

std::vector<std::vector<int64_t>> group_by_shape(const std::vector<const Ragged*>& raggeds,
                                                 int64_t size) {
  for (size_t r = 1; r < raggeds.size(); ++r)
    check(raggeds[r]->size() == size, "vmap: Ragged arguments with ", size, " and ",
          raggeds[r]->size(), " examples");
  std::map<std::vector<Shape>, size_t> index;  // the shapes of one example -> its group
  std::vector<std::vector<int64_t>> groups;
  for (int64_t i = 0; i < size; ++i) {
    std::vector<Shape> shapes;
    for (const Ragged* r : raggeds) shapes.push_back((*r)[i].shape());
    auto [it, fresh] = index.emplace(std::move(shapes), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::vector<Tensor> group_leaves(const std::vector<Tensor>& leaves,
                                 const std::vector<const Ragged*>& raggeds,
                                 const std::vector<std::optional<int64_t>>& axes,
                                 const std::vector<int64_t>& members) {
  const Tensor picked = tensor(members);
  std::vector<Tensor> out;
  size_t next_ragged = 0;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].defined()) {
      const Ragged& r = *raggeds[next_ragged++];
      if (int64_t(members.size()) == r.size()) {  // one group of all: the Ragged's kept stack
        out.push_back(r.padded(0));
        continue;
      }
      std::vector<Tensor> examples;
      for (int64_t m : members) examples.push_back(r[m]);
      out.push_back(stack(examples, 0));
    } else if (axes[i]) {
      out.push_back(take(leaves[i], picked, *axes[i]));
    } else {
      out.push_back(leaves[i]);
    }
  }
  return out;
}

std::vector<Ragged> ungroup(const std::vector<std::vector<Tensor>>& outputs,
                            const std::vector<std::optional<int64_t>>& axes,
                            const std::vector<std::vector<int64_t>>& groups, int64_t size) {
  std::vector<std::vector<Tensor>> examples(axes.size(), std::vector<Tensor>(size_t(size)));
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t leaf = 0; leaf < axes.size(); ++leaf) {
      const Tensor& batched = outputs[g][leaf];
      const int64_t axis = *axes[leaf] < 0 ? *axes[leaf] + batched.ndim() : *axes[leaf];
      for (size_t j = 0; j < groups[g].size(); ++j)
        examples[leaf][size_t(groups[g][j])] =
            squeeze(slice_axis(batched, axis, int64_t(j), int64_t(j) + 1), Axes{axis});
    }
  std::vector<Ragged> out;
  for (std::vector<Tensor>& e : examples) out.emplace_back(std::move(e));
  return out;
}

}  // namespace lanes::detail
