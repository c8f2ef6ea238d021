#include "pipeline/job/durable/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stages/base/digest.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/model/safetensors.h"  // sha256_bytes

namespace ctxsim {
namespace {

constexpr char kMagic[8] = {'C', 'T', 'X', 'S', 'I', 'M', 'P', '2'};

template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
bool get(const std::string& s, size_t& pos, T& v) {
  if (pos + sizeof v > s.size()) return false;
  std::memcpy(&v, s.data() + pos, sizeof v);
  pos += sizeof v;
  return true;
}

}  // namespace

std::string checkpoint_path(const std::string& store_path) { return store_path + ".progress"; }

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  std::string s(kMagic, sizeof kMagic);
  put(s, uint64_t(c.identity.size()));
  s += c.identity;
  put(s, c.generation);
  put(s, uint64_t(c.done.size()));
  s.append(reinterpret_cast<const char*>(c.done.data()), c.done.size());
  // The accumulators are mostly zeros (anchor counts over the vocabulary): store the non-zero
  // entries as (index, value) pairs, which keeps each flush small and quick.
  put(s, uint64_t(c.acc.size()));
  uint64_t nonzero = 0;
  for (int64_t v : c.acc) nonzero += v != 0;
  put(s, nonzero);
  for (size_t i = 0; i < c.acc.size(); ++i)
    if (c.acc[i] != 0) {
      put(s, uint64_t(i));
      put(s, c.acc[i]);
    }
  s += sha256_bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  // The bytes are durable before the new state replaces the old, and the rename itself too.
  atomic_write(path, s, /*durable=*/true);
}

namespace {

// The state in `s` (checksum checked), or a description of what is wrong with it.
std::optional<Checkpoint> parse_checkpoint(const std::string& s, std::string& problem) {
  if (s.size() < sizeof kMagic + 64 || std::memcmp(s.data(), kMagic, sizeof kMagic) != 0) {
    problem = "not a ctxsim resume state (no CTXSIMP2 header)";
    return std::nullopt;
  }
  const std::string body = s.substr(0, s.size() - 64);
  problem = "damaged (its checksum does not match)";
  if (sha256_bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size()) != s.substr(s.size() - 64)) return std::nullopt;
  problem = "malformed (sizes do not add up)";
  Checkpoint c;
  size_t pos = sizeof kMagic;
  uint64_t n = 0;
  if (!get(body, pos, n) || n > body.size() - pos) return std::nullopt;
  c.identity = body.substr(pos, n);
  pos += n;
  if (!get(body, pos, c.generation) || !get(body, pos, n) || n > body.size() - pos) return std::nullopt;
  c.done.assign(body.begin() + long(pos), body.begin() + long(pos + n));
  pos += n;
  uint64_t nonzero = 0;
  if (!get(body, pos, n) || !get(body, pos, nonzero) || nonzero > (body.size() - pos) / 16 || pos + nonzero * 16 != body.size() ||
      n > (uint64_t(1) << 36))
    return std::nullopt;
  c.acc.assign(n, 0);
  for (uint64_t k = 0; k < nonzero; ++k) {
    uint64_t i = 0;
    int64_t v = 0;
    get(body, pos, i);
    get(body, pos, v);
    if (i >= n) return std::nullopt;
    c.acc[i] = v;
  }
  problem.clear();
  return c;
}

}  // namespace

std::optional<Checkpoint> read_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return std::nullopt;
  const std::string fix = "restore it, or delete it to start the run over";
  if (std::filesystem::is_directory(path, ec)) throw Error(path, "the resume state is a folder", "delete it to start the run over");
  const std::string bytes =
      read_file_bytes(path, size_t(-1), "the resume state", "restore its permissions, or delete it to start the run over");
  std::string problem;
  auto c = parse_checkpoint(bytes, problem);
  if (!c) throw Error(path, "the resume state is " + problem, fix);
  return c;
}

}  // namespace ctxsim
