#include "pipeline/commands/store_kinds.h"

#include "pipeline/report/report_data.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store_file.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {

// A run store is complete when the statistics' readers and the report's (its samples and
// examples) take it: status never vouches for a store they would refuse.
std::string verify_run(hid_t file, const std::string& path) {
  const std::string holds = verify_run_store(file, path);
  (void)report::load_store_data(file, path, "");
  return holds;
}

std::string verify_segment(hid_t file, const std::string&) {
  const SegmentResults r = read_segment_store(file);
  return "segmentation store: " + std::to_string(r.layout.documents) + " documents, " + std::to_string(r.layout.methods.size()) +
         " methods, " + std::to_string(r.layout.layers) + " layers x " + std::to_string(r.layout.heads) + " heads";
}

std::string verify_prune(hid_t file, const std::string& path) {
  const PruneStoreData d = read_prune_store(file, path);
  return "pruning store: " + std::to_string(d.layout.layers) + " layers x " + std::to_string(d.layout.heads) + " heads, " +
         std::to_string(d.curve_orders.size()) + " curves";
}

void segment_summary(hid_t file, const std::string&, const SummaryOptions&, std::ostream& out) {
  print_segment_summary(read_segment_store(file), out);
}

const std::vector<StoreKind>& store_kinds() {
  static const std::vector<StoreKind> rows = [] {
    std::vector<StoreKind> kinds;
    for (const JobRow& job : job_rows())
      if (job.writes_store) {
        kinds.push_back(job.store);
        kinds.back().job = job.name;
      }
    return kinds;
  }();
  return rows;
}

const StoreKind& store_kind(hid_t file, const std::string& path) {
  const std::string job = store_job(file);
  std::vector<std::string> known;
  for (const StoreKind& k : store_kinds()) {
    if (job == k.job) return k;
    known.push_back(k.job);
  }
  throw Error(path, "its kind attribute is '" + job + "', and this ctxsim reads the stores of " + join(known, ", "), h5::kNotAStoreFix);
}

int print_summary(const std::string& path, const SummaryOptions& options, std::ostream& out) {
  const h5::FileScope scope(path);
  const h5::Id file = open_complete_store(path);
  store_kind(file, path).summary(file, path, options, out);
  return 0;
}

}  // namespace ctxsim
