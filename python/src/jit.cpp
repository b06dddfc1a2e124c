// jit from Python: lanes::compile over a function of the flat leaf list (one Jit per input tree
// layout), and JitDispatch, the call path of the common case in C++. A jitted call from Python
// ran ~30 lines of Python (the layout of the arguments, a dict lookup, the output tree's rebuild)
// whose code and data a large kernel evicts from the caches between calls: on a 4 MB product the
// Python jit call took ~10 us longer than the eager op it runs (jacobian_square's python/C++ 1.13
// to 1.18 in the peers' runs).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

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
  TaggedLeaves operator()(Leaves&& leaves) const {
    nb::gil_scoped_release release;  // (handing the GIL over and back costs ~0.1 us a call)
    return compiled_.call_taking(std::move(leaves));
  }
  size_t cache_size() const { return compiled_.cache_size(); }

 private:
  Compiled<TaggedFn> compiled_;
};

// lanes.Array's type, set when the module is bound: nanobind's isinstance and cast find a C++
// type's Python type by its typeid in a hash map on every use (~3% of a call that does no work).
PyTypeObject* array_type = nullptr;

bool is_array(nb::handle h) {
  return Py_TYPE(h.ptr()) == array_type || PyType_IsSubtype(Py_TYPE(h.ptr()), array_type);
}

// A new lanes.Array holding t.
nb::object wrap(Tensor&& t) {
  nb::object array = nb::inst_alloc(nb::handle(reinterpret_cast<PyObject*>(array_type)));
  new (nb::inst_ptr<Tensor>(array)) Tensor(std::move(t));
  nb::inst_mark_ready(array);
  return array;
}

// The leaves as a Python tuple (form n >= 0) or list (form -2 - n) of Arrays.
nb::object sequence(Leaves leaves, int64_t form) {
  const bool tuple = form >= 0;
  const auto n = Py_ssize_t(tuple ? form : -2 - form);
  nb::object seq = nb::steal(tuple ? PyTuple_New(n) : PyList_New(n));
  if (!seq.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* leaf = wrap(std::move(leaves[size_t(i)])).release().ptr();
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
// __get__ binds it as a method): a Python wrapper's frame cost ~0.1 us a call. CPython calls it
// through vectorcall (vectorcall below): no argument tuple is made.
// Runs under the GIL except inside the compiled call, so its entries need no lock of their own.
PyObject* vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                     PyObject* kwnames) noexcept;

class JitDispatch {
 public:
  JitDispatch(nb::object make, nb::object general)
      : make_(std::move(make)), general_(std::move(general)) {}
  JitDispatch(const JitDispatch&) = delete;
  JitDispatch& operator=(const JitDispatch&) = delete;

  // The call of `count` positional arguments, then the values of the keywords named in kwnames
  // (a tuple, or null), as vectorcall hands them over.
  nb::object operator()(PyObject* const* args, Py_ssize_t count, PyObject* kwnames) {
    if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) return general(args, count, kwnames);
    if (count > kMaxArguments) return general(args, count, nullptr);
    // Per argument: -1 an Array, n a tuple of n, -2 - n a list of n.
    std::array<int64_t, kMaxArguments> key;
    Leaves leaves;
    leaves.reserve(size_t(count) + 8);
    for (Py_ssize_t a = 0; a < count; ++a) {
      nb::handle arg = args[a];
      if (add_leaf(arg, leaves)) {
        key[size_t(a)] = -1;
        continue;
      }
      const bool tuple = PyTuple_CheckExact(arg.ptr()), list = PyList_CheckExact(arg.ptr());
      if (!tuple && !list) return general(args, count, nullptr);
      PyObject** items = PySequence_Fast_ITEMS(arg.ptr());
      const Py_ssize_t n = PySequence_Fast_GET_SIZE(arg.ptr());
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!add_leaf(items[i], leaves)) return general(args, count, nullptr);
      key[size_t(a)] = tuple ? int64_t(n) : -2 - int64_t(n);
    }
    Entry& entry = find({key.data(), size_t(count)}, args);
    auto [out, tree] = (*entry.jit)(std::move(leaves));
    const int64_t form = form_of(entry, tree);
    if (form == kLeaf) return wrap(std::move(out.front()));
    if (form == kTree)
      return entry.trees.attr("rebuild")(nb::make_tuple(nb::cast(std::move(out)), tree));
    return sequence(std::move(out), form);
  }

 private:
  // First, so that it lies at the object's start: CPython reads it at the type's
  // tp_vectorcall_offset (bind_jit sets that to where nanobind keeps the object).
  vectorcallfunc vectorcall_ = vectorcall;

  // Python's `general(args, kwargs)`, for the calls the fast path does not take.
  nb::object general(PyObject* const* args, Py_ssize_t count, PyObject* kwnames) {
    nb::object tuple = nb::steal(PyTuple_New(count));
    if (!tuple.is_valid()) throw nb::python_error();
    for (Py_ssize_t i = 0; i < count; ++i)
      PyTuple_SET_ITEM(tuple.ptr(), i, nb::borrow(args[i]).release().ptr());
    nb::dict kwargs;
    const Py_ssize_t keywords = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < keywords; ++i)
      kwargs[nb::handle(PyTuple_GET_ITEM(kwnames, i))] = nb::handle(args[count + i]);
    return general_(tuple, kwargs);
  }

  struct Entry {
    std::vector<int64_t> key;
    nb::object jit_object, trees;
    Jit* jit;
    std::vector<int64_t> forms;  // per output tree: what _Trees.form says, kUnasked before
  };
  // An output tree's form (Python's _Trees.form): one leaf, a tuple of n >= 0 leaves, a list of
  // n (-2 - n), or any other tree.
  static constexpr int64_t kLeaf = -1, kTree = INT64_MIN, kUnasked = INT64_MIN + 1;
  // More positional arguments than this go to `general` (the key lives on the stack).
  static constexpr Py_ssize_t kMaxArguments = 32;

  static bool add_leaf(nb::handle h, Leaves& leaves) {
    if (!is_array(h)) return false;
    leaves.push_back(*nb::inst_ptr<Tensor>(h));
    return true;
  }

  // The entry of a layout: a linear search, as a jitted function sees one layout or a few.
  Entry& find(std::span<const int64_t> key, PyObject* const* args) {
    for (auto& entry : entries_)
      if (std::ranges::equal(entry->key, key)) return *entry;
    nb::list layout;  // as Python's jit spells it: -1, or (tuple or list, n)
    for (size_t i = 0; i < key.size(); ++i) {
      nb::handle a = args[i];
      layout.append(key[i] == -1 ? nb::object(nb::int_(-1))
                                 : nb::object(nb::make_tuple(a.type(), nb::len(a))));
    }
    nb::tuple made = nb::cast<nb::tuple>(make_(nb::tuple(layout)));
    auto entry = std::make_unique<Entry>();
    entry->key.assign(key.begin(), key.end());
    entry->jit_object = made[0];
    entry->trees = made[1];
    entry->jit = nb::cast<Jit*>(entry->jit_object);
    return *entries_.emplace_back(std::move(entry));
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
  std::vector<std::unique_ptr<Entry>> entries_;
};

