// The figures and page of segmentation stores (`ctxsim segment`): for one store (the report) its
// example document's sentence similarity with the gold boundaries and the methods' predictions,
// Pk by layer, and the method table as bars; for several (compare: trained vs init vs another
// seed) Pk by layer of each run and every run's methods side by side.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/report/report_figures.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"

namespace ctxsim::report {

struct SegmentRun {
  std::string label, path;
  SegmentResults results;
  SegmentTable table;
  Rgb colour;
};

// Reads each store (which must be segmentation stores with the same layer count and subsets).
std::vector<SegmentRun> load_segment_runs(const std::vector<std::string>& paths, const std::vector<std::string>& labels);
// One run: the example, Pk by layer, the methods. Several: Pk by layer and the methods, all runs.
std::vector<Entry> segment_figures(const std::vector<SegmentRun>& runs);
// `page` when it is at most max_bytes, else an Error naming the page and its size (--max-bytes).
std::string within_budget(std::string page, int64_t max_bytes, const std::string& name);
// A self-contained page: the summary tables (escaped) and the figures (a segmentation or a
// pruning store, compare of segmentations).
std::string summary_page(const std::string& title, const std::string& summary, const std::vector<Entry>& figures);

}  // namespace ctxsim::report
