// The report's figures, each described once as SVG (stages/figures/figure.h): the study's aggregate
// figures of one rule, and per stored example its attention, similarity and rollout.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/report/figure_entry.h"
#include "pipeline/report/report_data.h"
#include "stages/figures/figure.h"

namespace ctxsim::report {

// The study's aggregate figures, appended to `out`.
void aggregate_figures(const StoreData& d, std::vector<Entry>& out);

// The caption of the distance overlay (`layers`: each layer's counts): it says the selected
// pairs shift to short range only when the data show it (the last third of the layers' share of
// d <= 5 at least 1.5 times chance, and 5 points above chance and above the first third's);
// else it asks the reader to compare with chance. Both give the numbers.
std::string distance_overlay_caption(const std::vector<Counts>& layers, const Baseline& b);

// The per-head heatmap of a row of the metric table (row.heatmap.stem set): a fixed scale from 0
// when the row gives one (heatmap.hi > 0); a rate with a chance diverging around that chance
// (white), over the data and the chance; anything else over the data's own range.
HeatmapSpec head_map_spec(const StoreData& d, const Metric& row);

// Example e's figures: attention and similarity of the chosen heads with the selected and the
// high-attention pairs overlaid, the rollout `roll` [n, n] and the [CLS] relevance bars.
void example_figures(const StoreData& d, const Example& x, size_t e, const std::vector<double>& roll,
                     const std::vector<std::pair<int, int>>& heads, std::vector<Entry>& figures);

// What a page is made from: a report's store (its path and its identity, store_identity), or a
// comparison's stores (their paths, and a digest of their identities), so that a page replaces
// only a page made from the same; `replace` (--overwrite): the user asked to replace any.
struct PageSource {
  std::string path, id;
  bool replace = false;
};

// Writes every figure (SVG and PNG) and index.json into `dir`: each figure's caption, the pixel
// rectangles of its plot areas (so that tests and tools find a cell's or a curve's pixels), the
// page that owns it and what that page was made from.
void write_figures(const std::vector<Entry>& figures, const std::filesystem::path& dir, const std::string& page_name,
                   const PageSource& source = {});

// Publishes a page and its figures in `dir`: the figures are made in a staging folder of this
// call's own (dir/figures.partial.XXXXXX), make_page(that folder) builds the page (it may embed
// them), then each figure replaces its namesake in dir/figures (index.json last) and the page,
// written last, replaces dir/page_name. The whole of it holds a lock on dir, so two pages
// published into one folder at once follow one another (each embeds its own figures, and
// figures/ ends as one of them made it); staging folders of killed publishers are removed under
// it. Only this page's files are written or removed: files in figures/ that no page listed stay,
// and it refuses a figures/ that another page owns (a report's, under compare --out), a report
// of another store (by path and identity: `source`), or a file of its names that ctxsim did not
// write. A failure leaves no staging folder; a file-system error names the path ("cannot write
// <what>") and the fix. Returns the page's path and size.
std::pair<std::string, size_t> publish_page(const std::filesystem::path& dir, const std::string& page_name, const std::string& what,
                                            const std::vector<Entry>& figures,
                                            const std::function<std::string(const std::filesystem::path& staging)>& make_page,
                                            const PageSource& source = {});

}  // namespace ctxsim::report
