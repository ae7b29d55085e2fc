#!/usr/bin/env bash
# Installs the Iceberg clients someone else wrote that the integration tests
# plan and read with (server-side scan planning, weed/pushdown/restplan):
#   .tools/pyiceberg  a virtualenv with PyIceberg (pinned), PyArrow and boto3
#                     (PyIceberg's rest-sigv4 extra: SigV4-signed REST calls)
#   .tools/java       test/clients/java built with Maven: Iceberg Java's
#                     RESTCatalog + RESTTableScan (pinned in its pom.xml)
#   .tools/duckdb     a virtualenv with DuckDB and its iceberg, httpfs and avro
#                     extensions from their PyPI packages (pinned; DuckDB's own
#                     extension repository is not reachable from CI)
#   .tools/adbc       a virtualenv with Python's ADBC Flight SQL driver,
#                     PyArrow, pandas and Polars (pinned): the Flight SQL tests
# A client that cannot be installed here is reported and its tests skip,
# naming what is missing; this script never fails the build.
set -uo pipefail
cd "$(dirname "$0")/.."
PYICEBERG=0.12.0
PYARROW=26.0.1
BOTO3=1.44.8
ADBC=1.13.0
DUCKDB=1.5.5
PANDAS=3.1.1
POLARS=2.1.0

have() { command -v "$1" >/dev/null 2>&1; }

install_pyiceberg() {
  local py=.tools/pyiceberg/bin/python
  if [ -x "$py" ] && [ "$("$py" -c 'import pyiceberg, pyarrow, boto3; print(pyiceberg.__version__, boto3.__version__)' 2>/dev/null)" = "$PYICEBERG $BOTO3" ]; then
    return 0
  fi
  if ! have python3; then
    echo "install-clients: no python3: PyIceberg tests will skip" >&2
    return 0
  fi
  rm -rf .tools/pyiceberg
  if ! python3 -m venv .tools/pyiceberg >/dev/null 2>&1; then
    if have apt-get; then
      apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq python3-venv >/dev/null 2>&1
    fi
    rm -rf .tools/pyiceberg
    python3 -m venv .tools/pyiceberg >/dev/null 2>&1 || { echo "install-clients: python3 -m venv failed: PyIceberg tests will skip" >&2; return 0; }
  fi
  .tools/pyiceberg/bin/pip install -q --disable-pip-version-check "pyiceberg[pyarrow,rest-sigv4]==$PYICEBERG" "pyarrow==$PYARROW" "boto3==$BOTO3" \
    || echo "install-clients: pip install pyiceberg==$PYICEBERG failed: PyIceberg tests will skip" >&2
}

install_java() {
  if [ -f .tools/java/iceberg-java-scan.jar ] && [ .tools/java/iceberg-java-scan.jar -nt test/clients/java/pom.xml ] \
     && [ .tools/java/iceberg-java-scan.jar -nt test/clients/java/src/main/java/lakeweed/ScanTable.java ]; then
    return 0
  fi
  if ! have java || ! have mvn; then
    echo "install-clients: java or mvn missing: Iceberg Java tests will skip" >&2
    return 0
  fi
  mvn -q -B -f test/clients/java/pom.xml package >/tmp/lakeweed-java-client.log 2>&1 \
    || { echo "install-clients: building test/clients/java failed (log: /tmp/lakeweed-java-client.log): Iceberg Java tests will skip" >&2; tail -20 /tmp/lakeweed-java-client.log >&2; }
}

install_adbc() {
  local py=.tools/adbc/bin/python
  if [ -x "$py" ] && [ "$("$py" -c 'import adbc_driver_flightsql, pyarrow, pandas, polars; print(adbc_driver_flightsql.__version__)' 2>/dev/null)" = "$ADBC" ]; then
    return 0
  fi
  if ! have python3; then
    echo "install-clients: no python3: ADBC Flight SQL tests will skip" >&2
    return 0
  fi
  rm -rf .tools/adbc
  python3 -m venv .tools/adbc >/dev/null 2>&1 || { echo "install-clients: python3 -m venv failed: ADBC Flight SQL tests will skip" >&2; return 0; }
  .tools/adbc/bin/pip install -q --disable-pip-version-check "adbc-driver-flightsql==$ADBC" "adbc-driver-manager==$ADBC" \
    "pyarrow==$PYARROW" "pandas==$PANDAS" "polars==$POLARS" \
    || echo "install-clients: pip install adbc-driver-flightsql==$ADBC failed: ADBC Flight SQL tests will skip" >&2
}

install_duckdb() {
  local py=.tools/duckdb/bin/python
  if [ -x "$py" ] && [ "$("$py" -c 'import duckdb, duckdb_extension_iceberg, duckdb_extension_httpfs, duckdb_extension_avro; print(duckdb.__version__)' 2>/dev/null)" = "$DUCKDB" ]; then
    return 0
  fi
  if ! have python3; then
    echo "install-clients: no python3: DuckDB tests will skip" >&2
    return 0
  fi
  rm -rf .tools/duckdb
  python3 -m venv .tools/duckdb >/dev/null 2>&1 || { echo "install-clients: python3 -m venv failed: DuckDB tests will skip" >&2; return 0; }
  .tools/duckdb/bin/pip install -q --disable-pip-version-check "duckdb==$DUCKDB" "duckdb-extension-iceberg==$DUCKDB" \
    "duckdb-extension-httpfs==$DUCKDB" "duckdb-extension-avro==$DUCKDB" \
    || echo "install-clients: pip install duckdb==$DUCKDB with its iceberg extension failed: DuckDB tests will skip" >&2
}

mkdir -p .tools
install_pyiceberg
install_java
install_adbc
install_duckdb
exit 0
