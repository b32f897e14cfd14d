"""Makes the benches' NFS trees: TOTAL empty files spread over DIRS folders
named dNNNN (files fNNNNN; the last folder takes the remainder), in one
process (~1 s per 20,000 files).

    python3 tests/bench/make_tree.py ROOT DIRS TOTAL
"""
import os
import sys

root, dirs, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per_dir, made = total // dirs, 0
for d in range(dirs):
    p = os.path.join(root, "d%04d" % d)
    os.makedirs(p)
    n = per_dir if d < dirs - 1 else total - made
    for f in range(n):
        os.close(os.open(os.path.join(p, "f%05d" % f), os.O_CREAT | os.O_WRONLY, 0o644))
    made += n
