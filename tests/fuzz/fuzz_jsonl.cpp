// The JSON-lines reader: documents, or one ctxsim::Error naming the line.
#include <cstdint>
#include <cstddef>
#include <string_view>

#include "stages/text/corpus.h"
#include "stages/base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ctxsim::parse_jsonl(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.jsonl", "text",
                        [](const std::string&, std::vector<std::string>) { return true; });
  } catch (const ctxsim::Error&) {
  }
  return 0;
}
