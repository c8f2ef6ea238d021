#include "pipeline/report/layer_figures.h"

#include <algorithm>
#include <cmath>

#include "stages/stats/metrics.h"

namespace ctxsim::report {
namespace {

const Rgb kChance{0, 0, 0}, kGrey{120, 120, 120};

// One run's value of `m` per layer, as shown (a share in percent).
std::vector<double> per_layer(const LayerRun& r, const Metric& m) {
  std::vector<double> y;
  for (const Counts& c : *r.layers) y.push_back(m.shown(c, *r.base));
  return y;
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-9 * std::max(1.0, std::abs(a[i]))) return false;
  return true;
}

// The dashed chance lines of `chance` in panel p: one black line when every run's chance is the
// same (one corpus, one sample draw), else one per run in its colour.
void add_chance(PlotSpec& p, const std::vector<LayerRun>& runs, const Metric& chance) {
  std::vector<std::vector<double>> ys;
  for (const auto& r : runs) ys.push_back(per_layer(r, chance));
  bool shared = true;
  for (const auto& y : ys) shared = shared && same_values(y, ys.front());
  if (shared) {
    p.series.push_back(
        {runs.size() == 1 ? "chance (all valid pairs)" : "chance", index_axis(int64_t(ys.front().size())), ys.front(), kChance, true});
    return;
  }
  for (size_t i = 0; i < runs.size(); ++i)
    p.series.push_back({"chance (" + runs[i].name + ")", index_axis(int64_t(ys[i].size())), ys[i], runs[i].colour, true});
}

PlotSpec layer_panel(const std::string& title, const std::string& y_label) {
  PlotSpec p;
  p.title = title, p.x_label = "layer", p.y_label = y_label, p.y_lo = 0;
  return p;
}

}  // namespace

Figure distance_by_layer_figure(const std::vector<LayerRun>& runs, const Baseline& b, const std::string& chance_name, int64_t L, int64_t T,
                                const std::string& title, const std::string& subtitle) {
  std::vector<double> distances, chance;
  for (int64_t d = 1; d < T; ++d) {
    distances.push_back(double(d));
    chance.push_back(100.0 * Counts::ratio(double(b.distance_all[size_t(d)]), b[Stat::ValidPairs]));
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

std::vector<Entry> layer_figures(const std::vector<LayerRun>& runs, const std::string& title, const std::string& subtitle) {
  std::vector<Entry> out;
  // The per-layer views of the metric table, grouped by stem in the table's order.
  struct Group {
    std::string stem, caption, title;
    std::vector<PlotSpec> panels;
  };
  std::vector<Group> groups;
  for (const Metric& m : metrics()) {
    if (!m.line.stem) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.stem == m.line.stem; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{m.line.stem, m.line.caption, m.line.figure, {}});
    PlotSpec p = layer_panel(m.line.title, m.line.y_label);
    for (const auto& r : runs) p.series.push_back({r.name, index_axis(int64_t(r.layers->size())), per_layer(r, m), r.colour});
    if (m.chance) add_chance(p, runs, metric(m.chance));
    g->panels.push_back(p);
    if (m.lift) {
      PlotSpec q = layer_panel(m.line.lift_title, "rate / chance");
      const Metric& lift = metric(m.lift);
      for (const auto& r : runs) q.series.push_back({r.name, index_axis(int64_t(r.layers->size())), per_layer(r, lift), r.colour});
      const int64_t L = int64_t(runs.front().layers->size());
      q.series.push_back({"no lift (1)", index_axis(L), std::vector<double>(size_t(L), 1.0), kGrey, true});
      g->panels.push_back(q);
    }
  }
  for (const auto& g : groups) {
    const int columns = int(std::min<size_t>(2, g.panels.size()));
    out.push_back({g.stem, g.caption, plot_figure(g.panels, columns, 340, 240, title + ": " + g.title, subtitle)});
  }
  // Attention on each separator token (one panel per token any run measured).
  std::vector<std::string> tokens;
  for (const auto& r : runs)
    for (const auto& t : r.base->separator_tokens)
      if (std::find(tokens.begin(), tokens.end(), t) == tokens.end()) tokens.push_back(t);
  if (!tokens.empty()) {
    std::vector<PlotSpec> panels;
    for (const auto& t : tokens) {
      PlotSpec p = layer_panel("attention on " + t, "mass per query row");
      p.legend = panels.empty();
      for (const auto& r : runs) {
        const auto& own = r.base->separator_tokens;
        const auto it = std::find(own.begin(), own.end(), t);
        if (it == own.end()) continue;
        const int64_t L = int64_t(r.layers->size());
        Series s{r.name, index_axis(L), {}, r.colour};
        for (int64_t l = 0; l < L; ++l) s.y.push_back(r.base->separator_token_attention(l, -1, size_t(it - own.begin())));
        p.series.push_back(s);
      }
      panels.push_back(p);
    }
    out.push_back(
        {"separator_attention_by_layer",
         "Attention mass valid query tokens put on each separator token, per layer (mean over heads): [SEP] and punctuation apart",
         plot_figure(panels, int(std::min<size_t>(3, panels.size())), 300, 220, title + ": attention on each separator", subtitle)});
  }
  return out;
}

std::vector<std::string> layer_figure_stems(bool separators) {
  std::vector<std::string> stems;
  for (const Metric& m : metrics())
    if (m.line.stem && std::find(stems.begin(), stems.end(), m.line.stem) == stems.end()) stems.push_back(m.line.stem);
  if (separators) stems.push_back("separator_attention_by_layer");
  return stems;
}

}  // namespace ctxsim::report
