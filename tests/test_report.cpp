// `ctxsim report` on stores with known contents: a real one-process run whose first example is
// then overwritten with synthetic patterns (identity attention, zero similarity), checked pixel
// by pixel in the PNG figures through the layout the report writes (figures/index.json); and
// malformed stores, which must give one error naming what is missing and leave no report.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <utility>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/summary.h"
#include "pipeline/report/layer_figures.h"
#include "pipeline/report/report_figures.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/figures/render.h"
#include "stages/model/random_checkpoint.h"
#include "stages/stats/metrics.h"
#include "test_helpers.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

class Report : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(test::kBrownPath)) return;
    tmp_ = new test::TempDir();
    write_random_checkpoint(ModelConfig::preset("bert-tiny"), 4, test::kVocabPath, (tmp_->path / "model").string());
    const std::string cfg = tmp_->write("c.yaml",
                                        "corpus: {path: data/brown, max_documents: 20}\n"
                                        "samples: {num_samples: 12, seed: 5, seq_len: 32}\n"
                                        "model: {path: " +
                                            (tmp_->path / "model").string() +
                                            "}\n"
                                            "selection: [{top_fraction: 0.01}, {relative_to_max: 0.9}]\n"
                                            "statistics: {examples: [0, 4]}\n"
                                            "output: {dir: " +
                                            (tmp_->path / "out").string() +
                                            ", report: false}\n"
                                            "runtime: {batch_size: 4, unit_size: 4}\n");
    std::ostringstream out;
    rc_ = run_job(cfg, {}, out);
  }
  static void TearDownTestSuite() { delete tmp_; }
  void SetUp() override {
    CTXSIM_REQUIRE_DATA();
    ASSERT_EQ(rc_, 0);
  }
  // A private copy of the run's store, to damage or rewrite.
  std::string copy_store(const std::string& name) {
    const fs::path d = tmp_->path / name;
    fs::create_directories(d);
    fs::copy_file(tmp_->path / "out/store.h5", d / "store.h5", fs::copy_options::overwrite_existing);
    return (d / "store.h5").string();
  }
  static test::TempDir* tmp_;
  static int rc_;
};
test::TempDir* Report::tmp_ = nullptr;
int Report::rc_ = -1;

ReportArgs args_for(const fs::path& out, const std::string& rule = {}) {
  ReportArgs a;
  a.out_dir = out.string();
  a.rule = rule;
  return a;
}

std::vector<hsize_t> dims(hid_t file, const char* path) { return h5::dims_of(h5::Id(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose, path)); }

template <class T>
void write_slice0(hid_t file, const char* path, hid_t mem_type, const std::vector<T>& values) {
  const h5::Id ds(H5Dopen2(file, path, H5P_DEFAULT), H5Dclose, path);
  auto count = h5::dims_of(ds);
  std::vector<hsize_t> start(count.size(), 0);
  count[0] = 1;
  const h5::Id fspace(H5Dget_space(ds), H5Sclose, "space");
  ASSERT_GE(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr), 0);
  const hsize_t n = values.size();
  const h5::Id mspace(H5Screate_simple(1, &n, nullptr), H5Sclose, "mspace");
  ASSERT_GE(H5Dwrite(ds, mem_type, mspace, fspace, H5P_DEFAULT, values.data()), 0);
}

nlohmann::json figure_entry(const fs::path& dir, const std::string& stem) {
  std::ifstream in(dir / "figures/index.json");
  const auto index = nlohmann::json::parse(in);
  for (const auto& f : index)
    if (f["stem"] == stem) return f;
  ADD_FAILURE() << "no figure " << stem << " in index.json";
  return {};
}

// The colour at the centre of heatmap cell (r, c) of a figure's first panel.
Rgb cell_colour(const Image& img, const nlohmann::json& fig, int r, int c) {
  const auto& p = fig["panels"][0];
  const double x = p["x"].get<double>() + (c + 0.5) * p["w"].get<double>() / p["cols"].get<int>();
  const double y = p["y"].get<double>() + (r + 0.5) * p["h"].get<double>() / p["rows"].get<int>();
  return img.at(int(x), int(y));
}

void expect_near(Rgb got, Rgb want, const std::string& what) {
  for (int k = 0; k < 3; ++k) ASSERT_NEAR(int(got[size_t(k)]), int(want[size_t(k)]), 2) << what;
}

