#include "stages/stats/tensor_statistics.h"

#include <cmath>
#include <limits>

#include "stages/base/error.h"
#include "stages/stats/head_rows.h"  // ceil_to: thresholds rounded up to the compared type, as the kernels do

namespace ctxsim {
namespace {

// x (double) rounded up to the next value of type t, elementwise (ceil_to of a tensor).
at::Tensor ceil_to_type(const at::Tensor& x, at::ScalarType t) {
  if (t == at::kDouble) return x;
  const at::Tensor f = x.to(t);
  return at::where(f.to(at::kDouble) < x, at::nextafter(f, at::full_like(f, std::numeric_limits<float>::infinity())), f);
}

}  // namespace

TensorStatistics::TensorStatistics(const StatisticsOptions& opt, const std::vector<SampleFacts>& facts, int64_t T,
                                   const Accumulator& layout, at::Tensor device_acc, const std::vector<HeadRule>& rules,
                                   const std::vector<double>& betas)
    : opt_(opt), layout_(layout), acc_(std::move(device_acc)), rules_(rules), betas_(betas), B_(int64_t(facts.size())),
      H_(layout.shape().heads), T_(T), L_(layout.shape().layers), R_(int64_t(rules.size())), S_(layout.shape().separators) {
  CTXSIM_CHECK(acc_.scalar_type() == at::kLong && acc_.numel() == int64_t(layout.buffer().size()),
               "tensor statistics: device accumulator shape");
  const auto dev = acc_.device();
  const auto i64 = at::TensorOptions().dtype(at::kLong);
  at::Tensor token = at::full({B_, T_}, -1, i64), sentence = at::full({B_, T_}, -1, i64), special = at::zeros({B_, T_}, at::kBool);
  at::Tensor word = at::full({B_, T_}, -1, i64);
  at::Tensor rank = at::zeros({B_, T_}, i64), rank_token = at::full({B_, T_}, -1, i64), n = at::zeros({B_}, i64);
  const std::vector<int64_t> tokens = separator_tokens(opt);
  at::Tensor seps = at::zeros({B_, T_, std::max<int64_t>(S_, 1)}, at::kDouble);
  for (int64_t b = 0; b < B_; ++b) {
    const SampleFacts& f = facts[size_t(b)];
    n[b] = f.n;
    for (int64_t i = 0; i < f.n; ++i) {
      token[b][i] = f.token[size_t(i)];
      sentence[b][i] = f.sentence[size_t(i)];
      word[b][i] = f.word[size_t(i)];
      special[b][i] = bool(f.special[size_t(i)]);
      rank[b][i] = f.rank[size_t(i)];
    }
    for (size_t r = 0; r < f.rank_token.size(); ++r) rank_token[b][int64_t(r)] = f.rank_token[r];
    for (int64_t u = 0; u < S_; ++u)
      for (int32_t p : f.separator_positions[size_t(u)]) seps[b][p][u] = 1.0;
  }
  const at::Tensor pos = at::arange(T_, i64);
  const at::Tensor upper = pos.view({1, T_, 1}) < pos.view({1, 1, T_});          // i < j
  const at::Tensor valid = upper & (pos.view({1, 1, T_}) < n.view({B_, 1, 1}));  // [B, T, T] i < j < n
  const at::Tensor si = sentence.view({B_, T_, 1}), sj = sentence.view({B_, 1, T_});
  valid_pairs_ = valid.unsqueeze(1).to(dev);
  same_sentence_ = (valid & (si >= 0) & (si == sj)).unsqueeze(1).to(dev);
  eligible_ = (valid & (si >= 0) & (sj >= 0)).unsqueeze(1).to(dev);
  same_token_ =
      (valid & (token.view({B_, T_, 1}) == token.view({B_, 1, T_})) & special.logical_not().view({B_, T_, 1})).unsqueeze(1).to(dev);
  // Index of pair (i, j) of head h in a layer's [H, T] distance histogram: h T + (j - i).
  const at::Tensor d = (pos.view({1, T_}) - pos.view({T_, 1})).clamp_min(0);
  distance_index_ = (at::arange(H_, i64).view({H_, 1, 1}) * T_ + d.view({1, T_, T_})).expand({B_, H_, T_, T_}).contiguous().to(dev);
  token_ = token.to(dev), word_ = word.to(dev), rank_ = rank.to(dev), rank_token_ = rank_token.to(dev), n_valid_ = n.to(dev),
  separators_ = seps.to(dev);
  for (int64_t r = 0; r < R_; ++r)
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t m = facts[size_t(b)].n;
      top_k_.push_back(rules_[size_t(r)].kind == SelectionRule::Kind::TopFraction ? top_fraction_k(rules_[size_t(r)].value, m * (m - 1) / 2)
                                                                                  : 0);
    }
  anchor_token_ = at::full({R_, B_, L_, H_}, -1, i64.device(dev));
  anchor_share_ = at::zeros({R_, B_, L_, H_}, at::TensorOptions().dtype(at::kFloat).device(dev));
  high_pairs_ = at::zeros({R_, B_, L_, H_}, i64.device(dev));
  last_selection_.resize(size_t(R_));
}

