// Parallel-HDF5 rules followed by every store: every rank makes the same metadata calls (create,
// attribute) in the same order; each rank writes only its own hyperslabs; dataset storage is
// allocated at creation; transfers are collective (H5FD_MPIO_COLLECTIVE) and a rank with nothing
// to write takes part with an empty selection.
#include "pipeline/store/store_file.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "pipeline/store/scales.h"
#include "stages/base/digest.h"
#include "stages/base/files.h"
#include "stages/stats/accumulator.h"

namespace ctxsim {

int64_t store_schema_version() { return std::max(kStoreLayoutVersion, statistics_schema_version()); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

namespace {

// "1.2 MB", "340 MB".
std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, bytes < 10e6 ? "%.1f MB" : "%.0f MB", bytes / 1e6);
  return buf;
}

// Free bytes on the file system of `path` (-1 when unknown).
double free_bytes_at(const std::string& path) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) return -1;
  return double(fs.f_bavail) * double(fs.f_frsize);
}

// The root attributes, in the order h5dump lists them by creation (docs/STORE.md).
void write_root_attributes(hid_t file, const StoreAttributes& a) {
  h5::set_attr(file, "schema_version", store_schema_version());
  const std::pair<const char*, const std::string*> texts[] = {{"kind", &a.kind},
                                                              {"config", &a.config_yaml},
                                                              {"config_path", &a.config_path},
                                                              {"model_path", &a.model_path},
                                                              {"model_sha256", &a.model_sha256},
                                                              {"model_config_sha256", &a.model_config_sha256},
                                                              {"vocab_path", &a.vocab_path},
                                                              {"vocab_sha256", &a.vocab_sha256},
                                                              {"corpus", &a.corpus},
                                                              {"corpus_sha256", &a.corpus_sha256},
                                                              {"ctxsim_version", &a.version},
                                                              {"git_revision", &a.git_revision},
                                                              {"started", &a.started}};
  for (const auto& [name, value] : texts) h5::set_attr(file, name, *value);
  for (const auto& [name, value] : {std::pair{"scores_sha256", &a.scores_sha256}, {"tokenizer_sha256", &a.tokenizer_sha256}})
    if (!value->empty()) h5::set_attr(file, name, *value);
  h5::set_attr(file, "finished", std::string());
  h5::set_attr(file, "vector", a.vector_kind);
  h5::set_attr(file, "model_family", a.family);
  h5::set_attr(file, "causal", int64_t{a.causal});
  h5::set_attr(file, "dtype", a.dtype);
  h5::set_attr(file, "ranks", a.ranks);
  h5::set_attr(file, "threads_per_rank", a.threads);
  h5::set_attr(file, "devices", a.devices);
  h5::set_attr(file, "isa", a.isa);
  h5::set_attr(file, "per_rank_seconds", std::string());
  write_session_attributes(file, a.session);
  h5::set_attr(file, "complete", int64_t{0});
}

// What a file that is not a store is, in a few words.
std::string describe_non_store(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (fs::is_directory(status)) return "a folder, not a store file";
  if (!fs::is_regular_file(status)) return "not a regular file";
  if (fs::file_size(path, ec) == 0) return "an empty file";
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  if (!in.read(head, sizeof head)) return "not an HDF5 file (shorter than HDF5's signature)";
  if (std::memcmp(head, "\x89HDF\r\n\x1a\n", 8) != 0) return "not an HDF5 file";
  return "an HDF5 file that cannot be opened (truncated or damaged)";
}

}  // namespace

void write_session_attributes(hid_t file, const TextAttributes& session) {
  for (const auto& [name, value] : session) h5::set_attr(file, name, value);
}

// ------------------------------------------------------------------- the file ------------
StoreFile::StoreFile(const std::string& path, MPI_Comm comm, int rank, double bytes)
    : path_(path), rank_(rank), bytes_(bytes), comm_(comm), file_(h5::open_parallel(path, comm, false)),
      collective_(h5::collective_transfer()) {}

