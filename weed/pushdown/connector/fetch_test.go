package connector

import (
	"bytes"
	"testing"
)

// A read may cross fetched ranges that touch or overlap, in any order of
// their ends (a plan's coalesced range holding smaller cached ones); a
// byte not fetched fails the read.
func TestSparseFileReadsAcrossTouchingAndOverlappingRanges(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sf := &sparseFile{path: "mem", size: int64(len(data))}
	for _, r := range []byteRange{{Off: 100, Len: 400}, {Off: 150, Len: 50}, {Off: 480, Len: 20}, {Off: 500, Len: 100}, {Off: 700, Len: 10}} {
		sf.add(r.Off, data[r.Off:r.Off+r.Len])
	}
	for _, r := range []byteRange{{Off: 100, Len: 500}, {Off: 210, Len: 300}, {Off: 160, Len: 10}, {Off: 599, Len: 1}, {Off: 700, Len: 10}} {
		b := make([]byte, r.Len)
		if _, err := sf.ReadAt(b, r.Off); err != nil || !bytes.Equal(b, data[r.Off:r.Off+r.Len]) {
			t.Errorf("read [%d, %d): err %v, equal %v", r.Off, r.Off+r.Len, err, bytes.Equal(b, data[r.Off:r.Off+r.Len]))
		}
	}
	for _, r := range []byteRange{{Off: 50, Len: 60}, {Off: 590, Len: 20}, {Off: 650, Len: 10}, {Off: 705, Len: 10}} {
		if _, err := sf.ReadAt(make([]byte, r.Len), r.Off); err == nil {
			t.Errorf("read [%d, %d) of bytes not fetched succeeded", r.Off, r.Off+r.Len)
		}
	}
}
