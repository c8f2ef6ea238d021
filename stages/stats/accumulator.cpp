#include "stages/stats/accumulator.h"

#include <algorithm>

#include "stages/base/digest.h"
#include "stages/base/error.h"

namespace ctxsim {

const std::array<StatInfo, kStatCount> kStatSchema = {{
    {Stat::HighPairs, "high_pairs", true, StatShape::LH, "selected pairs (count)"},
    {Stat::DistanceHist, "distance_hist", true, StatShape::LHT, "selected pairs by distance d = j - i (count; index 0 always 0)"},
    {Stat::SameSentence, "same_sentence", true, StatShape::LH, "selected pairs inside one sentence (count)"},
    {Stat::SentenceEligible, "sentence_eligible", true, StatShape::LH, "selected pairs whose two tokens both belong to a sentence (count)"},
    {Stat::SameToken, "same_token", true, StatShape::LH, "selected pairs of equal non-special token ids (count)"},
    {Stat::SameWord, "same_word", true, StatShape::LH, "selected pairs inside one whitespace word (count)", false, 4},
    {Stat::InAttention, "in_attention", true, StatShape::LH, "selected pairs with max(A_ij, A_ji) >= attention_threshold (count)"},
    {Stat::AnchorPairs, "anchor_pairs", true, StatShape::LH, "selected pairs touching the sample's anchor token (count)"},
    {Stat::Noise, "noise", true, StatShape::LH, "selected pairs not same-sentence, not same-token, not touching the anchor (count)"},
    {Stat::SamplesWithPairs, "samples_with_pairs", true, StatShape::LH, "samples with at least one selected pair (count)"},
    {Stat::DistinctAnchors, "distinct_anchors", true, StatShape::L,
     "sum over samples of the number of distinct anchors across the layer's heads"},
    {Stat::AnchorCounts, "anchor_counts", true, StatShape::LHV, "samples whose anchor is each token id (count)"},
    {Stat::Samples, "samples", false, StatShape::Scalar, "samples accumulated (count)"},
    {Stat::ValidPairs, "valid_pairs", false, StatShape::Scalar, "valid pairs i < j over all samples (count)"},
    {Stat::DistanceAll, "distance_all", false, StatShape::T, "valid pairs by distance d = j - i (count)"},
    {Stat::SameSentenceAll, "same_sentence_all", false, StatShape::Scalar, "valid pairs inside one sentence (count)"},
    {Stat::SentenceEligibleAll, "sentence_eligible_all", false, StatShape::Scalar,
     "valid pairs whose two tokens both belong to a sentence (count)"},
    {Stat::SameTokenAll, "same_token_all", false, StatShape::Scalar, "valid pairs of equal non-special token ids (count)"},
    {Stat::SameWordAll, "same_word_all", false, StatShape::Scalar, "valid pairs inside one whitespace word (count)", false, 4},
    {Stat::HighAttentionAll, "high_attention_all", true, StatShape::LH,
     "valid pairs with max(A_ij, A_ji) >= the rule's attention threshold (count)"},
    {Stat::SeparatorMass, "separator_mass", true, StatShape::LH,
     "sum over samples of the mean attention mass valid query rows put on the rule's separator keys, fixed point (units of 2^-32)", true},
    {Stat::SeparatorMassByToken, "separator_mass_by_token", false, StatShape::LHS,
     "the same per separator token (order: /stats/attention separator_tokens), fixed point; a rule's separator_mass is the sum of its tokens'",
     true},
    {Stat::EffectiveRank, "effective_rank", true, StatShape::LH,
     "sum over samples of the head's effective rank (tr G)^2 / |G|_F^2, G the Gram matrix of its valid context vectors, each on a "
     "grid of 2^-16, fixed point (units of 2^-32); the same for every rule; since schema 6",
     true, 6},
    {Stat::EffectiveRankSamples, "effective_rank_samples", true, StatShape::LH,
     "samples whose head has a non-zero Gram matrix (count): effective_rank's denominator; since schema 6", false, 6},
    {Stat::FirstTokenMass, "first_token_mass", true, StatShape::LH,
     "sum over samples of the mean attention mass valid query rows put on the first position (the attention sink: [CLS], <s>, a "
     "decoder's first token), fixed point (units of 2^-32); the same for every rule; since schema 6",
     true, 6},
}};

const StatInfo& stat_info(Stat s) { return kStatSchema[size_t(s)]; }

Accumulator::Accumulator(const StatsShape& s) : shape_(s) {
  const int64_t L = s.layers, H = s.heads, T = s.seq_len, V = s.vocab, S = s.separators;
  size_t end = 0;
  for (size_t i = 0; i < kStatCount; ++i) {
    const StatInfo& info = kStatSchema[i];
    CTXSIM_CHECK(size_t(info.id) == i, std::string("kStatSchema is out of order at ") + info.name);
    StatField f;
    f.info = &info;
    // (push_back, not assignment from a braced list: GCC 12 warns falsely on the latter here.)
    const auto dims = [&](std::initializer_list<int64_t> d) {
      for (int64_t x : d) f.dims.push_back(x);
    };
    switch (info.shape) {
      case StatShape::Scalar: break;
      case StatShape::T: dims({T}); break;
      case StatShape::L: dims({L}); break;
      case StatShape::LH: dims({L, H}); break;
      case StatShape::LHT: dims({L, H, T}); break;
      case StatShape::LHV: dims({L, H, V}); break;
      case StatShape::LHS: dims({L, H, S}); break;
    }
    f.size = 1;
    for (auto d : f.dims) f.size *= static_cast<size_t>(d);
    f.offset = end;
    end += f.size * static_cast<size_t>(info.per_rule ? s.rules : 1);
    fields_.push_back(std::move(f));
  }
  // One allocation: the per-token counts (LHV) are tens of MB, and growing the buffer field by
  // field copied them.
  buffer_.assign(end, 0);
}

bool kept_per_unit(const StatInfo& s) { return s.shape != StatShape::LHV; }

std::vector<int64_t> Accumulator::unit_row(const int64_t* buffer) const {
  std::vector<int64_t> row;
  for (const StatField& f : fields_) {
    if (!kept_per_unit(*f.info)) continue;
    const size_t n = f.size * size_t(f.per_rule() ? shape_.rules : 1);
    row.insert(row.end(), buffer + f.offset, buffer + f.offset + n);
  }
  return row;
}

void Accumulator::merge(const Accumulator& o) {
  CTXSIM_CHECK(o.buffer_.size() == buffer_.size() && o.shape_.rules == shape_.rules && o.shape_.vocab == shape_.vocab &&
                   o.shape_.separators == shape_.separators,
               "statistics: cannot merge accumulators of different shapes");
  for (size_t i = 0; i < buffer_.size(); ++i) buffer_[i] += o.buffer_[i];
}

int64_t statistics_schema_version() {
  int64_t v = 0;
  for (const auto& s : kStatSchema) v = std::max(v, s.since);
  return v;
}

std::string Accumulator::digest(int64_t schema_version) const {
  Sha256 h;
  for (const StatField& f : fields_) {
    if (schema_version > 0 && f.info->since > schema_version) continue;  // the store predates it
    const size_t n = f.size * size_t(f.per_rule() ? shape_.rules : 1);
    const int64_t* p = buffer_.data() + f.offset;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    h.update(p, n * sizeof(int64_t));
#else
    for (size_t i = 0; i < n; ++i) {
      unsigned char le[8];
      for (int b = 0; b < 8; ++b) le[b] = static_cast<unsigned char>(uint64_t(p[i]) >> (8 * b));
      h.update(le, sizeof le);
    }
#endif
  }
  return h.hex();
}

std::vector<std::string> check_invariants(const Accumulator& a) {
  std::vector<std::string> bad;
  const auto& s = a.shape();
  const int64_t LH = s.layers * s.heads;
  const int64_t samples = *a.at(Stat::Samples);
  const auto fail = [&](const std::string& what, int64_t r, int64_t lh) {
    bad.push_back(what + " (rule " + std::to_string(r) + ", layer " + std::to_string(lh / s.heads) + ", head " +
                  std::to_string(lh % s.heads) + ")");
  };
  for (int64_t r = 0; r < s.rules; ++r) {
    for (int64_t lh = 0; lh < LH; ++lh) {
      const int64_t hp = a.at(Stat::HighPairs, r)[lh];
      int64_t hist = 0;
      for (int64_t d = 0; d < s.seq_len; ++d) hist += a.at(Stat::DistanceHist, r)[lh * s.seq_len + d];
      if (hist != hp) fail("distance histogram sums to " + std::to_string(hist) + ", high_pairs is " + std::to_string(hp), r, lh);
      if (a.at(Stat::DistanceHist, r)[lh * s.seq_len] != 0) fail("distance_hist[0] is not 0", r, lh);
      const int64_t ss = a.at(Stat::SameSentence, r)[lh], el = a.at(Stat::SentenceEligible, r)[lh];
      if (!(ss <= el && el <= hp)) fail("same_sentence <= sentence_eligible <= high_pairs fails", r, lh);
      if (a.at(Stat::SameToken, r)[lh] > hp || a.at(Stat::SameWord, r)[lh] > hp || a.at(Stat::InAttention, r)[lh] > hp ||
          a.at(Stat::Noise, r)[lh] > hp || a.at(Stat::AnchorPairs, r)[lh] > hp)
        fail("a count exceeds high_pairs", r, lh);
      if (ss > *a.at(Stat::SameSentenceAll) || el > *a.at(Stat::SentenceEligibleAll) ||
          a.at(Stat::SameToken, r)[lh] > *a.at(Stat::SameTokenAll) || a.at(Stat::SameWord, r)[lh] > *a.at(Stat::SameWordAll) ||
          hp > *a.at(Stat::ValidPairs) || a.at(Stat::InAttention, r)[lh] > a.at(Stat::HighAttentionAll, r)[lh])
        fail("a selected count exceeds its baseline", r, lh);
      for (int64_t d = 0; d < s.seq_len; ++d)
        if (a.at(Stat::DistanceHist, r)[lh * s.seq_len + d] > a.at(Stat::DistanceAll)[d]) fail("distance_hist exceeds distance_all", r, lh);
      int64_t anchors = 0;
      for (int64_t v = 0; v < s.vocab; ++v) anchors += a.at(Stat::AnchorCounts, r)[lh * s.vocab + v];
      const int64_t with_pairs = a.at(Stat::SamplesWithPairs, r)[lh];
      if (anchors != with_pairs)
        fail("anchor counts sum to " + std::to_string(anchors) + ", samples with pairs is " + std::to_string(with_pairs), r, lh);
      if (with_pairs > samples) fail("samples_with_pairs exceeds samples", r, lh);
      // 0 <= a sample's effective rank <= its valid tokens (<= T): (tr G)^2 <= n |G|_F^2 (and
      // >= 1 where G is positive semidefinite, as every Gram matrix of vectors is).
      const int64_t ranked = a.at(Stat::EffectiveRankSamples, r)[lh], rank = a.at(Stat::EffectiveRank, r)[lh];
      if (ranked > samples) fail("effective_rank_samples exceeds samples", r, lh);
      if (rank < 0 || double(rank) > double(ranked) * (double(s.seq_len) + 1 / kEffectiveRankGrid) * kFixedPointScale)
        fail("effective_rank outside [0, T] per sample", r, lh);
      if (a.at(Stat::FirstTokenMass, r)[lh] < 0 || a.at(Stat::FirstTokenMass, r)[lh] > samples * (int64_t(kFixedPointScale) + 1))
        fail("first_token_mass outside [0, 1] per sample", r, lh);
    }
  }
  return bad;
}

}  // namespace ctxsim