TEST_F(Report, SyntheticExampleIsDrawnPixelForPixel) {
  const std::string store = copy_store("synthetic");
  int n = 0;
  {
    const h5::Id f(H5Fopen(store.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "open");
    const auto ad = dims(f, "examples/attention");  // [E, L, H, T, T]
    const size_t L = ad[1], H = ad[2], T = ad[3];
    const auto ids = h5::read_all<int64_t>(h5::open_group(f, "examples"), "sample_ids", H5T_NATIVE_INT64);
    n = h5::read_all<int16_t>(h5::open_group(f, "samples"), "n_valid", H5T_NATIVE_INT16)[size_t(ids[0])];
    // Example 0: every head attends to itself only; similarity zero; nothing selected.
    std::vector<float> eye(L * H * T * T, 0.0f);
    for (size_t k = 0; k < L * H; ++k)
      for (size_t i = 0; i < T; ++i) eye[(k * T + i) * T + i] = 1.0f;
    write_slice0<float>(f, "examples/attention", H5T_NATIVE_FLOAT, eye);
    write_slice0<float>(f, "examples/similarity", H5T_NATIVE_FLOAT, std::vector<float>(eye.size(), 0.0f));
    const auto sd = dims(f, "examples/selected");
    write_slice0<uint8_t>(f, "examples/selected", H5T_NATIVE_UINT8, std::vector<uint8_t>(sd[1] * sd[2] * sd[3] * sd[4] * sd[5], 0));
  }
  const fs::path out = tmp_->path / "synthetic_report";
  std::ostringstream log;
  ASSERT_EQ(cmd_report(store, args_for(out), log), 0);
  ASSERT_GT(n, 4);
  const Rgb on = colour(ColourMap::Viridis, 1.0), off = colour(ColourMap::Viridis, 0.0), white{255, 255, 255};
  // Attention = identity: exactly the diagonal is lit; rollout of identities is the identity.
  for (const std::string stem : {"example0_L0H0_attention", "example0_L1H0_attention", "example0_rollout"}) {
    const auto fig = figure_entry(out, stem);
    ASSERT_EQ(fig["panels"][0]["rows"].get<int>(), n) << stem;
    const Image img = read_png((out / "figures" / (stem + ".png")).string());
    ASSERT_EQ(img.width, fig["width"].get<int>());
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c)
        expect_near(cell_colour(img, fig, r, c), r == c ? on : off, stem + " cell " + std::to_string(r) + "," + std::to_string(c));
  }
  // Similarity = 0 everywhere: the diverging map's centre (white).
  const auto fig = figure_entry(out, "example0_L0H0_similarity");
  const Image img = read_png((out / "figures/example0_L0H0_similarity.png").string());
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      expect_near(cell_colour(img, fig, r, c), white, "similarity cell " + std::to_string(r) + "," + std::to_string(c));
  // The untouched second example is not a pattern of ones and zeros.
  const auto fig1 = figure_entry(out, "example1_L0H0_attention");
  const Image img1 = read_png((out / "figures/example1_L0H0_attention.png").string());
  EXPECT_NE(cell_colour(img1, fig1, 1, 0), off);
  // Token labels are text in the SVG.
  std::ifstream svg(out / "figures/example0_L0H0_attention.svg");
  const std::string s((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(s.find(">[CLS]</text>"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "report.html"));
  EXPECT_FALSE(fs::exists(out / "figures.partial"));
}

TEST_F(Report, EveryListedFigureIsWritten) {
  const fs::path out = tmp_->path / "all";
  ReportArgs list = args_for(out);
  list.list_figures = true;
  std::ostringstream listed, log;
  ASSERT_EQ(cmd_report((tmp_->path / "out/store.h5").string(), list, listed), 0);
  EXPECT_FALSE(fs::exists(out)) << "--list-figures wrote something";
  ASSERT_EQ(cmd_report((tmp_->path / "out/store.h5").string(), args_for(out), log), 0);
  std::istringstream stems(listed.str());
  std::vector<std::string> names;
  for (std::string stem; std::getline(stems, stem);) {
    names.push_back(stem);
    EXPECT_TRUE(fs::exists(out / "figures" / (stem + ".png"))) << stem;
    EXPECT_TRUE(fs::exists(out / "figures" / (stem + ".svg"))) << stem;
  }
  for (const char* stem : {"distance_by_layer", "top_anchors", "example0_L0H0_attention", "example0_rollout", "example1_rollout"})
    EXPECT_NE(std::find(names.begin(), names.end(), stem), names.end()) << stem;
  std::ifstream in(out / "report.html");
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("id=\"fig-top_anchors\""), std::string::npos);
  EXPECT_NE(html.find("Top anchors per head"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing from the network
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

// The metric table is the one list every reader shows: each row's views are found where they
// belong (summary's header, collect's CSV header, compare's table, the report's figure index).
TEST_F(Report, EveryViewOfTheMetricTableIsShown) {
  const std::string store = (tmp_->path / "out/store.h5").string();
  std::ostringstream summary, log;
  ASSERT_EQ(print_summary(store, SummaryOptions{}, summary), 0);
  std::string header;
  for (std::istringstream lines(summary.str()); std::getline(lines, header);)
    if (header.rfind(" layer", 0) == 0) break;
  const fs::path sweep = tmp_->path / "views";
  for (const char* point : {"a", "b"}) {
    fs::create_directories(sweep / point);
    fs::copy_file(store, sweep / point / "store.h5", fs::copy_options::overwrite_existing);
  }
  ASSERT_EQ(cmd_collect(sweep.string(), "", log), 0);
  std::ifstream csv(sweep / "collect.csv");
  std::string csv_header;
  std::getline(csv, csv_header);
  CompareArgs c;
  c.out_dir = (sweep / "compare").string();
  ASSERT_EQ(cmd_compare({(sweep / "a/store.h5").string(), (sweep / "b/store.h5").string()}, c, log), 0);
  std::ifstream page(sweep / "compare/compare.html");
  const std::string compare_html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  const fs::path out = tmp_->path / "views_report";
  ASSERT_EQ(cmd_report(store, args_for(out), log), 0);
  std::ifstream index_file(out / "figures/index.json");
  const nlohmann::json index = nlohmann::json::parse(index_file);
  const auto in_index = [&](const std::string& stem) {
    for (const auto& e : index)
      if (e["stem"] == stem) return true;
    return false;
  };
  for (const Metric& m : metrics()) {
    EXPECT_NE(csv_header.find(std::string(",") + m.name), std::string::npos) << m.name << " is not a column of collect.csv";
    if (m.summary.width > 0) { EXPECT_NE(header.find(m.header), std::string::npos) << m.name << " is not in summary's table: " << header; }
    if (m.compare.header) {
      EXPECT_NE(compare_html.find(std::string("<th>") + m.compare.header + "</th>"), std::string::npos)
          << m.name << " not in compare's table";
    }
    if (m.heatmap.stem) { EXPECT_TRUE(in_index(m.heatmap.stem)) << m.name << "'s heatmap " << m.heatmap.stem << " is not in the report"; }
    if (m.line.stem) { EXPECT_TRUE(in_index(m.line.stem)) << m.name << "'s per-layer figure " << m.line.stem << " is not in the report"; }
    if (m.chance) { EXPECT_NO_THROW(metric(m.chance)) << m.name; }
    if (m.lift) { EXPECT_NO_THROW(metric(m.lift)) << m.name; }
  }
}

TEST_F(Report, ChosenRuleDrivesTheFigures) {
  const fs::path out = tmp_->path / "second_rule";
  std::ostringstream log;
  ASSERT_EQ(cmd_report((tmp_->path / "out/store.h5").string(), args_for(out, "relative_to_max=0.9"), log), 0);
  std::ifstream in(out / "figures/same_sentence.svg");
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("relative_to_max=0.9"), std::string::npos);
  try {
    cmd_report((tmp_->path / "out/store.h5").string(), args_for(tmp_->path / "no_rule", "top_fraction=0.5"), log);
    ADD_FAILURE() << "an unknown rule was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pick one of: top_fraction=0.01, relative_to_max=0.9"), std::string::npos) << e.what();
  }
}

TEST_F(Report, ChosenHeadsAreDrawn) {
  const fs::path out = tmp_->path / "heads";
  ReportArgs a = args_for(out);
  a.heads = {"1:1", "0:1"};
  std::ostringstream log;
  ASSERT_EQ(cmd_report((tmp_->path / "out/store.h5").string(), a, log), 0);
  EXPECT_TRUE(fs::exists(out / "figures/example0_L1H1_attention.png"));
  EXPECT_TRUE(fs::exists(out / "figures/example1_L0H1_similarity.svg"));
  EXPECT_FALSE(fs::exists(out / "figures/example0_L0H0_attention.png"));
  a.heads = {"2:0"};  // bert-tiny has layers 0 and 1
  a.out_dir = (tmp_->path / "bad_heads").string();
  try {
    cmd_report((tmp_->path / "out/store.h5").string(), a, log);
    ADD_FAILURE() << "a layer the model lacks was accepted";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("--heads 2:0"), std::string::npos) << e.what(); }
  EXPECT_FALSE(fs::exists(tmp_->path / "bad_heads/report.html"));
}

