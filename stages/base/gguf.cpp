#include "stages/base/gguf.h"
#include "stages/base/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "stages/base/error.h"
#include "stages/base/precision.h"

namespace ctxsim {
namespace {

constexpr const char* kFixCorrupt = "the file is damaged or not a GGUF file: download or convert it again";

// ggml's types (ggml.h, and the gguf package's GGML_QUANT_SIZES): number, name, block, bytes per
// block, and whether ctxsim dequantises it.
// clang-format off
const GgmlType kTypes[] = {
    {0, "F32", 1, 4, true},        {1, "F16", 1, 2, true},        {2, "Q4_0", 32, 18, true},    {3, "Q4_1", 32, 20, true},
    {6, "Q5_0", 32, 22, false},    {7, "Q5_1", 32, 24, false},    {8, "Q8_0", 32, 34, true},    {9, "Q8_1", 32, 40, false},
    {10, "Q2_K", 256, 84, false},  {11, "Q3_K", 256, 110, false}, {12, "Q4_K", 256, 144, true}, {13, "Q5_K", 256, 176, false},
    {14, "Q6_K", 256, 210, true},  {15, "Q8_K", 256, 292, false}, {16, "IQ2_XXS", 256, 66, false}, {17, "IQ2_XS", 256, 74, false},
    {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false}, {20, "IQ4_NL", 32, 18, false}, {21, "IQ3_S", 256, 110, false},
    {22, "IQ2_S", 256, 82, false}, {23, "IQ4_XS", 256, 136, false}, {24, "I8", 1, 1, false},     {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},      {27, "I64", 1, 8, false},      {28, "F64", 1, 8, false},     {29, "IQ1_M", 256, 56, false},
    {30, "BF16", 1, 2, true},      {34, "TQ1_0", 256, 54, false}, {35, "TQ2_0", 256, 66, false},
};
// clang-format on

// GGUF's metadata value types.
enum : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

// A bounds-checked cursor over the header: every read that would pass the end is an Error.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const std::string& path) : p_(p), n_(n), path_(path) {}
  size_t at() const { return at_; }
  size_t left() const { return n_ - at_; }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > left()) fail(what + ": a string of " + std::to_string(len) + " bytes runs past the end of the file");
    std::string s(reinterpret_cast<const char*>(p_ + at_), size_t(len));
    at_ += size_t(len);
    return s;
  }
  // A count of items of at least `min_bytes` each: no more than the rest of the file can hold.
  uint64_t count(const std::string& what, uint64_t min_bytes) {
    const uint64_t n = read<uint64_t>(what);
    if (n > left() / std::max<uint64_t>(1, min_bytes))
      fail(what + " is " + std::to_string(n) + ", more than the " + std::to_string(left()) + " bytes left can hold");
    return n;
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(path_, what, kFixCorrupt); }

 private:
  void need(size_t k, const std::string& what) const {
    if (k > left()) fail(what + ": truncated at byte " + std::to_string(at_) + " of " + std::to_string(n_));
  }
  const uint8_t* p_;
  size_t n_, at_ = 0;
  const std::string& path_;
};

size_t value_min_bytes(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kString:
    case kU64:
    case kI64:
    case kF64: return 8;
    case kArray: return 12;
    default: return 1;
  }
}

// One scalar of `type` into v (an integer, a float, a bool or a string).
void read_scalar(Cursor& c, uint32_t type, GgufValue& v, const std::string& what) {
  switch (type) {
    case kU8: v.integer = c.read<uint8_t>(what); return;
    case kI8: v.integer = c.read<int8_t>(what); return;
    case kU16: v.integer = c.read<uint16_t>(what); return;
    case kI16: v.integer = c.read<int16_t>(what); return;
    case kU32: v.integer = c.read<uint32_t>(what); return;
    case kI32: v.integer = c.read<int32_t>(what); return;
    case kI64: v.integer = c.read<int64_t>(what); return;
    case kU64: {
      const uint64_t u = c.read<uint64_t>(what);
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) c.fail(what + ": the value " + std::to_string(u) + " is out of range");
      v.integer = int64_t(u);
      return;
    }
    case kF32: v.kind = GgufValue::Kind::Float, v.number = c.read<float>(what); return;
    case kF64: v.kind = GgufValue::Kind::Float, v.number = c.read<double>(what); return;
    case kBool: {
      const uint8_t b = c.read<uint8_t>(what);
      if (b > 1) c.fail(what + ": a bool of value " + std::to_string(b));
      v.kind = GgufValue::Kind::Bool, v.flag = b == 1;
      return;
    }
    case kString: v.kind = GgufValue::Kind::String, v.text = c.string(what); return;
    default: c.fail(what + ": unknown value type " + std::to_string(type));
  }
}

