// The aggregate statistics of a finished store, read back with their shapes checked, as the
// counts readers show (stages/stats/counts.h) for `summary`, `collect` and `report`.
#pragma once
#include <hdf5.h>

#include "pipeline/store/hdf5.h"
#include "stages/stats/accumulator.h"
#include "stages/stats/bootstrap.h"
#include "stages/stats/counts.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

// The fix of every "damaged store" error.
inline constexpr const char* kDamagedStoreFix = h5::kNotAStoreFix;

// The spelling of token `id` in a store's vocabulary; "?" for an id past its lines (a padded
// vocab_size) or negative.
inline const std::string& token_text(const std::vector<std::string>& vocab, int64_t id) {
  static const std::string unknown = "?";
  return id >= 0 && id < int64_t(vocab.size()) ? vocab[size_t(id)] : unknown;
}

// The model a store measured (SPEC §7): its family (config.json's model_type) and whether its
// attention is causal. Stores written before ctxsim recorded them are BERT's. A family ctxsim does
// not know, or a causal flag other than 0 or 1, is a damaged store (an Error naming `store`).
struct StoreModel {
  std::string family = "bert";
  std::string display = "BERT";
  bool causal = false;
  std::string describe() const;  // "GPT-2, causal attention"
};
StoreModel read_store_model(hid_t file, const std::string& store);

// A store's /stats read back into the accumulator it was written from (kStatSchema: every
// field of every rule), each dataset's type and shape checked against the store's own R, L, H,
// T, V and S before anything is allocated, then its SHA-256 against the stats_sha256 written
// with `complete` (schema 2) and SPEC §5's invariants: a changed bit is a damaged store. Throws
// ctxsim::Error naming `store` and the dataset. vocab_tokens: the /vocab lines, which V covers.
struct StoreStats {
  std::vector<std::string> rules;             // /stats rules, in order (the accumulator's R)
  std::vector<std::string> separator_tokens;  // the axis S of separator_mass_by_token
  Accumulator acc;
  bool has_separator_tokens = false;                 // false in stores written before it was measured
  int64_t schema_version = 0;                        // effective_schema_version: a statistic with a later `since` reads as zeros
  size_t rule_index(const std::string& rule) const;  // throws naming the rules there are
};
StoreStats read_store_stats(hid_t file, const std::string& store, int64_t vocab_tokens);
Baseline baseline_of(const StoreStats& stats);

// A complete run store put through every check the statistics' readers make (shapes, digests,
// invariants, value ranges); returns what it holds in a few words ("run store: 2000 samples, 12
// layers x 12 heads, 1 rule"). Throws like the readers, naming the file.
std::string verify_run_store(hid_t file, const std::string& path);
RuleStats rule_stats_of(const StoreStats& stats, size_t rule);

// Rule `rule`'s per-unit partial sums (/units) with every shape checked and their sums against
// the totals in `stats` (a unit that does not add up is a damaged store); empty for a store
// written before ctxsim kept them. The intervals of a store: bootstrap_intervals of these.
UnitSums read_unit_sums(hid_t file, const std::string& store, const StoreStats& stats, size_t rule);
Intervals store_intervals(hid_t file, const std::string& store, const StoreStats& stats, size_t rule);

}  // namespace ctxsim
