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

// Whether two chance curves look the same: they differ nowhere by more than 1% of the larger
// one's top (a pixel or two of a panel, whose axis spans about the top; runs on one corpus
// differ by their sample draws alone).
bool same_chance(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  double top = 0;
  for (size_t i = 0; i < a.size(); ++i) top = std::max({top, std::abs(a[i]), std::abs(b[i])});
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 0.01 * top) return false;
  return true;
}

// The dashed chance lines of a panel, one per distinct chance among the runs' (ys[i] is run i's,
// at x): a chance every run shares is one black line ("chance"; one run's: `single`); where they
// differ, each distinct one is its own line, named after its runs and in the first one's colour.
void add_chance_lines(PlotSpec& p, const std::vector<LayerRun>& runs, const std::vector<std::vector<double>>& ys,
                      const std::vector<double>& x, const std::string& single) {
  std::vector<std::vector<size_t>> groups;  // runs by distinct chance, in the runs' order
  for (size_t i = 0; i < runs.size(); ++i) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const std::vector<size_t>& k) { return same_chance(ys[k.front()], ys[i]); });
    if (g == groups.end())
      groups.push_back({i});
    else
      g->push_back(i);
  }
  if (groups.size() == 1) {
    p.series.push_back({runs.size() == 1 ? single : "chance", x, ys.front(), kChance, true});
    return;
  }
  for (const auto& g : groups) {
    std::string names;
    for (size_t i : g) names += (names.empty() ? "" : ", ") + runs[i].name;
    p.series.push_back({"chance (" + names + ")", x, ys[g.front()], runs[g.front()].colour, true});
  }
}

// The chance lines of metric `chance` in a per-layer panel.
void add_chance(PlotSpec& p, const std::vector<LayerRun>& runs, const Metric& chance) {
  std::vector<std::vector<double>> ys;
  for (const auto& r : runs) ys.push_back(per_layer(r, chance));
  add_chance_lines(p, runs, ys, index_axis(int64_t(ys.front().size())), "chance (all valid pairs)");
}

// Run r's line of metric m per layer, in the band of its interval where the run has intervals.
Series layer_series(const LayerRun& r, const Metric& m) {
  Series s{r.name, index_axis(int64_t(r.layers->size())), per_layer(r, m), r.colour};
  if (!r.intervals || r.intervals->empty() || !m.interval) return s;
  const double k = m.share() ? 100.0 : 1.0;
  for (size_t l = 0; l < s.x.size(); ++l) {
    const Interval* i = r.intervals->of(m, int(l));
    s.lo.push_back(i ? k * i->lo : NAN);
    s.hi.push_back(i ? k * i->hi : NAN);
  }
  return s;
}

PlotSpec layer_panel(const std::string& title, const std::string& y_label) {
  PlotSpec p;
  p.title = title, p.x_label = "layer", p.y_label = y_label, p.y_lo = 0, p.x_integer = true;
  return p;
}

}  // namespace

std::vector<double> distance_chance(const Baseline& b, int64_t T) {
  std::vector<double> chance;
  for (int64_t d = 1; d < T; ++d) chance.push_back(100.0 * Counts::ratio(double(b.distance_all[size_t(d)]), b[Stat::ValidPairs]));
  return chance;
}

Figure distance_by_layer_figure(const std::vector<LayerRun>& runs, int64_t L, int64_t T, const std::string& title,
                                const std::string& subtitle) {
  std::vector<double> distances;
  for (int64_t d = 1; d < T; ++d) distances.push_back(double(d));
  std::vector<std::vector<double>> chance;
  double ymax = 0;
  for (const auto& r : runs) {
    chance.push_back(distance_chance(*r.base, T));
    ymax = std::max(ymax, *std::max_element(chance.back().begin(), chance.back().end()));
  }
  std::vector<PlotSpec> panels;
  for (int64_t l = 0; l < L; ++l) {
    PlotSpec p;
    p.title = "layer " + std::to_string(l), p.x_label = "distance j - i", p.y_label = "% of pairs", p.legend = l == 0;
    p.x_integer = true;
    for (const auto& r : runs) {
      const Counts& c = (*r.layers)[size_t(l)];
      Series s{r.name, distances, {}, r.colour};
      for (int64_t d = 1; d < T; ++d) s.y.push_back(100.0 * Counts::ratio(c.distance[size_t(d)], c.pairs()));
      ymax = std::max(ymax, *std::max_element(s.y.begin(), s.y.end()));
      p.series.push_back(s);
    }
    add_chance_lines(p, runs, chance, distances, "chance (all valid pairs)");
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
    for (const auto& r : runs) p.series.push_back(layer_series(r, m));
    if (!m.line.from_zero) {  // the axis from the data's lowest value (and band), less a margin
      double lo = INFINITY, hi = -INFINITY;
      for (const Series& s : p.series)
        for (const std::vector<double>* v : {&s.y, &s.lo, &s.hi})
          for (double y : *v)
            if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
      if (std::isfinite(lo)) p.y_lo = lo - 0.08 * std::max(hi - lo, 1e-9);
    }
    if (m.chance) add_chance(p, runs, metric(m.chance));
    g->panels.push_back(p);
    if (m.lift) {
      PlotSpec q = layer_panel(m.line.lift_title, "rate / chance");
      const Metric& lift = metric(m.lift);
      for (const auto& r : runs) q.series.push_back(layer_series(r, lift));
      const int64_t L = int64_t(runs.front().layers->size());
      q.series.push_back({"no lift (1)", index_axis(L), std::vector<double>(size_t(L), 1.0), kGrey, true});
      g->panels.push_back(q);
    }
  }
  const bool bands = std::any_of(runs.begin(), runs.end(), [](const LayerRun& r) { return r.intervals && !r.intervals->empty(); });
  for (const auto& g : groups) {
    const int columns = int(std::min<size_t>(2, g.panels.size()));
    const std::string caption = g.caption + std::string(bands ? ". Shaded: 95% bootstrap intervals over the work units (SPEC 5.1)" : "");
    out.push_back({g.stem, caption, plot_figure(g.panels, columns, 340, 240, title + ": " + g.title, subtitle)});
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