// An array's items (its element type and count read here); an array of arrays is read past.
void read_array(Cursor& c, GgufValue& v, const std::string& what, int depth) {
  if (depth > 4) c.fail(what + ": arrays nested more than 4 deep");
  v.kind = GgufValue::Kind::Array;
  const uint32_t type = c.read<uint32_t>(what);
  if (type > kF64) c.fail(what + ": unknown array element type " + std::to_string(type));
  const uint64_t n = c.count(what + ": the array's length", value_min_bytes(type));
  v.array_of_strings = type == kString;
  for (uint64_t i = 0; i < n; ++i) {
    GgufValue item;
    if (type == kArray) {
      read_array(c, item, what, depth + 1);
      continue;
    }
    read_scalar(c, type, item, what);
    if (type == kString)
      v.strings.push_back(std::move(item.text));
    else if (item.kind == GgufValue::Kind::Float)
      v.numbers.push_back(item.number);
    else
      v.integers.push_back(item.kind == GgufValue::Kind::Bool ? int64_t(item.flag) : item.integer);
  }
}

// The tensor table of n entries at the cursor, placed in the data area after it (aligned): each
// tensor's type, shape and bytes checked, no two overlapping, every one inside the file.
void read_tensor_table(Cursor& c, uint64_t n_tensors, const uint8_t* data, size_t size, GgufHeader& h) {
  struct Entry {
    uint64_t offset;
    size_t index;
  };
  std::vector<Entry> entries;
  std::map<std::string, size_t> seen;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.string("tensor entry " + std::to_string(i) + "'s name");
    const std::string what = "tensor '" + t.name + "'";
    if (!seen.emplace(t.name, size_t(i)).second) c.fail(what + " is there twice");
    const uint32_t dims = c.read<uint32_t>(what + "'s dimension count");
    if (dims == 0 || dims > 4) c.fail(what + " has " + std::to_string(dims) + " dimensions (1 to 4)");
    std::vector<int64_t> ne(dims);
    for (uint32_t d = 0; d < dims; ++d) {
      const uint64_t n = c.read<uint64_t>(what + "'s shape");
      if (n == 0 || n > (uint64_t(1) << 40)) c.fail(what + " has a dimension of " + std::to_string(n));
      ne[d] = int64_t(n);
    }
    const uint32_t type_id = c.read<uint32_t>(what + "'s type");
    t.type = ggml_type(type_id);
    if (!t.type) c.fail(what + " has ggml type " + std::to_string(type_id) + ", which ggml does not define");
    const uint64_t offset = c.read<uint64_t>(what + "'s offset");
    if (ne[0] % t.type->block != 0)
      c.fail(what + "'s rows of " + std::to_string(ne[0]) + " values are not whole " + t.type->name + " blocks of " +
             std::to_string(t.type->block));
    // Overflow-safe: each dimension is at most 2^40 and the product stops growing past 2^48.
    unsigned __int128 values = 1;
    for (int64_t n : ne)
      if (values <= (uint64_t(1) << 48)) values *= uint64_t(n);
    const unsigned __int128 bytes = values / uint64_t(t.type->block) * uint64_t(t.type->block_bytes);
    if (values > (uint64_t(1) << 48) || bytes > size)
      c.fail(what + " holds more bytes than the whole file (" + std::to_string(size) + "): it is truncated, or its shape is damaged");
    t.nbytes = size_t(bytes);
    t.shape.assign(ne.rbegin(), ne.rend());
    if (offset % h.alignment != 0)
      c.fail(what + "'s offset " + std::to_string(offset) + " is not aligned to " + std::to_string(h.alignment));
    entries.push_back({offset, h.tensors.size()});
    h.tensors.push_back(std::move(t));
  }
  const size_t data_start = (c.at() + h.alignment - 1) / h.alignment * h.alignment;
  if (data_start > size && !h.tensors.empty()) c.fail("the tensor data would start past the end of the file");
  const size_t data_size = data_start > size ? 0 : size - data_start;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.offset < b.offset; });
  uint64_t end = 0;
  for (const Entry& e : entries) {
    GgufTensor& t = h.tensors[e.index];
    if (e.offset > data_size || t.nbytes > data_size - e.offset)
      c.fail("tensor '" + t.name + "' at offset " + std::to_string(e.offset) + " (" + std::to_string(t.nbytes) +
             " bytes) runs past the end of the file: truncated");
    if (e.offset < end) c.fail("tensor '" + t.name + "' overlaps the tensor before it in the data area");
    end = e.offset + t.nbytes;
    t.data = data + data_start + e.offset;
  }
}

}  // namespace