at::Tensor TensorStatistics::slot(Stat s, int64_t rule, int64_t offset, int64_t count) {
  const StatField& f = layout_.field(s);
  return acc_.narrow(0, int64_t(f.offset) + (f.per_rule() ? rule * int64_t(f.size) : 0) + offset, count);
}

at::Tensor TensorStatistics::select(const at::Tensor& C, const HeadRule& rule) const {
  const at::ScalarType F = C.scalar_type();
  const double lowest = -std::numeric_limits<double>::infinity();
  switch (rule.kind) {
    case SelectionRule::Kind::Absolute: {
      const double t = F == at::kDouble ? rule.value : double(head_rows::ceil_to<float>(rule.value));
      return C.ge(t) & valid_pairs_;
    }
    case SelectionRule::Kind::RelativeToMax: {
      const at::Tensor mx = C.masked_fill(valid_pairs_.logical_not(), lowest).amax({2, 3});  // [B, H]
      const at::Tensor t = ceil_to_type(mx.to(at::kDouble) * rule.value, F).view({B_, H_, 1, 1});
      return C.ge(t) & valid_pairs_ & mx.gt(0).view({B_, H_, 1, 1});
    }
    case SelectionRule::Kind::TopFraction: {
      // The k largest of the valid pairs; a stable sort keeps equal values in (i, j) order.
      const at::Tensor flat = C.masked_fill(valid_pairs_.logical_not(), lowest).reshape({B_, H_, T_ * T_});
      const at::Tensor order = std::get<1>(at::sort(flat, /*stable=*/true, /*dim=*/-1, /*descending=*/true));
      const int64_t r = &rule - rules_.data();
      const at::Tensor k =
          at::tensor(std::vector<int64_t>(top_k_.begin() + r * B_, top_k_.begin() + (r + 1) * B_), at::kLong).to(C.device());
      const at::Tensor keep =
          at::arange(T_ * T_, at::TensorOptions().dtype(at::kLong).device(C.device())).view({1, 1, T_ * T_}) < k.view({B_, 1, 1});
      return at::zeros({B_, H_, T_ * T_}, C.options().dtype(at::kBool))
          .scatter_(-1, order, keep.expand({B_, H_, T_ * T_}))
          .view({B_, H_, T_, T_});
    }
  }
  return {};
}

