#include "stages/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/base/model_folder.h"

namespace ctxsim {
namespace {

const std::string kFixCorrupt = "the file is damaged or not a safetensors file: copy or convert the checkpoint again";

// Every dtype the format defines that ctxsim reads (F8 types are refused by name): the
// floating ones are weights, the integer ones buffers a checkpoint may carry beside them
// (position_ids as I64 in many BERT files), which a model ignores.
struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
  bool floating;
};
// clang-format off
constexpr DTypeRow kDTypes[] = {
    {DType::F16,  "F16",  2, true},  {DType::BF16, "BF16", 2, true},  {DType::F32, "F32", 4, true},  {DType::F64, "F64", 8, true},
    {DType::BOOL, "BOOL", 1, false}, {DType::U8,   "U8",   1, false}, {DType::I8,  "I8",  1, false},
    {DType::I16,  "I16",  2, false}, {DType::U16,  "U16",  2, false}, {DType::I32, "I32", 4, false}, {DType::U32, "U32", 4, false},
    {DType::I64,  "I64",  8, false}, {DType::U64,  "U64",  8, false},
};
// clang-format on

const DTypeRow* dtype_row(DType t) {
  for (const DTypeRow& r : kDTypes)
    if (r.dtype == t) return &r;
  return nullptr;
}

bool parse_dtype(const std::string& s, DType& out) {
  for (const DTypeRow& r : kDTypes)
    if (s == r.name) {
      out = r.dtype;
      return true;
    }
  return false;
}

}  // namespace

size_t dtype_size(DType t) {
  const DTypeRow* r = dtype_row(t);
  return r ? r->size : 0;
}

const char* dtype_name(DType t) {
  const DTypeRow* r = dtype_row(t);
  return r ? r->name : "?";
}

bool dtype_is_floating(DType t) {
  const DTypeRow* r = dtype_row(t);
  return r && r->floating;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = open_regular_file(path, "a model.safetensors file", "point at the model's model.safetensors file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path, std::string("cannot stat: ") + std::strerror(e), "check the path");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path, S_ISDIR(st.st_mode) ? "is a folder, not a file" : "is not a regular file",
                "point at the model's model.safetensors file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      throw Error(path, std::string("cannot map: ") + std::strerror(e), "check free memory and the file system");
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::release(const uint8_t* p, size_t n) const {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice only: failure is harmless
}

namespace {

// Non-finite values of n little-endian floats of type U (the bits), whose exponent field is
// `exponent`: all ones means inf or NaN. Branch-free, so the loop vectorises.
template <class U>
int64_t count_nonfinite(const uint8_t* p, size_t n, U exponent) {
  int64_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    U bits;
    std::memcpy(&bits, p + i * sizeof(U), sizeof(U));
    bad += (bits & exponent) == exponent;
  }
  return bad;
}

int64_t count_nonfinite(DType t, const uint8_t* p, size_t n) {
  switch (t) {
    case DType::F16: return count_nonfinite<uint16_t>(p, n, 0x7c00);
    case DType::BF16: return count_nonfinite<uint16_t>(p, n, 0x7f80);
    case DType::F32: return count_nonfinite<uint32_t>(p, n, 0x7f800000u);
    case DType::F64: return count_nonfinite<uint64_t>(p, n, 0x7ff0000000000000ull);
    default: return 0;  // integers are always finite
  }
}

}  // namespace

int64_t copy_counting_nonfinite(const TensorView& v, void* dst, int64_t* first) {
  const size_t width = dtype_size(v.dtype), chunk = (size_t(64) << 10) / width * width;
  auto* out = static_cast<uint8_t*>(dst);
  int64_t bad = 0;
  *first = -1;
  for (size_t at = 0; at < v.nbytes; at += chunk) {
    const size_t n = std::min(chunk, v.nbytes - at);
    std::memcpy(out + at, v.data + at, n);
    const int64_t here = count_nonfinite(v.dtype, out + at, n / width);
    if (here > 0 && *first < 0)
      for (size_t i = 0; i < n / width; ++i)
        if (count_nonfinite(v.dtype, out + at + i * width, 1)) {
          *first = int64_t(at / width + i);
          break;
        }
    bad += here;
  }
  if (v.mapping) v.mapping->release(v.data, v.nbytes);
  return bad;
}

namespace {

// One tensor's entry of the header, its bytes within the data area [data, data + data_size).
TensorView tensor_entry(const std::string& name, const nlohmann::json& t, const uint8_t* data, size_t data_size, const std::string& path) {
  const std::string where = path + ": tensor '" + name + "'";
  if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data_offsets"))
    throw Error(where, "needs dtype, shape and data_offsets", kFixCorrupt);
  TensorView v;
  v.name = name;
  if (!t["dtype"].is_string() || !parse_dtype(t["dtype"].get<std::string>(), v.dtype))
    throw Error(where, "unsupported dtype " + t["dtype"].dump() + " (ctxsim reads F32, F16, BF16 and F64 weights, and integer buffers)",
                "convert the checkpoint's floating weights to one of these");
  if (!t["shape"].is_array()) throw Error(where, "shape is not a list", kFixCorrupt);
  for (const auto& d : t["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw Error(where, "shape has a non-integer or negative size", kFixCorrupt);
    v.shape.push_back(d.get<int64_t>());
  }
  const auto& off = t["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw Error(where, "data_offsets is not [begin, end]", kFixCorrupt);
  const auto begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end) throw Error(where, "data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end), kFixCorrupt);
  if (end > data_size)
    throw Error(where,
                "data_offsets end " + std::to_string(end) + " lies past the data area (" + std::to_string(data_size) +
                    " bytes): the file is truncated",
                kFixCorrupt);
  // Overflow-safe byte count from the shape.
  const unsigned __int128 kMax = std::numeric_limits<uint64_t>::max();
  unsigned __int128 expect = dtype_size(v.dtype);  // stops growing past 2^64 (so never wraps)
  for (auto d : v.shape)
    if (expect <= kMax) expect *= static_cast<uint64_t>(d);
  if (expect != end - begin)
    throw Error(where,
                "holds " + std::to_string(end - begin) + " bytes but shape × " + dtype_name(v.dtype) + " needs " +
                    (expect > kMax ? "over 2^64" : std::to_string(static_cast<uint64_t>(expect))),
                kFixCorrupt);
  v.data = data + begin;
  v.nbytes = end - begin;
  return v;
}

// No two tensors share a byte of the data area (in offset order, each non-empty tensor begins at
// or after the furthest end before it; an empty tensor between two others hides nothing).
void check_no_overlap(const std::map<std::string, TensorView>& tensors, const std::string& path) {
  std::vector<const TensorView*> order;
  for (const auto& [name, v] : tensors)
    if (v.nbytes > 0) order.push_back(&v);
  std::sort(order.begin(), order.end(), [](const TensorView* a, const TensorView* b) {
    return a->data != b->data ? a->data < b->data : a->nbytes != b->nbytes ? a->nbytes < b->nbytes : a->name < b->name;
  });
  const TensorView* furthest = nullptr;
  for (const TensorView* v : order) {
    if (furthest && v->data < furthest->data + furthest->nbytes)
      throw Error(path + ": tensor '" + v->name + "'", "overlaps tensor '" + furthest->name + "' in the data area", kFixCorrupt);
    if (!furthest || v->data + v->nbytes > furthest->data + furthest->nbytes) furthest = v;
  }
}

}  // namespace

SafetensorsHeader SafetensorsHeader::parse(const uint8_t* bytes, size_t size, const std::string& path) {
  SafetensorsHeader out;
  if (size < 8) throw Error(path, "truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length", kFixCorrupt);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > size - 8)
    throw Error(path,
                "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
                    " bytes): truncated or not safetensors",
                kFixCorrupt);
  if (n > (uint64_t(100) << 20))  // as the safetensors library itself: a header is far smaller
    throw Error(path, "header length " + std::to_string(n) + " is over 100 MB: not a safetensors file", kFixCorrupt);
  const char* header = reinterpret_cast<const char*>(bytes + 8);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header, header + n);
  } catch (const nlohmann::json::exception& e) { throw Error(path, std::string("malformed JSON header: ") + e.what(), kFixCorrupt); }
  if (!j.is_object()) throw Error(path, "the JSON header is not an object", kFixCorrupt);
  const uint8_t* data = bytes + 8 + n;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "__metadata__") {
      out.tensors.emplace(it.key(), tensor_entry(it.key(), *it, data, size - 8 - n, path));
      continue;
    }
    if (!it->is_object()) throw Error(path, "__metadata__ is not an object", kFixCorrupt);
    for (auto m = it->begin(); m != it->end(); ++m)
      if (m->is_string()) out.metadata[m.key()] = m->get<std::string>();
  }
  check_no_overlap(out.tensors, path);
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : SafetensorsFile(std::vector<std::string>{path}, {}, path) {}

