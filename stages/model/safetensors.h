// Safetensors files (an 8-byte little-endian header length, a JSON header, raw little-endian
// data): a bounds-checked, memory-mapped reader and a deterministic writer. No LibTorch here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ctxsim {

// The floating types are weights; the integer types (and BOOL) are buffers a checkpoint may carry
// beside them, which the reader accepts and a model never uses as a weight.
enum class DType { F16, BF16, F32, F64, BOOL, U8, I8, I16, U16, I32, U32, I64, U64 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "F32"
bool dtype_is_floating(DType t);

class MappedFile;
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping; may be unaligned
  size_t nbytes = 0;
  const MappedFile* mapping = nullptr;  // the file it lies in (SafetensorsFile sets it)
  int64_t numel() const;
};

// A read-only mapping of a whole file (RAII over mmap).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws ctxsim::Error
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the resident pages wholly inside [p, p + n) (they are read again if touched), so a
  // reader that copied them out does not hold the file in memory twice.
  void release(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A safetensors header, validated against the size of its file: every violation is an error
// naming `path` and the tensor. Tensor views point into `data`. Pure (the fuzz target's entry).
struct SafetensorsHeader {
  std::map<std::string, TensorView> tensors;
  std::map<std::string, std::string> metadata;
  static SafetensorsHeader parse(const uint8_t* data, size_t size, const std::string& path);
};

class SafetensorsFile {
 public:
  // Maps and validates the whole header (SafetensorsHeader::parse).
  explicit SafetensorsFile(const std::string& path);
  // A checkpoint in shards (model.safetensors.index.json): every shard mapped and validated, their
  // tensors one table; a tensor in two shards, or not in the shard the index names, is an Error
  // naming both. `path` names the set in messages (the index).
  SafetensorsFile(const std::vector<std::string>& shards, const std::map<std::string, std::string>& weight_map, const std::string& path);
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const TensorView* find(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

class ModelFolder;
// The weights of a model folder: model.safetensors, or the shards of model.safetensors.index.json
// (ModelFolder::weight_files) as one table.
SafetensorsFile open_checkpoint(const ModelFolder& folder);

// Copies a tensor's bytes out of the mapping into dst (v.nbytes, any alignment) and counts its
// non-finite values (NaN, ±inf) on the way, in one pass over each cache-sized chunk; the flat
// index of the first goes to *first (-1 when none). Then drops the copied pages of the mapping.
int64_t copy_counting_nonfinite(const TensorView& v, void* dst, int64_t* first);

struct TensorData {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian, numel * dtype_size
};

// Writes tensors (in name order, header padded to 8 bytes) to path via a temporary file and a
// rename, so a reader never sees half a file (durable: fsync'ed, as atomic_write). Same input,
// same bytes.
void write_safetensors(const std::string& path, const std::map<std::string, TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {}, bool durable = false);

}  // namespace ctxsim