// The per-head rate maps are scaled to their data, not 0-100: same-sentence diverges around its
// chance (white) over the data and the chance, noise spans the data's own range.
TEST_F(Report, RateHeatmapsAreScaledToTheirData) {
  const std::string store = (tmp_->path / "out/store.h5").string();
  const h5::FileScope scope(store);
  const h5::Id file = open_complete_store(store);
  const report::StoreData d = report::load_store_data(file, store, "");
  const auto range = [](const HeatmapSpec& m) { return std::minmax_element(m.values.begin(), m.values.end()); };
  const HeatmapSpec same = report::head_map_spec(d, metric("same_sentence_rate"));
  const double chance = metric("same_sentence_chance").shown(Counts{}, d.base);
  EXPECT_EQ(same.map, ColourMap::Diverging);
  EXPECT_DOUBLE_EQ(same.centre, chance);
  EXPECT_DOUBLE_EQ(same.lo, std::min(double(*range(same).first), chance));
  EXPECT_DOUBLE_EQ(same.hi, std::max(double(*range(same).second), chance));
  const HeatmapSpec noise = report::head_map_spec(d, metric("noise_share"));
  EXPECT_EQ(noise.map, ColourMap::Viridis);
  EXPECT_DOUBLE_EQ(noise.lo, *range(noise).first);
  EXPECT_DOUBLE_EQ(noise.hi, std::max(double(*range(noise).second), noise.lo + 1e-9));
  for (const HeatmapSpec* m : {&same, &noise})
    if (*range(*m).second < 90) { EXPECT_LT(m->hi, 90) << "a scale to 100 for values up to " << *range(*m).second; }
}

