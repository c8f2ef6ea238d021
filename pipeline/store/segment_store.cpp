// The segmentation store (see segment_store.h). The parallel-HDF5 rules of store.cpp hold here:
// every rank makes the same metadata calls, storage is allocated at creation, and every write is
// collective, a rank with nothing to write taking part with an empty selection.
#include "pipeline/store/segment_store.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "pipeline/store/scales.h"
#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

constexpr const char* kKind = "segment";

SegmentResults read_rows(hid_t file);

Extents extents(const SegmentLayout& l) {
  const hsize_t K = hsize_t(l.segments), S0 = hsize_t(l.example_sentences);
  return {{"document", hsize_t(l.documents)},
          {"segment", K},
          {"part_field", 2},
          {"gold_boundary", K - 1},
          {"segmentation_method", hsize_t(l.methods.size())},
          {"boundary", hsize_t(std::max<int64_t>(1, l.max_gaps))},
          {"layer", hsize_t(l.layers)},
          {"head", hsize_t(l.heads)},
          {"sentence_i", S0},
          {"sentence_j", S0}};
}

// The groups and their attributes, then the datasets of the table.
void create_datasets(hid_t file, const SegmentLayout& l) {
  const h5::Id docs = h5::create_group(file, "documents");
  h5::set_attr(docs, "subsets", join(l.subsets, "\n"));
  const h5::Id methods = h5::create_group(file, "methods");
  h5::set_attr(methods, "names", join(l.methods, "\n"));
  h5::create_group(file, "heads");
  const h5::Id example = h5::create_group(file, "example");
  h5::set_attr(example, "document", int64_t{0});
  ctxsim::create_datasets(file, segment_datasets(), extents(l), false);
}

// Every axis named by a dimension scale (docs/STORE.md "With xarray"), each group carrying the
// scales its datasets use: xarray.open_dataset(path, engine="h5netcdf", group="methods").
void create_scales(hid_t file, const SegmentLayout& l, hid_t dxpl, bool writer) {
  const hsize_t D = hsize_t(l.documents), M = hsize_t(l.methods.size()), G = hsize_t(std::max<int64_t>(1, l.max_gaps));
  const hsize_t L = hsize_t(l.layers), H = hsize_t(l.heads), K = hsize_t(l.segments), S0 = hsize_t(l.example_sentences);
  constexpr const char* kDocument = "test document index (documents/subset says its subset)";
  Scales s(dxpl, writer);
  const h5::Id docs = h5::open_group(file, "documents");
  s.numbers(docs, "document", D, kDocument);
  s.numbers(docs, "segment", K, "segment index within the test document");
  s.numbers(docs, "gold_boundary", K - 1, "gold boundary index (the boundary before segment 2 ... K)");
  const std::vector<std::string> fields = {"corpus_document", "sentences"};
  s.strings(docs, "part_field", 2, Scales::string_width(15), "the fields of parts: corpus document index, sentences taken", fields);
  size_t width = 0;
  for (const auto& m : l.methods) width = std::max(width, m.size());
  const h5::Id methods = h5::open_group(file, "methods");
  s.numbers(methods, "document", D, kDocument);
  // Not "method": xarray's sel() takes that keyword for its fill method.
  s.strings(methods, "segmentation_method", M, Scales::string_width(width), "segmentation method (the group's names attribute, in order)",
            l.methods);
  s.numbers(methods, "boundary", G, "predicted boundary index (values past the method's count are -1)");
  const h5::Id heads = h5::open_group(file, "heads");
  s.numbers(heads, "document", D, kDocument);
  s.numbers(heads, "layer", L, kLayerScale);
  s.numbers(heads, "head", H, kHeadScale);
  const h5::Id example = h5::open_group(file, "example");
  s.numbers(example, "layer", L, kLayerScale);
  s.numbers(example, "sentence_i", S0, "sentence i of test document 0");
  s.numbers(example, "sentence_j", S0, "sentence j of test document 0");
  attach_scales(file, segment_datasets());
}

void write_documents(hid_t file, const SegmentLayout& l, const std::vector<SegmentDocumentInfo>& docs, hid_t dxpl, bool writer) {
  const hsize_t D = hsize_t(l.documents), K = hsize_t(l.segments);
  std::vector<int32_t> subset, sentences, parts, gold;
  if (writer) {
    CTXSIM_CHECK(docs.size() == D, "segment store: document list does not match the layout");
    for (const auto& d : docs) {
      CTXSIM_CHECK(d.parts.size() == 2 * K && d.gold.size() == K - 1, "segment store: a document's parts or gold are malformed");
      subset.push_back(d.subset);
      sentences.push_back(d.sentences);
      parts.insert(parts.end(), d.parts.begin(), d.parts.end());
      gold.insert(gold.end(), d.gold.begin(), d.gold.end());
    }
  }
  const h5::Id g = h5::open_group(file, "documents");
  const auto put = [&](const char* name, const std::vector<int32_t>& v, std::vector<hsize_t> dims) {
    const h5::Id ds(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose, name);
    if (!writer)
      for (auto& x : dims) x = 0;
    h5::write_slab(ds, v.data(), std::vector<hsize_t>(dims.size(), 0), dims, dxpl);
  };
  put("subset", subset, {D});
  put("sentences", sentences, {D});
  put("parts", parts, {D, K, 2});
  put("gold", gold, {D, K - 1});
}

}  // namespace

