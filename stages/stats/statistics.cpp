#include "stages/stats/statistics.h"

#include "stages/stats/attention_summary.h"
#include "stages/stats/tensor_statistics.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "stages/base/error.h"

namespace ctxsim {

at::Tensor projection_metric(const at::Tensor& o_by_head) {
  return at::matmul(o_by_head, o_by_head.transpose(1, 2));  // [H, d, d]
}

at::Tensor context_similarity(const at::Tensor& vectors, const at::Tensor& valid, const at::Tensor& metric) {
  const auto dtype = vectors.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor o = vectors.to(dtype);
  const at::Tensor left = metric.defined() ? at::matmul(o, metric.to(dtype)) : o;  // [B, H, T, k]
  at::Tensor c = at::matmul(left, o.transpose(-1, -2));                            // [B, H, T, T]
  const int64_t B = c.size(0), T = c.size(2);
  const at::Tensor v = valid.to(c.scalar_type());
  const at::Tensor keep = (v.view({B, 1, T, 1}) * v.view({B, 1, 1, T})) * (1 - at::eye(T, c.options()));  // zero [PAD] and the diagonal
  return c.mul_(keep);
}

namespace {

ValueType value_type(const at::Tensor& t, const char* what) {
  switch (t.scalar_type()) {
    case at::kFloat: return ValueType::F32;
    case at::kDouble: return ValueType::F64;
    case at::kBFloat16: return ValueType::BF16;
    default: CTXSIM_FAIL(std::string("statistics: unsupported ") + what + " dtype " + std::string(c10::toString(t.scalar_type())));
  }
}

template <class T>
int64_t index_of(std::vector<T>& list, const T& v) {
  const auto it = std::find(list.begin(), list.end(), v);
  if (it != list.end()) return it - list.begin();
  list.push_back(v);
  return int64_t(list.size()) - 1;
}

}  // namespace

BatchStatistics::~BatchStatistics() = default;

const PerSampleStats& BatchStatistics::per_sample() {
  if (tensor_) tensor_->per_sample(out_.anchor_token, out_.anchor_share, out_.high_pairs);
  return out_;
}

BatchSamples BatchSamples::of(const SampleSet& s, int64_t first, int64_t count) {
  const int64_t T = s.seq_len;
  return BatchSamples{&s.token_ids[size_t(first * T)],
                      &s.sentence_ids[size_t(first * T)],
                      &s.n_valid[size_t(first)],
                      count,
                      T,
                      first,
                      s.word_ids.empty() ? nullptr : &s.word_ids[size_t(first * T)]};
}

BatchStatistics::BatchStatistics(const StatisticsOptions& opt, const BatchSamples& s, Accumulator& acc, at::Tensor device_acc)
    : opt_(opt), acc_(acc), B_(s.batch), T_(s.seq_len), L_(acc.shape().layers), R_(static_cast<int64_t>(opt.rules.size())),
      first_(s.first) {
  CTXSIM_CHECK(T_ == acc.shape().seq_len && R_ == acc.shape().rules, "statistics: batch and accumulator shapes differ");
  H_ = acc.shape().heads;
  // Each distinct attention threshold and separator token is evaluated once per head; a rule's
  // separator mass is the sum over its tokens.
  separator_tokens_ = separator_tokens(opt);
  CTXSIM_CHECK(int64_t(separator_tokens_.size()) == acc.shape().separators, "statistics: the accumulator's separator count differs");
  for (int64_t r = 0; r < R_; ++r) {
    const SelectionRule& rule = opt.rules[size_t(r)];
    const double beta = std::isnan(rule.attention_threshold) ? opt.attention_threshold : rule.attention_threshold;
    const bool own_set = size_t(r) < opt.rule_separator_ids.size() && !opt.rule_separator_ids[size_t(r)].empty();
    std::vector<int64_t> tokens;
    for (int64_t id : own_set ? opt.rule_separator_ids[size_t(r)] : opt.separator_ids) {
      const int64_t u = index_of(separator_tokens_, id);
      if (std::find(tokens.begin(), tokens.end(), u) == tokens.end()) tokens.push_back(u);
    }
    rules_.push_back(HeadRule{rule.kind, rule.value, int(index_of(betas_, beta)), std::move(tokens)});
  }

  // Per-sample facts and the rule-independent baselines, in closed form from the ids.
  int64_t* distance_all = acc_.at(Stat::DistanceAll);
  for (int64_t b = 0; b < B_; ++b) {
    const int64_t n = std::clamp<int64_t>(s.n_valid[b], 0, T_);
    facts_.push_back(SampleFacts::build(s.token_ids + b * T_, s.sentence_ids + b * T_, s.word_ids ? s.word_ids + b * T_ : nullptr, n,
                                        opt.special_ids, separator_tokens_));
    const SampleFacts& f = facts_.back();
    *acc_.at(Stat::ValidPairs) += n * (n - 1) / 2;
    for (int64_t d = 1; d < n; ++d) distance_all[d] += n - d;
    std::vector<int32_t> in_sentence;
    for (int64_t i = 0; i < n; ++i)
      if (f.sentence[size_t(i)] >= 0) in_sentence.push_back(f.sentence[size_t(i)]);
    const int64_t e = int64_t(in_sentence.size());
    *acc_.at(Stat::SentenceEligibleAll) += e * (e - 1) / 2;
    std::sort(in_sentence.begin(), in_sentence.end());
    std::vector<int64_t> per_rank(f.rank_token.size(), 0);
    for (int64_t i = 0; i < n; ++i)
      if (!f.special[size_t(i)]) ++per_rank[size_t(f.rank[size_t(i)])];
    for (int64_t c : per_rank) *acc_.at(Stat::SameTokenAll) += c * (c - 1) / 2;
    for (int64_t i = 0; i < n;) {  // a word's tokens are consecutive: c of them make c (c - 1) / 2 pairs
      int64_t j = i + 1;
      while (j < n && f.word[size_t(i)] >= 0 && f.word[size_t(j)] == f.word[size_t(i)]) ++j;
      *acc_.at(Stat::SameWordAll) += (j - i) * (j - i - 1) / 2;
      i = j;
    }
    for (size_t i = 0; i < in_sentence.size();) {
      size_t j = i;
      while (j < in_sentence.size() && in_sentence[j] == in_sentence[i]) ++j;
      const int64_t c = int64_t(j - i);
      *acc_.at(Stat::SameSentenceAll) += c * (c - 1) / 2;
      i = j;
    }
  }
  *acc_.at(Stat::Samples) += B_;

  const size_t n = static_cast<size_t>(R_ * B_ * L_ * H_);
  out_.anchor_token.assign(n, -1);
  out_.anchor_share.assign(n, 0.0f);
  out_.high_pairs.assign(n, 0);
  results_.resize(size_t(B_ * H_));
  attention_.resize(size_t(B_ * H_));
  if (device_acc.defined()) tensor_ = std::make_unique<TensorStatistics>(opt_, facts_, T_, acc_, std::move(device_acc), rules_, betas_);
}

void BatchStatistics::add_attention_rows(int64_t row, int64_t first, const at::Tensor& rows_in) {
  CTXSIM_CHECK(!tensor_, "statistics: a device rank takes whole attention maps");
  const at::Tensor rows = rows_in.contiguous();
  CTXSIM_CHECK(
      row >= 0 && row < B_ && rows.dim() == 3 && rows.size(0) == H_ && rows.size(2) == T_ && first >= 0 && first + rows.size(1) <= T_,
      "statistics: attention rows of the wrong shape");
  const ValueType type = value_type(rows, "attention");
  const int64_t count = rows.size(1);
  const size_t head_bytes = size_t(count * T_) * rows.element_size();
  const auto* base = static_cast<const uint8_t*>(rows.data_ptr());
  if (first == 0)
    for (int64_t h = 0; h < H_; ++h) attention_[size_t(row * H_ + h)].begin(facts_[size_t(row)], betas_);
  at::parallel_for(0, H_, 1, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h)
      attention_[size_t(row * H_ + h)].add_rows(facts_[size_t(row)], T_, MatrixRef{base + size_t(h) * head_bytes, type}, first, count,
                                                betas_);
  });
}

