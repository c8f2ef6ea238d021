#include "pipeline/store/store_reader.h"

#include <algorithm>
#include <numeric>

#include "pipeline/store/hdf5.h"
#include "stages/accumulator.h"
#include "stages/error.h"
#include "stages/files.h"

namespace ctxsim {
namespace {

double sum_range(const std::vector<double>& v, int64_t lo, int64_t hi) {
  double s = 0;
  for (int64_t d = std::max<int64_t>(0, lo); d < std::min<int64_t>(hi, int64_t(v.size())); ++d) s += v[size_t(d)];
  return s;
}

}  // namespace

template <class T>
std::vector<T> read_checked(hid_t file, const std::string& store, const std::string& path, hid_t mem_type,
                            const std::vector<long long>& shape, std::vector<hsize_t>* dims_out) {
  if (!h5::exists(file, path)) throw Error(store, "missing dataset /" + path, kDamagedStoreFix);
  const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  const auto dims = h5::dims_of(ds);
  bool ok = dims.size() == shape.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = shape[i] < 0 || hsize_t(shape[i]) == dims[i];
  if (!ok) {
    const std::string got = join_each(dims, [](hsize_t d) { return std::to_string(d); }, ",");
    const std::string want = join_each(shape, [](long long d) { return d < 0 ? std::string("*") : std::to_string(d); }, ",");
    throw Error(store, "/" + path + " has shape [" + got + "], expected [" + want + "]", kDamagedStoreFix);
  }
  if (dims_out) *dims_out = dims;
  const size_t parent = path.rfind('/');
  if (parent == std::string::npos) return h5::read_all<T>(file, path, mem_type);
  return h5::read_all<T>(h5::open_group(file, path.substr(0, parent)), path.substr(parent + 1), mem_type);
}

template std::vector<int64_t> read_checked(hid_t, const std::string&, const std::string&, hid_t, const std::vector<long long>&, std::vector<hsize_t>*);
template std::vector<int32_t> read_checked(hid_t, const std::string&, const std::string&, hid_t, const std::vector<long long>&, std::vector<hsize_t>*);
template std::vector<int16_t> read_checked(hid_t, const std::string&, const std::string&, hid_t, const std::vector<long long>&, std::vector<hsize_t>*);

double Counts::mean_distance() const {
  double m = 0;
  for (size_t d = 0; d < distance.size(); ++d) m += double(d) * distance[d];
  return ratio(m, pairs);
}

int64_t Counts::median_distance() const {
  double cum = 0;
  for (size_t d = 0; d < distance.size(); ++d) {
    cum += distance[d];
    if (cum * 2 >= pairs) return int64_t(d);
  }
  return 0;
}

double Counts::short_range() const { return ratio(sum_range(distance, 0, kShortRange + 1), pairs); }
double Counts::long_range() const { return ratio(sum_range(distance, kLongRange, int64_t(distance.size())), pairs); }

double Baseline::short_range_chance() const {
  const std::vector<double> d(distance_all.begin(), distance_all.end());
  return Counts::ratio(sum_range(d, 0, kShortRange + 1), valid_pairs);
}

double Baseline::long_range_chance() const {
  const std::vector<double> d(distance_all.begin(), distance_all.end());
  return Counts::ratio(sum_range(d, kLongRange, T()), valid_pairs);
}

Counts RuleStats::head(int64_t l, int64_t h) const {
  Counts c;
  const size_t i = size_t(l * H + h);
  c.pairs = double(high_pairs[i]);
  c.same_sentence = double(same_sentence[i]);
  c.eligible = double(sentence_eligible[i]);
  c.same_token = double(same_token[i]);
  c.in_attention = double(in_attention[i]);
  c.noise = double(noise[i]);
  c.high_attention_all = double(high_attention_all[i]);
  c.separator_mass = double(separator_mass[i]) / kFixedPointScale;
  c.heads = 1;
  c.distance.assign(distance_hist.begin() + long(i * size_t(T)), distance_hist.begin() + long((i + 1) * size_t(T)));
  return c;
}

Counts RuleStats::layer(int64_t l) const {
  Counts c;
  c.distance.assign(size_t(T), 0.0);
  for (int64_t h = 0; h < H; ++h) {
    const Counts x = head(l, h);
    c.pairs += x.pairs, c.same_sentence += x.same_sentence, c.eligible += x.eligible, c.same_token += x.same_token;
    c.in_attention += x.in_attention, c.noise += x.noise, c.high_attention_all += x.high_attention_all;
    c.separator_mass += x.separator_mass, c.heads += 1;
    for (int64_t d = 0; d < T; ++d) c.distance[size_t(d)] += x.distance[size_t(d)];
  }
  return c;
}

std::vector<int64_t> RuleStats::top_anchors(int64_t l, int64_t h, int64_t n) const {
  const int64_t* row = &anchor_counts[size_t((l * H + h) * V)];
  std::vector<int64_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  n = std::min(n, V);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int64_t a, int64_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  ids.resize(size_t(n));
  while (!ids.empty() && row[ids.back()] <= 0) ids.pop_back();
  return ids;
}

Baseline read_baseline(hid_t file, const std::string& store) {
  Baseline b;
  const auto path = [](Stat s) { return std::string("stats/baseline/") + stat_info(s).name; };
  const auto scalar = [&](Stat s) { return read_checked<int64_t>(file, store, path(s), H5T_NATIVE_INT64, {})[0]; };
  b.samples = scalar(Stat::Samples);
  b.valid_pairs = double(scalar(Stat::ValidPairs));
  b.same_sentence_all = double(scalar(Stat::SameSentenceAll));
  b.sentence_eligible_all = double(scalar(Stat::SentenceEligibleAll));
  b.same_token_all = double(scalar(Stat::SameTokenAll));
  b.distance_all = read_checked<int64_t>(file, store, path(Stat::DistanceAll), H5T_NATIVE_INT64, {-1});
  if (b.T() < 2) throw Error(store, "/stats/baseline/distance_all holds fewer than 2 positions", kDamagedStoreFix);
  if (h5::exists(file, path(Stat::SeparatorMassByToken))) {
    std::vector<hsize_t> dims;
    b.separator_mass_by_token = read_checked<int64_t>(file, store, path(Stat::SeparatorMassByToken), H5T_NATIVE_INT64, {-1, -1, -1}, &dims);
    const h5::Id att = h5::open_group(file, "stats/attention");
    const std::string tokens = h5::get_attr_string(att, "separator_tokens");
    b.separator_tokens = tokens.empty() ? std::vector<std::string>{} : split_lines(tokens);
    if (b.separator_tokens.size() != dims[2])
      throw Error(store, "/stats/attention names " + std::to_string(b.separator_tokens.size()) + " separator tokens, " +
                             path(Stat::SeparatorMassByToken) + " holds " + std::to_string(dims[2]), kDamagedStoreFix);
    b.separator_heads = int64_t(dims[1]);
  }
  return b;
}

double Baseline::separator_token_attention(int64_t layer, int64_t head, size_t u) const {
  const int64_t S = int64_t(separator_tokens.size()), H = separator_heads;
  double sum = 0;
  for (int64_t h = head < 0 ? 0 : head; h < (head < 0 ? H : head + 1); ++h)
    sum += double(separator_mass_by_token[size_t((layer * H + h) * S + int64_t(u))]) / kFixedPointScale;
  return Counts::ratio(sum, double(samples) * double(head < 0 ? H : 1));
}

RuleStats read_rule_stats(hid_t file, const std::string& store, const std::string& rule, const Baseline& base, int64_t vocab_tokens) {
  RuleStats r;
  r.name = rule;
  const std::string g = "stats/" + rule + "/";
  if (!h5::exists(file, "stats/" + rule)) throw Error(store, "missing group /stats/" + rule + " (named in /stats rules)", kDamagedStoreFix);
  const auto path = [&](Stat s) { return g + stat_info(s).name; };
  std::vector<hsize_t> dims;
  r.high_pairs = read_checked<int64_t>(file, store, path(Stat::HighPairs), H5T_NATIVE_INT64, {-1, -1}, &dims);
  r.L = int64_t(dims[0]), r.H = int64_t(dims[1]);
  r.T = base.T();
  if (r.L <= 0 || r.H <= 0) throw Error(store, "/" + path(Stat::HighPairs) + " holds no layers or heads", kDamagedStoreFix);
  const long long L = r.L, H = r.H;
  for (auto [s, v] : std::initializer_list<std::pair<Stat, std::vector<int64_t>*>>{
           {Stat::SameSentence, &r.same_sentence}, {Stat::SentenceEligible, &r.sentence_eligible}, {Stat::SameToken, &r.same_token},
           {Stat::InAttention, &r.in_attention}, {Stat::Noise, &r.noise}, {Stat::HighAttentionAll, &r.high_attention_all},
           {Stat::SeparatorMass, &r.separator_mass}})
    *v = read_checked<int64_t>(file, store, path(s), H5T_NATIVE_INT64, {L, H});
  r.distance_hist = read_checked<int64_t>(file, store, path(Stat::DistanceHist), H5T_NATIVE_INT64, {L, H, (long long)r.T});
  r.distinct_anchors = read_checked<int64_t>(file, store, path(Stat::DistinctAnchors), H5T_NATIVE_INT64, {L});
  // V is the model's vocab_size, which may exceed the vocabulary's lines (models pad it).
  r.anchor_counts = read_checked<int64_t>(file, store, path(Stat::AnchorCounts), H5T_NATIVE_INT64, {L, H, -1}, &dims);
  r.V = int64_t(dims[2]);
  if (r.V < vocab_tokens)
    throw Error(store, "/" + path(Stat::AnchorCounts) + " counts " + std::to_string(r.V) + " token ids but /vocab holds " +
                           std::to_string(vocab_tokens) + " tokens", kDamagedStoreFix);
  return r;
}

}  // namespace ctxsim
