#!/usr/bin/env bash
# The GPU check of ctxsim, one script sized for a lent H200 machine (15 minutes with start-up):
# it builds ctxsim against the CUDA LibTorch inside python3's torch and the Debian packages
# carried in device-debs/ (unpacked with dpkg -x into a prefix: that machine reaches no package
# registry), then
#   1. float64 on a tiny random model, 200 samples, runtime.device=cuda: every integer dataset
#      of the store equals the CPU store made here (device-ref/cpu.h5, compare_stores.py);
#   2. BERT-base, T = 128: samples/s in float32 and bfloat16 at batch 8, 32 and 128, the share
#      of the statistics (bench-model c/a), and 20,000 samples end to end (`ctxsim run`);
#   3. transformers' BertModel on the same random checkpoint: its attention maps and per-head
#      context similarities equal the store's examples within float16 tolerance.
# Everything it prints and writes goes to $OUT (the device tool brings it back).
#
# Here (no GPU): `bash scripts/device_check.sh --prepare` downloads the .deb files into
# device-debs/ (12 MB) and makes the CPU half: device-ref/cpu/store.h5 (the tiny model's CPU
# float64 store, 4.4 MB). There: `bash scripts/device_check.sh`, carrying device-debs, device-ref
# and data (11 MB). Both random checkpoints are made there (`init-model`: same seed, same bytes;
# the tiny one's SHA-256 is checked against the CPU store's): BERT-base's 440 MB would not travel.
# What travels is limited to 64 MiB in all, and the committed models/ and results/ are 55 MB of
# the tracked tree: move them out of the checkout for the run (the check reads neither), e.g.
#   mv models results /tmp/ && <run with carry device-debs device-ref data> ; mv /tmp/models /tmp/results .
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
log() { echo "[device] $*" | tee -a "$OUT/device_check.log"; }
TINY=(configs/default.yaml model.dtype=float64 samples.num_samples=200 runtime.unit_size=50 runtime.batch_size=8
      'selection=[{top_fraction: 0.01}, {relative_to_max: 0.9}, {absolute: 1.0}]' statistics.examples=[0,7] output.report=false)
DEBS=(libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2
      libhdf5-openmpi-dev libhdf5-openmpi-103-1 libsz2 libaec0 libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libcli11-dev
      libutf8proc-dev libutf8proc2 libssl-dev)

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p device-debs device-ref
  (cd device-debs && apt-get download "${DEBS[@]}") || { echo "apt-get download failed"; exit 1; }
  rm -rf device-ref/tiny device-ref/cpu
  build/ctxsim init-model --preset bert-tiny --seed 7 --vocab data/vocab/bert-base-uncased.txt --out device-ref/tiny > /dev/null
  build/ctxsim run "${TINY[@]}" model.path=device-ref/tiny output.dir=device-ref/cpu > /dev/null
  rm -rf device-ref/tiny  # 17 MB: remade there from its seed
  echo "prepared: device-debs/ ($(du -sh device-debs | cut -f1)), device-ref/ ($(du -sh device-ref | cut -f1));"
  echo "carry both (and data/) to the device machine and run: bash scripts/device_check.sh"
  exit 0
fi