const std::vector<DatasetSpec>& segment_datasets() {
  // clang-format off
  static const std::vector<DatasetSpec> rows = {
    {"documents", "subset",    Element::Int32, {"document"}, "index of the document's subset in the group's subsets attribute"},
    {"documents", "sentences", Element::Int32, {"document"}, "sentences S of the test document"},
    {"documents", "parts",     Element::Int32, {"document", "segment", "part_field"},
     "[document, segment, 2]: (corpus document index, sentences taken from its start) of each segment, in order"},
    {"documents", "gold",      Element::Int32, {"document", "gold_boundary"}, "gold boundaries: the first sentence of segments 2 ... K"},
    {"methods", "boundaries",  Element::Int32,   {"document", "segmentation_method", "boundary"}, "[document, method, b] predicted boundaries, -1 past count", kRowChunks},
    {"methods", "count",       Element::Int32,   {"document", "segmentation_method"}, "[document, method] predicted boundaries", kRowChunks},
    {"methods", "pk",          Element::Float64, {"document", "segmentation_method"}, "[document, method] Pk (SPEC section 6)", kRowChunks},
    {"methods", "window_diff", Element::Float64, {"document", "segmentation_method"}, "[document, method] WindowDiff (SPEC section 6)", kRowChunks},
    {"heads", "pk",            Element::Float64, {"document", "layer", "head"}, "[document, layer, head] Pk of C99 on the head's sentence similarity, gold count", kRowChunks},
    {"heads", "window_diff",   Element::Float64, {"document", "layer", "head"}, "[document, layer, head] WindowDiff of the same", kRowChunks},
    {"example", "similarity",  Element::Float64, {"layer", "sentence_i", "sentence_j"},
     "[layer, sentence, sentence] test document 0's sentence similarity (the heads-* methods' matrix)"},
  };
  // clang-format on
  return rows;
}

SegmentStore::SegmentStore(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout)
    : StoreFile(path, comm, rank, segment_store_bytes(layout)), layout_(layout) {}

SegmentStore::SegmentStore(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout, const StoreAttributes& attrs)
    : StoreFile(path, comm, rank, segment_store_bytes(layout), attrs, kKind), layout_(layout) {}

SegmentStore SegmentStore::create(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout,
                                  const StoreAttributes& attrs, const std::vector<SegmentDocumentInfo>& documents) {
  SegmentStore st(path, comm, rank, layout, attrs);
  st.build([&] {
    create_datasets(st.file_, layout);
    create_scales(st.file_, layout, st.collective_, rank == 0);
    write_documents(st.file_, layout, documents, st.collective_, rank == 0);
  });
  return st;
}

SegmentStore SegmentStore::open(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout) {
  return SegmentStore(path, comm, rank, layout);
}

void SegmentStore::write_document(int64_t d, const SegmentDocumentResult* r) {
  const SegmentLayout& l = layout_;
  const hsize_t M = hsize_t(l.methods.size()), G = hsize_t(std::max<int64_t>(1, l.max_gaps)), L = hsize_t(l.layers), H = hsize_t(l.heads);
  const hsize_t n = r ? 1 : 0, at = r ? hsize_t(d) : 0;
  if (r)
    CTXSIM_CHECK(r->boundaries.size() == M * G && r->count.size() == M && r->pk.size() == M && r->head_pk.size() == L * H,
                 "segment store: a document's results do not match the layout");
  const auto put = [&](hid_t group, const char* name, const auto* data, std::vector<hsize_t> rest) {
    const h5::Id ds(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, name);
    std::vector<hsize_t> start{at}, count{n};
    for (hsize_t x : rest) start.push_back(0), count.push_back(n ? x : 0);
    h5::write_slab(ds, data, start, count, collective_);
  };
  const h5::Id methods = h5::open_group(file_, "methods"), heads = h5::open_group(file_, "heads");
  put(methods, "boundaries", r ? r->boundaries.data() : nullptr, {M, G});
  put(methods, "count", r ? r->count.data() : nullptr, {M});
  put(methods, "pk", r ? r->pk.data() : nullptr, {M});
  put(methods, "window_diff", r ? r->window_diff.data() : nullptr, {M});
  put(heads, "pk", r ? r->head_pk.data() : nullptr, {L, H});
  put(heads, "window_diff", r ? r->head_window_diff.data() : nullptr, {L, H});
  // Document 0's matrices: written in its round by the rank that has them (every rank takes part).
  const h5::Id example = h5::open_group(file_, "example");
  const h5::Id ds(H5Dopen2(example, "similarity", H5P_DEFAULT), H5Dclose, "similarity");
  const bool mine = r && d == 0 && !r->example.empty();
  const hsize_t S0 = hsize_t(l.example_sentences);
  if (mine) CTXSIM_CHECK(r->example.size() == L * S0 * S0, "segment store: the example does not match the layout");
  h5::write_slab(ds, mine ? r->example.data() : nullptr, {0, 0, 0}, {mine ? L : 0, mine ? S0 : 0, mine ? S0 : 0}, collective_);
}

