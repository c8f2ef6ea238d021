// What a session of a job ran under, for its store's root attributes: the command line, the
// hosts of its ranks, and SLURM's ids (docs/STORE.md "Provenance"). A requeued or resumed job is
// a new session: the session that completes a store writes these last.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/job/parallel/comm.h"

namespace ctxsim {

// main(): the command line as typed (argv), shell-quoted where a word needs it.
void record_command_line(int argc, const char* const* argv);
const std::string& recorded_command_line();

// `ctxsim run --sweep-index`: the sweep point this process runs (its name, index and the swept
// keys' values, "key=value"), recorded in the store so that its folder's name need not carry them.
void record_sweep_point(const std::string& sweep, int64_t index, const std::vector<std::string>& values);

using AttributeList = std::vector<std::pair<std::string, std::string>>;

// Collective: (attribute, value) of this session, the same on every rank: command_line, hosts (the
// ranks' host names, sorted, each once), one attribute per row of the SLURM table (empty when the
// job does not run under SLURM), and sweep, sweep_index, sweep_point (one "key=value" a line;
// empty outside a sweep).
AttributeList session_provenance(Communicator& world);

// The attribute names session_provenance() writes, in order (readers and tests iterate them).
std::vector<std::string> provenance_attribute_names();

}  // namespace ctxsim
