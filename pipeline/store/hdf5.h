// Thin RAII over the HDF5 C API: every id has an owner, every call is checked and turned into
// a ctxsim::Error carrying HDF5's own error stack. The parallel-HDF5 rules every store follows are written at the top of store.cpp.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ctxsim::h5 {

// Throws with file:line, the failed call and the HDF5 error stack when `status` is negative;
// the error begins with the store's path when a FileScope names it.
void check(int64_t status, const char* call, const char* file, int line);

// The store file the HDF5 calls within this scope are about, so that their errors name it (HDF5's
// own messages name the object, not the file). Scopes nest; per thread.
class FileScope {
 public:
  explicit FileScope(std::string path);
  ~FileScope();
  FileScope(const FileScope&) = delete;
  FileScope& operator=(const FileScope&) = delete;

 private:
  std::string previous_;
};
#define CTXSIM_H5(call) ::ctxsim::h5::check(static_cast<int64_t>(call), #call, __FILE__, __LINE__)

class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t), const char* what);  // throws when id < 0
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, -1)), close_(o.close_) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
      close_ = o.close_;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  void reset();

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// Whether closing an HDF5 file failed in this process (a full disk). HDF5 1.10 leaves such a
// file half torn down, and its exit handler then crashes on it (SIGSEGV in H5F__close_cb), so
// main leaves without running exit handlers when this is true.
bool file_close_failed();

// A store file through MPI-IO on `comm`, created (truncating) or opened read-write, with the
// parallel rules of store.cpp: every rank makes the same metadata calls, so metadata reads and
// the cache's writes are collective. Collective. The one opener of the run's and the
// segmentation's stores.
Id open_parallel(const std::string& path, MPI_Comm comm, bool create);
// Transfer properties of collective and of independent MPI-IO writes.
Id collective_transfer();
Id independent_transfer();

// IEEE binary16 (HDF5 1.10 has no predefined one); h5py reads it as float16. Use it as both
// file and memory type so that stored bits are not converted.
Id float16_type();

Id create_group(hid_t parent, const std::string& name);
Id open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& path);

// The fix of every error about a file that is not a ctxsim store, or a damaged one.
inline constexpr const char* kNotAStoreFix =
    "the store is damaged or was not written by ctxsim; rerun the job that wrote it ('ctxsim run', 'segment' or 'prune') to regenerate "
    "it (or ask its author for an intact copy)";
// Attributes and strings a reader takes at most (a store's config is a few KB).
constexpr size_t kMaxAttributeBytes = size_t(64) << 20;

// The file an object is in, and the object's path there ("/stats/top_fraction=0.01/high_pairs").
std::string file_name(hid_t obj);
std::string object_name(hid_t obj);
// Throws ctxsim::Error "<file>: <object>: <what>: not a ctxsim store, or a damaged one".
[[noreturn]] void damaged(hid_t obj, const std::string& what);
// Checks that dataset ds can be read as mem_type: the same type class (integer, float), and
// storage in the file for every value its extent claims (ctxsim allocates when it creates).
void check_readable(hid_t ds, hid_t mem_type);

// Attributes (scalar); strings are UTF-8, fixed length. Getters check that the attribute is
// there, scalar and of the type asked for, else they say the store is damaged.
void set_attr(hid_t obj, const std::string& name, const std::string& value);
void set_attr(hid_t obj, const std::string& name, int64_t value);
void set_attr(hid_t obj, const std::string& name, double value);
std::string get_attr_string(hid_t obj, const std::string& name);
int64_t get_attr_int(hid_t obj, const std::string& name);
double get_attr_double(hid_t obj, const std::string& name);
bool has_attr(hid_t obj, const std::string& name);
// Every dataset under obj, by its path from obj ("stats/baseline/samples"), in name order (the
// same on every rank).
std::vector<std::string> dataset_paths(hid_t obj);

