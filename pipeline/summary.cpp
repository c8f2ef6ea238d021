// `ctxsim summary STORE`: per-layer tables of the headline statistics next to their chance
// baselines, read back from the store (so it works on any finished or copied store).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "pipeline/hdf5.h"
#include "pipeline/run.h"
#include "pipeline/store.h"
#include "stages/accumulator.h"
#include "stages/error.h"

namespace ctxsim {
namespace {

std::vector<int64_t> read_i64(hid_t g, const std::string& name) { return h5::read_all<int64_t>(g, name, H5T_NATIVE_INT64); }

std::string pct(double num, double den) {
  if (den <= 0) return "  -  ";
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100.0 * num / den;
  return s.str();
}

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}


}  // namespace

int print_summary(const std::string& path, const SummaryOptions& options, std::ostream& out) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error(path, "cannot open as an HDF5 store", "give the store.h5 that 'ctxsim run' wrote");
  }
  const h5::Id file(f, H5Fclose, "H5Fopen");
  const bool complete = h5::has_attr(file, "complete") && h5::get_attr_int(file, "complete") == 1;
  if (!complete)
    throw Error(path, "the store is not complete (the run was interrupted or is still going)", "rerun the same command to finish it");
  const h5::Id stats = h5::open_group(file, "stats");
  const h5::Id base = h5::open_group(stats, "baseline");
  const int64_t samples = read_i64(base, "samples")[0];
  const double valid_pairs = double(read_i64(base, "valid_pairs")[0]);
  const auto distance_all = read_i64(base, "distance_all");
  const double ss_all = double(read_i64(base, "same_sentence_all")[0]);
  const double el_all = double(read_i64(base, "sentence_eligible_all")[0]);
  const double st_all = double(read_i64(base, "same_token_all")[0]);
  const auto vocab = store_vocab(file);
  const int64_t T = int64_t(distance_all.size());
  const auto rule_names = store_rules(stats);
  if (rule_names.empty()) throw Error(path, "the store lists no selection rule", "rerun the job");
  const h5::Id ds(H5Dopen2(stats, (rule_names[0] + "/high_pairs").c_str(), H5P_DEFAULT), H5Dclose, "high_pairs");
  const auto lh = h5::dims_of(ds);
  const int64_t L = int64_t(lh[0]), H = int64_t(lh[1]);

  out << "ctxsim summary of " << path << "\n"
      << "  " << samples << " samples of T=" << T << ", model " << h5::get_attr_string(file, "model_path") << " ("
      << h5::get_attr_string(file, "dtype") << ", " << h5::get_attr_string(file, "vector") << " vectors), " << L << " layers x "
      << H << " heads\n"
      << "  chance (all valid pairs): same-sentence " << pct(ss_all, el_all) << "%, repeated token " << pct(st_all, valid_pairs)
      << "%, distance d<=5 " << pct(std::accumulate(distance_all.begin(), distance_all.begin() + std::min<int64_t>(6, T), 0.0), valid_pairs)
      << "%, d>=32 " << pct(T > 32 ? std::accumulate(distance_all.begin() + 32, distance_all.end(), 0.0) : 0.0, valid_pairs) << "%\n";

  for (const auto& rule : rule_names) {
    const h5::Id g = h5::open_group(stats, rule);
    const auto hp = read_i64(g, "high_pairs"), hist = read_i64(g, "distance_hist"), ss = read_i64(g, "same_sentence"),
               el = read_i64(g, "sentence_eligible"), st = read_i64(g, "same_token"), ia = read_i64(g, "in_attention"),
               noise = read_i64(g, "noise"), anchors = read_i64(g, "anchor_counts"), distinct = read_i64(g, "distinct_anchors");
    const auto high_att_all = read_i64(g, "high_attention_all");
    const auto sep_mass = read_i64(g, "separator_mass");
    const int64_t V = int64_t(anchors.size()) / (L * H);
    out << "\nrule " << rule << "\n"
        << " layer   pairs  dist mean  median  d<=5 %   d>=32 %  same-sent %  lift  repeat lift  in-attn %  distinct  sep-attn  noise %\n";
    for (int64_t l = 0; l < L; ++l) {
      double pairs = 0, s_ss = 0, s_el = 0, s_st = 0, s_ia = 0, s_noise = 0, hia = 0, sep = 0;
      std::vector<double> h(size_t(T), 0.0);
      for (int64_t k = 0; k < H; ++k) {
        const int64_t i = l * H + k;
        pairs += double(hp[i]); s_ss += double(ss[i]); s_el += double(el[i]); s_st += double(st[i]);
        s_ia += double(ia[i]); s_noise += double(noise[i]); hia += double(high_att_all[i]);
        sep += double(sep_mass[i]) / kFixedPointScale;
        for (int64_t d = 0; d < T; ++d) h[size_t(d)] += double(hist[size_t(i * T + d)]);
      }
      double mean = 0, cum = 0;
      int64_t median = 0;
      for (int64_t d = 0; d < T; ++d) mean += double(d) * h[size_t(d)];
      mean = pairs > 0 ? mean / pairs : 0;
      for (int64_t d = 0; d < T; ++d) {
        cum += h[size_t(d)];
        if (cum * 2 >= pairs) { median = d; break; }
      }
      const double short_r = std::accumulate(h.begin(), h.begin() + std::min<int64_t>(6, T), 0.0);
      const double long_r = T > 32 ? std::accumulate(h.begin() + 32, h.end(), 0.0) : 0.0;
      const double lift = (s_el > 0 && ss_all > 0) ? (s_ss / s_el) / (ss_all / el_all) : 0;
      const double rlift = (pairs > 0 && st_all > 0) ? (s_st / pairs) / (st_all / valid_pairs) : 0;
      out << std::setw(6) << l << std::setw(8) << int64_t(pairs) << std::setw(11) << fixed(mean, 1) << std::setw(8) << median
          << std::setw(8) << pct(short_r, pairs) << std::setw(10) << pct(long_r, pairs) << std::setw(13) << pct(s_ss, s_el)
          << std::setw(6) << fixed(lift, 2) << std::setw(13) << fixed(rlift, 2) << std::setw(11) << pct(s_ia, pairs)
          << std::setw(10) << fixed(samples > 0 ? double(distinct[size_t(l)]) / double(samples) : 0, 2) << std::setw(10)
          << fixed(samples > 0 ? sep / double(H) / double(samples) : 0, 3) << std::setw(9) << pct(s_noise, pairs) << "\n";
    }
    out << "  (chance: in-attention " << pct(std::accumulate(high_att_all.begin(), high_att_all.end(), 0.0),
                                             valid_pairs * double(L * H)) << "% of all valid pairs; distinct = mean distinct anchors "
        << "over a sample's " << H << " heads; sep-attn = mean attention mass on separators)\n";
    // Top anchors of chosen heads: by default, per layer the head whose top anchor is most common.
    std::vector<std::pair<int64_t, int64_t>> heads = options.heads;
    if (heads.empty()) {
      for (int64_t l = 0; l < L; ++l) {
        int64_t best_h = 0, best = -1;
        for (int64_t k = 0; k < H; ++k) {
          const int64_t* row = &anchors[size_t((l * H + k) * V)];
          const int64_t m = *std::max_element(row, row + V);
          if (m > best) { best = m; best_h = k; }
        }
        heads.emplace_back(l, best_h);
      }
    }
    out << "  top anchors (token: samples)\n";
    for (const auto& [l, k] : heads) {
      if (l < 0 || l >= L || k < 0 || k >= H) throw Error("--heads", "layer " + std::to_string(l) + " head " + std::to_string(k) +
                                                                         " is outside the model", "use 0-based layer:head within the model");
      const int64_t* row = &anchors[size_t((l * H + k) * V)];
      std::vector<int64_t> ids(static_cast<size_t>(V));
      std::iota(ids.begin(), ids.end(), 0);
      const int64_t top = std::min<int64_t>(options.top, V);
      std::partial_sort(ids.begin(), ids.begin() + top, ids.end(),
                        [&](int64_t a, int64_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
      out << "   L" << l << " H" << k << ":";
      for (int64_t t = 0; t < top && row[ids[size_t(t)]] > 0; ++t)
        out << "  " << (ids[size_t(t)] < int64_t(vocab.size()) ? vocab[size_t(ids[size_t(t)])] : "?") << ": " << row[ids[size_t(t)]];
      out << "\n";
    }
  }
  return 0;
}

}  // namespace ctxsim
