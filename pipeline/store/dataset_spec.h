// A store's datasets as rows, as the statistics schema (kStatSchema) has them for /stats: each
// dataset's group, name, element type, axes and description, written once. A store's table is
// what creates its datasets (with their descriptions and dimension scales), what its writer and
// checked reader address them by, what its results digest iterates, and what the docs/STORE.md
// test compares against the tables there. A new dataset is a row and its put/get.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pipeline/store/hdf5.h"

namespace ctxsim {

enum class Element { Int16, Int32, Int64, UInt8, Float16, Float32, Float64 };

// How a dataset is chunked: along `axis` (an index into its axes) `rows` at a time, the axes
// before it one at a time, those after it whole; rows 0: contiguous. A dataset a job writes a
// unit (or an example) at a time is chunked so that the unit's write covers whole chunks.
struct Chunk {
  size_t axis = 0;
  hsize_t rows = 0;
};

struct DatasetSpec {
  const char* group;              // "prune/units"
  const char* name;               // "ablation_loss"
  Element element;                //
  std::vector<const char*> axes;  // dimension-scale names of the group, in order ("unit", "layer", "head")
  const char* description;        // its `description` attribute
  Chunk chunk = {};               //
  bool optional = false;          // only in some stores (the pruning store's score): created when asked
  std::string path() const { return std::string(group) + "/" + name; }
};

// A row a unit at a time along the first axis.
constexpr Chunk kRowChunks = {0, 1};

// "int16", "int32", …, "float64": the type column of docs/STORE.md.
const char* element_name(Element e);

// The extent of each axis in one store (from its layout). An axis a table names and the extents
// lack is a bug.
using Extents = std::map<std::string, hsize_t>;
std::vector<hsize_t> extents_of(const DatasetSpec& spec, const Extents& extents);

// The row named `name` in `table` (a bug when there is none).
const DatasetSpec& spec_named(const std::vector<DatasetSpec>& table, const std::string& group, const std::string& name);

// Creates every dataset of `table` (the optional ones when `with_optional`), with its
// description; storage allocated (collective on an MPI-IO file).
void create_datasets(hid_t file, const std::vector<DatasetSpec>& table, const Extents& extents, bool with_optional);
// Attaches each dataset there is to the dimension scales of its axes in its group (which must exist).
void attach_scales(hid_t file, const std::vector<DatasetSpec>& table);

// Reads a dataset after checking its type class and shape against the row (`extents`: -1 for an
// axis the reader does not know yet); errors name `store`.
template <class T>
std::vector<T> read_spec(hid_t file, const std::string& store, const DatasetSpec& spec, const std::map<std::string, long long>& extents,
                         std::vector<hsize_t>* dims_out = nullptr);

}  // namespace ctxsim
