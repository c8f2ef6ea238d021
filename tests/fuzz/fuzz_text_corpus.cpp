// The plain-text reader: documents at blank lines, sentences by the rule-based splitter.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stages/text/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const auto& doc : ctxsim::split_documents(std::string_view(reinterpret_cast<const char*>(data), size)))
    for (const auto& s : ctxsim::split_sentences(doc))
      if (s.empty() || s.front() == ' ' || s.back() == ' ') __builtin_trap();  // trimmed, never empty
  return 0;
}
