#include "stages/stats/head_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "stages/base/error.h"
#include "stages/base/limits.h"
#include "stages/stats/accumulator.h"
#include "stages/stats/attention_summary.h"
#include "stages/stats/head_rows.h"

namespace ctxsim {

using namespace head_rows;  // the row loops this kernel is made of

int64_t top_fraction_k(double f, int64_t pairs) {
  if (pairs <= 0) return 0;
  return std::min<int64_t>(pairs, std::max<int64_t>(1, static_cast<int64_t>(std::round(f * double(pairs)))));
}

SampleFacts SampleFacts::build(const int32_t* token, const int16_t* sentence, const int16_t* word, int64_t n,
                               const std::vector<int64_t>& special_ids, const std::vector<int64_t>& separator_tokens) {
  SampleFacts s;
  s.n = n;
  s.token.assign(token, token + n);
  s.sentence.assign(sentence, sentence + n);
  if (word)
    s.word.assign(word, word + n);
  else
    s.word.assign(size_t(n), -1);
  s.special.assign(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i)
    s.special[size_t(i)] = std::find(special_ids.begin(), special_ids.end(), int64_t(token[i])) != special_ids.end();
  s.rank_token = s.token;
  std::sort(s.rank_token.begin(), s.rank_token.end());
  s.rank_token.erase(std::unique(s.rank_token.begin(), s.rank_token.end()), s.rank_token.end());
  s.rank.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    s.rank[size_t(i)] = int32_t(std::lower_bound(s.rank_token.begin(), s.rank_token.end(), token[i]) - s.rank_token.begin());
  for (const int64_t id : separator_tokens) {
    std::vector<int32_t> at;
    for (int64_t i = 0; i < n; ++i)
      if (int64_t(token[i]) == id) at.push_back(int32_t(i));
    s.separator_positions.push_back(std::move(at));
  }
  return s;
}

// The kernel for one similarity type F (float or double). Rows of the valid upper triangle:
// row i holds the pairs (i, j), i < j < n, at c[i T + i + 1 …].
template <class F>
struct HeadKernel::Typed {
  HeadKernel& k;
  const SampleFacts& s;
  const int64_t T, n;
  const F* c;  // [T, cs]
  const int64_t cs = similarity_stride<F>(T);
  bool from_candidates = false;  // kth_largest: values_/candidates_ hold every pair above the bound

  const F* row(int64_t i) const { return c + i * cs + i + 1; }
  uint8_t* mask_row(int64_t i) const { return k.mask_.data() + i * T + i + 1; }
  int64_t len(int64_t i) const { return n - 1 - i; }

  // ---- selection ----------------------------------------------------------------------------
  // Valid pairs with value >= b and > b; per row, the counts > b and == b go to row_count_ and
  // row_equal_.
  void count_at_least_b(F b, int64_t& ge, int64_t& gt) {
    ge = gt = 0;
    for (int64_t i = 0; i + 1 < n; ++i) {
      int32_t e = 0, g = 0;
      count_ge_gt(row(i), len(i), b, &e, &g);
      k.row_count_[size_t(i)] = g;
      k.row_equal_[size_t(i)] = e - g;
      ge += e;
      gt += g;
    }
  }

