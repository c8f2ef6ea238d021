#include "pipeline/store/hdf5.h"

#include <hdf5_hl.h>

#include <algorithm>
#include <cstdio>

#include "stages/base/error.h"
#include "stages/base/files.h"

namespace ctxsim::h5 {
namespace {

herr_t collect_error(unsigned n, const H5E_error2_t* e, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (n < 4) {
    *s += (s->empty() ? "" : " <- ");
    *s += std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "");
  }
  return 0;
}

std::string error_stack() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &s);
  H5Eclear2(H5E_DEFAULT);
  return s;
}

struct SilenceAutoPrint {
  SilenceAutoPrint() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
};
const SilenceAutoPrint silence;  // errors come back as exceptions, not as stderr dumps

thread_local std::string g_scope_file;

// "<store>: HDF5 …" inside a FileScope.
std::string where(const std::string& what) { return g_scope_file.empty() ? what : g_scope_file + ": " + what; }

}  // namespace

FileScope::FileScope(std::string path) : previous_(std::exchange(g_scope_file, std::move(path))) {}
FileScope::~FileScope() { g_scope_file = std::move(previous_); }

void check(int64_t status, const char* call, const char* file, int line) {
  if (status >= 0) return;
  throw Error(where(std::string("HDF5 at ") + file + ":" + std::to_string(line)), std::string(call) + " failed: " + error_stack(),
              "check free disk space and that no other program holds the file open");
}

Id::Id(hid_t id, herr_t (*close)(hid_t), const char* what) : id_(id), close_(close) {
  if (id < 0) throw Error(where("HDF5"), std::string(what) + " failed: " + error_stack(), "check the path and free disk space");
}

namespace {
bool g_file_close_failed = false;
}

bool file_close_failed() { return g_file_close_failed; }

void Id::reset() {
  if (id_ >= 0 && close_ && close_(id_) < 0) {
    if (close_ == H5Fclose) g_file_close_failed = true;
    H5Eclear2(H5E_DEFAULT);
  }
  id_ = -1;
}

Id open_parallel(const std::string& path, MPI_Comm comm, bool create) {
  const Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  CTXSIM_H5(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL));
  // All ranks make the same metadata calls, so the metadata cache may be flushed collectively.
  CTXSIM_H5(H5Pset_all_coll_metadata_ops(fapl, true));
  CTXSIM_H5(H5Pset_coll_metadata_write(fapl, true));
  if (create) {
    // The root's attributes in dense storage (in creation order, as h5dump lists them): a text
    // attribute of any length (a long command line, an inspected text's config) fits, where an
    // object header's compact storage ends at 64 KiB. Needs the 1.8 file format or later.
    CTXSIM_H5(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST));
    const Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose, "H5Pcreate");
    CTXSIM_H5(H5Pset_attr_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED));
    CTXSIM_H5(H5Pset_attr_phase_change(fcpl, 0, 0));
    return Id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl), H5Fclose, ("create " + path).c_str());
  }
  return Id(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl), H5Fclose, ("open " + path).c_str());
}

