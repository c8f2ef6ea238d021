#include "stages/segment/encode.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "stages/base/error.h"

namespace ctxsim::segment {
namespace {

// The layers' outputs alone: the last layer's feed-forward block is skipped.
const LayerRequest kLayersOnly = [] {
  LayerRequest r;
  r.final_hidden = false;
  return r;
}();

// Where each gap is read: the window holding both of its sentences where the gap is most central,
// and the two sentences' offsets and lengths there. window = -1: no window holds both.
struct GapPlace {
  int32_t window = -1, a_offset = 0, a_length = 0, b_offset = 0, b_length = 0;
};

std::vector<GapPlace> place_gaps(const WindowPlan& p, const std::vector<int32_t>& tokens, int32_t words_from) {
  const int32_t S = int32_t(tokens.size());
  std::vector<GapPlace> gaps(size_t(std::max(0, S - 1)));
  std::vector<int32_t> best(gaps.size(), -1);
  for (int32_t k = 0; k < int32_t(p.windows.size()); ++k) {
    const SentenceWindow& w = p.windows[size_t(k)];
    int32_t before = 0;
    for (int32_t s = w.first; s < w.first + w.count; ++s) {
      const int32_t len = std::min(tokens[size_t(s)], w.tokens - before);
      if (s + 1 < w.first + w.count) {
        const int32_t next = std::min(tokens[size_t(s + 1)], w.tokens - before - len);
        const int32_t centrality = std::min(before + len, w.tokens - before - len);
        if (centrality > best[size_t(s)]) {
          best[size_t(s)] = centrality;
          gaps[size_t(s)] = GapPlace{k, words_from + before, len, words_from + before + len, next};
        }
      }
      before += len;
    }
  }
  return gaps;
}

// Mean attention of a query token of block (a) on a key token of block (b): per pair, so that a
// longer neighbour does not draw more mass just by having more tokens.
double block_mass(const double* att, int64_t T, int32_t qa, int32_t qn, int32_t ka, int32_t kn) {
  double total = 0;
  for (int32_t i = qa; i < qa + qn; ++i)
    for (int32_t j = ka; j < ka + kn; ++j) total += att[int64_t(i) * T + j];
  return qn > 0 && kn > 0 ? total / (double(qn) * kn) : 0.0;
}

}  // namespace

std::vector<double> EncodedDocument::similarity(int64_t l, int64_t h) const {
  std::vector<double> sim(size_t(S * S), 0.0);
  for (int64_t head = h < 0 ? 0 : h; head < (h < 0 ? H : h + 1); ++head) {
    const double* p = pooled.data() + (l * H + head) * S * d;
    // Row a writes cells (a, b) and (b, a) for b >= a only: rows are independent, and each cell's
    // sum is the same whatever the thread count (a long `segment --text` takes the threads).
#pragma omp parallel for schedule(dynamic, 16) if (S * S * d > (int64_t(1) << 22))
    for (int64_t a = 0; a < S; ++a)
      for (int64_t b = a; b < S; ++b) {
        double dot = 0;
        for (int64_t q = 0; q < d; ++q) dot += p[a * d + q] * p[b * d + q];
        sim[size_t(a * S + b)] += dot;
        if (b != a) sim[size_t(b * S + a)] += dot;
      }
  }
  return sim;
}

EncodedDocument encode_document(const Encoder& encoder, const std::vector<std::vector<int32_t>>& sentences, int32_t T,
                                const SampleFrame& frame, int64_t batch) {
  c10::InferenceMode guard;
  std::vector<int32_t> tokens;
  for (const auto& s : sentences) tokens.push_back(int32_t(s.size()));
  const WindowPlan plan = plan_windows(tokens, T, T - frame.room(T), frame.words_from());
  const std::vector<GapPlace> gaps = place_gaps(plan, tokens, frame.words_from());
  EncodedDocument out;
  const ModelConfig& c = encoder.config();
  out.L = c.num_layers, out.H = c.num_heads, out.S = int64_t(sentences.size()), out.d = c.head_dim();
  out.cut_sentences = plan.cut_sentences;
  out.pooled.assign(size_t(out.L * out.H * out.S * out.d), 0.0);
  out.cross.assign(size_t(out.L * std::max<int64_t>(0, out.S - 1)), std::numeric_limits<double>::quiet_NaN());
  const int64_t W = int64_t(plan.windows.size());
  for (int64_t w0 = 0; w0 < W; w0 += batch) {
    const int64_t B = std::min(batch, W - w0);
    at::Tensor ids = at::full({B, T}, int64_t(frame.pad), at::kLong);
    at::Tensor valid = at::zeros({B, T}, at::kBool);
    for (int64_t b = 0; b < B; ++b) {
      const SentenceWindow& w = plan.windows[size_t(w0 + b)];
      int64_t at = 0;
      if (frame.begin >= 0) ids[b][at++] = frame.begin;
      for (int32_t s = w.first; s < w.first + w.count; ++s) {
        const int32_t take =
            std::min<int32_t>(tokens[size_t(s)], w.tokens - int32_t(at - frame.words_from()));  // cut only when it alone is too long
        for (int32_t q = 0; q < take; ++q) ids[b][at++] = sentences[size_t(s)][size_t(q)];
      }
      if (frame.end >= 0) ids[b][at++] = frame.end;
      valid[b].slice(0, 0, at).fill_(true);
    }
    encoder.forward(ids.to(encoder.device()), valid.to(encoder.device()), kLayersOnly, [&](const LayerOutputs& o) {
      const at::Tensor ctx = o.context.to(at::kCPU, at::kDouble).contiguous();    // [B, H, T, d]
      const at::Tensor att = o.attention.to(at::kCPU, at::kDouble).contiguous();  // [B, H, T, T]
      const double* cp = ctx.data_ptr<double>();
      const double* ap = att.data_ptr<double>();
      const int64_t l = o.layer, H = out.H, d = out.d, S = out.S;
      for (int64_t s = 0; s < S; ++s) {
        if (plan.home[size_t(s)] < w0 || plan.home[size_t(s)] >= w0 + B) continue;
        const int64_t b = plan.home[size_t(s)] - w0;
        for (int64_t h = 0; h < H; ++h) {
          double* dst = out.pooled.data() + ((l * H + h) * S + s) * d;
          for (int32_t i = plan.offset[size_t(s)]; i < plan.offset[size_t(s)] + plan.length[size_t(s)]; ++i)
            for (int64_t q = 0; q < d; ++q) dst[q] += cp[((b * H + h) * T + i) * d + q] / plan.length[size_t(s)];
        }
      }
      for (int64_t g = 0; g + 1 < S; ++g) {
        const GapPlace& p = gaps[size_t(g)];
        if (p.window < w0 || p.window >= w0 + B) continue;
        const int64_t b = p.window - w0;
        double mass = 0;
        for (int64_t h = 0; h < H; ++h) {
          const double* a = ap + (b * H + h) * T * T;
          mass += 0.5 * (block_mass(a, T, p.b_offset, p.b_length, p.a_offset, p.a_length) +
                         block_mass(a, T, p.a_offset, p.a_length, p.b_offset, p.b_length));
        }
        out.cross[size_t(l * (S - 1) + g)] = mass / double(H);
      }
    });
  }
  // A gap no window holds whole: the mean of the layer's other gaps.
  for (int64_t l = 0; l < out.L && out.S > 1; ++l) {
    double sum = 0;
    int64_t n = 0;
    for (int64_t g = 0; g + 1 < out.S; ++g)
      if (!std::isnan(out.cross[size_t(l * (out.S - 1) + g)])) sum += out.cross[size_t(l * (out.S - 1) + g)], ++n;
    for (int64_t g = 0; g + 1 < out.S; ++g)
      if (std::isnan(out.cross[size_t(l * (out.S - 1) + g)])) out.cross[size_t(l * (out.S - 1) + g)] = n ? sum / double(n) : 0.0;
  }
  return out;
}

}  // namespace ctxsim::segment
