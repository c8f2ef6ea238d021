#!/usr/bin/env bash
# The container image, built and run with podman (tests/container_test.sh CTXSIM, from the source
# folder): jobs/container/Containerfile is built on a Debian 12 root made here with debootstrap
# (no image registry is needed), then, inside the image: `ctxsim --version` prints this checkout's
# revision, the BLAS is OpenBLAS-openmp, no compiler is there, ctxsim runs as a user other than
# root, and a tiny job (a random bert-tiny on 40 Brown windows) runs on one rank and under mpirun on
# two, writing into a mounted folder; outside, the host's ctxsim finds both stores complete and
# their summaries equal. Skipped (77) where podman cannot run a container at all.
# Costs on 2 cores: the first run about 10 minutes (Debian packages, the compile with JOBS=2; 17
# beside another build); a rerun reuses the base image (localhost/ctxsim-debian12) and podman's
# layer cache: about 6 minutes after a code change, under one after a commit or a docs change
# (two units print the revision).
set -euo pipefail
CTXSIM=$(realpath "$1")
BASE=localhost/ctxsim-debian12:bookworm
IMAGE=localhost/ctxsim:container-test
JOBS=${JOBS:-2}
TMP=$(mktemp -d)
# What the container wrote belongs to its user: rootless podman removes it through its namespace.
trap 'rm -rf "$TMP" 2> /dev/null || podman unshare rm -rf "$TMP"' EXIT
fail() { echo "FAIL [container]: $*"; exit 1; }
skip() { echo "SKIP [container]: $*"; exit 77; }
say() { echo "[container] $(date +%T) $*"; }

command -v podman > /dev/null || skip "podman is not installed (scripts/setup.sh installs it)"
{ [ -f data/vocab/bert-base-uncased.txt ] && [ -d data/brown ]; } || skip "no data/vocab or data/brown (scripts/setup.sh fetches the data)"

# ---- can podman run a container here? A one-binary image from the host's /usr/bin/true -------
# Some sandboxes need runc (crun refuses hybrid cgroup v1/v2 hierarchies) and rlimits no higher
# than the ones podman runs under (without CAP_SYS_RESOURCE the OCI runtime cannot raise them;
# podman lowers its own RLIMIT_NPROC to 32768): try as it is, then with those.
probe_root=$TMP/probe
for f in /usr/bin/true $(ldd /usr/bin/true | grep -o '/[^ ]*'); do
  mkdir -p "$probe_root$(dirname "$f")"
  cp -L "$f" "$probe_root$f"
done
tar -C "$probe_root" -c . | podman import -q - localhost/ctxsim-probe:latest > /dev/null \
  || skip "podman import fails: $(tar -C "$probe_root" -c . | podman import -q - localhost/ctxsim-probe:latest 2>&1 | tail -1)"
PODMAN=(podman)
LIMITS=()
if ! err=$(podman run --rm --network none localhost/ctxsim-probe:latest /usr/bin/true 2>&1); then
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
  LIMITS=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
  command -v runc > /dev/null && PODMAN=(podman --runtime runc)
  err2=$("${PODMAN[@]}" run --rm --network none "${LIMITS[@]}" localhost/ctxsim-probe:latest /usr/bin/true 2>&1) \
    || skip "podman cannot run a container here: '$(tail -1 <<< "$err")'; with ${PODMAN[*]:1} ${LIMITS[*]}: '$(tail -1 <<< "$err2")'"
  say "podman runs containers with ${PODMAN[*]:1} ${LIMITS[*]} (as it is: $(tail -1 <<< "$err"))"
fi
podman rmi -f localhost/ctxsim-probe:latest > /dev/null 2>&1 || true
pod() { "${PODMAN[@]}" "$@"; }

# ---- the base image: Debian 12 from the mirror this machine uses, as Docker Hub's debian:12 ----
if pod image exists "$BASE"; then
  say "base image $BASE present"
