// `ctxsim collect SWEEP_DIR`: one CSV row per (point, rule, layer, head) with the headline
// statistics of every complete store under the folder, next to their chance rates, for plotting.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "pipeline/commands.h"
#include "pipeline/comm.h"
#include "pipeline/hdf5.h"
#include "pipeline/log.h"
#include "pipeline/store.h"
#include "stages/accumulator.h"
#include "stages/error.h"

namespace fs = std::filesystem;

namespace ctxsim {
namespace {

std::vector<int64_t> read_i64(hid_t g, const std::string& name) { return h5::read_all<int64_t>(g, name, H5T_NATIVE_INT64); }


double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

int cmd_collect(const std::string& dir, const std::string& out_path, std::ostream& out) {
  if (!fs::is_directory(dir)) throw Error(dir, "not a folder", "give the sweep's folder: output.dir/<sweep name>");
  ensure_mpi();
  std::vector<fs::path> stores;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() == "store.h5") stores.push_back(e.path());
  std::sort(stores.begin(), stores.end());
  const std::string target = out_path.empty() ? (fs::path(dir) / "collect.csv").string() : out_path;
  std::ostringstream csv;
  csv << "point,rule,layer,head,samples,high_pairs,mean_distance,short_range_share,short_range_chance,long_range_share,"
         "long_range_chance,same_sentence_rate,same_sentence_chance,same_sentence_lift,repetition_rate,repetition_chance,"
         "repetition_lift,in_attention_rate,in_attention_chance,separator_mass,noise_share,top_anchor,top_anchor_samples\n";
  csv << std::setprecision(6);
  int64_t used = 0, rows = 0;
  for (const auto& path : stores) {
    const std::string point = fs::relative(path.parent_path(), dir).string();
    const StoreInfo info = inspect_store(path.string());
    if (!info.complete) {
      log_info("collect: skipping " + path.string() + " (not complete; rerun its point to finish it)");
      continue;
    }
    const h5::Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, ("open " + path.string()).c_str());
    const h5::Id stats = h5::open_group(file, "stats"), base = h5::open_group(stats, "baseline");
    const int64_t samples = read_i64(base, "samples")[0];
    const double valid = double(read_i64(base, "valid_pairs")[0]);
    const auto dist_all = read_i64(base, "distance_all");
    const double ss_all = double(read_i64(base, "same_sentence_all")[0]), el_all = double(read_i64(base, "sentence_eligible_all")[0]);
    const double st_all = double(read_i64(base, "same_token_all")[0]);
    const auto vocab = store_vocab(file);
    const int64_t T = int64_t(dist_all.size());
    double short_all = 0, long_all = 0;
    for (int64_t d = 0; d < T; ++d) {
      if (d <= 5) short_all += double(dist_all[size_t(d)]);
      if (d >= 32) long_all += double(dist_all[size_t(d)]);
    }
    for (const auto& rule : store_rules(stats)) {
      const h5::Id g = h5::open_group(stats, rule);
      const auto shape = h5::dims_of(h5::Id(H5Dopen2(g, "high_pairs", H5P_DEFAULT), H5Dclose, "high_pairs"));
      const int64_t H = int64_t(shape[1]), LH = int64_t(shape[0]) * H;
      const auto ha_all = read_i64(g, "high_attention_all");
      const auto sep = read_i64(g, "separator_mass");
      const auto hp = read_i64(g, "high_pairs"), hist = read_i64(g, "distance_hist"), ss = read_i64(g, "same_sentence"),
                 el = read_i64(g, "sentence_eligible"), st = read_i64(g, "same_token"), ia = read_i64(g, "in_attention"),
                 noise = read_i64(g, "noise"), anchors = read_i64(g, "anchor_counts");
      const int64_t V = int64_t(anchors.size()) / LH;
      for (int64_t lh = 0; lh < LH; ++lh) {
        const double pairs = double(hp[size_t(lh)]);
        double mean = 0, shortr = 0, longr = 0;
        for (int64_t d = 0; d < T; ++d) {
          const double n = double(hist[size_t(lh * T + d)]);
          mean += double(d) * n;
          if (d <= 5) shortr += n;
          if (d >= 32) longr += n;
        }
        const int64_t* row = &anchors[size_t(lh * V)];
        const int64_t top = int64_t(std::max_element(row, row + V) - row);
        const double ss_rate = ratio(double(ss[size_t(lh)]), double(el[size_t(lh)]));
        const double st_rate = ratio(double(st[size_t(lh)]), pairs);
        csv << csv_field(point) << "," << csv_field(rule) << "," << lh / H << "," << lh % H << "," << samples << "," << int64_t(pairs)
            << "," << ratio(mean, pairs) << "," << ratio(shortr, pairs) << "," << ratio(short_all, valid) << "," << ratio(longr, pairs)
            << "," << ratio(long_all, valid) << "," << ss_rate << "," << ratio(ss_all, el_all) << "," << ratio(ss_rate, ratio(ss_all, el_all))
            << "," << st_rate << "," << ratio(st_all, valid) << "," << ratio(st_rate, ratio(st_all, valid)) << ","
            << ratio(double(ia[size_t(lh)]), pairs) << "," << ratio(double(ha_all[size_t(lh)]), valid) << ","
            << ratio(double(sep[size_t(lh)]) / kFixedPointScale, double(samples)) << "," << ratio(double(noise[size_t(lh)]), pairs) << ","
            << csv_field(row[top] > 0 && top < int64_t(vocab.size()) ? vocab[size_t(top)] : "") << "," << row[top] << "\n";
        ++rows;
      }
    }
    ++used;
  }
  if (used == 0)
    throw Error(dir, "no complete store.h5 under this folder (" + std::to_string(stores.size()) + " found)",
                "run the sweep's points first (ctxsim run CONFIG, or ctxsim submit CONFIG)");
  std::ofstream(target) << csv.str();
  out << "collect: " << rows << " rows from " << used << " store(s) into " << target << "\n";
  return 0;
}

}  // namespace ctxsim
