// The per-layer figures of one run or several, drawn once for both pages: the report passes its
// one run, compare its several. One line per run for every row of the metric table that has a
// per-layer view (stages/stats/metrics.h: rows sharing a stem share a figure), against its
// chance, with the lift beside a rate, each line in the band of its 95% interval; the distance distribution per layer; the attention on
// each separator token. Below report_figures and compare, and knows neither.
#pragma once
#include <string>
#include <vector>

#include "pipeline/report/figure_entry.h"
#include "pipeline/store/store_reader.h"

namespace ctxsim::report {

// One run as the per-layer figures draw it: its series' name and colour, its chance baseline,
// and its counts per layer (all heads of each layer).
struct LayerRun {
  std::string name;
  Rgb colour;
  const Baseline* base = nullptr;
  const std::vector<Counts>* layers = nullptr;  // [L]
  const Intervals* intervals = nullptr;         // the run's bootstrap intervals (SPEC §5.1); none: no bands
};

// The chance distribution of distance j - i (all valid pairs) at d = 1 … T-1, in percent.
std::vector<double> distance_chance(const Baseline& b, int64_t T);

// Distance j - i of the selected pairs per layer, one panel per layer, every run's distribution
// against the chance distribution (all valid pairs), one dashed line per distinct chance as in
// layer_figures; the y range holds both.
Figure distance_by_layer_figure(const std::vector<LayerRun>& runs, int64_t L, int64_t T, const std::string& title,
                                const std::string& subtitle);

// Every per-layer view of the metric table, then the attention on each separator token (one
// panel per token any run measured), in the table's order. Chance is one dashed line per
// distinct chance: runs whose chances agree within 1% of the scale (a pixel or two) share one black
// line ("chance"), and where they differ each distinct chance is its own line, named after its
// runs and in the first one's colour. title prefixes each figure's title; subtitle names the run(s).
std::vector<Entry> layer_figures(const std::vector<LayerRun>& runs, const std::string& title, const std::string& subtitle);

// The stems layer_figures makes for runs that measured separator tokens (or not): for tests and
// `ctxsim report --list-figures`.
std::vector<std::string> layer_figure_stems(bool separators);

}  // namespace ctxsim::report
