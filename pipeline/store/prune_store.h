// The store of `ctxsim prune` (docs/STORE.md "Pruning store", SPEC §8): per work unit the sums
// each unit contributes (written by the rank that computed it, through MPI-IO like every store,
// so that a resume or another rank count writes the same rows), and at the end the results, summed
// over the units in unit order by rank 0: importance, ablation, entropy and the curves.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/store/dataset_spec.h"
#include "pipeline/store/hdf5.h"
#include "pipeline/store/store_file.h"

namespace ctxsim {

struct PruneLayout {
  int64_t units = 0, layers = 0, heads = 0;
  std::vector<std::string> orders;  // the unit curves' orders: importance, ablation, entropy, [score:<name>], random:1 … random:R
  int64_t fractions = 10;           // 0, 0.1, …, 0.9
  int64_t heads_total() const { return layers * heads; }
};

// The store's datasets, one row each (dataset_spec.h; docs/STORE.md "Pruning store").
const std::vector<DatasetSpec>& prune_datasets();

// About how many bytes a pruning store of this layout takes, for the free-space check.
double prune_store_bytes(const PruneLayout& layout);

// One unit's first pass: the full model's loss, each head's |∂L/∂ξ| and entropy summed over the
// unit's samples, and the loss and correct predictions with each head alone removed.
struct PrunePass1 {
  double loss = 0;
  int64_t correct = 0, predicted = 0;
  std::vector<double> importance, entropy, ablation_loss;  // [L*H]
  std::vector<int64_t> ablation_correct;                   // [L*H]
};
// One unit's curves: loss and correct predictions for every order and fraction.
// The ctxsim scores among a list of orders (score:<name>), in order.
std::vector<std::string> score_names(const std::vector<std::string>& orders);

struct PrunePass2 {
  std::vector<double> loss;      // [O*F]
  std::vector<int64_t> correct;  // [O*F]
};

// What the store ends with (rank 0's values are written).
struct PruneResults {
  double full_loss = 0, full_accuracy = 0;  // mean over predicted positions
  int64_t predicted = 0;
  std::vector<double> importance, importance_normalised, ablation_loss, entropy;  // [L*H]
  std::vector<std::string> curve_orders;                         // C: importance, ablation, entropy, [score], random (mean)
  std::vector<double> curve_loss, curve_accuracy;                // [C*F]
  std::vector<double> curve_loss_random, curve_accuracy_random;  // [R*F]
  std::vector<int64_t> order_heads;                              // [O * L*H] the unit orders, first removed first
  std::vector<double> score;                                     // [S * L*H] the score orders' values, in order; empty: none
};

class PruneStore final : public StoreFile {
 public:
  // Collective. A new store under <path>.creating, renamed over path once every dataset is there.
  static PruneStore create(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout, const StoreAttributes& attrs);
  static PruneStore open(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout);
  PruneStore(PruneStore&&) = default;

  // Collective: unit u's row (nullptr: nothing from this rank this round).
  void write_pass1(int64_t u, const PrunePass1* row);
  void write_pass2(int64_t u, const PrunePass2* row);
  // Every rank: the rows of units [0, units) read back (after a flush).
  std::vector<PrunePass1> read_pass1();
  std::vector<PrunePass2> read_pass2();
  // Collective: the unit orders (known after pass 1), then the results.
  void write_orders(const std::vector<int64_t>& order_heads);
  void write_results(const PruneResults& r);

 private:
  PruneStore(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout);
  PruneStore(const std::string& path, MPI_Comm comm, int rank, const PruneLayout& layout, const StoreAttributes& attrs);
  // finish's results_sha256: every rank reads the results back.
  std::string results_digest_now() override;
  PruneLayout layout_;
};

// A complete pruning store read back (summary, report), every shape checked before reading.
struct PruneStoreData {
  PruneLayout layout;
  PruneResults results;
  std::vector<std::string> curve_orders;
  std::string model_path;
  std::vector<std::string> scores;  // the ctxsim scores of the score:<name> orders, in order (S)
  // Score s's values [L*H] (results.score's row s).
  std::vector<double> score(size_t s) const {
    const size_t n = size_t(layout.heads_total());
    return {results.score.begin() + ptrdiff_t(s * n), results.score.begin() + ptrdiff_t((s + 1) * n)};
  }
  bool causal = false;  // the root's `causal`: the next-token objective (a decoder), else masked-LM (SPEC §8)
  // "masked-LM" or "next-token": the objective's name for figures and summaries.
  const char* objective() const { return causal ? "next-token" : "masked-LM"; }
};
// Also checks the results against results_sha256 when the store has it.
PruneStoreData read_prune_store(hid_t file, const std::string& store);
// The SHA-256 of what read_prune_store reads (orders, curves, per-head results), as written at the end of the job.
std::string results_digest(const PruneStoreData& data);

}  // namespace ctxsim