// Counts of `layers` layers whose selected pairs lie at distances with the weights `at` (index d).
std::vector<Counts> layers_at(const std::vector<std::vector<double>>& at) {
  std::vector<Counts> out;
  for (const auto& d : at) {
    Counts c;
    c.distance = d;
    for (double x : d) c[Stat::HighPairs] += x;
    c.heads = 1;
    out.push_back(c);
  }
  return out;
}

// The distance overlay's caption claims a shift to short range only where the data show one.
TEST(ReportCaptions, DistanceOverlayClaimsAShiftOnlyWhenTheDataShowOne) {
  Baseline b;
  b.distance_all = {0, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10};  // T = 11: d = 1 … 10 equally likely
  b.value[size_t(Stat::ValidPairs)] = 100;                       // short-range (d <= 5) chance: 50%
  const std::vector<double> chance(b.distance_all.begin(), b.distance_all.end());
  const std::vector<double> near = {0, 30, 30, 20, 10, 10, 0, 0, 0, 0, 0};  // all d <= 5
  // A random model: every layer at chance.
  std::string c = report::distance_overlay_caption(layers_at({chance, chance, chance}), b);
  EXPECT_EQ(c.find("shift"), std::string::npos) << c;
  EXPECT_NE(c.find("compare each layer's distribution with chance"), std::string::npos) << c;
  EXPECT_NE(c.find("50.0% in the last (chance 50.0%)"), std::string::npos) << c;
  // Short range in every layer: far above chance, but no shift across layers.
  c = report::distance_overlay_caption(layers_at({near, near, near}), b);
  EXPECT_EQ(c.find("shift"), std::string::npos) << c;
  // One layer: no shift across layers to speak of.
  EXPECT_EQ(report::distance_overlay_caption(layers_at({near}), b).find("shift"), std::string::npos);
  // From chance in the first layer to short range in the last: the shift, with its numbers.
  c = report::distance_overlay_caption(layers_at({chance, chance, near}), b);
  EXPECT_NE(c.find("shift to short range"), std::string::npos) << c;
  EXPECT_NE(c.find("50.0% of the selected pairs in the first layers, 100.0% in the last (chance 50.0%)"), std::string::npos) << c;
}

// How many dashed lines an SVG figure draws; whether its legend names `name`.
size_t dashed_lines(const std::string& svg) {
  size_t n = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1))
    n += svg.substr(at, svg.find("/>", at) - at).find("stroke-dasharray") != std::string::npos;
  return n;
}
bool in_legend(const std::string& svg, const std::string& name) { return svg.find(">" + name + "</text>") != std::string::npos; }

