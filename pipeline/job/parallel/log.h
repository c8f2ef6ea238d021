// Logging: rank 0 speaks at info level; any rank may report errors, prefixed with its rank.
#pragma once
#include <string>

namespace ctxsim {

void set_log_rank(int rank, int size);
int log_rank();
void log_info(const std::string& line);   // rank 0 only: "ctxsim: …"
void log_error(const std::string& line);  // any rank: "ctxsim: error: …" ("[rank k] " when several)

}  // namespace ctxsim
