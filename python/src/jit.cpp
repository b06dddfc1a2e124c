// jit from Python: lanes::compile over a function of the flat leaf list (one Jit per input tree
// layout), and JitDispatch, the call path of the common case in C++. A jitted call from Python
// ran ~30 lines of Python (the layout of the arguments, a dict lookup, the output tree's rebuild)
// whose code and data a large kernel evicts from the caches between calls: on a 4 MB product the
// Python jit call took ~10 us longer than the eager op it runs (jacobian_square's python/C++ 1.13
// to 1.18 in the peers' runs).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <map>
#include <memory>

#include "bindings.h"

namespace lanes::python {
namespace {

// What a traced Python function returns to Jit: its output leaves and the index of the output
// tree its trace recorded (lanes/_api.py's _Trees). The index is static data of the tree, not a
// leaf: compile keeps it with the signature's traced output and hands it back with every call's
// results, so each call rebuilds the tree its own trace made (the tree can differ between
// signatures) at no cost. It was a 0-d int64 constant output, whose fill and Array cost ~0.14 us
// a call.
struct TaggedLeaves {
  Leaves leaves;
  int64_t tree = 0;
};

// The Python function of the leaf list, returning (list of leaves, tree index).
struct TaggedFn {
  std::shared_ptr<nb::object> fn;
  TaggedLeaves operator()(const Leaves& in) const {
    nb::gil_scoped_acquire gil;
    nb::tuple out = nb::cast<nb::tuple>((*fn)(to_list(in)));
    check(out.size() == 2, "jit: the traced function must return (leaves, tree index)");
    return {to_leaves(out[0]), nb::cast<int64_t>(out[1])};
  }
};

}  // namespace
}  // namespace lanes::python

template <>
struct lanes::tree::Tree<lanes::python::TaggedLeaves> {
  static constexpr bool kNode = true;
  template <class F>
  static void each(const lanes::python::TaggedLeaves& x, F&& f) {
    f(x.leaves);
  }
  template <class F>
  static lanes::python::TaggedLeaves map(const lanes::python::TaggedLeaves& x, F&& f) {
    return {f(x.leaves), x.tree};
  }
};

namespace lanes::python {
namespace {

// A compiled Python function for one input tree structure (and static arguments).
class Jit {
 public:
  explicit Jit(nb::object fn) : compiled_(TaggedFn{hold(std::move(fn))}) {}
  TaggedLeaves operator()(const Leaves& leaves) const {
    nb::gil_scoped_release release;
    return compiled_(leaves);
  }
  size_t cache_size() const { return compiled_.cache_size(); }

 private:
  Compiled<TaggedFn> compiled_;
};

// The leaves as a Python tuple (form n >= 0) or list (form -2 - n) of Arrays.
nb::object sequence(Leaves leaves, int64_t form) {
  const bool tuple = form >= 0;
  const auto n = Py_ssize_t(tuple ? form : -2 - form);
  nb::object seq = nb::steal(tuple ? PyTuple_New(n) : PyList_New(n));
  if (!seq.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* leaf = nb::cast(std::move(leaves[size_t(i)])).release().ptr();
    if (tuple)
      PyTuple_SET_ITEM(seq.ptr(), i, leaf);
    else
      PyList_SET_ITEM(seq.ptr(), i, leaf);
  }
  return seq;
}

// jit's call for arguments that are Arrays or plain tuples and lists of Arrays (parameters), the
// common case, without Python: the layout of the arguments picks the Jit (made by Python's
// `make(layout)` on first sight, with the _Trees that records its output structures), and an
// output that is one leaf, or a plain tuple or list of leaves, is built here (a call back to
// _Trees.rebuild cost ~1.5 us, perex_linear's Python/C++ 1.35 -> 1.18). Other arguments (pytrees,
// scalars, numpy arrays, keywords) go to Python's `general(args, kwargs)`, other outputs to the
// _Trees' `rebuild`. It is the jitted function itself (lanes.jit gives it fun's name and doc and
// __get__ binds it as a method): a Python wrapper's frame cost ~0.1 us a call.
// Runs under the GIL except inside the compiled call, so the map needs no lock of its own.
class JitDispatch {
 public:
  JitDispatch(nb::object make, nb::object general)
      : make_(std::move(make)), general_(std::move(general)) {}
  JitDispatch(const JitDispatch&) = delete;
  JitDispatch& operator=(const JitDispatch&) = delete;

