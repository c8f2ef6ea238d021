// The JSON-lines reader: documents, or one ctxsim::Error naming the line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stages/base/error.h"
#include "stages/text/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ctxsim::parse_jsonl(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.jsonl", "text",
                        [](const std::string&, std::vector<std::string>) { return true; });
  } catch (const ctxsim::Error&) {}
  return 0;
}