const GgmlType* ggml_type(uint32_t id) {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string dequantised_type_names() {
  std::string s;
  for (const GgmlType& t : kTypes)
    if (t.dequantises) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

GgufHeader GgufHeader::parse(const uint8_t* data, size_t size, const std::string& path) {
  GgufHeader h;
  Cursor c(data, size, path);
  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) c.fail("does not start with GGUF's magic bytes 'GGUF'");
  (void)c.read<uint32_t>("the magic");
  h.version = c.read<uint32_t>("the version");
  if (h.version != 2 && h.version != 3)
    throw Error(path, "is GGUF version " + std::to_string(h.version) + ", and ctxsim reads versions 2 and 3",
                "convert the model again with a current llama.cpp (convert_hf_to_gguf.py)");
  // A tensor's entry takes at least 8 + 4 + 4 + 8 bytes, a metadata entry 8 + 4 + 1.
  const uint64_t n_tensors = c.count("the tensor count", 24);
  const uint64_t n_kv = c.count("the metadata count", 13);
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = c.string("metadata entry " + std::to_string(i) + "'s key");
    const std::string what = "metadata '" + key + "'";
    const uint32_t type = c.read<uint32_t>(what);
    GgufValue v;
    if (type == kArray)
      read_array(c, v, what, 0);
    else
      read_scalar(c, type, v, what);
    if (!h.metadata.emplace(key, std::move(v)).second) c.fail(what + " is there twice");
  }
  if (const GgufValue* a = h.find("general.alignment")) {
    if (a->kind != GgufValue::Kind::Integer || a->integer <= 0 || a->integer > 65536 || (a->integer & (a->integer - 1)) != 0)
      c.fail("general.alignment is not a power of two up to 65536");
    h.alignment = uint64_t(a->integer);
  }
  read_tensor_table(c, n_tensors, data, size, h);
  return h;
}

GgufFile::GgufFile(const std::string& path) : path_(path) {
  const int fd = open_regular_file(path, "a GGUF file", "give the path of a .gguf file");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, "is not a regular file", "give the path of a .gguf file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      map_ = nullptr;
      throw Error(path, std::string("cannot be mapped: ") + std::strerror(e), "check the file");
    }
  }
  ::close(fd);
  try {
    header_ = GgufHeader::parse(static_cast<const uint8_t*>(map_), size_, path);
  } catch (...) {
    if (map_) ::munmap(map_, size_);
    throw;
  }
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(map_, size_);
}

