// The bounds of the quantities ctxsim computes with, each named once. Where input enters (the
// config's key table, a command-line option, a store reader) the bound is checked, naming the
// key or option; below that the stages assume it, and what only a model or a corpus decides (a
// model's positions) is checked by the stages naming the quantity, not a config key: the
// pipeline says which key set it.
#pragma once
#include <cstdint>
#include <string>

namespace ctxsim {

struct Limit {
  const char* quantity;  // what is bounded, in words
  int64_t lo, hi;        // inclusive
  bool holds(int64_t v) const { return v >= lo && v <= hi; }
};

// Tokens per sample, [CLS] and [SEP] included: at least one token between them; at most what
// the statistics' 16-bit positions and the T x T matrices of a batch allow with room to spare.
inline constexpr Limit kSeqLen{"tokens per sample", 3, 8192};
// Layers and heads of a model or a store.
inline constexpr Limit kLayersOrHeads{"layers or heads", 1, 1024};
// Counts the config gives (samples, documents, work units, sample ids).
inline constexpr Limit kCount{"a count", 0, 1'000'000'000};

// "" when `tokens` positions fit a model's max_position_embeddings, else what is wrong (naming
// the quantity: the caller names the key or option that asked for them).
inline std::string positions_problem(int64_t tokens, int64_t max_positions) {
  if (tokens <= max_positions) return {};
  return std::to_string(tokens) + " " + kSeqLen.quantity + " exceed the model's max_position_embeddings (" + std::to_string(max_positions) +
         ")";
}

}  // namespace ctxsim
