// The segmentation store (see segment_store.h). The parallel-HDF5 rules of store.cpp hold here:
// every rank makes the same metadata calls, storage is allocated at creation, and every write is
// collective, a rank with nothing to write taking part with an empty selection.
#include "pipeline/store/segment_store.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim {
namespace {

constexpr const char* kKind = "segment";

// The per-document datasets and their element types, in creation order.
void create_datasets(hid_t file, const SegmentLayout& l) {
  const hsize_t D = hsize_t(l.documents), M = hsize_t(l.methods.size()), G = hsize_t(std::max<int64_t>(1, l.max_gaps));
  const hsize_t L = hsize_t(l.layers), H = hsize_t(l.heads), K = hsize_t(l.segments);
  const h5::Id docs = h5::create_group(file, "documents");
  h5::set_attr(docs, "subsets", join(l.subsets, "\n"));
  h5::create_dataset(docs, "subset", H5T_STD_I32LE, {D}, "index of the document's subset in the group's subsets attribute");
  h5::create_dataset(docs, "sentences", H5T_STD_I32LE, {D}, "sentences S of the test document");
  h5::create_dataset(docs, "parts", H5T_STD_I32LE, {D, K, 2},
                     "[document, segment, 2]: (corpus document index, sentences taken from its start) of each segment, in order");
  h5::create_dataset(docs, "gold", H5T_STD_I32LE, {D, K - 1}, "gold boundaries: the first sentence of segments 2 ... K");
  const h5::Id methods = h5::create_group(file, "methods");
  h5::set_attr(methods, "names", join(l.methods, "\n"));
  h5::create_dataset(methods, "boundaries", H5T_STD_I32LE, {D, M, G}, "[document, method, b] predicted boundaries, -1 past count", 1);
  h5::create_dataset(methods, "count", H5T_STD_I32LE, {D, M}, "[document, method] predicted boundaries", 1);
  h5::create_dataset(methods, "pk", H5T_IEEE_F64LE, {D, M}, "[document, method] Pk (SPEC section 6)", 1);
  h5::create_dataset(methods, "window_diff", H5T_IEEE_F64LE, {D, M}, "[document, method] WindowDiff (SPEC section 6)", 1);
  const h5::Id heads = h5::create_group(file, "heads");
  h5::create_dataset(heads, "pk", H5T_IEEE_F64LE, {D, L, H},
                     "[document, layer, head] Pk of C99 on the head's sentence similarity, gold count", 1);
  h5::create_dataset(heads, "window_diff", H5T_IEEE_F64LE, {D, L, H}, "[document, layer, head] WindowDiff of the same", 1);
  const h5::Id example = h5::create_group(file, "example");
  h5::set_attr(example, "document", int64_t{0});
  const hsize_t S0 = hsize_t(l.example_sentences);
  h5::create_dataset(example, "similarity", H5T_IEEE_F64LE, {L, S0, S0},
                     "[layer, sentence, sentence] test document 0's sentence similarity (the heads-* methods' matrix)");
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
    h5::write_slab(ds, H5T_NATIVE_INT32, v.data(), std::vector<hsize_t>(dims.size(), 0), dims, dxpl);
  };
  put("subset", subset, {D});
  put("sentences", sentences, {D});
  put("parts", parts, {D, K, 2});
  put("gold", gold, {D, K - 1});
}

}  // namespace

SegmentStore::SegmentStore(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout, bool create)
    : path_(path), layout_(layout), rank_(rank) {
  const h5::Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  CTXSIM_H5(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
  CTXSIM_H5(H5Pset_all_coll_metadata_ops(fapl, true));
  CTXSIM_H5(H5Pset_coll_metadata_write(fapl, true));
  file_ = create ? h5::Id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose, ("create " + path).c_str())
                 : h5::Id(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl), H5Fclose, ("open " + path).c_str());
  collective_ = h5::Id(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  CTXSIM_H5(H5Pset_dxpl_mpio(collective_, H5FD_MPIO_COLLECTIVE));
}

