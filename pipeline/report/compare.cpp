// Several finished runs drawn together: see compare.h.
#include "pipeline/report/compare.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "pipeline/job/dist/comm.h"
#include "pipeline/report/report_data.h"
#include "pipeline/report/report_figures.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/metrics.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/figure.h"
#include "stages/figures/render.h"

namespace fs = std::filesystem;

namespace ctxsim::report {
namespace {

const Rgb kChance{0, 0, 0}, kGrey{120, 120, 120};

// A config value of a store's identity ("samples.windows"), or "" when it has none.
std::string config_value(const std::string& yaml, const std::string& section, const std::string& key) {
  try {
    const YAML::Node n = YAML::Load(yaml);
    const YAML::Node s = n[section];
    if (s.IsDefined() && s.IsMap() && s[key].IsDefined() && s[key].IsScalar()) return s[key].Scalar();
  } catch (const YAML::Exception&) {}
  return "";
}

}  // namespace

std::vector<std::string> store_paths(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<std::string> found;
      for (const auto& path : stores_under(in))
        if (inspect_store(path).complete) found.push_back(path);
      if (found.empty()) throw Error(in, "no complete store.h5 under this folder", "run the jobs first, or name the stores themselves");
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(in);
    }
  }
  if (out.size() < 2)
    throw Error("ctxsim compare", "needs at least two stores, got " + std::to_string(out.size()),
                "name two or more store.h5 files or a sweep folder");
  return out;
}

std::vector<CompareRun> load_runs(const std::vector<std::string>& paths, const CompareArgs& a) {
  if (!a.labels.empty() && a.labels.size() != paths.size())
    throw Error("--labels", std::to_string(a.labels.size()) + " labels for " + std::to_string(paths.size()) + " stores",
                "give one label per store, in order");
  std::vector<CompareRun> runs;
  std::string rule = a.rule;
  for (size_t i = 0; i < paths.size(); ++i) {
    CompareRun r;
    r.path = paths[i];
    const h5::FileScope scope(r.path);
    const h5::Id file = open_complete_store(r.path);
    if (is_segment_store(file))
      throw Error(r.path, "is a segmentation store, and " + paths.front() + " a run's: compare draws stores of one kind",
                  "compare run stores with each other, and segmentation stores (ctxsim segment) with each other");
    const StoreStats stats = read_store_stats(file, r.path, int64_t(store_vocab(file).size()));
    const auto& rules = stats.rules;
    if (rule.empty()) rule = rules.front();
    if (std::find(rules.begin(), rules.end(), rule) == rules.end())
      throw Error(r.path, "has no selection rule '" + rule + "' (it has: " + join(rules) + ")",
                  "compare stores that share a rule, or pick one they all have with --rule");
    r.base = baseline_of(stats);
    r.stats = rule_stats_of(stats, stats.rule_index(rule));
    r.model = h5::get_attr_string(file, "model_path");
    r.dtype = h5::get_attr_string(file, "dtype");
    const std::string config = h5::get_attr_string(file, "config");
    r.windows = config_value(config, "samples", "windows");
    r.split = config_value(config, "corpus", "split");
    r.label = a.labels.empty() ? fs::path(r.path).parent_path().filename().string() : a.labels[i];
    if (r.label.empty()) r.label = r.path;
    for (int64_t l = 0; l < r.stats.L; ++l) r.layers.push_back(r.stats.layer(l));
    if (!runs.empty()) {
      const CompareRun& first = runs.front();
      if (r.stats.L != first.stats.L)
        throw Error(r.path, "has " + std::to_string(r.stats.L) + " layers, " + first.path + " has " + std::to_string(first.stats.L),
                    "compare runs of models with the same layer count (the figures are per layer)");
      if (r.stats.T != first.stats.T)
        throw Error(r.path, "has samples of T=" + std::to_string(r.stats.T) + ", " + first.path + " of T=" + std::to_string(first.stats.T),
                    "compare runs with the same samples.seq_len (distances and chance depend on it)");
    }
    runs.push_back(std::move(r));
  }
  for (size_t i = 0; i < runs.size(); ++i) runs[i].colour = sequence_colour(int(i), int(runs.size()));
  return runs;
}

