// ctxsim's entry point: the allocator's settings, the MPI session, the command line
// (commands/cli.h), and the one place errors are caught: one line "ctxsim: error: …" and the
// exit code of its tier (stages/base/error.h).
#include <malloc.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>

#include "pipeline/commands/cli.h"
#include "pipeline/job/dist/agree.h"
#include "pipeline/job/dist/comm.h"
#include "pipeline/job/dist/log.h"
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
  } catch (const ctxsim::Error& e) { return fail(e.what(), ctxsim::kExitUserError); } catch (const std::filesystem::filesystem_error& e) {
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
