// A figure of a page and where it goes: figures/<stem>.svg and .png, with its caption. Shared by
// the report (one store), compare (several) and the segmentation pages.
#pragma once
#include <string>

#include "stages/figures/figure.h"

namespace ctxsim::report {

struct Entry {
  std::string stem, caption;
  Figure figure;
};

}  // namespace ctxsim::report
