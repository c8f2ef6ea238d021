// What this build computes on, for --version, without LibTorch in the header (model.cpp has the
// hooks it asks).
#pragma once
#include <string>

namespace ctxsim {

// This LibTorch's version and what it computes on, e.g. "LibTorch 1.13.0, CPU only (no CUDA built
// in)" or "LibTorch 2.14.1, CUDA 13.0 built in; no CUDA device present (no NVIDIA driver:
// libcuda.so.1 not found)".
std::string compute_build_line();

}  // namespace ctxsim
