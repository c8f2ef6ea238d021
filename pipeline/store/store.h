// The run's HDF5 store (layout in docs/STORE.md): samples, per-sample results, aggregate
// statistics with baselines, example matrices, and root attributes. Opened through MPI-IO.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/store/dataset_spec.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store_file.h"
#include "pipeline/store/store_layout.h"
#include "stages/base/error.h"
#include "stages/stats/accumulator.h"
#include "stages/stats/selection.h"
#include "stages/text/samples.h"

namespace ctxsim {

class Store final : public StoreFile {
 public:
  // Creates path with every dataset allocated, the samples and vocabulary written and every axis
  // named by a dimension scale (docs/STORE.md "With xarray"), so that afterwards only raw data
  // and attributes change. The file is made under <path>.creating and
  // renamed over path only once all of that is flushed: path is never a store that did not start
  // (and a failure leaves nothing). Collective on comm.
  static Store create(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout, const StoreAttributes& attrs,
                      const SampleSet& samples, const std::string& vocab_text);
  // Opens a store made by create() to continue it. Collective on comm.
  static Store open(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout);
  Store(Store&&) = default;
  ~Store() override;

  // Per-sample results of samples [first, first + count): arrays [R, count, L, H]. Collective;
  // a rank with nothing to write passes count 0.
  void write_per_sample(int64_t first, int64_t count, const std::vector<int32_t>& anchor_token, const std::vector<float>& anchor_share,
                        const std::vector<int32_t>& high_pairs);
  // Unit `unit`'s partial sums (Accumulator::unit_row) into /units. Collective; a rank with no
  // unit this round passes -1.
  void write_unit_sums(int64_t unit, const std::vector<int64_t>& row);
  // Example e: attention and similarity [L, H, T, T] as float16 bits, selections [R, L, H, T, T].
  // Independent I/O by the rank that computed the example.
  void write_example(int64_t e, const std::vector<uint16_t>& attention, const std::vector<uint16_t>& similarity,
                     const std::vector<uint8_t>& selected);
  // Aggregates: data from rank 0 (the others pass anything); attributes collective.
  // separator_tokens: the spellings of separator_mass_by_token's last axis.
  void write_statistics(const Accumulator& acc, double attention_threshold, const std::vector<std::string>& separators,
                        const std::vector<std::string>& separator_tokens);

 private:
  Store(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout);
  Store(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout, const StoreAttributes& attrs);
  // Rank 0 writes; the others take part with nothing (collective).
  void write_samples(const SampleSet& samples, const std::string& vocab_text);
  StoreLayout layout_;
  h5::Id independent_;
};

// The datasets of a run store outside /stats and /units (whose table is the statistics schema,
// kStatSchema): /samples, /per_sample, /examples and /vocab, in creation order.
const std::vector<DatasetSpec>& run_datasets();

// Readers shared by summary, collect and report: the vocabulary kept in the store (the line
// number is the token id; checked against the root's vocab_sha256 when the store has it) and the
// names of the rule groups under /stats, in order.
std::vector<std::string> store_vocab(hid_t file);
std::vector<std::string> store_rules(hid_t stats_group);

// The SHA-256 of the labels readers print beside a run store's statistics, as the attributes hold
// them: /stats rules, /stats/attention separators and separator_tokens (root labels_sha256).
std::string labels_digest(const std::string& rules, const std::string& separators, const std::string& separator_tokens);

}  // namespace ctxsim
