#include "pipeline/store/dataset_spec.h"

#include "pipeline/store/scales.h"
#include "stages/base/error.h"

namespace ctxsim {
namespace {

hid_t file_type(Element e) {
  switch (e) {
    case Element::Int16: return h5::Element<int16_t>::file();
    case Element::Int32: return h5::Element<int32_t>::file();
    case Element::Int64: return h5::Element<int64_t>::file();
    case Element::UInt8: return h5::Element<uint8_t>::file();
    case Element::Float16: return -1;  // made per call (float16_type)
    case Element::Float32: return h5::Element<float>::file();
    case Element::Float64: return h5::Element<double>::file();
  }
  return -1;
}

// The chunk dimensions of `spec` at `dims` (empty: contiguous, as any dataset with an empty axis).
std::vector<hsize_t> chunk_of(const DatasetSpec& spec, const std::vector<hsize_t>& dims) {
  if (spec.chunk.rows == 0 || dims.empty()) return {};
  for (hsize_t d : dims)
    if (d == 0) return {};
  std::vector<hsize_t> chunk = dims;
  for (size_t a = 0; a < spec.chunk.axis && a < chunk.size(); ++a) chunk[a] = 1;
  if (spec.chunk.axis < chunk.size()) chunk[spec.chunk.axis] = std::min(spec.chunk.rows, dims[spec.chunk.axis]);
  return chunk;
}

}  // namespace

const char* element_name(Element e) {
  switch (e) {
    case Element::Int16: return "int16";
    case Element::Int32: return "int32";
    case Element::Int64: return "int64";
    case Element::UInt8: return "uint8";
    case Element::Float16: return "float16";
    case Element::Float32: return "float32";
    case Element::Float64: return "float64";
  }
  return "?";
}

std::vector<hsize_t> extents_of(const DatasetSpec& spec, const Extents& extents) {
  std::vector<hsize_t> dims;
  for (const char* axis : spec.axes) {
    const auto it = extents.find(axis);
    CTXSIM_CHECK(it != extents.end(), std::string("a store's extents name every axis of its datasets: ") + axis);
    dims.push_back(it->second);
  }
  return dims;
}

const DatasetSpec& spec_named(const std::vector<DatasetSpec>& table, const std::string& group, const std::string& name) {
  for (const DatasetSpec& s : table)
    if (group == s.group && name == s.name) return s;
  CTXSIM_CHECK(false, "a dataset without a row in its store's table: " + group + "/" + name);
  return table.front();
}

void create_datasets(hid_t file, const std::vector<DatasetSpec>& table, const Extents& extents, bool with_optional) {
  for (const DatasetSpec& s : table) {
    if (s.optional && !with_optional) continue;
    const h5::Id group = h5::open_group(file, s.group);
    const std::vector<hsize_t> dims = extents_of(s, extents);
    if (s.element == Element::Float16)
      (void)h5::create_dataset(group, s.name, h5::float16_type(), dims, s.description, chunk_of(s, dims));
    else
      (void)h5::create_dataset(group, s.name, file_type(s.element), dims, s.description, chunk_of(s, dims));
  }
}

void attach_scales(hid_t file, const std::vector<DatasetSpec>& table) {
  for (const DatasetSpec& s : table) {
    if (!h5::exists(file, s.path())) continue;
    Scales::attach(h5::open_group(file, s.group), s.name, std::vector<std::string>(s.axes.begin(), s.axes.end()));
  }
}

template <class T>
std::vector<T> read_spec(hid_t file, const std::string& store, const DatasetSpec& spec, const std::map<std::string, long long>& extents,
                         std::vector<hsize_t>* dims_out) {
  std::vector<long long> shape;
  for (const char* axis : spec.axes) {
    const auto it = extents.find(axis);
    shape.push_back(it == extents.end() ? -1 : it->second);
  }
  return h5::read_checked<T>(file, store, spec.path(), shape, dims_out);
}

template std::vector<int64_t> read_spec(hid_t, const std::string&, const DatasetSpec&, const std::map<std::string, long long>&,
                                        std::vector<hsize_t>*);
template std::vector<double> read_spec(hid_t, const std::string&, const DatasetSpec&, const std::map<std::string, long long>&,
                                       std::vector<hsize_t>*);
template std::vector<int16_t> read_spec(hid_t, const std::string&, const DatasetSpec&, const std::map<std::string, long long>&,
                                        std::vector<hsize_t>*);
template std::vector<int32_t> read_spec(hid_t, const std::string&, const DatasetSpec&, const std::map<std::string, long long>&,
                                        std::vector<hsize_t>*);

}  // namespace ctxsim
