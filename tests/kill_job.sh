# Sourced by the MPI test scripts.
# kill_job PID: SIGKILL to mpiexec and its ranks at once, as a node failure does (Open MPI puts each
# rank in a process group of its own, so killing mpiexec's group alone leaves them running); returns
# when they are gone.
kill_job() {
  local ranks; ranks=$(pgrep -P "$1")
  kill -9 $ranks 2> /dev/null; kill -9 -- -"$1" 2> /dev/null; wait "$1" 2> /dev/null
  for p in $ranks; do
    for _ in $(seq 1 100); do [ -d /proc/$p ] && [ "$(awk '{ print $3 }' /proc/$p/stat 2> /dev/null)" != Z ] || break; sleep 0.1; done
  done
}