void BatchStatistics::add_layer(int64_t layer, const at::Tensor& left_in, const at::Tensor& right_in, const at::Tensor& attention) {
  if (tensor_) return tensor_->add_layer(layer, left_in, right_in, attention);
  const auto dtype = right_in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor left = left_in.to(dtype).contiguous(), right = right_in.to(dtype).contiguous();
  CTXSIM_CHECK(right.dim() == 4 && right.size(0) == B_ && right.size(1) == H_ && right.size(2) == T_ && left.sizes() == right.sizes(),
               "statistics: vectors of the wrong shape");
  if (attention.defined()) {  // the whole maps: each sample's as one tile of T rows
    CTXSIM_CHECK(attention.dim() == 4 && attention.size(0) == B_, "statistics: attention of the wrong shape");
    for (int64_t b = 0; b < B_; ++b) add_attention_rows(b, 0, attention[b]);
  }  // else add_attention_rows has brought every row of this layer's maps
  last_left_ = left;
  last_right_ = right;
  const int64_t K = right.size(3);
  const ValueType vt = value_type(right, "vector");
  const size_t v_bytes = right.element_size();
  const auto* left_base = static_cast<const uint8_t*>(left.data_ptr());
  const auto* right_base = static_cast<const uint8_t*>(right.data_ptr());
  const int64_t TK = T_ * K;
  at::parallel_for(0, B_ * H_, 1, [&](int64_t begin, int64_t end) {
    thread_local HeadKernel kernel;
    for (int64_t t = begin; t < end; ++t) {
      const VectorsRef v{left_base + size_t(t * TK) * v_bytes, right_base + size_t(t * TK) * v_bytes, K, vt};
      AttentionSummary& a = attention_[size_t(t)];
      a.finish(facts_[size_t(t / H_)]);
      kernel.run(facts_[size_t(t / H_)], T_, v, a, rules_, betas_, opt_.dense_only, results_[size_t(t)]);
    }
  });

  merge_layer(layer);
}