StoreFile::StoreFile(const std::string& path, MPI_Comm comm, int rank, double bytes, const StoreAttributes& attrs, const char* kind)
    : path_(path + ".creating"), rank_(rank), bytes_(bytes), comm_(comm) {
  CTXSIM_CHECK(attrs.kind == kind, "a store is created with its own kind");
  try {
    file_ = h5::open_parallel(path_, comm, true);
    collective_ = h5::collective_transfer();
    write_root_attributes(file_, attrs);
  } catch (...) {
    abandon();
    throw;
  }
}

StoreFile::~StoreFile() = default;

std::string StoreFile::final_path() const {
  const std::string suffix = ".creating";
  return path_.size() > suffix.size() && path_.compare(path_.size() - suffix.size(), suffix.size(), suffix) == 0
             ? path_.substr(0, path_.size() - suffix.size())
             : path_;
}

void StoreFile::place() {
  CTXSIM_CHECK(final_path() != path_, "build() once, on a store being created");
  write_cf_attributes(file_);
  CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  // Every rank's part is in the file: it becomes the store (the open file follows the rename).
  const std::string creating = path_, path = final_path();
  CTXSIM_CHECK(MPI_Barrier(comm_) == MPI_SUCCESS, "MPI_Barrier failed");
  if (rank_ == 0 && std::rename(creating.c_str(), path.c_str()) != 0)
    throw Error(path, std::string("cannot move the new store into place: ") + std::strerror(errno), "check the folder's permissions");
  CTXSIM_CHECK(MPI_Barrier(comm_) == MPI_SUCCESS, "MPI_Barrier failed");
  path_ = path;
}

void StoreFile::abandon() {
  collective_.reset();
  file_.reset();
  if (rank_ == 0 && final_path() != path_) std::remove(path_.c_str());  // a store that never started leaves nothing
}

void StoreFile::flush() {
  guarded([&] { CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL)); });
}

void StoreFile::set_attribute(const std::string& name, const std::string& value) { h5::set_attr(file_, name, value); }

void StoreFile::finish(const std::string& finished, double seconds, const TextAttributes& session) {
  guarded([&] {
    CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
    write_session_attributes(file_, session);
    if (const std::string digest = results_digest_now(); !digest.empty()) h5::set_attr(file_, "results_sha256", digest);
    h5::set_attr(file_, "finished", finished);
    h5::set_attr(file_, "run_seconds", seconds);
    CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
    h5::set_attr(file_, "complete", int64_t{1});  // last, and flushed: a store without it was interrupted
    CTXSIM_H5(H5Fflush(file_, H5F_SCOPE_GLOBAL));
    collective_.reset();
    file_.reset();
  });
}

void StoreFile::throw_if_full(const Error& e, const std::string& path, double need) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const double free_bytes = free_bytes_at(dir.empty() ? "." : dir);
  if (free_bytes < 0 || free_bytes > std::max(need, 64.0 * (1 << 20))) return;  // not a full disk: the original error stands
  throw Error(path,
              "No space left on device: the store needs about " + megabytes(need) + ", " + megabytes(free_bytes) +
                  " are free (HDF5: " + e.problem().substr(0, 160) + ")",
              "free space there or choose another output.dir ('ctxsim plan CONFIG' estimates the store's size); "
              "rerun the same command to continue");
}

// ------------------------------------------------------------ what a store is ------------
int64_t effective_schema_version(hid_t file) {
  int64_t v = h5::get_attr_int(file, "schema_version");
  if (h5::has_attr(file, "stats_sha256")) v = std::max<int64_t>(v, 2);
  if (h5::has_attr(file, "model_config_sha256")) v = std::max<int64_t>(v, 3);
  return v;
}

