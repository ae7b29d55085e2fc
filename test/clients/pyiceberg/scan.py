"""Scan one table with PyIceberg and print what it planned and read.

    python scan.py --uri URI --warehouse W --s3 URL --table ns.t --mode server|client \
        [--filter "id < 100" ...] [--select id,status] [--credential key:secret | --sigv4 key:secret] [--read-only]

prints one JSON line per --filter (none: one for the whole table):
{"files": <data files planned>, "ids": [sorted ids of the rows read], "ms": <to_arrow wall ms>}
(--read-only: to_arrow alone, files 0: what a benchmark times and counts bytes of).
--mode is PyIceberg's catalog property scan-planning-mode: "server" plans through the
REST catalog's scan-planning endpoints, "client" reads the manifests itself.
--sigv4 signs every REST call with AWS SigV4 (rest.sigv4-enabled) as that S3 identity
instead of an OAuth2 credential; its signing name (default s3tables, as for AWS S3 Tables) is --signing-name.
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
    p.add_argument("--sigv4", default="")
    p.add_argument("--signing-name", default="s3tables")
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
    if a.sigv4:
        key, secret = a.sigv4.split(":", 1)
        props.update({
            "rest.sigv4-enabled": "true",
            "rest.signing-region": "us-east-1",
            "rest.signing-name": a.signing_name,
            "client.access-key-id": key,
            "client.secret-access-key": secret,
            "s3.access-key-id": key,
            "s3.secret-access-key": secret,
        })
    elif a.credential:
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
