package plan

// ByteRange is [Off, Off+Len) of one file, as Coalesce takes and returns
// it (for readers that coalesce what they add to a plan's ranges).
type ByteRange = byteRange
