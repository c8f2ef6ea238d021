// What this CPU computes natively, and the instruction-set level the process computes at.
// bfloat16 matmul runs on AVX512-BF16 or AMX-BF16 (without either, LibTorch emulates it some
// fifty times slower than float32). The ISA level (x86-64-v4 / v3 / baseline) is the best the CPU
// and OS support, capped by CTXSIM_ISA, so that one machine can run, and measure, the code every
// node of a mixed cluster runs: ctxsim's own kernels (stages/stats/head_rows.h) and the libraries it
// computes through (OpenBLAS's kernel set, ATen's vector kernels, oneDNN's JIT). No LibTorch.
#pragma once
#include <string>

#include "stages/base/precision.h"

namespace ctxsim {

struct CpuFeatures {
  bool avx512_bf16 = false;  // AVX512_BF16, with the OS saving AVX-512 state
  bool amx_bf16 = false;     // AMX-BF16, with the OS saving AMX tile state
  bool native_bf16() const { return avx512_bf16 || amx_bf16; }
  std::string describe() const;  // "avx512_bf16 amx_bf16" or "no native bfloat16"
};

// This CPU's features at the level in force (none below x86-64-v4). CTXSIM_HIDE_CPU_FEATURES=
// avx512_bf16,amx_bf16 hides them (a test hook that lets a machine that has them check the refusal).
CpuFeatures cpu_features();

// Throws ctxsim::Error naming `where` (the config key) when the precision is bfloat16, the run
// computes on the CPU (on_cpu) and the CPU has no native bfloat16: such a run would crawl.
void require_native_dtype(Precision precision, const std::string& where, bool on_cpu = true);

// Threads: any option accepts at most kMaxThreadsOption; in force are at most
// kThreadsPerCore x the cores this process may run on (more only thrash: OpenMP teams far larger
// than the machine spin and yield until a run effectively hangs).
constexpr int64_t kMaxThreadsOption = 4096;
constexpr int kThreadsPerCore = 4;
int usable_cores();  // the process's CPU affinity mask (all cores when it cannot be read), >= 1
// How many of those cores other processes keep busy: their user, system, interrupt and steal time
// (not nice time: a niced process yields to this one) over `ms` milliseconds of /proc/stat, the
// cores this process may use only, rounded to whole cores; 0 when /proc/stat cannot be read.
int cores_busy_elsewhere(int ms = 100);
// "warning: runtime.threads=4096 is more than 4 per core of the 2 this process may use: using 8",
// or "" when the count in force is what was asked (or nothing was).
std::string thread_cap_note(int64_t requested, int in_force, const std::string& key);

// The x86-64 micro-architecture levels ctxsim's kernels are compiled for (psABI names).
enum class IsaLevel { Baseline = 1, V3 = 3, V4 = 4 };
const char* isa_name(IsaLevel level);  // "x86-64-v4", "x86-64-v3", "baseline"

// The best level this CPU and its OS support (AVX-512 state saved for v4).
IsaLevel native_isa_level();

// The level in force: native_isa_level(), or lower when CTXSIM_ISA=x86-64-v3 | baseline (also
// v4, v3) says so. Throws ctxsim::Error naming CTXSIM_ISA for an unknown value or a level above
// the CPU's. Read once; later changes of the variable do not count.
IsaLevel isa_level();

// What configure_compute_libraries chose, for the logs, the store and the benchmarks.
struct ComputeSetup {
  IsaLevel level = IsaLevel::Baseline;
  bool forced = false;           // CTXSIM_ISA is set
  std::string blas;              // "OpenBLAS Cooperlake", with what overrode OpenBLAS's own pick
  std::string describe() const;  // "x86-64-v3 (CTXSIM_ISA; the CPU has x86-64-v4), BLAS: OpenBLAS Haswell (…)"
};

// Configures the libraries once, before any of them computes (main calls it first). Without
// CTXSIM_ISA nothing changes: each library picks for the CPU. With it, every library gets the
// level's kernel set, the same on every node that sets it (a mixed cluster that sets the lowest
// level computes the same bits everywhere, at the same thread count): ATEN_CPU_CAPABILITY
// (avx512, avx2, default) and ONEDNN_MAX_CPU_ISA (ALL, AVX2, SSE41), read at their first use, and
// OpenBLAS's kernel set (SkylakeX, Haswell, Prescott; re-initialised through its dynamic-arch
// entry points). A variable the user set wins. Returns the choice (the same object every call).
const ComputeSetup& configure_compute_libraries();

// How OpenMP's idle workers wait in this process, for the logs: "passive (ctxsim's default for
// this job)", the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT, or libgomp's default. main records
// whether ctxsim set it (pipeline/main.cpp says why and how).
void note_openmp_wait_policy(bool set_by_ctxsim);
std::string openmp_wait_policy();

}  // namespace ctxsim
