#!/usr/bin/env bash
# The store opens in xarray with named dimensions (docs/STORE.md "With xarray"): xarray_test.sh
# CTXSIM. A small run (2 rules, 3 layers, 2 heads, T = 32, two examples) is opened group by group
# with xarray and h5netcdf (Debian's python3-xarray and python3-h5netcdf, as users read it): every
# axis has its name and coordinate values, and selections by name equal h5py's positional reads.
set -uo pipefail
CTXSIM=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL [xarray]: $*"; exit 1; }
VOCAB=data/vocab/bert-base-uncased.txt
for need in data/brown "$VOCAB"; do
  [ -e "$need" ] || { echo "SKIP [xarray]: $need is missing (scripts/setup.sh fetches the data)"; exit 77; }
done
/usr/bin/python3 -c "import xarray, h5netcdf, h5py" 2> /dev/null ||
  { echo "SKIP [xarray]: python3-xarray, python3-h5netcdf or python3-h5py is not installed (scripts/setup.sh installs them)"; exit 77; }

"$CTXSIM" init-model --preset bert-tiny --layers 3 --heads 2 --seed 5 --vocab $VOCAB --out "$TMP/m" > /dev/null || fail "init-model"
"$CTXSIM" run configs/default.yaml model.path="$TMP/m" samples.num_samples=24 samples.seq_len=32 runtime.unit_size=8 \
  'selection=[{top_fraction: 0.05}, {relative_to_max: 0.9}]' statistics.examples=[1,5] output.report=false \
  output.dir="$TMP/run" > "$TMP/run.log" 2>&1 || fail "run: $(tail -3 "$TMP/run.log")"
"$CTXSIM" summary "$TMP/run/store.h5" > /dev/null || fail "summary of a store with dimension scales"

/usr/bin/python3 - "$TMP/run/store.h5" <<'EOF' || fail "xarray checks"
import sys

import h5py
import numpy as np
import xarray as xr

path = sys.argv[1]
f = h5py.File(path, "r")
L, H, T, N, E = 3, 2, 32, 24, 2
rules = f["stats"].attrs["rules"].decode().split("\n")
assert rules == ["top_fraction=0.05", "relative_to_max=0.9"], rules
vocab = f["vocab/text"][...].tobytes().decode().split("\n")
separators = f["stats/attention"].attrs["separator_tokens"].decode().split("\n")
failures = []


def check(what, ok):
    if not ok:
        failures.append(what)


def open_group(group):
    # Without phony_dims: a dataset with an unnamed axis would raise here.
    ds = xr.open_dataset(path, engine="h5netcdf", group=group)
    check(f"{group}: phony dimensions {list(ds.dims)}", not any(d.startswith("phony_dim") for d in ds.dims))
    return ds


def same(what, a, b):
    check(f"{what}: {np.asarray(a)!r} vs {np.asarray(b)!r}", np.array_equal(np.asarray(a), np.asarray(b)))


for r, rule in enumerate(rules):
    g = f"stats/{rule}"
    ds = open_group(g)
    check(f"{g} dims {dict(ds.dims)}", dict(ds.dims) == {"layer": L, "head": H, "distance": T, "token": len(ds["token"])})
    same(f"{g} layer", ds["layer"], np.arange(L))
    same(f"{g} head", ds["head"], np.arange(H))
    same(f"{g} distance", ds["distance"], np.arange(T))
    same(f"{g} token", ds["token"].values[: len(vocab)], vocab[: len(ds["token"])])
    check(f"{g} high_pairs dims", ds["high_pairs"].dims == ("layer", "head"))
    check(f"{g} distinct_anchors dims", ds["distinct_anchors"].dims == ("layer",))
    same(f"{g} high_pairs[1, 0]", ds["high_pairs"].sel(layer=1, head=0), f[g]["high_pairs"][1, 0])
    same(f"{g} distance_hist[..., 5]", ds["distance_hist"].sel(distance=5), f[g]["distance_hist"][:, :, 5])
    same(f"{g} anchor_counts 'the'", ds["anchor_counts"].sel(token="the"), f[g]["anchor_counts"][:, :, vocab.index("the")])
    same(f"{g} samples_with_pairs[2, 1]", ds["samples_with_pairs"].sel(layer=2, head=1), f[g]["samples_with_pairs"][2, 1])

ds = open_group("stats/baseline")
check(f"baseline dims {dict(ds.dims)}", dict(ds.dims) == {"layer": L, "head": H, "distance": T, "separator": len(separators)})
same("baseline separator", ds["separator"], separators)
same("baseline distance_all[7]", ds["distance_all"].sel(distance=7), f["stats/baseline/distance_all"][7])
same("baseline samples", ds["samples"], f["stats/baseline/samples"][()])
# Fixed point (units of 2^-32) with its CF scale_factor: xarray decodes it to attention mass.
same("baseline separator_mass_by_token [SEP]", ds["separator_mass_by_token"].sel(separator="[SEP]"),
     f["stats/baseline/separator_mass_by_token"][:, :, separators.index("[SEP]")] * 2.0**-32)
check("separator_mass_by_token decodes to floats", ds["separator_mass_by_token"].dtype == np.float64)
check("separator_mass_by_token is a mass below 1 a sample",
      float(ds["separator_mass_by_token"].sum("separator").max()) <= float(ds["samples"]) + 1e-9)

