#!/usr/bin/python3
"""Compares two ctxsim stores: every integer dataset must be bitwise identical (SPEC §5).
With --bytes, every dataset of any type (floats included) must hold the same bytes, and every
attribute must be equal except those that describe how and when the run went (times, ranks,
threads, paths, the program's revision).
Usage: compare_stores.py [--bytes] A.h5 B.h5   (exit 0 when identical; lists the differences)."""
import sys

import h5py
import numpy as np

# Root attributes that describe the run, not its results.
RUN_ATTRIBUTES = {"started", "finished", "run_seconds", "ranks", "threads_per_rank", "config_path", "model_path",
                  "vocab_path", "git_revision", "ctxsim_version", "isa", "blas", "devices", "per_rank_seconds"}


def datasets(f, every_type):
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and (every_type or np.issubdtype(obj.dtype, np.integer)):
            out[name] = obj[...]

    f.visititems(visit)
    return out


def attributes(f):
    out = {}

    def visit(name, obj):
        for key, value in obj.attrs.items():
            if name == "" and key in RUN_ATTRIBUTES:
                continue
            out[f"{name}@{key}"] = value

    visit("", f)
    f.visititems(visit)
    return out


def same_bytes(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def main():
    args = sys.argv[1:]
    every = "--bytes" in args
    paths = [a for a in args if a != "--bytes"]
    a, b = (h5py.File(p, "r") for p in paths[:2])
    for f, p in ((a, paths[0]), (b, paths[1])):
        if f.attrs.get("complete") != 1:
            print(f"{p}: not complete")
            return 1
    da, db = datasets(a, every), datasets(b, every)
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
        aa, ab = attributes(a), attributes(b)
        for key in sorted(set(aa) | set(ab)):
            if key not in aa or key not in ab:
                problems.append(f"attribute {key}: only in one store")
            elif not np.array_equal(np.asarray(aa[key]), np.asarray(ab[key])):
                problems.append(f"attribute {key}: {aa[key]!r} vs {ab[key]!r}")
    if len([n for n in da if np.issubdtype(da[n].dtype, np.integer)]) < 30:
        problems.append(f"only {len(da)} datasets: not a ctxsim store?")
    for p in problems:
        print(p)
    if not problems:
        print(f"identical: {len(da)} {'datasets, byte for byte, and attributes' if every else 'integer datasets'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
