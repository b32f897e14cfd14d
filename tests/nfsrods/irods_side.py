#!/usr/bin/env python3
"""The iRODS side of the ferry-nfsrods checks, through python-irodsclient
(a client ferry did not write), as rods on 127.0.0.1:PORT, zone tempZone.

    irods_side.py PORT populate COLL N     N data objects with awkward names + 3 subcollections
    irods_side.py PORT awkward DIR N       the same names as empty local files in DIR (for ferry-cp)
    irods_side.py PORT list COLL           its names, sorted, one a line (collections end in /)
    irods_side.py PORT put LOCAL PATH      a local file to a data object
    irods_side.py PORT get PATH LOCAL      a data object to a local file
    irods_side.py PORT rm PATH             removes a data object
    irods_side.py PORT mkcoll PATH         makes a collection (and its parents)
    irods_side.py PORT chmod LEVEL USER PATH  grants USER LEVEL (read, write, own, null)
"""
import sys
from concurrent.futures import ThreadPoolExecutor

from irods.session import iRODSSession

# Spaces, double quotes, unicode, XML's and URLs' special characters, a
# leading dash. (No single quote: python-irodsclient puts names into GenQuery
# conditions unescaped, so it cannot create one; checks.sh makes those
# through NFS.)
AWKWARD = ["plain {i}", "say \"quoted\" {i}", "ünïcødé-日本語-{i}", "a&b<c>d {i}",
           "50% #{i}?", "-dash {i}", "tab\there {i}", "emoji 🙂 {i}"]

SUBCOLLECTIONS = ("sub dir", "ünï sub", "say \"sub\"")


def main(argv):
    port, cmd, args = int(argv[1]), argv[2], argv[3:]
    if cmd == "awkward":
        import os
        for i in range(int(args[1])):
            open(os.path.join(args[0], AWKWARD[i % len(AWKWARD)].format(i=i)), "w").close()
        for name in SUBCOLLECTIONS:  # ferry-cp copies files: one in each, removed after
            os.makedirs(os.path.join(args[0], name))
            open(os.path.join(args[0], name, "x"), "w").close()
        return
    with iRODSSession(host="127.0.0.1", port=port, user="rods", password="rods", zone="tempZone") as s:
        if cmd == "populate":
            coll, n = args[0], int(args[1])
            s.collections.create(coll)
            names = [AWKWARD[i % len(AWKWARD)].format(i=i) for i in range(n)]

            def create(part):  # one session per thread: the peer serves them in parallel
                with iRODSSession(host="127.0.0.1", port=port, user="rods", password="rods", zone="tempZone") as t:
                    for name in part:
                        t.data_objects.create(f"{coll}/{name}")

            with ThreadPoolExecutor(4) as pool:
                list(pool.map(create, [names[k::4] for k in range(4)]))
            for name in SUBCOLLECTIONS:
                s.collections.create(f"{coll}/{name}")
        elif cmd == "list":
            c = s.collections.get(args[0])
            names = [o.name for o in c.data_objects] + [x.name + "/" for x in c.subcollections]
            for name in sorted(names):
                print(name)
        elif cmd == "put":
            s.data_objects.put(args[0], args[1])
        elif cmd == "get":
            s.data_objects.get(args[0], args[1], force=True)
        elif cmd == "rm":
            s.data_objects.unlink(args[0], force=True)
        elif cmd == "chmod":
            from irods.access import iRODSAccess
            s.acls.set(iRODSAccess(args[0], args[2], args[1], "tempZone"))
        elif cmd == "mkcoll":
            s.collections.create(args[0])
        else:
            raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