SegmentStore SegmentStore::create(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout,
                                  const StoreAttributes& attrs, const std::vector<SegmentDocumentInfo>& documents) {
  const std::string creating = path + ".creating";
  try {
    SegmentStore st(creating, comm, rank, layout, true);
    write_root_attributes(st.file_, attrs);
    h5::set_attr(st.file_, "kind", std::string(kKind));
    create_datasets(st.file_, layout);
    write_documents(st.file_, layout, documents, st.collective_, rank == 0);
    CTXSIM_H5(H5Fflush(st.file_, H5F_SCOPE_GLOBAL));
    move_into_place(creating, path, comm, rank);
    st.path_ = path;
    return st;
  } catch (...) {
    if (rank == 0) std::remove(creating.c_str());  // a store that never started leaves nothing
    throw;
  }
}

SegmentStore SegmentStore::open(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout) {
  return SegmentStore(path, comm, rank, layout, false);
}

void SegmentStore::write_document(int64_t d, const SegmentDocumentResult* r) {
  const SegmentLayout& l = layout_;
  const hsize_t M = hsize_t(l.methods.size()), G = hsize_t(std::max<int64_t>(1, l.max_gaps)), L = hsize_t(l.layers), H = hsize_t(l.heads);
  const hsize_t n = r ? 1 : 0, at = r ? hsize_t(d) : 0;
  if (r)
    CTXSIM_CHECK(r->boundaries.size() == M * G && r->count.size() == M && r->pk.size() == M && r->head_pk.size() == L * H,
                 "segment store: a document's results do not match the layout");
  const auto put = [&](hid_t group, const char* name, hid_t type, const void* data, std::vector<hsize_t> rest) {
    const h5::Id ds(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, name);
    std::vector<hsize_t> start{at}, count{n};
    for (hsize_t x : rest) start.push_back(0), count.push_back(n ? x : 0);
    h5::write_slab(ds, type, data, start, count, collective_);
  };
  const h5::Id methods = h5::open_group(file_, "methods"), heads = h5::open_group(file_, "heads");
  put(methods, "boundaries", H5T_NATIVE_INT32, r ? r->boundaries.data() : nullptr, {M, G});
  put(methods, "count", H5T_NATIVE_INT32, r ? r->count.data() : nullptr, {M});
  put(methods, "pk", H5T_NATIVE_DOUBLE, r ? r->pk.data() : nullptr, {M});
  put(methods, "window_diff", H5T_NATIVE_DOUBLE, r ? r->window_diff.data() : nullptr, {M});
  put(heads, "pk", H5T_NATIVE_DOUBLE, r ? r->head_pk.data() : nullptr, {L, H});
  put(heads, "window_diff", H5T_NATIVE_DOUBLE, r ? r->head_window_diff.data() : nullptr, {L, H});
  // Document 0's matrices: written in its round by the rank that has them (every rank takes part).
  const h5::Id example = h5::open_group(file_, "example");
  const h5::Id ds(H5Dopen2(example, "similarity", H5P_DEFAULT), H5Dclose, "similarity");
  const bool mine = r && d == 0 && !r->example.empty();
  const hsize_t S0 = hsize_t(l.example_sentences);
  if (mine) CTXSIM_CHECK(r->example.size() == L * S0 * S0, "segment store: the example does not match the layout");
  h5::write_slab(ds, H5T_NATIVE_DOUBLE, mine ? r->example.data() : nullptr, {0, 0, 0}, {mine ? L : 0, mine ? S0 : 0, mine ? S0 : 0},
                 collective_);
}

void SegmentStore::set_attribute(const std::string& name, const std::string& value) { h5::set_attr(file_, name, value); }

void SegmentStore::flush() { CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL)); }

void SegmentStore::finish(const std::string& finished, double seconds) {
  h5::set_attr(file_, "finished", finished);
  h5::set_attr(file_, "run_seconds", seconds);
  CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  h5::set_attr(file_, "complete", int64_t{1});  // last, and flushed: a store without it was interrupted
  CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  collective_.reset();
  file_.reset();
}

