// A sample's frame (SPEC §1, §7): the special tokens around a window's words in one model family
// (`[CLS] … [SEP] [PAD]…`, `<s> … </s> <pad>…`, `<|endoftext|> …` padded with itself), the
// specials that are never counted as a repeated token, and how a sentence becomes tokens (byte-level
// BPE families tokenize `" " + text`, so a sentence's tokens do not depend on where it sits).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/text/tokenizer.h"

namespace ctxsim {

// A family's frame by token spelling (a row of the family table holds one).
struct FrameTokens {
  const char* begin;                  // first position: "[CLS]", "<s>", "<|endoftext|>"; nullptr: none (Qwen)
  const char* end;                    // after the words: "[SEP]", "</s>"; nullptr: none (decoders)
  const char* pad;                    // after the end; marked invalid
  std::vector<std::string> specials;  // the family's special tokens (those the vocabulary has count)
};

// BERT's and DistilBERT's frame.
const FrameTokens& wordpiece_frame_tokens();

// A frame with the ids of one vocabulary.
struct SampleFrame {
  int32_t begin = -1, end = -1, pad = -1;  // begin, end -1: the family has no such token
  bool prefix_space = false;               // sentences are tokenized as " " + text (byte-level BPE)
  std::vector<int32_t> specials;           // sorted

  // `tokens` looked up in `vocab`; an Error naming the family (`display`) when its begin, end or
  // pad token is not in the vocabulary.
  static SampleFrame resolve(const FrameTokens& tokens, const Vocab& vocab, bool prefix_space, const std::string& display);
  // BERT's frame in a WordPiece vocabulary ([CLS] [SEP] [PAD]).
  static SampleFrame wordpiece(const Vocab& vocab);

  // Positions a window's words may take in a sample of seq_len (T less the begin and end tokens).
  int32_t room(int32_t seq_len) const { return seq_len - (begin >= 0 ? 1 : 0) - (end >= 0 ? 1 : 0); }
  int32_t words_from() const { return begin >= 0 ? 1 : 0; }  // the position of a sample's first word
  bool is_special(int32_t id) const;
  // Appends the ids of one sentence of a window (`" " + text` under prefix_space).
  void encode(Tokenizer& tokenizer, std::string_view text, Encoding& out) const;
  Encoding encode(Tokenizer& tokenizer, std::string_view text) const {
    Encoding e;
    encode(tokenizer, text, e);
    return e;
  }
};

}  // namespace ctxsim
