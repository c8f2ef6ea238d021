// The report's figures, each described once as SVG (stages/figure.h): the study's aggregate
// figures of one rule, and per stored example its attention, similarity and rollout.
#pragma once
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/report/report_data.h"
#include "stages/figure.h"

namespace ctxsim::report {

// A figure and where it goes: figures/<stem>.svg and .png, with its caption.
struct Entry {
  std::string stem, caption;
  Figure figure;
};

// The study's aggregate figures, appended to `out`.
void aggregate_figures(const StoreData& d, std::vector<Entry>& out);

// Example e's figures: attention and similarity of the chosen heads with the selected and the
// high-attention pairs overlaid, the rollout `roll` [n, n] and the [CLS] relevance bars.
void example_figures(const StoreData& d, const Example& x, size_t e, const std::vector<double>& roll,
                     const std::vector<std::pair<int, int>>& heads, std::vector<Entry>& figures);

// Writes every figure (SVG and PNG) and index.json into `dir`: each figure's caption and the
// pixel rectangles of its plot areas (so that tests and tools find a cell's or a curve's pixels).
void write_figures(const std::vector<Entry>& figures, const std::filesystem::path& dir);

// Publishes a page and its figures in `dir` so that a reader never sees a mix of old and new:
// the figures go to dir/figures.partial, make_page(that folder) builds the page (it may embed
// them), then the figures replace dir/figures and the page, written last, replaces
// dir/page_name. A failure leaves no staging folder; a file-system error names the path
// ("cannot write <what>") and the fix. Returns the page's path and size in bytes.
std::pair<std::string, size_t> publish_page(const std::filesystem::path& dir, const std::string& page_name, const std::string& what,
                                            const std::vector<Entry>& figures,
                                            const std::function<std::string(const std::filesystem::path& staging)>& make_page);

}  // namespace ctxsim::report
