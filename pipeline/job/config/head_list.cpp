#include "pipeline/job/config/head_list.h"

#include <algorithm>
#include <charconv>

#include "stages/base/error.h"

namespace ctxsim {
namespace {

// A whole number that fills `text`, or -1.
int64_t whole(const std::string& text) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) return -1;
  return v;
}

}  // namespace

HeadList parse_head_list(const std::vector<std::string>& items, const std::string& option) {
  HeadList out;
  for (const auto& item : items) {
    const size_t colon = item.find(':');
    const int64_t l = colon == std::string::npos ? -1 : whole(item.substr(0, colon));
    const int64_t h = colon == std::string::npos ? -1 : whole(item.substr(colon + 1));
    if (l < 0 || h < 0)
      throw Error(option + " " + item, "'" + item + "' is not LAYER:HEAD (two whole numbers, 0-based)",
                  "write e.g. " + option + " 0:3,11:0");
    if (std::find(out.begin(), out.end(), std::make_pair(l, h)) == out.end()) out.emplace_back(l, h);
  }
  return out;
}

void check_head_list(const HeadList& list, int64_t layers, int64_t heads, const std::string& option) {
  for (const auto& [l, h] : list)
    if (l >= layers || h >= heads)
      throw Error(option + " " + std::to_string(l) + ":" + std::to_string(h),
                  "not a LAYER:HEAD pair of this model (" + std::to_string(layers) + " layers, " + std::to_string(heads) + " heads)",
                  "give e.g. " + option + " 0:0," + std::to_string(layers - 1) + ":" + std::to_string(heads - 1));
}

}  // namespace ctxsim
