#!/usr/bin/env python3
"""Prints how many bytes a killed ferry copy to FILE recorded as written.

ferry's resumable temporary for DIR/NAME is DIR/.NAME.ferry-<hash>, tagged
with the user attribute user.ferry.resume = "1 <identity> <prefix>"
(core/src/io/temp_file.cc). Prints the prefix, or 0 when there is no
tagged temporary. Used by the resume benchmark and the SIGKILL tests.
"""
import glob
import os
import sys


def recorded(path):
    directory, name = os.path.split(path)
    for temp in glob.glob(os.path.join(directory or ".", "." + name + ".ferry-*")):
        try:
            return int(os.getxattr(temp, "user.ferry.resume").split()[2])
        except (OSError, IndexError, ValueError):
            continue
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: resume_record.py FILE")
    print(recorded(sys.argv[1]))