// Dimension scales (HDF5's H5DS, the netCDF-4 convention that h5netcdf, xarray and netCDF read;
// docs/STORE.md "With xarray"). Makes the 1-D dataset ds a dimension scale: CLASS
// DIMENSION_SCALE, NAME `name` (netCDF-4: a scale named like its dataset is that dimension's
// coordinate variable) and netCDF-4's `_Netcdf4Dimid` (unique in the file).
void make_scale(hid_t ds, const std::string& name, int32_t dimid);
// The NAME of a scale that is a netCDF dimension without values (not a variable), of `size`.
std::string dimension_without_values(hsize_t size);
// Attaches `scale` to axis `axis` of ds and labels the axis with the scale's dimension name.
void attach_scale(hid_t ds, hid_t scale, unsigned axis, const std::string& label);
// A fixed-length, NUL-padded UTF-8 string type of `width` bytes (at least 1).
Id fixed_string_type(size_t width);
// `values` laid out for fixed_string_type(width): each NUL-padded (or cut) to width bytes.
std::string pack_strings(const std::vector<std::string>& values, size_t width);

// The HDF5 types of a C++ element type (HighFive's H5Easy): the little-endian type ctxsim stores
// and the native type it reads and writes. The typed helpers below take the type from the data;
// only float16 (IEEE binary16 bits in uint16_t, float16_type()) is spelled by hand.
template <class T>
struct Element;
template <>
struct Element<int16_t> {
  static hid_t file() { return H5T_STD_I16LE; }
  static hid_t memory() { return H5T_NATIVE_INT16; }
};
template <>
struct Element<int32_t> {
  static hid_t file() { return H5T_STD_I32LE; }
  static hid_t memory() { return H5T_NATIVE_INT32; }
};
template <>
struct Element<int64_t> {
  static hid_t file() { return H5T_STD_I64LE; }
  static hid_t memory() { return H5T_NATIVE_INT64; }
};
template <>
struct Element<uint8_t> {
  static hid_t file() { return H5T_STD_U8LE; }
  static hid_t memory() { return H5T_NATIVE_UINT8; }
};
template <>
struct Element<char> {  // bytes of text (the vocabulary)
  static hid_t file() { return H5T_STD_U8LE; }
  static hid_t memory() { return H5T_NATIVE_UINT8; }
};
template <>
struct Element<float> {
  static hid_t file() { return H5T_IEEE_F32LE; }
  static hid_t memory() { return H5T_NATIVE_FLOAT; }
};
template <>
struct Element<double> {
  static hid_t file() { return H5T_IEEE_F64LE; }
  static hid_t memory() { return H5T_NATIVE_DOUBLE; }
};

// A dataset of `type` and `dims`, chunked along the first dimension when chunk_rows > 0,
// with a `description` attribute.
Id create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const std::string& description,
                  hsize_t chunk_rows = 0);
// The same with the chunk dimensions given (empty: contiguous).
Id create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const std::string& description,
                  const std::vector<hsize_t>& chunk);
// Writes `data` into the hyperslab [start, start + count) of dataset ds (count all zeros: this
// rank takes part in a collective write with nothing to write). dxpl: transfer properties.
void write_slab(hid_t ds, hid_t mem_type, const void* data, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                hid_t dxpl = H5P_DEFAULT);
// Takes part in a collective write with nothing (any dataset, scalars included).
void write_none(hid_t ds, hid_t mem_type, hid_t dxpl);
// Whole-dataset helpers.
void write_all(hid_t ds, hid_t mem_type, const void* data, hid_t dxpl = H5P_DEFAULT);
std::vector<hsize_t> dims_of(hid_t ds);
template <class T>
std::vector<T> read_all(hid_t parent, const std::string& name, hid_t mem_type);

// The same, the element type from the C++ type.
template <class T>
Id create_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, const std::string& description,
                  hsize_t chunk_rows = 0) {
  return create_dataset(parent, name, Element<T>::file(), dims, description, chunk_rows);
}
template <class T>
void write_slab(hid_t ds, const T* data, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count, hid_t dxpl = H5P_DEFAULT) {
  write_slab(ds, Element<T>::memory(), data, start, count, dxpl);
}
template <class T>
void write_none(hid_t ds, hid_t dxpl) {
  write_none(ds, Element<T>::memory(), dxpl);
}
template <class T>
std::vector<T> read_all(hid_t parent, const std::string& name) {
  return read_all<T>(parent, name, Element<T>::memory());
}

// A whole dataset after checking that it exists and has `shape` (-1: any extent); `dims_out`
// receives the actual extents. Errors name `store` (the file) and the dataset.
template <class T>
std::vector<T> read_checked(hid_t file, const std::string& store, const std::string& path, const std::vector<long long>& shape,
                            std::vector<hsize_t>* dims_out = nullptr);

}  // namespace ctxsim::h5
