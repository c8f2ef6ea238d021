#!/usr/bin/python3
"""Compares two ctxsim stores: every integer dataset must be bitwise identical (SPEC §5).
Usage: compare_stores.py A.h5 B.h5   (exit 0 when identical; lists the differences otherwise)."""
import sys

import h5py
import numpy as np


def integer_datasets(f):
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and np.issubdtype(obj.dtype, np.integer):
            out[name] = obj[...]

    f.visititems(visit)
    return out


def main():
    a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
    for f, p in ((a, sys.argv[1]), (b, sys.argv[2])):
        if f.attrs.get("complete") != 1:
            print(f"{p}: not complete")
            return 1
    da, db = integer_datasets(a), integer_datasets(b)
    problems = []
    for name in sorted(set(da) | set(db)):
        if name not in da or name not in db:
            problems.append(f"{name}: only in one store")
        elif da[name].shape != db[name].shape:
            problems.append(f"{name}: shapes {da[name].shape} vs {db[name].shape}")
        elif not np.array_equal(da[name], db[name]):
            n = int(np.sum(da[name] != db[name]))
            problems.append(f"{name}: {n} values differ")
    if len(da) < 30:
        problems.append(f"only {len(da)} integer datasets: not a ctxsim store?")
    for p in problems:
        print(p)
    if not problems:
        print(f"identical: {len(da)} integer datasets")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