Id collective_transfer() {
  Id x(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  CTXSIM_H5(H5Pset_dxpl_mpio(x, H5FD_MPIO_COLLECTIVE));
  return x;
}

Id independent_transfer() {
  Id x(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  CTXSIM_H5(H5Pset_dxpl_mpio(x, H5FD_MPIO_INDEPENDENT));
  return x;
}

Id float16_type() {
  Id t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose, "H5Tcopy");
  CTXSIM_H5(H5Tset_fields(t, 15, 10, 5, 0, 10));
  CTXSIM_H5(H5Tset_precision(t, 16));
  CTXSIM_H5(H5Tset_size(t, 2));
  CTXSIM_H5(H5Tset_ebias(t, 15));
  return t;
}

Id create_group(hid_t parent, const std::string& name) {
  return Id(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, ("create group " + name).c_str());
}

Id open_group(hid_t parent, const std::string& name) {
  if (!exists(parent, name)) damaged(parent, "no group '" + name + "'");
  H5O_info_t info;
  if (H5Oget_info_by_name2(parent, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_GROUP)
    damaged(parent, "'" + name + "' is not a group");
  return Id(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, ("open group " + name).c_str());
}

bool exists(hid_t parent, const std::string& path) {
  // Walk component by component: H5Lexists fails on a missing intermediate group.
  size_t pos = 0;
  while (true) {
    const size_t next = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, next);
    if (H5Lexists(parent, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (next == std::string::npos) return true;
    pos = next;
  }
}

namespace {
Id string_type(size_t n) {
  Id t(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  CTXSIM_H5(H5Tset_size(t, n == 0 ? 1 : n));
  CTXSIM_H5(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}
Id scalar_space() { return Id(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate"); }

void write_attr(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type, const void* data) {
  if (H5Aexists(obj, name.c_str()) > 0) CTXSIM_H5(H5Adelete(obj, name.c_str()));
  const Id space = scalar_space();
  const Id a(H5Acreate2(obj, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, ("attribute " + name).c_str());
  CTXSIM_H5(H5Awrite(a, mem_type, data));
}
}  // namespace

void set_attr(hid_t obj, const std::string& name, const std::string& value) {
  const Id t = string_type(value.size());
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  write_attr(obj, name, t, t, padded.data());
}
void set_attr(hid_t obj, const std::string& name, int64_t value) { write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value); }
void set_attr(hid_t obj, const std::string& name, double value) { write_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value); }

bool has_attr(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

std::vector<std::string> dataset_paths(hid_t obj) {
  std::vector<std::string> paths;
  const auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type == H5O_TYPE_DATASET) static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  };
  CTXSIM_H5(H5Ovisit2(obj, H5_INDEX_NAME, H5_ITER_INC, visit, &paths, H5O_INFO_BASIC));
  return paths;
}

std::string file_name(hid_t obj) {
  const ssize_t n = H5Fget_name(obj, nullptr, 0);
  if (n <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "HDF5 file";
  }
  std::string s(size_t(n) + 1, '\0');
  H5Fget_name(obj, s.data(), s.size());
  s.resize(size_t(n));
  return s;
}

std::string object_name(hid_t obj) {
  const ssize_t n = H5Iget_name(obj, nullptr, 0);
  if (n <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return "/";
  }
  std::string s(size_t(n) + 1, '\0');
  H5Iget_name(obj, s.data(), s.size());
  s.resize(size_t(n));
  return s;
}

void damaged(hid_t obj, const std::string& what) {
  H5Eclear2(H5E_DEFAULT);
  throw Error(file_name(obj), object_name(obj) + ": " + what + ": not a ctxsim store, or a damaged one", kNotAStoreFix);
}

namespace {

// The attribute `name` of obj, opened after checking that it is there, scalar (one value) and
// of type class `want`; anything else is a damaged store, named.
Id open_typed_attr(hid_t obj, const std::string& name, H5T_class_t want, const char* spelled) {
  if (H5Aexists(obj, name.c_str()) <= 0) damaged(obj, "no attribute '" + name + "'");
  Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, ("open attribute " + name).c_str());
  const Id t(H5Aget_type(a), H5Tclose, "H5Aget_type");
  const Id space(H5Aget_space(a), H5Sclose, "H5Aget_space");
  const H5T_class_t c = H5Tget_class(t);
  const bool numeric_ok = want == H5T_FLOAT && c == H5T_INTEGER;  // a whole number where a real is read is fine
  if ((c != want && !numeric_ok) || H5Sget_simple_extent_npoints(space) != 1) damaged(obj, "attribute '" + name + "' is not " + spelled);
  return a;
}

}  // namespace

std::string get_attr_string(hid_t obj, const std::string& name) {
  const Id a = open_typed_attr(obj, name, H5T_STRING, "a string");
  const Id t(H5Aget_type(a), H5Tclose, "H5Aget_type");
  if (H5Tis_variable_str(t) > 0) damaged(obj, "attribute '" + name + "' is a variable-length string (ctxsim writes fixed-length ones)");
  const size_t n = H5Tget_size(t);
  if (n > kMaxAttributeBytes) damaged(obj, "attribute '" + name + "' claims " + std::to_string(n) + " bytes");
  std::string s(n, '\0');
  CTXSIM_H5(H5Aread(a, t, s.data()));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

int64_t get_attr_int(hid_t obj, const std::string& name) {
  const Id a = open_typed_attr(obj, name, H5T_INTEGER, "a whole number");
  int64_t v = 0;
  CTXSIM_H5(H5Aread(a, H5T_NATIVE_INT64, &v));
  return v;
}

double get_attr_double(hid_t obj, const std::string& name) {
  const Id a = open_typed_attr(obj, name, H5T_FLOAT, "a number");
  double v = 0;
  CTXSIM_H5(H5Aread(a, H5T_NATIVE_DOUBLE, &v));
  return v;
}

void check_readable(hid_t ds, hid_t mem_type) {
  const Id t(H5Dget_type(ds), H5Tclose, "H5Dget_type");
  const H5T_class_t have = H5Tget_class(t), want = H5Tget_class(mem_type);
  if (have != want)
    damaged(ds, std::string("holds ") +
                    (have == H5T_INTEGER  ? "integers"
                     : have == H5T_FLOAT  ? "floating-point numbers"
                     : have == H5T_STRING ? "strings"
                                          : "another type") +
                    ", expected " + (want == H5T_INTEGER ? "integers" : "floating-point numbers"));
  const Id space(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (points < 0) damaged(ds, "has no readable extent");
  // ctxsim allocates every dataset's storage when it creates it: one that claims more values
  // than its file holds (a sparse, crafted shape) is not ctxsim's, and reading it would only
  // allocate the claim.
  const size_t bytes = H5Tget_size(t);
  const long double claimed = (long double)points * (long double)bytes;
  if (claimed > (long double)H5Dget_storage_size(ds))
    damaged(ds, "claims " + std::to_string(points) + " values but its file holds storage for fewer");
}

Id create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const std::string& description,
                  hsize_t chunk_rows) {
  std::vector<hsize_t> chunk;
  if (chunk_rows > 0 && !dims.empty()) {
    chunk = dims;
    chunk[0] = std::max<hsize_t>(1, std::min(chunk_rows, dims[0]));
    for (auto& c : chunk) c = std::max<hsize_t>(c, 1);
  }
  return create_dataset(parent, name, type, dims, description, chunk);
}

Id create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const std::string& description,
                  const std::vector<hsize_t>& chunk) {
  const Id space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                 "H5Screate");
  const Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  if (!chunk.empty()) CTXSIM_H5(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()));
  // Allocate at creation so that parallel writers never race on allocation.
  CTXSIM_H5(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY));
  CTXSIM_H5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC));
  Id ds(H5Dcreate2(parent, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose, ("create dataset " + name).c_str());
  set_attr(ds, "description", description);
  return ds;
}

