// Safetensors: round trip, each corruption class as its own case (asserting the message), and
// the half-precision and SHA-256 helpers.
#include "stages/base/digest.h"
#include "stages/base/precision.h"
#include "stages/model/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "test_helpers.h"

namespace ctxsim {
namespace {

// A raw file: 8-byte length, the header text as given, then `data` bytes.
std::string raw_file(const test::TempDir& dir, const std::string& name, const std::string& header, size_t data_bytes,
                     int64_t length_override = -1) {
  std::string s(8, '\0');
  const uint64_t n = length_override >= 0 ? static_cast<uint64_t>(length_override) : header.size();
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  s += header;
  s += std::string(data_bytes, '\x01');
  return dir.write(name, s);
}

std::string open_error(const std::string& path) {
  try {
    SafetensorsFile f(path);
  } catch (const Error& e) { return e.what(); }
  return "";
}

TEST(Safetensors, RoundTripAllDtypes) {
  test::TempDir dir;
  std::map<std::string, TensorData> t;
  TensorData f32{DType::F32, {2, 3}, std::vector<uint8_t>(24)};
  for (int i = 0; i < 6; ++i) {
    const float v = 0.5f * float(i) - 1.0f;
    std::memcpy(&f32.bytes[i * 4], &v, 4);
  }
  t["a.weight"] = f32;
  t["b.half"] = TensorData{DType::F16, {2}, {0x00, 0x3C, 0x00, 0xC0}};  // 1.0, -2.0
  t["c.bf16"] = TensorData{DType::BF16, {1}, {0x80, 0x3F}};             // 1.0
  t["d.f64"] = TensorData{DType::F64, {1}, std::vector<uint8_t>(8)};
  t["e.scalar"] = TensorData{DType::F32, {}, std::vector<uint8_t>(4)};
  const std::string p = (dir.path / "m.safetensors").string();
  write_safetensors(p, t, {{"format", "pt"}});
  const SafetensorsFile f(p);
  ASSERT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const TensorView* a = f.find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->dtype, DType::F32);
  EXPECT_EQ(std::memcmp(a->data, f32.bytes.data(), 24), 0);
  const TensorView* h = f.find("b.half");
  uint16_t h0, h1;
  std::memcpy(&h0, h->data, 2);
  std::memcpy(&h1, h->data + 2, 2);
  EXPECT_EQ(half_to_float(h0), 1.0f);
  EXPECT_EQ(half_to_float(h1), -2.0f);
  EXPECT_EQ(f.find("e.scalar")->numel(), 1);
  // The header is padded so that data starts 8-byte aligned.
  EXPECT_EQ((f.find("a.weight")->data - f.find("a.weight")->mapping->data()) % 8, 0);
  // Deterministic bytes.
  const std::string q = (dir.path / "n.safetensors").string();
  write_safetensors(q, t, {{"format", "pt"}});
  EXPECT_EQ(sha256_file(p), sha256_file(q));
}

// Integer buffers beside the weights (position_ids as I64 in many BERT files) are read, sized by
// their dtype, and told apart from the floating weights; F8 and unknown types stay refused by name.
TEST(Safetensors, IntegerBuffersAreRead) {
  test::TempDir dir;
  std::map<std::string, TensorData> t;
  t["embeddings.position_ids"] = TensorData{DType::I64, {1, 3}, std::vector<uint8_t>(24, 0)};
  t["flags"] = TensorData{DType::BOOL, {2}, {1, 0}};
  t["w"] = TensorData{DType::F32, {1}, std::vector<uint8_t>(4)};
  const std::string p = (dir.path / "m.safetensors").string();
  write_safetensors(p, t);
  const SafetensorsFile f(p);
  ASSERT_NE(f.find("embeddings.position_ids"), nullptr);
  EXPECT_EQ(f.find("embeddings.position_ids")->dtype, DType::I64);
  EXPECT_EQ(f.find("embeddings.position_ids")->nbytes, 24u);
  EXPECT_FALSE(dtype_is_floating(DType::I64));
  EXPECT_FALSE(dtype_is_floating(DType::BOOL));
  EXPECT_TRUE(dtype_is_floating(DType::BF16));
  for (const char* name : {"I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64", "BOOL"}) {
    const std::string header = std::string(R"({"b": {"dtype": ")") + name + R"(", "shape": [0], "data_offsets": [0, 0]}})";
    EXPECT_NO_THROW(SafetensorsFile(raw_file(dir, std::string(name) + ".safetensors", header, 0))) << name;
  }
  EXPECT_HAS(open_error(raw_file(dir, "f8.safetensors", R"({"w": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}})", 1)),
             "unsupported dtype \"F8_E4M3\"");
}

// The loader's copy counts NaN and inf of every dtype by their exponent bits, in chunks: a large
// tensor with bad values in its second chunk and an untouched tail, and the small dtypes.
TEST(Safetensors, CopyCountsNonFiniteValuesOfEveryDtype) {
  test::TempDir dir;
  std::map<std::string, TensorData> t;
  const size_t n = 40000;  // 160 KB of F32: three 64 KB chunks
  TensorData big{DType::F32, {int64_t(n)}, std::vector<uint8_t>(n * 4)};
  for (size_t i = 0; i < n; ++i) {
    float v = float(i) * 1e-3f - 7.0f;
    if (i == 20000) v = std::numeric_limits<float>::quiet_NaN();
    if (i == 20001) v = -std::numeric_limits<float>::infinity();
    if (i == 39999) v = std::numeric_limits<float>::max();  // finite
    std::memcpy(&big.bytes[i * 4], &v, 4);
  }
  t["big"] = big;
  t["half"] = TensorData{DType::F16, {3}, {0x00, 0x3C, 0x00, 0x7C, 0xFF, 0x7B}};  // 1, inf, 65504
  t["bf16"] = TensorData{DType::BF16, {2}, {0xC1, 0x7F, 0x80, 0x3F}};             // NaN, 1
  TensorData f64{DType::F64, {2}, std::vector<uint8_t>(16)};
  const double d[2] = {1e308, std::numeric_limits<double>::infinity()};
  std::memcpy(f64.bytes.data(), d, 16);
  t["f64"] = f64;
  const std::string p = (dir.path / "m.safetensors").string();
  write_safetensors(p, t);
  const SafetensorsFile f(p);
  const auto count = [&](const std::string& name, int64_t* first) {
    const TensorView& v = *f.find(name);
    std::vector<uint8_t> out(v.nbytes);
    const int64_t bad = copy_counting_nonfinite(v, out.data(), first);
    EXPECT_EQ(std::memcmp(out.data(), t.at(name).bytes.data(), v.nbytes), 0) << name;  // copied whole
    return bad;
  };
  int64_t first = 0;
  EXPECT_EQ(count("big", &first), 2);
  EXPECT_EQ(first, 20000);
  EXPECT_EQ(count("half", &first), 1);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(count("bf16", &first), 1);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(count("f64", &first), 1);
  EXPECT_EQ(first, 1);
}

TEST(SafetensorsCorrupt, TruncatedBelowHeaderLength) {
  test::TempDir dir;
  const std::string m = open_error(dir.write("t.safetensors", "abc"));
  EXPECT_HAS(m, "truncated: 3 bytes");
}

TEST(SafetensorsCorrupt, HeaderLengthPastEnd) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "h.safetensors", "{}", 0, 4096));
  EXPECT_HAS(m, "header length 4096 runs past the end of the file");
}