namespace {

std::vector<double> layer_axis(int64_t L) {
  std::vector<double> x;
  for (int64_t l = 0; l < L; ++l) x.push_back(double(l));
  return x;
}

// A per-layer quantity of every run, with an optional dashed reference per run (its chance).
PlotSpec per_layer(const std::vector<CompareRun>& runs, const std::string& title, const std::string& y_label,
                   const std::function<double(const CompareRun&, const Counts&)>& f,
                   const std::function<double(const CompareRun&, const Counts&)>& chance = nullptr) {
  PlotSpec p;
  p.title = title, p.x_label = "layer", p.y_label = y_label, p.y_lo = 0;
  for (const auto& r : runs) {
    Series s{r.label, layer_axis(r.stats.L), {}, r.colour};
    for (const auto& c : r.layers) s.y.push_back(f(r, c));
    p.series.push_back(s);
  }
  if (chance)
    for (const auto& r : runs) {
      Series s{"chance (" + r.label + ")", layer_axis(r.stats.L), {}, r.colour, true};
      for (const auto& c : r.layers) s.y.push_back(chance(r, c));
      p.series.push_back(s);
    }
  return p;
}

}  // namespace

Figure distance_by_layer_figure(const std::vector<LayerRun>& runs, const Baseline& b, const std::string& chance_name, int64_t L, int64_t T,
                                const std::string& title, const std::string& subtitle) {
  std::vector<double> distances, chance;
  for (int64_t d = 1; d < T; ++d) {
    distances.push_back(double(d));
    chance.push_back(100.0 * Counts::ratio(double(b.distance_all[size_t(d)]), b.valid_pairs));
  }
  const Series chance_series{chance_name, distances, chance, kChance, true};
  double ymax = *std::max_element(chance.begin(), chance.end());
  std::vector<PlotSpec> panels;
  for (int64_t l = 0; l < L; ++l) {
    PlotSpec p;
    p.title = "layer " + std::to_string(l), p.x_label = "distance j - i", p.y_label = "% of pairs", p.legend = l == 0;
    for (const auto& r : runs) {
      const Counts& c = (*r.layers)[size_t(l)];
      Series s{r.name, distances, {}, r.colour};
      for (int64_t d = 1; d < T; ++d) s.y.push_back(100.0 * Counts::ratio(c.distance[size_t(d)], c.pairs()));
      ymax = std::max(ymax, *std::max_element(s.y.begin(), s.y.end()));
      p.series.push_back(s);
    }
    p.series.push_back(chance_series);
    panels.push_back(p);
  }
  for (auto& p : panels) p.y_lo = 0, p.y_hi = ymax * 1.05;
  return plot_figure(panels, 4, 230, 130, title, subtitle);
}

