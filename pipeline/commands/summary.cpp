// `ctxsim summary STORE`: per-layer tables of the headline statistics next to their chance
// baselines, read back from the store (so it works on any finished or copied store).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "pipeline/commands/summary.h"
#include "pipeline/store/hdf5.h"
#include "stages/stats/metrics.h"

#include "pipeline/job/config/head_list.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/prune/prune.h"
#include "stages/stats/accumulator.h"

namespace ctxsim {
namespace {

// "{H}" in a legend: the heads of a layer.
std::string with_heads(std::string text, int64_t H) {
  const size_t at = text.find("{H}");
  return at == std::string::npos ? text : text.replace(at, 3, std::to_string(H));
}

// A pruning store (SPEC §8): accuracy along each order's curve, the random band, whether
// importance beats random at half the heads removed, and how the per-head measures agree.
void print_prune_data(const PruneStoreData& d, const std::string& path, hid_t file, std::ostream& out) {
  const PruneResults& r = d.results;
  const int64_t L = d.layout.layers, H = d.layout.heads, F = d.layout.fractions;
  const int64_t R = int64_t(r.curve_accuracy_random.size()) / std::max<int64_t>(F, 1);
  out << "ctxsim summary of " << path << " (prune: head importance and pruning, SPEC §8)\n"
      << "  model " << d.model_path << " (" << read_store_model(file, path).describe() << "), " << L << " layers x " << H
      << " heads; full model: loss " << fixed(r.full_loss, 4) << ", accuracy " << fixed(100 * r.full_accuracy, 2) << "%\n";
  const std::string random_name = "random (mean of " + std::to_string(R) + ")";
  size_t width = random_name.size() + 1;  // the names in a column, a space at least after the longest
  for (const std::string& name : d.curve_orders) width = std::max(width, name.size() + 1);
  const auto curves = [&](const char* title, const std::vector<double>& values, double scale, int digits) {
    out << "\n" << title << " with a fraction of the heads removed, first in each order\n" << std::setw(int(width)) << "order";
    for (int64_t f = 0; f < F; ++f) out << std::setw(8) << (std::to_string(f * 10) + "%");
    out << "\n";
    for (size_t c = 0; c < d.curve_orders.size(); ++c) {
      out << std::setw(int(width)) << (d.curve_orders[c] == "random" ? random_name : d.curve_orders[c]);
      for (int64_t f = 0; f < F; ++f) out << std::setw(8) << fixed(scale * values[c * size_t(F) + size_t(f)], digits);
      out << "\n";
    }
  };
  curves("accuracy (%)", r.curve_accuracy, 100, 2);
  curves("loss (nats a predicted token)", r.curve_loss, 1, 3);
  // At 50% removed: each order's loss and accuracy, and how far each lies from the random orders'
  // mean in their standard deviations (the 2-sd bar of docs/FINDINGS.md).
  const int64_t half = F / 2;
  const auto [loss_mean, loss_sd] = prune::random_band(r.curve_loss_random, F, half);
  const auto [acc_mean, acc_sd] = prune::random_band(r.curve_accuracy_random, F, half);
  const auto away = [](double x, double mean, double sd) {
    return sd > 0 ? (x >= mean ? "+" : "") + fixed((x - mean) / sd, 1) : std::string("-");
  };
  const auto line = [&](const std::string& name, const std::string& loss, const std::string& loss_sd, const std::string& acc,
                        const std::string& acc_sd) {
    out << "  " << std::setw(int(width)) << std::left << name << std::right << std::setw(9) << loss << std::setw(8) << loss_sd
        << std::setw(10) << acc << std::setw(8) << acc_sd;
  };
  out << "\nat " << half * 10 << "% removed: loss (nats a predicted token) and accuracy, each with its distance from the " << R
      << " random orders' mean in their sd (-: no spread)\n";
  line("order", "loss", "sd", "accuracy", "sd");
  out << "\n";
  for (size_t c = 0; c + 1 < d.curve_orders.size(); ++c) {
    const double loss = r.curve_loss[c * size_t(F) + size_t(half)], acc = 100 * r.curve_accuracy[c * size_t(F) + size_t(half)];
    line(d.curve_orders[c], fixed(loss, 3), away(loss, loss_mean, loss_sd), fixed(acc, 2) + "%", away(acc, 100 * acc_mean, 100 * acc_sd));
    out << "\n";
  }
  line("random orders", fixed(loss_mean, 3), "+-" + fixed(loss_sd, 3), fixed(100 * acc_mean, 2) + "%", "+-" + fixed(100 * acc_sd, 2));
  out << "  (mean +- sd over " << R << " seeds)\n";
  out << "\nSpearman rank correlation of importance with\n";
  const auto rho = [&](const char* name, const std::vector<double>& v) {
    out << "  " << std::setw(int(width)) << std::left << name << std::right << fixed(prune::spearman(r.importance, v), 3) << "\n";
  };
  rho("ablation loss", r.ablation_loss);
  rho("attention entropy", r.entropy);
  for (size_t k = 0; k < d.scores.size(); ++k) rho(("score " + d.scores[k]).c_str(), d.score(k));
  out << "\nimportance normalised per layer (Michel et al.: |dL/dxi| summed over samples, / the layer's L2 norm)\n layer";
  for (int64_t h = 0; h < H; ++h) out << std::setw(7) << ("H" + std::to_string(h));
  out << "\n";
  for (int64_t l = 0; l < L; ++l) {
    out << std::setw(6) << l;
    for (int64_t h = 0; h < H; ++h) out << std::setw(7) << fixed(r.importance_normalised[size_t(l * H + h)], 3);
    out << "\n";
  }
}

// The metric table's rows each part of the summary shows, in the order of metrics().
struct SummaryColumns {
  std::vector<const Metric*> columns, chances, rule_chances, legends, intervals;
  SummaryColumns() {
    for (const Metric& m : metrics()) {
      if (m.summary.width > 0) columns.push_back(&m);
      if (m.summary.width > 0 && m.interval) intervals.push_back(&m);
      if (m.chance_label) (m.per_rule_chance ? rule_chances : chances).push_back(&m);
      if (m.legend) legends.push_back(&m);
    }
    std::stable_sort(chances.begin(), chances.end(), [](const Metric* a, const Metric* b) { return a->chance_order < b->chance_order; });
  }
};

void print_header(const std::string& path, hid_t file, const Baseline& base, int64_t L, int64_t H, const SummaryColumns& cols,
                  std::ostream& out) {
  out << "ctxsim summary of " << path << "\n"
      << "  " << base.samples() << " samples of T=" << base.T() << ", model " << h5::get_attr_string(file, "model_path") << " ("
      << h5::get_attr_string(file, "dtype") << ", " << h5::get_attr_string(file, "vector") << " vectors), " << L << " layers x " << H
      << " heads; " << read_store_model(file, path).describe() << "\n"
      << "  chance (all valid pairs): ";
  for (size_t k = 0; k < cols.chances.size(); ++k)
    out << (k ? ", " : "") << cols.chances[k]->chance_label << " " << metric_text(*cols.chances[k], Counts{}, base, 1) << "%";
  out << "\n";
}

// One rule's per-layer table, with the chances over all its heads and the legends below it.
void print_rule_table(const std::string& rule, const RuleStats& r, const Baseline& base, const SummaryColumns& cols, std::ostream& out) {
  // A column is its row's width, wider where a value needs it (pair counts of a large run).
  std::vector<std::vector<std::string>> cells(size_t(r.L));
  std::vector<int> width;
  for (const Metric* m : cols.columns) width.push_back(m->summary.width);
  for (int64_t l = 0; l < r.L; ++l)
    for (size_t k = 0; k < cols.columns.size(); ++k) {
      const Metric* m = cols.columns[k];
      cells[size_t(l)].push_back(metric_text(*m, r.layer(l), base, m->summary.digits));
      width[k] = std::max(width[k], int(cells[size_t(l)].back().size()) + 1);
    }
  out << "\nrule " << rule << "\n layer";
  for (size_t k = 0; k < cols.columns.size(); ++k) out << std::setw(width[k]) << cols.columns[k]->header;
  out << "\n";
  Counts all;  // every head of the rule: what a rule-dependent chance is over
  for (int64_t l = 0; l < r.L; ++l) {
    const Counts c = r.layer(l);
    for (size_t k = 0; k < kStatCount; ++k) all.value[k] += c.value[k];
    all.heads += c.heads;
    out << std::setw(6) << l;
    for (size_t k = 0; k < cols.columns.size(); ++k) out << std::setw(width[k]) << cells[size_t(l)][k];
    out << "\n";
  }
  out << "  (chance: ";
  for (size_t k = 0; k < cols.rule_chances.size(); ++k)
    out << (k ? "; " : "") << cols.rule_chances[k]->chance_label << " " << metric_text(*cols.rule_chances[k], all, base, 1)
        << "% of all valid pairs";
  for (const Metric* m : cols.legends) out << "; " << with_heads(m->legend, r.H);
  out << ")\n";
}

// The same columns' bootstrap intervals (SPEC §5.1), where the store kept its units' sums.
void print_intervals(const Intervals& iv, int64_t L, const SummaryColumns& cols, std::ostream& out) {
  if (iv.empty()) {
    out << "  (no intervals: the store predates per-unit sums; rerun it with this ctxsim for them)\n";
    return;
  }
  const auto& with = cols.intervals;
  if (with.empty()) return;
  out << "  " << fixed(100 * iv.level, 0) << "% bootstrap intervals (" << iv.replicates << " resamples of the " << iv.units
      << " work units)\n layer";
  std::vector<std::vector<std::string>> cells(with.size());
  std::vector<int> width;
  for (size_t k = 0; k < with.size(); ++k) {
    size_t w = std::string(with[k]->header).size();
    for (int64_t l = 0; l < L; ++l) {
      cells[k].push_back(interval_text(*with[k], *iv.of(*with[k], int(l)), with[k]->summary.digits));
      w = std::max(w, cells[k].back().size());
    }
    width.push_back(int(w) + 2);
    out << std::setw(width.back()) << with[k]->header;
  }
  out << "\n";
  for (int64_t l = 0; l < L; ++l) {
    out << std::setw(6) << l;
    for (size_t k = 0; k < with.size(); ++k) out << std::setw(width[k]) << cells[k][size_t(l)];
    out << "\n";
  }
}

// Top anchors of chosen heads: by default, per layer the head whose top anchor is most common.
void print_top_anchors(const RuleStats& r, std::vector<std::pair<int64_t, int64_t>> heads, int64_t top,
                       const std::vector<std::string>& vocab, std::ostream& out) {
  if (heads.empty()) {
    for (int64_t l = 0; l < r.L; ++l) {
      int64_t best_h = 0, best = -1;
      for (int64_t k = 0; k < r.H; ++k) {
        const auto first = r.top_anchors(l, k, 1);
        const int64_t m = first.empty() ? 0 : r.anchor_count(l, k, first[0]);
        if (m > best) {
          best = m;
          best_h = k;
        }
      }
      heads.emplace_back(l, best_h);
    }
  }
  out << "  top anchors (token: samples)\n";
  for (const auto& [l, k] : heads) {
    out << "   L" << l << " H" << k << ":";
    for (int64_t t : r.top_anchors(l, k, top)) out << "  " << token_text(vocab, t) << ": " << r.anchor_count(l, k, t);
    out << "\n";
  }
}

// Rule-independent: the attention on each separator token, per layer.
void print_separator_attention(const Baseline& base, std::ostream& out) {
  if (base.separator_tokens.empty()) return;
  out << "\nattention on each separator (mean mass a valid query row puts on its keys, over the layer's heads)\n layer";
  for (const auto& t : base.separator_tokens) out << std::setw(10) << t;
  out << "\n";
  const int64_t layers = int64_t(base.separator_mass_by_token.size()) / (int64_t(base.separator_tokens.size()) * base.separator_heads);
  for (int64_t l = 0; l < layers; ++l) {
    out << std::setw(6) << l;
    for (size_t u = 0; u < base.separator_tokens.size(); ++u) out << std::setw(10) << fixed(base.separator_token_attention(l, -1, u), 3);
    out << "\n";
  }
}

}  // namespace

void print_prune_summary(hid_t file, const std::string& path, const SummaryOptions&, std::ostream& out) {
  print_prune_data(read_prune_store(file, path), path, file, out);
}

void print_run_summary(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out) {
  const auto vocab = store_vocab(file);
  const StoreStats stats = read_store_stats(file, path, int64_t(vocab.size()));
  const Baseline base = baseline_of(stats);
  const SummaryColumns cols;
  // The heads asked for are checked before anything is printed.
  check_head_list(options.heads, stats.acc.shape().layers, stats.acc.shape().heads);
  for (size_t i = 0; i < stats.rules.size(); ++i) {
    const RuleStats r = rule_stats_of(stats, i);
    if (i == 0) print_header(path, file, base, r.L, r.H, cols, out);
    print_rule_table(stats.rules[i], r, base, cols, out);
    print_intervals(store_intervals(file, path, stats, i), r.L, cols, out);
    print_top_anchors(r, options.heads, options.top, vocab, out);
  }
  print_separator_attention(base, out);
}

}  // namespace ctxsim
