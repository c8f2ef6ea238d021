// Dimension scales: every axis of every dataset of a store named (HDF5's H5DS, the netCDF-4
// convention that h5netcdf and xarray read; docs/STORE.md "With xarray").
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "pipeline/store/store_layout.h"

namespace ctxsim {

// Makes the scales of a new store's axes, with their values (layer, head, distance, tokens,
// rules, …), and attaches them. Collective: every rank makes the same calls; `writer` (rank 0)
// writes the values through the transfer list dxpl.
void create_scales(hid_t file, const StoreLayout& layout, const std::string& vocab_text, hid_t dxpl, bool writer);

// Writes the separator tokens into /stats/baseline/separator (known only with the statistics); a
// store made before scales has none, and nothing is written.
void write_separator_scale(hid_t stats_group, const std::vector<std::string>& separator_tokens, hid_t dxpl, bool writer);

}  // namespace ctxsim
