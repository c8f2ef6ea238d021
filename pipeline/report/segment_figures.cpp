#include "pipeline/report/segment_figures.h"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "pipeline/store/store.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/figures/render.h"

namespace ctxsim::report {
namespace {

const Rgb kGrey{120, 120, 120}, kBlack{0, 0, 0};

size_t first_test_subset(const SegmentTable& t) { return t.first_test(); }

// Document 0's sentence similarity at the layer whose heads-c99 segments best on dev, with the
// gold boundaries outlined on the diagonal and two methods' boundaries as dots beside it.
Entry example_figure(const SegmentRun& run) {
  const SegmentResults& r = run.results;
  const SegmentTable& t = run.table;
  const SegmentLayout& l = r.layout;
  const std::string best = t.best_layer_method("heads-c99/given", l.layers);
  const int64_t layer = best.empty() ? l.layers - 1 : std::stoll(best.substr(5, best.find('/') - 5));
  const int S = int(std::sqrt(double(r.example.size() / size_t(std::max<int64_t>(1, l.layers)))));
  HeatmapSpec m;
  m.rows = m.cols = S;
  const auto first = r.example.begin() + ptrdiff_t(layer * S * S);
  m.values.assign(first, first + ptrdiff_t(S) * S);
  const ValueScale scale = similarity_scale(m.values, S);
  m.lo = scale.lo, m.hi = scale.hi, m.map = scale.map;
  m.x_label = "sentence", m.y_label = "sentence", m.bar_label = "sentence similarity (mean token-pair o_i . o_j, summed over heads)";
  for (int i = 0; i < S; ++i) m.row_labels.push_back(std::to_string(i)), m.col_labels.push_back(std::to_string(i));
  Overlay gold{"gold boundary", Overlay::Shape::Outline, kBlack, {}};
  for (size_t b = 0; b < size_t(l.segments - 1); ++b) gold.cells.push_back({r.gold[b], r.gold[b]});
  m.overlays.push_back(gold);
  const size_t G = size_t(std::max<int64_t>(1, l.max_gaps));
  const auto marks = [&](const std::string& method, const std::string& name, Rgb colour, int dr, int dc) {
    const auto it = std::find(l.methods.begin(), l.methods.end(), method);
    if (it == l.methods.end()) return;
    Overlay o{name, Overlay::Shape::Dot, colour, {}};
    const size_t mi = size_t(it - l.methods.begin());
    for (size_t k = 0; k < G; ++k)
      if (const int32_t b = r.example_boundaries[mi * G + k]; b > 0 && b - 1 + std::min(dr, dc) >= 0) o.cells.push_back({b + dr, b + dc});
    m.overlays.push_back(o);
  };
  marks(best, best + " (below the diagonal)", Rgb{230, 120, 20}, 0, -1);
  marks("c99/given", "c99/given, lexical (above)", Rgb{31, 119, 180}, -1, 0);
  m.cell = std::clamp(600.0 / std::max(1, S), 3.0, 24.0);
  return {"segment_example",
          "Test document 0: sentence similarity of layer " + std::to_string(layer) +
              " (the layer whose heads-c99 segments best on dev), gold boundaries outlined, two methods' boundaries as dots",
          heatmap_figure(m, "Sentence similarity of a test document, layer " + std::to_string(layer), run.label)};
}

// Pk by layer on the first test subset: the model methods of each run, the lexical and random
// baselines of the first run as flat references.
Entry pk_by_layer_figure(const std::vector<SegmentRun>& runs) {
  const SegmentTable& t0 = runs.front().table;
  const size_t s = first_test_subset(t0);
  const int64_t L = runs.front().results.layout.layers;
  std::vector<PlotSpec> panels;
  for (const char* method : {"heads-depth/given", "heads-c99/given", "attention/given"}) {
    PlotSpec p;
    p.title = method, p.x_label = "layer", p.y_label = "Pk (%) on " + t0.subsets[s], p.y_lo = 0, p.legend = panels.empty();
    p.x_integer = true;
    for (const auto& run : runs) {
      Series line{run.label, index_axis(L), {}, run.colour};
      for (int64_t l = 0; l < L; ++l) line.y.push_back(100 * run.table.pk_of("layer" + std::to_string(l) + "/" + method, s));
      p.series.push_back(line);
    }
    for (const auto& [name, colour] :
         {std::pair{"c99/given", Rgb{31, 119, 180}}, {"texttiling/given", Rgb{44, 160, 44}}, {"random/given", kGrey}})
      p.series.push_back(Series{std::string(name) + " (" + runs.front().label + ")", index_axis(L),
                                std::vector<double>(size_t(L), 100 * t0.pk_of(name, s)), colour, true});
    panels.push_back(p);
  }
  return {"segment_pk_by_layer",
          "Pk by layer of the model-derived methods (gold number of boundaries) on Choi's " + t0.subsets[s] +
              " documents, with the lexical and random baselines (dashed); lower is better",
          plot_figure(panels, 3, 300, 220, "Segmentation error by layer", "")};
}

// The summary's rows as bars: Pk on the first test subset, one bar per method and run.
Entry methods_figure(const std::vector<SegmentRun>& runs) {
  const SegmentTable& t0 = runs.front().table;
  const size_t s = first_test_subset(t0);
  const int64_t L = runs.front().results.layout.layers;
  std::vector<std::string> rows;
  for (const auto& m : t0.methods)
    if (m.compare(0, 5, "layer") != 0) rows.push_back(m);
  for (const char* m : {"heads-depth/given", "heads-c99/given", "attention/given"}) rows.push_back(std::string("best layer: ") + m);
  PlotSpec p;
  p.title = "Pk on " + t0.subsets[s] + " (best layer chosen on dev)", p.x_label = "method", p.y_label = "Pk (%)", p.y_lo = 0;
  p.x_ticks = rows;  // one group of bars per method, a bar per run (plot_figure sets them side by side)
  for (size_t k = 0; k < runs.size(); ++k) {
    Series bars{runs[k].label, {}, {}, runs[k].colour, false, true};
    for (size_t i = 0; i < rows.size(); ++i) {
      std::string method = rows[i];
      if (method.compare(0, 12, "best layer: ") == 0) method = runs[k].table.best_layer_method(method.substr(12), L);
      bars.x.push_back(double(i));
      bars.y.push_back(100 * std::max(0.0, runs[k].table.pk_of(method, s)));
    }
    p.series.push_back(bars);
  }
  return {
      "segment_methods",
      "Every method's Pk on Choi's " + t0.subsets[s] + " documents; the model-derived ones at the layer that is best on the dev documents",
      plot_figure({p}, 1, std::max(520.0, 46.0 * double(rows.size())), 280, "Segmentation methods", "")};
}

}  // namespace

std::string within_budget(std::string page, int64_t max_bytes, const std::string& name) {
  if (int64_t(page.size()) > max_bytes)
    throw Error("--max-bytes " + std::to_string(max_bytes), name + " would take " + std::to_string(page.size()) + " bytes, over the budget",
                "raise --max-bytes");
  return page;
}

std::vector<SegmentRun> load_segment_runs(const std::vector<std::string>& paths, const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != paths.size())
    throw Error("--labels", std::to_string(labels.size()) + " labels for " + std::to_string(paths.size()) + " stores",
                "give one label per store, in order");
  std::vector<SegmentRun> runs;
  for (size_t i = 0; i < paths.size(); ++i) {
    SegmentRun run;
    run.path = paths[i];
    const h5::FileScope scope(run.path);
    const h5::Id file = open_complete_store(run.path);
    run.results = read_segment_store(file);
    run.table = segment_table(run.results);
    run.label = i < labels.size() ? labels[i] : std::filesystem::path(run.path).parent_path().filename().string();
    if (run.label.empty()) run.label = run.path;
    if (!runs.empty() &&
        (run.results.layout.layers != runs.front().results.layout.layers || run.table.subsets != runs.front().table.subsets))
      throw Error(run.path, "has other layers or subsets than " + runs.front().path,
                  "compare segmentations of models with the same layer count");
    runs.push_back(std::move(run));
  }
  for (size_t i = 0; i < runs.size(); ++i) runs[i].colour = sequence_colour(int(i), int(runs.size()));
  return runs;
}

std::vector<Entry> segment_figures(const std::vector<SegmentRun>& runs) {
  std::vector<Entry> out;
  if (runs.size() == 1 && !runs.front().results.example.empty()) out.push_back(example_figure(runs.front()));
  out.push_back(pk_by_layer_figure(runs));
  out.push_back(methods_figure(runs));
  return out;
}

std::string summary_page(const std::string& title, const std::string& summary, const std::vector<Entry>& figures) {
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
      "base-uri 'none'; form-action 'none'\"><title>" +
      xml_escape(title) +
      "</title><style>body{font-family:sans-serif;margin:2em;max-width:1400px}pre{font-size:12px;overflow-x:auto}"
      "figure{margin:2em 0}img{max-width:100%}</style></head><body>\n<h1>" +
      xml_escape(title) + "</h1>\n<pre>" + xml_escape(summary) + "</pre>\n";
  for (const auto& f : figures)
    html += "<figure><img alt=\"" + xml_escape(f.stem) + "\" src=\"data:image/svg+xml;base64," + base64(f.figure.svg) + "\"><figcaption>" +
            xml_escape(f.caption) + "</figcaption></figure>\n";
  return html + "</body></html>\n";
}

}  // namespace ctxsim::report
