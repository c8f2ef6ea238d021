// Resume state of a run, beside the store as <store>.progress: which units are done and the
// merged accumulators of those units. Written by rank 0 to a temporary file, fsync'ed and renamed
// over the old one, so a kill at any moment leaves the previous or the next state, never half.
// A checksum guards against anything else: a damaged or unreadable file is an error (the user
// chooses between restoring it and starting over), never silently ignored.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ctxsim {

struct Checkpoint {
  std::string identity;       // sha256 of the results-determining config
  int64_t generation = 0;     // increases with every write
  std::vector<uint8_t> done;  // [units] 1 = the unit's per-sample data is in the store
  std::vector<int64_t> acc;   // the Accumulator buffer summed over the done units
};

std::string checkpoint_path(const std::string& store_path);
void write_checkpoint(const std::string& path, const Checkpoint& c);
// nullopt when there is no file; throws ctxsim::Error naming the file when it cannot be read or
// is damaged.
std::optional<Checkpoint> read_checkpoint(const std::string& path);

}  // namespace ctxsim
