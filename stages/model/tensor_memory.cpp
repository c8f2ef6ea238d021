#include "stages/model/tensor_memory.h"

#include <c10/core/CPUAllocator.h>
#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace ctxsim {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Small tensors as LibTorch's own allocator aligns them (64 bytes); large ones on 2 MB
// boundaries, advised as huge pages, whole pages only (a partial one at the end stays 4 KB).
class HugePageAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    void* p = allocate_bytes(n);
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

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
