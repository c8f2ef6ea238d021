// GGUF, llama.cpp's file format (versions 2 and 3): the header, its metadata and its tensor table,
// each checked against the size of the file before anything is allocated for it, and the tensors'
// blocks dequantised to float32 as ggml defines them (ggml-quants.c), bit for bit. Pure: no
// LibTorch, no I/O (the fuzz target's entry); stages/model/gguf_model.h makes a model of it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ctxsim {

// A ggml tensor type: its name and the size of its blocks (llama.cpp's ggml_type numbers).
struct GgmlType {
  uint32_t id = 0;
  const char* name = "";
  int64_t block = 1;         // values per block
  int64_t block_bytes = 4;   // bytes per block
  bool dequantises = false;  // ctxsim turns it into float32 (dequantize below); others are refused by name
};
// The type numbered `id`, or nullptr for a number ggml does not define.
const GgmlType* ggml_type(uint32_t id);
// The types ctxsim dequantises, for messages: "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K".
std::string dequantised_type_names();

// A metadata value: a number, a bool, a string, or an array of numbers or strings (an array of
// arrays is read past, and counts as empty).
struct GgufValue {
  enum class Kind { Integer, Float, Bool, String, Array } kind = Kind::Integer;
  int64_t integer = 0;  // every integer type (a UINT64 above 2^63 is refused)
  double number = 0;    // FLOAT32, FLOAT64
  bool flag = false;
  std::string text;
  std::vector<int64_t> integers;     // an array of integers
  std::vector<double> numbers;       // an array of floats
  std::vector<std::string> strings;  // an array of strings
  bool array_of_strings = false;
};

// A tensor of the table: its shape in row-major order (ggml's ne reversed: a weight [out, in] has
// ne = {in, out}), its type, and its bytes within the data area.
struct GgufTensor {
  std::string name;
  std::vector<int64_t> shape;
  const GgmlType* type = nullptr;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  int64_t numel() const;
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;  // in the file's order
  // Validated against `size`: every violation (magic, version, truncation, a count beyond what the
  // file can hold, a type ggml does not define, offsets out of range or overlapping, a shape whose
  // rows are not whole blocks) is an Error naming `path` and the key or tensor.
  static GgufHeader parse(const uint8_t* data, size_t size, const std::string& path);

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* tensor(const std::string& name) const;
  // The value of `key` as this type, or an Error naming the key and the file; `fallback` when
  // the key is absent (the overloads without one require it).
  int64_t integer(const std::string& key, const std::string& path) const;
  int64_t integer(const std::string& key, const std::string& path, int64_t fallback) const;
  double number(const std::string& key, const std::string& path, double fallback) const;
  std::string text(const std::string& key, const std::string& path) const;
};

// A GGUF file mapped read-only and parsed (GgufHeader::parse): the header's tensor views point
// into the mapping, which lives as long as this object. Not copyable.
class GgufFile {
 public:
  explicit GgufFile(const std::string& path);  // an Error naming the file when it cannot be read
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  const GgufHeader& header() const { return header_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  GgufHeader header_;
};

// Dequantises the n values of a tensor's blocks (n a multiple of the type's block) into out, as
// ggml's dequantize_row_* and the gguf package's dequantize compute them (float32, no fused
// multiply-add). The type must be one that dequantises.
void dequantize(const GgmlType& type, const uint8_t* blocks, int64_t n, float* out);

}  // namespace ctxsim
