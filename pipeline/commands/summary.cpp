// `ctxsim summary STORE`: per-layer tables of the headline statistics next to their chance
// baselines, read back from the store (so it works on any finished or copied store).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "pipeline/commands/summary.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/metrics.h"

#include "pipeline/job/config/head_list.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/stats/accumulator.h"

namespace ctxsim {
namespace {

// A share as a percentage with one decimal; "-" when its denominator is empty.
std::string pct(double share, double den) {
  if (den <= 0) return "  -  ";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100.0 * share;
  return s.str();
}

// The per-layer table: metric, column width, decimals.
struct Column {
  const char* metric;
  int width, digits;
};
constexpr Column kLayerColumns[] = {{"high_pairs", 8, 0},         {"mean_distance", 11, 1},    {"median_distance", 8, 0},
                                    {"short_range_share", 8, 1},  {"long_range_share", 10, 1}, {"same_sentence_rate", 13, 1},
                                    {"same_sentence_lift", 6, 2}, {"repetition_lift", 13, 2},  {"in_attention_rate", 11, 1},
                                    {"distinct_anchors", 10, 2},  {"separator_mass", 10, 3},   {"noise_share", 9, 1}};

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
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
  const int64_t samples = base.samples, T = base.T();

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
          << " heads\n"
          << "  chance (all valid pairs): same-sentence " << pct(base.same_sentence_chance(), base.sentence_eligible_all)
          << "%, repeated token " << pct(base.repetition_chance(), base.valid_pairs) << "%, distance d<=5 "
          << pct(base.short_range_chance(), base.valid_pairs) << "%, d>=32 " << pct(base.long_range_chance(), base.valid_pairs) << "%\n";
      header = false;
    }
    out << "\nrule " << rule << "\n layer";
    for (const auto& [name, width, digits] : kLayerColumns) out << std::setw(width) << metric(name).header;
    out << "\n";
    double high_attention_all = 0;
    for (int64_t l = 0; l < L; ++l) {
      const Counts c = r.layer(l);
      high_attention_all += c[Stat::HighAttentionAll];
      out << std::setw(6) << l;
      for (const auto& [name, width, digits] : kLayerColumns) out << std::setw(width) << metric_text(metric(name), c, base, digits);
      out << "\n";
    }
    out << "  (chance: in-attention "
        << pct(Counts::ratio(high_attention_all, base.valid_pairs * double(L * H)), base.valid_pairs * double(L * H))
        << "% of all valid pairs; distinct = mean distinct anchors "
        << "over a sample's " << H << " heads; sep-attn = mean attention mass on separators)\n";
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
