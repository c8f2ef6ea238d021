// Byte-level BPE with GPT-2's real files: any text (invalid UTF-8 replaced) gives ids of the
// vocabulary, one word id per token, and tokens that spell its bytes back through GPT-2's
// bytes-to-unicode table, without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>

#include "stages/text/bpe.h"
#include "stages/text/utf8.h"

namespace {
std::unique_ptr<ctxsim::BpeTokenizer> gpt2;
std::map<char32_t, uint8_t> byte_of;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("CTXSIM_FUZZ_GPT2");
  const std::string d = dir ? dir : "data/vocab/gpt2";
  gpt2 = std::make_unique<ctxsim::BpeTokenizer>(ctxsim::BpeModel::load(d + "/vocab.json", d + "/merges.txt"));
  for (int b = 0; b < 256; ++b) byte_of[ctxsim::byte_to_unicode(uint8_t(b))] = uint8_t(b);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = ctxsim::utf8::replace_invalid(std::string_view(reinterpret_cast<const char*>(data), size));
  const ctxsim::Encoding e = gpt2->encode(text);
  if (e.ids.size() != e.word_ids.size()) __builtin_trap();
  if (text.empty() != e.ids.empty()) __builtin_trap();
  for (int32_t id : e.ids)
    if (id < 0 || id >= gpt2->vocab_size()) __builtin_trap();
  std::string back;
  for (const auto& token : gpt2->tokens(e.ids)) {
    size_t i = 0;
    while (i < token.size()) {
      const auto it = byte_of.find(ctxsim::utf8::next(token, i));
      if (it == byte_of.end()) __builtin_trap();
      back += char(it->second);
    }
  }
  if (back != text) __builtin_trap();
  return 0;
}