  nb::object operator()(nb::args args, nb::kwargs kwargs) {
    if (kwargs.size() != 0) return general_(args, kwargs);
    std::vector<int64_t> key;  // per argument: -1 an Array, n a tuple of n, -2 - n a list of n
    key.reserve(args.size());
    Leaves leaves;
    leaves.reserve(args.size() + 8);
    for (nb::handle a : args) {
      if (add_leaf(a, leaves)) {
        key.push_back(-1);
        continue;
      }
      const bool tuple = PyTuple_CheckExact(a.ptr()), list = PyList_CheckExact(a.ptr());
      if (!tuple && !list) return general_(args, kwargs);
      PyObject** items = PySequence_Fast_ITEMS(a.ptr());
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(a.ptr());
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!add_leaf(items[i], leaves)) return general_(args, kwargs);
      key.push_back(tuple ? int64_t(n) : -2 - int64_t(n));
    }
    Entry& entry = find(key, args);
    auto [out, tree] = (*entry.jit)(leaves);
    const int64_t form = form_of(entry, tree);
    if (form == kLeaf) return nb::cast(std::move(out.front()));
    if (form == kTree)
      return entry.trees.attr("rebuild")(nb::make_tuple(nb::cast(std::move(out)), tree));
    return sequence(std::move(out), form);
  }

 private:
  struct Entry {
    nb::object jit_object, trees;
    Jit* jit;
    std::vector<int64_t> forms;  // per output tree: what _Trees.form says, kUnasked before
  };
  // An output tree's form (Python's _Trees.form): one leaf, a tuple of n >= 0 leaves, a list of
  // n (-2 - n), or any other tree.
  static constexpr int64_t kLeaf = -1, kTree = INT64_MIN, kUnasked = INT64_MIN + 1;

  static bool add_leaf(nb::handle h, Leaves& leaves) {
    if (!nb::isinstance<Tensor>(h)) return false;
    leaves.push_back(*nb::inst_ptr<Tensor>(h));
    return true;
  }

  Entry& find(const std::vector<int64_t>& key, nb::args args) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return *it->second;
    nb::list layout;  // as Python's jit spells it: -1, or (tuple or list, n)
    size_t i = 0;
    for (int64_t k : key) {
      nb::handle a = args[i++];
      layout.append(k == -1 ? nb::object(nb::int_(-1))
                            : nb::object(nb::make_tuple(a.type(), nb::len(a))));
    }
    nb::tuple made = nb::cast<nb::tuple>(make_(nb::tuple(layout)));
    auto entry = std::make_unique<Entry>();
    entry->jit_object = made[0];
    entry->trees = made[1];
    entry->jit = nb::cast<Jit*>(entry->jit_object);
    return *entries_.emplace(key, std::move(entry)).first->second;
  }

  int64_t form_of(Entry& entry, int64_t tree) {
    if (size_t(tree) >= entry.forms.size()) entry.forms.resize(size_t(tree) + 1, kUnasked);
    int64_t& form = entry.forms[size_t(tree)];
    if (form == kUnasked) {
      nb::object f = entry.trees.attr("form")(tree);
      form = f.is_none() ? kTree : nb::cast<int64_t>(f);
    }
    return form;
  }

  nb::object make_, general_;
  std::map<std::vector<int64_t>, std::unique_ptr<Entry>> entries_;
};

}  // namespace

void bind_jit(nb::module_& m) {
  nb::class_<Jit>(m, "Jit")
      .def(nb::init<nb::object>())
      .def("__call__",
           [](const Jit& jit, const Leaves& leaves) {
             TaggedLeaves out = jit(leaves);
             return std::make_pair(std::move(out.leaves), out.tree);
           })
      .def_prop_ro("cache_size", &Jit::cache_size);
  nb::class_<JitDispatch>(m, "JitDispatch", nb::dynamic_attr())
      .def(nb::init<nb::object, nb::object>(), nb::arg("make"), nb::arg("general"))
      .def("__call__", &JitDispatch::operator())
      .def("__repr__",
           [](nb::handle self) {
             nb::object fun = nb::getattr(self, "__wrapped__", nb::none());
             return nb::str("<lanes.jit of {}>").format(nb::repr(fun));
           })
      // A jitted function stored on a class binds as a method, as a Python function would.
      .def(
          "__get__",
          [](nb::handle self, nb::handle obj, nb::handle) -> nb::object {
            if (obj.is_none()) return nb::borrow(self);
            return nb::steal(PyMethod_New(self.ptr(), obj.ptr()));
          },
          nb::arg("obj").none(), nb::arg("type").none() = nb::none());
}

}  // namespace lanes::python
