// Dimension scales: every axis of every dataset of a store named (HDF5's H5DS, the netCDF-4
// convention that h5netcdf and xarray read; docs/STORE.md "With xarray").
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <string>
#include <vector>

#include "pipeline/store/hdf5.h"
#include "pipeline/store/store_layout.h"

namespace ctxsim {

// The descriptions of the layer and head coordinates, in every store.
constexpr const char* kLayerScale = "layer index (0: the first encoder layer)";
constexpr const char* kHeadScale = "attention head index within the layer";

// Makes a group's coordinate datasets as dimension scales and names datasets' axes by them. Every
// rank makes the same calls; `writer` (rank 0) writes the values through the transfer list dxpl.
class Scales {
 public:
  Scales(hid_t dxpl, bool writer);
  // A coordinate of whole numbers, 0 … n-1 unless `values` are given.
  void numbers(hid_t group, const std::string& name, hsize_t n, const std::string& description, std::vector<int64_t> values = {});
  // A coordinate of strings of at most `width` bytes (UTF-8); values empty: written later.
  void strings(hid_t group, const std::string& name, hsize_t n, size_t width, const std::string& description,
               const std::vector<std::string>& values = {});
  // A dimension without values (netCDF: a dimension that is not a variable).
  void bare(hid_t group, const std::string& name, hsize_t n, const std::string& description);
  // Names the axes of group's dataset `name` by the group's scales `dims`, in order.
  static void attach(hid_t group, const std::string& name, const std::vector<std::string>& dims);
  // At least 2 bytes: xarray would read 1-byte strings as characters of one string.
  static size_t string_width(size_t longest) { return std::max<size_t>(longest, 2); }

 private:
  h5::Id make(hid_t group, const std::string& name, hid_t type, hsize_t n, const std::string& description, const std::string& scale_name);
  hid_t dxpl_;
  bool writer_;
  int32_t next_dimid_ = 0;
};

// Makes the scales of a new store's axes, with their values (layer, head, distance, tokens,
// rules, …), and attaches the statistics (/stats, /units) to them; the datasets of the store's
// table (run_datasets) are attached by attach_scales. Collective: every rank makes the same calls; `writer` (rank 0)
// writes the values through the transfer list dxpl.
void create_scales(hid_t file, const StoreLayout& layout, const std::string& vocab_text, hid_t dxpl, bool writer);

// CF attributes (the Climate and Forecast conventions' long_name, units and scale_factor, which
// xarray, netCDF tools and Panoply read) on every dataset under `file`: long_name from its
// description; units "count" for counts, "1" for dimensionless values (shares, attention,
// similarities, Pk, nats); the fixed-point statistics (kStatSchema's fixed_point rows: the
// separator masses) get scale_factor 2^-32 (xarray then decodes them to attention mass). Collective: every rank makes the same calls.
void write_cf_attributes(hid_t file);

// Writes the separator tokens into /stats/baseline/separator (known only with the statistics); a
// store made before scales has none, and nothing is written.
void write_separator_scale(hid_t stats_group, const std::vector<std::string>& separator_tokens, hid_t dxpl, bool writer);

}  // namespace ctxsim
