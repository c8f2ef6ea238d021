#include "stages/model/tensor_memory.h"

#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>
#include <torch/version.h>

#include <cstdlib>
#include <new>

namespace ctxsim {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// LibTorch 2.3 made Allocator::allocate non-const and added copy_data (clone()'s copy).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define CTXSIM_ALLOCATOR_2_3 1
#define CTXSIM_ALLOCATE_CONST
#else
#define CTXSIM_ALLOCATOR_2_3 0
#define CTXSIM_ALLOCATE_CONST const
#endif

// Small tensors as LibTorch's own allocator aligns them (64 bytes); large ones on 2 MB
// boundaries, advised as huge pages, whole pages only (a partial one at the end stays 4 KB).
class HugePageAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) CTXSIM_ALLOCATE_CONST override {
    void* p = allocate_bytes(n);
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
#if CTXSIM_ALLOCATOR_2_3
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#endif

 private:
  static void* allocate_bytes(size_t n) {
    if (n == 0) return nullptr;
    const bool huge = n >= kHugePage;
    void* p = nullptr;
    if (posix_memalign(&p, huge ? kHugePage : 64, n) != 0) throw std::bad_alloc();
    if (huge) ::madvise(p, n / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice: failure is harmless
    return p;
  }
  static void release(void* p) { std::free(p); }
};

}  // namespace

void use_huge_page_tensors() {
  static HugePageAllocator allocator;
  c10::SetCPUAllocator(&allocator, /*priority=*/1);
}

}  // namespace ctxsim