else
  command -v debootstrap > /dev/null || fail "debootstrap is not installed: run scripts/setup.sh"
  mirror=$(grep -rhoE '^(deb|URIs:)[[:space:]]+https?://[^[:space:]]+/debian/?([[:space:]]|$)' \
             /etc/apt/sources.list /etc/apt/sources.list.d/ 2> /dev/null | awk '{print $2}' | head -1 || true)
  security=$(grep -rhoE '^(deb|URIs:)[[:space:]]+https?://[^[:space:]]+/debian-security/?([[:space:]]|$)' \
               /etc/apt/sources.list /etc/apt/sources.list.d/ 2> /dev/null | awk '{print $2}' | head -1 || true)
  mirror=${mirror:-http://deb.debian.org/debian} security=${security:-http://deb.debian.org/debian-security}
  say "debootstrap bookworm from $mirror"
  root=$TMP/root
  nice -n 19 debootstrap --variant=minbase bookworm "$root" "$mirror" > "$TMP/debootstrap.log" 2>&1 \
    || fail "debootstrap: $(tail -5 "$TMP/debootstrap.log")"
  rm -f "$root/etc/apt/sources.list"
  cat > "$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | pod import -q \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' - "$BASE" > /dev/null || fail "podman import of the Debian 12 root"
  rm -rf "$root"
  say "base image $BASE imported"
fi

# ---- build ---------------------------------------------------------------------------------
# The revision this checkout has as the build starts (the same script the build runs).
revision() {
  cmake -DSRC="$PWD" -DOUT="$TMP/revision.h" -DVERSION=0 -P cmake/git_revision.cmake
  sed -n 's/^#define CTXSIM_GIT_REVISION "\(.*\)"$/\1/p' "$TMP/revision.h"
  rm -f "$TMP/revision.h"
}
revision=$(revision)
version=$(sed -n 's/^project(ctxsim VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
say "podman build -f jobs/container/Containerfile (JOBS=$JOBS)"
start=$(date +%s)
# The build stage is tagged too ($IMAGE-build), so that its layers (the compiled tree) stay in the
# cache when the sweep below removes what earlier builds left.
for target in build ""; do
  nice -n 19 "${PODMAN[@]}" build --network host "${LIMITS[@]}" --build-arg "BASE=$BASE" --build-arg "JOBS=$JOBS" \
    -f jobs/container/Containerfile ${target:+--target "$target"} -t "$IMAGE${target:+-$target}" . >> "$TMP/build.log" 2>&1 \
    || fail "podman build${target:+ --target $target}: $(tail -30 "$TMP/build.log")"
done
say "built $IMAGE in $(( $(date +%s) - start )) s, $(grep -c '^--> Using cache' "$TMP/build.log" || true) steps from the cache" \
    "($(pod image inspect --format '{{.Size}}' "$IMAGE") bytes)"

# Every build leaves its stages as untagged images (podman's layer cache): remove those that
# descend from the base image and no tagged image uses any more (a removed leaf may leave its parent
# untagged and childless: hence the rounds), so that the disk does not fill up run after run.
base_id=$(pod image inspect --format '{{.Id}}' "$BASE")
for _ in 1 2 3 4 5 6 7 8; do
  removed=0
  for id in $(pod images -q --no-trunc --filter dangling=true); do
    p=$id
    while p=$(pod image inspect --format '{{.Parent}}' "$p" 2> /dev/null) && [ -n "$p" ]; do
      if [ "$p" = "$base_id" ]; then
        pod rmi "$id" > /dev/null 2>&1 && removed=$((removed + 1))
        break
      fi
    done
  done
  [ "$removed" -gt 0 ] || break
done

run() { pod run --rm --network none "${LIMITS[@]}" "$@"; }

# ---- the image -----------------------------------------------------------------------------
inside=$(run "$IMAGE" --version | head -1) || fail "ctxsim --version in the image"
[ "$inside" = "ctxsim $version (git $revision)" ] \
  || fail "the image says '$inside'; this checkout was $version (git $revision) as the build started (now: $(revision))"
say "inside: $inside"
uid=$(run --entrypoint id "$IMAGE" -u) || fail "id -u in the image"
[ "$uid" != 0 ] || fail "the image runs as root"
blas=$(run --entrypoint readlink "$IMAGE" -f /usr/lib/x86_64-linux-gnu/libblas.so.3) || fail "no libblas.so.3 in the image"
grep -q openblas-openmp <<< "$blas" || fail "libblas.so.3 is $blas, not OpenBLAS-openmp"
tools=$(run --entrypoint sh "$IMAGE" -c 'command -v c++ gcc cmake git || true')
[ -z "$tools" ] || fail "build tools in the runtime image: $tools"
run --entrypoint ls "$IMAGE" /opt/ctxsim/share/ctxsim/configs/default.yaml /opt/ctxsim/share/ctxsim/jobs/ctxsim.sbatch \
  /opt/ctxsim/share/doc/ctxsim/LICENSE > /dev/null || fail "cmake --install left out configs, jobs or docs"

# ---- a tiny job in the image, its output in a mounted folder --------------------------------
out=$TMP/out
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then chown "$uid" "$out"; else podman unshare chown "$uid" "$out"; fi
mounts=(-v "$PWD/data:/work/data:ro" -v "$out:/work/out")
config=/opt/ctxsim/share/ctxsim/configs/default.yaml
job=(model.path=out/m samples.num_samples=40 runtime.threads=1)
say "tiny job: init-model, run on 1 rank, run under mpirun -np 2"
run "${mounts[@]}" "$IMAGE" init-model --preset bert-tiny --seed 3 --vocab data/vocab/bert-base-uncased.txt --out out/m \
  > "$TMP/init.log" 2>&1 || fail "init-model in the image: $(tail -5 "$TMP/init.log")"
run "${mounts[@]}" "$IMAGE" run "$config" "${job[@]}" output.dir=out/one > "$TMP/one.log" 2>&1 \
  || fail "run in the image: $(tail -10 "$TMP/one.log")"
run "${mounts[@]}" --entrypoint mpirun "$IMAGE" -np 2 --oversubscribe --bind-to none \
  ctxsim run "$config" "${job[@]}" output.dir=out/two > "$TMP/two.log" 2>&1 \
  || fail "mpirun -np 2 in the image: $(tail -10 "$TMP/two.log")"
grep -q 'progress: samples 40/40' "$TMP/one.log" || fail "the run did not report 40 samples: $(tail -5 "$TMP/one.log")"
grep -q ' 2 rank(s) x ' "$TMP/two.log" || fail "mpirun -np 2 did not make one job of 2 ranks: $(head -5 "$TMP/two.log")"

# ---- outside: the host's ctxsim reads what the container wrote ------------------------------
for r in one two; do
  status=$("$CTXSIM" status "$out/$r/store.h5" 2> "$TMP/status.err") || fail "ctxsim status ($r): $(cat "$TMP/status.err")"
  [ "$status" = complete ] || fail "the $r-rank store is not complete: $status"
  [ -s "$out/$r/report.html" ] || fail "no report.html from the $r-rank run"
  ls "$out/$r"/figures/*.png > /dev/null 2>&1 || fail "no PNG figures from the $r-rank run (librsvg, fonts)"
done
# (the first line names the store)
one=$("$CTXSIM" summary "$out/one/store.h5" | tail -n +2) || fail "summary of the 1-rank store"
two=$("$CTXSIM" summary "$out/two/store.h5" | tail -n +2) || fail "summary of the 2-rank store"
[ -n "$one" ] || fail "empty summary"
[ "$one" = "$two" ] || fail "1 and 2 ranks in the image differ: $(diff <(echo "$one") <(echo "$two") | head -10)"
say "both stores complete, summaries equal; the test took $SECONDS s"
