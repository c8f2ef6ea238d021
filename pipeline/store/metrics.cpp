#include "pipeline/store/metrics.h"

#include <iomanip>
#include <sstream>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

double pairs(const Counts& c, const Baseline&) { return c.pairs(); }
double valid_pairs(const Counts&, const Baseline& b) { return b.valid_pairs; }
double eligible(const Counts& c, const Baseline&) { return c[Stat::SentenceEligible]; }

}  // namespace

const std::vector<Metric>& metrics() {
  static const std::vector<Metric> table = {
      {"high_pairs", "pairs", pairs, nullptr, true},
      {"mean_distance", "dist mean", [](const Counts& c, const Baseline&) { return c.mean_distance(); }},
      {"median_distance", "median", [](const Counts& c, const Baseline&) { return double(c.median_distance()); }, nullptr, true},
      {"short_range_share", "d<=5 %", [](const Counts& c, const Baseline&) { return c.short_range(); }, pairs},
      {"short_range_chance", "chance d<=5 %", [](const Counts&, const Baseline& b) { return b.short_range_chance(); }, valid_pairs},
      {"long_range_share", "d>=32 %", [](const Counts& c, const Baseline&) { return c.long_range(); }, pairs},
      {"long_range_chance", "chance d>=32 %", [](const Counts&, const Baseline& b) { return b.long_range_chance(); }, valid_pairs},
      {"same_sentence_rate", "same-sent %", [](const Counts& c, const Baseline&) { return c.same_sentence_rate(); }, eligible},
      {"same_sentence_chance", "chance same-sent %", [](const Counts&, const Baseline& b) { return b.same_sentence_chance(); },
       [](const Counts&, const Baseline& b) { return b.sentence_eligible_all; }},
      {"same_sentence_lift", "lift", [](const Counts& c, const Baseline& b) { return b.same_sentence_lift(c); }},
      {"repetition_rate", "repeat %", [](const Counts& c, const Baseline&) { return c.repetition_rate(); }, pairs},
      {"repetition_chance", "chance repeat %", [](const Counts&, const Baseline& b) { return b.repetition_chance(); }, valid_pairs},
      {"repetition_lift", "repeat lift", [](const Counts& c, const Baseline& b) { return b.repetition_lift(c); }},
      {"in_attention_rate", "in-attn %", [](const Counts& c, const Baseline&) { return c.in_attention_rate(); }, pairs},
      {"in_attention_chance", "chance in-attn %", [](const Counts& c, const Baseline& b) { return b.in_attention_chance(c); },
       [](const Counts& c, const Baseline& b) { return b.valid_pairs * double(c.heads); }},
      {"distinct_anchors", "distinct",
       [](const Counts& c, const Baseline& b) { return Counts::ratio(c[Stat::DistinctAnchors], double(b.samples)); }},
      {"separator_mass", "sep-attn", [](const Counts& c, const Baseline& b) { return b.separator_attention(c); }},
      {"noise_share", "noise %", [](const Counts& c, const Baseline&) { return c.noise_share(); }, pairs},
  };
  return table;
}

const Metric& metric(std::string_view name) {
  for (const Metric& m : metrics())
    if (name == m.name) return m;
  CTXSIM_FAIL("no metric named " + std::string(name));
}

std::string metric_text(const Metric& m, const Counts& c, const Baseline& b, int digits) {
  std::ostringstream s;
  if (m.whole) {
    s << int64_t(m.value(c, b));
  } else if (m.of) {
    if (m.of(c, b) <= 0) return "  -  ";
    s << std::fixed << std::setprecision(digits) << 100.0 * m.value(c, b);
  } else {
    s << std::fixed << std::setprecision(digits) << m.value(c, b);
  }
  return s.str();
}

}  // namespace ctxsim
