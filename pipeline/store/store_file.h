// What every ctxsim store is, whichever job writes it (run, segment, prune): one parallel-HDF5
// file opened by every rank through MPI-IO, made under <path>.creating and renamed into place
// once its datasets exist, its root attributes (docs/STORE.md "Root attributes"), and its end:
// the finishing session's provenance, the results' digest, `complete` written last. Also where
// stores are found and what a disk must hold for one. A job's store derives from StoreFile and
// adds its datasets and rows (store.h, segment_store.h, prune_store.h).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/store/hdf5.h"
#include "stages/base/error.h"

namespace ctxsim {

// 2: the statistics carry their SHA-256 (stats_sha256) and corpus_sha256 is filled in.
// 3: every store says its job (`kind`: run | segment | prune) and the digest of the model's
// config files (model_config_sha256); a run store's labels (rule names, separator tokens) carry
// labels_sha256 and a segmentation store's results results_sha256.
// 5: /units, each work unit's partial sums (bootstrap intervals, SPEC §5.1); a store without it
// has no intervals.
// Later: a new statistic (its `since` in kStatSchema) takes the next version.
// Readers accept 1 to the current and refuse any other; a digest that is there is checked
// whatever the version says (no downgrade by editing it).
constexpr int64_t kStoreLayoutVersion = 5;
// The version new stores are written in: the layout's or the newest statistic's, the higher.
int64_t store_schema_version();

// (attribute, text) pairs: the session's provenance (pipeline/job/parallel/provenance.h).
using TextAttributes = std::vector<std::pair<std::string, std::string>>;

// Root attributes written at creation (the rest, like finished and complete, at the end).
struct StoreAttributes {
  std::string kind;  // the job: "run" | "segment" | "prune"
  std::string config_yaml, config_path, model_path, model_sha256, model_config_sha256, vocab_path, vocab_sha256;
  std::string corpus, corpus_sha256, version, git_revision, started, vector_kind, dtype, devices, isa;
  // Written only when not "": a pruning store's SHA-256 of the scores it took from
  // prune.scores_from; a byte-level BPE model.vocab's merges and rules (tokenizer_sha256).
  std::string scores_sha256, tokenizer_sha256;
  std::string family = "bert";  // the model's config.json model_type (SPEC §7)
  bool causal = false;          // its attention: causal (a decoder) or bidirectional
  int64_t ranks = 1, threads = 1;
  TextAttributes session;  // command_line, hosts, slurm_*: rewritten by the session that finishes the store
};

// Collective: the session's provenance attributes (at creation, and again by the session that finishes).
void write_session_attributes(hid_t file, const TextAttributes& session);

class StoreFile {
 public:
  StoreFile(StoreFile&&) = default;
  StoreFile& operator=(StoreFile&&) = default;
  virtual ~StoreFile();

  const std::string& path() const { return path_; }
  // Durable point: every rank's writes so far reach the file (collective).
  void flush();
  // Collective: the same value on every rank.
  void set_attribute(const std::string& name, const std::string& value);
  // Collective: the finishing session's provenance (a resumed or requeued job's own), the results'
  // SHA-256 (results_sha256, when the kind has one), finished and run_seconds, then complete = 1,
  // written last and flushed (a store without it was interrupted); the file is closed.
  void finish(const std::string& finished, double seconds, const TextAttributes& session);

  // Rethrows an HDF5 error `e` of writing `path` as "no space left" when its file system is
  // (nearly) full; returns otherwise.
  static void throw_if_full(const Error& e, const std::string& path, double need);

 protected:
  // Collective. Opens the store at `path` to continue it. `bytes`: about what the store takes
  // (its layout's estimate), for the full-disk message.
  StoreFile(const std::string& path, MPI_Comm comm, int rank, double bytes);
  // Collective. Creates <path>.creating with the root attributes (complete = 0); the derived
  // store then calls build() to add its datasets. `attrs.kind` must be `kind`.
  StoreFile(const std::string& path, MPI_Comm comm, int rank, double bytes, const StoreAttributes& attrs, const char* kind);

  // Collective, once, right after the creating constructor: `fill` makes the kind's groups and
  // datasets and writes what is known at creation; then the CF attributes, a flush, and the
  // rename over the store's path (path is never a store that did not start). A failure removes
  // the file (a store that never started leaves nothing) and names a full disk as such.
  template <class F>
  void build(F&& fill) {
    try {
      fill();
      place();
    } catch (const Error& e) {
      abandon();
      throw_if_full(e, final_path(), bytes_);
      throw;
    } catch (...) {
      abandon();
      throw;
    }
  }

  // Runs a write, turning an HDF5 error on a full file system into "no space left".
  template <class F>
  void guarded(F&& write) {
    try {
      write();
    } catch (const Error& e) {
      throw_if_full(e, path_, bytes_);
      throw;
    }
  }

  // The SHA-256 of the kind's results as a reader recomputes it, read back by every rank
  // (collective); "" for a kind whose digests are written with its results (the run store's).
  virtual std::string results_digest_now() { return {}; }

  std::string path_;
  int rank_ = 0;
  double bytes_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  h5::Id file_, collective_;

 private:
  std::string final_path() const;
  void place();
  void abandon();
};

// Which store this is, wherever it lies: the SHA-256 of its kind, start time, config and
// weights' digest (a copy has the same; a store rerun in its folder has another).
std::string store_identity(hid_t file);

// The schema a store was written in, from what it holds as well as what it says: its
// schema_version, raised to 3 when it has model_config_sha256 and to 2 when it has stats_sha256,
// so that setting the version back does not switch a check off (readers use this, not the
// attribute alone).
int64_t effective_schema_version(hid_t file);

// The job that wrote a store: its `kind` attribute, "run" for a run store older than schema 3.
std::string store_job(hid_t file);

// Throws, naming the file, when `file` is not the store of `ctxsim <job>` (a reader of one kind
// handed another's).
void require_store_job(hid_t file, const std::string& job);

// Current UTC time, ISO 8601.
std::string utc_now();

// What lies at a store's path, for the resume/refuse decision and for every reader.
struct StoreInfo {
  enum class Kind { Missing, NotAStore, Store };
  Kind kind = Kind::Missing;
  std::string what;  // NotAStore: "a folder", "an empty file", "not an HDF5 file", …
  bool complete = false;
  int64_t schema_version = 0;
  std::string job;  // store_job: "run" | "segment" | "prune"
  std::string config_yaml;
  // The inputs it was made from ("" when not recorded).
  std::string model_sha256, model_config_sha256, vocab_sha256, corpus_sha256, scores_sha256, tokenizer_sha256;
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

// A check that the folder's file system has about `bytes` free (a layout's estimate).
void check_free_space(const std::string& dir, double bytes, const std::string& where);

}  // namespace ctxsim
