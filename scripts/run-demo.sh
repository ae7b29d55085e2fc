#!/usr/bin/env bash
# `make run`: one `weed mini -pushdown` process on ./data with the demo table.
#
# Starts master, volume server, filer, S3 gateway, Iceberg REST catalog and both
# pushdown services in one process; on first start loads demo.events (table
# bucket "warehouse") through the Iceberg REST catalog; prints how to reach
# everything; stops the cluster on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
WEED=${WEED:-bin/weed}
DATA=${DATA:-data}
IP=${IP_ADDRESS:-127.0.0.1}
METRICS_PORT=${METRICS_PORT:-9327}
mkdir -p "$DATA"

"$WEED" mini -dir="$DATA" -ip="$IP" -ip.bind="$IP" -master.telemetry=false -metricsPort="$METRICS_PORT" \
  -tableBucket=warehouse -pushdown -pushdown.flightsql.port=32010 "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; exit 0' INT TERM

# Wait (quietly, up to READY_TIMEOUT seconds) until the catalog pushdown
# service answers and sees the volume pushdown service: it starts after the
# filer, S3 gateway and Iceberg REST catalog of the same process.
ready=
for i in $(seq 1 $(( ${READY_TIMEOUT:-90} * 2 ))); do
  if "$WEED" pushdown status -catalog "$IP:18181" -timeout 1s 2>/dev/null | grep -q "1 healthy"; then ready=1; break; fi
  if ! kill -0 $pid 2>/dev/null; then echo "weed mini exited; see the output above" >&2; exit 1; fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "lakeweed did not become ready within ${READY_TIMEOUT:-90}s (bin/weed pushdown status -catalog $IP:18181 says why); stopping" >&2
  kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null
  exit 1
fi

if [ ! -f "$DATA/.demo-loaded" ]; then
  echo
  echo "First start: loading the demo table demo.events (1,000,000 rows, 8 files) ..."
  "$WEED" pushdown demo -table demo.events -catalog "$IP:18181" -warehouse warehouse
  touch "$DATA/.demo-loaded"
fi

case $DATA in /*) shown=$DATA ;; *) shown=./$DATA ;; esac
cat_flag=
[ "$IP" = 127.0.0.1 ] || cat_flag=" -catalog $IP:18181"
cat <<MSG

lakeweed is running (PID $pid), data in $shown
  S3 gateway            http://$IP:8333        (no identities: any access key, or none)
  Iceberg REST catalog  http://$IP:8181        (warehouse: table bucket "warehouse", table demo.events)
  catalog pushdown API  $IP:18181             (gRPC, weed/pb/pushdown.proto)
  volume pushdown API   $IP:29340             (the catalog discovers it: bin/weed pushdown status)
  Arrow Flight SQL      grpc://$IP:32010      (ADBC, JDBC, BI tools; no identities: no credentials needed)
  Prometheus metrics    http://$IP:$METRICS_PORT/metrics
  every port weed mini opens: README.md, "Ports of make run"

Try:
  bin/weed pushdown status$cat_flag
  bin/weed pushdown query$cat_flag -sql "SELECT id, tenant_id, status FROM demo.events WHERE tenant_id = 'tenant-042' AND status = 'error' LIMIT 10" -stats
  bin/weed pushdown query$cat_flag -sql "SELECT tenant_id, status, COUNT(*) AS n, MAX(id) FROM demo.events GROUP BY tenant_id, status ORDER BY n DESC LIMIT 5" -stats
  bin/weed pushdown demo$cat_flag -print-vector      # prints a vector query to copy and run
  aws --endpoint-url http://$IP:8333 s3 ls --recursive s3://warehouse/demo/

Press Ctrl-C to stop.
MSG
wait $pid