// A C++ exception thrown by a call through vectorcall, until `reraise` hands it to nanobind's
// translation (lanes::Error to LanesError, a Python exception restored with its traceback).
thread_local std::exception_ptr pending;
nb::handle reraise;  // lanes._lanes._reraise_pending

// JitDispatch's vectorcall: CPython hands it the arguments where they lie. Through tp_call (a
// `__call__` method, then the call slot) it cost an argument tuple, and before that nanobind's
// overload dispatch and an empty keyword dict: ~0.15 us of the ~0.45 us the Python layer cost on
// a call that does no work.
PyObject* vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                     PyObject* kwnames) noexcept {
  if (!nb::inst_ready(self)) {
    PyErr_SetString(PyExc_TypeError, "lanes.JitDispatch: called before it was initialized");
    return nullptr;
  }
  try {
    return (*nb::inst_ptr<JitDispatch>(self))(args, PyVectorcall_NARGS(nargsf), kwnames)
        .release()
        .ptr();
  } catch (...) {
    pending = std::current_exception();
  }
  PyObject* none = PyObject_CallNoArgs(reraise.ptr());  // raises, so returns null
  Py_XDECREF(none);
  return nullptr;
}

// tp_call (PyObject_Call, f(*args)) goes to vectorcall too.
PyType_Slot jit_dispatch_slots[] = {{Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                                    {0, nullptr}};

// Makes CPython call JitDispatch objects through their vectorcall_ member: the type gets its
// offset (where nanobind keeps the C++ object, which starts with it) and the vectorcall flag,
// which nanobind's class_ does not set.
void enable_vectorcall(nb::handle type) {
  static_assert(std::is_standard_layout_v<JitDispatch>,
                "vectorcall_ must lie at the start of JitDispatch");
  nb::object probe = nb::inst_alloc(type);  // not made ready: dropped without a destructor
  auto* tp = reinterpret_cast<PyTypeObject*>(type.ptr());
  tp->tp_vectorcall_offset = reinterpret_cast<char*>(nb::inst_ptr<JitDispatch>(probe)) -
                             reinterpret_cast<char*>(probe.ptr());
  tp->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  PyType_Modified(tp);
}

}  // namespace

void bind_jit(nb::module_& m) {
  array_type = reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr());
  check(array_type != nullptr, "lanes: bind_array must run before bind_jit");
  nb::class_<Jit>(m, "Jit")
      .def(nb::init<nb::object>())
      .def("__call__",
           [](const Jit& jit, Leaves leaves) {
             TaggedLeaves out = jit(std::move(leaves));
             return std::make_pair(std::move(out.leaves), out.tree);
           })
      .def_prop_ro("cache_size", &Jit::cache_size);
  m.def("_reraise_pending", [] { std::rethrow_exception(std::exchange(pending, nullptr)); });
  reraise = m.attr("_reraise_pending");
  auto dispatch = nb::class_<JitDispatch>(m, "JitDispatch", nb::dynamic_attr(),
                                          nb::type_slots(jit_dispatch_slots));
  enable_vectorcall(dispatch);
  dispatch.def(nb::init<nb::object, nb::object>(), nb::arg("make"), nb::arg("general"))
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
