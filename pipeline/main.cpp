// ctxsim's entry point: the allocator's settings, the MPI session, the command line
// (commands/cli.h), and the one place errors are caught: one line "ctxsim: error: …" and the
// exit code of its tier (stages/base/error.h).
#include <malloc.h>
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>

#include "pipeline/commands/cli.h"
#include "pipeline/job/parallel/agree.h"
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "pipeline/job/parallel/provenance.h"
#include "pipeline/store/hdf5.h"
#include "stages/base/cpu_features.h"
#include "stages/base/error.h"
#include "stages/base/files.h"
#include "stages/model/tensor_memory.h"

#if defined(__SANITIZE_ADDRESS__)
#define CTXSIM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CTXSIM_UNDER_ASAN 1
#endif
#endif

namespace {

// ------------------------------------------------------------ OpenMP's wait policy --------
// The long jobs' OpenMP workers (LibTorch's and OpenBLAS's libgomp threads) wait passively
// between parallel regions unless the user chose otherwise. libgomp spins ~3 ms after every
// region by default; segment and pretrain run small models (many short regions with serial work
// between them), and wherever another process holds a core the spinning takes the cycles that
// work needs. Measured on 2 cores with one kept busy by another process: segment (20 documents)
// 51.8 s spinning vs 13-20 s passive, pretrain 41.5 vs 13-19 s (the spread is the busy host's);
// on an idle machine the same within noise (runtime.threads=1 is faster still on a busy one:
// 8.8 s and 9.5 s).
//
// libgomp reads OMP_WAIT_POLICY once, in its constructor, before main, and glibc has not yet set
// up the environment when the executable's .preinit_array runs (setenv there is lost). So the
// one way in is to start again with the variable set: from .preinit_array, before any library's
// constructor has run (LibTorch's operator registration is most of a start), the process execs
// itself with OMP_WAIT_POLICY=PASSIVE added (same pid, so mpiexec and srun still know it;
// ~0.3 s here). Only for segment and pretrain: run's start-up is measured against the bare
// forward, and run is the same with either policy on a dedicated node (docs/CLUSTER.md: a shared one sets
// OMP_WAIT_POLICY=passive or runtime.threads=1).
constexpr char kDefaultMarker[] = "CTXSIM_OPENMP_DEFAULT";

bool in_environment(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return true;
  return false;
}

void start_with_passive_openmp(int argc, char** argv, char** envp) {
  if (argc < 2 || (std::strcmp(argv[1], "segment") != 0 && std::strcmp(argv[1], "pretrain") != 0)) return;
  if (in_environment(envp, "OMP_WAIT_POLICY") || in_environment(envp, "GOMP_SPINCOUNT") || in_environment(envp, kDefaultMarker)) return;
  size_t n = 0;
  while (envp && envp[n]) ++n;
  // No allocator yet: the new environment lives on this frame, which execve replaces.
  char** env = static_cast<char**>(__builtin_alloca((n + 3) * sizeof(char*)));
  for (size_t i = 0; i < n; ++i) env[i] = envp[i];
  static char policy[] = "OMP_WAIT_POLICY=PASSIVE";
  static char marker[] = "CTXSIM_OPENMP_DEFAULT=1";
  env[n] = policy;
  env[n + 1] = marker;
  env[n + 2] = nullptr;
  execve("/proc/self/exe", argv, env);  // returns only if it failed: go on with libgomp's default
}
__attribute__((section(".preinit_array"), used)) void (*const kStartWithPassiveOpenMp)(int, char**, char**) = start_with_passive_openmp;

// An error only this rank knows about: report it once and, when other ranks may be waiting in
// a collective, end the whole job instead of leaving them to hang.
int fail(const std::string& message, int code) {
  ctxsim::log_error(message);
  int ready = 0, finalized = 0, size = 1;
  MPI_Initialized(&ready);
  MPI_Finalized(&finalized);
  if (ready && !finalized) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  return code;
}

// The command, and the one place its errors become a message and an exit code.
int run(int argc, char** argv) {
  try {
    // Before any library computes: the ISA level (CTXSIM_ISA) and the BLAS kernel set.
    ctxsim::configure_compute_libraries();
    return ctxsim::run_command_line(argc, argv);
  } catch (const ctxsim::JobExit& e) {
    return e.code();  // every rank agreed to stop; the reason is already printed
  } catch (const ctxsim::UsageError& e) { return fail(e.what(), ctxsim::kExitUsage); } catch (const ctxsim::Error& e) {
    return fail(e.what(), ctxsim::kExitUserError);
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave (or its file system) that the system refused: not a bug.
    const std::string path = e.path1().string();
    return fail((path.size() > 300 ? path.substr(0, 300) + "…" : path) + ": " + e.code().message() +
                    "; fix: " + ctxsim::unresolvable_path_fix(e.code().value()),
                ctxsim::kExitUserError);
  } catch (const std::bad_alloc&) {
    return fail(
        "out of memory; fix: run it on a machine (or with ranks) with more memory, or make it smaller (runtime.batch_size, "
        "samples.seq_len); a store, checkpoint or corpus from elsewhere may also be damaged and claim huge sizes",
        ctxsim::kExitUserError);
  } catch (const ctxsim::InternalError& e) {
    return fail(std::string("internal error at ") + e.what() + " (a bug: please report it with the command line)", ctxsim::kExitInternal);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what() + " (please report it with the command line)", ctxsim::kExitInternal);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // LibTorch's multi-MB per-layer temporaries would otherwise get a fresh mmap (and page
  // faults) on every use under glibc's default thresholds; keep them on the heap. 32 MB is the
  // largest threshold glibc accepts on 64-bit (it refuses more and keeps its default).
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 512 << 20) != 1)
    std::cerr << "ctxsim: warning: mallopt refused the allocator thresholds; runs may be slower\n";
  ctxsim::use_huge_page_tensors();
  ctxsim::record_command_line(argc, argv);
  // The policy libgomp read; what this process starts gets the user's environment as it was.
  const bool passive_by_default = std::getenv(kDefaultMarker) != nullptr;
  ctxsim::note_openmp_wait_policy(passive_by_default);
  if (passive_by_default) unsetenv("OMP_WAIT_POLICY"), unsetenv(kDefaultMarker);
  // `run` starts loading its weights in threads before MPI starts (the early load): the
  // environment Open MPI reads is set before them, the last change to it. Other commands set it
  // in MpiSession::ensure, before any thread of theirs.
  if (argc > 1 && std::strcmp(argv[1], "run") == 0) ctxsim::MpiSession::prepare_environment();
  int rc = 0;
  {
    const ctxsim::MpiSession mpi;  // finalises MPI, if a command started it, after the command
    rc = run(argc, argv);
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(CTXSIM_UNDER_ASAN)
  if (!ctxsim::h5::file_close_failed()) return rc;  // LeakSanitizer's check runs at exit
#endif
  // Everything the command wrote is closed and MPI is finalised: the process ends without the
  // static destructors, which would only take LibTorch's thousands of operators back out of its
  // dispatcher and free memory the kernel reclaims anyway (0.2-0.3 s of every command). It also
  // keeps HDF5's exit handler away from a file it could not close, which it would crash on.
  std::_Exit(rc);
}
