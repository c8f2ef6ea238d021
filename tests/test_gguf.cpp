// GGUF: the header parsed from bytes built here, each corruption class as its own case (asserting
// the message), and every block type dequantised by hand from its definition (ggml-quants.c).
#include "stages/base/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

using test::error_of;

// A GGUF file written field by field.
struct Bytes {
  std::string b;
  template <class T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& pad(size_t alignment) {
    b.append((alignment - b.size() % alignment) % alignment, '\0');
    return *this;
  }
  GgufHeader parse() const { return GgufHeader::parse(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "m.gguf"); }
};

// Header, `kv` entries (a string and a uint32), one tensor entry [rows, cols] of `type` at offset 0.
Bytes one_tensor(uint32_t type, uint64_t cols, uint64_t rows, size_t data_bytes, uint64_t tensors = 1) {
  Bytes f;
  f.b = "GGUF";
  f.put<uint32_t>(3).put<uint64_t>(tensors).put<uint64_t>(2);
  f.str("general.architecture").put<uint32_t>(8).str("llama");
  f.str("llama.block_count").put<uint32_t>(4).put<uint32_t>(30);
  f.str("w").put<uint32_t>(2).put<uint64_t>(cols).put<uint64_t>(rows).put<uint32_t>(type).put<uint64_t>(0);
  f.pad(32);
  f.b.append(data_bytes, '\0');
  return f;
}

uint16_t half_bits(float x) {  // exact for the values used here (powers of two and small integers)
  if (x == 0) return 0;
  int e;
  const float m = std::frexp(std::fabs(x), &e);  // x = m * 2^e, m in [0.5, 1)
  const uint16_t sign = x < 0 ? 0x8000 : 0;
  return uint16_t(sign | uint16_t((e - 1 + 15) << 10) | uint16_t(std::lround((m * 2 - 1) * 1024)));
}

TEST(Gguf, HeaderMetadataAndTensorTable) {
  Bytes f = one_tensor(0, 4, 2, 32);
  const GgufHeader h = f.parse();
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.text("general.architecture", "m.gguf"), "llama");
  EXPECT_EQ(h.integer("llama.block_count", "m.gguf"), 30);
  EXPECT_EQ(h.integer("llama.missing", "m.gguf", 7), 7);
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<int64_t>{2, 4}));  // ne = {4, 2}: 2 rows of 4
  EXPECT_EQ(h.tensors[0].nbytes, 32u);
  EXPECT_EQ(h.tensors[0].data, reinterpret_cast<const uint8_t*>(f.b.data()) + f.b.size() - 32);
  EXPECT_HAS(error_of([&] { h.integer("llama.missing", "m.gguf"); }), "has no metadata 'llama.missing'");
  EXPECT_HAS(error_of([&] { h.integer("general.architecture", "m.gguf"); }), "is not an integer");
}

TEST(GgufCorrupt, EachClassIsOneErrorNamingIt) {
  Bytes bad_magic = one_tensor(0, 4, 2, 32);
  bad_magic.b[0] = 'X';
  EXPECT_HAS(error_of([&] { bad_magic.parse(); }), "does not start with GGUF's magic");
  Bytes version = one_tensor(0, 4, 2, 32);
  version.b[4] = 1;
  EXPECT_HAS(error_of([&] { version.parse(); }), "is GGUF version 1, and ctxsim reads versions 2 and 3");
  Bytes truncated = one_tensor(0, 4, 2, 32);
  truncated.b.resize(truncated.b.size() - 1);
  EXPECT_HAS(error_of([&] { truncated.parse(); }), "tensor 'w' at offset 0 (32 bytes) runs past the end of the file");
  Bytes header_cut = one_tensor(0, 4, 2, 32);
  header_cut.b.resize(40);
  EXPECT_HAS(error_of([&] { header_cut.parse(); }), "the metadata count is 2, more than the 16 bytes left can hold");
  Bytes huge = one_tensor(0, 4, 2, 32, uint64_t(1) << 60);
  EXPECT_HAS(error_of([&] { huge.parse(); }), "the tensor count is 1152921504606846976, more than the");
  Bytes unknown = one_tensor(4, 4, 2, 32);  // ggml type 4 was removed (Q4_2)
  EXPECT_HAS(error_of([&] { unknown.parse(); }), "tensor 'w' has ggml type 4, which ggml does not define");
  Bytes partial = one_tensor(8, 48, 1, 68);  // Q8_0 rows of 48 values: not whole blocks of 32
  EXPECT_HAS(error_of([&] { partial.parse(); }), "rows of 48 values are not whole Q8_0 blocks of 32");
  // Four dimensions of 2^40, 2^40, 2^40, 2^8: a product of 2^128 that must not wrap to 0.
  Bytes wrap;
  wrap.b = "GGUF";
  wrap.put<uint32_t>(3).put<uint64_t>(1).put<uint64_t>(0);
  wrap.str("w").put<uint32_t>(4).put<uint64_t>(uint64_t(1) << 40).put<uint64_t>(uint64_t(1) << 40).put<uint64_t>(uint64_t(1) << 40);
  wrap.put<uint64_t>(256).put<uint32_t>(0).put<uint64_t>(0);
  wrap.pad(32);
  EXPECT_HAS(error_of([&] { wrap.parse(); }), "tensor 'w' holds more bytes than the whole file");
  Bytes big = one_tensor(0, uint64_t(1) << 30, uint64_t(1) << 30, 32);
  EXPECT_HAS(error_of([&] { big.parse(); }), "tensor 'w' holds more bytes than the whole file");
  // Two tensors over the same bytes.
  Bytes two;
  two.b = "GGUF";
  two.put<uint32_t>(3).put<uint64_t>(2).put<uint64_t>(0);
  two.str("a").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  two.str("b").put<uint32_t>(1).put<uint64_t>(8).put<uint32_t>(0).put<uint64_t>(0);
  two.pad(32);
  two.b.append(64, '\0');
  EXPECT_HAS(error_of([&] { two.parse(); }), "overlaps the tensor before it");
  for (const Bytes* f : {&bad_magic, &truncated, &huge, &unknown, &two}) EXPECT_HAS(error_of([&] { f->parse(); }), "m.gguf");
}

