#include "pipeline/report/prune_figures.h"

#include <algorithm>
#include <cmath>

#include <filesystem>

#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/prune/prune.h"
#include "stages/stats/metrics.h"

namespace ctxsim::report {
namespace {

// What the accuracy counts: "masked tokens" (masked-LM) or "next tokens" (a decoder).
const char* target_tokens(const PruneStoreData& d) { return d.causal ? "next tokens" : "masked tokens"; }

// One panel per quantity (accuracy, loss): a line per order, random as mean and mean +- sd.
Entry curves(const PruneStoreData& d, const std::string& run) {
  const PruneResults& r = d.results;
  const int64_t F = d.layout.fractions, C = int64_t(d.curve_orders.size()), R = int64_t(r.curve_accuracy_random.size()) / F;
  std::vector<double> x;
  for (int64_t f = 0; f < F; ++f) x.push_back(double(f * 10));
  std::vector<PlotSpec> panels;
  for (const bool accuracy : {true, false}) {
    PlotSpec p;
    p.title = std::string(d.objective()) + (accuracy ? " accuracy" : " loss");
    p.x_label = "% of heads removed (first in each order)";
    p.y_label = accuracy ? std::string("% of ") + target_tokens(d) + " predicted" : "mean cross-entropy (nats)";
    const std::vector<double>& curve = accuracy ? r.curve_accuracy : r.curve_loss;
    const std::vector<double>& random = accuracy ? r.curve_accuracy_random : r.curve_loss_random;
    const double scale = accuracy ? 100.0 : 1.0;
    for (int64_t c = 0; c < C; ++c) {
      Series s{d.curve_orders[size_t(c)], x, {}, sequence_colour(int(c), int(C)), false, false};
      for (int64_t f = 0; f < F; ++f) s.y.push_back(scale * curve[size_t(c * F + f)]);
      if (d.curve_orders[size_t(c)] == "random") {
        s.name = "random (mean of " + std::to_string(R) + " orders)";
        s.colour = Rgb{120, 120, 120};
        Series lo{"random, mean - sd", x, {}, Rgb{170, 170, 170}, true, false},
            hi{"random, mean + sd", x, {}, Rgb{170, 170, 170}, true, false};
        for (int64_t f = 0; f < F; ++f) {
          const prune::Band b = prune::random_band(random, F, f);
          lo.y.push_back(scale * (b.mean - b.sd)), hi.y.push_back(scale * (b.mean + b.sd));
        }
        p.series.push_back(lo), p.series.push_back(hi);
      }
      p.series.push_back(s);
    }
    if (!accuracy) {  // the loss moves little against its size: its own range, not from 0
      double lo = 1e300, hi = -1e300;
      for (const auto& s : p.series)
        for (double y : s.y) lo = std::min(lo, y), hi = std::max(hi, y);
      const double pad = std::max(1e-6, 0.08 * (hi - lo));
      p.y_lo = lo - pad, p.y_hi = hi + pad;
    }
    panels.push_back(p);
  }
  return {"prune_curves",
          "Accuracy and loss of the " + std::string(d.objective()) +
              " objective as a growing fraction of its heads is removed (gates 0), in each order: importance "
              "(lowest first), ablation (smallest loss increase first), entropy (highest first)" +
              std::string(d.scores.empty() ? "" : ", the ctxsim score" + std::string(d.scores.size() > 1 ? "s " : " ") + join(d.scores)) +
              ", and random orders (grey: their mean, dashed: mean +- one standard deviation)",
          plot_figure(panels, 2, 520, 340, "Pruning curves", run)};
}

Entry head_map(const PruneStoreData& d, const std::vector<double>& v, const std::string& stem, const std::string& title,
               const std::string& bar, const std::string& caption, const std::string& run) {
  HeatmapSpec hm;
  hm.rows = int(d.layout.layers), hm.cols = int(d.layout.heads);
  hm.values.assign(v.begin(), v.end());
  for (int64_t l = 0; l < d.layout.layers; ++l) hm.row_labels.push_back("L" + std::to_string(l));
  for (int64_t h = 0; h < d.layout.heads; ++h) hm.col_labels.push_back("H" + std::to_string(h));
  hm.x_label = "head", hm.y_label = "layer", hm.bar_label = bar;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  hm.lo = *lo, hm.hi = *hi > *lo ? *hi : *lo + 1;
  hm.cell_text.clear();
  for (double x : v) hm.cell_text.push_back(fixed(x, std::abs(x) < 10 ? 3 : 1));
  return {stem, caption, heatmap_figure(hm, title, run)};
}

// Each head as a dot: its importance against another per-head measure, with Spearman's rho.
Entry scatter(const PruneStoreData& d, const std::vector<double>& other, const std::string& stem, const std::string& name,
              const std::string& run) {
  const PruneResults& r = d.results;
  PlotSpec p;
  const double rho = prune::spearman(r.importance, other);
  p.title = "importance against " + name + " (Spearman rho " + fixed(rho, 3) + ", " + std::to_string(r.importance.size()) + " heads)";
  p.x_label = "importance (sum over samples of |dL/dxi|)";
  p.y_label = name;
  p.legend = false;
  Series s{"heads", r.importance, other, Rgb{31, 119, 180}, false, false};
  s.points = true;
  p.series = {s};
  return {stem, "Each head's importance against its " + name + "; Spearman's rank correlation " + fixed(rho, 3),
          plot_figure({p}, 1, 520, 360, "Importance and " + name, run)};
}

}  // namespace

std::vector<Entry> prune_figures(const PruneStoreData& d, const std::string& run) {
  const PruneResults& r = d.results;
  std::vector<Entry> out = {curves(d, run)};
  out.push_back(head_map(d, r.importance_normalised, "prune_importance", "Head importance (normalised per layer)", "|dL/dxi| / layer norm",
                         "Michel et al.'s importance: |dL/dxi| summed over samples, divided by the L2 norm of its layer's", run));
  out.push_back(head_map(d, r.ablation_loss, "prune_ablation", "Loss increase with the head alone removed", "loss - full loss (nats)",
                         "Mean " + std::string(d.objective()) + " loss with the head's gate at 0, minus the full model's", run));
  out.push_back(head_map(d, r.entropy, "prune_entropy", "Mean attention entropy", "nats",
                         "Mean over samples and valid query rows of the head's attention entropy -sum_j A_ij ln A_ij", run));
  out.push_back(scatter(d, r.ablation_loss, "prune_importance_vs_ablation", "ablation loss increase", run));
  for (size_t k = 0; k < d.scores.size(); ++k) {  // the first score keeps the stems it had alone
    const std::string suffix = k == 0 ? "" : "_" + d.scores[k];
    const std::vector<double> v = d.score(k);
    out.push_back(scatter(d, v, "prune_importance_vs_score" + suffix, "ctxsim score " + d.scores[k], run));
    out.push_back(head_map(d, v, "prune_score" + suffix,
                           "ctxsim score " + d.scores[k] + " (Spearman with importance " + fixed(prune::spearman(r.importance, v), 3) + ")",
                           d.scores[k], "The per-head ctxsim score of prune.scores_from that its order sorts", run));
  }
  return out;
}

std::vector<PruneRun> load_prune_runs(const std::vector<std::string>& paths, const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != paths.size())
    throw Error("--labels", std::to_string(labels.size()) + " labels for " + std::to_string(paths.size()) + " stores",
                "give one label per store, in order");
  std::vector<PruneRun> runs;
  for (size_t i = 0; i < paths.size(); ++i) {
    PruneRun run;
    run.path = paths[i];
    const h5::FileScope scope(run.path);
    const h5::Id file = open_complete_store(run.path);
    run.data = read_prune_store(file, run.path);
    run.label = i < labels.size() ? labels[i] : std::filesystem::path(run.path).parent_path().filename().string();
    if (run.label.empty()) run.label = run.path;
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<Entry> prune_compare_figures(const std::vector<PruneRun>& runs, const std::string& title) {
  // The orders every run has, in the first run's order.
  std::vector<std::string> orders;
  for (const auto& o : runs.front().data.curve_orders) {
    bool everywhere = true;
    for (const auto& r : runs) everywhere &= std::count(r.data.curve_orders.begin(), r.data.curve_orders.end(), o) == 1;
    if (everywhere) orders.push_back(o);
  }
  std::vector<PlotSpec> panels;
  for (const auto& o : orders) {
    PlotSpec p;
    p.title = o == "random" ? "random orders (mean)" : o + " order";
    p.x_label = "% of heads removed";
    p.y_label = std::string("% of ") + target_tokens(runs.front().data) + " predicted";
    for (size_t i = 0; i < runs.size(); ++i) {
      const PruneStoreData& d = runs[i].data;
      const size_t c = size_t(std::find(d.curve_orders.begin(), d.curve_orders.end(), o) - d.curve_orders.begin());
      Series s{runs[i].label, {}, {}, sequence_colour(int(i), int(runs.size())), false, false};
      for (int64_t f = 0; f < d.layout.fractions; ++f)
        s.x.push_back(double(f * 10)), s.y.push_back(100 * d.results.curve_accuracy[c * size_t(d.layout.fractions) + size_t(f)]);
      p.series.push_back(s);
    }
    panels.push_back(p);
  }
  return {{"prune_compare_curves", "Masked-LM accuracy as heads are removed, one panel per order, one line per run",
           plot_figure(panels, 2, 460, 300, "Pruning curves", title)}};
}

}  // namespace ctxsim::report
