#include "stages/accumulator.h"

#include "stages/error.h"

namespace ctxsim {

Accumulator::Accumulator(const StatsShape& s) : shape_(s) {
  const int64_t L = s.layers, H = s.heads, T = s.seq_len, V = s.vocab;
  // Per rule, layer and head (SPEC §4), summed over samples.
  add("rule", "high_pairs", {L, H}, "selected pairs (count)");
  add("rule", "distance_hist", {L, H, T}, "selected pairs by distance d = j - i (count; index 0 always 0)");
  add("rule", "same_sentence", {L, H}, "selected pairs inside one sentence (count)");
  add("rule", "sentence_eligible", {L, H}, "selected pairs whose two tokens both belong to a sentence (count)");
  add("rule", "same_token", {L, H}, "selected pairs of equal non-special token ids (count)");
  add("rule", "in_attention", {L, H}, "selected pairs with max(A_ij, A_ji) >= attention_threshold (count)");
  add("rule", "anchor_pairs", {L, H}, "selected pairs touching the sample's anchor token (count)");
  add("rule", "noise", {L, H}, "selected pairs not same-sentence, not same-token, not touching the anchor (count)");
  add("rule", "samples_with_pairs", {L, H}, "samples with at least one selected pair (count)");
  add("rule", "distinct_anchors", {L}, "sum over samples of the number of distinct anchors across the layer's heads");
  add("rule", "anchor_counts", {L, H, V}, "samples whose anchor is each token id (count)");
  // Chance baselines: the same counts over all valid pairs.
  add("baseline", "samples", {}, "samples accumulated (count)");
  add("baseline", "valid_pairs", {}, "valid pairs i < j over all samples (count)");
  add("baseline", "distance_all", {T}, "valid pairs by distance d = j - i (count)");
  add("baseline", "same_sentence_all", {}, "valid pairs inside one sentence (count)");
  add("baseline", "sentence_eligible_all", {}, "valid pairs whose two tokens both belong to a sentence (count)");
  add("baseline", "same_token_all", {}, "valid pairs of equal non-special token ids (count)");

  // Attention statistics; per rule because a folded sweep may give each rule its own threshold
  // and separator set (the chance baseline of in_attention, and SPEC §4.7).
  add("rule", "high_attention_all", {L, H}, "valid pairs with max(A_ij, A_ji) >= the rule's attention threshold (count)");
  add("rule", "separator_mass", {L, H},
      "sum over samples of the mean attention mass valid query rows put on the rule's separator keys, fixed point (units of 2^-32)");
}

void Accumulator::add(const std::string& group, const std::string& name, std::vector<int64_t> dims, std::string description) {
  StatField f;
  f.group = group;
  f.name = name;
  f.dims = std::move(dims);
  f.description = std::move(description);
  f.size = 1;
  for (auto d : f.dims) f.size *= static_cast<size_t>(d);
  f.offset = buffer_.size();
  buffer_.resize(buffer_.size() + f.size * static_cast<size_t>(group == "rule" ? shape_.rules : 1), 0);
  fields_.push_back(std::move(f));
}

const StatField& Accumulator::field(const std::string& name) const {
  for (const auto& f : fields_)
    if (f.name == name) return f;
  throw Error("statistics", "no field '" + name + "'", "this is a bug");
}

int64_t* Accumulator::at(const std::string& name, int64_t rule) {
  const StatField& f = field(name);
  return buffer_.data() + f.offset + (f.group == "rule" ? static_cast<size_t>(rule) * f.size : 0);
}

const int64_t* Accumulator::at(const std::string& name, int64_t rule) const {
  return const_cast<Accumulator*>(this)->at(name, rule);
}

void Accumulator::merge(const Accumulator& o) {
  if (o.buffer_.size() != buffer_.size() || o.shape_.rules != shape_.rules || o.shape_.vocab != shape_.vocab)
    throw Error("statistics", "cannot merge accumulators of different shapes", "this is a bug");
  for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] += o.buffer_[i];
}

std::vector<std::string> check_invariants(const Accumulator& a) {
  std::vector<std::string> bad;
  const auto& s = a.shape();
  const int64_t LH = s.layers * s.heads;
  const int64_t samples = *a.at("samples");
  const auto fail = [&](const std::string& what, int64_t r, int64_t lh) {
    bad.push_back(what + " (rule " + std::to_string(r) + ", layer " + std::to_string(lh / s.heads) + ", head " +
                  std::to_string(lh % s.heads) + ")");
  };
  for (int64_t r = 0; r < s.rules; ++r) {
    for (int64_t lh = 0; lh < LH; ++lh) {
      const int64_t hp = a.at("high_pairs", r)[lh];
      int64_t hist = 0;
      for (int64_t d = 0; d < s.seq_len; ++d) hist += a.at("distance_hist", r)[lh * s.seq_len + d];
      if (hist != hp) fail("distance histogram sums to " + std::to_string(hist) + ", high_pairs is " + std::to_string(hp), r, lh);
      if (a.at("distance_hist", r)[lh * s.seq_len] != 0) fail("distance_hist[0] is not 0", r, lh);
      const int64_t ss = a.at("same_sentence", r)[lh], el = a.at("sentence_eligible", r)[lh];
      if (!(ss <= el && el <= hp)) fail("same_sentence <= sentence_eligible <= high_pairs fails", r, lh);
      if (a.at("same_token", r)[lh] > hp || a.at("in_attention", r)[lh] > hp || a.at("noise", r)[lh] > hp ||
          a.at("anchor_pairs", r)[lh] > hp)
        fail("a count exceeds high_pairs", r, lh);
      if (ss > *a.at("same_sentence_all") || el > *a.at("sentence_eligible_all") ||
          a.at("same_token", r)[lh] > *a.at("same_token_all") || hp > *a.at("valid_pairs") ||
          a.at("in_attention", r)[lh] > a.at("high_attention_all", r)[lh])
        fail("a selected count exceeds its baseline", r, lh);
      for (int64_t d = 0; d < s.seq_len; ++d)
        if (a.at("distance_hist", r)[lh * s.seq_len + d] > a.at("distance_all")[d]) fail("distance_hist exceeds distance_all", r, lh);
      int64_t anchors = 0;
      for (int64_t v = 0; v < s.vocab; ++v) anchors += a.at("anchor_counts", r)[lh * s.vocab + v];
      const int64_t with_pairs = a.at("samples_with_pairs", r)[lh];
      if (anchors != with_pairs) fail("anchor counts sum to " + std::to_string(anchors) + ", samples with pairs is " + std::to_string(with_pairs), r, lh);
      if (with_pairs > samples) fail("samples_with_pairs exceeds samples", r, lh);
    }
  }
  return bad;
}

}  // namespace ctxsim
