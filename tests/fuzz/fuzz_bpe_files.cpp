// The byte-level BPE loaders on hostile files: the input is a vocab.json and a merges.txt
// (split at the first NUL byte), or, when it has none, a tokenizer.json. Each either loads or
// throws ctxsim::Error; a loaded model tokenizes a fixed text to ids of its vocabulary.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stages/base/error.h"
#include "stages/text/bpe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  try {
    const auto model = nul == std::string::npos
                           ? ctxsim::BpeModel::parse_tokenizer_json(input, "tokenizer.json")
                           : ctxsim::BpeModel::parse(input.substr(0, nul), "vocab.json", input.substr(nul + 1), "merges.txt");
    ctxsim::BpeTokenizer t(model);
    const ctxsim::Encoding e = t.encode("Hello, world! It's 42 naïve 東京 👍🏽");
    for (int32_t id : e.ids)
      if (id < 0 || id >= t.vocab_size()) __builtin_trap();
  } catch (const ctxsim::Error&) {}
  return 0;
}
