// Parallel-HDF5 rules followed here: every rank makes the same metadata calls (create, attribute)
// in the same order; each rank writes only its own hyperslabs; dataset storage is allocated at
// creation; transfers are collective (H5FD_MPIO_COLLECTIVE) and a rank with nothing to write
// takes part with an empty selection.
#include "pipeline/store/store.h"

#include "pipeline/store/dataset_spec.h"
#include "pipeline/store/scales.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/text/tokenizer.h"

namespace ctxsim {

Store::Store(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout)
    : StoreFile(path, comm, rank, store_bytes(layout)), layout_(layout), independent_(h5::independent_transfer()) {}

Store::Store(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout, const StoreAttributes& attrs)
    : StoreFile(path, comm, rank, store_bytes(layout), attrs, "run"), layout_(layout), independent_(h5::independent_transfer()) {}

Store Store::open(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout) { return Store(path, comm, rank, layout); }

namespace {

Extents extents(const StoreLayout& l, const std::string& vocab_text) {
  const hsize_t T = hsize_t(l.seq_len);
  return {{"sample", hsize_t(l.samples)},
          {"position", T},
          {"source_field", 2},
          {"rule", hsize_t(l.rules.size())},
          {"layer", hsize_t(l.layers)},
          {"head", hsize_t(l.heads)},
          {"example", hsize_t(l.examples.size())},
          {"i", T},
          {"j", T},
          {"byte", hsize_t(vocab_text.size())}};
}

// /stats with a group per rule, the baselines and attention groups, and every statistic's
// dataset (written once at the end) from the schema.
void create_stats(hid_t file, const StoreLayout& layout) {
  const h5::Id g = h5::create_group(file, "stats");
  h5::set_attr(g, "rules",
               join_each(
                   layout.rules, [](const SelectionRule& r) { return r.name(); }, "\n"));
  for (const auto& r : layout.rules) {
    const h5::Id rg = h5::create_group(g, r.name());
    h5::set_attr(rg, "kind", r.key());
    h5::set_attr(rg, "value", r.value);
  }
  h5::create_group(g, "baseline");
  h5::create_group(g, "attention");
  for (const auto& f : layout.fields) {
    std::vector<hsize_t> d;
    for (auto x : f.dims) d.push_back(hsize_t(x));
    if (f.per_rule()) {
      for (const auto& r : layout.rules) h5::create_dataset<int64_t>(h5::open_group(g, r.name()), f.name(), d, f.info->description);
    } else {
      h5::create_dataset<int64_t>(h5::open_group(g, "baseline"), f.name(), d, f.info->description);
    }
  }
}

// /units: each work unit's partial sums of the statistics kept_per_unit, laid out as /stats with a
// leading unit axis (one row a unit, written with the unit's per-sample results).
void create_units(hid_t file, const StoreLayout& layout) {
  if (layout.units <= 0) return;
  const h5::Id g = h5::create_group(file, "units");
  h5::set_attr(g, "description",
               std::string("each work unit's partial sums of /stats (all but anchor_counts): rows add up to /stats exactly; readers "
                           "resample units for intervals (SPEC 5.1)"));
  for (const auto& r : layout.rules) h5::create_group(g, r.name());
  h5::create_group(g, "baseline");
  for (const auto& f : layout.fields) {
    if (!kept_per_unit(*f.info)) continue;
    std::vector<hsize_t> d = {hsize_t(layout.units)};
    for (auto x : f.dims) d.push_back(hsize_t(x));
    const std::string description = std::string("[unit, ...] of /stats: ") + f.info->description;
    if (f.per_rule())
      for (const auto& r : layout.rules) h5::create_dataset<int64_t>(h5::open_group(g, r.name()), f.name(), d, description, 1);
    else
      h5::create_dataset<int64_t>(h5::open_group(g, "baseline"), f.name(), d, description, 1);
  }
}

}  // namespace

const std::vector<DatasetSpec>& run_datasets() {
  // clang-format off
  static const std::vector<DatasetSpec> rows = {
    {"samples", "token_ids",    Element::Int32, {"sample", "position"}, "token ids of each sample in the family's frame (SPEC §1, §7), then padding", {0, 1024}},
    {"samples", "sentence_ids", Element::Int16, {"sample", "position"}, "sentence index within the sample; -1 for special tokens and padding", {0, 1024}},
    {"samples", "word_ids",     Element::Int16, {"sample", "position"}, "whitespace word index within the sample; -1 for specials", {0, 1024}},
    {"samples", "n_valid",      Element::Int16, {"sample"}, "valid positions (the first n_valid are not padding)", {0, 4096}},
    {"samples", "source",       Element::Int32, {"sample", "source_field"}, "(document index, first sentence index) of the window", {0, 4096}},
    {"samples", "candidate",    Element::Int64, {"sample"}, "index of the window among all candidates (SPEC §1 draw)", {0, 4096}},
    // Chunks cover [1, rows, L, H]: one work unit per rule writes whole chunks.
    {"per_sample", "anchor_token", Element::Int32,   {"rule", "sample", "layer", "head"}, "[rule, sample, layer, head] anchor token id (-1: no selected pair)", {1, 256}},
    {"per_sample", "anchor_share", Element::Float32, {"rule", "sample", "layer", "head"}, "[rule, sample, layer, head] anchor endpoint count / (2 x selected pairs)", {1, 256}},
    {"per_sample", "high_pairs",   Element::Int32,   {"rule", "sample", "layer", "head"}, "[rule, sample, layer, head] selected pairs", {1, 256}},
    {"examples", "sample_ids", Element::Int64,   {"example"}, "sample ids of the examples"},
    {"examples", "attention",  Element::Float16, {"example", "layer", "head", "i", "j"}, "[example, layer, head, i, j] attention A_ij (float16)", kRowChunks},
    {"examples", "similarity", Element::Float16, {"example", "layer", "head", "i", "j"},
     "[example, layer, head, i, j] context similarity C_ij, diagonal and padding 0 (float16)", kRowChunks},
    {"examples", "selected",   Element::UInt8,   {"example", "rule", "layer", "head", "i", "j"}, "[example, rule, layer, head, i, j] 1 where pair i < j is selected", kRowChunks},
    {"vocab", "text", Element::UInt8, {"byte"}, "the vocabulary's bytes (UTF-8, one token per line; the line number is the id)"},
  };
  // clang-format on
  return rows;
}

Store Store::create(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout, const StoreAttributes& a,
                    const SampleSet& samples, const std::string& vocab_text) {
  Store st(path, comm, rank, layout, a);
  st.build([&] {
    for (const char* group : {"samples", "per_sample", "examples", "vocab"}) h5::create_group(st.file_, group);
    ctxsim::create_datasets(st.file_, run_datasets(), extents(layout, vocab_text), true);
    create_stats(st.file_, layout);
    create_units(st.file_, layout);
    st.write_samples(samples, vocab_text);
    create_scales(st.file_, layout, vocab_text, st.collective_, rank == 0);
    attach_scales(st.file_, run_datasets());
  });
  return st;
}

Store::~Store() = default;

void Store::write_samples(const SampleSet& s, const std::string& vocab_text) {
  const h5::Id g = h5::open_group(file_, "samples");
  const bool me = rank_ == 0;
  const hsize_t N = hsize_t(s.size()), T = hsize_t(s.seq_len);
  const auto put = [&](const char* n, const auto* data, std::vector<hsize_t> count) {
    const h5::Id ds(H5Dopen2(g, n, H5P_DEFAULT), H5Dclose, n);
    if (!me)
      for (auto& c : count) c = 0;
    h5::write_slab(ds, data, std::vector<hsize_t>(count.size(), 0), count, collective_);
  };
  put("token_ids", s.token_ids.data(), {N, T});
  put("sentence_ids", s.sentence_ids.data(), {N, T});
  put("word_ids", s.word_ids.data(), {N, T});
  put("n_valid", s.n_valid.data(), {N});
  std::vector<int32_t> src;
  for (const auto& x : s.source) {
    src.push_back(x.document);
    src.push_back(x.sentence);
  }
  put("source", src.data(), {N, 2});
  put("candidate", s.candidate.data(), {N});
  const h5::Id ds(H5Dopen2(h5::open_group(file_, "vocab"), "text", H5P_DEFAULT), H5Dclose, "text");
  h5::write_slab(ds, vocab_text.data(), {0}, {me ? hsize_t(vocab_text.size()) : 0}, collective_);
}

void Store::write_per_sample(int64_t first, int64_t count, const std::vector<int32_t>& anchor_token, const std::vector<float>& anchor_share,
                             const std::vector<int32_t>& high_pairs) {
  guarded([&] {
    const h5::Id g = h5::open_group(file_, "per_sample");
    const std::vector<hsize_t> start = {0, hsize_t(first), 0, 0};
    const std::vector<hsize_t> cnt = {hsize_t(layout_.rules.size()), hsize_t(count), hsize_t(layout_.layers), hsize_t(layout_.heads)};
    const auto put = [&](const char* n, const auto* data) {
      const h5::Id ds(H5Dopen2(g, n, H5P_DEFAULT), H5Dclose, n);
      h5::write_slab(ds, data, start, count == 0 ? std::vector<hsize_t>{0, 0, 0, 0} : cnt, collective_);
    };
    put("anchor_token", anchor_token.data());
    put("anchor_share", anchor_share.data());
    put("high_pairs", high_pairs.data());
  });
}

void Store::write_example(int64_t e, const std::vector<uint16_t>& attention, const std::vector<uint16_t>& similarity,
                          const std::vector<uint8_t>& selected) {
  guarded([&] {
    const h5::Id g = h5::open_group(file_, "examples");
    const hsize_t L = hsize_t(layout_.layers), H = hsize_t(layout_.heads), T = hsize_t(layout_.seq_len), R = hsize_t(layout_.rules.size());
    const auto open = [&](const char* n) { return h5::Id(H5Dopen2(g, n, H5P_DEFAULT), H5Dclose, n); };
    // float16 has no native C type: the bits go through the same float16 type, unconverted.
    const h5::Id f16 = h5::float16_type();
    h5::write_slab(open("attention"), f16, attention.data(), {hsize_t(e), 0, 0, 0, 0}, {1, L, H, T, T}, independent_);
    h5::write_slab(open("similarity"), f16, similarity.data(), {hsize_t(e), 0, 0, 0, 0}, {1, L, H, T, T}, independent_);
    h5::write_slab(open("selected"), selected.data(), {hsize_t(e), 0, 0, 0, 0, 0}, {1, R, L, H, T, T}, independent_);
    const int64_t id = layout_.examples.at(size_t(e));
    h5::write_slab(open("sample_ids"), &id, {hsize_t(e)}, {1}, independent_);
  });
}

void Store::write_statistics(const Accumulator& acc, double attention_threshold, const std::vector<std::string>& separators,
                             const std::vector<std::string>& separator_tokens) {
  guarded([&] {
    const h5::Id stats = h5::open_group(file_, "stats");
    const auto put = [&](hid_t group, const StatField& f, const int64_t* data) {
      if (f.size == 0) return;  // an empty axis (no separators): no storage, and MPI-IO refuses an empty collective write
      const h5::Id ds(H5Dopen2(group, f.name(), H5P_DEFAULT), H5Dclose, f.name());
      std::vector<hsize_t> count;
      for (auto x : f.dims) count.push_back(rank_ == 0 ? hsize_t(x) : 0);
      if (count.empty()) {  // a scalar: the whole dataspace or nothing
        if (rank_ == 0)
          CTXSIM_H5(H5Dwrite(ds, h5::Element<int64_t>::memory(), H5S_ALL, H5S_ALL, collective_, data));
        else
          h5::write_none<int64_t>(ds, collective_);
        return;
      }
      h5::write_slab(ds, data, std::vector<hsize_t>(count.size(), 0), count, collective_);
    };
    for (const auto& f : acc.fields()) {
      if (f.per_rule()) {
        for (size_t r = 0; r < layout_.rules.size(); ++r)
          put(h5::open_group(stats, layout_.rules[r].name()), f, acc.at(f.info->id, int64_t(r)));
      } else {
        put(h5::open_group(stats, "baseline"), f, acc.at(f.info->id));
      }
    }
    const h5::Id att = h5::open_group(stats, "attention");
    h5::set_attr(att, "attention_threshold", attention_threshold);
    h5::set_attr(att, "separators", join(separators, "\n"));
    h5::set_attr(att, "separator_tokens", join(separator_tokens, "\n"));
    h5::set_attr(att, "fixed_point_scale", kFixedPointScale);
    write_separator_scale(stats, separator_tokens, collective_, rank_ == 0);
    if (layout_.units > 0) write_separator_scale(h5::open_group(file_, "units"), separator_tokens, collective_, rank_ == 0);
    std::vector<std::string> rule_names;
    for (const auto& r : layout_.rules) rule_names.push_back(r.name());
    h5::set_attr(file_, "labels_sha256", labels_digest(join(rule_names, "\n"), join(separators, "\n"), join(separator_tokens, "\n")));
  });
}

void Store::write_unit_sums(int64_t unit, const std::vector<int64_t>& row) {
  if (layout_.units <= 0) return;
  guarded([&] {
    const h5::Id units = h5::open_group(file_, "units");
    size_t at = 0;
    for (const auto& f : layout_.fields) {
      if (!kept_per_unit(*f.info)) continue;
      std::vector<hsize_t> start = {hsize_t(std::max<int64_t>(unit, 0))}, count = {unit >= 0 ? hsize_t(1) : hsize_t(0)};
      for (auto x : f.dims) {
        start.push_back(0);
        count.push_back(unit >= 0 ? hsize_t(x) : 0);
      }
      const auto put = [&](hid_t group) {
        const h5::Id ds(H5Dopen2(group, f.name(), H5P_DEFAULT), H5Dclose, f.name());
        if (f.size == 0) return;  // an empty axis: no storage, and MPI-IO refuses an empty collective write
        h5::write_slab(ds, unit >= 0 ? row.data() + at : nullptr, start, count, collective_);
        at += unit >= 0 ? f.size : 0;
      };
      if (f.per_rule())
        for (const auto& r : layout_.rules) put(h5::open_group(units, r.name()));
      else
        put(h5::open_group(units, "baseline"));
    }
    CTXSIM_CHECK(unit < 0 || at == row.size(), "a unit's row does not match the store's fields");
  });
}

std::vector<std::string> store_vocab(hid_t file) {
  const auto bytes = h5::read_all<uint8_t>(h5::open_group(file, "vocab"), "text");
  if (h5::has_attr(file, "vocab_sha256") && h5::get_attr_string(file, "vocab_sha256") != sha256_bytes(bytes.data(), bytes.size()))
    h5::damaged(
        file, "/vocab/text does not match the vocabulary's SHA-256 written with it (vocab_sha256): the file changed after ctxsim wrote it");
  return vocab_lines(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string labels_digest(const std::string& rules, const std::string& separators, const std::string& separator_tokens) {
  std::string text;
  for (const std::string* s : {&rules, &separators, &separator_tokens}) text += std::to_string(s->size()) + "\n" + *s + "\n";
  return sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

std::vector<std::string> store_rules(hid_t stats_group) { return split_lines(h5::get_attr_string(stats_group, "rules")); }

namespace {}  // namespace

double store_bytes(const StoreLayout& l) {
  const double N = double(l.samples), T = double(l.seq_len), L = double(l.layers), H = double(l.heads);
  const double R = double(l.rules.size()), E = double(l.examples.size());
  double stats = 0;
  for (const auto& f : l.fields)
    stats += 8.0 * double(f.size) * (f.per_rule() ? R : 1.0) * (kept_per_unit(*f.info) ? 1.0 + double(l.units) : 1.0);
  // samples (ids, sentence and word ids; n_valid, source, candidate), per-sample [R, N, L, H]
  // x 3 x 4 bytes, examples (attention and similarity float16, selections u8), statistics, and
  // the dimension scales: each rule's token spellings (about 20 bytes a token), sample indices.
  const double V = double(l.vocab);
  return N * T * 8 + N * 18 + R * N * L * H * 12 + E * L * H * T * T * (4 + R) + stats + R * V * 20 + N * 16;
}

}  // namespace ctxsim
