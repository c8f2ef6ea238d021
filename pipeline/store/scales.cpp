// Dimension scales of a store (see scales.h).
#include "pipeline/store/scales.h"

#include <algorithm>

#include "pipeline/store/hdf5.h"
#include "stages/base/files.h"
#include "stages/text/tokenizer.h"

namespace ctxsim {

Scales::Scales(hid_t dxpl, bool writer) : dxpl_(dxpl), writer_(writer) {}

void Scales::numbers(hid_t group, const std::string& name, hsize_t n, const std::string& description, std::vector<int64_t> values) {
  if (values.empty())
    for (hsize_t i = 0; i < n; ++i) values.push_back(int64_t(i));
  const h5::Id ds = make(group, name, h5::Element<int64_t>::file(), n, description, name);
  if (n == 0) return;  // no storage: MPI-IO refuses even an empty collective write
  h5::write_slab(ds, values.data(), {0}, {writer_ ? n : 0}, dxpl_);
}

void Scales::strings(hid_t group, const std::string& name, hsize_t n, size_t width, const std::string& description,
                     const std::vector<std::string>& values) {
  const h5::Id type = h5::fixed_string_type(string_width(width));
  const h5::Id ds = make(group, name, type, n, description, name);
  h5::set_attr(ds, "_Encoding", std::string("utf-8"));  // xarray decodes the bytes to str
  if (values.empty() || n == 0) return;
  const std::string packed = h5::pack_strings(values, H5Tget_size(type));
  h5::write_slab(ds, type, packed.data(), {0}, {writer_ ? n : 0}, dxpl_);
}

void Scales::bare(hid_t group, const std::string& name, hsize_t n, const std::string& description) {
  make(group, name, h5::Element<uint8_t>::file(), n, description, h5::dimension_without_values(n));
}

void Scales::attach(hid_t group, const std::string& name, const std::vector<std::string>& dims) {
  const h5::Id ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, name.c_str());
  for (size_t axis = 0; axis < dims.size(); ++axis) {
    const h5::Id scale(H5Dopen2(group, dims[axis].c_str(), H5P_DEFAULT), H5Dclose, dims[axis].c_str());
    h5::attach_scale(ds, scale, unsigned(axis), dims[axis]);
  }
}

h5::Id Scales::make(hid_t group, const std::string& name, hid_t type, hsize_t n, const std::string& description,
                    const std::string& scale_name) {
  h5::Id ds = h5::create_dataset(group, name, type, {n}, description);
  h5::make_scale(ds, scale_name, next_dimid_++);
  return ds;
}

