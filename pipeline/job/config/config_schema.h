// The key table of the config (config_schema.cpp), built from the YAML value readers of
// yaml_values.h, for config.cpp and sweep expansion only: every key's path, help, reader, writer, copier and
// whether it determines a run's results.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/job/config/config.h"
#include "pipeline/job/config/yaml_values.h"

namespace ctxsim {

// One key: its path, help, how it is read, written and copied, and whether it determines a run's
// results (the identity of a store) or only steers how the run goes. The defaults are Config's
// own member initialisers.
// A key is "section.key", or a whole section ("selection": a list of rules), which may take
// "section.sub=value" overrides for its `subkeys`.
struct Field {
  std::string path;  // "samples.seq_len"
  std::string help;  // meaning, units, sentinels: the comment in the effective config
  // The value at `where` (file:line:col, or the command line) of `file` (positions of list items).
  std::function<void(Config&, const YAML::Node&, const std::string& file, const std::string& where)> set;
  std::function<void(const Config&, YAML::Emitter&)> emit;
  std::function<void(const Config& from, Config& to)> copy;
  bool determines_results = true;
  uint32_t used_by = 1;              // which jobs read the key: a bit per row of job_kinds() (1: run)
  std::vector<std::string> subkeys;  // a section key's "path.sub" overrides and sweep axes
  std::function<void(Config&, const std::string& sub, const YAML::Node&, const std::string& where)> set_sub;
  bool is_section() const { return path.find('.') == std::string::npos; }
  bool used_by_job(JobKind kind) const { return used_by & (1u << kind.row); }
  // Part of the identity of a store (run) or a checkpoint (pretrain).
  bool identifies(JobKind kind) const { return determines_results && used_by_job(kind); }
};

// Every key of the sections corpus … runtime, in the order of the effective config.
const std::vector<Field>& schema();
const Field* find_field(const std::string& path);  // nullptr for an unknown path
// The field of a key: "section.key", a section key, or "section.sub" of a section key's subkeys
// (`sub` gets "sub", else ""); nullptr for an unknown key.
const Field* field_of_key(const std::string& key, std::string* sub = nullptr);
const std::vector<std::string>& sections();                    // corpus, samples, …, sweep
std::vector<std::string> keys_of(const std::string& section);  // "seq_len", … of a section

// The names and values of a choice key's enum.
template <class E>
const std::vector<std::pair<std::string, E>>& choices_of();

}  // namespace ctxsim
