// A document longer than the model's T tokens, encoded in overlapping windows aligned to sentence
// starts, and the one window each sentence's vectors are taken from. Pure planning over token
// counts: the encoder (segment/encode.h) fills the windows. No LibTorch.
//
// The rule. A window is `[CLS] whole sentences [SEP]`, packed from its first sentence while they
// fit in T-2 tokens (a lone sentence longer than that is cut to T-2 tokens, and said so). Window 0
// starts at sentence 0; window k+1 starts at the first sentence of window k that starts at or past
// the middle of its tokens (at least one sentence later), so consecutive windows overlap by about
// half and every sentence lies whole in one or two windows; the last window ends at the last
// sentence. A sentence's home window is the one, among those holding it, where it sits most
// centrally: the largest min(tokens before it, tokens after it) within the window, ties to the
// earlier window. Why: a token's context vector depends on the context it attends to; in its home
// window a sentence has the most context on both sides, as in an unbroken encoding.
#pragma once
#include <cstdint>
#include <vector>

namespace ctxsim::segment {

struct SentenceWindow {
  int32_t first = 0;   // first sentence
  int32_t count = 0;   // sentences (whole, except a lone over-long one)
  int32_t tokens = 0;  // their tokens, at most T - 2
};

struct WindowPlan {
  std::vector<SentenceWindow> windows;
  std::vector<int32_t> home;    // [S] each sentence's home window
  std::vector<int32_t> offset;  // [S] position of its first token in its home window (words_from + tokens before it there)
  std::vector<int32_t> length;  // [S] its tokens there (cut only when it alone exceeds T - 2)
  int32_t cut_sentences = 0;    // sentences longer than T - 2 tokens
};

// sentence_tokens: tokens per sentence (each >= 1); T >= 3. frame_tokens: the window's own tokens
// (2: [CLS] and [SEP]; 1 for a family without an end token, GPT-2's; 0 for one without a begin
// token either, Qwen's), so that sentences fit in T - frame_tokens (what the comments above call
// T-2); words_from: the position of a window's first word (1 after a begin token, else 0).
WindowPlan plan_windows(const std::vector<int32_t>& sentence_tokens, int32_t T, int32_t frame_tokens = 2, int32_t words_from = 1);

}  // namespace ctxsim::segment
