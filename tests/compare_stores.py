#!/usr/bin/python3
"""Compares two ctxsim stores: every integer dataset must be bitwise identical (SPEC §5).
With --bytes, every dataset of any type (floats included) must hold the same bytes, and every
attribute must be equal except those that describe how and when the run went (times, ranks,
threads, paths, the program's revision). Object references in attributes (the dimension scales'
DIMENSION_LIST and REFERENCE_LIST) compare by the paths of the objects they point to.
With --ignore-scales, the dimension scales (datasets whose CLASS is DIMENSION_SCALE) and the
attributes that attach them (DIMENSION_LIST, DIMENSION_LABELS, REFERENCE_LIST) are left out:
for comparing a store written before ctxsim named its axes (docs/STORE.md "With xarray") with
one written after; everything else must still agree.
Usage: compare_stores.py [--bytes] [--ignore-scales] A.h5 B.h5   (exit 0 when identical; lists the
differences)."""
import sys

import h5py
import numpy as np

# Root attributes that describe the run, not its results.
RUN_ATTRIBUTES = {"started", "finished", "run_seconds", "ranks", "threads_per_rank", "config_path", "model_path",
                  "vocab_path", "git_revision", "ctxsim_version", "isa", "blas", "devices", "per_rank_seconds",
                  # the session's provenance (pipeline/job/parallel/provenance.h)
                  "command_line", "hosts", "slurm_job_id", "slurm_array_job_id", "slurm_array_task_id",
                  "slurm_restart_count", "slurm_job_name", "slurm_cluster", "slurm_partition"}


# The attributes that attach dimension scales to a dataset, and those that make a scale.
SCALE_ATTRIBUTES = {"DIMENSION_LIST", "DIMENSION_LABELS", "REFERENCE_LIST"}


def is_scale(obj):
    return isinstance(obj, h5py.Dataset) and obj.attrs.get("CLASS") == b"DIMENSION_SCALE"


def datasets(f, every_type, ignore_scales=False):
    out = {}

    def visit(name, obj):
        if ignore_scales and is_scale(obj):
            return
        if isinstance(obj, h5py.Dataset) and (every_type or np.issubdtype(obj.dtype, np.integer)):
            out[name] = obj[...]

    f.visititems(visit)
    return out


def plain(f, value):
    """An attribute value comparable across files: an object reference becomes its object's path."""
    if isinstance(value, h5py.Reference):
        return f[value].name if value else None
    if isinstance(value, np.ndarray) and (value.dtype.names or value.dtype == object):
        return [plain(f, x) for x in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(f, x) for x in value]
    return value


def attributes(f, ignore_scales=False):
    out = {}

    def visit(name, obj):
        if ignore_scales and is_scale(obj):
            return
        for key, value in obj.attrs.items():
            if name == "" and key in RUN_ATTRIBUTES:
                continue
            if ignore_scales and key in SCALE_ATTRIBUTES:
                continue
            out[f"{name}@{key}"] = plain(f, value)

    visit("", f)
    f.visititems(visit)
    return out


def same_value(a, b):
    if isinstance(a, list) or isinstance(b, list):
        return a == b
    return np.array_equal(np.asarray(a), np.asarray(b))


def same_bytes(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def main():
    args = sys.argv[1:]
    every = "--bytes" in args
    ignore_scales = "--ignore-scales" in args
    paths = [a for a in args if a not in ("--bytes", "--ignore-scales")]
    a, b = (h5py.File(p, "r") for p in paths[:2])
    for f, p in ((a, paths[0]), (b, paths[1])):
        if f.attrs.get("complete") != 1:
            print(f"{p}: not complete")
            return 1
    da, db = datasets(a, every, ignore_scales), datasets(b, every, ignore_scales)
    problems = []
    for name in sorted(set(da) | set(db)):
        if name not in da or name not in db:
            problems.append(f"{name}: only in one store")
        elif da[name].shape != db[name].shape:
            problems.append(f"{name}: shapes {da[name].shape} vs {db[name].shape}")
        elif every and not same_bytes(da[name], db[name]):
            n = int(np.sum(da[name].view(np.uint8) != db[name].view(np.uint8))) if da[name].dtype == db[name].dtype else -1
            problems.append(f"{name}: bytes differ ({n} bytes)")
        elif not np.array_equal(da[name], db[name]):
            n = int(np.sum(da[name] != db[name]))
            problems.append(f"{name}: {n} values differ")
    if every:
        aa, ab = attributes(a, ignore_scales), attributes(b, ignore_scales)
        for key in sorted(set(aa) | set(ab)):
            if key not in aa or key not in ab:
                problems.append(f"attribute {key}: only in one store")
            elif not same_value(aa[key], ab[key]):
                problems.append(f"attribute {key}: {aa[key]!r} vs {ab[key]!r}")
    # A run's store has dozens of integer datasets, a segmentation store (kind "segment") six, a
    # pruning store ten (its scales and unit counts).
    kind = a.attrs.get("kind", b"run")
    kind = kind.decode() if isinstance(kind, bytes) else kind
    expected = {"segment": 6, "prune": 10}.get(kind, 30)
    if len([n for n in da if np.issubdtype(da[n].dtype, np.integer)]) < expected:
        problems.append(f"only {len(da)} datasets: not a ctxsim store?")
    for p in problems:
        print(p)
    if not problems:
        print(f"identical: {len(da)} {'datasets, byte for byte, and attributes' if every else 'integer datasets'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