  // Finds the k-th largest valid similarity vk and the pairs tied at it that the selection
  // takes (the first kk - #(> vk) in (i, j) order, into ties_). A strided sample of the triangle
  // gives a bound b just below vk; one counting pass says whether vk is b itself (the common
  // case of random models, whose similarities tie in float32) or above it, where only the few
  // values > b are selected among.
  F kth_largest(int64_t kk) {
    const int64_t P = n * (n - 1) / 2;
    auto& sample = k.sample_;
    sample.clear();
    // P/32 samples (at least 256, at most 4096): the bound below lands about 2k + 256 pairs deep.
    const int64_t want = std::min<int64_t>(P, std::clamp<int64_t>(P / 32, 256, 4096)), step = std::max<int64_t>(1, P / want);
    for (int64_t i = 0, off = 0; i + 1 < n; off += len(i), ++i)
      for (int64_t q = (off + step - 1) / step * step; q < off + len(i); q += step) sample.push_back(double(row(i)[q - off]));
    const int64_t m = int64_t(sample.size());
    const int64_t r = std::min<int64_t>(m, 2 * kk * m / P + 8);  // about 2k pairs lie above the r-th sample
    F b = -std::numeric_limits<F>::infinity();
    if (r < m) {
      std::nth_element(sample.begin(), sample.begin() + (r - 1), sample.end(), std::greater<double>());
      b = F(sample[size_t(r - 1)]);
    }
    int64_t ge = 0, gt = 0;
    count_at_least_b(b, ge, gt);
    if (ge < kk) {  // the sample misled: every pair is a candidate
      b = -std::numeric_limits<F>::infinity();
      count_at_least_b(b, ge, gt);
      if (ge < kk)
        throw Error("statistics", "non-finite context similarity (NaN) in a head",
                    "check the checkpoint: its weights or activations are not finite");
    }
    auto& ties = k.ties_;
    ties.clear();
    from_candidates = gt >= kk;
    if (gt < kk) {  // vk = b: take the first kk - gt pairs equal to b
      int64_t need = kk - gt;
      for (int64_t i = 0; i + 1 < n && need > 0; ++i) {
        if (k.row_equal_[size_t(i)] == 0) continue;
        const F* x = row(i);
        for (int64_t j = 0; j < len(i) && need > 0; ++j)
          if (x[j] == b) {
            ties.push_back(pack(i, i + 1 + j));
            --need;
          }
      }
      return b;
    }
    // vk > b: the candidates are the gt values > b, gathered in (i, j) order.
    auto& values = k.values_;
    auto& where = k.candidates_;
    values.clear();
    where.clear();
    for (int64_t i = 0; i + 1 < n; ++i) {
      if (k.row_count_[size_t(i)] == 0) continue;
      const F* x = row(i);
      mask_gt(x, len(i), b, mask_row(i));
      for_each_set(mask_row(i), len(i), [&](int64_t j) {
        values.push_back(double(x[j]));
        where.push_back(pack(i, i + 1 + j));
      });
    }
    sample.assign(values.begin(), values.end());
    std::nth_element(sample.begin(), sample.begin() + (kk - 1), sample.end(), std::greater<double>());
    const double vk = sample[size_t(kk - 1)];
    int64_t need = kk;
    for (double v : values) need -= v > vk;
    for (size_t q = 0; q < values.size() && need > 0; ++q)
      if (values[q] == vk) {
        ties.push_back(where[q]);
        --need;
      }
    return F(vk);
  }

  // Selects the pairs of a rule: into mask_ (every row of the valid triangle written) when they
  // are many (dense, returned true), else into pairs_. Sets the number selected.
  bool select(const HeadRule& rule, bool dense_only, int64_t& selected) {
    const int64_t P = n * (n - 1) / 2;
    k.pairs_.clear();
    selected = 0;
    if (P == 0) return false;
    return rule.kind == SelectionRule::Kind::TopFraction ? select_top(top_fraction_k(rule.value, P), dense_only, selected)
                                                         : select_threshold(rule, dense_only, selected);
  }

  // The kk largest: every pair above the k-th value vk, then the tied ones in (i, j) order.
  bool select_top(int64_t kk, bool dense_only, int64_t& selected) {
    const int64_t P = n * (n - 1) / 2;
    const F vk = kth_largest(kk);
    selected = kk;
    if (dense_only || kk * 16 > P) {
      for (int64_t i = 0; i + 1 < n; ++i) mask_gt(row(i), len(i), vk, mask_row(i));
      for (uint32_t p : k.ties_) k.mask_[(p >> 16) * T + (p & 0xffff)] = 1;
      return true;
    }
    if (from_candidates) {  // the pairs above vk are among the candidates
      for (size_t q = 0; q < k.values_.size(); ++q)
        if (k.values_[q] > double(vk)) k.pairs_.push_back(k.candidates_[q]);
    } else {  // vk is the bound: the pairs above it lie in the rows counted above it
      for (int64_t i = 0; i + 1 < n; ++i) {
        if (k.row_count_[size_t(i)] == 0) continue;
        mask_gt(row(i), len(i), vk, mask_row(i));
        for_each_set(mask_row(i), len(i), [&](int64_t j) { k.pairs_.push_back(pack(i, i + 1 + j)); });
      }
    }
    k.pairs_.insert(k.pairs_.end(), k.ties_.begin(), k.ties_.end());
    return false;
  }

