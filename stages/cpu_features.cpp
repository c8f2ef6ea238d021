#include "stages/cpu_features.h"

#include <cstdlib>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "stages/error.h"

namespace ctxsim {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0: which register states the OS saves on a context switch (XGETBV needs OSXSAVE).
unsigned long long xcr0() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

bool hidden(const char* name) {
  const char* v = std::getenv("CTXSIM_HIDE_CPU_FEATURES");
  if (!v) return false;
  std::stringstream list(v);
  std::string item;
  while (std::getline(list, item, ','))
    if (item == name) return true;
  return false;
}

}  // namespace

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  const unsigned long long x = xcr0();
  const bool avx512_state = (x & 0xe6) == 0xe6;             // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
  const bool amx_state = (x & (3ull << 17)) == (3ull << 17);  // XTILECFG, XTILEDATA
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = avx512_state && (a & (1u << 5));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.amx_bf16 = amx_state && (d & (1u << 22));
#endif
  if (hidden("avx512_bf16")) f.avx512_bf16 = false;
  if (hidden("amx_bf16")) f.amx_bf16 = false;
  return f;
}

std::string CpuFeatures::describe() const {
  if (!native_bf16()) return "no native bfloat16";
  std::string s;
  if (avx512_bf16) s += "avx512_bf16";
  if (amx_bf16) s += std::string(s.empty() ? "" : " ") + "amx_bf16";
  return s;
}

void require_native_dtype(Precision precision, const std::string& where, bool on_cpu) {
  if (!on_cpu || precision != Precision::BFloat16 || cpu_features().native_bf16()) return;
  throw Error(where, "bfloat16 needs a CPU with avx512_bf16 or amx_bf16, and this one has neither: LibTorch would emulate "
                     "bfloat16 matmul, some fifty times slower than float32",
              "use float32 on this machine (float64 for count-for-count checks), or run bfloat16 on nodes whose "
              "/proc/cpuinfo lists avx512_bf16 or amx_bf16");
}

}  // namespace ctxsim
