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

#include "pipeline/job/parallel/comm.h"
#include "pipeline/report/report_data.h"
#include "pipeline/report/report_figures.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/figure.h"
#include "stages/figures/render.h"
#include "stages/stats/metrics.h"

namespace fs = std::filesystem;

namespace ctxsim::report {
namespace {

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
    const StoreStats stats = read_store_stats(file, r.path, int64_t(store_vocab(file).size()));
    const auto& rules = stats.rules;
    if (rule.empty()) rule = rules.front();
    if (std::find(rules.begin(), rules.end(), rule) == rules.end())
      throw Error(r.path, "has no selection rule '" + rule + "' (it has: " + join(rules) + ")",
                  "compare stores that share a rule, or pick one they all have with --rule");
    r.base = baseline_of(stats);
    r.stats = rule_stats_of(stats, stats.rule_index(rule));
    r.intervals = store_intervals(file, r.path, stats, stats.rule_index(rule));
    r.model = h5::get_attr_string(file, "model_path") + " (" + read_store_model(file, r.path).describe() + ")";
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

std::vector<Entry> compare_figures(const std::vector<CompareRun>& runs, const std::string& title) {
  std::vector<LayerRun> layer_runs;
  for (const auto& r : runs) layer_runs.push_back({r.label, r.colour, &r.base, &r.layers, &r.intervals});
  std::vector<Entry> out;
  out.push_back(
      {"distance_by_layer",
       "Distance j - i of the selected pairs per layer, every run overlaid, against chance (all valid pairs), one line per distinct chance",
       distance_by_layer_figure(layer_runs, runs.front().stats.L, runs.front().stats.T, "Distance of high-similarity pairs per layer",
                                "")});
  for (Entry& e : layer_figures(layer_runs, title, "")) out.push_back(std::move(e));
  return out;
}

// The per-layer numbers of every run as an HTML table.
namespace {

std::string numbers_table(const std::vector<CompareRun>& runs) {
  std::vector<const Metric*> columns;  // every row of the metric table with a compare column
  for (const Metric& m : metrics())
    if (m.compare.header) columns.push_back(&m);
  std::ostringstream t;
  t << "<table><tr><th>run</th><th>layer</th>";
  for (const Metric* m : columns) t << "<th>" << m->compare.header << "</th>";
  t << "</tr>";
  for (const auto& r : runs)
    for (int64_t l = 0; l < r.stats.L; ++l) {
      t << "<tr><td>" << xml_escape(r.label) << "</td><td>" << l << "</td>";
      for (const Metric* m : columns) {
        t << "<td>" << metric_text(*m, r.layers[size_t(l)], r.base, m->compare.digits);
        if (const Interval* i = m->interval ? r.intervals.of(*m, int(l)) : nullptr)
          t << " <small class=\"interval\">" << interval_text(*m, *i, m->compare.digits) << "</small>";
        t << "</td>";
      }
      t << "</tr>";
    }
  const bool any = std::any_of(runs.begin(), runs.end(), [](const CompareRun& r) { return !r.intervals.empty(); });
  return t.str() + "</table>" +
         (any ? "<p>In brackets: 95% bootstrap intervals over each run's work units (SPEC 5.1; none for a store written before "
                "ctxsim kept them).</p>"
              : "");
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
      << xml_escape(r.path) << "</td><td>" << xml_escape(r.model) << "</td><td>" << xml_escape(r.dtype) << "</td><td>" << r.base.samples()
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