std::vector<Entry> compare_figures(const std::vector<CompareRun>& runs, const std::string& title) {
  std::vector<Entry> out;
  std::vector<LayerRun> layer_runs;
  for (const auto& r : runs) layer_runs.push_back({r.label, r.colour, &r.layers});
  out.push_back({"distance_by_layer",
                 "Distance j - i of the selected pairs per layer, every run overlaid, with the chance distribution (all valid pairs)",
                 distance_by_layer_figure(layer_runs, runs.front().base, "chance (" + runs.front().label + ")", runs.front().stats.L,
                                          runs.front().stats.T, "Distance of high-similarity pairs per layer", "")});
  const auto lift = per_layer(runs, "same-sentence lift", "rate / chance",
                              [](const CompareRun& r, const Counts& c) { return r.base.same_sentence_lift(c); });
  const auto rate = per_layer(
      runs, "same-sentence %", "% of selected pairs", [](const CompareRun&, const Counts& c) { return 100 * c.same_sentence_rate(); },
      [](const CompareRun& r, const Counts&) { return 100 * r.base.same_sentence_chance(); });
  out.push_back({"same_sentence_by_layer", "Same-sentence share of the selected pairs per layer against chance (dashed), and its lift",
                 plot_figure({rate, lift}, 2, 340, 240, title + ": same sentence", "")});
  out.push_back({"repetition_lift_by_layer", "Repeated-token pairs per layer: rate among the selected pairs / rate among all valid pairs",
                 plot_figure({per_layer(runs, "repetition lift", "rate / chance",
                                        [](const CompareRun& r, const Counts& c) { return r.base.repetition_lift(c); })},
                             1, 420, 260, title + ": repetition", "")});
  PlotSpec anchors;
  anchors.title = "distinct anchors", anchors.x_label = "layer", anchors.y_label = "mean per sample", anchors.y_lo = 0;
  for (const auto& r : runs) {
    Series s{r.label, layer_axis(r.stats.L), {}, r.colour};
    for (int64_t l = 0; l < r.stats.L; ++l)
      s.y.push_back(Counts::ratio(double(r.stats.of(Stat::DistinctAnchors)[size_t(l)]), double(r.base.samples)));
    anchors.series.push_back(s);
  }
  out.push_back({"distinct_anchors_by_layer",
                 "Mean number of distinct anchor tokens among the heads of a layer, per sample (head specialisation)",
                 plot_figure({anchors}, 1, 420, 260, title + ": distinct anchors", "")});
  // Attention on each separator token (one panel per token any run measured).
  std::vector<std::string> tokens;
  for (const auto& r : runs)
    for (const auto& t : r.base.separator_tokens)
      if (std::find(tokens.begin(), tokens.end(), t) == tokens.end()) tokens.push_back(t);
  if (!tokens.empty()) {
    std::vector<PlotSpec> panels;
    for (const auto& t : tokens) {
      PlotSpec p;
      p.title = "attention on " + t, p.x_label = "layer", p.y_label = "mass per query row", p.y_lo = 0, p.legend = panels.empty();
      for (const auto& r : runs) {
        const auto it = std::find(r.base.separator_tokens.begin(), r.base.separator_tokens.end(), t);
        if (it == r.base.separator_tokens.end()) continue;
        Series s{r.label, layer_axis(r.stats.L), {}, r.colour};
        for (int64_t l = 0; l < r.stats.L; ++l)
          s.y.push_back(r.base.separator_token_attention(l, -1, size_t(it - r.base.separator_tokens.begin())));
        p.series.push_back(s);
      }
      panels.push_back(p);
    }
    out.push_back({"separator_attention_by_layer",
                   "Attention mass valid query tokens put on each separator token, per layer (mean over heads)",
                   plot_figure(panels, int(std::min<size_t>(3, panels.size())), 300, 220, title + ": attention on each separator", "")});
  }
  const auto overlap = per_layer(
      runs, "selected pairs that are high-attention", "%", [](const CompareRun&, const Counts& c) { return 100 * c.in_attention_rate(); },
      [](const CompareRun& r, const Counts& c) { return 100 * r.base.in_attention_chance(c); });
  const auto noise =
      per_layer(runs, "noise share", "% of selected pairs", [](const CompareRun&, const Counts& c) { return 100 * c.noise_share(); });
  out.push_back(
      {"attention_and_noise_by_layer",
       "Left: share of the selected pairs the attention map also marks (max(A_ij, A_ji) >= beta) against chance (dashed): what it misses is "
       "structure the attention map alone does not show. Right: noise, the selected pairs no explanation covers",
       plot_figure({overlap, noise}, 2, 340, 240, title + ": attention overlap and noise", "")});
  return out;
}

