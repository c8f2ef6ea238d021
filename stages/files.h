// Whole-file reading and line splitting shared by the stages and the pipeline.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ctxsim {

// The file's bytes; throws ctxsim::Error naming `path` when it cannot be opened.
std::string read_file_bytes(const std::string& path);

// The lines of a text (vocab.txt, a list attribute): split at '\n', one trailing '\r' removed
// from each, no empty last line for a final '\n'.
std::vector<std::string> split_lines(std::string_view text);

}  // namespace ctxsim
