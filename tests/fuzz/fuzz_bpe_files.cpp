// The tokenizer files' loaders on hostile files: the input is a vocab.json and a merges.txt
// (split at the first NUL byte), or, when it has none, a tokenizer.json read as byte-level BPE and
// as WordPiece. Each either loads or throws ctxsim::Error; a loaded tokenizer encodes a fixed text
// (added tokens in it) to ids of its vocabulary.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/base/error.h"
#include "stages/text/bpe.h"
#include "stages/text/tokenizer_json.h"

namespace {
constexpr const char* kText = "Hello, world! It's 42 naïve 東京 👍🏽 <mask> <s>x</s>  <|endoftext|> [SEP] [MASK]";

void check(ctxsim::Tokenizer& t) {
  const ctxsim::Encoding e = t.encode(kText);
  if (e.word_ids.size() != e.ids.size()) __builtin_trap();
  for (int32_t id : e.ids)
    if (id < 0 || id >= t.vocab_size()) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  try {
    const auto model = nul == std::string::npos
                           ? ctxsim::BpeModel::parse_tokenizer_json(input, "tokenizer.json")
                           : ctxsim::BpeModel::parse(input.substr(0, nul), "vocab.json", input.substr(nul + 1), "merges.txt");
    ctxsim::BpeTokenizer t(model);
    check(t);
  } catch (const ctxsim::Error&) {}
  if (nul != std::string::npos) return 0;
  try {
    ctxsim::WordPieceJson j = ctxsim::parse_wordpiece_tokenizer_json(input, "tokenizer.json");
    ctxsim::BertTokenizer t(std::move(j.vocab), j.options);
    check(t);
  } catch (const ctxsim::Error&) {}
  return 0;
}
