#!/usr/bin/env bash
# One-command setup on Debian 12 (as root or with sudo): Debian packages, the project venv (.venv:
# transformers, tokenizers and the CPU build of torch, every file hash-pinned in
# scripts/requirements.txt), pinned data and models in data/, then configure and build into build/.
# Idempotent: installs and downloads only what is missing, and the build is incremental.
#   bash scripts/setup.sh                   # everything: build, run and test packages, data, build/
#   SKIP_BUILD=1 bash scripts/setup.sh      # the same without the build
#   bash scripts/setup.sh --runtime-only    # only the shared libraries an installed ctxsim binary
#                                           # loads (LibTorch, OpenBLAS-openmp as libblas.so.3,
#                                           # Open MPI, parallel HDF5, ...): no compiler, no test
#                                           # tools, no data, no build (jobs/container's runtime stage)
#   bash scripts/setup.sh --build-deps-only # only what building ctxsim needs (compiler, CMake, the
#                                           # -dev packages): no test tools, no data, no build
#                                           # (jobs/container's build stage)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "[setup] $*"; }
MODE=all
for arg in "$@"; do
  case "$arg" in
    --runtime-only) MODE=runtime ;;
    --build-deps-only) MODE=build-deps ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (--runtime-only, --build-deps-only, or none)" >&2; exit 2 ;;
  esac
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

# What an installed ctxsim loads (ldd build/ctxsim, by Debian package), and mpirun.
RUNTIME_PACKAGES=(
  libtorch1.13 libgomp1 libopenblas0-openmp # LibTorch; OpenBLAS with OpenMP as libblas.so.3 (the reference BLAS is 50x slower)
  libopenmpi3 openmpi-bin                   # Open MPI (with PMIx, for srun --mpi=pmix) and mpirun
  libhdf5-openmpi-103-1 libhdf5-openmpi-hl-100  # parallel HDF5 and its dimension scales
  libyaml-cpp0.7 libutf8proc2 libpcre2-8-0 libssl3
  libpng16-16 librsvg2-2 libcairo2 libglib2.0-0 fonts-dejavu-core  # figures: SVG to PNG with a known font
)
# What building ctxsim needs (-DCTXSIM_BUILD_TESTS=OFF).
BUILD_PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  libtorch-dev libopenblas0-openmp          # LibTorch; OpenBLAS with OpenMP (the reference BLAS is 50x slower)
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libutf8proc-dev libpcre2-dev libssl-dev libpng-dev
  librsvg2-dev fonts-dejavu-core            # figures: SVG to PNG (librsvg, cairo) with a known font
)
# What the tests, the data and the developer scripts need besides.
TEST_PACKAGES=(
  hdf5-tools
  libgtest-dev
  python3-h5py python3-yaml                 # tests read the store as users do; torch_pipeline.py reads configs
  python3-venv python3-pip                  # the project venv (.venv): transformers, tokenizers (the reference tests)
  python3-xarray python3-h5netcdf           # tests/xarray_test.sh: the store's named dimensions, as xarray users read them
  python3-torch                             # scripts/torch_pipeline.py: the plain PyTorch yardstick and second count check
  slurm-wlm                                 # job scripts are tested on a real local cluster
  nodejs npm                                # npm pack fetches the pinned data
  chromium                                  # the report is tested in a real headless browser
  clang libclang-rt-14-dev                  # libFuzzer and the sanitizers (scripts/fuzz.sh)
  time                                      # /usr/bin/time: the benchmarks' peak memory
  clang-format                              # scripts/check_format.sh (CI)
  podman buildah runc debootstrap           # tests/container_test.sh: builds jobs/container/Containerfile on a
                                            # debootstrapped Debian 12 (runc: crun refuses hybrid cgroups)
)
case "$MODE" in
  runtime) PACKAGES=("${RUNTIME_PACKAGES[@]}") ;;
  build-deps) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  all) PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
esac
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A node/npm installed outside Debian's packages is fine too.
if command -v npm >/dev/null && command -v node >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<< "${missing[*]}"
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "Debian packages present"
fi

