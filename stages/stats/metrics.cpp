#include "stages/stats/metrics.h"

#include <iomanip>
#include <sstream>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

// Formulas, as templates over the statistics they read, so that a row names its Stats.
template <Stat N, Stat D>
double rate(const Counts& c, const Baseline&) {
  return Counts::ratio(c[N], c[D]);
}
template <Stat N, Stat D>
double chance_rate(const Counts&, const Baseline& b) {
  return Counts::ratio(b[N], b[D]);
}
template <Stat N, Stat D, Stat BN, Stat BD>
double lift(const Counts& c, const Baseline& b) {
  return Counts::ratio(rate<N, D>(c, b), chance_rate<BN, BD>(c, b));
}
template <Stat D>
double count_of(const Counts& c, const Baseline&) {
  return c[D];
}
template <Stat D>
double baseline_of_stat(const Counts&, const Baseline& b) {
  return b[D];
}

// A row of the table, built up view by view.
struct Row {
  Metric m{};
  Row(const char* name, const char* header, double (*value)(const Counts&, const Baseline&)) {
    m.name = name, m.header = header, m.value = value;
  }
  Row& share_of(double (*of)(const Counts&, const Baseline&)) { return m.of = of, *this; }
  Row& whole() { return m.whole = true, *this; }
  Row& mean_over(double (*count)(const Counts&, const Baseline&)) { return m.count = count, *this; }
  Row& against(const char* chance, const char* lift_row = nullptr) { return m.chance = chance, m.lift = lift_row, *this; }
  Row& chance_line(const char* label, int order) { return m.chance_label = label, m.chance_order = order, *this; }
  Row& rule_chance(const char* label) { return m.chance_label = label, m.per_rule_chance = true, *this; }
  Row& legend(const char* text) { return m.legend = text, *this; }
  Row& summary(int width, int digits) { return m.summary = {width, digits}, *this; }
  Row& compare(const char* header, int digits) { return m.compare = {header, digits}, *this; }
  Row& heatmap(const HeadMap& h) { return m.heatmap = h, *this; }
  Row& line(const LayerLine& l) { return m.line = l, *this; }
  Row& with_interval() { return interval = true, *this; }  // neither a share nor a lift, with an interval
  bool interval = false;
};

}  // namespace

