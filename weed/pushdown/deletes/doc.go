// Package deletes turns Iceberg delete files into roaring64 bitmaps of the
// deleted file-absolute row positions of a data file, with iceberg-go's
// (v0.7.0) rules for which delete files apply, in-memory and persisted
// caches, and the persisted payload format.
//
//	manifest entries ──► Index.For(data file) ──► []File that apply (Applies)
//	                                                   │
//	                      ┌────────────────────────────┼──────────────────────────────┐
//	                      ▼                            ▼                              ▼
//	          deletion vector (Puffin)     position delete files (Parquet)   equality delete files (Parquet)
//	          ReadDV: 1 ranged read,       ReadPositionDeletes: rows with    EqualityDeleted: key tuples of the
//	          length/magic/CRC/bounds      file_path == data path; row       delete file vs. the data file's
//	          checked                      groups skipped by file_path stats  equality columns (one data pass)
//	                      │                            │                              │
//	          memory: (puffin path, size,  memory + Store: (data file,        memory + Store: (data file,
//	           blob offset, length)         sorted delete-file identities)     equality delete file) per pair
//	                      └──────────────► Computer.Deleted: union, drop ≥ record_count ◄─┘
//	                                                   │
//	                                                   ▼
//	                                    Result.Deleted (*roaring64.Bitmap)
//
// A deletion vector supersedes position delete files for its data file.
// Persisted payloads (EncodeStored) carry their full cache key and an
// HMAC-SHA256 under the services' store key (Options.StoreKey), so a
// payload for another delete-file set, a damaged one, or one forged by
// anyone who can write the table bucket reads as absent and is recomputed —
// never an error, never a wrong answer. Without a store key nothing is
// persisted.
//
// Errors are perr errors naming the file: Corrupt for malformed bytes,
// FailedPrecondition for unsupported formats (Avro, ORC), InvalidArgument for
// bad requests, Unavailable for I/O failures.
package deletes