bool is_segment_store(hid_t file) { return h5::has_attr(file, "kind") && h5::get_attr_string(file, "kind") == kKind; }

SegmentResults read_segment_store(hid_t file) {
  SegmentResults r;
  SegmentLayout& l = r.layout;
  const h5::Id docs = h5::open_group(file, "documents"), methods = h5::open_group(file, "methods"), heads = h5::open_group(file, "heads");
  l.subsets = split_lines(h5::get_attr_string(docs, "subsets"));
  l.methods = split_lines(h5::get_attr_string(methods, "names"));
  if (l.subsets.empty() || l.methods.empty()) h5::damaged(docs, "no subsets or no methods named");
  const auto dims = [&](hid_t g, const char* name, hid_t type) {
    const h5::Id ds(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose, name);
    h5::check_readable(ds, type);
    return h5::dims_of(ds);
  };
  const auto b = dims(methods, "boundaries", H5T_NATIVE_INT32), p = dims(docs, "parts", H5T_NATIVE_INT32),
             hp = dims(heads, "pk", H5T_NATIVE_DOUBLE);
  if (b.size() != 3 || p.size() != 3 || hp.size() != 3 || b[1] != l.methods.size() || p[0] != b[0] || hp[0] != b[0] || p[2] != 2 ||
      p[1] < 2 || b[0] > (hsize_t(1) << 24) || b[2] > (hsize_t(1) << 16) || hp[1] * hp[2] > (hsize_t(1) << 16))
    h5::damaged(methods, "the shapes of /methods, /documents and /heads disagree with each other or with the method names");
  l.documents = int64_t(b[0]), l.max_gaps = int64_t(b[2]), l.layers = int64_t(hp[1]), l.heads = int64_t(hp[2]), l.segments = int64_t(p[1]);
  const auto read = [&](hid_t g, const char* name, hid_t type, auto& out, std::vector<hsize_t> want) {
    if (dims(g, name, type) != want) h5::damaged(g, std::string(name) + " has the wrong shape");
    out = h5::read_all<typename std::decay_t<decltype(out)>::value_type>(g, name, type);
  };
  const hsize_t D = b[0], M = b[1];
  read(docs, "subset", H5T_NATIVE_INT32, r.subset, {D});
  read(docs, "sentences", H5T_NATIVE_INT32, r.sentences, {D});
  read(docs, "gold", H5T_NATIVE_INT32, r.gold, {D, p[1] - 1});
  read(methods, "boundaries", H5T_NATIVE_INT32, r.boundaries, {D, M, b[2]});
  read(methods, "count", H5T_NATIVE_INT32, r.count, {D, M});
  read(methods, "pk", H5T_NATIVE_DOUBLE, r.pk, {D, M});
  read(methods, "window_diff", H5T_NATIVE_DOUBLE, r.window_diff, {D, M});
  read(heads, "pk", H5T_NATIVE_DOUBLE, r.head_pk, {D, hp[1], hp[2]});
  const h5::Id example = h5::open_group(file, "example");
  const auto e = dims(example, "similarity", H5T_NATIVE_DOUBLE);
  if (D == 0 || e.size() != 3 || e[0] != hp[1] || e[1] != e[2] || e[1] != hsize_t(r.sentences[0]))
    h5::damaged(example, "similarity does not match document 0's sentences and the model's layers");
  read(example, "similarity", H5T_NATIVE_DOUBLE, r.example, {e[0], e[1], e[2]});
  r.example_boundaries.assign(r.boundaries.begin(), r.boundaries.begin() + ptrdiff_t(M * b[2]));
  for (int32_t s : r.subset)
    if (s < 0 || size_t(s) >= l.subsets.size()) h5::damaged(docs, "a document's subset index is out of range");
  r.model_path = h5::get_attr_string(file, "model_path");
  return r;
}

}  // namespace ctxsim
