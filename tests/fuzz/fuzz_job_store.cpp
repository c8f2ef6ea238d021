// The readers of the segmentation and pruning stores (status, summary, the report's figures) on
// stores that a colleague's tool could have written: a real store of `ctxsim segment` or `ctxsim
// prune` (CTXSIM_FUZZ_SEGMENT_STORE, CTXSIM_FUZZ_PRUNE_STORE, made by scripts/fuzz.sh) edited
// through the HDF5 API as the input bytes say: root and group attributes of other types or values
// (method names, subsets, orders, fractions, the digest, the schema version), datasets replaced by
// other shapes, types or values (NaN, inf, negative, huge), values changed in place, objects
// deleted. An edit may also drop the digest and call the store schema 2 (as a store of an older
// ctxsim is), so that the checks behind the digest are reached too. Every outcome is the store
// read, or a ctxsim::Error; any other exception, crash or sanitizer report is a finding.
// One source, two targets: CTXSIM_FUZZ_PRUNE picks the pruning store's row of the kind table.
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/commands/summary.h"
#include "pipeline/report/prune_figures.h"
#include "pipeline/report/segment_figures.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/prune_store.h"
#include "pipeline/store/segment_store.h"
#include "pipeline/store/segment_summary.h"
#include "pipeline/store/store_reader.h"
#include "stages/base/error.h"
#include "tests/fuzz/store_edits.h"

