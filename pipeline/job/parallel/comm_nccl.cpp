// NCCL reductions for CUDA ranks (CTXSIM_CUDA=ON): the communicator is bootstrapped over MPI
// (rank 0 makes the unique id and broadcasts it), owns its CUDA stream, and reduces int64
// buffers on the device. Without CUDA this file only says how to get it.
#include "pipeline/job/parallel/comm.h"
#include "pipeline/job/parallel/log.h"
#include "stages/base/error.h"

#ifdef CTXSIM_WITH_CUDA
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace ctxsim {

#ifdef CTXSIM_WITH_CUDA
namespace {

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Error("CUDA", std::string(call) + ": " + cudaGetErrorString(e), "check the GPU and driver (nvidia-smi)");
}
void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error("NCCL", std::string(call) + ": " + ncclGetErrorString(r), "check NCCL_DEBUG=INFO output");
}

class NcclComm final : public Communicator {
 public:
  explicit NcclComm(MpiComm& world) : world_(world) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) throw Error("runtime.device: cuda", "no CUDA device is visible", "run on a GPU node or set runtime.device=cpu");
    // One rank per GPU: the local rank picks its device.
    MPI_Comm local;
    MPI_Comm_split_type(world.mpi(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    device_ = local_rank % devices;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id;
    if (world.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    world.broadcast(&id, sizeof id, 0);
    check_nccl(ncclCommInitRank(&comm_, world.size(), id, world.rank()), "ncclCommInitRank");
    check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }
  NcclComm(const NcclComm&) = delete;  // it owns its NCCL communicator, stream and buffer
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() override {
    if (buffer_) cudaFree(buffer_);
    if (stream_) cudaStreamDestroy(stream_);
    if (comm_) ncclCommDestroy(comm_);
  }
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.size(); }
  std::string name() const override { return "nccl (device " + std::to_string(device_) + ")"; }
  void allreduce(int64_t* data, size_t n, ReduceOp op) override {
    const ncclRedOp_t o = op == ReduceOp::Sum ? ncclSum : op == ReduceOp::Min ? ncclMin : ncclMax;
    run(data, n, [&](void* d) { check_nccl(ncclAllReduce(d, d, n, ncclInt64, o, comm_, stream_), "ncclAllReduce"); });
  }
  void reduce_sum_to_root(int64_t* data, size_t n) override {
    run(data, n, [&](void* d) { check_nccl(ncclReduce(d, d, n, ncclInt64, ncclSum, 0, comm_, stream_), "ncclReduce"); });
  }
  void broadcast(void* data, size_t bytes, int root) override { world_.broadcast(data, bytes, root); }
  void sum_to_all(float* data, size_t n) override { world_.sum_to_all(data, n); }  // host buffers: over MPI
  void sum_to_all(double* data, size_t n) override { world_.sum_to_all(data, n); }
  void barrier() override { world_.barrier(); }
  MPI_Comm mpi() const override { return world_.mpi(); }

 private:
  template <class F>
  void run(int64_t* host, size_t n, F&& op) {
    const size_t bytes = n * sizeof(int64_t);
    if (bytes > capacity_) {
      if (buffer_) cudaFree(buffer_);
      check_cuda(cudaMalloc(&buffer_, bytes), "cudaMalloc");
      capacity_ = bytes;
    }
    check_cuda(cudaMemcpyAsync(buffer_, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
    op(buffer_);
    check_cuda(cudaMemcpyAsync(host, buffer_, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  MpiComm& world_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  size_t capacity_ = 0;
  int device_ = 0;
};

// Whether some node runs more ranks than it has GPUs: NCCL refuses two ranks on one device, so
// then every rank reduces over MPI (decided together: NCCL's set-up is collective).
bool ranks_share_gpus(MpiComm& world) {
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  MPI_Comm local;
  MPI_Comm_split_type(world.mpi(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &local);
  int on_node = 1;
  MPI_Comm_size(local, &on_node);
  MPI_Comm_free(&local);
  int shared = on_node > devices ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MAX, world.mpi());
  return shared != 0;
}

}  // namespace
#endif

std::unique_ptr<Communicator> make_reduction_comm(MpiComm& world, bool cuda) {
  if (!cuda) return nullptr;  // the caller reduces over MPI
#ifdef CTXSIM_WITH_CUDA
  if (world.size() > 1 && ranks_share_gpus(world)) {
    log_info("more ranks than GPUs on a node: NCCL needs a GPU per rank, so the counts are reduced over MPI");
    return nullptr;
  }
  return std::make_unique<NcclComm>(world);
#else
  // A CUDA LibTorch without NCCL built in: the GPU ranks' counts reach the host once per flush
  // anyway, so MPI reduces them.
  (void)world;
  return nullptr;
#endif
}

std::string reduction_build_line() {
#ifdef CTXSIM_WITH_CUDA
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL built in (its version unknown)";
  // NCCL 2.9 and later: major * 10000 + minor * 100 + patch
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100) +
         " built in (GPU ranks reduce over it)";
#else
  return "NCCL not built in (-DCTXSIM_CUDA=OFF): ranks reduce over MPI";
#endif
}

}  // namespace ctxsim
