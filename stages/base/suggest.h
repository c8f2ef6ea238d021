// "Did you mean …?": the candidate closest to a mistyped word (an option, a key, a choice), by
// edit distance, for the fix of an error message.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace ctxsim {

// Levenshtein distance: insertions, deletions and substitutions of bytes.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate within a third of the word's length (1 to 3 edits) of it, the nearest first; ""
// when none is that near.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ctxsim
