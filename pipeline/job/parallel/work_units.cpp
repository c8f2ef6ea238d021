#include "pipeline/job/parallel/work_units.h"

#include <algorithm>

namespace ctxsim {

std::vector<WorkUnit> make_units(int64_t samples, int64_t unit_size) {
  std::vector<WorkUnit> units;
  for (int64_t first = 0, i = 0; first < samples; first += unit_size, ++i)
    units.push_back(WorkUnit{i, first, std::min(unit_size, samples - first)});
  return units;
}

std::vector<int64_t> pending_units(const std::vector<uint8_t>& done) {
  std::vector<int64_t> p;
  for (size_t u = 0; u < done.size(); ++u)
    if (!done[u]) p.push_back(int64_t(u));
  return p;
}

int64_t unit_of(const std::vector<int64_t>& pending, int64_t round, int rank, int size) {
  const int64_t k = round * size + rank;
  return k < int64_t(pending.size()) ? pending[size_t(k)] : -1;
}

int64_t rounds(const std::vector<int64_t>& pending, int size) { return (int64_t(pending.size()) + size - 1) / size; }

std::vector<std::pair<int64_t, int64_t>> unit_batches(const WorkUnit& u, int64_t batch_size) {
  std::vector<std::pair<int64_t, int64_t>> b;
  for (int64_t first = u.first; first < u.first + u.count; first += batch_size)
    b.emplace_back(first, std::min(batch_size, u.first + u.count - first));
  return b;
}

std::string idle_ranks_warning(int64_t samples, int64_t unit_size, int64_t ranks) {
  const int64_t units = unit_size > 0 ? (samples + unit_size - 1) / unit_size : 0;
  if (ranks <= units) return {};
  const auto plural = [](int64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  return plural(ranks, "rank", "ranks") + " for " + plural(units, "work unit", "work units") + " (" + plural(samples, "sample", "samples") +
         " of runtime.unit_size " + std::to_string(unit_size) + "): " + std::to_string(ranks - units) +
         " would have nothing to do; use at most " + plural(units, "rank", "ranks") + ", or lower runtime.unit_size to " +
         std::to_string(std::max<int64_t>(1, samples / ranks)) + " (the resume granularity)";
}

}  // namespace ctxsim
