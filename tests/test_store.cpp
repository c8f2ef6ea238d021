// The store of a real one-process run (tiny random model, Brown samples), reopened with the
// HDF5 C API: shapes, attributes, descriptions, the complete flag, and cross-checks between
// per-sample and aggregate datasets.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/store_kinds.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/store.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/model/random_checkpoint.h"
#include "stages/stats/accumulator.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

std::vector<hsize_t> dims(hid_t file, const std::string& path) {
  const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  return h5::dims_of(ds);
}

herr_t collect_datasets(hid_t, const char* name, const H5O_info_t* info, void* out) {
  if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

class RunStore : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::kBrownPath)) return;
    tmp_ = new test::TempDir();
    write_random_checkpoint(ModelConfig::preset("bert-tiny"), 2, test::kVocabPath, (tmp_->path / "model").string());
    const std::string cfg = tmp_->write("c.yaml",
                                        "corpus: {path: data/brown, max_documents: 30}\n"
                                        "samples: {num_samples: 40, seed: 9}\n"
                                        "model: {path: " +
                                            (tmp_->path / "model").string() +
                                            "}\n"
                                            "selection: [{top_fraction: 0.01}, {relative_to_max: 0.95}]\n"
                                            "statistics: {examples: [0, 5]}\n"
                                            "output: {dir: " +
                                            (tmp_->path / "out").string() +
                                            "}\n"
                                            "runtime: {batch_size: 3, unit_size: 8}\n");
    std::ostringstream out;
    rc_ = run_job(cfg, {}, out);
    summary_ = out.str();
  }
  static void TearDownTestSuite() { delete tmp_; }
  void SetUp() override {
    CTXSIM_REQUIRE_DATA();
    ASSERT_EQ(rc_, 0);
    file_ = h5::Id(H5Fopen((tmp_->path / "out/store.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "open store");
  }
  static test::TempDir* tmp_;
  static int rc_;
  static std::string summary_;
  h5::Id file_;
};
test::TempDir* RunStore::tmp_ = nullptr;
int RunStore::rc_ = -1;
std::string RunStore::summary_;

TEST_F(RunStore, RootAttributes) {
  EXPECT_EQ(h5::get_attr_int(file_, "complete"), 1);
  EXPECT_EQ(h5::get_attr_int(file_, "schema_version"), store_schema_version());
  EXPECT_NE(h5::get_attr_string(file_, "config").find("num_samples: 40"), std::string::npos);
  EXPECT_EQ(h5::get_attr_string(file_, "model_sha256"), sha256_file((tmp_->path / "model/model.safetensors").string()));
  EXPECT_EQ(h5::get_attr_string(file_, "vocab_sha256"), "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3");
  EXPECT_FALSE(h5::get_attr_string(file_, "finished").empty());
  EXPECT_FALSE(h5::get_attr_string(file_, "git_revision").empty());
  EXPECT_EQ(h5::get_attr_int(file_, "ranks"), 1);
}

TEST_F(RunStore, ShapesAsDocumented) {
  EXPECT_EQ(dims(file_, "samples/token_ids"), (std::vector<hsize_t>{40, 128}));
  EXPECT_EQ(dims(file_, "samples/sentence_ids"), (std::vector<hsize_t>{40, 128}));
  EXPECT_EQ(dims(file_, "samples/n_valid"), (std::vector<hsize_t>{40}));
  EXPECT_EQ(dims(file_, "samples/source"), (std::vector<hsize_t>{40, 2}));
  EXPECT_EQ(dims(file_, "per_sample/anchor_token"), (std::vector<hsize_t>{2, 40, 2, 2}));
  EXPECT_EQ(dims(file_, "per_sample/anchor_share"), (std::vector<hsize_t>{2, 40, 2, 2}));
  EXPECT_EQ(dims(file_, "stats/top_fraction=0.01/distance_hist"), (std::vector<hsize_t>{2, 2, 128}));
  EXPECT_EQ(dims(file_, "stats/relative_to_max=0.95/anchor_counts"), (std::vector<hsize_t>{2, 2, 30522}));
  EXPECT_EQ(dims(file_, "stats/baseline/distance_all"), (std::vector<hsize_t>{128}));
  EXPECT_EQ(dims(file_, "stats/top_fraction=0.01/separator_mass"), (std::vector<hsize_t>{2, 2}));
  EXPECT_EQ(dims(file_, "stats/relative_to_max=0.95/high_attention_all"), (std::vector<hsize_t>{2, 2}));
  EXPECT_EQ(dims(file_, "examples/attention"), (std::vector<hsize_t>{2, 2, 2, 128, 128}));
  EXPECT_EQ(dims(file_, "examples/selected"), (std::vector<hsize_t>{2, 2, 2, 2, 128, 128}));
}

// docs/STORE.md's statistics table is the schema: the same datasets, groups and shapes, in order,
// and each of them is in the store where the table says.
TEST_F(RunStore, StoreDocumentsExactlyTheStatisticsSchema) {
  std::ifstream in("docs/STORE.md");
  ASSERT_TRUE(in) << "run from the source folder";
  const std::regex row(R"(^\| `(\w+)` \| (/stats/<rule>|/stats/baseline) \| (\[[A-Z,]*\]) \| .+ \|$)");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const size_t i = names.size();
    names.push_back(m[1]);
    ASSERT_LT(i, kStatCount) << "the table documents more statistics than the schema has: " << m[1];
    const StatInfo& info = kStatSchema[i];
    EXPECT_EQ(m[1].str(), info.name) << "row " << i;
    EXPECT_EQ(m[2].str() == "/stats/<rule>", info.per_rule) << info.name;
    const char* shapes[] = {"[]", "[T]", "[L]", "[L,H]", "[L,H,T]", "[L,H,V]", "[L,H,S]"};
    EXPECT_EQ(m[3].str(), shapes[int(info.shape)]) << info.name;
    const std::string where = info.per_rule ? "stats/top_fraction=0.01/" : "stats/baseline/";
    EXPECT_TRUE(h5::exists(file_, where + info.name)) << where << info.name;
  }
  EXPECT_EQ(names.size(), kStatCount) << "docs/STORE.md's statistics table misses schema entries";
}

// A job is three rows: its config section and keys (job_kinds()), what the shell and the command
// line do for it (job_rows()), and, when it writes a store, its store kind: each row has the others.
TEST(JobStores, EveryJobIsARowOfEachTable) {
  ASSERT_EQ(job_rows().size(), job_kinds().size());
  for (const JobKindRow& kind : job_kinds()) {
    const JobRow& job = job_row(job_kind_named(kind.name));
    EXPECT_STREQ(job.name, kind.name);
    ASSERT_NE(job.command, nullptr) << kind.name;
    EXPECT_NE(std::string(job.help), "") << kind.name;
    EXPECT_NE(std::string(job.example).find(std::string("ctxsim ") + kind.name), std::string::npos) << kind.name;
    int stores = 0;
    for (const StoreKind& s : store_kinds()) stores += job.name == std::string(s.job);
    EXPECT_EQ(stores, job.writes_store ? 1 : 0) << kind.name;
  }
  for (const StoreKind& s : store_kinds()) EXPECT_TRUE(job_row(job_kind_named(s.job)).writes_store) << s.job;
}

// docs/STORE.md's table of each store is that store's dataset table (dataset_spec.h; the run
// store's /stats is the schema's, above): the same datasets, element types and axes, nothing more
// and nothing less.
TEST(JobStores, StoreDocumentsEveryDatasetOfTheirTables) {
  struct Documented {
    const char* section;
    const std::vector<DatasetSpec>* table;
    std::map<std::string, std::string> letters;  // axis -> the letter STORE.md writes
  };
  const Documented stores[] = {
      {"## Groups",
       &run_datasets(),
       {{"sample", "N"},
        {"position", "T"},
        {"source_field", "2"},
        {"rule", "R"},
        {"layer", "L"},
        {"head", "H"},
        {"example", "E"},
        {"i", "T"},
        {"j", "T"},
        {"byte", "bytes"}}},
      {"## Pruning store",
       &prune_datasets(),
       {{"unit", "U"},
        {"layer", "L"},
        {"head", "H"},
        {"order", "O"},
        {"fraction", "F"},
        {"curve", "C"},
        {"seed", "R"},
        {"rank", "L·H"},
        {"ctxsim_score", "S"}}},
      {"## Segmentation store",
       &segment_datasets(),
       {{"document", "D"},
        {"segment", "K"},
        {"part_field", "2"},
        {"gold_boundary", "K-1"},
        {"segmentation_method", "M"},
        {"boundary", "G"},
        {"layer", "L"},
        {"head", "H"},
        {"sentence_i", "S0"},
        {"sentence_j", "S0"}}},
  };
  std::ifstream in("docs/STORE.md");
  ASSERT_TRUE(in) << "run from the source folder";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::regex row(R"(^\| `/([\w/]+)` \| (\w+) \[([^\]]*)\] \| .+ \|$)");
  for (const Documented& d : stores) {
    const size_t begin = doc.find(d.section);
    ASSERT_NE(begin, std::string::npos) << d.section;
    const size_t end = doc.find("\n## ", begin + 1);
    std::istringstream lines(doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    std::set<std::string> documented, tabled;
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_match(line, m, row)) documented.insert(m[1].str() + " " + m[2].str() + " [" + m[3].str() + "]");
    }
    for (const DatasetSpec& s : *d.table) {
      std::vector<std::string> axes;
      for (const char* a : s.axes) axes.push_back(d.letters.at(a));
      tabled.insert(s.path() + " " + element_name(s.element) + " [" + join(axes, ", ") + "]");
    }
    EXPECT_EQ(documented, tabled) << d.section << ": docs/STORE.md and the store's dataset table differ";
  }
}

