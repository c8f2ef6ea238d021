// The store readers (summary, the report's data, the rollout's inputs) on stores that a
// colleague's tool could have written: a real store (CTXSIM_FUZZ_STORE, made by scripts/fuzz.sh)
// edited through the HDF5 API as the input bytes say: root attributes of other types or values,
// datasets replaced by other shapes, types or sparse huge extents, values changed, objects
// deleted. Every outcome is the store read, or a ctxsim::Error; any other exception, crash or
// sanitizer report is a finding. (The file format itself is HDF5's to parse: mutating raw bytes
// would fuzz libhdf5, whose parser is not hardened, rather than ctxsim's checks.)
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/commands/summary.h"
#include "pipeline/report/report_data.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store.h"
#include "stages/base/error.h"
#include "tests/fuzz/store_edits.h"

namespace {

using fuzz::Bytes;
using fuzz::set_int_attr;
using fuzz::set_string_attr;

const char* const kRootAttributes[] = {"schema_version", "complete", "config", "model_path", "dtype", "vector", "stats_sha256", "kind"};

std::vector<std::string> dataset_paths(const std::string& rule) {
  const std::string r = "stats/" + rule + "/";
  return {"stats/baseline/samples",
          "stats/baseline/distance_all",
          "stats/baseline/separator_mass_by_token",
          "stats/baseline/valid_pairs",
          r + "high_pairs",
          r + "distance_hist",
          r + "anchor_counts",
          r + "same_token",
          r + "distinct_anchors",
          "samples/token_ids",
          "samples/n_valid",
          "samples/sentence_ids",
          "examples/sample_ids",
          "examples/attention",
          "examples/selected",
          "vocab/text",
          "per_sample/anchor_token",
          "units/baseline/samples",
          "units/baseline/distance_all",
          "units/" + rule + "/high_pairs",
          "units/" + rule + "/same_token",
          "units/" + rule + "/distance_hist"};
}

// One edit of the store, as the next input bytes say.
void edit(hid_t f, Bytes& in, const std::vector<std::string>& paths) {
  const uint8_t op = in.u8() % 7;
  const char* attr = kRootAttributes[in.u8() % (sizeof kRootAttributes / sizeof *kRootAttributes)];
  const std::string path = paths[in.u8() % paths.size()];
  const bool there = H5Lexists(f, path.substr(0, path.find('/')).c_str(), H5P_DEFAULT) > 0 && H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0;
  switch (op) {
    case 0: set_int_attr(f, attr, int64_t(in.u64(2)) - 8); break;
    case 1: set_string_attr(f, attr, in.text(24)); break;
    case 2:
      if (H5Aexists(f, attr) > 0) H5Adelete(f, attr);
      break;
    case 3:
    case 4:
    case 5: {  // replace a dataset: small random data, strings, or a sparse huge extent
      if (!there) break;
      H5Ldelete(f, path.c_str(), H5P_DEFAULT);
      const int rank = 1 + in.u8() % 4;
      std::vector<hsize_t> dims(static_cast<size_t>(rank));
      size_t total = 1;
      for (auto& d : dims) {
        d = op == 5 ? hsize_t(in.u64(5)) + 1 : hsize_t(in.u8() % 6);
        total *= size_t(d);
      }
      const hid_t space = H5Screate_simple(rank, dims.data(), nullptr);
      if (op == 4) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 4);
        const hid_t ds = H5Dcreate2(f, path.c_str(), t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        std::string data(total * 4, 'x');
        if (total) H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        H5Dclose(ds);
        H5Tclose(t);
      } else {
        const hid_t ds = H5Dcreate2(f, path.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (op == 3 && total) {
          std::vector<int64_t> data(static_cast<size_t>(total));
          for (auto& v : data) v = int64_t(in.u64(2)) - 1000;
          H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        }
        H5Dclose(ds);
      }
      H5Sclose(space);
      break;
    }
    case 6: {  // change one value of an integer dataset, in place
      if (!there) break;
      const hid_t ds = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
      const hid_t space = H5Dget_space(ds);
      const hssize_t n = H5Sget_simple_extent_npoints(space);
      const hid_t t = H5Dget_type(ds);
      // Only small datasets (an earlier edit may have made this one sparse and huge).
      if (n > 0 && n < (1 << 22) && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_ndims(space) > 0) {
        std::vector<int64_t> all(static_cast<size_t>(n));
        if (H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0) {
          all[size_t(in.u64(3) % uint64_t(n))] = int64_t(in.u64(4)) - (int64_t(1) << 31);
          H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data());
        }
      }
      H5Tclose(t);
      H5Sclose(space);
      H5Dclose(ds);
      break;
    }
  }
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = fuzz::template_store("store", "CTXSIM_FUZZ_STORE");
  static const std::string rule = [] {
    const hid_t f = H5Fopen(base.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const std::string r = ctxsim::h5::get_attr_string(ctxsim::h5::open_group(f, "stats"), "rules");
    H5Fclose(f);
    return r.substr(0, r.find('\n'));
  }();
  static const std::vector<std::string> paths = dataset_paths(rule);
  const std::string path = "/dev/shm/ctxsim_fuzz_store_" + std::to_string(getpid()) + ".h5";
  std::filesystem::copy_file(base, path, std::filesystem::copy_options::overwrite_existing);
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    Bytes in{data, size};
    for (int k = 0; k < 4 && !in.done(); ++k) edit(f, in, paths);
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
  }
  try {
    std::ostringstream out;
    const ctxsim::h5::Id file = ctxsim::open_complete_store(path);
    (void)ctxsim::verify_run_store(file, path);  // what `ctxsim status` checks
    ctxsim::print_run_summary(file, path, ctxsim::SummaryOptions{}, out);
    const ctxsim::report::StoreData d = ctxsim::report::load_store_data(file, path, "");
    for (size_t e = 0; e < d.example_ids.size(); ++e) {
      const ctxsim::report::Example x = ctxsim::report::load_example(file, d, e);
      if (!x.selected.empty()) (void)x.head(x.selected, d.L - 1, d.H - 1);
      (void)x.head(x.attention, d.L - 1, d.H - 1);
    }
  } catch (const ctxsim::Error&) {
    // A clear error is a right answer to a damaged store.
  }
  std::filesystem::remove(path);
  return 0;
}
