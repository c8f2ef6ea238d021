// The run's HDF5 store (layout in docs/STORE.md): samples, per-sample results, aggregate
// statistics with baselines, example matrices, and root attributes. Opened through MPI-IO.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/hdf5.h"
#include "stages/accumulator.h"
#include "stages/samples.h"
#include "stages/selection.h"

namespace ctxsim {

constexpr int64_t kStoreSchemaVersion = 1;

struct StoreLayout {
  int64_t samples = 0, seq_len = 0, layers = 0, heads = 0, vocab = 0;
  std::vector<SelectionRule> rules;
  std::vector<int64_t> examples;  // sample ids with full matrices
};

// Root attributes written at creation (the rest, like finished and complete, at the end).
struct StoreAttributes {
  std::string config_yaml, config_path, model_path, model_sha256, vocab_path, vocab_sha256;
  std::string corpus, corpus_sha256, version, git_revision, started, vector_kind, dtype;
  int64_t ranks = 1, threads = 1;
};

class Store {
 public:
  // Creates path (replacing a file there) with every dataset allocated. Collective on comm.
  Store(const std::string& path, MPI_Comm comm, const StoreLayout& layout, const StoreAttributes& attrs);
  ~Store();

  void write_samples(const SampleSet& samples, const std::string& vocab_text);
  // Per-sample results of samples [first, first + count): arrays [R, count, L, H].
  void write_per_sample(int64_t first, int64_t count, const std::vector<int32_t>& anchor_token,
                        const std::vector<float>& anchor_share, const std::vector<int32_t>& high_pairs);
  // Example e: attention and similarity [L, H, T, T] as float16 bits, selections [R, L, H, T, T].
  void write_example(int64_t e, const std::vector<uint16_t>& attention, const std::vector<uint16_t>& similarity,
                     const std::vector<uint8_t>& selected);
  void write_statistics(const Accumulator& acc, double attention_threshold, const std::vector<std::string>& separators);
  // Sets finished time, timings and complete = 1, then closes the file.
  void finish(const std::string& finished, double seconds);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  StoreLayout layout_;
  h5::Id file_, dxpl_;
};

// Current UTC time, ISO 8601.
std::string utc_now();

// A store's root attributes and completeness, for the resume/refuse decision.
struct StoreInfo {
  bool exists = false, complete = false;
  std::string config_yaml;
};
StoreInfo inspect_store(const std::string& path);

}  // namespace ctxsim