void TensorStatistics::add_layer(int64_t layer, const at::Tensor& left_in, const at::Tensor& right_in, const at::Tensor& attention) {
  const at::ScalarType F = right_in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor C = at::matmul(left_in.to(F), right_in.to(F).transpose(-1, -2));  // [B, H, T, T]
  const at::ScalarType AF = attention.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor A = attention.to(AF);
  const at::Tensor A_max = at::maximum(A, A.transpose(-1, -2));
  std::vector<at::Tensor> high_attention;  // per threshold: [B, H, T, T] valid high-attention pairs
  for (double beta : betas_)
    high_attention.push_back(A_max.ge(AF == at::kDouble ? beta : double(head_rows::ceil_to<float>(beta))) & valid_pairs_);
  const auto sum_pairs = [](const at::Tensor& m) { return m.sum({2, 3}, false, at::kLong); };  // [B, H]

  const at::Tensor rows = (at::arange(T_, n_valid_.options()).view({1, T_}) < n_valid_.view({B_, 1})).to(at::kDouble);  // [B, T] valid
  // Attention on each separator token (rule-independent): the mean over valid rows, fixed point.
  at::Tensor fixed;  // [B, H, S]
  if (S_ > 0) {
    const at::Tensor mass = at::matmul(A.to(at::kDouble) * rows.view({B_, 1, T_, 1}), separators_.unsqueeze(1)).sum(2);  // [B, H, S]
    fixed = (mass / n_valid_.clamp_min(1).to(at::kDouble).view({B_, 1, 1}) * kFixedPointScale).round().to(at::kLong);
    slot(Stat::SeparatorMassByToken, 0, layer * H_ * S_, H_ * S_).add_(fixed.sum(0).reshape({-1}));
  }
  // Attention on the first position (the sink): SPEC §4.7's mean over valid rows, fixed point.
  const at::Tensor first_mass = ((A.select(3, 0).to(at::kDouble) * rows.view({B_, 1, T_})).sum(2) /
                                 n_valid_.clamp_min(1).to(at::kDouble).view({B_, 1}) * kFixedPointScale)
                                    .round()
                                    .to(at::kLong);  // [B, H]
  // SPEC §9: each head's effective rank from C's diagonal and upper triangle (as the kernels).
  const at::Tensor Cd = C.to(at::kDouble);
  const at::Tensor diagonal = Cd.diagonal(0, 2, 3) * rows.view({B_, 1, T_});  // [B, H, T]
  const at::Tensor trace = diagonal.sum(2), square = diagonal.square().sum(2) + 2 * (Cd.square() * valid_pairs_).sum({2, 3});
  const at::Tensor ranked = square.gt(0);
  const at::Tensor rank =
      at::where(ranked, (trace.square() / square.clamp_min(1e-300) * kEffectiveRankGrid).round(), at::zeros_like(square)).to(at::kLong) *
      int64_t(kFixedPointScale / kEffectiveRankGrid);
  const int64_t V = layout_.shape().vocab;
  for (int64_t r = 0; r < R_; ++r) {
    const HeadRule& rule = rules_[size_t(r)];
    const at::Tensor S = select(C, rule);
    last_selection_[size_t(r)] = S;
    const at::Tensor hp = sum_pairs(S);
    const auto add = [&](Stat s, const at::Tensor& per_bh) { slot(s, r, layer * H_, H_).add_(per_bh.sum(0)); };
    add(Stat::HighPairs, hp);
    slot(Stat::DistanceHist, r, layer * H_ * T_, H_ * T_).scatter_add_(0, distance_index_.view({-1}), S.to(at::kLong).view({-1}));
    add(Stat::SameSentence, sum_pairs(S & same_sentence_));
    add(Stat::SentenceEligible, sum_pairs(S & eligible_));
    add(Stat::SameToken, sum_pairs(S & same_token_));
    const at::Tensor wi = word_.view({B_, 1, T_, 1}), wj = word_.view({B_, 1, 1, T_});
    add(Stat::SameWord, sum_pairs(S & (wi >= 0) & (wi == wj)));
    add(Stat::InAttention, sum_pairs(S & high_attention[size_t(rule.beta)]));
    add(Stat::HighAttentionAll, sum_pairs(high_attention[size_t(rule.beta)]));
    add(Stat::EffectiveRank, rank);
    add(Stat::EffectiveRankSamples, ranked.to(at::kLong));
    add(Stat::FirstTokenMass, first_mass);
    if (S_ > 0) {
      at::Tensor mine = at::zeros({B_, H_}, fixed.options());
      for (int64_t u : rule.separators) mine += fixed.select(2, u);
      add(Stat::SeparatorMass, mine);
    }
    // The anchor: endpoints counted per token (by rank among the sample's ids), the first
    // maximum (the smaller id) taken.
    const at::Tensor degree = S.sum(3, false, at::kLong) + S.sum(2, false, at::kLong);  // [B, H, T]
    const at::Tensor per_token = at::zeros_like(degree).scatter_add_(2, rank_.unsqueeze(1).expand({B_, H_, T_}), degree);
    const at::Tensor best = per_token.argmax(2);  // [B, H]
    const at::Tensor count = per_token.gather(2, best.unsqueeze(2)).squeeze(2);
    const at::Tensor has = hp.gt(0);
    const at::Tensor anchor = at::where(has, rank_token_.gather(1, best), at::full_like(best, -1));
    const at::Tensor share = at::where(has, count.to(at::kDouble) / (2 * hp).clamp_min(1).to(at::kDouble), at::zeros_like(hp, at::kDouble));
    const at::Tensor at_anchor = token_.unsqueeze(1).eq(anchor.unsqueeze(2)) & has.unsqueeze(2);  // [B, H, T]
    const at::Tensor touch = at_anchor.unsqueeze(3) | at_anchor.unsqueeze(2);
    add(Stat::AnchorPairs, sum_pairs(S & touch));
    add(Stat::Noise, sum_pairs(S & same_sentence_.logical_not() & same_token_.logical_not() & touch.logical_not()));
    add(Stat::SamplesWithPairs, has.to(at::kLong));
    const at::Tensor head_base = at::arange(H_, best.options()).view({1, H_}) * V;
    slot(Stat::AnchorCounts, r, layer * H_ * V, H_ * V)
        .scatter_add_(0, (head_base + anchor.clamp_min(0)).view({-1}), has.to(at::kLong).view({-1}));
    const at::Tensor sorted = std::get<0>(anchor.sort(1));
    const at::Tensor first_of_kind = at::cat({at::ones({B_, 1}, has.options()), sorted.slice(1, 1).ne(sorted.slice(1, 0, H_ - 1))}, 1);
    slot(Stat::DistinctAnchors, r, layer, 1).add_((sorted.ge(0) & first_of_kind).sum().to(at::kLong).view({1}));
    anchor_token_[r].select(1, layer).copy_(anchor);
    anchor_share_[r].select(1, layer).copy_(share);
    high_pairs_[r].select(1, layer).copy_(hp);
  }
}

void TensorStatistics::per_sample(std::vector<int32_t>& anchor_token, std::vector<float>& anchor_share,
                                  std::vector<int32_t>& high_pairs) const {
  const at::Tensor a = anchor_token_.to(at::kCPU).to(at::kInt).contiguous(), s = anchor_share_.to(at::kCPU).contiguous(),
                   h = high_pairs_.to(at::kCPU).to(at::kInt).contiguous();
  anchor_token.assign(a.data_ptr<int32_t>(), a.data_ptr<int32_t>() + a.numel());
  anchor_share.assign(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
  high_pairs.assign(h.data_ptr<int32_t>(), h.data_ptr<int32_t>() + h.numel());
}

at::Tensor TensorStatistics::selection_matrix(int64_t rule, int64_t row) const {
  return last_selection_.at(size_t(rule))[row].to(at::kCPU).to(at::kByte).contiguous();
}

}  // namespace ctxsim
