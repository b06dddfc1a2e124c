// vmap over Ragged arguments, over the op table: every row whose inputs share a leading axis is
// run on examples cut to different lengths along it. Group must equal the per-example loop; Pad
// must equal it too, or raise a lanes::Error saying why it cannot mask the op.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "op_table.h"

using namespace optable;

namespace {

::testing::AssertionResult close(const Tensor& got, const Tensor& want, const OpRow& row) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure()
           << "got " << lanes::dtype_name(got.dtype()) << lanes::shape_str(got.shape())
           << ", expected " << lanes::dtype_name(want.dtype()) << lanes::shape_str(want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  const bool f32 = want.dtype() == DType::Float32, f64 = want.dtype() == DType::Float64;
  const double rtol = f32 ? 4 * row.rtol_float32 : f64 ? 1e-12 : 0;
  const double atol = f32 ? 4 * row.atol_float32 : f64 ? 1e-12 : 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]))) continue;
    if (std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i])) continue;
    return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs loop " << w[i];
  }
  return ::testing::AssertionSuccess();
}

class RaggedOps : public ::testing::TestWithParam<std::string> {
 protected:
  const OpRow& row() const {
    for (const OpRow& r : op_table())
      if (r.name == GetParam()) return r;
    throw std::logic_error("no row " + GetParam());
  }
};

// Rows Pad ran (and matched) and rows it refused, for the summary test below.
std::set<std::string>& padded_rows() {
  static std::set<std::string> rows;
  return rows;
}
std::set<std::string>& refused_rows() {
  static std::set<std::string> rows;
  return rows;
}

TEST_P(RaggedOps, GroupAndPadEqualTheLoop) {
  const OpRow& r = row();
  const DType dtype = r.dtypes.back();
  Gen gen;
  const std::vector<Tensor> sample = r.sample(dtype, gen);
  if (sample.empty() || sample[0].ndim() == 0) GTEST_SKIP() << "no leading axis to cut";
  const int64_t extent = sample[0].shape(0);
  for (const Tensor& t : sample)
    if (t.ndim() == 0 || t.shape(0) != extent) GTEST_SKIP() << "inputs' leading axes differ";
  if (extent < 2) GTEST_SKIP() << "a leading axis of " << extent;
  // Five examples: the sample cut to these lengths along the shared leading axis.
  const std::vector<int64_t> lengths = {extent, extent - 1, 1, extent - 1, extent};
  std::vector<std::vector<Tensor>> per_input(sample.size());
  std::vector<Tensor> want;
  for (int64_t n : lengths) {
    std::vector<Tensor> cut;
    for (size_t k = 0; k < sample.size(); ++k) {
      cut.push_back(lanes::slice_axis(sample[k], 0, 0, n));
      per_input[k].push_back(cut.back());
    }
    try {
      want.push_back(r.call(cut));
    } catch (const lanes::Error& e) {
      GTEST_SKIP() << "the op itself rejects a leading axis of " << n << ": " << e.what();
    }
  }
  std::vector<lanes::Ragged> xs;
  for (auto& examples : per_input) xs.emplace_back(examples);
  auto f = [&](const std::vector<Tensor>& inputs) { return r.call(inputs); };
  for (lanes::RaggedStrategy s : {lanes::RaggedStrategy::Group, lanes::RaggedStrategy::Pad}) {
    lanes::VmapOptions o;
    o.ragged = s;
    const bool pad = s == lanes::RaggedStrategy::Pad;
    try {
      const lanes::Ragged got = lanes::vmap(f, 0, 0, o)(xs);
      ASSERT_EQ(got.size(), int64_t(lengths.size()));
      for (size_t b = 0; b < lengths.size(); ++b)
        EXPECT_TRUE(close(got[int64_t(b)], want[b], r))
            << (pad ? "pad" : "group") << ", example " << b << " (length " << lengths[b] << ")";
      if (pad) padded_rows().insert(r.name);
    } catch (const lanes::Error& e) {
      // Pad may refuse; grouping may only fail where the examples' outputs differ in rank
      // (squeeze of an extent that is 1 in some example), which no Ragged holds.
      const std::string what = e.what();
      EXPECT_TRUE(pad ? what.find("RaggedStrategy::Pad cannot run") != std::string::npos
                      : what.find("ranks may not") != std::string::npos)
          << (pad ? "pad" : "group") << ": " << what;
      if (pad) refused_rows().insert(r.name);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, RaggedOps, ::testing::ValuesIn(row_names()),
                         [](const auto& info) { return info.param; });

// After every row: Pad must have masked most of the rows it met, not refused them all.
class PadSummary : public ::testing::Environment {
 public:
  void TearDown() override {
    const size_t padded = padded_rows().size(), refused = refused_rows().size();
    if (padded + refused == 0) return;  // the rows were filtered out
    std::string list;
    for (const std::string& name : refused_rows()) list += " " + name;
    std::cout << "Pad masked " << padded << " rows and refused " << refused << ":" << list << "\n";
    EXPECT_GT(padded, 2 * refused);
  }
};
::testing::Environment* const pad_summary = ::testing::AddGlobalTestEnvironment(new PadSummary);

}  // namespace