  // relative_to_max (C >= a max C, none when max C <= 0) and absolute (C >= t).
  bool select_threshold(const HeadRule& rule, bool dense_only, int64_t& selected) {
    const int64_t P = n * (n - 1) / 2;
    F threshold = ceil_to<F>(rule.value);
    if (rule.kind == SelectionRule::Kind::RelativeToMax) {
      F mx = -std::numeric_limits<F>::infinity();
      for (int64_t i = 0; i + 1 < n; ++i) mx = row_max(row(i), len(i), mx);
      threshold = mx > 0 ? ceil_to<F>(double(mx) * rule.value) : std::numeric_limits<F>::quiet_NaN();  // NaN: nothing reaches it
    }
    for (int64_t i = 0; i + 1 < n; ++i) {
      k.row_count_[size_t(i)] = mask_ge(row(i), len(i), threshold, mask_row(i));
      selected += k.row_count_[size_t(i)];
    }
    if (dense_only || selected * 16 > P) return true;
    for (int64_t i = 0; i + 1 < n; ++i)
      if (k.row_count_[size_t(i)] > 0) for_each_set(mask_row(i), len(i), [&](int64_t j) { k.pairs_.push_back(pack(i, i + 1 + j)); });
    return false;
  }

  // ---- attributes of the selected pairs ----------------------------------------------------
  // The anchor from the endpoint counts per token rank: most endpoints, ties to the smaller id.
  int32_t anchor_rank(HeadCounts& h) {
    const int64_t distinct = int64_t(s.rank_token.size());
    int32_t best = 0;
    for (int32_t r = 1; r < distinct; ++r)
      if (k.count_[size_t(r)] > k.count_[size_t(best)]) best = r;
    h.anchor_token = s.rank_token[size_t(best)];
    h.anchor_share = double(k.count_[size_t(best)]) / (2.0 * double(h[Stat::HighPairs]));
    return best;
  }

  // The counts from the list of the few selected pairs; in_attention from the high-attention pairs.
  void count_pairs(HeadCounts& h, int32_t* hist, const AttentionSummary& att, size_t beta) {
    std::fill_n(k.count_.begin(), s.rank_token.size(), 0);
    const int32_t* tok = s.token.data();
    const int32_t* sent = s.sentence.data();
    const int32_t* rank = s.rank.data();
    for (uint32_t p : k.pairs_) {
      const int64_t i = p >> 16, j = p & 0xffff;
      ++hist[j - i];
      if (sent[i] >= 0 && sent[j] >= 0) {
        ++h[Stat::SentenceEligible];
        h[Stat::SameSentence] += sent[i] == sent[j];
      }
      h[Stat::SameToken] += !s.special[size_t(i)] && tok[i] == tok[j];
      h[Stat::InAttention] += att.high(beta, p);
      ++k.count_[size_t(rank[i])];
      ++k.count_[size_t(rank[j])];
    }
    if (h[Stat::HighPairs] == 0) return;
    const int32_t best = anchor_rank(h);
    for (uint32_t p : k.pairs_) {
      const int64_t i = p >> 16, j = p & 0xffff;
      const bool touch = rank[i] == best || rank[j] == best;
      const bool ss = sent[i] >= 0 && sent[i] == sent[j];
      const bool st = !s.special[size_t(i)] && tok[i] == tok[j];
      h[Stat::AnchorPairs] += touch;
      h[Stat::Noise] += !(touch || ss || st);
    }
  }

