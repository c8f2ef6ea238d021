// What the CPU computes natively that decides whether a dtype is usable: bfloat16 matmul runs on
// AVX512-BF16 or AMX-BF16; without either, LibTorch emulates it some fifty times slower than
// float32. No LibTorch here.
#pragma once
#include <string>

#include "stages/precision.h"

namespace ctxsim {

struct CpuFeatures {
  bool avx512_bf16 = false;  // AVX512_BF16, with the OS saving AVX-512 state
  bool amx_bf16 = false;     // AMX-BF16, with the OS saving AMX tile state
  bool native_bf16() const { return avx512_bf16 || amx_bf16; }
  std::string describe() const;  // "avx512_bf16 amx_bf16" or "no native bfloat16"
};

// This CPU's features. CTXSIM_HIDE_CPU_FEATURES=avx512_bf16,amx_bf16 hides them (a test hook
// that lets a machine that has them check the refusal).
CpuFeatures cpu_features();

// Throws ctxsim::Error naming `where` (the config key) when the precision is bfloat16, the run
// computes on the CPU (on_cpu) and the CPU has no native bfloat16: such a run would crawl.
void require_native_dtype(Precision precision, const std::string& where, bool on_cpu = true);

}  // namespace ctxsim
