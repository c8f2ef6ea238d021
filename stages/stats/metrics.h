// The numbers readers show, declared once in one table of views (as llama-bench's one field
// list): a row is a metric of a head or a layer (its CSV column, its formula over the counts and
// the chance baseline, what it is a share of, its chance partner and its lift) and the views
// that show it: a column of summary's per-layer table, a column of compare's table, a per-head
// heatmap of the report, a per-layer line against its chance in the report and compare.
// summary, collect, compare and the figures iterate the table; none keeps a list of its own, so
// a statistic users see is a row here, next to its schema row (docs/ARCHITECTURE.md: how to add
// a statistic). No LibTorch, MPI or HDF5 here.
#pragma once
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "stages/stats/counts.h"

namespace ctxsim {

// A column of summary's per-layer table (width 0: not one).
struct SummaryColumn {
  int width = 0, digits = 0;
};

// A column of compare.html's per-layer table (header nullptr: not one; HTML, escaped already).
struct CompareColumn {
  const char* header = nullptr;
  int digits = 0;
};

// A per-head [layer x head] heatmap of the report (stem nullptr: none). "{chance}" in bar and
// caption stands for the metric's chance as a percentage with chance_digits decimals.
struct HeadMap {
  const char* stem = nullptr;
  const char* title = "";
  const char* bar = "";
  const char* caption = "";
  double hi = 0;  // the colour scale's top (0: the largest value)
  int chance_digits = 1;
};

// A panel of a per-layer figure, one line per run against the metric's chance (dashed), and a
// second panel of its lift when it has one; rows with the same stem share one figure, whose
// caption is the first row's (stem nullptr: none).
struct LayerLine {
  const char* stem = nullptr;
  const char* title = "";  // the panel's
  const char* y_label = "";
  const char* caption = "";  // the figure's (its first row's)
  const char* figure = "";   // the figure's title after the page's prefix (its first row's)
  const char* lift_title = "lift over chance";
  bool from_zero = true;  // the y axis starts at 0 (false: at the data, for values far from 0 that runs share closely)
};

struct Metric {
  const char* name;    // CSV column, e.g. "same_sentence_rate"
  const char* header;  // summary's table header, e.g. "same-sent %"
  double (*value)(const Counts&, const Baseline&);
  double (*of)(const Counts&, const Baseline&) = nullptr;     // a share's denominator; nullptr: not a share
  double (*count)(const Counts&, const Baseline&) = nullptr;  // a mean's count (not a share): "-" where it is 0
  bool whole = false;                                         // a count or an index: shown as an integer
  const char* chance = nullptr;                               // the row giving this one's chance value
  const char* lift = nullptr;                                 // the row dividing this one by its chance
  // A chance row that summary names in its header line ("same-sentence"), in that line's order;
  // a rule-dependent chance (in-attention: each rule's threshold) goes to the rule's footer.
  const char* chance_label = nullptr;
  int chance_order = 0;
  bool per_rule_chance = false;
  bool interval = false;         // a share or a lift: it has a bootstrap interval (stages/stats/bootstrap.h)
  const char* legend = nullptr;  // summary's footer: what an abbreviated header means ("{H}": the heads)
  SummaryColumn summary;
  CompareColumn compare;
  HeadMap heatmap;
  LayerLine line;

  bool share() const { return of != nullptr; }
  // The value as a reader shows it on a scale: a share in percent, anything else as it is; NaN for
  // a mean over no count (a store that predates the statistic: no point on a figure).
  double shown(const Counts& c, const Baseline& b) const {
    if (count && count(c, b) <= 0) return std::numeric_limits<double>::quiet_NaN();
    return share() ? 100.0 * value(c, b) : value(c, b);
  }
};

// Every row, in the order collect's CSV lists them.
const std::vector<Metric>& metrics();
// The row named `name` (a bug when there is none).
const Metric& metric(std::string_view name);

// A number as every reader prints it: `digits` decimals, fixed.
std::string fixed(double v, int digits);
// A metric as text: a count as an integer, a share as a percentage with `digits` decimals ("-"
// centred in "  -  " when its denominator, or a mean's count, is 0), anything else with `digits`
// decimals.
std::string metric_text(const Metric& m, const Counts& c, const Baseline& b, int digits);

}  // namespace ctxsim