# LibTorch's float matmul goes through libblas.so.3: make it OpenBLAS (OpenMP build).
blas=$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | awk '/^Value:/{print $2}')
case "$blas" in
  *openblas-openmp*) say "BLAS: $blas" ;;
  *) cand=$(update-alternatives --list libblas.so.3-x86_64-linux-gnu 2>/dev/null | grep openblas-openmp | head -1 || true)
     if [ -n "$cand" ]; then $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu "$cand" >/dev/null; say "BLAS set to $cand"; fi ;;
esac

if [ "$MODE" != all ]; then
  say "done ($MODE packages only: no data, no build)"
  exit 0
fi

# The project venv: Hugging Face's transformers and tokenizers (the `reference` tests compare
# ctxsim with them), the CPU build of torch they run on, and the data scripts' libraries; every
# file pinned by version and sha256 (scripts/requirements.txt), installed only when that changed.
VENV=.venv
REQ=scripts/requirements.txt
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" = "$want" ]; then
  say "venv present: $VENV"
else
  say "venv: $VENV from $REQ (pip, hash-checked)"
  /usr/bin/python3 -m venv "$VENV"
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary :all: -r "$REQ" 2> "$VENV/pip.log"; then
    grep -v '^WARNING: Location' "$VENV/pip.log" | tail -5 >&2
    say "ERROR: pip could not install $REQ into $VENV (the whole log: $VENV/pip.log); fix: check that PyPI is reachable (pip config list), and that torch==2.13.0+cpu is on it or in pip's find-links (https://download.pytorch.org/whl/cpu)"
    exit 1
  fi
  echo "$want" > "$VENV/.requirements.sha256"
fi

say "data"
bash scripts/fetch_data.sh

# The report's browser test drives chromium through playwright-core (pinned in package-lock.json).
if [ ! -d tests/browser/node_modules/playwright-core ]; then
  say "npm: playwright-core for the browser test"
  (cd tests/browser && npm ci --no-audit --no-fund --silent)
fi
# The GPT-2 tokenizer test compares ctxsim's ids with two npm encoders (tests/bpe/package-lock.json).
if [ ! -d tests/bpe/node_modules/js-tiktoken ] || [ ! -d tests/bpe/node_modules/gpt-3-encoder ] || [ ! -d tests/bpe/node_modules/llama3-tokenizer-js ]; then
  say "npm: gpt-3-encoder, js-tiktoken and llama3-tokenizer-js for the byte-level BPE tests"
  (cd tests/bpe && npm ci --no-audit --no-fund --silent)
fi

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  BUILD=${BUILD_DIR:-build}
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    say "configuring $BUILD"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  say "building $BUILD (${JOBS:-$(nproc)} jobs)"
  cmake --build "$BUILD" -j "${JOBS:-$(nproc)}"
  # Seeded random controls in the Hugging Face format: BERT-base (the study's random-init control
  # at its scale, bench-model's shape), a model of the default job's shape and vocabulary
  # (all-MiniLM-L6-v2's config.json; configs/default.yaml names it), and SmolLM2-135M's (the
  # GGUF's metadata and tokenizer: the causal control of the real decoder).
  random_model() {  # random_model OUT INIT-MODEL-ARGS...
    local out=$1; shift
    if [ -f "$out/model.safetensors" ] && "$BUILD/ctxsim" model-info "$out" > /dev/null 2>&1; then
      say "model present: $out"
    else
      say "writing $out (ctxsim init-model $* --seed 0)"
      "$BUILD/ctxsim" init-model "$@" --seed 0 --out "$out"
    fi
  }
  random_model data/models/bert-base-seed0 --preset bert-base --vocab data/vocab/bert-base-uncased.txt
  random_model data/models/all-MiniLM-L6-v2-random --like data/models/all-MiniLM-L6-v2
  random_model data/models/SmolLM2-135M-Instruct-random --like data/models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf
fi
say "done"