  // The same counts from the dense mask, row by row.
  void count_mask(HeadCounts& h, int32_t* hist) {
    int32_t* deg = k.degree_.data();
    std::fill_n(deg, n, 0);
    const int32_t* tok = s.token.data();
    const int32_t* sent = s.sentence.data();
    for (int64_t i = 0; i + 1 < n; ++i) {
      const RowCounts r = mask_row_counts(mask_row(i), len(i), sent + i + 1, tok + i + 1, sent[i], tok[i], hist + 1, deg + i + 1);
      deg[i] += r.selected;
      if (sent[i] >= 0) {
        h[Stat::SentenceEligible] += r.eligible;
        h[Stat::SameSentence] += r.same_sentence;
      }
      if (!s.special[size_t(i)]) h[Stat::SameToken] += r.same_token;
    }
    if (h[Stat::HighPairs] == 0) return;
    std::fill_n(k.count_.begin(), s.rank_token.size(), 0);
    for (int64_t p = 0; p < n; ++p) k.count_[size_t(s.rank[size_t(p)])] += deg[p];
    const int32_t best = anchor_rank(h);
    uint8_t* anchor = k.is_anchor_.data();
    for (int64_t p = 0; p < n; ++p) anchor[p] = s.rank[size_t(p)] == best;
    // Pairs touching an occurrence of the anchor, and those no explanation covers.
    for (int64_t i = 0; i + 1 < n; ++i) {
      if (anchor[i]) {  // the whole row touches the anchor
        h[Stat::AnchorPairs] += mask_sum(mask_row(i), len(i));
        continue;
      }
      const int32_t si = sent[i] >= 0 ? sent[i] : std::numeric_limits<int32_t>::min();
      const int32_t ti = s.special[size_t(i)] ? -1 : tok[i];
      int32_t touch = 0, noise = 0;
      mask_row_noise(mask_row(i), len(i), anchor + i + 1, sent + i + 1, tok + i + 1, si, ti, &touch, &noise);
      h[Stat::AnchorPairs] += touch;
      h[Stat::Noise] += noise;
    }
  }

  // Selected pairs inside one whitespace word. A word's tokens are consecutive, so only the
  // positions after i that share its word are looked at (in the mask, or the list of pairs).
  void count_same_word(HeadCounts& h, bool dense) {
    const int32_t* w = s.word.data();
    int64_t same = 0;
    if (dense) {
      for (int64_t i = 0; i + 1 < n; ++i)
        if (w[i] >= 0)
          for (int64_t j = i + 1; j < n && w[j] == w[i]; ++j) same += mask_row(i)[j - i - 1];
    } else {
      for (uint32_t p : k.pairs_) same += w[p >> 16] >= 0 && w[p >> 16] == w[p & 0xffff];
    }
    h[Stat::SameWord] = same;
  }

