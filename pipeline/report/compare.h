// `ctxsim compare STORE|FOLDER …`: several finished runs drawn together (e.g. a trained model,
// its step-0 init and another random seed on the same samples): per-layer distance distributions
// against chance, same-sentence and repetition lift, distinct anchors, attention on each
// separator, attention overlap and noise share, as PNG + SVG figures and one self-contained
// compare.html. Stores whose layers or sample length differ are refused with the store named.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ctxsim {

struct CompareArgs {
  std::string out_dir;                  // required: compare.html and figures/ go here
  std::vector<std::string> labels;      // one per store, in order (default: the store's folder)
  std::string rule;                     // the rule every store must have (default: the first store's first)
  std::string title = "ctxsim compare";
  std::string note;                     // a paragraph under the title (what to read in the page)
  int64_t max_bytes = 25 << 20;         // compare.html budget
};
// `inputs`: store.h5 files, or folders searched for complete ones (sorted).
int cmd_compare(const std::vector<std::string>& inputs, const CompareArgs& args, std::ostream& out);

}  // namespace ctxsim