std::string store_identity(hid_t file) {
  std::string text;
  for (const char* name : {"kind", "started", "config", "model_sha256"})
    text += std::string(name) + "\n" + (h5::has_attr(file, name) ? h5::get_attr_string(file, name) : std::string()) + "\n";
  return sha256_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

std::string store_job(hid_t file) { return h5::has_attr(file, "kind") ? h5::get_attr_string(file, "kind") : "run"; }

void require_store_job(hid_t file, const std::string& job) {
  const std::string is = store_job(file);
  if (is != job)
    throw Error(h5::file_name(file), "is the store of 'ctxsim " + is + "', not of 'ctxsim " + job + "'",
                "give the store.h5 that 'ctxsim " + job + "' wrote");
}

std::vector<std::string> stores_under(const std::string& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() == "store.h5") found.push_back(e.path());
  std::sort(found.begin(), found.end());  // folder by folder: "p" before "p-x"
  return {found.begin(), found.end()};
}

StoreInfo inspect_store(const std::string& path) {
  const h5::FileScope scope(path);
  StoreInfo info;
  std::error_code ec;
  // A path the system cannot resolve (a symbolic-link loop, a name too long) is said with its fix.
  if (path_kind(path, path) == PathKind::Missing) return info;
  info.kind = StoreInfo::Kind::NotAStore;
  const hid_t f = std::filesystem::is_regular_file(path, ec) ? H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
  if (f < 0) {
    H5Eclear2(H5E_DEFAULT);
    info.what = describe_non_store(path);
    return info;
  }
  const h5::Id file(f, H5Fclose, "H5Fopen");
  if (!h5::has_attr(file, "config") || !h5::has_attr(file, "complete")) {
    info.what = "an HDF5 file that ctxsim did not write (no config and complete attributes)";
    return info;
  }
  info.kind = StoreInfo::Kind::Store;
  info.schema_version = h5::get_attr_int(file, "schema_version");
  const int64_t newest = store_schema_version();
  if (info.schema_version < 1 || info.schema_version > newest)
    throw Error(path,
                "schema_version " + std::to_string(info.schema_version) + ": this ctxsim reads schema 1 to " + std::to_string(newest) +
                    (info.schema_version > newest ? " (a newer ctxsim wrote it?)" : ""),
                "read it with the ctxsim that wrote it (its ctxsim_version attribute says which), or rerun 'ctxsim run'");
  info.complete = h5::get_attr_int(file, "complete") == 1;
  info.config_yaml = h5::get_attr_string(file, "config");
  info.job = store_job(file);
  for (auto [name, value] : {std::pair{"model_sha256", &info.model_sha256},
                             {"model_config_sha256", &info.model_config_sha256},
                             {"vocab_sha256", &info.vocab_sha256},
                             {"corpus_sha256", &info.corpus_sha256},
                             {"scores_sha256", &info.scores_sha256},
                             {"tokenizer_sha256", &info.tokenizer_sha256}})
    if (h5::has_attr(file, name)) *value = h5::get_attr_string(file, name);
  return info;
}

h5::Id open_complete_store(const std::string& path) {
  const StoreInfo info = inspect_store(path);
  if (!info.exists()) throw Error(path, "no store here", "give the store.h5 that 'ctxsim run' wrote (output.dir/store.h5)");
  if (info.kind == StoreInfo::Kind::NotAStore)
    throw Error(path, "not a ctxsim store: " + info.what, "give the store.h5 that 'ctxsim run' wrote (output.dir/store.h5)");
  if (!info.complete)
    throw Error(path, "the store is not complete (the run was interrupted or is still going)",
                "'ctxsim status " + path + "' says how far it got; rerun the same 'ctxsim run' to finish it");
  return h5::Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, ("open " + path).c_str());
}

void check_free_space(const std::string& dir, double bytes, const std::string& where) {
  // Test hook: let the writes meet the full disk themselves.
  if (const char* skip = std::getenv("CTXSIM_SKIP_SPACE_CHECK"); skip && std::string(skip) == "1") return;
  const double free_bytes = free_bytes_at(dir);
  if (free_bytes < 0 || free_bytes >= bytes * 1.05 + (16 << 20)) return;  // unknown: the writes will say
  throw Error(where,
              "no space for the store in " + dir + ": it needs about " + megabytes(bytes) + " (and 16 MB to spare), " +
                  megabytes(free_bytes) + " are free",
              "free space there or choose another output.dir ('ctxsim plan CONFIG' estimates the store's size)");
}

}  // namespace ctxsim
