// The numbers a reader shows of a head or a layer, each defined once: its name (a CSV column),
// its table header, what it is a share of (a percentage of nothing is shown as "-"), whether it
// is a count, and its formula over the counts and the chance baseline (store_reader.h). summary,
// collect and compare choose which to show and how to format them; none spells a formula itself.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/store/store_reader.h"

namespace ctxsim {

struct Metric {
  const char* name;    // CSV column, e.g. "same_sentence_rate"
  const char* header;  // table header, e.g. "same-sent %"
  double (*value)(const Counts&, const Baseline&);
  double (*of)(const Counts&, const Baseline&) = nullptr;  // a share's denominator; nullptr: not a share
  bool whole = false;                                      // a count or an index: shown as an integer
};

// Every metric, in the order collect's CSV lists them.
const std::vector<Metric>& metrics();
// The metric named `name` (a bug when there is none).
const Metric& metric(std::string_view name);

// A metric as text: a count as an integer, a share as a percentage with `digits` decimals ("-"
// centred in "  -  " when its denominator is 0), anything else with `digits` decimals.
std::string metric_text(const Metric& m, const Counts& c, const Baseline& b, int digits);

}  // namespace ctxsim