// The per-layer numbers of every run as an HTML table.
namespace {

std::string numbers_table(const std::vector<CompareRun>& runs) {
  // Metric, the table's header, decimals.
  const std::tuple<const char*, const char*, int> columns[] = {
      {"mean_distance", "mean distance", 1},        {"short_range_share", "d&le;5 %", 1},
      {"same_sentence_rate", "same-sentence %", 1}, {"same_sentence_lift", "lift", 2},
      {"repetition_lift", "repetition lift", 2},    {"distinct_anchors", "distinct anchors", 2},
      {"in_attention_rate", "in-attention %", 1},   {"noise_share", "noise %", 1}};
  std::ostringstream t;
  t << "<table><tr><th>run</th><th>layer</th>";
  for (const auto& [name, header, digits] : columns) t << "<th>" << header << "</th>";
  t << "</tr>";
  for (const auto& r : runs)
    for (int64_t l = 0; l < r.stats.L; ++l) {
      t << "<tr><td>" << xml_escape(r.label) << "</td><td>" << l << "</td>";
      for (const auto& [name, header, digits] : columns)
        t << "<td>" << metric_text(metric(name), r.layers[size_t(l)], r.base, digits) << "</td>";
      t << "</tr>";
    }
  return t.str() + "</table>";
}

}  // namespace

std::string compare_page(const std::vector<CompareRun>& runs, const std::vector<Entry>& figures, const fs::path& figure_dir,
                         const CompareArgs& a) {
  std::ostringstream h;
  h << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">" << content_security_policy({}) << "<title>" << xml_escape(a.title)
    << "</title><style>"
    << "body{font-family:sans-serif;margin:2em auto;max-width:1250px;padding:0 1em;color:#222}img{max-width:100%}figure{margin:1.5em 0}"
    << "figcaption{color:#444;font-size:14px}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
    << ".swatch{display:inline-block;width:1em;height:1em;vertical-align:middle;margin-right:.4em}</style></head><body>\n<h1>"
    << xml_escape(a.title) << "</h1>\n"
    << (a.note.empty() ? "" : "<p id=\"note\">" + xml_escape(a.note) + "</p>\n") << "<p>Figures use the rule <b>"
    << xml_escape(runs.front().stats.name) << "</b>; each run is one colour.</p>\n"
    << "<table id=\"runs\"><tr><th>run</th><th>store</th><th>model</th><th>dtype</th><th>samples</th><th>windows</th><th>documents</th></tr>";
  nlohmann::json colours = nlohmann::json::array();
  for (const auto& r : runs) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "#%02x%02x%02x", r.colour[0], r.colour[1], r.colour[2]);
    colours.push_back({{"label", r.label}, {"rgb", {r.colour[0], r.colour[1], r.colour[2]}}});
    h << "<tr><td><span class=\"swatch\" style=\"background:" << hex << "\"></span>" << xml_escape(r.label) << "</td><td>"
      << xml_escape(r.path) << "</td><td>" << xml_escape(r.model) << "</td><td>" << xml_escape(r.dtype) << "</td><td>" << r.base.samples
      << "</td><td>" << xml_escape(r.windows) << "</td><td>" << xml_escape(r.split.empty() ? "all" : r.split) << "</td></tr>";
  }
  h << "</table>\n<h2>Figures</h2>\n";
  nlohmann::json index = nlohmann::json::array();
  for (const auto& f : figures) {
    h << "<figure id=\"fig-" << f.stem << "\"><img alt=\"" << xml_escape(f.caption) << "\" src=\"data:image/png;base64,"
      << base64(read_file_bytes((figure_dir / (f.stem + ".png")).string())) << "\"><figcaption>" << xml_escape(f.caption)
      << "</figcaption></figure>\n";
    nlohmann::json panels = nlohmann::json::array();
    for (const auto& p : f.figure.panels) panels.push_back({{"x", p.x}, {"y", p.y}, {"w", p.w}, {"h", p.h}});
    index.push_back({{"stem", f.stem}, {"width", f.figure.width}, {"height", f.figure.height}, {"panels", panels}});
  }
  h << "<h2>Numbers per layer</h2>\n"
    << numbers_table(runs) << "\n"
    << "<script type=\"application/json\" id=\"index\">" << script_json(nlohmann::json{{"figures", index}, {"runs", colours}})
    << "</script>\n</body></html>\n";
  const std::string page = h.str();
  if (int64_t(page.size()) > a.max_bytes)
    throw Error("--max-bytes " + std::to_string(a.max_bytes),
                "compare.html would take " + std::to_string(page.size()) + " bytes, over the budget",
                "raise --max-bytes or compare fewer runs");
  return page;
}

}  // namespace ctxsim::report
