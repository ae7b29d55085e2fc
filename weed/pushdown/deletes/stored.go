package deletes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/seaweedfs/seaweedfs/weed/glog"
)

// Store persists computed bitmaps beside a data file's other side indexes
// (<parent>/.index/<file_name>/<identity>/<Name>).
type Store interface {
	// Load returns the payload saved under k, or (nil, nil) when absent.
	Load(ctx context.Context, k StoreKey) ([]byte, error)
	Save(ctx context.Context, k StoreKey, b []byte) error
}

// StoreKey names one persisted bitmap of data file Data.
type StoreKey struct {
	Data DataFile
	Name string // PositionStoreName or EqualityStoreName(del)
}

// PositionStoreName is the name of a data file's merged position delete
// bitmap.
const PositionStoreName = "deletes.position.bitmap"

// EqualityStoreName is the name of the per-pair bitmap of equality delete
// file del: deletes.equality.<hex of sha256(del.Identity())[:16]>.bitmap.
func EqualityStoreName(del File) string {
	sum := sha256.Sum256([]byte(del.Identity()))
	return "deletes.equality." + hex.EncodeToString(sum[:16]) + ".bitmap"
}

// Persisted payload:
//
//	"LWDB" | version (1 byte) | uvarint len(key) | key | uvarint len(bitmap) | portable roaring64 | CRC-32 (IEEE, big-endian) of all before it
//
// The key is the full cache key (data file identity and every input delete
// file identity), so a payload written for another delete-file set reads as
// absent.
var storedMagic = [4]byte{'L', 'W', 'D', 'B'}

const storedVersion = 1

// maxStoredKey bounds the key a payload may declare.
const maxStoredKey = 1 << 20

// EncodeStored encodes bitmap b under cache key key.
func EncodeStored(key string, b *roaring64.Bitmap) ([]byte, error) {
	if len(key) > maxStoredKey {
		return nil, fmt.Errorf("deletes: cache key of %d bytes exceeds %d", len(key), maxStoredKey)
	}
	var bm bytes.Buffer
	if b == nil {
		b = roaring64.New()
	}
	if _, err := b.WriteTo(&bm); err != nil {
		return nil, fmt.Errorf("deletes: serialize bitmap: %w", err)
	}
	out := make([]byte, 0, 4+1+2*binary.MaxVarintLen64+len(key)+bm.Len()+4)
	out = append(out, storedMagic[:]...)
	out = append(out, storedVersion)
	out = binary.AppendUvarint(out, uint64(len(key)))
	out = append(out, key...)
	out = binary.AppendUvarint(out, uint64(bm.Len()))
	out = append(out, bm.Bytes()...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out)), nil
}

// DecodeStored decodes a payload written by EncodeStored for key. Any
// mismatch or corruption reads as absent (ok == false, logged at V(1)).
func DecodeStored(key string, payload []byte) (*roaring64.Bitmap, bool) {
	b, err := decodeStored(key, payload)
	if err != nil {
		glog.V(1).Infof("pushdown deletes: ignoring persisted bitmap (%d bytes) for %q: %v", len(payload), key, err)
		return nil, false
	}
	return b, true
}

func decodeStored(key string, p []byte) (*roaring64.Bitmap, error) {
	if len(p) < 4+1+1+1+4 {
		return nil, fmt.Errorf("payload of %d bytes is too short", len(p))
	}
	if !bytes.Equal(p[:4], storedMagic[:]) {
		return nil, fmt.Errorf("bad magic % X", p[:4])
	}
	body, sum := p[:len(p)-4], binary.BigEndian.Uint32(p[len(p)-4:])
	if got := crc32.ChecksumIEEE(body); got != sum {
		return nil, fmt.Errorf("CRC-32 mismatch: computed %08x, stored %08x", got, sum)
	}
	if body[4] != storedVersion {
		return nil, fmt.Errorf("version %d, want %d", body[4], storedVersion)
	}
	rest := body[5:]
	klen, n := binary.Uvarint(rest)
	if n <= 0 || klen > maxStoredKey || klen > uint64(len(rest)-n) {
		return nil, fmt.Errorf("bad key length")
	}
	rest = rest[n:]
	if string(rest[:klen]) != key {
		return nil, fmt.Errorf("written for another key %q", rest[:klen])
	}
	rest = rest[klen:]
	blen, n := binary.Uvarint(rest)
	if n <= 0 || blen > math.MaxInt32 || blen != uint64(len(rest)-n) {
		return nil, fmt.Errorf("bad bitmap length")
	}
	return DecodePortableRoaring64(rest[n:])
}
