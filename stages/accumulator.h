// Mergeable statistics of SPEC §4: one flat int64 buffer with named, shaped fields, so a merge
// is an element-wise sum and a reduction across ranks is one all-reduce. Integer sums make
// results independent of how samples were split. No LibTorch, MPI or HDF5 here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ctxsim {

struct StatsShape {
  int64_t rules = 1;     // R: selection rules
  int64_t layers = 12;   // L
  int64_t heads = 12;    // H
  int64_t seq_len = 128; // T
  int64_t vocab = 30522; // V
};

// Separator attention mass is summed as fixed point: round(mass × 2^32) per sample and head.
constexpr double kFixedPointScale = 4294967296.0;

struct StatField {
  std::string group;              // "rule" (one per selection rule), "baseline" or "attention"
  std::string name;               // dataset name in the store
  std::vector<int64_t> dims;      // without the leading R of rule fields
  std::string description;        // meaning and units, stored as the dataset's description
  size_t offset = 0;              // into the flat buffer (rule fields: of rule 0)
  size_t size = 0;                // elements per rule (or in all)
};

class Accumulator {
 public:
  Accumulator() = default;
  explicit Accumulator(const StatsShape& shape);

  const StatsShape& shape() const { return shape_; }
  const std::vector<StatField>& fields() const { return fields_; }
  const StatField& field(const std::string& name) const;   // throws on an unknown name

  // Pointer to a field's data; rule fields take the rule index.
  int64_t* at(const std::string& name, int64_t rule = 0);
  const int64_t* at(const std::string& name, int64_t rule = 0) const;

  std::vector<int64_t>& buffer() { return buffer_; }
  const std::vector<int64_t>& buffer() const { return buffer_; }

  void merge(const Accumulator& other);                  // element-wise sum; shapes must match
  bool operator==(const Accumulator& o) const { return buffer_ == o.buffer_; }

 private:
  void add(const std::string& group, const std::string& name, std::vector<int64_t> dims, std::string description);
  StatsShape shape_;
  std::vector<StatField> fields_;
  std::vector<int64_t> buffer_;
};

// Checks SPEC §5's invariants on an accumulator; returns the violations (empty when sound).
std::vector<std::string> check_invariants(const Accumulator& acc);

}  // namespace ctxsim
