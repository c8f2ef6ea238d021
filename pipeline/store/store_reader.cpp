#include "pipeline/store/store_reader.h"

#include <algorithm>
#include <numeric>

#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/limits.h"
#include "stages/model/family.h"
#include "stages/stats/accumulator.h"

namespace ctxsim {
size_t StoreStats::rule_index(const std::string& rule) const {
  const auto it = std::find(rules.begin(), rules.end(), rule);
  if (it == rules.end()) throw Error("--rule " + rule, "the store has no such selection rule", "pick one of: " + join(rules));
  return size_t(it - rules.begin());
}

namespace {

// Extents a reader accepts before it allocates anything (far above any model or sample).
constexpr int64_t kMaxLayersOrHeads = kLayersOrHeads.hi, kMaxRules = 4096, kMaxSeparators = 4096, kMaxVocab = int64_t(1) << 24;

int64_t extent(hid_t file, const std::string& store, const std::string& path, size_t rank, size_t axis, int64_t lo, int64_t hi) {
  if (!h5::exists(file, path)) throw Error(store, "missing dataset /" + path, kDamagedStoreFix);
  const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  const auto dims = h5::dims_of(ds);
  if (dims.size() != rank || int64_t(dims[axis]) < lo || int64_t(dims[axis]) > hi)
    throw Error(store,
                "/" + path + " has shape [" +
                    join_each(
                        dims, [](hsize_t d) { return std::to_string(d); }, ",") +
                    "], not the " + std::to_string(rank) + "-D shape whose axis " + std::to_string(axis) + " is in [" + std::to_string(lo) +
                    ", " + std::to_string(hi) + "]",
                kDamagedStoreFix);
  return int64_t(dims[axis]);
}

}  // namespace

std::string StoreModel::describe() const { return display + (causal ? ", causal attention" : ", bidirectional attention"); }

StoreModel read_store_model(hid_t file, const std::string& store) {
  StoreModel m;
  if (!h5::has_attr(file, "model_family")) return m;
  m.family = h5::get_attr_string(file, "model_family");
  const FamilySpec* f = family_by_model_type(m.family);
  if (!f)
    throw Error(store, "its model_family attribute names no model family ctxsim reads (" + supported_model_types() + ")", kDamagedStoreFix);
  m.display = f->display;
  const int64_t causal = h5::get_attr_int(file, "causal");
  if (causal != 0 && causal != 1)
    throw Error(store, "its causal attribute is " + std::to_string(causal) + ", not 0 or 1", kDamagedStoreFix);
  m.causal = causal == 1;
  return m;
}

StoreStats read_store_stats(hid_t file, const std::string& store, int64_t vocab_tokens) {
  StoreStats out;
  for (const char* group : {"stats", "stats/baseline"})
    if (!h5::exists(file, group)) throw Error(store, std::string("missing group /") + group, kDamagedStoreFix);
  const int64_t version = effective_schema_version(file);
  out.schema_version = version;
  out.rules = store_rules(h5::open_group(file, "stats"));
  if (out.rules.empty() || int64_t(out.rules.size()) > kMaxRules)
    throw Error(store, "/stats lists " + std::to_string(out.rules.size()) + " selection rules", kDamagedStoreFix);
  for (const auto& r : out.rules)
    if (r.empty() || !h5::exists(file, "stats/" + r))
      throw Error(store, "missing group /stats/" + r + " (named in /stats rules)", kDamagedStoreFix);
  // The store's extents, from the datasets that carry them; every other dataset must agree.
  const std::string first = "stats/" + out.rules[0] + "/";
  StatsShape shape;
  shape.rules = int64_t(out.rules.size());
  shape.seq_len = extent(file, store, "stats/baseline/distance_all", 1, 0, 2, kSeqLen.hi);
  shape.layers = extent(file, store, first + "high_pairs", 2, 0, 1, kMaxLayersOrHeads);
  shape.heads = extent(file, store, first + "high_pairs", 2, 1, 1, kMaxLayersOrHeads);
  // V is the model's vocab_size, which may exceed the vocabulary's lines (models pad it).
  shape.vocab = extent(file, store, first + "anchor_counts", 3, 2, std::max<int64_t>(1, vocab_tokens), kMaxVocab);
  if (h5::exists(file, "stats/attention") && h5::has_attr(h5::open_group(file, "stats/attention"), "separator_tokens")) {
    const std::string tokens = h5::get_attr_string(h5::open_group(file, "stats/attention"), "separator_tokens");
    out.separator_tokens = tokens.empty() ? std::vector<std::string>{} : split_lines(tokens);
    out.has_separator_tokens = true;
    if (int64_t(out.separator_tokens.size()) > kMaxSeparators)
      throw Error(store, "/stats/attention names " + std::to_string(out.separator_tokens.size()) + " separator tokens", kDamagedStoreFix);
  }
  shape.separators = int64_t(out.separator_tokens.size());
  out.acc = Accumulator(shape);
  for (const auto& f : out.acc.fields()) {
    const std::vector<long long> want(f.dims.begin(), f.dims.end());
    for (int64_t r = 0; r < (f.per_rule() ? shape.rules : 1); ++r) {
      const std::string path = (f.per_rule() ? "stats/" + out.rules[size_t(r)] : std::string("stats/baseline")) + "/" + f.name();
      // A store older than a statistic lacks it (and its digest leaves it out): read as zeros.
      if (version < f.info->since) continue;
      const std::vector<int64_t> v = h5::read_checked<int64_t>(file, store, path, want);
      std::copy(v.begin(), v.end(), out.acc.at(f.info->id, r));
    }
  }
  // A digest that is there is checked whatever schema_version says, and from schema 2
  // (statistics) and 3 (labels) on each must be there (effective_schema_version: editing the
  // version back does not turn a check off).
  if (version >= 2 && h5::get_attr_string(file, "stats_sha256") != out.acc.digest(version))
    throw Error(store, "its statistics do not match the SHA-256 written with them (stats_sha256): the file changed after ctxsim wrote it",
                kDamagedStoreFix);
  if (version >= 3 || h5::has_attr(file, "labels_sha256")) {
    const h5::Id stats = h5::open_group(file, "stats");
    const bool attention = h5::exists(file, "stats/attention");
    const h5::Id att = attention ? h5::open_group(file, "stats/attention") : h5::Id();
    const auto text = [&](const char* name) {
      return attention && h5::has_attr(att, name) ? h5::get_attr_string(att, name) : std::string();
    };
    if (h5::get_attr_string(file, "labels_sha256") !=
        labels_digest(h5::get_attr_string(stats, "rules"), text("separators"), text("separator_tokens")))
      throw Error(store,
                  "its labels (the rule names in /stats, the separators in /stats/attention) do not match the SHA-256 written with them "
                  "(labels_sha256): the file changed after ctxsim wrote it",
                  kDamagedStoreFix);
  }
  if (const auto bad = check_invariants(out.acc); !bad.empty())
    throw Error(store, "its statistics break an invariant (" + bad.front() + ")", kDamagedStoreFix);
  return out;
}

std::string verify_run_store(hid_t file, const std::string& path) {
  const auto vocab = store_vocab(file);
  const StoreStats s = read_store_stats(file, path, int64_t(vocab.size()));
  const StatsShape& shape = s.acc.shape();
  return "run store: " + std::to_string(*s.acc.at(Stat::Samples)) + " samples, " + std::to_string(shape.layers) + " layers x " +
         std::to_string(shape.heads) + " heads, " + std::to_string(shape.rules) + " rule(s)";
}

Baseline baseline_of(const StoreStats& st) {
  const Accumulator& a = st.acc;
  Baseline b;
  for (const auto& f : a.fields())
    if (!f.per_rule() && f.size == 1 && f.dims.empty()) b.value[size_t(f.info->id)] = double(*a.at(f.info->id));
  const StatField& d = a.field(Stat::DistanceAll);
  b.distance_all.assign(a.at(Stat::DistanceAll), a.at(Stat::DistanceAll) + d.size);
  if (st.has_separator_tokens) {
    const StatField& m = a.field(Stat::SeparatorMassByToken);
    b.separator_tokens = st.separator_tokens;
    b.separator_mass_by_token.assign(a.at(Stat::SeparatorMassByToken), a.at(Stat::SeparatorMassByToken) + m.size);
    b.separator_heads = a.shape().heads;
  }
  return b;
}

UnitSums read_unit_sums(hid_t file, const std::string& store, const StoreStats& st, size_t rule) {
  UnitSums out;
  if (!h5::exists(file, "units")) return out;
  const Accumulator& a = st.acc;
  const std::string group = "units/" + st.rules.at(rule) + "/", base = "units/baseline/";
  // Every dataset's first axis: the units; at least one, at most one a sample.
  const int64_t samples = *a.at(Stat::Samples);
  const int64_t U = extent(file, store, base + "samples", 1, 0, 1, std::max<int64_t>(1, samples));
  out.stats.resize(size_t(U));
  out.base.resize(size_t(U));
  for (int64_t u = 0; u < U; ++u) {
    RuleStats& s = out.stats[size_t(u)];
    s.name = st.rules.at(rule), s.L = a.shape().layers, s.H = a.shape().heads, s.T = a.shape().seq_len, s.V = 0;
  }
  for (const auto& f : a.fields()) {
    if (!kept_per_unit(*f.info)) continue;
    if (st.schema_version < f.info->since) {  // the store predates it: zeros, as its totals
      if (f.per_rule())
        for (RuleStats& s : out.stats) s.data[size_t(f.info->id)].assign(f.size, 0);
      continue;
    }
    std::vector<long long> shape = {U};
    shape.insert(shape.end(), f.dims.begin(), f.dims.end());
    const std::string path = (f.per_rule() ? group : base) + f.name();
    const std::vector<int64_t> v = h5::read_checked<int64_t>(file, store, path, shape);
    const int64_t* total = f.per_rule() ? a.at(f.info->id, int64_t(rule)) : a.at(f.info->id);
    // Counts and masses are never negative, and no replicate of the bootstrap (up to U times a
    // total) may overflow: anything else is not a store ctxsim wrote.
    std::vector<int64_t> sum(f.size, 0);
    bool bad = false;
    for (size_t i = 0; i < f.size; ++i) {
      int64_t most = 0;
      bad = bad || __builtin_mul_overflow(total[i], U, &most);
    }
    for (int64_t u = 0; u < U; ++u) {
      const int64_t* row = v.data() + size_t(u) * f.size;
      for (size_t i = 0; i < f.size; ++i) bad = bad || row[i] < 0 || __builtin_add_overflow(sum[i], row[i], &sum[i]);
      if (f.per_rule()) {
        out.stats[size_t(u)].data[size_t(f.info->id)].assign(row, row + f.size);
      } else if (f.dims.empty()) {
        out.base[size_t(u)].value[size_t(f.info->id)] = double(row[0]);
      } else if (f.info->id == Stat::DistanceAll) {
        out.base[size_t(u)].distance_all.assign(row, row + f.size);
      }
    }
    if (bad || !std::equal(sum.begin(), sum.end(), total))
      throw Error(store, "/" + path + ": its units do not add up to /stats (the per-unit sums and the totals disagree)", kDamagedStoreFix);
  }
  return out;
}

Intervals store_intervals(hid_t file, const std::string& store, const StoreStats& stats, size_t rule) {
  return bootstrap_intervals(read_unit_sums(file, store, stats, rule));
}

RuleStats rule_stats_of(const StoreStats& st, size_t rule) {
  const Accumulator& a = st.acc;
  RuleStats out;
  out.name = st.rules.at(rule);
  out.L = a.shape().layers, out.H = a.shape().heads, out.T = a.shape().seq_len, out.V = a.shape().vocab;
  for (const auto& f : a.fields())
    if (f.per_rule()) out.data[size_t(f.info->id)].assign(a.at(f.info->id, int64_t(rule)), a.at(f.info->id, int64_t(rule)) + f.size);
  return out;
}

}  // namespace ctxsim