SafetensorsFile::SafetensorsFile(const std::vector<std::string>& shards, const std::map<std::string, std::string>& weight_map,
                                 const std::string& path)
    : path_(path) {
  std::map<std::string, std::string> shard_of;  // tensor -> the shard that holds it
  for (const std::string& shard : shards) {
    files_.push_back(std::make_shared<MappedFile>(shard));
    SafetensorsHeader h = SafetensorsHeader::parse(files_.back()->data(), files_.back()->size(), shard);
    const std::string shard_name = std::filesystem::path(shard).filename().string();
    for (auto& [name, v] : h.tensors) {
      if (const auto [it, fresh] = shard_of.emplace(name, shard); !fresh)
        throw Error(path, "tensor '" + name + "' is in two shards, " + it->second + " and " + shard,
                    "the checkpoint is damaged: download or save it again");
      if (const auto m = weight_map.find(name); m != weight_map.end() && m->second != shard_name)
        throw Error(path + ": weight_map", "names " + m->second + " for tensor '" + name + "', which " + shard + " holds",
                    "the index does not belong to these shards: download or save the checkpoint again");
      v.mapping = files_.back().get();
      tensors_.emplace(name, std::move(v));
    }
    for (auto& [key, value] : h.metadata) metadata_.emplace(key, std::move(value));
  }
  for (const auto& [name, shard] : weight_map)
    if (!tensors_.count(name))
      throw Error(path + ": weight_map", "names tensor '" + name + "' in " + shard + ", which does not hold it",
                  "the index does not belong to these shards: download or save the checkpoint again");
}

SafetensorsFile open_checkpoint(const ModelFolder& folder) {
  if (!folder.sharded()) return SafetensorsFile(folder.weights());
  std::map<std::string, std::string> weight_map;
  const std::vector<std::string> shards = folder.weight_files(&weight_map);
  return SafetensorsFile(shards, weight_map, folder.file(ModelFolder::kWeightsIndex));
}

const TensorView* SafetensorsFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

void write_safetensors(const std::string& path, const std::map<std::string, TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata, bool durable) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    size_t expect = dtype_size(t.dtype);
    for (auto d : t.shape) expect *= static_cast<size_t>(d);
    CTXSIM_CHECK(expect == t.bytes.size(), path + ": tensor '" + name + "': byte count does not match its shape");
    header[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // data starts 8-byte aligned
  std::string bytes;
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(n >> (8 * i)));
  bytes += text;
  for (const auto& [name, t] : tensors) bytes.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  atomic_write(path, bytes, durable);
}

}  // namespace ctxsim
