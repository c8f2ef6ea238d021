// The store of `ctxsim segment` (docs/STORE.md "Segmentation store"): the benchmark's test
// documents (which corpus documents and sentences each is made of, its gold boundaries), and per
// document every method's boundaries, Pk and WindowDiff, and each head's Pk. Every dataset is
// allocated at creation and written row by row, one test document per work unit, through
// MPI-IO like the run's store (store.h), so a resumed or re-ranked job writes the same rows.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/store/dataset_spec.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store_file.h"

namespace ctxsim {

struct SegmentLayout {
  int64_t documents = 0;             // D: test documents of every subset, dev documents included
  int64_t max_gaps = 0;              // G: the most gaps (sentences - 1) of any document
  int64_t layers = 0, heads = 0;     // the model's
  int64_t segments = 10;             // segments per test document (Choi: 10)
  std::vector<std::string> methods;  // M, segment::method_names order
  std::vector<std::string> subsets;  // names; "dev" is the documents the best layer is chosen on
  int64_t example_sentences = 0;     // S of document 0, whose similarity matrices are kept
};

// The store's datasets, one row each (dataset_spec.h; docs/STORE.md "Segmentation store").
const std::vector<DatasetSpec>& segment_datasets();

// About how many bytes a segmentation store of this layout takes (its datasets are allocated at
// creation), for the free-space check.
double segment_store_bytes(const SegmentLayout& layout);

// What a test document is made of (written at creation).
struct SegmentDocumentInfo {
  int32_t subset = 0;          // index into SegmentLayout::subsets
  int32_t sentences = 0;       // S
  std::vector<int32_t> parts;  // [segments, 2]: (corpus document, sentences taken from it)
  std::vector<int32_t> gold;   // [segments - 1] the gold boundaries
};

// One document's results (segment::DocumentResult laid out for the store).
struct SegmentDocumentResult {
  std::vector<int32_t> boundaries;                // [M, G], -1 past each method's count
  std::vector<int32_t> count;                     // [M]
  std::vector<double> pk, window_diff;            // [M]
  std::vector<double> head_pk, head_window_diff;  // [L, H]
  std::vector<double> example;                    // document 0 only: [L, S, S] its sentence similarity per layer
};

class SegmentStore final : public StoreFile {
 public:
  // Collective. Creates path (under <path>.creating, renamed once flushed) with every dataset
  // allocated and the documents written (rank 0's `documents` is used).
  static SegmentStore create(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout, const StoreAttributes& attrs,
                             const std::vector<SegmentDocumentInfo>& documents);
  static SegmentStore open(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout);
  SegmentStore(SegmentStore&&) = default;

  // Collective: document d's row (nullptr: this rank writes nothing this round).
  void write_document(int64_t d, const SegmentDocumentResult* result);

 private:
  SegmentStore(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout);
  SegmentStore(const std::string& path, MPI_Comm comm, int rank, const SegmentLayout& layout, const StoreAttributes& attrs);
  // finish's results_sha256: every rank reads the rows back.
  std::string results_digest_now() override;
  SegmentLayout layout_;
};

// A complete segmentation store read back (summary, figures). Checks every shape against the
// layout it declares before reading.
struct SegmentResults {
  SegmentLayout layout;
  std::vector<int32_t> subset, sentences;         // [D]
  std::vector<int32_t> parts;                     // [D, segments, 2]
  std::vector<double> pk, window_diff;            // [D, M]
  std::vector<int32_t> boundaries, count, gold;   // [D, M, G], [D, M], [D, segments - 1]
  std::vector<double> head_pk, head_window_diff;  // [D, L, H]
  std::vector<double> example;                    // [L, S0, S0] document 0's sentence similarity per layer
  std::vector<int32_t> example_boundaries;        // [M, G] document 0's, as /methods/boundaries
  std::string model_path;
};
// Reads every dataset, checks it against the layout the store declares and against what a
// segmentation can be (Pk and WindowDiff in [0, 1], boundaries inside their document, in order,
// counts within the gaps), then the SHA-256 of it all against results_sha256 (schema 3; checked
// whenever it is there). Errors name the file (h5::damaged). Collective on an MPI-IO file.
SegmentResults read_segment_store(hid_t file);
// The SHA-256 of everything read_segment_store reads (names, documents, every method's and
// head's results, the example), as written at the end of the job.
std::string results_digest(const SegmentResults& results);

}  // namespace ctxsim
