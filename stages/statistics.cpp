#include "stages/statistics.h"

#include <cmath>
#include <limits>

#include "stages/error.h"

namespace ctxsim {

at::Tensor projection_metric(const at::Tensor& o_by_head) {
  return at::matmul(o_by_head, o_by_head.transpose(1, 2));  // [H, d, d]
}

at::Tensor context_similarity(const at::Tensor& vectors, const at::Tensor& valid, const at::Tensor& metric) {
  const auto dtype = vectors.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor o = vectors.to(dtype);
  at::Tensor left = o;
  if (metric.defined()) left = at::matmul(o, metric.to(dtype));            // [B, H, T, k]
  at::Tensor c = at::matmul(left, o.transpose(-1, -2));                    // [B, H, T, T]
  const int64_t B = c.size(0), T = c.size(2);
  const at::Tensor v = valid.to(dtype);
  const at::Tensor keep = (v.view({B, 1, T, 1}) * v.view({B, 1, 1, T})) *
                          (1 - at::eye(T, c.options()));                   // zero [PAD] and the diagonal
  return c.mul_(keep);
}

BatchStatistics::BatchStatistics(const StatisticsOptions& opt, const BatchSamples& s, Accumulator& acc)
    : opt_(opt), acc_(acc), B_(s.batch), T_(s.seq_len), L_(acc.shape().layers), R_(static_cast<int64_t>(opt.rules.size())) {
  if (T_ != acc.shape().seq_len || R_ != acc.shape().rules)
    throw Error("statistics", "batch and accumulator shapes differ", "this is a bug");
  H_ = acc.shape().heads;
  const auto i32 = at::TensorOptions().dtype(at::kInt);
  tokens_ = at::from_blob(const_cast<int32_t*>(s.token_ids), {B_, T_}, i32).to(at::kLong);
  const at::Tensor sent = at::from_blob(const_cast<int16_t*>(s.sentence_ids), {B_, T_}, at::TensorOptions().dtype(at::kShort)).to(at::kLong);
  const at::Tensor nv = at::from_blob(const_cast<int16_t*>(s.n_valid), {B_}, at::TensorOptions().dtype(at::kShort)).to(at::kLong);
  valid_ = at::arange(T_, at::kLong).view({1, T_}) < nv.view({B_, 1});
  const at::Tensor tri = at::triu_indices(T_, T_, 1);                      // [2, P], rows then columns ascending
  iu_ = tri[0].contiguous();
  ju_ = tri[1].contiguous();
  dist_ = ju_ - iu_;
  const auto at_i = [&](const at::Tensor& x) { return x.index_select(1, iu_); };
  const auto at_j = [&](const at::Tensor& x) { return x.index_select(1, ju_); };
  pair_valid_ = at_i(valid_) & at_j(valid_);
  const at::Tensor si = at_i(sent), sj = at_j(sent);
  eligible_ = pair_valid_ & (si >= 0) & (sj >= 0);
  same_sentence_ = eligible_ & (si == sj);
  at::Tensor special = at::zeros({B_, T_}, at::kBool);
  for (int64_t id : opt.special_ids) special |= tokens_ == id;
  const at::Tensor ti = at_i(tokens_), tj = at_j(tokens_);
  same_token_ = pair_valid_ & (ti == tj) & at_i(special).logical_not();
  n_pairs_ = (nv * (nv - 1)).div(2, "trunc");  // integer: "/" would be true division

  // Rank of each token among the sample's distinct ids ([PAD] positions sort last), so that the
  // anchor's tie rule (smaller id wins) becomes "smaller rank wins".
  const int64_t big = std::numeric_limits<int32_t>::max();
  const at::Tensor keyed = at::where(valid_, tokens_, at::full({}, big, at::kLong));
  const auto sorted = at::sort(keyed, 1);
  const at::Tensor sv = std::get<0>(sorted), perm = std::get<1>(sorted);
  at::Tensor is_new = at::ones({B_, T_}, at::kLong);
  if (T_ > 1) is_new.slice(1, 1) = (sv.slice(1, 1) != sv.slice(1, 0, T_ - 1)).to(at::kLong);
  const at::Tensor rank_sorted = at::cumsum(is_new, 1) - 1;
  rank_ = at::empty({B_, T_}, at::kLong).scatter_(1, perm, rank_sorted);
  token_of_rank_ = at::full({B_, T_}, -1, at::kLong).scatter_(1, rank_sorted, sv);
  rank_i_ = at_i(rank_);
  rank_j_ = at_j(rank_);

  // Rule-independent baselines.
  *acc_.at("samples") += B_;
  *acc_.at("valid_pairs") += n_pairs_.sum().item<int64_t>();
  *acc_.at("same_sentence_all") += same_sentence_.sum().item<int64_t>();
  *acc_.at("sentence_eligible_all") += eligible_.sum().item<int64_t>();
  *acc_.at("same_token_all") += same_token_.sum().item<int64_t>();
  const at::Tensor dist_all = at::zeros({T_}, at::kLong).index_add_(0, dist_, pair_valid_.sum(0).to(at::kLong));
  int64_t* da = acc_.at("distance_all");
  const int64_t* dp = dist_all.data_ptr<int64_t>();
  for (int64_t d = 0; d < T_; ++d) da[d] += dp[d];

  const size_t n = static_cast<size_t>(R_ * B_ * L_ * H_);
  out_.anchor_token.assign(n, -1);
  out_.anchor_share.assign(n, 0.0f);
  out_.high_pairs.assign(n, 0);
  last_selection_.assign(static_cast<size_t>(R_), Selection{});
}

namespace {

// The smallest value of `dtype` that is >= t: comparing x >= it in dtype is the same as
// comparing double(x) >= t (SPEC §3: thresholds are compared in double) without converting x.
at::Tensor ceil_to_dtype(const at::Tensor& t_double, at::ScalarType dtype) {
  if (dtype == at::kDouble) return t_double;
  at::Tensor f = t_double.to(dtype);
  const at::Tensor up = at::nextafter(f, at::full({}, std::numeric_limits<double>::infinity(), f.options()));
  return at::where(f.to(at::kDouble) < t_double, up, f);
}

at::Tensor scalar_threshold(double t, const at::Tensor& like) {
  return ceil_to_dtype(at::full({}, t, at::kDouble), like.scalar_type());
}

}  // namespace

BatchStatistics::Selection BatchStatistics::select(const SelectionRule& rule, const at::Tensor& c) const {
  const at::Tensor pv = pair_valid_.unsqueeze(1);  // [B, 1, P]
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t P = c.size(2);
  Selection out;
  if (rule.kind == SelectionRule::Kind::TopFraction) {
    // k = min(P, max(1, round(f·P))) per sample, 0 when the sample has no pair.
    std::vector<int64_t> k(static_cast<size_t>(B_));
    const int64_t* np = n_pairs_.data_ptr<int64_t>();
    int64_t kmax = 0;
    for (int64_t b = 0; b < B_; ++b) {
      const int64_t n = np[b];
      k[size_t(b)] = n == 0 ? 0 : std::min<int64_t>(n, std::max<int64_t>(1, static_cast<int64_t>(std::round(rule.value * double(n)))));
      kmax = std::max(kmax, k[size_t(b)]);
    }
    const at::Tensor kt = at::tensor(k, at::kLong).view({B_, 1, 1});
    if (kmax == 0) {
      out.index = at::zeros({B_, H_, 0}, at::kLong);
      out.mask = at::zeros({B_, H_, 0}, at::kBool);
      return out;
    }
    const at::Tensor masked = c.masked_fill(pv.logical_not(), -inf);
    // One more than needed, to see whether the k-th value is tied with the next one.
    const int64_t want = std::min(P, kmax + 1);
    const auto top = at::topk(masked, want, -1, /*largest=*/true, /*sorted=*/true);
    const at::Tensor values = std::get<0>(top), index = std::get<1>(top);        // [B, H, want]
    const at::Tensor kth = values.gather(2, (kt.clamp_min(1) - 1).expand({B_, H_, 1}));
    const at::Tensor next = values.gather(2, kt.clamp_max(want - 1).expand({B_, H_, 1}));
    const bool has_next = (kt < n_pairs_.view({B_, 1, 1})).any().item<bool>();
    const bool tie = has_next && ((kth == next) & (kt < n_pairs_.view({B_, 1, 1})) & (kt > 0)).any().item<bool>();
    if (!tie && !opt_.dense_only) {
      // The k largest are unambiguous: take topk's indices.
      out.index = index.slice(2, 0, kmax);
      out.mask = (at::arange(kmax, at::kLong).view({1, 1, kmax}) < kt).expand({B_, H_, kmax}).contiguous();
      return out;
    }
    // Ties at the k-th value: every pair above it, then the first tied ones in (i, j) order.
    const at::Tensor above = masked > kth;
    const at::Tensor need = kt - above.sum(-1, true);
    const at::Tensor tied = masked == kth;
    const at::Tensor tie_rank = at::cumsum(tied.to(at::kInt), -1);
    out.mask = (above | (tied & (tie_rank <= need))) & (kt > 0);
    return out;
  }
  at::Tensor dense;
  if (rule.kind == SelectionRule::Kind::RelativeToMax) {
    const at::Tensor mx = std::get<0>(c.masked_fill(pv.logical_not(), -inf).max(-1, true));  // [B, H, 1]
    const at::Tensor thr = ceil_to_dtype(mx.to(at::kDouble) * rule.value, c.scalar_type());
    dense = pv & (c >= thr) & (mx > 0);
  } else {
    dense = pv & (c >= scalar_threshold(rule.value, c));
  }
  // Few selected pairs: continue with their indices (cheaper); many: keep the dense mask.
  const int64_t kmax = dense.sum(-1).max().item<int64_t>();
  if (!opt_.dense_only && kmax * 16 <= P) {
    const at::Tensor index = std::get<1>(at::topk(dense.to(at::kByte), kmax, -1, true, false));
    out.index = index;
    out.mask = dense.gather(2, index);
    return out;
  }
  out.mask = dense;
  return out;
}

at::Tensor BatchStatistics::separator_keys(const std::vector<int64_t>& ids) const {
  at::Tensor sep = at::zeros({B_, T_}, at::kBool);
  for (int64_t id : ids) sep |= tokens_ == id;
  return sep & valid_;
}

at::Tensor BatchStatistics::selection_matrix(int64_t rule) const {
  const Selection& sel = last_selection_.at(static_cast<size_t>(rule));
  at::Tensor m = at::zeros({B_, H_, T_ * T_}, at::kByte);
  const at::Tensor flat = iu_ * T_ + ju_;  // [P]
  if (sel.index.defined()) {
    m.scatter_(2, flat.index_select(0, sel.index.flatten()).view(sel.index.sizes()), sel.mask.to(at::kByte));
  } else {
    m.index_copy_(2, flat, sel.mask.to(at::kByte));
  }
  return m.view({B_, H_, T_, T_});
}

void BatchStatistics::add_layer(int64_t layer, const at::Tensor& similarity, const at::Tensor& attention) {
  const at::Tensor flat_ij = iu_ * T_ + ju_, flat_ji = ju_ * T_ + iu_;
  const at::Tensor c = similarity.flatten(2).index_select(2, flat_ij);  // [B, H, P]
  const at::Tensor a_flat = attention.flatten(2);
  const at::Tensor a_max = at::maximum(a_flat.index_select(2, flat_ij), a_flat.index_select(2, flat_ji));
  const auto add_lh = [&](const char* name, int64_t rule, const at::Tensor& per_head /*[H]*/) {
    if (per_head.numel() != H_) throw std::logic_error(std::string("statistics: ") + name + " is not per head");
    int64_t* dst = acc_.at(name, rule) + layer * H_;
    const at::Tensor h = per_head.to(at::kLong).contiguous();
    const int64_t* p = h.data_ptr<int64_t>();
    for (int64_t k = 0; k < H_; ++k) dst[k] += p[k];
  };
  // High-attention pairs per threshold and separator mass per separator set, each computed once
  // however many rules share it.
  std::vector<std::pair<double, at::Tensor>> high_att_by_beta;
  const auto high_attention = [&](double beta) {
    for (const auto& [b, t] : high_att_by_beta)
      if (b == beta) return t;
    const at::Tensor t = (a_max >= scalar_threshold(beta, a_max)) & pair_valid_.unsqueeze(1);  // [B, H, P]
    high_att_by_beta.emplace_back(beta, t);
    return t;
  };
  std::vector<std::pair<std::vector<int64_t>, at::Tensor>> mass_by_set;
  const auto separator_mass = [&](const std::vector<int64_t>& ids) {
    for (const auto& [set, t] : mass_by_set)
      if (set == ids) return t;
    // Mass on separator keys, averaged over valid query rows; fixed point per sample: [H].
    const at::Tensor sep = separator_keys(ids).to(attention.scalar_type()).view({B_, 1, T_, 1});
    const at::Tensor mass = at::matmul(attention, sep).squeeze(-1).to(at::kDouble);           // [B, H, T]
    const at::Tensor vrows = valid_.to(at::kDouble).view({B_, 1, T_});
    const at::Tensor mean = (mass * vrows).sum(-1) / vrows.sum(-1).clamp_min(1);                // [B, H]
    const at::Tensor t = at::round(mean * kFixedPointScale).to(at::kLong).sum(0);
    mass_by_set.emplace_back(ids, t);
    return t;
  };

  for (int64_t r = 0; r < R_; ++r) {
    const SelectionRule& rule = opt_.rules[static_cast<size_t>(r)];
    const at::Tensor high_att = high_attention(std::isnan(rule.attention_threshold) ? opt_.attention_threshold : rule.attention_threshold);
    add_lh("high_attention_all", r, high_att.sum(at::IntArrayRef{0, 2}));
    const bool own_set = size_t(r) < opt_.rule_separator_ids.size() && !opt_.rule_separator_ids[size_t(r)].empty();
    add_lh("separator_mass", r, separator_mass(own_set ? opt_.rule_separator_ids[size_t(r)] : opt_.separator_ids));
    const Selection sel = select(rule, c);
    last_selection_[static_cast<size_t>(r)] = sel;
    // Pair attributes of the selected slots: [B, H, K] gathered for a few selected pairs, or
    // the [B, 1, P] per-sample tensors broadcast over heads when the mask is dense.
    const bool sparse = sel.index.defined();
    const at::Tensor& m = sel.mask;
    const auto of_pairs = [&](const at::Tensor& bp /*[B, P]*/) {
      return sparse ? bp.unsqueeze(1).expand({B_, H_, bp.size(1)}).gather(2, sel.index) : bp.unsqueeze(1);
    };
    const at::Tensor ss = of_pairs(same_sentence_), el = of_pairs(eligible_), st = of_pairs(same_token_);
    const at::Tensor hp = m.sum(-1);                                                  // [B, H]
    add_lh("high_pairs", r, hp.sum(0));
    add_lh("same_sentence", r, (m & ss).sum(at::IntArrayRef{0, 2}));
    add_lh("sentence_eligible", r, (m & el).sum(at::IntArrayRef{0, 2}));
    add_lh("same_token", r, (m & st).sum(at::IntArrayRef{0, 2}));
    add_lh("in_attention", r, (m & (sparse ? high_att.gather(2, sel.index) : high_att)).sum(at::IntArrayRef{0, 2}));
    // Distance histogram: per head, selected pairs binned by j - i.
    at::Tensor hist;
    if (sparse) {
      const int64_t K = m.size(2);
      const at::Tensor bins = at::arange(H_, at::kLong).view({1, H_, 1}) * T_ + dist_.index_select(0, sel.index.flatten()).view({B_, H_, K});
      hist = at::zeros({H_ * T_}, at::kLong).index_add_(0, bins.flatten(), m.to(at::kLong).flatten());
    } else {
      hist = at::zeros({H_, T_}, at::kLong).index_add_(1, dist_, m.sum(0).to(at::kLong));
    }
    {
      int64_t* dst = acc_.at("distance_hist", r) + layer * H_ * T_;
      const int64_t* p = hist.contiguous().data_ptr<int64_t>();
      for (int64_t k = 0; k < H_ * T_; ++k) dst[k] += p[k];
    }
    // Anchor: endpoint counts per distinct token of the sample; ties go to the smaller id.
    at::Tensor counts;  // [B, H, T] indexed by token rank
    if (sparse) {
      const at::Tensor ml = m.to(at::kLong);
      counts = at::zeros({B_, H_, T_}, at::kLong).scatter_add_(2, of_pairs(rank_i_), ml).scatter_add_(2, of_pairs(rank_j_), ml);
    } else {
      // Dense: endpoint degree of each position from the square mask, then summed by token rank.
      const at::Tensor square = at::zeros({B_, H_, T_ * T_}, at::kInt).index_copy_(2, flat_ij, m.to(at::kInt)).view({B_, H_, T_, T_});
      const at::Tensor degree = (square.sum(-1) + square.sum(-2)).to(at::kLong);   // [B, H, T]
      counts = at::zeros({B_, H_, T_}, at::kLong).scatter_add_(2, rank_.unsqueeze(1).expand({B_, H_, T_}), degree);
    }
    const at::Tensor best = std::get<0>(counts.max(-1, true));                     // [B, H, 1]
    const at::Tensor ranks = at::arange(T_, at::kLong).view({1, 1, T_});
    const at::Tensor best_rank = at::where(counts == best, ranks, at::full({}, T_, at::kLong)).amin(-1);  // [B, H]
    const at::Tensor has = hp > 0;
    const at::Tensor anchor = at::where(has, token_of_rank_.gather(1, best_rank.clamp_max(T_ - 1)), at::full({}, -1, at::kLong));
    const at::Tensor share = at::where(has, best.squeeze(-1).to(at::kDouble) / (2.0 * hp.to(at::kDouble)), at::zeros({}, at::kDouble));
    // Pairs touching an occurrence of the anchor (compared by rank: same token, same rank);
    // noise = none of the three explanations.
    const at::Tensor a3 = best_rank.unsqueeze(-1);
    const at::Tensor touch = (of_pairs(rank_i_) == a3) | (of_pairs(rank_j_) == a3);
    add_lh("anchor_pairs", r, (m & touch).sum(at::IntArrayRef{0, 2}));
    add_lh("noise", r, (m & (ss | st | touch).logical_not()).sum(at::IntArrayRef{0, 2}));
    add_lh("samples_with_pairs", r, has.sum(0));
    // Distinct anchors across the heads of each sample.
    {
      const at::Tensor sorted = std::get<0>(at::sort(anchor, 1));           // [B, H]
      at::Tensor first = sorted >= 0;
      if (H_ > 1) first.slice(1, 1) &= sorted.slice(1, 1) != sorted.slice(1, 0, H_ - 1);
      acc_.at("distinct_anchors", r)[layer] += first.sum().item<int64_t>();
    }
    // Per-sample outputs and anchor counts.
    const at::Tensor anchor_c = anchor.contiguous(), share_c = share.to(at::kFloat).contiguous(), hp_c = hp.to(at::kLong).contiguous();
    const int64_t* ap = anchor_c.data_ptr<int64_t>();
    const float* sp = share_c.data_ptr<float>();
    const int64_t* hpp = hp_c.data_ptr<int64_t>();
    int64_t* counts_dst = acc_.at("anchor_counts", r);
    const int64_t V = acc_.shape().vocab;
    for (int64_t b = 0; b < B_; ++b) {
      for (int64_t h = 0; h < H_; ++h) {
        const size_t o = static_cast<size_t>(((r * B_ + b) * L_ + layer) * H_ + h);
        const int64_t tok = ap[b * H_ + h];
        out_.anchor_token[o] = static_cast<int32_t>(tok);
        out_.anchor_share[o] = sp[b * H_ + h];
        out_.high_pairs[o] = static_cast<int32_t>(hpp[b * H_ + h]);
        if (tok >= 0) {
          if (tok >= V) throw Error("statistics", "token id " + std::to_string(tok) + " outside the vocabulary", "use the model's vocab.txt");
          ++counts_dst[(layer * H_ + h) * V + tok];
        }
      }
    }
  }
}

}  // namespace ctxsim
