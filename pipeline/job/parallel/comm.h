// The communicator of a run: rank, size and the few collectives ctxsim needs. MpiComm owns a
// duplicated MPI communicator; NcclComm (CUDA builds) reduces device buffers and is bootstrapped
// over MPI; LocalComm is the one-process world of tests and laptops. Precondition of every
// backend: all ranks call the same collectives in the same order.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ctxsim {

enum class ReduceOp { Sum, Min, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // In place on every rank.
  virtual void allreduce(int64_t* data, size_t n, ReduceOp op) = 0;
  // Sum into rank 0's buffer; other ranks' buffers are left unspecified.
  virtual void reduce_sum_to_root(int64_t* data, size_t n) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Floating-point sums over ranks, in place, the same bits on every rank (reduced at rank 0 in
  // one fixed order, then broadcast: an all-reduce may associate the sum differently per rank,
  // and data-parallel training needs every rank to hold bitwise the same weights).
  virtual void sum_to_all(float* data, size_t n) = 0;
  virtual void sum_to_all(double* data, size_t n) = 0;
  virtual void barrier() = 0;
  // The MPI communicator underneath (for MPI-IO); MPI_COMM_SELF for LocalComm.
  virtual MPI_Comm mpi() const = 0;
};

class MpiComm final : public Communicator {
 public:
  explicit MpiComm(MPI_Comm parent);  // duplicates parent
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;  // it owns its MPI communicator
  MpiComm& operator=(const MpiComm&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  void allreduce(int64_t* data, size_t n, ReduceOp op) override;
  void reduce_sum_to_root(int64_t* data, size_t n) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void sum_to_all(float* data, size_t n) override;
  void sum_to_all(double* data, size_t n) override;
  void barrier() override;
  MPI_Comm mpi() const override { return comm_; }
  int local_size() const { return local_size_; }  // ranks on this node
  int local_rank() const { return local_rank_; }  // this rank among them (its GPU)

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_size_ = 1, local_rank_ = 0;
};

class LocalComm final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "local"; }
  void allreduce(int64_t*, size_t, ReduceOp) override {}
  void reduce_sum_to_root(int64_t*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void sum_to_all(float*, size_t) override {}
  void sum_to_all(double*, size_t) override {}
  void barrier() override {}
  MPI_Comm mpi() const override { return MPI_COMM_SELF; }
};

// The communicator for the large accumulator reductions: NCCL on CUDA ranks when built with
// CTXSIM_CUDA; nullptr (reduce over MPI) on the CPU or in a build without NCCL.
std::unique_ptr<Communicator> make_reduction_comm(MpiComm& world, bool cuda);
// For --version: "NCCL 2.30.7 built in (GPU ranks reduce over it)", or that ranks reduce over MPI.
std::string reduction_build_line();

// What a launcher (mpirun, srun --mpi=pmix) tells this process before MPI starts: whether one
// started it at all, and the rank it gave (0 when none did).
bool started_by_launcher();
int launcher_rank();

// MPI for this process: initialised on first use, so a command that never needs it never starts
// it (funneled: only the main thread calls MPI), and finalised when the session object that main
// holds goes out of scope, after every communicator and HDF5 file of the command has closed.
class MpiSession {
 public:
  MpiSession() = default;
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  static void ensure();  // MPI_Init_thread, once
  // The environment Open MPI reads at MPI_Init, set for a process no launcher started (a
  // transport, an isolated singleton in a session folder of its own) and for every process (no
  // lockedfile component). main calls it first, before any thread starts: setenv while another
  // thread reads the environment is a data race (a run whose weights loaded beside MPI_Init
  // crashed in getenv), so nothing changes the environment after it.
  static void prepare_environment();
  // `env` arguments (-u NAME, NAME=VALUE) that give a program ctxsim starts (sbatch) the user's
  // environment as it was before prepare_environment and MPI_Init (a singleton's MPI_Init adds
  // OMPI_* and PMIX_* variables that would make the job's ranks take themselves for it).
  static std::vector<std::string> unset_arguments();
};

}  // namespace ctxsim
