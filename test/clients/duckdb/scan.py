"""Read one table with DuckDB's iceberg extension through the Iceberg REST catalog.

    python scan.py --uri URI --warehouse W --s3 URL --table ns.t [--filter "id < 100" ...]
        [--select id,status] [--key K --secret S]

prints one JSON line per --filter (none: one for the whole table):
{"ids": [sorted ids of the rows read], "files": <data files DuckDB's EXPLAIN ANALYZE names, or -1>}
The extensions (iceberg, httpfs, avro) are loaded from the pip packages
duckdb-extension-* (pinned by scripts/install-clients.sh), so nothing is
downloaded at run time.
"""

import argparse
import glob
import json
import os
import sys
from urllib.parse import urlparse

import duckdb


def load_extensions(con):
    import duckdb_extension_iceberg

    site = os.path.dirname(os.path.dirname(duckdb_extension_iceberg.__file__))
    for ext in ("httpfs", "avro", "iceberg"):
        found = glob.glob(f"{site}/duckdb_extension_{ext}/extensions/*/{ext}.duckdb_extension")
        if not found:
            raise SystemExit(f"the {ext} extension is not in the duckdb-extension-{ext} package")
        con.execute(f"LOAD '{found[0]}'")


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--uri", required=True)
    p.add_argument("--warehouse", required=True)
    p.add_argument("--s3", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--filter", action="append", default=[])
    p.add_argument("--select", default="id")
    p.add_argument("--key", default="lakeweed")
    p.add_argument("--secret", default="lakeweed")
    p.add_argument("--oauth", action="store_true", help="authenticate to the catalog with the key as an OAuth2 client")
    a = p.parse_args()
    con = duckdb.connect()
    load_extensions(con)
    s3 = urlparse(a.s3)
    con.execute(
        f"CREATE SECRET s3 (TYPE s3, KEY_ID {quote(a.key)}, SECRET {quote(a.secret)}, ENDPOINT {quote(s3.netloc)}, "
        f"URL_STYLE 'path', USE_SSL {'true' if s3.scheme == 'https' else 'false'}, REGION 'us-east-1')"
    )
    if a.oauth:
        con.execute(
            f"CREATE SECRET cat (TYPE iceberg, CLIENT_ID {quote(a.key)}, CLIENT_SECRET {quote(a.secret)}, "
            f"OAUTH2_SERVER_URI {quote(a.uri + '/v1/oauth/tokens')})"
        )
        auth = "SECRET cat"
    else:
        auth = "AUTHORIZATION_TYPE 'none'"
    con.execute(
        f"ATTACH {quote(a.warehouse)} AS lake (TYPE iceberg, ENDPOINT {quote(a.uri)}, {auth}, ACCESS_DELEGATION_MODE 'none')"
    )
    ns, name = a.table.rsplit(".", 1)
    for f in a.filter or ["true"]:
        rows = con.execute(f'SELECT {a.select} FROM lake."{ns}"."{name}" WHERE {f}').fetchall()
        ids = sorted(r[0] for r in rows)
        print(json.dumps({"files": -1, "ids": ids}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
