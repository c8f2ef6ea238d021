// The Brown reader: any bytes give sentences (never an empty one), without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "stages/text/corpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t untagged = 0;
  for (const auto& s : ctxsim::parse_brown(std::string_view(reinterpret_cast<const char*>(data), size), &untagged))
    if (s.empty()) __builtin_trap();
  return 0;
}
