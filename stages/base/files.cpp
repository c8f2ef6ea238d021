#include "stages/base/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

std::string reason(int err) { return std::strerror(err); }

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !host[0]) return "host";
  std::string h = host;
  for (char& ch : h)
    if (ch == '/' || ch == '.') ch = '_';
  return h;
}

// Files named <prefix><pid>.XXXXXX whose process is gone (this host's, so the pid means it).
void remove_dead_writers_files(const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string(), stem = p.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, stem.size(), stem) != 0) continue;
    char* stop = nullptr;
    const long pid = std::strtol(name.c_str() + stem.size(), &stop, 10);
    if (pid <= 0 || *stop != '.' || std::strlen(stop) != 7) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask about
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

// The process's umask, read without changing it (umask(2) can only set it, and setting it back
// races with other threads creating files): Linux reports it in /proc/self/status.
mode_t process_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) return mode_t(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
  return 022;
}

std::string fix_for(int err) {
  if (err == ENOSPC || err == EDQUOT) return "free space on that file system (or write elsewhere)";
  if (err == EACCES || err == EPERM || err == EROFS) return "write to a folder you may write to (this one is read-only or not yours)";
  return "check that the folder exists and is writable";
}

// Closes fd on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void fsync_checked(const std::string& path, int flags, const std::string& what) {
  Fd f{::open(path.c_str(), flags | O_CLOEXEC)};
  if (f.fd < 0 || ::fsync(f.fd) != 0) {
    const int e = errno;
    throw Error(path, "cannot make " + what + " durable (fsync): " + reason(e), fix_for(e));
  }
}

}  // namespace

int open_regular_file(const std::string& path, const std::string& what, const std::string& fix) {
  const std::string noun = what == "the file" ? "a file" : what;
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    if (e == ENXIO) throw Error(path, "is a socket or a device without a reader, not " + noun, fix);
    if (e == EISDIR) throw Error(path, "is a folder, not " + noun, fix);
    throw Error(path, "cannot open " + what + ": " + reason(e), fix);
  }
  struct stat st {};
  const char* kind = nullptr;
  if (::fstat(fd, &st) != 0)
    kind = "cannot be examined (fstat failed)";
  else if (S_ISDIR(st.st_mode))
    kind = "is a folder";
  else if (S_ISFIFO(st.st_mode))
    kind = "is a FIFO (a named pipe)";
  else if (S_ISSOCK(st.st_mode))
    kind = "is a socket";
  else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
    kind = "is a device";
  else if (!S_ISREG(st.st_mode))
    kind = "is not a regular file";
  if (kind || ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    ::close(fd);
    throw Error(path, std::string(kind ? kind : "cannot be read") + ", not " + noun, fix);
  }
  return fd;
}

void read_regular_file(const std::string& path, const std::string& what, const std::string& fix,
                       const std::function<void(std::string_view)>& chunk) {
  Fd f{open_regular_file(path, what, fix)};
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(path, "read error: " + reason(errno), "check the file and the disk");
    if (n == 0) return;
    chunk(std::string_view(buffer, size_t(n)));
  }
}

std::string read_file_bytes(const std::string& path, size_t max_bytes, const std::string& what, const std::string& fix) {
  std::string out;
  read_regular_file(path, what, fix, [&](std::string_view bytes) {
    out.append(bytes);
    if (out.size() > max_bytes)
      throw Error(path, "is longer than " + std::to_string(max_bytes) + " bytes, too long for what it should be",
                  "point at the right file (a config, config.json or vocab.txt is far smaller)");
  });
  return out;
}

void atomic_write(const std::string& path, std::string_view bytes, bool durable) {
  namespace fs = std::filesystem;
  // A temporary name of this writer's own, PATH.tmp.<host>.<pid>.XXXXXX: two writers of one path
  // (two reports into one folder) never write into each other's file; the last rename wins
  // whole. A killed writer's file is removed by the next writer of the path on its host.
  const std::string prefix = path + ".tmp." + host_name() + ".";
  remove_dead_writers_files(prefix);
  std::string tmp = prefix + std::to_string(::getpid()) + ".XXXXXX";
  {
    Fd f{::mkostemp(tmp.data(), O_CLOEXEC)};
    if (f.fd < 0) {
      const int e = errno;
      throw Error(path, "cannot write: " + reason(e), fix_for(e));
    }
    // mkostemp makes the file 0600; what is published gets the mode a plain new file would.
    if (::fchmod(f.fd, 0666 & ~process_umask()) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      throw Error(path, "cannot write: " + reason(e), fix_for(e));
    }
    for (size_t done = 0; done < bytes.size();) {
      const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : EIO;
        ::unlink(tmp.c_str());
        throw Error(path, "cannot write: " + reason(e), fix_for(e));
      }
      done += size_t(n);
    }
    if (durable && ::fsync(f.fd) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      throw Error(path, "cannot make the file durable (fsync): " + reason(e), fix_for(e));
    }
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) {
      const int e = errno;
      ::unlink(tmp.c_str());
      throw Error(path, "cannot write: " + reason(e), fix_for(e));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw Error(path, "cannot move the new file into place: " + reason(e), fix_for(e));
  }
  if (durable) {
    const std::string dir = fs::path(path).parent_path().string();
    fsync_checked(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY, "the rename");
  }
}

bool make_folder(const std::string& path, const std::string& where) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return false;
  if (fs::exists(path, ec)) throw Error(where, "'" + path + "' exists and is not a folder", "choose another path, or move that file away");
  const bool made = fs::create_directories(path, ec);
  if (ec) {
    const int e = ec.value();
    throw Error(where, "cannot create the folder '" + path + "': " + ec.message(),
                e == ENOTDIR ? "a part of that path is a file, not a folder: choose another path" : fix_for(e));
  }
  return made;
}

std::string unresolvable_path_fix(int err) {
  if (err == ELOOP) return "a symbolic link in it points back at itself (a loop): fix or remove the link";
  if (err == ENAMETOOLONG) return "a name in it is longer than the file system allows (255 bytes a name, 4096 a path): shorten it";
  if (err == ENOTDIR) return "a part of it is a file, not a folder: check the path";
  if (err == EACCES) return "a folder on the way may not be searched: check the permissions";
  return "check the path";
}

PathKind path_kind(const std::string& path, const std::string& where) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw Error(where, "cannot use the path '" + (path.size() > 300 ? path.substr(0, 300) + "…" : path) + "': " + ec.message(),
                unresolvable_path_fix(ec.value()));
  switch (st.type()) {
    case fs::file_type::not_found: return PathKind::Missing;
    case fs::file_type::regular: return PathKind::File;
    case fs::file_type::directory: return PathKind::Folder;
    default: return PathKind::Other;
  }
}

std::string resolved_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  const fs::path c = fs::weakly_canonical(p, ec);
  if (!ec) p = c.lexically_normal();
  if (!p.has_filename() && p != p.root_path()) p = p.parent_path();
  return p.string();
}

bool same_path(const std::string& a, const std::string& b) { return resolved_path(a) == resolved_path(b); }

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += sep;
    s += items[i];
  }
  return s;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    pos = end + 1;
  }
  return out;
}

}  // namespace ctxsim
