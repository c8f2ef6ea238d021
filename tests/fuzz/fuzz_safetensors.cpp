// The safetensors header and tensor table: any bytes are a valid header or one ctxsim::Error.
#include <cstddef>
#include <cstdint>

#include "stages/base/error.h"
#include "stages/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto h = ctxsim::SafetensorsHeader::parse(data, size, "fuzz.safetensors");
    for (const auto& [name, view] : h.tensors) {
      // Every view lies inside the input and its bytes are readable.
      volatile uint8_t sink = 0;
      if (view.nbytes) sink = sink ^ view.data[0] ^ view.data[view.nbytes - 1];
      (void)view.numel();
    }
  } catch (const ctxsim::Error&) {}
  return 0;
}