  // in_attention of the dense mask: the high-attention pairs that are selected.
  int64_t in_attention_of_mask(const std::vector<uint32_t>& high) const {
    int64_t hits = 0;
    for (uint32_t p : high) hits += k.mask_[(p >> 16) * T + (p & 0xffff)];
    return hits;
  }
};

namespace {

// SPEC §9: the participation ratio (tr G)^2 / |G|_F^2 of G = left rightᵀ over the n valid
// positions, from C's upper triangle (G is symmetric) and the diagonal left_i · right_i summed as
// similarity_rows sums C, in double in a fixed order (head_rows::gram_sums); on the grid 2^-16 in
// units of 2^-32. The value and whether it counts ({0, 0} for a zero G).
template <class F>
std::pair<int64_t, int64_t> effective_rank(const F* c, int64_t cs, const VectorsRef& v, int64_t n) {
  double trace = 0, square = 0;
  gram_sums(c, cs, static_cast<const F*>(v.left), static_cast<const F*>(v.right), n, v.k, &trace, &square);
  if (!(square > 0)) return {0, 0};
  const double grid = std::nearbyint(trace * trace / square * kEffectiveRankGrid);
  return {int64_t(grid) * int64_t(kFixedPointScale / kEffectiveRankGrid), 1};
}

}  // namespace

void HeadKernel::reserve(int64_t T) {
  if (T > kSeqLen.hi)
    throw Error(kSeqLen.quantity, std::to_string(T) + " is too long for the statistics", "use at most " + std::to_string(kSeqLen.hi));
  mask_.resize(size_t(T * T));
  degree_.resize(size_t(T));
  count_.resize(size_t(T));
  row_count_.resize(size_t(T));
  row_equal_.resize(size_t(T));
  is_anchor_.resize(size_t(T));
}

template <>
std::vector<float>& HeadKernel::scratch<float>(int which) {
  return which ? rt_f_ : sim_f_;
}
template <>
std::vector<double>& HeadKernel::scratch<double>(int which) {
  return which ? rt_d_ : sim_d_;
}

// C of one (sample, head) from its vectors, into the thread's scratch: rows of stride
// similarity_stride(T), the upper triangle valid.
template <class F>
const F* HeadKernel::similarity(const SampleFacts& s, int64_t T, const VectorsRef& v) {
  const int64_t cs = similarity_stride<F>(T);
  std::vector<F>& c = scratch<F>(0);
  std::vector<F>& rt = scratch<F>(1);
  c.resize(size_t(T * cs));
  rt.assign(size_t(v.k * cs), F(0));
  const F* left = static_cast<const F*>(v.left);
  const F* right = static_cast<const F*>(v.right);
  transpose_into(right, s.n, v.k, cs, rt.data());
  similarity_rows(left, rt.data(), s.n, v.k, cs, c.data());
  return c.data();
}

void HeadKernel::run(const SampleFacts& s, int64_t T, const VectorsRef& vectors, const AttentionSummary& att,
                     const std::vector<HeadRule>& rules, const std::vector<double>& betas, bool dense_only, HeadResult& out) {
  reserve(T);
  const int64_t R = int64_t(rules.size());
  out.rules.assign(size_t(R), HeadCounts{});
  out.distance_hist.assign(size_t(R * T), 0);
  out.high_attention.assign(betas.size(), 0);
  out.separator_mass.assign(s.separator_positions.size(), 0);
  for (size_t q = 0; q < s.separator_positions.size(); ++q) out.separator_mass[q] = att.separator_mass(q, s.n);
  const int64_t first_mass = att.first_mass(s.n);  // the attention sink (SPEC §4.7's mass, on position 0)
  for (HeadCounts& h : out.rules) h[Stat::FirstTokenMass] = first_mass;
  const auto with_similarity = [&](auto* cp) {
    using F = std::remove_const_t<std::remove_pointer_t<decltype(cp)>>;
    Typed<F> t{*this, s, T, s.n, cp};
    const auto [rank, ranked] = effective_rank(cp, similarity_stride<F>(T), vectors, s.n);
    for (HeadCounts& h : out.rules) h[Stat::EffectiveRank] = rank, h[Stat::EffectiveRankSamples] = ranked;
    for (size_t b = 0; b < betas.size(); ++b) {
      out.high_attention[b] = int64_t(att.high_pairs(b).size());
      for (int64_t r = 0; r < R; ++r) {
        if (rules[size_t(r)].beta != int(b)) continue;
        HeadCounts& h = out.rules[size_t(r)];
        if (t.select(rules[size_t(r)], dense_only, h[Stat::HighPairs])) {
          t.count_mask(h, out.distance_hist.data() + r * T);
          h[Stat::InAttention] = t.in_attention_of_mask(att.high_pairs(b));
          t.count_same_word(h, true);
        } else {
          t.count_pairs(h, out.distance_hist.data() + r * T, att, b);
          t.count_same_word(h, false);
        }
        // The rule's share of what the head measures once: its threshold's high-attention
        // pairs, its separators' mass, and whether it selected anything.
        h[Stat::SamplesWithPairs] = h[Stat::HighPairs] > 0;
        h[Stat::HighAttentionAll] = out.high_attention[b];
        for (int64_t u : rules[size_t(r)].separators) h[Stat::SeparatorMass] += out.separator_mass[size_t(u)];
      }
    }
  };
  if (vectors.type == ValueType::F64)
    with_similarity(similarity<double>(s, T, vectors));
  else
    with_similarity(similarity<float>(s, T, vectors));
}

void HeadKernel::selection(const SampleFacts& s, int64_t T, const VectorsRef& vectors, const HeadRule& rule, uint8_t* out) {
  reserve(T);
  std::fill_n(out, T * T, uint8_t(0));
  const auto with_similarity = [&](auto* cp) {
    using F = std::remove_const_t<std::remove_pointer_t<decltype(cp)>>;
    Typed<F> t{*this, s, T, s.n, cp};
    int64_t selected = 0;
    if (t.select(rule, false, selected))
      for (int64_t i = 0; i + 1 < s.n; ++i) std::memcpy(out + i * T + i + 1, t.mask_row(i), size_t(t.len(i)));
    else
      for (uint32_t p : pairs_) out[(p >> 16) * T + (p & 0xffff)] = 1;
  };
  if (vectors.type == ValueType::F64)
    with_similarity(similarity<double>(s, T, vectors));
  else
    with_similarity(similarity<float>(s, T, vectors));
}

}  // namespace ctxsim