ds = open_group("per_sample")
check(f"per_sample dims {dict(ds.dims)}", dict(ds.dims) == {"rule": 2, "sample": N, "layer": L, "head": H})
same("per_sample rule", ds["rule"], rules)
same("per_sample sample", ds["sample"], np.arange(N))
for r, rule in enumerate(rules):
    same(f"anchor_token {rule}", ds["anchor_token"].sel(rule=rule), f["per_sample/anchor_token"][r])
    same(f"anchor_token {rule} [3, 2, 1]", ds["anchor_token"].sel(rule=rule, sample=3, layer=2, head=1), f["per_sample/anchor_token"][r, 3, 2, 1])
    same(f"high_pairs {rule} [7]", ds["high_pairs"].sel(rule=rule, sample=7), f["per_sample/high_pairs"][r, 7])

ds = open_group("samples")
check(f"samples dims {dict(ds.dims)}", dict(ds.dims) == {"sample": N, "position": T, "source_field": 2})
same("samples position", ds["position"], np.arange(T))
same("token_ids [2, 0]", ds["token_ids"].sel(sample=2, position=0), f["samples/token_ids"][2, 0])
same("n_valid", ds["n_valid"], f["samples/n_valid"][...])
same("source document", ds["source"].sel(source_field="document"), f["samples/source"][:, 0])

ds = open_group("examples")
check(f"examples dims {dict(ds.dims)}", dict(ds.dims) == {"example": E, "rule": 2, "layer": L, "head": H, "i": T, "j": T})
same("example ids", ds["example"], f["examples/sample_ids"][...])
same("example ids are the configured ones", ds["example"], [1, 5])
same("attention [5, 0, 1, 0, 3]", ds["attention"].sel(example=5, layer=0, head=1, i=0, j=3), f["examples/attention"][1, 0, 1, 0, 3])
same("selected", ds["selected"].sel(rule=rules[1], example=1), f["examples/selected"][0, 1])

ds = open_group("vocab")
check(f"vocab dims {dict(ds.dims)}", dict(ds.dims) == {"byte": f["vocab/text"].shape[0]})
same("vocab text", ds["text"], f["vocab/text"][...])

# Every dataset that is not itself a scale has every axis named, and h5py sees the same names;
# every dataset carries CF's long_name (its description), and counts their units.
def visit(name, obj):
    if not isinstance(obj, h5py.Dataset):
        return
    description = obj.attrs.get("description", b"").decode()
    check(f"{name}: long_name", obj.attrs.get("long_name", b"").decode() == description and description)
    if "(count" in description:
        check(f"{name}: units count", obj.attrs.get("units") == b"count")
    if obj.dtype.kind == "f":
        check(f"{name}: units 1", obj.attrs.get("units") == b"1")
    if obj.attrs.get("CLASS") == b"DIMENSION_SCALE":
        return
    for axis, dim in enumerate(obj.dims):
        check(f"{name} axis {axis}: {len(dim)} scales", len(dim) == 1)
        if len(dim) == 1:
            check(f"{name} axis {axis}: label {dim.label!r} vs scale {dim[0].name}", dim.label == dim[0].name.split("/")[-1])


f.visititems(visit)
for line in failures:
    print(line)
sys.exit(1 if failures else 0)
EOF
# The segmentation store: every group opens with named dimensions, and selections by name equal
# h5py's positional reads.
"$CTXSIM" segment configs/segment/choi.yaml segment.documents=2 segment.dev_documents=2 runtime.threads=1 output.report=false \
  output.dir="$TMP/seg" > "$TMP/seg.log" 2>&1 || fail "segment: $(tail -3 "$TMP/seg.log")"
/usr/bin/python3 - "$TMP/seg/store.h5" <<'EOF' || fail "xarray checks of the segmentation store"
import sys

import h5py
import numpy as np
import xarray as xr

path = sys.argv[1]
f = h5py.File(path, "r")
methods = f["methods"].attrs["names"].decode().split("\n")
D, M = f["methods/pk"].shape
L, H = f["heads/pk"].shape[1:]
failures = []


def check(what, ok):
    if not ok:
        failures.append(what)


groups = {}
for g in ("documents", "methods", "heads", "example"):
    ds = xr.open_dataset(path, engine="h5netcdf", group=g)
    check(f"{g}: phony dimensions {list(ds.dims)}", not any(d.startswith("phony_dim") for d in ds.dims))
    groups[g] = ds
m = groups["methods"]
check(f"methods dims {dict(m.dims)}", dict(m.dims) == {"document": D, "segmentation_method": M, "boundary": f["methods/boundaries"].shape[2]})
check("method names", list(m["segmentation_method"].values) == methods)
check("pk by method name", np.array_equal(m["pk"].sel(segmentation_method=methods[-1], document=1), f["methods/pk"][1, M - 1]))
h = groups["heads"]
check(f"heads dims {dict(h.dims)}", dict(h.dims) == {"document": D, "layer": L, "head": H})
check("head pk", np.array_equal(h["pk"].sel(layer=L - 1, head=1), f["heads/pk"][:, L - 1, 1]))
d = groups["documents"]
check("parts fields", list(d["part_field"].values) == ["corpus_document", "sentences"])
check("parts by field", np.array_equal(d["parts"].sel(part_field="sentences"), f["documents/parts"][:, :, 1]))
check("example dims", groups["example"]["similarity"].dims == ("layer", "sentence_i", "sentence_j"))
check("pk units", f["methods/pk"].attrs.get("units") == b"1" and f["methods/pk"].attrs.get("long_name"))
for line in failures:
    print(line)
sys.exit(1 if failures else 0)
EOF
echo "xarray: every group of the run and segmentation stores opens with named dimensions"
