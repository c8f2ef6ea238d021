// What the store fuzzers (fuzz_store.cpp, fuzz_job_store.cpp) share: the input read a little at a
// time, the store to edit (a real one, made by scripts/fuzz.sh), and attributes set through the
// HDF5 API whatever type they had.
#pragma once
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace fuzz {

// The input, read a little at a time (zeros once it runs out).
struct Bytes {
  const uint8_t* p;
  size_t n, at = 0;
  uint8_t u8() { return at < n ? p[at++] : 0; }
  uint64_t u64(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = v << 8 | u8();
    return v;
  }
  // A string of fewer than `longest` bytes, any bytes.
  std::string text(size_t longest) {
    const size_t len = u8() % longest;
    std::string s;
    for (size_t i = 0; i < len; ++i) s.push_back(char(u8()));
    return s;
  }
  // A double that readers must survive: ordinary shares, their edges, NaN, infinities, huge.
  double value() {
    static const double kSpecial[] = {0.0,
                                      1.0,
                                      -0.0,
                                      -1e-9,
                                      1.0 + 1e-9,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      1e308,
                                      -5.0};
    const uint8_t k = u8();
    return k < 10 ? kSpecial[k] : double(u64(2)) / 65535.0;
  }
  bool done() const { return at >= n; }
};

// The store a target edits: the path in `variable` (the target stops, saying so, without it).
inline std::string template_store(const char* target, const char* variable) {
  const char* v = std::getenv(variable);
  if (!v) {
    fprintf(stderr, "fuzz_%s: set %s to its store.h5 (scripts/fuzz.sh makes one)\n", target, variable);
    std::abort();
  }
  return v;
}

inline void set_int_attr(hid_t obj, const char* name, int64_t v) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  const hid_t s = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  H5Sclose(s);
}

inline void set_string_attr(hid_t obj, const char* name, const std::string& v) {
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, std::max<size_t>(1, v.size()));
  const hid_t s = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  H5Awrite(a, t, padded.data());
  H5Aclose(a);
  H5Sclose(s);
  H5Tclose(t);
}

}  // namespace fuzz
