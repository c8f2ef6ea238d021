// The store kinds as rows: what summary, report, compare, status (and validate) and collect do
// with the store of each job (run, segment, prune): the `store` of the job table's rows that write
// one (job_shell.h). A command opens the store, asks store_kind() for its row and calls the row;
// no command tests a store's kind itself.
#pragma once
#include <hdf5.h>

#include <iosfwd>
#include <string>
#include <vector>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/job_shell.h"
#include "pipeline/commands/summary.h"
#include "pipeline/report/report_figures.h"

namespace ctxsim {

const std::vector<StoreKind>& store_kinds();
// The row of a complete store opened by the caller (its `kind` attribute); a kind this ctxsim does
// not know is an error naming the file.
const StoreKind& store_kind(hid_t file, const std::string& path);

// The rows' functions, with their commands (store_kinds.cpp, report.cpp, compare.cpp).
std::string verify_run(hid_t file, const std::string& path);
std::string verify_segment(hid_t file, const std::string& path);
std::string verify_prune(hid_t file, const std::string& path);
void segment_summary(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out);
int run_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int segment_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int prune_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int run_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);
int segment_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);
int prune_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);

}  // namespace ctxsim
