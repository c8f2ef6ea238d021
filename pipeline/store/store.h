// The run's HDF5 store (layout in docs/STORE.md): samples, per-sample results, aggregate
// statistics with baselines, example matrices, and root attributes. Opened through MPI-IO.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/store/hdf5.h"
#include "pipeline/store/store_layout.h"
#include "stages/base/error.h"
#include "stages/stats/accumulator.h"
#include "stages/stats/selection.h"
#include "stages/text/samples.h"

namespace ctxsim {

// 2: the statistics carry their SHA-256 (stats_sha256) and corpus_sha256 is filled in.
// 3: every store says its job (`kind`: run | segment) and the digest of the model's config files
// (model_config_sha256); a run store's labels (rule names, separator tokens) carry labels_sha256
// and a segmentation store's results results_sha256.
// Later: a new statistic (its `since` in kStatSchema) takes the next version.
// Readers accept 1 to the current and refuse any other; a digest that is there is checked
// whatever the version says (no downgrade by editing it).
// 5: /units, each work unit's partial sums (bootstrap intervals, SPEC §5.1); a store without it
// has no intervals.
constexpr int64_t kStoreLayoutVersion = 5;
inline int64_t store_schema_version() { return std::max(kStoreLayoutVersion, statistics_schema_version()); }

// (attribute, text) pairs: the session's provenance (pipeline/job/parallel/provenance.h).
using TextAttributes = std::vector<std::pair<std::string, std::string>>;

// Root attributes written at creation (the rest, like finished and complete, at the end).
struct StoreAttributes {
  std::string kind;  // the job: "run" | "segment" | "prune"
  std::string config_yaml, config_path, model_path, model_sha256, model_config_sha256, vocab_path, vocab_sha256;
  std::string corpus, corpus_sha256, version, git_revision, started, vector_kind, dtype, devices, isa;
  std::string family = "bert";  // the model's config.json model_type (SPEC §7)
  bool causal = false;          // its attention: causal (a decoder) or bidirectional
  int64_t ranks = 1, threads = 1;
  TextAttributes session;  // command_line, hosts, slurm_*: rewritten by the session that finishes the store
};

// The root attributes of a new store (run or segment), complete = 0. Collective.
void write_root_attributes(hid_t file, const StoreAttributes& attrs);
// Collective: the session's provenance attributes (at creation, and again by the session that finishes).
void write_session_attributes(hid_t file, const TextAttributes& session);

// Collective: a new store, flushed under `creating`, renamed over `path` by rank 0 once every
// rank is done with it (so path is never a store that did not start).
void move_into_place(const std::string& creating, const std::string& path, MPI_Comm comm, int rank);

class Store {
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
  ~Store();

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
  // Durable point: every rank's writes so far reach the file (collective).
  void flush();
  // Collective: the same value on every rank.
  void set_attribute(const std::string& name, const std::string& value);
  // Sets finished time, run seconds and complete = 1 (last), then closes the file. Collective.
  // `session`: the finishing session's provenance (a resumed or requeued job's own).
  void finish(const std::string& finished, double seconds, const TextAttributes& session);

  const std::string& path() const { return path_; }

  // Rethrows an HDF5 error `e` of writing `path` as "no space left" when its file system is
  // (nearly) full; returns otherwise.
  static void throw_if_full(const Error& e, const std::string& path, double need);

 private:
  Store(const std::string& path, MPI_Comm comm, int rank, const StoreLayout& layout, bool create);
  // Rank 0 writes; the others take part with nothing (collective).
  void write_samples(const SampleSet& samples, const std::string& vocab_text);
  // Runs a write, turning an HDF5 error on a full file system into "no space left".
  template <class F>
  void guarded(F&& write) {
    try {
      write();
    } catch (const Error& e) {
      throw_if_full(e, path_, store_bytes(layout_));
      throw;
    }
  }
  std::string path_;
  StoreLayout layout_;
  int rank_ = 0;
  h5::Id file_, collective_, independent_;
};

// Readers shared by summary, collect and report: the vocabulary kept in the store (the line
// number is the token id; checked against the root's vocab_sha256 when the store has it) and the
// names of the rule groups under /stats, in order.
std::vector<std::string> store_vocab(hid_t file);
std::vector<std::string> store_rules(hid_t stats_group);

// The SHA-256 of the labels readers print beside a run store's statistics, as the attributes hold
// them: /stats rules, /stats/attention separators and separator_tokens (root labels_sha256).
std::string labels_digest(const std::string& rules, const std::string& separators, const std::string& separator_tokens);

// The schema a store was written in, from what it holds as well as what it says: its
// schema_version, raised to 3 when it has model_config_sha256 and to 2 when it has stats_sha256,
// so that setting the version back does not switch a check off (readers use this, not the
// attribute alone).
int64_t effective_schema_version(hid_t file);

// Which store this is, wherever it lies: the SHA-256 of its kind, start time, config and
// weights' digest (a copy has the same; a store rerun in its folder has another).
std::string store_identity(hid_t file);

// Current UTC time, ISO 8601.
std::string utc_now();

// What lies at a store's path, for the resume/refuse decision and for every reader.
struct StoreInfo {
  enum class Kind { Missing, NotAStore, Store };
  Kind kind = Kind::Missing;
  std::string what;  // NotAStore: "a folder", "an empty file", "not an HDF5 file", …
  bool complete = false;
  int64_t schema_version = 0;
  std::string job;  // "run" | "segment" (stores before schema 3: a segmentation store says so, a run store does not)
  std::string config_yaml;
  // The inputs it was made from ("" when not recorded).
  std::string model_sha256, model_config_sha256, vocab_sha256, corpus_sha256;
  bool exists() const { return kind != Kind::Missing; }
};
// What is at `path`. A store whose schema_version this ctxsim does not read, or whose root
// attributes have the wrong types, throws ctxsim::Error naming the file and the attribute.
StoreInfo inspect_store(const std::string& path);
// Every file named store.h5 under `dir` (a sweep's folder), sorted folder by folder.
std::vector<std::string> stores_under(const std::string& dir);

// Opens a complete store to read (summary, collect, report). Throws naming what the file is when
// it is not a store, and how to finish it when it is not complete.
h5::Id open_complete_store(const std::string& path);

// A check that the folder's file system has about `bytes` free (store_bytes of the layout).
void check_free_space(const std::string& dir, double bytes, const std::string& where);

}  // namespace ctxsim
