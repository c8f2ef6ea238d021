#include "pipeline/job/dist/work_units.h"

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

}  // namespace ctxsim
