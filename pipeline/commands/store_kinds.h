// The store kinds as rows: what summary, report, compare, status (and validate) and collect do
// with the store of each job (run, segment, prune). A command opens the store, asks store_kind()
// for its row and calls the row; no command tests a store's kind itself. A new store-writing job
// adds its row here, next to its functions.
#pragma once
#include <hdf5.h>

#include <iosfwd>
#include <string>
#include <vector>

#include "pipeline/commands/commands.h"
#include "pipeline/commands/summary.h"
#include "pipeline/report/report_figures.h"

namespace ctxsim {

struct StoreKind {
  const char* job;   // the store's `kind` attribute: the command that writes it
  const char* noun;  // in messages: "a <noun> store"
  // status: reads what every reader reads with all their checks; returns what it holds, in a few words.
  std::string (*verify)(hid_t file, const std::string& path);
  void (*summary)(hid_t file, const std::string& path, const SummaryOptions& options, std::ostream& out);
  int (*report)(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
  // The comparison page of stores of this kind (checked to be of one kind already).
  int (*compare)(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);
  const char* collect_refusal;  // nullptr: collect gathers its rows (a sweep's); else the fix: what to do with it instead
};

const std::vector<StoreKind>& store_kinds();
// The row of a complete store opened by the caller (its `kind` attribute); a kind this ctxsim does
// not know is an error naming the file.
const StoreKind& store_kind(hid_t file, const std::string& path);

// The rows' functions, with their commands (report.cpp, compare.cpp).
int run_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int segment_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int prune_report(hid_t file, const std::string& path, const ReportArgs& args, std::ostream& out);
int run_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);
int segment_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);
int prune_compare(const std::vector<std::string>& paths, const CompareArgs& args, const report::PageSource& source, std::ostream& out);

}  // namespace ctxsim