namespace {

// Every axis of every dataset is named by a dimension scale (docs/STORE.md "With xarray"): the
// netCDF-4 convention, so that h5netcdf and xarray open a group with named dimensions. Each
// group carries the scales of the axes its datasets use, because xarray opens one group at a
// time and takes coordinate values from that group only. Created with the store (the resume
// path finds them there); every rank makes the same calls, rank 0 writes the values.

// The axes of a statistic of the schema (kStatSchema), by its shape.
std::vector<std::string> stat_dims(StatShape s) {
  switch (s) {
    case StatShape::Scalar: return {};
    case StatShape::T: return {"distance"};
    case StatShape::L: return {"layer"};
    case StatShape::LH: return {"layer", "head"};
    case StatShape::LHT: return {"layer", "head", "distance"};
    case StatShape::LHV: return {"layer", "head", "token"};
    case StatShape::LHS: return {"layer", "head", "separator"};
  }
  return {};
}

size_t longest(const std::vector<std::string>& v) {
  size_t n = 0;
  for (const auto& s : v) n = std::max(n, s.size());
  return n;
}

constexpr const char* kSampleScale = "sample index";
constexpr const char* kRuleScale = "selection rule name, in the order of /stats rules";

void scale_samples(Scales& s, hid_t file, hsize_t N, hsize_t T) {
  const h5::Id g = h5::open_group(file, "samples");
  s.numbers(g, "sample", N, kSampleScale);
  s.numbers(g, "position", T, "token position in the sample (0: the family's begin token, or the first word where there is none)");
  const std::vector<std::string> fields = {"document", "first_sentence"};
  s.strings(g, "source_field", 2, longest(fields), "the fields of source: document index, first sentence index", fields);
}

void scale_per_sample(Scales& s, hid_t file, const std::vector<std::string>& rules, hsize_t N, hsize_t L, hsize_t H) {
  const h5::Id g = h5::open_group(file, "per_sample");
  s.strings(g, "rule", rules.size(), longest(rules), kRuleScale, rules);
  s.numbers(g, "sample", N, kSampleScale);
  s.numbers(g, "layer", L, kLayerScale);
  s.numbers(g, "head", H, kHeadScale);
}

void scale_examples(Scales& s, hid_t file, const StoreLayout& l, const std::vector<std::string>& rules) {
  const h5::Id g = h5::open_group(file, "examples");
  const hsize_t T = hsize_t(l.seq_len);
  s.numbers(g, "example", l.examples.size(), "the sample id of each example (as sample_ids)", l.examples);
  s.strings(g, "rule", rules.size(), longest(rules), kRuleScale, rules);
  s.numbers(g, "layer", hsize_t(l.layers), kLayerScale);
  s.numbers(g, "head", hsize_t(l.heads), kHeadScale);
  s.numbers(g, "i", T, "position i of a pair (the query row of attention)");
  s.numbers(g, "j", T, "position j of a pair (the key column of attention)");
}

// One /stats group (or /units group: `units` > 0, a leading unit axis): the scales its
// statistics' axes use, then each statistic's attachment.
void scale_stats_group(Scales& s, hid_t group, const std::vector<const StatField*>& fields, const std::vector<std::string>& tokens,
                       size_t separator_width, hsize_t units = 0) {
  std::vector<std::string> used;
  for (const StatField* f : fields)
    for (const auto& d : stat_dims(f->info->shape))
      if (std::find(used.begin(), used.end(), d) == used.end()) used.push_back(d);
  const auto uses = [&](const char* d) { return std::find(used.begin(), used.end(), d) != used.end(); };
  const auto extent_of = [&](const char* d) {  // the statistic's own extent along d
    for (const StatField* f : fields) {
      const auto dims = stat_dims(f->info->shape);
      for (size_t a = 0; a < dims.size(); ++a)
        if (dims[a] == d) return hsize_t(f->dims.at(a));
    }
    return hsize_t(0);
  };
  if (uses("layer")) s.numbers(group, "layer", extent_of("layer"), kLayerScale);
  if (uses("head")) s.numbers(group, "head", extent_of("head"), kHeadScale);
  if (uses("distance")) s.numbers(group, "distance", extent_of("distance"), "pair distance d = j - i, in positions");
  if (uses("token")) {
    const hsize_t V = extent_of("token");
    std::vector<std::string> spelled(V);
    for (size_t id = 0; id < V && id < tokens.size(); ++id) spelled[id] = tokens[id];
    s.strings(group, "token", V, longest(spelled),
              "the vocabulary's spelling of each token id (the index is the id; empty past the vocabulary's last line)", spelled);
  }
  if (uses("separator"))
    s.strings(group, "separator", extent_of("separator"), separator_width,
              "the separator tokens, in the order of /stats/attention separator_tokens (written with the statistics)");
  std::vector<std::string> lead;
  if (units > 0) {
    s.numbers(group, "unit", units, "work unit index (runtime.unit_size consecutive samples each, the last maybe fewer)");
    lead.push_back("unit");
  }
  for (const StatField* f : fields) {
    std::vector<std::string> dims = lead;
    for (const auto& d : stat_dims(f->info->shape)) dims.push_back(d);
    Scales::attach(group, f->name(), dims);
  }
}

}  // namespace

