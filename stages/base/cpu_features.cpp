#include "stages/base/cpu_features.h"

#include <dlfcn.h>
#include <sched.h>

#include <unistd.h>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "stages/base/error.h"

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
  const bool avx512_state = (x & 0xe6) == 0xe6;               // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
  const bool amx_state = (x & (3ull << 17)) == (3ull << 17);  // XTILECFG, XTILEDATA
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = avx512_state && (a & (1u << 5));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.amx_bf16 = amx_state && (d & (1u << 22));
#endif
  if (hidden("avx512_bf16")) f.avx512_bf16 = false;
  if (hidden("amx_bf16")) f.amx_bf16 = false;
  if (isa_level() != IsaLevel::V4) f.avx512_bf16 = f.amx_bf16 = false;  // CTXSIM_ISA caps oneDNN below both
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
  const std::string which =
      isa_level() == native_isa_level() ? "this one has neither" : std::string("CTXSIM_ISA=") + isa_name(isa_level()) + " excludes both";
  throw Error(where,
              "bfloat16 needs a CPU with avx512_bf16 or amx_bf16, and " + which +
                  ": LibTorch would emulate "
                  "bfloat16 matmul, some fifty times slower than float32",
              "use float32 on this machine (float64 for count-for-count checks), or run bfloat16 on nodes whose "
              "/proc/cpuinfo lists avx512_bf16 or amx_bf16");
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (n > 0) return n;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? int(online) : 1;
}

namespace {

// Per CPU: {busy, all} jiffies from /proc/stat's cpuN lines, for the CPUs in `set`.
std::vector<std::pair<uint64_t, uint64_t>> cpu_times(const cpu_set_t& set) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream in(line.substr(3));
    int cpu = -1;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!in || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) continue;
    const uint64_t busy = user + system + irq + softirq + steal;
    out.emplace_back(busy, busy + nice + idle + iowait);
  }
  return out;
}

}  // namespace

int cores_busy_elsewhere(int ms) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  const auto before = cpu_times(set);
  ::usleep(useconds_t(ms) * 1000);
  const auto after = cpu_times(set);
  if (before.empty() || before.size() != after.size()) return 0;
  double busy = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const uint64_t all = after[i].second - before[i].second;
    if (all > 0) busy += double(after[i].first - before[i].first) / double(all);
  }
  return int(busy + 0.5);
}

std::string thread_cap_note(int64_t requested, int in_force, const std::string& key) {
  if (requested <= 0 || in_force >= requested) return "";
  return "warning: " + key + "=" + std::to_string(requested) + " is more than " + std::to_string(kThreadsPerCore) + " per core of the " +
         std::to_string(usable_cores()) + " this process may use: using " + std::to_string(in_force);
}

const char* isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::V4: return "x86-64-v4";
    case IsaLevel::V3: return "x86-64-v3";
    case IsaLevel::Baseline: return "baseline";
  }
  return "baseline";
}

IsaLevel native_isa_level() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return IsaLevel::V4;  // libgcc checks the OS saves the state
  if (__builtin_cpu_supports("x86-64-v3")) return IsaLevel::V3;
#endif
  return IsaLevel::Baseline;
}

namespace {

IsaLevel read_isa_level() {
  const IsaLevel native = native_isa_level();
  const char* v = std::getenv("CTXSIM_ISA");
  if (!v || !*v) return native;
  const std::string s = v;
  IsaLevel want;
  if (s == "x86-64-v4" || s == "v4")
    want = IsaLevel::V4;
  else if (s == "x86-64-v3" || s == "v3")
    want = IsaLevel::V3;
  else if (s == "baseline" || s == "x86-64")
    want = IsaLevel::Baseline;
  else
    throw Error("CTXSIM_ISA=" + s, "not an instruction-set level", "use x86-64-v4, x86-64-v3 or baseline, or unset it");
  if (int(want) > int(native))
    throw Error("CTXSIM_ISA=" + s, std::string("this CPU runs at most ") + isa_name(native) + " code",
                std::string("use ") + isa_name(native) + " or lower, or unset it");
  return want;
}

bool same_name(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// OpenBLAS's kernel set for a forced level: the same set on every node that forces it.
const char* openblas_core_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::V4: return "SkylakeX";
    case IsaLevel::V3: return "Haswell";
    case IsaLevel::Baseline: return "Prescott";  // SSE3: every x86-64 CPU since 2005
  }
  return "Prescott";
}

