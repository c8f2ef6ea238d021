// Where LibTorch's CPU tensors live: a CPU allocator that backs every tensor of 2 MB or more with
// transparent huge pages (madvise), so that the weights and the forward's per-layer temporaries
// fault in 2 MB at a time instead of 4 KB. On a VM a page fault costs microseconds: with 4 KB
// pages the first batch and the model load were mostly faults. No LibTorch in this header.
#pragma once

namespace ctxsim {

// Installs the allocator for the whole process (main calls it once, before any tensor exists).
// Harmless where the kernel has no transparent huge pages (madvise is advice).
void use_huge_page_tensors();

}  // namespace ctxsim
