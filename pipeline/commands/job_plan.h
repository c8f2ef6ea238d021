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

}  // namespace ctxsim
