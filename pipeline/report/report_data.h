// What a report shows, read from a finished store and checked before anything is written: the
// aggregates of one rule and the stored examples, one at a time. For pipeline/report/ only.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/store/store_reader.h"
#include "stages/stats/metrics.h"

namespace ctxsim::report {

// JSON as text that is safe inside a <script> element, whatever its strings hold (a store's
// tokens, a label: stores travel between people): '<', '>' and '&' as \u003c, \u003e, \u0026, so
// that no "</script>" or "<!--" can end or change the element, and U+2028/U+2029 escaped too.
// Invalid UTF-8 is replaced.
std::string script_json(const nlohmann::json& value);
inline std::string json_str(const std::string& s) { return script_json(nlohmann::json(s)); }

// The Content-Security-Policy <meta> element of a self-contained page: nothing loads from
// outside, images only from data: URIs, inline styles, and no script runs but `scripts` (the
// exact text of the page's own inline scripts, allowed by their SHA-256): a script or event
// handler that a hostile string smuggled in would not run.
std::string content_security_policy(const std::vector<std::string>& scripts);

// Everything the report shows, read and checked up front.
struct StoreData {
  std::string store, run, rule;
  StoreModel model;  // family and causal attention (SPEC §7)
  int L = 0, H = 0, T = 0, R = 0, rule_index = 0;
  double beta = 0.1;
  Baseline base;
  RuleStats stats;
  Intervals intervals;  // the rule's bootstrap intervals (SPEC §5.1); empty for a store without /units
  std::vector<std::string> vocab;
  std::vector<int64_t> example_ids;
  std::vector<int32_t> tokens;
  std::vector<int16_t> n_valid;
};

// Reads and checks the store's aggregates of `rule` (the first when empty), its samples and the
// shapes of its examples. Throws ctxsim::Error naming what is missing or misshapen.
StoreData load_store_data(hid_t file, const std::string& store, const std::string& rule);

// The (layer, head) pairs drawn as figures per example: "L:H" strings, or 0, L/2, L-1 at head 0.
std::vector<std::pair<int, int>> parse_heads(const std::vector<std::string>& given, const StoreData& d);

// One stored example as read from the store: every head's matrices, [L, H, T, T], of which
// the first n positions are the sample's valid tokens.
struct Example {
  int64_t id = 0;
  int n = 0, H = 0, T = 0;
  std::vector<std::string> labels;  // the n decoded tokens
  std::vector<float> attention, similarity;
  std::vector<uint8_t> selected;  // of the report's rule

  // Head (l, h) of one of the [L, H, T, T] arrays, as an n x n matrix.
  template <class V>
  V head(const V& all, int l, int h) const {
    V v(size_t(n) * size_t(n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        v[size_t(i * n + j)] = all[((size_t(l) * size_t(H) + size_t(h)) * size_t(T) + size_t(i)) * size_t(T) + size_t(j)];
    return v;
  }
};

Example load_example(hid_t file, const StoreData& d, size_t e);

// Pairs i < j that are high-attention, max(A_ij, A_ji) >= beta, of an n x n attention matrix.
std::vector<uint8_t> high_attention(const std::vector<float>& a, int n, double beta);
// Mean pooling of an n x n matrix in block x block cells (none when block is 1).
std::vector<float> pooled(const std::vector<float>& v, int n, int block);
// The coarsest pooling figures and explorer always use: at most 256 cells a side.
inline int legible_block(int n) { return std::max(1, (n + 255) / 256); }
// Pairs (i < j) of an n x n boolean matrix, pooled to m x m cells (a cell is set when any pair in it is).
std::vector<std::pair<int, int>> cells_of(const std::vector<uint8_t>& mask, int n, int block);

}  // namespace ctxsim::report
