// What a job (run, segment) does with its output folder, decided once by rank 0 and shared: a
// new store, the resume of an interrupted one, or nothing (complete for this config and these
// inputs); a store of another config or other inputs is an error naming what differs.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/job/config/config.h"
#include "pipeline/job/dist/comm.h"
#include "pipeline/job/durable/checkpoint.h"
#include "pipeline/job/durable/run_lock.h"
#include "pipeline/store/store.h"

namespace ctxsim {

enum class StoreMode : int64_t { Create = 0, Resume = 1, AlreadyDone = 2 };

struct StoreTarget {
  std::string store_path, progress_path, identity_hash;  // the store, its resume state, sha256 of the identity
};

// Collective. Rank 0 takes the lock on output.dir (held in `lock` until the job ends), compares
// what is there with the config (identity_differences for `kind`) and the inputs' digests, and
// reads the resume state into `checkpoint` when resuming; every rank gets the mode.
StoreMode agree_store_mode(MpiComm& world, const Config& c, JobKind kind, const StoreTarget& target, std::unique_ptr<RunLock>& lock,
                           std::optional<Checkpoint>& checkpoint);

// The report of a finished job's store (output.report), into the store's folder. Its failure is
// an Error that says the store is complete and how to make the report without rerunning.
void write_job_report(const Config& c, const std::string& store_path);

// What a job knows when it creates its store, for the root attributes every store has.
struct JobFacts {
  std::string config_path, identity, model_dir;
  std::string model_sha256;  // rank 0's (hashed there while the inputs load); other ranks pass ""
  std::string vocab_path, vocab_text, corpus_sha256;
  int64_t corpus_documents = 0;
  int threads = 1;
};
// Collective (attributes are written collectively): the root attributes shared by run and
// segment stores, rank 0's weights digest on every rank; the caller adds vector and devices.
StoreAttributes job_attributes(MpiComm& world, const Config& c, JobKind kind, const JobFacts& facts);

}  // namespace ctxsim
