// report.html: one self-contained page (no network: figures and data embedded) with the explorer
// of the stored examples, the figures, the top-anchor table and the summary, within a byte budget.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/report/report_figures.h"

namespace ctxsim::report {

// The page. figure_dir holds the figures' PNGs; rollouts[e] is example e's rollout; summary is
// the store's printed summary. The examples are read again from `file`, one at a time, pooled
// coarser until the page fits max_bytes. Throws ctxsim::Error when it cannot fit.
std::string report_page(hid_t file, const StoreData& d, const std::vector<Entry>& figures, const std::string& figure_dir,
                        const std::vector<std::vector<double>>& rollouts, const std::string& summary, int64_t max_bytes);

}  // namespace ctxsim::report
