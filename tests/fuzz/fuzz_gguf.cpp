// A GGUF file's header, metadata and tensor table: any bytes are a valid header or one
// ctxsim::Error; every tensor a valid header lists lies inside the input and dequantises.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stages/base/error.h"
#include "stages/base/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = ctxsim::GgufHeader::parse(data, size, "fuzz.gguf");
    for (const auto& t : h.tensors) {
      volatile uint8_t sink = 0;
      if (t.nbytes) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
      if (t.type->dequantises && t.numel() <= (1 << 16)) {
        std::vector<float> out(size_t(t.numel()));
        ctxsim::dequantize(*t.type, t.data, t.numel(), out.data());
      }
    }
    (void)h.integer("general.alignment", "fuzz.gguf", 0);
  } catch (const ctxsim::Error&) {}
  return 0;
}