TEST(GgufBlocks, EachTypeDequantisesAsGgmlDefinesIt) {
  const auto put16 = [](uint8_t* p, uint16_t v) { p[0] = uint8_t(v), p[1] = uint8_t(v >> 8); };
  std::vector<float> y(256);
  // Q8_0: d = 0.5, q_j = j - 16.
  uint8_t q8[34];
  put16(q8, half_bits(0.5f));
  for (int j = 0; j < 32; ++j) q8[2 + j] = uint8_t(int8_t(j - 16));
  dequantize(*ggml_type(8), q8, 32, y.data());
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * float(j - 16)) << j;
  // Q4_0: d = 2, byte j holds (j, 15 - j): value j - 8 at j, 7 - j at j + 16.
  uint8_t q40[18];
  put16(q40, half_bits(2.0f));
  for (int j = 0; j < 16; ++j) q40[2 + j] = uint8_t(j | (15 - j) << 4);
  dequantize(*ggml_type(2), q40, 32, y.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * float(j - 8));
    EXPECT_EQ(y[j + 16], 2.0f * float(7 - j));
  }
  // Q4_1: d = 0.25, m = -1: value q * 0.25 - 1.
  uint8_t q41[20];
  put16(q41, half_bits(0.25f));
  put16(q41 + 2, half_bits(-1.0f));
  for (int j = 0; j < 16; ++j) q41[4 + j] = uint8_t(j | (15 - j) << 4);
  dequantize(*ggml_type(3), q41, 32, y.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * float(j) - 1.0f);
    EXPECT_EQ(y[j + 16], 0.25f * float(15 - j) - 1.0f);
  }
  // Q4_K: d = 1, dmin = 0.5; sub-block scales 1..8 and mins 0..7 packed as get_scale_min_k4 reads
  // them (j < 4: 6 bits of bytes j and j + 4; j >= 4: 4 bits of byte j + 4 and the top 2 of j - 4 / j).
  uint8_t q4k[144] = {};
  put16(q4k, half_bits(1.0f));
  put16(q4k + 2, half_bits(0.5f));
  uint8_t* scales = q4k + 4;
  for (int j = 0; j < 4; ++j) scales[j] = uint8_t(j + 1), scales[j + 4] = uint8_t(j);
  for (int j = 4; j < 8; ++j) scales[j + 4] = uint8_t((j + 1) | j << 4);
  for (int b = 0; b < 128; ++b) q4k[16 + b] = uint8_t((b % 16) | (15 - b % 16) << 4);
  dequantize(*ggml_type(12), q4k, 256, y.data());
  for (int sub = 0; sub < 8; ++sub)
    for (int l = 0; l < 32; ++l) {
      const int byte = (sub / 2) * 32 + l;
      const int q = sub % 2 == 0 ? byte % 16 : 15 - byte % 16;
      EXPECT_EQ(y[sub * 32 + l], 1.0f * float(sub + 1) * float(q) - 0.5f * float(sub)) << sub << " " << l;
    }
  // Q6_K: d = 0.5, scales s_i = i - 8; every 6-bit value 33 (ql nibbles 1, qh pairs 2): q = 1.
  uint8_t q6k[210] = {};
  for (int b = 0; b < 128; ++b) q6k[b] = 0x11;
  for (int b = 0; b < 64; ++b) q6k[128 + b] = 0xaa;
  for (int i = 0; i < 16; ++i) q6k[192 + i] = uint8_t(int8_t(i - 8));
  put16(q6k + 208, half_bits(0.5f));
  dequantize(*ggml_type(14), q6k, 256, y.data());
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.5f * float((i / 16) - 8) * 1.0f) << i;
  EXPECT_EQ(dequantised_type_names(), "F32, F16, Q4_0, Q4_1, Q8_0, Q4_K, Q6_K, BF16");
}

}  // namespace
}  // namespace ctxsim
