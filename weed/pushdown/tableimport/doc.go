// Package tableimport brings an existing Iceberg table, a local folder
// written by Spark, PyIceberg, DuckDB or any other writer, into a lakeweed
// warehouse: it copies every file the table references into the table
// bucket and rewrites every path in them onto the table's new location, as
// Iceberg's rewrite-table-path action does, then registers the table with
// the Iceberg REST catalog.
//
//	local folder (read only)             staging (temp)                 warehouse bucket
//	metadata/vN.metadata.json ──JSON──▶  location, manifest-list,  ─┐
//	  (.gz read, stored plain)           metadata-log, statistics   │
//	snap-*.avro (manifest lists) ─Avro─▶ manifest_path, _length     │   S3 gateway
//	*-m0.avro (manifests) ───────Avro──▶ file_path, referenced_     ├─▶ (aws-sdk-go-v2) ─▶ s3://B/ns/name-<uuid>/...
//	                                     data_file, sizes, bounds   │                         │
//	position deletes (Parquet) ─arrow──▶ file_path column           │                         ▼
//	deletion vectors (Puffin) ──footer─▶ referenced-data-file       │      Iceberg REST catalog: RegisterTable
//	data, equality deletes, stats ─────────── copied as they are ───┘      (current metadata file, uploaded last)
//
// A deletion-vector file that is not a Puffin file (an older writer's blob
// stored on its own) has no footer to rewrite: it is copied byte for byte
// with a note, since readers refuse it unless they accept bare deletion
// vectors.
//
// Prepare checks everything first (each referenced file exists with the
// size its manifest says, each path lies under the stripped prefix) and
// refuses the whole table with a list of problems otherwise; Import then
// uploads, registers, and removes what it uploaded when registration fails.
// Avro files are decoded generically (goavro's native form, logical types
// read physically) and written back with their header, schema text, codec,
// sync marker and block layout; metadata JSON is rewritten key by key in an
// order-preserving document, so no field a writer put there is lost.
package tableimport
