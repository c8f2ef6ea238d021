// The readable side of a segmentation store: each method's mean Pk and WindowDiff per subset,
// the best layer of each model-derived method (chosen on the dev documents), and the summary
// table that `ctxsim summary`, the end of `ctxsim segment`, the report and compare print.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "pipeline/store/segment_store.h"

namespace ctxsim {

// A segmentation store's means: per method and subset, and per head and subset.
struct SegmentTable {
  std::vector<std::string> subsets, methods;
  std::vector<int64_t> documents;                                // [S] documents per subset
  std::vector<double> pk, window_diff;                           // [M, S] mean over the subset's documents
  std::vector<double> head_pk;                                   // [L * H, S]
  size_t dev = 0;                                                // the subset the best layer is chosen on
  double pk_of(const std::string& method, size_t subset) const;  // -1 when there is no such method
  size_t first_test() const;                                     // the first subset that is not dev (Choi's 3-11), or 0
  std::string best_layer_method(const std::string& method, int64_t layers) const;
};
SegmentTable segment_table(const SegmentResults& results);
void print_segment_summary(const SegmentResults& results, std::ostream& out);

}  // namespace ctxsim