const GgufValue* GgufHeader::find(const std::string& key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufHeader::tensor(const std::string& name) const {
  for (const GgufTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

int64_t GgufHeader::integer(const std::string& key, const std::string& path) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path, "has no metadata '" + key + "'", "convert the model again with a current llama.cpp");
  if (v->kind != GgufValue::Kind::Integer) throw Error(path, "metadata '" + key + "' is not an integer", kFixCorrupt);
  return v->integer;
}

int64_t GgufHeader::integer(const std::string& key, const std::string& path, int64_t fallback) const {
  return find(key) ? integer(key, path) : fallback;
}

double GgufHeader::number(const std::string& key, const std::string& path, double fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (v->kind == GgufValue::Kind::Integer) return double(v->integer);
  if (v->kind != GgufValue::Kind::Float) throw Error(path, "metadata '" + key + "' is not a number", kFixCorrupt);
  return v->number;
}

std::string GgufHeader::text(const std::string& key, const std::string& path) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path, "has no metadata '" + key + "'", "convert the model again with a current llama.cpp");
  if (v->kind != GgufValue::Kind::String) throw Error(path, "metadata '" + key + "' is not a string", kFixCorrupt);
  return v->text;
}

namespace {

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// Q4_K's 6-bit scale and min of sub-block j (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace

void dequantize(const GgmlType& type, const uint8_t* x, int64_t n, float* y) {
  CTXSIM_CHECK(type.dequantises && n % type.block == 0, "dequantize: a type ctxsim does not dequantise, or part of a block");
  const int64_t blocks = n / type.block;
  switch (type.id) {
    case 0: std::memcpy(y, x, size_t(n) * 4); return;
    case 1:
      for (int64_t i = 0; i < n; ++i) y[i] = half_to_float(u16(x + 2 * i));
      return;
    case 30:
      for (int64_t i = 0; i < n; ++i) y[i] = bfloat16_to_float(u16(x + 2 * i));
      return;
    case 8:  // Q8_0: d (f16), 32 int8
      for (int64_t b = 0; b < blocks; ++b, x += 34, y += 32) {
        const float d = half_to_float(u16(x));
        for (int j = 0; j < 32; ++j) y[j] = d * float(int8_t(x[2 + j]));
      }
      return;
    case 2:  // Q4_0: d (f16), 16 bytes of two 4-bit values (low nibbles first), offset 8
      for (int64_t b = 0; b < blocks; ++b, x += 18, y += 32) {
        const float d = half_to_float(u16(x));
        for (int j = 0; j < 16; ++j) {
          y[j] = d * float(int(x[2 + j] & 0xF) - 8);
          y[j + 16] = d * float(int(x[2 + j] >> 4) - 8);
        }
      }
      return;
    case 3:  // Q4_1: d, m (f16), 16 bytes of two 4-bit values
      for (int64_t b = 0; b < blocks; ++b, x += 20, y += 32) {
        const float d = half_to_float(u16(x)), m = half_to_float(u16(x + 2));
        for (int j = 0; j < 16; ++j) {
          y[j] = d * float(x[4 + j] & 0xF) + m;
          y[j + 16] = d * float(x[4 + j] >> 4) + m;
        }
      }
      return;
    case 12:  // Q4_K: d, dmin (f16), 12 bytes of 6-bit scales and mins, 128 bytes of 4-bit values
      for (int64_t b = 0; b < blocks; ++b, x += 144) {
        const float d = half_to_float(u16(x)), dmin = half_to_float(u16(x + 2));
        const uint8_t* scales = x + 4;
        const uint8_t* q = x + 16;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
          uint8_t sc, m;
          scale_min_k4(is, scales, &sc, &m);
          const float d1 = d * float(sc), m1 = dmin * float(m);
          scale_min_k4(is + 1, scales, &sc, &m);
          const float d2 = d * float(sc), m2 = dmin * float(m);
          for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
          for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
        }
      }
      return;
    case 14:  // Q6_K: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, d (f16)
      for (int64_t b = 0; b < blocks; ++b, x += 210) {
        const float d = half_to_float(u16(x + 208));
        const uint8_t* ql = x;
        const uint8_t* qh = x + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8)
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * float(sc[is]) * float(q1);
            y[l + 32] = d * float(sc[is + 2]) * float(q2);
            y[l + 64] = d * float(sc[is + 4]) * float(q3);
            y[l + 96] = d * float(sc[is + 6]) * float(q4);
          }
      }
      return;
    default: CTXSIM_CHECK(false, "dequantize: no rule for a type marked as dequantised");
  }
}

}  // namespace ctxsim
