// The GEMM libraries on a model's linear layers (T = 128, batch B): OpenBLAS, BLIS and oneDNN's
// sgemm, each loaded by itself, timed on the four shapes of a layer (fused QKV, output, FFN in
// and out) of BERT-base or SmolLM2-135M (grouped K/V heads; a gated FFN: gate and up fused).
// Row-major Y[M, N] = X[M, K] W[N, K]ᵀ. Built and run by scripts/bench_gemm.sh.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*, const float*,
                       const int*, const float*, float*, const int*);
using DnnlSgemm = int (*)(char, char, long, long, long, float, const float*, long, const float*, long, float, float*, long);

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_gemm openblas|blis|dnnl LIBRARY [batch [bert-base|smollm2]]\n");
    return 2;
  }
  const std::string which = argv[1];
  const int M = (argc > 3 ? std::atoi(argv[3]) : 8) * 128;
  void* lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "bench_gemm: cannot load %s: %s\n", argv[2], dlerror());
    return 1;
  }
  const auto sgemm = which == "dnnl" ? nullptr : reinterpret_cast<Sgemm>(dlsym(lib, "sgemm_"));
  const auto dnnl = which == "dnnl" ? reinterpret_cast<DnnlSgemm>(dlsym(lib, "dnnl_sgemm")) : nullptr;
  if (!sgemm && !dnnl) {
    std::fprintf(stderr, "bench_gemm: no sgemm in %s\n", argv[2]);
    return 1;
  }
  const bool smollm2 = argc > 4 && std::string(argv[4]) == "smollm2";
  const std::vector<std::pair<int, int>> shapes =  // N, K
      smollm2 ? std::vector<std::pair<int, int>>{{960, 576}, {576, 576}, {3072, 576}, {576, 1536}}
              : std::vector<std::pair<int, int>>{{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  double flops = 0, seconds = 0;
  for (const auto& [N, K] : shapes) {
    std::vector<float> x(size_t(M) * K, 0.01f), w(size_t(N) * K, 0.02f), y(size_t(M) * N, 0.f);
    const auto run = [&] {
      const float one = 1, zero = 0;
      // Column-major BLAS: Yᵀ [N, M] = W [N, K] · Xᵀ.
      if (sgemm)
        sgemm("T", "N", &N, &M, &K, &one, w.data(), &K, x.data(), &K, &zero, y.data(), &N);
      else
        dnnl('N', 'T', M, N, K, 1.f, x.data(), K, w.data(), K, 0.f, y.data(), N);
    };
    run();
    int n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < 1.0) {
      run();
      ++n;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::printf("%-8s M=%d N=%d K=%d: %.1f GF/s\n", which.c_str(), M, N, K, 2.0 * M * N * K * n / elapsed / 1e9);
    flops += 2.0 * M * N * K;
    seconds += elapsed / n;
  }
  std::printf("%-8s all four shapes: %.1f GF/s\n", which.c_str(), flops / seconds / 1e9);
  return 0;
}