// clang-format off
const std::vector<Metric>& metrics() {
  using S = Stat;
  static const std::vector<Metric> table = [] {
    const auto pairs = count_of<S::HighPairs>;
    const auto valid = baseline_of_stat<S::ValidPairs>;
    const std::vector<Row> rows = {
        Row("high_pairs", "pairs", pairs).whole().summary(8, 0),
        Row("mean_distance", "dist mean", [](const Counts& c, const Baseline&) { return c.mean_distance(); })
            .summary(11, 1).compare("mean distance", 1),
        Row("median_distance", "median", [](const Counts& c, const Baseline&) { return double(c.median_distance()); }).whole().summary(8, 0),
        Row("short_range_share", "d<=5 %", [](const Counts& c, const Baseline&) { return c.short_range(); }).share_of(pairs)
            .against("short_range_chance").summary(8, 1).compare("d&le;5 %", 1),
        Row("short_range_chance", "chance d<=5 %", [](const Counts&, const Baseline& b) { return b.short_range_chance(); }).share_of(valid)
            .chance_line("distance d<=5", 3),
        Row("long_range_share", "d>=32 %", [](const Counts& c, const Baseline&) { return c.long_range(); }).share_of(pairs)
            .against("long_range_chance").summary(10, 1),
        Row("long_range_chance", "chance d>=32 %", [](const Counts&, const Baseline& b) { return b.long_range_chance(); }).share_of(valid)
            .chance_line("d>=32", 4),
        Row("same_sentence_rate", "same-sent %", rate<S::SameSentence, S::SentenceEligible>).share_of(count_of<S::SentenceEligible>)
            .against("same_sentence_chance", "same_sentence_lift").summary(13, 1).compare("same-sentence %", 1)
            .heatmap({"same_sentence", "Same-sentence % of high-similarity pairs per head", "% same sentence (white: chance {chance})",
                      "Share of selected pairs whose tokens are in the same sentence, per layer and head: red above chance ({chance}), "
                      "blue below", 0, 1})
            .line({"same_sentence_by_layer", "same-sentence %", "% of selected pairs",
                   "Same-sentence share of the selected pairs per layer against chance (dashed), and its lift", "same sentence"}),
        Row("same_sentence_chance", "chance same-sent %", chance_rate<S::SameSentenceAll, S::SentenceEligibleAll>)
            .share_of(baseline_of_stat<S::SentenceEligibleAll>).chance_line("same-sentence", 1),
        Row("same_sentence_lift", "lift", lift<S::SameSentence, S::SentenceEligible, S::SameSentenceAll, S::SentenceEligibleAll>)
            .summary(6, 2).compare("lift", 2),
        Row("repetition_rate", "repeat %", rate<S::SameToken, S::HighPairs>).share_of(pairs).against("repetition_chance", "repetition_lift")
            .line({"repetition_by_layer", "repeated-token %", "% of selected pairs",
                   "Repeated-token pairs per layer: their share of the selected pairs against chance (dashed), and the lift", "repetition"}),
        Row("repetition_chance", "chance repeat %", chance_rate<S::SameTokenAll, S::ValidPairs>).share_of(valid)
            .chance_line("repeated token", 2),
        Row("repetition_lift", "repeat lift", lift<S::SameToken, S::HighPairs, S::SameTokenAll, S::ValidPairs>).against("repetition_chance")
            .summary(13, 2).compare("repetition lift", 2)
            .heatmap({"repetition_lift", "Repeated-token pairs: rate / chance per head", "lift (chance rate {chance})",
                      "Rate of selected pairs joining two occurrences of the same token, divided by the rate among all valid pairs", 0, 2}),
        Row("same_word_rate", "same-word %", rate<S::SameWord, S::HighPairs>).share_of(pairs).against("same_word_chance", "same_word_lift")
            .summary(12, 1).compare("same-word %", 1)
            .heatmap({"same_word", "Same-word % of high-similarity pairs per head", "% inside one word (white: chance {chance})",
                      "Share of selected pairs whose tokens are pieces of one whitespace word, per layer and head: red above chance "
                      "({chance}), blue below", 0, 2})
            .line({"same_word_by_layer", "same-word %", "% of selected pairs",
                   "Pairs inside one whitespace word per layer: their share of the selected pairs against chance (dashed), and the lift",
                   "same word"}),
        Row("same_word_chance", "chance same-word %", chance_rate<S::SameWordAll, S::ValidPairs>).share_of(valid).chance_line("same word", 5),
        Row("same_word_lift", "word lift", lift<S::SameWord, S::HighPairs, S::SameWordAll, S::ValidPairs>).summary(10, 2)
            .compare("same-word lift", 2),
        Row("in_attention_rate", "in-attn %", rate<S::InAttention, S::HighPairs>).share_of(pairs).against("in_attention_chance")
            .summary(11, 1).compare("in-attention %", 1)
            .line({"attention_and_noise_by_layer", "selected pairs that are high-attention", "%",
                   "Left: share of the selected pairs the attention map also marks (max(A_ij, A_ji) >= beta) against chance (dashed); "
                   "the rest are pairs the attention map does not mark. Right: noise, the selected pairs no explanation covers",
                   "attention overlap and noise"}),
        Row("in_attention_chance", "chance in-attn %",
            [](const Counts& c, const Baseline& b) { return Counts::ratio(c[S::HighAttentionAll], b[S::ValidPairs] * double(c.heads)); })
            .share_of([](const Counts& c, const Baseline& b) { return b[S::ValidPairs] * double(c.heads); }).rule_chance("in-attention"),
        Row("distinct_anchors", "distinct", [](const Counts& c, const Baseline& b) { return Counts::ratio(c[S::DistinctAnchors], b[S::Samples]); })
            .summary(10, 2).compare("distinct anchors", 2).legend("distinct = mean distinct anchors over a sample's {H} heads")
            .line({"distinct_anchors_by_layer", "distinct anchors", "mean per sample",
                   "Mean number of distinct anchor tokens among the heads of a layer, per sample (as many as heads: every head its own)", "distinct anchors"}),
        Row("separator_mass", "sep-attn", [](const Counts& c, const Baseline& b) { return b.separator_attention(c); })
            .summary(10, 3).legend("sep-attn = mean attention mass on separators")
            .heatmap({"separator_attention", "Attention mass on separators per head", "mean attention on separators",
                      "Mean attention mass that valid query tokens put on separator keys, per layer and head"}),
        Row("effective_rank", "eff rank", rate<S::EffectiveRank, S::EffectiveRankSamples>).mean_over(count_of<S::EffectiveRankSamples>)
            .with_interval()
            .summary(10, 2).compare("effective rank", 2).legend("eff rank = mean effective rank (participation ratio) of a head's output")
            .heatmap({"effective_rank", "Effective rank of each head's output", "mean participation ratio",
                      "Mean effective rank (tr G)^2 / |G|_F^2 of each head's context vectors per sample (G their Gram matrix): "
                      "1 when every token's output lies on one line, up to the head size when they spread over all of it"})
            .line({"effective_rank_by_layer", "effective rank", "mean per sample and head",
                   "Mean effective rank (participation ratio) of the heads' outputs per layer", "effective rank", "", false}),
        Row("first_token_mass", "first-tok", [](const Counts& c, const Baseline& b) { return Counts::ratio(c[S::FirstTokenMass], b[S::Samples] * double(c.heads)); })
            .mean_over(count_of<S::FirstTokenMass>).with_interval().summary(10, 3)
            .legend("first-tok = mean attention mass on the first position (the attention sink)").compare("first-token attention", 3)
            .heatmap({"first_token_attention", "Attention mass on the first position per head", "mean attention on position 0",
                      "Mean attention mass that valid query tokens put on the sample's first position ([CLS], <s>, or a decoder's first "
                      "token: the attention sink), per layer and head"})
            .line({"first_token_attention_by_layer", "attention on position 0", "mass per query row",
                   "Attention mass valid query tokens put on the first position, per layer (mean over heads)", "the attention sink", "", false}),
        Row("anchor_share", "anchor %", rate<S::AnchorPairs, S::HighPairs>).share_of(pairs),
        Row("noise_share", "noise %", rate<S::Noise, S::HighPairs>).share_of(pairs).summary(9, 1).compare("noise %", 1)
            .heatmap({"noise_share", "Noise: % of high-similarity pairs no explanation covers", "% noise",
                      "Share of selected pairs that are neither same-sentence, nor repeated tokens, nor touch the head's anchor token", 0})
            .line({"attention_and_noise_by_layer", "noise share", "% of selected pairs"}),
    };
    std::vector<Metric> out;
    for (const Row& r : rows) out.push_back(r.m);
    // Every share and every lift has an interval (a lift is the row another row names as its
    // lift), and a row that asks for one.
    for (size_t k = 0; k < out.size(); ++k) {
      Metric& m = out[k];
      m.interval = m.share() || rows[k].interval;
      for (const Metric& other : out)
        if (other.lift && std::string_view(other.lift) == m.name) m.interval = true;
    }
    return out;
  }();
  return table;
}
// clang-format on

const Metric& metric(std::string_view name) {
  for (const Metric& m : metrics())
    if (name == m.name) return m;
  CTXSIM_FAIL("no metric named " + std::string(name));
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string metric_text(const Metric& m, const Counts& c, const Baseline& b, int digits) {
  if (m.whole) return std::to_string(int64_t(m.value(c, b)));
  if ((m.of && m.of(c, b) <= 0) || (m.count && m.count(c, b) <= 0)) return "  -  ";
  return fixed(m.shown(c, b), digits);
}

}  // namespace ctxsim