void make_scale(hid_t ds, const std::string& name, int32_t dimid) {
  CTXSIM_H5(H5DSset_scale(ds, name.c_str()));
  write_attr(ds, "_Netcdf4Dimid", H5T_STD_I32LE, H5T_NATIVE_INT32, &dimid);
}

std::string dimension_without_values(hsize_t size) {
  // netCDF-4's spelling: h5netcdf and netCDF look for the sentence, the size follows as %10d.
  char buf[96];
  std::snprintf(buf, sizeof buf, "This is a netCDF dimension but not a netCDF variable.%10llu", static_cast<unsigned long long>(size));
  return buf;
}

void attach_scale(hid_t ds, hid_t scale, unsigned axis, const std::string& label) {
  CTXSIM_H5(H5DSattach_scale(ds, scale, axis));
  CTXSIM_H5(H5DSset_label(ds, axis, label.c_str()));
}

Id fixed_string_type(size_t width) {
  Id t(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  CTXSIM_H5(H5Tset_size(t, std::max<size_t>(width, 1)));
  CTXSIM_H5(H5Tset_strpad(t, H5T_STR_NULLPAD));
  CTXSIM_H5(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

std::string pack_strings(const std::vector<std::string>& values, size_t width) {
  width = std::max<size_t>(width, 1);
  std::string out(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    size_t n = std::min(width, values[i].size());
    while (n < values[i].size() && n > 0 && (static_cast<unsigned char>(values[i][n]) & 0xC0) == 0x80) --n;  // whole UTF-8 characters
    values[i].copy(&out[i * width], n);
  }
  return out;
}

std::vector<hsize_t> dims_of(hid_t ds) {
  const Id space(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  const int n = H5Sget_simple_extent_ndims(space);
  CTXSIM_H5(n);
  std::vector<hsize_t> d(static_cast<size_t>(n));
  if (n > 0) CTXSIM_H5(H5Sget_simple_extent_dims(space, d.data(), nullptr));
  return d;
}

void write_none(hid_t ds, hid_t mem_type, hid_t dxpl) {
  const Id file_space(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  CTXSIM_H5(H5Sselect_none(file_space));
  const hsize_t one = 1;
  const Id mem(H5Screate_simple(1, &one, nullptr), H5Sclose, "H5Screate_simple");
  CTXSIM_H5(H5Sselect_none(mem));
  char dummy[16] = {};
  CTXSIM_H5(H5Dwrite(ds, mem_type, mem, file_space, dxpl, dummy));
}

void write_slab(hid_t ds, hid_t mem_type, const void* data, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
                hid_t dxpl) {
  const Id file_space(H5Dget_space(ds), H5Sclose, "H5Dget_space");
  hsize_t total = 1;
  for (auto c : count) total *= c;
  if (total == 0 || count.empty()) {
    write_none(ds, mem_type, dxpl);
    return;
  }
  CTXSIM_H5(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  const Id mem(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose, "H5Screate_simple");
  CTXSIM_H5(H5Dwrite(ds, mem_type, mem, file_space, dxpl, data));
}

void write_all(hid_t ds, hid_t mem_type, const void* data, hid_t dxpl) { CTXSIM_H5(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, dxpl, data)); }

template <class T>
std::vector<T> read_all(hid_t parent, const std::string& name, hid_t mem_type) {
  if (!exists(parent, name)) damaged(parent, "no dataset '" + name + "'");
  H5O_info_t info;
  if (H5Oget_info_by_name2(parent, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET)
    damaged(parent, "'" + name + "' is not a dataset");
  const Id ds(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose, ("open dataset " + name).c_str());
  check_readable(ds, mem_type);
  size_t n = 1;
  for (auto d : dims_of(ds)) n *= d;
  std::vector<T> v(n);
  if (n) CTXSIM_H5(H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()));
  return v;
}
template std::vector<int64_t> read_all<int64_t>(hid_t, const std::string&, hid_t);
template std::vector<int32_t> read_all<int32_t>(hid_t, const std::string&, hid_t);
template std::vector<int16_t> read_all<int16_t>(hid_t, const std::string&, hid_t);
template std::vector<float> read_all<float>(hid_t, const std::string&, hid_t);
template std::vector<double> read_all<double>(hid_t, const std::string&, hid_t);
template std::vector<uint8_t> read_all<uint8_t>(hid_t, const std::string&, hid_t);
template std::vector<uint16_t> read_all<uint16_t>(hid_t, const std::string&, hid_t);

template <class T>
std::vector<T> read_checked(hid_t file, const std::string& store, const std::string& path, const std::vector<long long>& shape,
                            std::vector<hsize_t>* dims_out) {
  if (!exists(file, path)) throw Error(store, "missing dataset /" + path, kNotAStoreFix);
  const Id ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose, path.c_str());
  const auto dims = dims_of(ds);
  bool ok = dims.size() == shape.size();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = shape[i] < 0 || hsize_t(shape[i]) == dims[i];
  if (!ok) {
    const std::string got = join_each(
        dims, [](hsize_t d) { return std::to_string(d); }, ",");
    const std::string want = join_each(
        shape, [](long long d) { return d < 0 ? std::string("*") : std::to_string(d); }, ",");
    throw Error(store, "/" + path + " has shape [" + got + "], expected [" + want + "]", kNotAStoreFix);
  }
  if (dims_out) *dims_out = dims;
  const size_t parent = path.rfind('/');
  if (parent == std::string::npos) return read_all<T>(file, path);
  return read_all<T>(open_group(file, path.substr(0, parent)), path.substr(parent + 1));
}

template std::vector<int64_t> read_checked(hid_t, const std::string&, const std::string&, const std::vector<long long>&,
                                           std::vector<hsize_t>*);
template std::vector<int32_t> read_checked(hid_t, const std::string&, const std::string&, const std::vector<long long>&,
                                           std::vector<hsize_t>*);
template std::vector<int16_t> read_checked(hid_t, const std::string&, const std::string&, const std::vector<long long>&,
                                           std::vector<hsize_t>*);
template std::vector<double> read_checked(hid_t, const std::string&, const std::string&, const std::vector<long long>&,
                                          std::vector<hsize_t>*);

}  // namespace ctxsim::h5