TEST_F(RunStore, EveryDatasetHasADescription) {
  std::vector<std::string> names;
  ASSERT_GE(H5Ovisit(file_, H5_INDEX_NAME, H5_ITER_NATIVE, collect_datasets, &names), 0);
  EXPECT_GT(names.size(), 30u);
  for (const auto& n : names) {
    const h5::Id ds(H5Dopen2(file_, n.c_str(), H5P_DEFAULT), H5Dclose, n.c_str());
    EXPECT_TRUE(h5::has_attr(ds, "description")) << n;
  }
}

TEST_F(RunStore, PerSampleAgreesWithAggregates) {
  const auto hp = h5::read_all<int32_t>(file_, "per_sample/high_pairs", H5T_NATIVE_INT32);  // [R, N, L, H]
  for (int r = 0; r < 2; ++r) {
    const std::string rule = r == 0 ? "top_fraction=0.01" : "relative_to_max=0.95";
    const auto agg = h5::read_all<int64_t>(file_, "stats/" + rule + "/high_pairs", H5T_NATIVE_INT64);  // [L, H]
    for (int lh = 0; lh < 4; ++lh) {
      int64_t sum = 0;
      for (int n = 0; n < 40; ++n) sum += hp[size_t((r * 40 + n) * 4 + lh)];
      EXPECT_EQ(sum, agg[size_t(lh)]) << rule << " " << lh;
    }
  }
  // Example 1 is sample 5: its stored selection has as many pairs as its per-sample count.
  const auto sel = h5::read_all<uint8_t>(file_, "examples/selected", H5T_NATIVE_UINT8);  // [E, R, L, H, T, T]
  const auto ids = h5::read_all<int64_t>(file_, "examples/sample_ids", H5T_NATIVE_INT64);
  ASSERT_EQ(ids, (std::vector<int64_t>{0, 5}));
  for (int r = 0; r < 2; ++r)
    for (int lh = 0; lh < 4; ++lh) {
      const size_t off = size_t((((1 * 2 + r) * 4) + lh) * 128 * 128);
      const int64_t n = std::accumulate(sel.begin() + long(off), sel.begin() + long(off + 128 * 128), int64_t{0});
      EXPECT_EQ(n, hp[size_t((r * 40 + 5) * 4 + lh)]);
    }
}

TEST_F(RunStore, SummaryPrintsEveryLayerAndRule) {
  EXPECT_NE(summary_.find("rule top_fraction=0.01"), std::string::npos) << summary_;
  EXPECT_NE(summary_.find("rule relative_to_max=0.95"), std::string::npos);
  EXPECT_NE(summary_.find("top anchors"), std::string::npos);
}

TEST_F(RunStore, SameConfigReusesDifferentConfigIsRefused) {
  std::ostringstream out;
  const std::string cfg = (tmp_->path / "c.yaml").string();
  ::testing::internal::CaptureStderr();
  try {
    run_job(cfg, {"samples.num_samples=30"}, out);
    ::testing::internal::GetCapturedStderr();
    FAIL() << "a different config must be refused";
  } catch (const JobExit& e) {
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(e.code(), 1);
    EXPECT_NE(err.find("holds a run with a different config"), std::string::npos) << err;
  }
  // The refused run left the store as it was.
  EXPECT_EQ(dims(file_, "samples/token_ids"), (std::vector<hsize_t>{40, 128}));
}

}  // namespace
}  // namespace ctxsim
