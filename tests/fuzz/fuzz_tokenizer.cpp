// The WordPiece tokenizer with the real bert-base-uncased vocabulary (uncased and cased): any
// text (invalid UTF-8 replaced, as corpus.invalid_utf8=replace does) gives ids of the
// vocabulary and one word id per token, without crashing; and the run's draw, which decides
// without tokenizing whether a sentence gives a token (yields_tokens), agrees with it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "stages/text/samples.h"
#include "stages/text/tokenizer.h"
#include "stages/text/utf8.h"

namespace {
std::unique_ptr<ctxsim::BertTokenizer> uncased, cased;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* path = std::getenv("CTXSIM_FUZZ_VOCAB");
  const ctxsim::Vocab vocab = ctxsim::Vocab::load(path ? path : "data/vocab/bert-base-uncased.txt");
  uncased = std::make_unique<ctxsim::BertTokenizer>(vocab, ctxsim::TokenizerOptions{});
  ctxsim::TokenizerOptions keep;
  keep.lower_case = keep.strip_accents = false;
  cased = std::make_unique<ctxsim::BertTokenizer>(vocab, keep);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = ctxsim::utf8::replace_invalid(std::string_view(reinterpret_cast<const char*>(data), size));
  for (auto* t : {uncased.get(), cased.get()}) {
    const ctxsim::Encoding e = t->encode(text);
    if (e.ids.size() != e.word_ids.size()) __builtin_trap();
    if (ctxsim::yields_tokens(text, *t, ctxsim::SampleFrame{}) == e.ids.empty()) __builtin_trap();
    for (int32_t id : e.ids)
      if (id < 0 || id >= t->vocab().size()) __builtin_trap();
    (void)t->basic_tokenize(text);
  }
  return 0;
}