log "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || { log "python3 has no torch"; exit 1; }
log "torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())')"
PREFIX=$PWD/device-prefix
mkdir -p "$PREFIX"
for deb in device-debs/*.deb; do dpkg -x "$deb" "$PREFIX"; done
export OPAL_PREFIX=$PREFIX/usr/lib/x86_64-linux-gnu/openmpi  # relocated OpenMPI finds its own files
export LD_LIBRARY_PATH=$PREFIX/usr/lib/x86_64-linux-gnu:$PREFIX/usr/lib/x86_64-linux-gnu/hdf5/openmpi:$OPAL_PREFIX/lib:${LD_LIBRARY_PATH:-}
export PATH=$OPAL_PREFIX/bin:$PREFIX/usr/bin:$PATH
# NCCL reductions (-DCTXSIM_CUDA=ON) with the NCCL of python3's torch (nvidia-nccl-cu13) and the
# image's nvcc, as scripts/cuda_build.sh builds it here; without them the ranks reduce over MPI.
SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
NCCL=()
if [ -f "$SITE/nvidia/nccl/include/nccl.h" ] && command -v nvcc > /dev/null; then
  NCCL=(-DCTXSIM_CUDA=ON -DNCCL_INCLUDE_DIR="$SITE/nvidia/nccl/include" -DNCCL_LIBRARY="$(ls "$SITE"/nvidia/nccl/lib/libnccl.so.* | head -1)"
        -DCUDA_TOOLKIT_ROOT_DIR="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")" -DTORCH_CUDA_ARCH_LIST=9.0)
fi
log "NCCL: ${NCCL[*]:-not found (ranks reduce over MPI)}"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$PREFIX/usr" "${NCCL[@]}" \
  -DMPI_C_COMPILER="$OPAL_PREFIX/bin/mpicc" -DMPI_CXX_COMPILER="$OPAL_PREFIX/bin/mpicxx" \
  -DHDF5_ROOT="$PREFIX/usr/lib/x86_64-linux-gnu/hdf5/openmpi" -DCTXSIM_FIGURES=OFF -DCTXSIM_WERROR=OFF -DCTXSIM_BUILD_TESTS=OFF \
  > "$OUT/cmake.log" 2>&1 || { log "configure failed"; tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target ctxsim > "$OUT/build.log" 2>&1 || { log "build failed"; tail -40 "$OUT/build.log"; exit 1; }
CT=build-gpu/ctxsim
log "built: $($CT --version)"
[ -f device-ref/base/model.safetensors ] || $CT init-model --preset bert-base --seed 0 --vocab data/vocab/bert-base-uncased.txt --out device-ref/base > /dev/null
[ -f device-ref/tiny/model.safetensors ] || $CT init-model --preset bert-tiny --seed 7 --vocab data/vocab/bert-base-uncased.txt --out device-ref/tiny > /dev/null
want=$(python3 -c "import h5py; print(h5py.File('device-ref/cpu/store.h5', 'r').attrs['model_sha256'].decode())")
have=$(sha256sum device-ref/tiny/model.safetensors | cut -d' ' -f1)
[ "$want" = "$have" ] || log "the tiny model made here differs from the CPU store's ($have vs $want): check 1 compares different models"

log "1. float64, tiny model, 200 samples on cuda vs the CPU store"
$CT run "${TINY[@]}" model.path=device-ref/tiny runtime.device=cuda output.dir="$OUT/cuda64" > "$OUT/cuda64.log" 2>&1 || log "cuda run failed: $(tail -3 "$OUT/cuda64.log")"
python3 tests/compare_stores.py device-ref/cpu/store.h5 "$OUT/cuda64/store.h5" 2>&1 | tee -a "$OUT/device_check.log"

# One GPU: NCCL refuses two ranks on one device, so check 1 reduces over NCCL (a communicator of
# one rank) and this two-rank run over MPI (ctxsim says so); both must equal the CPU store.
log "1b. the same on 2 ranks (one GPU: MPI reductions) vs the CPU store"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec --oversubscribe -n 2 $CT run "${TINY[@]}" model.path=device-ref/tiny \
  runtime.device=cuda output.dir="$OUT/cuda64x2" > "$OUT/cuda64x2.log" 2>&1 || log "2-rank cuda run failed: $(tail -3 "$OUT/cuda64x2.log")"
python3 tests/compare_stores.py device-ref/cpu/store.h5 "$OUT/cuda64x2/store.h5" 2>&1 | tee -a "$OUT/device_check.log"

log "2. BERT-base, T = 128: bench-model (a: forward, c: forward + statistics) and 20,000 samples end to end"
$CT bench-model --device cuda --model device-ref/base --batch 8,32,128 --dtype float32,bfloat16 --rules 1 --seconds 5 2>&1 | tee -a "$OUT/device_check.log"
for dt in float32 bfloat16; do
  start=$(date +%s.%N)
  $CT run configs/default.yaml model.path=device-ref/base model.dtype=$dt runtime.device=cuda samples.num_samples=20000 \
    runtime.batch_size=128 runtime.unit_size=1024 statistics.examples=[] output.report=false output.dir="$OUT/base_$dt" > "$OUT/base_$dt.log" 2>&1
  rc=$?
  log "20,000 samples, $dt: exit $rc, $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }') whole process; $(grep 'done:' "$OUT/base_$dt.log" | sed 's/^ctxsim: //')"
done

log "3. transformers' BertModel vs the store's examples (attention, context similarity)"
$CT run configs/default.yaml model.path=device-ref/base runtime.device=cuda samples.num_samples=8 statistics.examples=[0,5] \
  output.report=false output.dir="$OUT/hf" > "$OUT/hf.log" 2>&1
python3 - "$OUT/hf/store.h5" device-ref/base <<'PY' 2>&1 | tee -a "$OUT/device_check.log"
import sys, h5py, numpy as np, torch
from transformers import BertModel
store, model_dir = sys.argv[1], sys.argv[2]
f = h5py.File(store, "r")
m = BertModel.from_pretrained(model_dir, attn_implementation="eager").eval().double()
ctx = {}
for l, layer in enumerate(m.encoder.layer):  # the per-head context vectors, before the output projection
    layer.attention.self.register_forward_hook(lambda mod, i, o, l=l: ctx.__setitem__(l, o[0]))
worst_a = worst_c = 0.0
for e, n in enumerate(f["examples/sample_ids"][...]):
    k = int(f["samples/n_valid"][n]); ids = torch.tensor(f["samples/token_ids"][n][:k].astype(np.int64))[None]
    out = m(ids, output_attentions=True)
    for l in range(m.config.num_hidden_layers):
        a = out.attentions[l][0].numpy(); H = a.shape[0]
        o = ctx[l][0].reshape(k, H, -1).permute(1, 0, 2).numpy()
        c = o @ o.transpose(0, 2, 1); c[:, range(k), range(k)] = 0
        sa = f["examples/attention"][e, l][:, :k, :k].astype(np.float64); sc = f["examples/similarity"][e, l][:, :k, :k].astype(np.float64)
        worst_a = max(worst_a, np.abs(a - sa).max()); worst_c = max(worst_c, (np.abs(c - sc) / (np.abs(c) + 1e-3)).max())
print(f"transformers vs ctxsim: attention max |diff| {worst_a:.2e}, similarity max relative diff {worst_c:.2e} (float16 storage: ~1e-3)")
print("AGREE" if worst_a < 2e-3 and worst_c < 5e-3 else "DIFFER")
PY
log "done; results in $OUT"
