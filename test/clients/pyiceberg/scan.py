"""Scan one table with PyIceberg and print what it planned and read.

    python scan.py --uri URI --warehouse W --s3 URL --table ns.t --mode server|client \
        [--filter "id < 100" ...] [--select id,status] [--credential key:secret] [--read-only]

prints one JSON line per --filter (none: one for the whole table):
{"files": <data files planned>, "ids": [sorted ids of the rows read], "ms": <to_arrow wall ms>}
(--read-only: to_arrow alone, files 0: what a benchmark times and counts bytes of).
--mode is PyIceberg's catalog property scan-planning-mode: "server" plans through the
REST catalog's scan-planning endpoints, "client" reads the manifests itself.
"""

import argparse
import json
import sys
import time

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.expressions.parser import parse


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--uri", required=True)
    p.add_argument("--warehouse", required=True)
    p.add_argument("--s3", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--mode", choices=["server", "client"], required=True)
    p.add_argument("--filter", action="append", default=[])
    p.add_argument("--select", default="id")
    p.add_argument("--credential", default="")
    p.add_argument("--read-only", action="store_true")
    a = p.parse_args()
    props = {
        "uri": a.uri,
        "warehouse": a.warehouse,
        "scan-planning-mode": a.mode,
        "s3.endpoint": a.s3,
        "s3.region": "us-east-1",
        "s3.access-key-id": "lakeweed",
        "s3.secret-access-key": "lakeweed",
        "s3.force-virtual-addressing": "false",
    }
    if a.credential:
        props["credential"] = a.credential
        key, secret = a.credential.split(":", 1)
        props["s3.access-key-id"], props["s3.secret-access-key"] = key, secret
    else:
        # a cluster without identities: no Authorization header at all
        # (PyIceberg would otherwise send "Bearer None", which is refused)
        props["token"] = ""
    cat = RestCatalog("lakeweed", **props)
    tbl = cat.load_table(a.table)
    for f in a.filter or [""]:
        row_filter = parse(f) if f else AlwaysTrue()
        scan = tbl.scan(row_filter=row_filter, selected_fields=tuple(a.select.split(",")))
        files = set() if a.read_only else {t.file.file_path for t in scan.plan_files()}
        t0 = time.perf_counter()
        rows = scan.to_arrow()
        ms = (time.perf_counter() - t0) * 1000
        ids = sorted(rows["id"].to_pylist())
        print(json.dumps({"files": len(files), "ids": ids, "ms": ms}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
