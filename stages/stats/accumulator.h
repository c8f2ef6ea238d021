// Mergeable statistics of SPEC §4: one schema, one buffer. kStatSchema names every statistic
// (its dataset in the store, its shape and meaning) once; the Accumulator lays one flat int64
// buffer out from it, so a merge is an element-wise sum and a reduction across ranks is one
// all-reduce. The statistics kernels, the store's writer and reader and docs/STORE.md (a test
// checks it) all go through the table. No LibTorch, MPI or HDF5 here.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

struct StatsShape {
  int64_t rules = 1;       // R: selection rules
  int64_t layers = 12;     // L
  int64_t heads = 12;      // H
  int64_t seq_len = 128;   // T
  int64_t vocab = 30522;   // V
  int64_t separators = 0;  // S: the separator tokens, each once (separator_tokens of the options)
};

// Separator attention mass is summed as fixed point: round(mass × 2^32) per sample, head and
// separator token; the mass on a set of separators is the sum of its tokens' values, so that the
// per-token masses add up to it exactly.
constexpr double kFixedPointScale = 4294967296.0;
// A sample's effective rank is put on a grid of 2^-16 before it is summed (in units of 2^-32, as
// the attention mass): a ratio of sums of T^2 products, its last bits follow the BLAS kernel that
// made the vectors (an ISA level, a GPU); on this grid they do not reach the stored value.
constexpr double kEffectiveRankGrid = 65536.0;

// Every statistic, in the order of the buffer (and of kStatSchema).
enum class Stat : uint8_t {
  // per rule, layer and head, summed over samples
  HighPairs,
  DistanceHist,
  SameSentence,
  SentenceEligible,
  SameToken,
  SameWord,
  InAttention,
  AnchorPairs,
  Noise,
  SamplesWithPairs,
  DistinctAnchors,
  AnchorCounts,
  // chance baselines: the same counts over every valid pair
  Samples,
  ValidPairs,
  DistanceAll,
  SameSentenceAll,
  SentenceEligibleAll,
  SameTokenAll,
  SameWordAll,
  // attention, per rule: a folded sweep may give each rule its own threshold and separators
  HighAttentionAll,
  SeparatorMass,
  // attention on each separator token (rule-independent); a rule's SeparatorMass is the sum of its tokens'
  SeparatorMassByToken,
  // the head's effective rank (SPEC §9; the same for every rule, kept per rule so that readers
  // take it with the rule's counts): the sum over samples of the participation ratio, and its count
  EffectiveRank,
  EffectiveRankSamples,
  // attention on the sample's first position (the "attention sink"; rule-independent, kept per rule as the effective rank)
  FirstTokenMass,
};
inline constexpr size_t kStatCount = 25;

enum class StatShape : uint8_t { Scalar, T, L, LH, LHT, LHV, LHS };

struct StatInfo {
  Stat id;
  const char* name;          // dataset name in the store
  bool per_rule;             // one per selection rule (in /stats/<rule>), else once (in /stats/baseline)
  StatShape shape;           // without the leading R of rule fields
  const char* description;   // meaning and units: the dataset's description attribute
  bool fixed_point = false;  // in units of 2^-32 (kFixedPointScale): attention mass
  // The store schema_version from which every store has it: an older store may lack it (its
  // readers skip it, and its digest was written without it). A new statistic takes the next
  // version, which the store then writes (statistics_schema_version).
  int64_t since = 2;
};
extern const std::array<StatInfo, kStatCount> kStatSchema;
const StatInfo& stat_info(Stat s);
// The newest `since` of the schema: the store schema the statistics need.
int64_t statistics_schema_version();

// A field of one accumulator: its schema entry, extents and place in the buffer.
struct StatField {
  const StatInfo* info = nullptr;
  std::vector<int64_t> dims;  // without the leading R of rule fields
  size_t offset = 0;          // into the flat buffer (rule fields: of rule 0)
  size_t size = 0;            // elements per rule (or in all)
  const char* name() const { return info->name; }
  bool per_rule() const { return info->per_rule; }
};

// Work-unit partial sums (SPEC §5.1 intervals): every field but anchor_counts ([L, H, V] for
// each unit would outweigh the rest of the store), kept per unit so that readers resample units.
bool kept_per_unit(const StatInfo& s);

class Accumulator {
 public:
  Accumulator() = default;
  explicit Accumulator(const StatsShape& shape);

  const StatsShape& shape() const { return shape_; }
  const std::vector<StatField>& fields() const { return fields_; }  // in kStatSchema order
  const StatField& field(Stat s) const { return fields_[size_t(s)]; }

  // A field's data; rule fields take the rule index.
  int64_t* at(Stat s, int64_t rule = 0) { return buffer_.data() + offset(s, rule); }
  const int64_t* at(Stat s, int64_t rule = 0) const { return buffer_.data() + offset(s, rule); }

  std::vector<int64_t>& buffer() { return buffer_; }
  const std::vector<int64_t>& buffer() const { return buffer_; }

  void merge(const Accumulator& other);  // element-wise sum; shapes must match
  // The fields kept_per_unit of a buffer of this shape, in field order, a rule field's rules one
  // after the other: a unit's row is that of the buffer after the unit less that of before.
  std::vector<int64_t> unit_row(const int64_t* buffer) const;
  // SHA-256 (hex) of the buffer as little-endian int64 in field order: what a store writes with
  // `complete` (stats_sha256) and every reader checks. A store of an older schema_version has
  // the digest of the fields it had: digest(version) leaves out those added later.
  std::string digest(int64_t schema_version = 0) const;
  bool operator==(const Accumulator& o) const { return buffer_ == o.buffer_; }

 private:
  size_t offset(Stat s, int64_t rule) const {
    const StatField& f = fields_[size_t(s)];
    return f.offset + (f.per_rule() ? static_cast<size_t>(rule) * f.size : 0);
  }
  StatsShape shape_;
  std::vector<StatField> fields_;
  std::vector<int64_t> buffer_;
};

// Checks SPEC §5's invariants on an accumulator; returns the violations (empty when sound).
std::vector<std::string> check_invariants(const Accumulator& acc);

}  // namespace ctxsim
