// "LAYER:HEAD" lists of the command line (summary --heads, report --heads): one parser, one set
// of messages. Syntax is checked when parsed, the ranges against the model of the store.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ctxsim {

using HeadList = std::vector<std::pair<int64_t, int64_t>>;

// Each item "L:H" with L, H whole numbers >= 0; duplicates dropped, order kept. Throws
// ctxsim::Error naming `option` and the item.
HeadList parse_head_list(const std::vector<std::string>& items, const std::string& option = "--heads");

// Throws ctxsim::Error when a pair is outside a model of `layers` x `heads`.
void check_head_list(const HeadList& list, int64_t layers, int64_t heads, const std::string& option = "--heads");

}  // namespace ctxsim
