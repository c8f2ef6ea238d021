// Term counts, cosines and the lexical baselines (TextTiling, C99).
#include "stages/segment/lexical.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "stages/base/error.h"

namespace ctxsim::segment {
namespace {

std::vector<int32_t> sorted_unique(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

double norm_of(const std::vector<int32_t>& counts) {
  double s = 0;
  for (const int32_t c : counts) s += static_cast<double>(c) * c;
  return std::sqrt(s);
}

TermCounts counts_of_sorted(const std::vector<int32_t>& ids) {
  TermCounts t;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j < ids.size() && ids[j] == ids[i]) ++j;
    t.ids.push_back(ids[i]);
    t.counts.push_back(static_cast<int32_t>(j - i));
    i = j;
  }
  t.norm = norm_of(t.counts);
  return t;
}

std::vector<TermCounts> all_counts(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids) {
  const auto stop = sorted_unique(stop_ids);
  std::vector<TermCounts> out;
  out.reserve(sentences.size());
  for (const auto& s : sentences) out.push_back(term_counts(s, stop));
  return out;
}

int32_t sentence_count(const std::vector<TokenIds>& sentences) {
  if (sentences.empty()) throw Error("segment", "the document has no sentences", "give at least one sentence");
  return static_cast<int32_t>(sentences.size());
}

}  // namespace

TermCounts term_counts(const TokenIds& tokens, const std::vector<int32_t>& stop_ids) {
  // all_counts passes the set sorted once; a caller's own list may come in any order.
  const std::vector<int32_t> stop = std::is_sorted(stop_ids.begin(), stop_ids.end()) ? stop_ids : sorted_unique(stop_ids);
  std::vector<int32_t> kept;
  kept.reserve(tokens.size());
  for (const int32_t t : tokens)
    if (!std::binary_search(stop.begin(), stop.end(), t)) kept.push_back(t);
  std::sort(kept.begin(), kept.end());
  return counts_of_sorted(kept);
}

TermCounts pooled_counts(const std::vector<TermCounts>& parts) {
  std::vector<std::pair<int32_t, int32_t>> all;
  for (const auto& p : parts)
    for (size_t j = 0; j < p.ids.size(); ++j) all.emplace_back(p.ids[j], p.counts[j]);
  std::sort(all.begin(), all.end());
  TermCounts t;
  for (const auto& [id, c] : all) {
    if (!t.ids.empty() && t.ids.back() == id) {
      t.counts.back() += c;
    } else {
      t.ids.push_back(id);
      t.counts.push_back(c);
    }
  }
  t.norm = norm_of(t.counts);
  return t;
}

double cosine(const TermCounts& a, const TermCounts& b) {
  if (a.norm == 0 || b.norm == 0) return 0;
  double dot = 0;
  for (size_t i = 0, j = 0; i < a.ids.size() && j < b.ids.size();) {  // merge of two sorted lists
    if (a.ids[i] < b.ids[j]) {
      ++i;
    } else if (a.ids[i] > b.ids[j]) {
      ++j;
    } else {
      dot += static_cast<double>(a.counts[i++]) * b.counts[j++];
    }
  }
  return dot / (a.norm * b.norm);
}

std::vector<double> lexical_similarity(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids) {
  const int32_t n = sentence_count(sentences);
  const auto counts = all_counts(sentences, stop_ids);
  std::vector<double> sim(static_cast<size_t>(n) * n, 0.0);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = i; j < n; ++j) {
      // The diagonal exactly 1 (not a rounded cos), so identical rows compare equal in the rank mask.
      const double c = i == j ? (counts[i].norm > 0 ? 1.0 : 0.0) : cosine(counts[i], counts[j]);
      sim[static_cast<size_t>(i) * n + j] = sim[static_cast<size_t>(j) * n + i] = c;
    }
  return sim;
}

std::vector<double> lexical_gap_scores(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, int32_t window) {
  const int32_t n = sentence_count(sentences);
  if (window < 1) throw Error("TextTiling", "window " + std::to_string(window) + " is not positive", "use a window of 1 or more sentences");
  const auto counts = all_counts(sentences, stop_ids);
  std::vector<double> gaps(static_cast<size_t>(n - 1));
  for (int32_t g = 1; g < n; ++g) {
    const int32_t lo = std::max(0, g - window), hi = std::min(n, g + window);
    const TermCounts left = pooled_counts({counts.begin() + lo, counts.begin() + g});
    const TermCounts right = pooled_counts({counts.begin() + g, counts.begin() + hi});
    gaps[static_cast<size_t>(g - 1)] = cosine(left, right);
  }
  return gaps;
}

Boundaries texttiling(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, const BlockOptions& o, int32_t count) {
  check_boundary_count(sentence_count(sentences), count, true);
  return boundaries_from_gap_scores(lexical_gap_scores(sentences, stop_ids, o.window), o, count);
}

Boundaries c99_lexical(const std::vector<TokenIds>& sentences, const std::vector<int32_t>& stop_ids, const C99Options& o, int32_t count) {
  const int32_t n = sentence_count(sentences);
  return c99(lexical_similarity(sentences, stop_ids), n, o, count);
}

}  // namespace ctxsim::segment
