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
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/stats/accumulator.h"

namespace ctxsim {
namespace {

// "{H}" in a legend: the heads of a layer.
std::string with_heads(std::string text, int64_t H) {
  const size_t at = text.find("{H}");
  return at == std::string::npos ? text : text.replace(at, 3, std::to_string(H));
}

}  // namespace

int print_summary(const std::string& path, const SummaryOptions& options, std::ostream& out) {
  const h5::FileScope scope(path);
  const h5::Id file = open_complete_store(path);
  if (is_segment_store(file)) return print_segment_summary(read_segment_store(file), out), 0;
  const auto vocab = store_vocab(file);
  const StoreStats stats = read_store_stats(file, path, int64_t(vocab.size()));
  const Baseline base = baseline_of(stats);
  const auto& rule_names = stats.rules;
  const int64_t samples = base.samples(), T = base.T();
  // The table's columns, the chances of the header line and of each rule's footer, in the order
  // of metrics().
  std::vector<const Metric*> columns, chances, rule_chances, legends;
  for (const Metric& m : metrics()) {
    if (m.summary.width > 0) columns.push_back(&m);
    if (m.chance_label) (m.per_rule_chance ? rule_chances : chances).push_back(&m);
    if (m.legend) legends.push_back(&m);
  }
  std::stable_sort(chances.begin(), chances.end(), [](const Metric* a, const Metric* b) { return a->chance_order < b->chance_order; });

  // The heads asked for are checked before anything is printed.
  check_head_list(options.heads, stats.acc.shape().layers, stats.acc.shape().heads);
  bool header = true;
  for (size_t i = 0; i < rule_names.size(); ++i) {
    const std::string& rule = rule_names[i];
    const RuleStats r = rule_stats_of(stats, i);
    const int64_t L = r.L, H = r.H;
    if (header) {
      out << "ctxsim summary of " << path << "\n"
          << "  " << samples << " samples of T=" << T << ", model " << h5::get_attr_string(file, "model_path") << " ("
          << h5::get_attr_string(file, "dtype") << ", " << h5::get_attr_string(file, "vector") << " vectors), " << L << " layers x " << H
          << " heads; " << read_store_model(file, path).describe() << "\n"
          << "  chance (all valid pairs): ";
      for (size_t k = 0; k < chances.size(); ++k)
        out << (k ? ", " : "") << chances[k]->chance_label << " " << metric_text(*chances[k], Counts{}, base, 1) << "%";
      out << "\n";
      header = false;
    }
    out << "\nrule " << rule << "\n layer";
    for (const Metric* m : columns) out << std::setw(m->summary.width) << m->header;
    out << "\n";
    Counts all;  // every head of the rule: what a rule-dependent chance is over
    for (int64_t l = 0; l < L; ++l) {
      const Counts c = r.layer(l);
      for (size_t k = 0; k < kStatCount; ++k) all.value[k] += c.value[k];
      all.heads += c.heads;
      out << std::setw(6) << l;
      for (const Metric* m : columns) out << std::setw(m->summary.width) << metric_text(*m, c, base, m->summary.digits);
      out << "\n";
    }
    out << "  (chance: ";
    for (size_t k = 0; k < rule_chances.size(); ++k)
      out << (k ? "; " : "") << rule_chances[k]->chance_label << " " << metric_text(*rule_chances[k], all, base, 1)
          << "% of all valid pairs";
    for (const Metric* m : legends) out << "; " << with_heads(m->legend, H);
    out << ")\n";
    // Top anchors of chosen heads: by default, per layer the head whose top anchor is most common.
    std::vector<std::pair<int64_t, int64_t>> heads = options.heads;
    if (heads.empty()) {
      for (int64_t l = 0; l < L; ++l) {
        int64_t best_h = 0, best = -1;
        for (int64_t k = 0; k < H; ++k) {
          const auto top = r.top_anchors(l, k, 1);
          const int64_t m = top.empty() ? 0 : r.anchor_count(l, k, top[0]);
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
      for (int64_t t : r.top_anchors(l, k, options.top)) out << "  " << token_text(vocab, t) << ": " << r.anchor_count(l, k, t);
      out << "\n";
    }
  }
  // Rule-independent: the attention on each separator token, per layer.
  if (!base.separator_tokens.empty()) {
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
  return 0;
}

}  // namespace ctxsim