// OpenBLAS (dynamic-arch builds) picks its kernel set when it loads, from the CPU or from
// OPENBLAS_CORETYPE; its exported gotoblas_dynamic_quit / _init redo that choice. Found by name,
// so any other BLAS (or a static OpenBLAS) is left as it is.
class OpenBlasCore {
 public:
  OpenBlasCore()
      : name_(reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_corename"))),
        quit_(reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"))),
        init_(reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"))) {}
  bool found() const { return name_ != nullptr; }
  bool switchable() const { return name_ && quit_ && init_; }
  std::string name() const { return name_(); }
  // Re-initialises with OPENBLAS_CORETYPE = core ("" = OpenBLAS's own pick); the variable is
  // left as it was.
  void reinit(const std::string& core) {
    const char* v = std::getenv("OPENBLAS_CORETYPE");
    const std::string before = v ? v : "";
    if (core.empty())
      unsetenv("OPENBLAS_CORETYPE");
    else
      setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    quit_();
    init_();
    if (v)
      setenv("OPENBLAS_CORETYPE", before.c_str(), 1);
    else
      unsetenv("OPENBLAS_CORETYPE");
  }

 private:
  char* (*name_)();
  void (*quit_)();
  void (*init_)();
};

// A LibTorch without OpenBLAS: pip's and pytorch.org's x86 builds carry MKL (its level follows
// MKL_ENABLE_INSTRUCTIONS, which configure_compute_libraries sets for a forced level).
std::string other_blas(bool forced) {
  using VersionString = void (*)(char*, int);
  const auto mkl = reinterpret_cast<VersionString>(dlsym(RTLD_DEFAULT, "MKL_Get_Version_String"));
  if (!mkl) return "not OpenBLAS (as linked)";
  char text[200] = {0};
  mkl(text, sizeof text - 1);
  std::string version(text);
  const auto cut = version.find("-Product");  // "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build …"
  if (cut != std::string::npos) version.resize(cut);
  const auto name = version.find("Version ");
  if (name != std::string::npos) version = version.substr(name + 8);
  const char* isa = std::getenv("MKL_ENABLE_INSTRUCTIONS");
  return "MKL " + version + " (LibTorch's own" + (forced && isa ? std::string("; MKL_ENABLE_INSTRUCTIONS=") + isa : std::string()) + ")";
}

// Sets OpenBLAS's kernel set for a forced level, and says what runs: the kernel set, and
// OpenBLAS's own pick when OPENBLAS_CORETYPE (which wins) or CTXSIM_ISA overrides it (an
// environment can set OPENBLAS_CORETYPE unseen).
std::string configure_openblas(bool forced, IsaLevel level) {
  OpenBlasCore blas;
  if (!blas.found()) return other_blas(forced);
  const std::string first = blas.name();
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  if (!blas.switchable()) return "OpenBLAS " + first;
  if (user && *user) {
    blas.reinit("");
    const std::string own = blas.name();
    blas.reinit(user);
    return "OpenBLAS " + first + " (set by OPENBLAS_CORETYPE=" + user + "; OpenBLAS's own pick here: " + own + ")";
  }
  if (same_name(first, openblas_core_for(level))) return "OpenBLAS " + first;
  // Prescott is also OpenBLAS's pick for a CPU it does not know (0.3.21 on Intel's Emerald Rapids,
  // model 207): SSE3 kernels on an AVX-512 CPU, 5x slower for BERT's matmuls. Such a CPU gets the
  // kernel set of its level, as a forced level does.
  const bool fallback = same_name(first, "Prescott") && level != IsaLevel::Baseline;
  if (!forced && !fallback) return "OpenBLAS " + first;
  blas.reinit(openblas_core_for(level));
  return "OpenBLAS " + blas.name() + (forced ? " (CTXSIM_ISA" : " (this CPU's level: OpenBLAS does not know the CPU") +
         "; OpenBLAS's own pick here: " + first + ")";
}

}  // namespace

IsaLevel isa_level() {
  static const IsaLevel level = read_isa_level();
  return level;
}

std::string ComputeSetup::describe() const {
  std::string s = isa_name(level);
  if (forced) s += std::string(" (CTXSIM_ISA; the CPU has ") + isa_name(native_isa_level()) + ")";
  return s + ", BLAS: " + blas;
}

const ComputeSetup& configure_compute_libraries() {
  static const ComputeSetup setup = [] {
    ComputeSetup c;
    c.level = isa_level();
    const char* isa = std::getenv("CTXSIM_ISA");
    c.forced = isa && *isa;
    if (c.forced) {
      // Read at the libraries' first use; a value the user set wins.
      const bool v4 = c.level == IsaLevel::V4, v3 = c.level == IsaLevel::V3;
      setenv("ATEN_CPU_CAPABILITY", v4 ? "avx512" : v3 ? "avx2" : "default", 0);
      setenv("ONEDNN_MAX_CPU_ISA", v4 ? "ALL" : v3 ? "AVX2" : "SSE41", 0);
      setenv("MKL_ENABLE_INSTRUCTIONS", v4 ? "AVX512" : v3 ? "AVX2" : "SSE4_2", 0);  // a pip LibTorch's BLAS
    }
    c.blas = configure_openblas(c.forced, c.level);
    return c;
  }();
  return setup;
}

namespace {
std::string g_openmp_wait;
}

void note_openmp_wait_policy(bool set_by_ctxsim) {
  if (set_by_ctxsim) {
    g_openmp_wait = "passive (ctxsim's default for this job)";
    return;
  }
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spins = std::getenv("GOMP_SPINCOUNT");
  g_openmp_wait = policy ? std::string("OMP_WAIT_POLICY=") + policy : "";
  if (spins) g_openmp_wait += (g_openmp_wait.empty() ? "" : ", ") + std::string("GOMP_SPINCOUNT=") + spins;
  if (g_openmp_wait.empty()) g_openmp_wait = "spin, then sleep (libgomp's default)";
}

std::string openmp_wait_policy() { return g_openmp_wait.empty() ? "spin, then sleep (libgomp's default)" : g_openmp_wait; }

}  // namespace ctxsim
