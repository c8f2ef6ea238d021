#include "stages/segment/windows.h"

#include <algorithm>

#include "stages/base/error.h"

namespace ctxsim::segment {

WindowPlan plan_windows(const std::vector<int32_t>& tokens, int32_t T, int32_t frame_tokens, int32_t words_from) {
  CTXSIM_CHECK(T >= 3 && frame_tokens >= 0 && frame_tokens <= 2 && words_from >= 0 && words_from <= frame_tokens,
               "plan_windows: T < 3, a frame of more than 2 tokens, or words before the window");
  const int32_t S = int32_t(tokens.size()), room = T - frame_tokens;
  WindowPlan p;
  for (int32_t t : tokens) {
    CTXSIM_CHECK(t >= 1, "plan_windows: a sentence without tokens");
    p.cut_sentences += t > room;
  }
  for (int32_t first = 0; first < S;) {
    SentenceWindow w{first, 0, 0};
    while (first + w.count < S && (w.count == 0 || w.tokens + tokens[size_t(first + w.count)] <= room)) {
      w.tokens = std::min(room, w.tokens + tokens[size_t(first + w.count)]);
      ++w.count;
    }
    p.windows.push_back(w);
    if (first + w.count >= S) break;
    // The next window starts at the first sentence at or past this window's middle.
    int32_t next = first + 1, at = tokens[size_t(first)];
    while (next < first + w.count && at < (w.tokens + 1) / 2) at += tokens[size_t(next++)];
    first = std::max(first + 1, next);
  }
  p.home.assign(size_t(S), -1);
  p.offset.assign(size_t(S), 0);
  p.length.assign(size_t(S), 0);
  std::vector<int32_t> best(size_t(S), -1);
  for (int32_t k = 0; k < int32_t(p.windows.size()); ++k) {
    const SentenceWindow& w = p.windows[size_t(k)];
    int32_t before = 0;
    for (int32_t s = w.first; s < w.first + w.count; ++s) {
      const int32_t len = std::min(tokens[size_t(s)], w.tokens - before);
      const int32_t centrality = std::min(before, w.tokens - before - len);
      if (centrality > best[size_t(s)]) {
        best[size_t(s)] = centrality;
        p.home[size_t(s)] = k;
        p.offset[size_t(s)] = words_from + before;
        p.length[size_t(s)] = len;
      }
      before += len;
    }
  }
  return p;
}

}  // namespace ctxsim::segment