namespace {

using fuzz::Bytes;
using fuzz::set_int_attr;
using fuzz::set_string_attr;

// What the fuzzer edits and which readers it runs, a row per store kind.
struct StoreKind {
  const char* name;  // the target's: fuzz_<name>
  const char* template_variable;
  std::vector<const char*> root_attributes;
  std::vector<std::pair<const char*, const char*>> group_attributes;  // (group, attribute)
  std::vector<const char*> datasets;
  void (*summary)(hid_t file, const std::string& path, std::ostream& out);  // what `ctxsim status` and `summary` read
  void (*read)(const std::string& path, const std::string& summary);        // the readers beyond status and summary
};

const StoreKind& kind() {
  static const StoreKind kinds[] = {
      {"segment_store",
       "CTXSIM_FUZZ_SEGMENT_STORE",
       {"schema_version", "complete", "kind", "results_sha256", "model_path", "config"},
       {{"methods", "names"}, {"documents", "subsets"}, {"example", "document"}},
       {"methods/boundaries", "methods/count", "methods/pk", "methods/window_diff", "heads/pk", "heads/window_diff", "documents/subset",
        "documents/sentences", "documents/parts", "documents/gold", "example/similarity"},
       [](hid_t file, const std::string&, std::ostream& out) { ctxsim::print_segment_summary(ctxsim::read_segment_store(file), out); },
       [](const std::string& path, const std::string& summary) {
         const std::vector<ctxsim::report::SegmentRun> runs = ctxsim::report::load_segment_runs({path}, {});
         (void)ctxsim::report::summary_page("fuzz", summary, ctxsim::report::segment_figures(runs));
       }},
      {"prune_store",
       "CTXSIM_FUZZ_PRUNE_STORE",
       {"schema_version", "complete", "kind", "full_loss", "full_accuracy", "model_path", "config"},
       {{"prune", "orders"}, {"prune", "unit_orders"}, {"prune", "fractions"}},
       {"prune/ablation_loss", "prune/curve_accuracy", "prune/curve_accuracy_random", "prune/curve_loss", "prune/curve_loss_random",
        "prune/entropy", "prune/importance", "prune/importance_normalised", "prune/order_heads", "prune/units/ablation_correct",
        "prune/units/ablation_loss", "prune/units/correct", "prune/units/curve_correct", "prune/units/curve_loss", "prune/units/entropy",
        "prune/units/importance", "prune/units/loss", "prune/units/predicted"},
       [](hid_t file, const std::string& path, std::ostream& out) {
         ctxsim::print_prune_summary(file, path, ctxsim::SummaryOptions{}, out);
       },
       [](const std::string& path, const std::string& summary) {
         const std::vector<ctxsim::report::PruneRun> runs = ctxsim::report::load_prune_runs({path}, {});
         for (const auto& r : runs) (void)ctxsim::report::summary_page("fuzz", summary, ctxsim::report::prune_figures(r.data, r.label));
         (void)ctxsim::report::prune_compare_figures(runs, "fuzz");
       }},
  };
#if defined(CTXSIM_FUZZ_PRUNE)
  return kinds[1];
#else
  return kinds[0];
#endif
}

// One edit of the store, as the next input bytes say.
void edit(hid_t f, Bytes& in) {
  const uint8_t op = in.u8() % 9;
  const StoreKind& k = kind();
  const char* attr = k.root_attributes[in.u8() % k.root_attributes.size()];
  const std::string path = k.datasets[in.u8() % k.datasets.size()];
  // Every group on the way must be there (an edit may have deleted one).
  bool there = true;
  for (size_t slash = path.find('/'); there && slash != std::string::npos; slash = path.find('/', slash + 1))
    there = H5Lexists(f, path.substr(0, slash).c_str(), H5P_DEFAULT) > 0;
  there = there && H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0;
  switch (op) {
    case 0: set_int_attr(f, attr, int64_t(in.u64(2)) - 8); break;
    case 1: set_string_attr(f, attr, in.text(40)); break;
    case 2: {  // a group's attribute: method names, subsets, orders, fractions
      const auto& [group, name] = k.group_attributes[in.u8() % k.group_attributes.size()];
      if (H5Lexists(f, group, H5P_DEFAULT) <= 0) break;
      const hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
      if (in.u8() % 2)
        set_string_attr(g, name, in.text(40));
      else
        set_int_attr(g, name, int64_t(in.u64(2)) - 8);
      H5Gclose(g);
      break;
    }
    case 3:  // the store as an older ctxsim wrote it: no digest to stop at
      if (H5Aexists(f, "results_sha256") > 0) H5Adelete(f, "results_sha256");
      if (H5Aexists(f, "model_config_sha256") > 0) H5Adelete(f, "model_config_sha256");
      set_int_attr(f, "schema_version", 2);
      break;
    case 4:
    case 5:
    case 6: {  // replace a dataset: small integers, doubles, strings; any rank and extents
      if (!there) break;
      H5Ldelete(f, path.c_str(), H5P_DEFAULT);
      const int rank = 1 + in.u8() % 4;
      std::vector<hsize_t> dims(static_cast<size_t>(rank));
      size_t total = 1;
      for (auto& d : dims) {
        d = hsize_t(in.u8() % 7);
        total *= size_t(d);
      }
      const hid_t space = H5Screate_simple(rank, dims.data(), nullptr);
      if (op == 6) {
        const hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 4);
        const hid_t ds = H5Dcreate2(f, path.c_str(), t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        std::string data(total * 4, 'x');
        if (total) H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        H5Dclose(ds);
        H5Tclose(t);
      } else if (op == 5) {
        const hid_t ds = H5Dcreate2(f, path.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        std::vector<double> data(total);
        for (auto& v : data) v = in.value();
        if (total) H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        H5Dclose(ds);
      } else {
        const hid_t ds = H5Dcreate2(f, path.c_str(), H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        std::vector<int32_t> data(total);
        for (auto& v : data) v = int32_t(in.u64(2)) - 100;
        if (total) H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
        H5Dclose(ds);
      }
      H5Sclose(space);
      break;
    }
    case 7:
    case 8: {  // change one value in place (integers or doubles, as the dataset holds)
      if (!there) break;
      const hid_t ds = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
      const hid_t space = H5Dget_space(ds);
      const hssize_t n = H5Sget_simple_extent_npoints(space);
      const hid_t t = H5Dget_type(ds);
      if (n > 0 && n < (1 << 22) && H5Sget_simple_extent_ndims(space) > 0) {
        const size_t at = size_t(in.u64(3) % uint64_t(n));
        if (H5Tget_class(t) == H5T_INTEGER) {
          std::vector<int32_t> all(static_cast<size_t>(n));
          if (H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0) {
            all[at] = int32_t(in.u64(4));
            H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data());
          }
        } else if (H5Tget_class(t) == H5T_FLOAT) {
          std::vector<double> all(static_cast<size_t>(n));
          if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()) >= 0) {
            all[at] = in.value();
            H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data());
          }
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
  static const std::string base = fuzz::template_store(kind().name, kind().template_variable);
  const std::string path = std::string("/dev/shm/ctxsim_fuzz_") + kind().name + "_" + std::to_string(getpid()) + ".h5";
  std::filesystem::copy_file(base, path, std::filesystem::copy_options::overwrite_existing);
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    Bytes in{data, size};
    for (int k = 0; k < 5 && !in.done(); ++k) edit(f, in);
    H5Fclose(f);
    H5Eclear2(H5E_DEFAULT);
  }
  try {
    std::ostringstream out;
    {
      const ctxsim::h5::FileScope scope(path);
      const ctxsim::h5::Id file = ctxsim::open_complete_store(path);
      kind().summary(file, path, out);
    }
    kind().read(path, out.str());
  } catch (const ctxsim::Error&) {
    // A clear error is a right answer to a damaged store.
  }
  std::filesystem::remove(path);
  return 0;
}