std::string SegmentStore::results_digest_now() { return results_digest(read_rows(file_)); }

double segment_store_bytes(const SegmentLayout& l) {
  const double D = double(l.documents), M = double(l.methods.size()), G = double(std::max<int64_t>(1, l.max_gaps));
  const double LH = double(l.layers * l.heads), K = double(l.segments), S0 = double(l.example_sentences);
  // documents (subset, sentences, parts, gold), methods (boundaries, count, Pk, WindowDiff), heads
  // (Pk, WindowDiff), the example's similarity, and HDF5's own (a few hundred KB).
  return D * (8 + 8 * K + 4 * K) + D * M * (4 * G + 4 + 16) + D * LH * 16 + double(l.layers) * S0 * S0 * 8 + (256 << 10);
}

namespace {

// Every row as stored, its shapes checked against each other (no digest or range check: the job
// reads them this way to write the digest).
SegmentResults read_rows(hid_t file) {
  SegmentResults r;
  SegmentLayout& l = r.layout;
  const h5::Id docs = h5::open_group(file, "documents"), methods = h5::open_group(file, "methods"), heads = h5::open_group(file, "heads");
  l.subsets = split_lines(h5::get_attr_string(docs, "subsets"));
  l.methods = split_lines(h5::get_attr_string(methods, "names"));
  if (l.subsets.empty() || l.methods.empty()) h5::damaged(docs, "no subsets or no methods named");
  const auto dims = [&](hid_t g, const char* name, auto element) {
    const h5::Id ds(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose, name);
    h5::check_readable(ds, h5::Element<decltype(element)>::memory());
    return h5::dims_of(ds);
  };
  const auto b = dims(methods, "boundaries", int32_t{}), p = dims(docs, "parts", int32_t{}), hp = dims(heads, "pk", double{});
  if (b.size() != 3 || p.size() != 3 || hp.size() != 3 || b[1] != l.methods.size() || p[0] != b[0] || hp[0] != b[0] || p[2] != 2 ||
      p[1] < 2 || b[0] > (hsize_t(1) << 24) || b[2] < 1 || b[2] > (hsize_t(1) << 16) || hp[1] < 1 || hp[2] < 1 ||
      hp[1] > (hsize_t(1) << 12) || hp[2] > (hsize_t(1) << 12) || hp[1] * hp[2] > (hsize_t(1) << 16))
    h5::damaged(methods, "the shapes of /methods, /documents and /heads disagree with each other or with the method names");
  l.documents = int64_t(b[0]), l.max_gaps = int64_t(b[2]), l.layers = int64_t(hp[1]), l.heads = int64_t(hp[2]), l.segments = int64_t(p[1]);
  const auto read = [&](hid_t g, const char* name, auto& out, std::vector<hsize_t> want) {
    using T = typename std::decay_t<decltype(out)>::value_type;
    if (dims(g, name, T{}) != want) h5::damaged(g, std::string(name) + " has the wrong shape");
    out = h5::read_all<T>(g, name);
  };
  const hsize_t D = b[0], M = b[1];
  read(docs, "subset", r.subset, {D});
  read(docs, "sentences", r.sentences, {D});
  read(docs, "parts", r.parts, {D, p[1], 2});
  read(docs, "gold", r.gold, {D, p[1] - 1});
  read(methods, "boundaries", r.boundaries, {D, M, b[2]});
  read(methods, "count", r.count, {D, M});
  read(methods, "pk", r.pk, {D, M});
  read(methods, "window_diff", r.window_diff, {D, M});
  read(heads, "pk", r.head_pk, {D, hp[1], hp[2]});
  read(heads, "window_diff", r.head_window_diff, {D, hp[1], hp[2]});
  const h5::Id example = h5::open_group(file, "example");
  const auto e = dims(example, "similarity", double{});
  if (D == 0 || e.size() != 3 || e[0] != hp[1] || e[1] != e[2] || e[1] != hsize_t(r.sentences[0]))
    h5::damaged(example, "similarity does not match document 0's sentences and the model's layers");
  read(example, "similarity", r.example, {e[0], e[1], e[2]});
  r.example_boundaries.assign(r.boundaries.begin(), r.boundaries.begin() + ptrdiff_t(M * b[2]));
  for (int32_t s : r.subset)
    if (s < 0 || size_t(s) >= l.subsets.size()) h5::damaged(docs, "a document's subset index is out of range");
  r.model_path = h5::get_attr_string(file, "model_path");
  return r;
}

// What no segmentation can hold: the first such value, or "".
std::string impossible_value(const SegmentResults& r) {
  const SegmentLayout& l = r.layout;
  const size_t D = size_t(l.documents), M = l.methods.size(), G = size_t(l.max_gaps), K = size_t(l.segments);
  const auto at = [](const char* what, size_t d, const std::string& detail) {
    return std::string(what) + " of document " + std::to_string(d) + " " + detail;
  };
  const auto share = [](double v) { return std::isfinite(v) && v >= 0.0 && v <= 1.0; };
  for (size_t d = 0; d < D; ++d) {
    const int32_t S = r.sentences[d];
    if (S < 1 || size_t(S) > G + 1) return at("/documents/sentences", d, "is " + std::to_string(S) + ", outside 1 to gaps + 1");
    int32_t previous = 0;
    for (size_t k = 0; k + 1 < K; ++k) {
      const int32_t g = r.gold[d * (K - 1) + k];
      if (g <= previous || g >= S) return at("/documents/gold", d, "is not increasing inside its sentences");
      previous = g;
    }
    for (size_t m = 0; m < M; ++m) {
      const size_t dm = d * M + m;
      if (!share(r.pk[dm]) || !share(r.window_diff[dm]))
        return at("/methods/pk or window_diff", d, "of " + l.methods[m] + " is not a share in [0, 1]");
      const int32_t n = r.count[dm];
      if (n < 0 || size_t(n) > G) return at("/methods/count", d, "of " + l.methods[m] + " is outside 0 to " + std::to_string(G));
      int32_t last = 0;
      for (size_t i = 0; i < G; ++i) {
        const int32_t v = r.boundaries[dm * G + i];
        if (i < size_t(n) ? (v <= last || v >= S) : v != -1)
          return at("/methods/boundaries", d, "of " + l.methods[m] + " are not increasing inside the document, then -1");
        if (i < size_t(n)) last = v;
      }
    }
    const size_t LH = size_t(l.layers * l.heads);
    for (size_t k = 0; k < LH; ++k)
      if (!share(r.head_pk[d * LH + k]) || !share(r.head_window_diff[d * LH + k]))
        return at("/heads/pk or window_diff", d, "is not a share in [0, 1]");
  }
  return "";
}

template <class T>
void digest_vector(std::string& text, const char* name, const std::vector<T>& v) {
  text += std::string(name) + "\n" + std::to_string(v.size() * sizeof(T)) + "\n";
  text.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

std::string results_digest(const SegmentResults& r) {
  std::string text;
  const std::string subsets = join(r.layout.subsets, "\n"), names = join(r.layout.methods, "\n");
  digest_vector(text, "subsets", std::vector<char>(subsets.begin(), subsets.end()));
  digest_vector(text, "methods", std::vector<char>(names.begin(), names.end()));
  digest_vector(text, "subset", r.subset);
  digest_vector(text, "sentences", r.sentences);
  digest_vector(text, "parts", r.parts);
  digest_vector(text, "gold", r.gold);
  digest_vector(text, "boundaries", r.boundaries);
  digest_vector(text, "count", r.count);
  digest_vector(text, "pk", r.pk);
  digest_vector(text, "window_diff", r.window_diff);
  digest_vector(text, "head_pk", r.head_pk);
  digest_vector(text, "head_window_diff", r.head_window_diff);
  digest_vector(text, "example", r.example);
  return sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

SegmentResults read_segment_store(hid_t file) {
  require_store_job(file, kKind);
  SegmentResults r = read_rows(file);
  if (const std::string bad = impossible_value(r); !bad.empty()) h5::damaged(file, bad);
  if ((effective_schema_version(file) >= 3 || h5::has_attr(file, "results_sha256")) &&
      h5::get_attr_string(file, "results_sha256") != results_digest(r))
    h5::damaged(file, "its results do not match the SHA-256 written with them (results_sha256): the file changed after ctxsim wrote it");
  return r;
}

}  // namespace ctxsim