void create_scales(hid_t file, const StoreLayout& l, const std::string& vocab_text, hid_t dxpl, bool writer) {
  Scales s(dxpl, writer);
  std::vector<std::string> rules;
  for (const auto& r : l.rules) rules.push_back(r.name());
  scale_samples(s, file, hsize_t(l.samples), hsize_t(l.seq_len));
  scale_per_sample(s, file, rules, hsize_t(l.samples), hsize_t(l.layers), hsize_t(l.heads));
  scale_examples(s, file, l, rules);
  const std::vector<std::string> tokens = vocab_lines(vocab_text);
  const size_t separator_width = Scales::string_width(longest(tokens));  // a separator is a vocabulary token
  const h5::Id stats = h5::open_group(file, "stats");
  std::vector<const StatField*> per_rule, baseline;
  for (const auto& f : l.fields) (f.per_rule() ? per_rule : baseline).push_back(&f);
  for (const auto& r : rules) scale_stats_group(s, h5::open_group(stats, r), per_rule, tokens, separator_width);
  scale_stats_group(s, h5::open_group(stats, "baseline"), baseline, tokens, separator_width);
  if (l.units > 0) {
    const h5::Id units = h5::open_group(file, "units");
    std::vector<const StatField*> kept_rule, kept_base;
    for (const StatField* f : per_rule)
      if (kept_per_unit(*f->info)) kept_rule.push_back(f);
    for (const StatField* f : baseline)
      if (kept_per_unit(*f->info)) kept_base.push_back(f);
    for (const auto& r : rules) scale_stats_group(s, h5::open_group(units, r), kept_rule, tokens, separator_width, hsize_t(l.units));
    scale_stats_group(s, h5::open_group(units, "baseline"), kept_base, tokens, separator_width, hsize_t(l.units));
  }
  const h5::Id vocab = h5::open_group(file, "vocab");
  s.bare(vocab, "byte", vocab_text.size(), "byte offset into text (a dimension without values)");
}

void write_cf_attributes(hid_t file) {
  for (const std::string& path : h5::dataset_paths(file)) {
    const h5::Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
    if (h5::has_attr(ds, "long_name")) continue;  // made by the caller, or already done
    const std::string description = h5::has_attr(ds, "description") ? h5::get_attr_string(ds, "description") : std::string();
    if (!description.empty()) h5::set_attr(ds, "long_name", description);
    const std::string leaf = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
    const h5::Id type(H5Dget_type(ds), H5Tclose, "H5Dget_type");
    const H5T_class_t cls = H5Tget_class(type);
    // A fixed-point statistic of the schema, wherever it is (/stats, /units).
    const bool fixed_point =
        std::any_of(kStatSchema.begin(), kStatSchema.end(), [&](const StatInfo& s) { return s.fixed_point && leaf == s.name; });
    if (fixed_point) {
      h5::set_attr(ds, "units", std::string("1"));
      h5::set_attr(ds, "scale_factor", 1.0 / kFixedPointScale);
    } else if (description.find("(count") != std::string::npos) {
      h5::set_attr(ds, "units", std::string("count"));
    } else if (cls == H5T_FLOAT) {
      h5::set_attr(ds, "units", std::string("1"));
    }
  }
}

void write_separator_scale(hid_t stats, const std::vector<std::string>& separator_tokens, hid_t dxpl, bool writer) {
  if (!h5::exists(stats, "baseline")) return;
  const h5::Id baseline = h5::open_group(stats, "baseline");
  if (!h5::exists(baseline, "separator")) return;
  const h5::Id ds(H5Dopen2(baseline, "separator", H5P_DEFAULT), H5Dclose, "separator");
  const h5::Id type(H5Dget_type(ds), H5Tclose, "H5Dget_type");
  const hsize_t n = h5::dims_of(ds).at(0);
  if (n == 0) return;  // no separators (and no storage to write)
  std::vector<std::string> values = separator_tokens;
  values.resize(size_t(n));
  const std::string packed = h5::pack_strings(values, H5Tget_size(type));
  h5::write_slab(ds, type, packed.data(), {0}, {writer ? n : 0}, dxpl);
}

}  // namespace ctxsim
