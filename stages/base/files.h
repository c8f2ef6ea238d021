// Files and text shared by the stages and the pipeline: the one whole-file reader, the one
// atomic writer (temporary file, rename, optionally fsync'ed), line splitting and joining.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ctxsim {

// Opens a user's input file for reading, refusing before any blocking read what is not a regular
// file: a folder, a FIFO (whose open would wait for a writer), a socket, a device. Returns the
// descriptor (blocking again, close-on-exec); throws ctxsim::Error naming `path` ("is a FIFO, not
// <what>") with `fix`.
int open_regular_file(const std::string& path, const std::string& what, const std::string& fix);

// Reads a user's input file (open_regular_file) to its end, handing each chunk to `chunk`; a read
// error is a ctxsim::Error naming `path`. What `chunk` throws ends the read (the file is closed).
void read_regular_file(const std::string& path, const std::string& what, const std::string& fix,
                       const std::function<void(std::string_view)>& chunk);

// The file's bytes; throws ctxsim::Error naming `path` when it cannot be opened, or when it holds
// more than max_bytes (a config, a header, a vocabulary: not data) — so that a path like
// /dev/zero cannot read without bound.
// `what` and `fix` word the error of a file that cannot be opened ("cannot open <what>").
std::string read_file_bytes(const std::string& path, size_t max_bytes = size_t(-1), const std::string& what = "the file",
                            const std::string& fix = "check that it exists and is readable");

// Limits of the inputs that are not data (read_file_bytes' max_bytes).
constexpr size_t kMaxConfigBytes = size_t(4) << 20;  // a YAML config, a job template
constexpr size_t kMaxJsonBytes = size_t(4) << 20;    // config.json, tokenizer_config.json
constexpr size_t kMaxVocabBytes = size_t(64) << 20;  // vocab.txt

// Writes `bytes` to `path` through a temporary file in the same folder renamed over it, so a
// reader sees the old file or the new one, never half. durable: the file is fsync'ed before the
// rename and the folder after it, every result checked (resume state, checkpoints). Throws
// ctxsim::Error naming the path, the system's reason and a fix (a full disk says so).
void atomic_write(const std::string& path, std::string_view bytes, bool durable = false);

// Creates the folder (and its parents) unless it exists; true when this call created it. Throws
// ctxsim::Error naming `where` (a key or an option) and the system's reason when it cannot:
// a path under a file, a read-only file system, no permission.
bool make_folder(const std::string& path, const std::string& where);

// What a path is, asked without throwing std::filesystem's exceptions: Missing when nothing is
// there; a path the system cannot resolve (a symbolic-link loop, a name longer than the file
// system allows, a part that is a file) throws ctxsim::Error naming `where` and the reason.
enum class PathKind { Missing, File, Folder, Other };
PathKind path_kind(const std::string& path, const std::string& where);
// The fix of a path the system cannot resolve (also main's, for std::filesystem's exceptions).
std::string unresolvable_path_fix(int err);

// A path resolved: absolute, symbolic links followed as far as it exists, no trailing separator
// ("x/" and "x" alike). What names a file or folder in a record (a page's source, a folder
// pretrain wrote).
std::string resolved_path(const std::string& path);
// Whether two paths name the same file or folder (existing or not): their resolved_path.
bool same_path(const std::string& a, const std::string& b);

// The items with `sep` between them; join_each spells each item with `text` first.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
template <class Range, class Text>
std::string join_each(const Range& items, Text&& text, std::string_view sep = ", ") {
  std::vector<std::string> parts;
  for (const auto& item : items) parts.push_back(text(item));
  return join(parts, sep);
}

// `s` in single quotes as a POSIX shell reads it back ('\'' for each quote inside): a word of a
// command line ctxsim writes (sbatch's, a store's command_line).
std::string shell_quote(const std::string& s);

// The lines of a text (vocab.txt, a list attribute): split at '\n', one trailing '\r' removed
// from each, no empty last line for a final '\n'.
std::vector<std::string> split_lines(std::string_view text);

}  // namespace ctxsim
