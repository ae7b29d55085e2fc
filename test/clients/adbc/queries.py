"""Queries lakeweed's Flight SQL endpoint with Python's ADBC Flight SQL driver
(adbc-driver-flightsql), reading answers as PyArrow tables, pandas and Polars
frames; prints one JSON object of what each returned, for the Go test to check.

  python queries.py --uri grpc://127.0.0.1:32010 --table demo.events [--user KEY --password SECRET]
"""
import argparse
import json

import adbc_driver_flightsql.dbapi as flightsql
import polars as pl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uri", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--user", default="")
    ap.add_argument("--password", default="")
    a = ap.parse_args()
    kwargs = {}
    if a.user:
        kwargs["db_kwargs"] = {"username": a.user, "password": a.password}
    out = {}
    with flightsql.connect(a.uri, **kwargs) as conn:
        with conn.cursor() as cur:
            # a filter
            cur.execute(f"SELECT id, tenant_id FROM {a.table} WHERE tenant_id = 'tenant-005' AND id < 3000 ORDER BY id")
            t = cur.fetch_arrow_table()
            out["filter_ids"] = t.column("id").to_pylist()
            # a GROUP BY, read as pandas
            cur.execute(f"SELECT status, COUNT(*) AS n, MAX(id) AS top FROM {a.table} GROUP BY status ORDER BY status")
            df = cur.fetch_df()
            out["group_by"] = [[r.status, int(r.n), int(r.top)] for r in df.itertuples()]
            # a prepared statement with a parameter
            cur.execute(f"SELECT COUNT(*) AS n FROM {a.table} WHERE tenant_id = ?", parameters=("tenant-007",))
            out["prepared_count"] = cur.fetch_arrow_table().column("n").to_pylist()[0]
            # Polars from the Arrow answer
            cur.execute(f"SELECT tenant_id, COUNT(*) AS n FROM {a.table} GROUP BY tenant_id ORDER BY n DESC, tenant_id LIMIT 3")
            frame = pl.from_arrow(cur.fetch_arrow_table())
            out["polars_top"] = frame.rows()
            # unsupported SQL is refused naming the construct
            try:
                cur.execute(f"SELECT id + 1 FROM {a.table}")
                cur.fetch_arrow_table()
                out["unsupported"] = "accepted"
            except Exception as e:  # the driver's ProgrammingError / OperationalError
                out["unsupported"] = str(e)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
