#include "pipeline/job/parallel/log.h"

#include <iostream>

namespace ctxsim {
namespace {
int g_rank = 0, g_size = 1;
}

void set_log_rank(int rank, int size) {
  g_rank = rank;
  g_size = size;
}
int log_rank() { return g_rank; }

void log_info(const std::string& line) {
  if (g_rank == 0) std::cerr << "ctxsim: " << line << "\n";
}

void log_error(const std::string& line) {
  std::cerr << (g_size > 1 ? "[rank " + std::to_string(g_rank) + "] " : std::string()) << "ctxsim: error: " << line << "\n";
}

}  // namespace ctxsim