TEST(SafetensorsCorrupt, OffsetPastEnd) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "o.safetensors", R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8));
  EXPECT_HAS(m, "tensor 'w'");
  EXPECT_HAS(m, "past the data area (8 bytes)");
}

TEST(SafetensorsCorrupt, OverlappingTensors) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(
      dir, "v.safetensors",
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      12));
  EXPECT_HAS(m, "tensor 'b'");
  EXPECT_HAS(m, "overlaps tensor 'a'");
}

// An empty tensor between two overlapping ones in offset order hides nothing: [0, 12) and
// [8, 16) share bytes whatever lies at 8.
TEST(SafetensorsCorrupt, OverlapBehindAnEmptyTensor) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "e.safetensors",
                                            R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
                                                "z": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]},
                                                "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                                            16));
  EXPECT_HAS(m, "tensor 'b'");
  EXPECT_HAS(m, "overlaps tensor 'a'");
}

TEST(SafetensorsCorrupt, WrongByteCount) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "c.safetensors", R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8));
  EXPECT_HAS(m, "tensor 'w'");
  EXPECT_HAS(m, "holds 8 bytes but shape × F32 needs 12");
}

TEST(SafetensorsCorrupt, UnknownDtype) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "d.safetensors", R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}})", 1));
  EXPECT_HAS(m, "tensor 'w'");
  EXPECT_HAS(m, "unsupported dtype \"Q4\"");
}

TEST(SafetensorsCorrupt, MalformedJson) {
  test::TempDir dir;
  const std::string m = open_error(raw_file(dir, "j.safetensors", R"({"w": {"dtype": )", 0));
  EXPECT_HAS(m, "malformed JSON header");
}

TEST(SafetensorsCorrupt, MissingFieldsAndBadShapes) {
  test::TempDir dir;
  EXPECT_HAS(open_error(raw_file(dir, "m.safetensors", R"({"w": {"dtype": "F32"}})", 0)), "needs dtype, shape and data_offsets");
  EXPECT_HAS(open_error(raw_file(dir, "s.safetensors", R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})", 0)),
             "negative");
  EXPECT_HAS(open_error(raw_file(dir, "r.safetensors", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8)),
             "begin 8 > end 4");
  EXPECT_HAS(open_error(raw_file(dir, "x.safetensors", "[1, 2]", 0)), "not an object");
  EXPECT_HAS(open_error((dir.path / "absent.safetensors").string()), "cannot open");
}

TEST(SafetensorsCorrupt, EveryTruncationOfAValidFileIsAnErrorNotACrash) {
  test::TempDir dir;
  std::map<std::string, TensorData> t;
  t["a"] = TensorData{DType::F32, {4}, std::vector<uint8_t>(16, 7)};
  t["b"] = TensorData{DType::F16, {2}, std::vector<uint8_t>(4, 1)};
  const std::string p = (dir.path / "ok.safetensors").string();
  write_safetensors(p, t);
  std::string bytes;
  {
    std::ifstream in(p, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string cut = dir.write("cut.safetensors", bytes.substr(0, n));
    EXPECT_THROW(SafetensorsFile f(cut), Error) << "length " << n;
  }
}

TEST(Halves, KnownValues) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(half_to_float(0x7C00)));
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16_to_float(0xC040), -3.0f);
}

TEST(Sha256, KnownDigest) {
  const std::string abc = "abc";
  EXPECT_EQ(sha256_bytes(reinterpret_cast<const uint8_t*>(abc.data()), abc.size()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace ctxsim
