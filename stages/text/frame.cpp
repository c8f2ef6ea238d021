#include "stages/text/frame.h"

#include <algorithm>

#include "stages/base/error.h"

namespace ctxsim {

const FrameTokens& wordpiece_frame_tokens() {
  static const FrameTokens t{"[CLS]", "[SEP]", "[PAD]", {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}};
  return t;
}

SampleFrame SampleFrame::resolve(const FrameTokens& tokens, const Vocab& vocab, bool prefix_space, const std::string& display) {
  SampleFrame f;
  f.prefix_space = prefix_space;
  const auto need = [&](const char* token, const char* role) {
    const int32_t id = vocab.id(token);
    if (id < 0)
      throw Error("vocabulary", std::string("it lacks ") + token + ", the token " + role + " every " + display + " sample",
                  "use the vocabulary that belongs to the model (its vocab.txt, or vocab.json + merges.txt)");
    return id;
  };
  if (tokens.begin) f.begin = need(tokens.begin, "that starts");
  if (tokens.end) f.end = need(tokens.end, "that ends the words of");
  f.pad = need(tokens.pad, "that pads");
  for (const auto& s : tokens.specials)
    if (const int32_t id = vocab.id(s); id >= 0) f.specials.push_back(id);
  std::sort(f.specials.begin(), f.specials.end());
  f.specials.erase(std::unique(f.specials.begin(), f.specials.end()), f.specials.end());
  return f;
}

SampleFrame SampleFrame::wordpiece(const Vocab& vocab) { return resolve(wordpiece_frame_tokens(), vocab, false, "BERT"); }

bool SampleFrame::is_special(int32_t id) const { return std::binary_search(specials.begin(), specials.end(), id); }

void SampleFrame::encode(Tokenizer& tokenizer, std::string_view text, Encoding& out) const {
  if (!prefix_space) return tokenizer.encode(text, out);
  std::string spaced;
  spaced.reserve(text.size() + 1);
  spaced += ' ';
  spaced += text;
  tokenizer.encode(spaced, out);
}

}  // namespace ctxsim