// Compared runs share one chance line where their chances agree within 1% (one corpus,
// another sample draw) and keep one each where they differ.
TEST(ReportCompare, OneChanceLinePerDistinctChance) {
  const auto baseline = [](double same_sentence, std::vector<int64_t> distance) {
    Baseline b;
    b.value[size_t(Stat::SameSentenceAll)] = same_sentence, b.value[size_t(Stat::SentenceEligibleAll)] = 100;
    b.value[size_t(Stat::Samples)] = 1;
    b.distance_all = std::move(distance);
    for (int64_t x : b.distance_all) b.value[size_t(Stat::ValidPairs)] += double(x);
    return b;
  };
  const std::vector<Counts> layers = layers_at({{0, 3, 2, 1}, {0, 1, 2, 3}});
  const Baseline a = baseline(30, {0, 12, 8, 4}), a2 = baseline(30.0001, {0, 12, 8, 4}), other = baseline(45, {0, 4, 8, 12});
  const auto figures = [&](const std::vector<const Baseline*>& bases) {
    std::vector<report::LayerRun> runs;
    for (size_t i = 0; i < bases.size(); ++i)
      runs.push_back({"run" + std::to_string(i), sequence_colour(int(i), int(bases.size())), bases[i], &layers});
    std::pair<std::string, std::string> svg;  // same-sentence by layer, distance by layer
    for (const auto& e : report::layer_figures(runs, "Per layer", ""))
      if (e.stem == "same_sentence_by_layer") svg.first = e.figure.svg;
    svg.second = report::distance_by_layer_figure(runs, 2, 4, "distance", "").svg;
    return svg;
  };
  // Three runs on one corpus: one chance line (the lift panel adds its "no lift" line).
  auto [rate, distance] = figures({&a, &a2, &a});
  EXPECT_EQ(dashed_lines(rate), 2u);
  EXPECT_TRUE(in_legend(rate, "chance"));
  EXPECT_EQ(dashed_lines(distance), 2u);  // one per layer panel
  EXPECT_TRUE(in_legend(distance, "chance"));
  // A run of another corpus keeps its own chance; the two that agree still share theirs.
  std::tie(rate, distance) = figures({&a, &other, &a2});
  EXPECT_EQ(dashed_lines(rate), 3u);
  EXPECT_TRUE(in_legend(rate, "chance (run0, run2)"));
  EXPECT_TRUE(in_legend(rate, "chance (run1)"));
  EXPECT_FALSE(in_legend(rate, "chance"));
  EXPECT_EQ(dashed_lines(distance), 4u);
}

// Damages a copy of the store, then expects one error naming `needle` and no report at all.
void expect_refused(const std::string& store, const fs::path& out, const std::string& needle) {
  std::ostringstream log;
  try {
    cmd_report(store, args_for(out), log);
    ADD_FAILURE() << "a damaged store gave a report";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ctxsim run"), std::string::npos) << "no fix given: " << e.what();
  }
  EXPECT_FALSE(fs::exists(out / "report.html"));
  EXPECT_FALSE(fs::exists(out / "figures"));
  EXPECT_FALSE(fs::exists(out / "figures.partial"));
}

TEST_F(Report, MissingDatasetIsNamedAndNothingIsWritten) {
  const std::string store = copy_store("missing");
  {
    const h5::Id f(H5Fopen(store.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "open");
    ASSERT_GE(H5Ldelete(f, "stats/top_fraction=0.01/distance_hist", H5P_DEFAULT), 0);
  }
  expect_refused(store, tmp_->path / "missing_report", "/stats/top_fraction=0.01/distance_hist");
}

TEST_F(Report, MissingGroupAndBadShapesAreNamed) {
  const std::string a = copy_store("no_examples");
  {
    const h5::Id f(H5Fopen(a.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "open");
    ASSERT_GE(H5Ldelete(f, "examples", H5P_DEFAULT), 0);
  }
  expect_refused(a, tmp_->path / "no_examples_report", "missing group /examples");
  const std::string b = copy_store("bad_shape");
  {
    const h5::Id f(H5Fopen(b.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose, "open");
    ASSERT_GE(H5Ldelete(f, "stats/top_fraction=0.01/same_token", H5P_DEFAULT), 0);
    const hsize_t d[1] = {3};
    const h5::Id space(H5Screate_simple(1, d, nullptr), H5Sclose, "space");
    const h5::Id g = h5::open_group(f, "stats/top_fraction=0.01");
    const h5::Id ds(H5Dcreate2(g, "same_token", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose, "create");
  }
  expect_refused(b, tmp_->path / "bad_shape_report", "/stats/top_fraction=0.01/same_token has shape [3], expected [2,2]");
}

}  // namespace
}  // namespace ctxsim