// The layer's results into the accumulator, in (rule, sample, head) order: every per-rule [L, H]
// statistic of the schema from the heads' counts, then the three of other shapes (the distance
// histogram, the anchor counts, the distinct anchors across heads) and the per-sample results.
void BatchStatistics::merge_layer(int64_t layer) {
  const int64_t S = int64_t(separator_tokens_.size());
  int64_t* by_token = acc_.at(Stat::SeparatorMassByToken) + layer * H_ * S;
  for (int64_t b = 0; b < B_; ++b)
    for (int64_t h = 0; h < H_; ++h)
      for (int64_t u = 0; u < S; ++u) by_token[h * S + u] += results_[size_t(b * H_ + h)].separator_mass[size_t(u)];
  std::vector<Stat> per_head;
  for (const StatField& f : acc_.fields())
    if (f.per_rule() && f.info->shape == StatShape::LH) per_head.push_back(f.info->id);
  const int64_t V = acc_.shape().vocab;
  for (int64_t r = 0; r < R_; ++r) {
    int64_t* hist = acc_.at(Stat::DistanceHist, r) + layer * H_ * T_;
    int64_t* anchor_counts = acc_.at(Stat::AnchorCounts, r) + layer * H_ * V;
    std::vector<int32_t> anchors(static_cast<size_t>(H_));
    for (int64_t b = 0; b < B_; ++b) {
      for (int64_t h = 0; h < H_; ++h) {
        const HeadResult& res = results_[size_t(b * H_ + h)];
        const HeadCounts& k = res.rules[size_t(r)];
        for (Stat s : per_head) acc_.at(s, r)[layer * H_ + h] += k[s];
        const int32_t* dh = res.distance_hist.data() + r * T_;
        for (int64_t d = 0; d < T_; ++d) hist[h * T_ + d] += dh[d];
        if (k.anchor_token >= V)
          throw Error("sample " + std::to_string(first_ + b),
                      "token id " + std::to_string(k.anchor_token) + " outside the model's vocabulary (" + std::to_string(V) + ")",
                      "use the model's vocab.txt");
        if (k.anchor_token >= 0) ++anchor_counts[h * V + k.anchor_token];
        anchors[size_t(h)] = k.anchor_token;
        const size_t o = static_cast<size_t>(((r * B_ + b) * L_ + layer) * H_ + h);
        out_.anchor_token[o] = k.anchor_token;
        out_.anchor_share[o] = static_cast<float>(k.anchor_share);
        out_.high_pairs[o] = static_cast<int32_t>(k[Stat::HighPairs]);
      }
      // Distinct anchors across the heads of this sample.
      std::sort(anchors.begin(), anchors.end());
      for (int64_t h = 0; h < H_; ++h)
        acc_.at(Stat::DistinctAnchors, r)[layer] += anchors[size_t(h)] >= 0 && (h == 0 || anchors[size_t(h)] != anchors[size_t(h - 1)]);
    }
  }
}

at::Tensor BatchStatistics::selection_matrix(int64_t rule, int64_t row) const {
  if (tensor_) return tensor_->selection_matrix(rule, row);
  at::Tensor m = at::zeros({H_, T_, T_}, at::kByte);
  const int64_t K = last_right_.size(3);
  const ValueType vt = value_type(last_right_, "vector");
  const size_t bytes = last_right_.element_size();
  const auto* left = static_cast<const uint8_t*>(last_left_.data_ptr());
  const auto* right = static_cast<const uint8_t*>(last_right_.data_ptr());
  HeadKernel kernel;
  for (int64_t h = 0; h < H_; ++h) {
    const size_t off = size_t((row * H_ + h) * T_ * K) * bytes;
    kernel.selection(facts_.at(size_t(row)), T_, VectorsRef{left + off, right + off, K, vt}, rules_.at(size_t(rule)),
                     m[h].data_ptr<uint8_t>());
  }
  return m;
}

}  // namespace ctxsim
