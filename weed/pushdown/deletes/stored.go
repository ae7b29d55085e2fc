package deletes

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
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
//	"LWDB" | version 2 (1 byte) | uvarint len(key) | key | uvarint len(bitmap) | portable roaring64 | HMAC-SHA256 of all before it
//
// The key is the full cache key (data file identity and every input delete
// file identity), so a payload written for another delete-file set reads as
// absent. The HMAC is under the services' store key (Options.StoreKey,
// derived from the cluster's service key): a checksum anyone with write
// access to the table bucket could recompute, and a forged bitmap deletes
// rows; without the key a payload cannot be made to verify. Version 1
// payloads (CRC-32, written before) read as absent and are recomputed.
var storedMagic = [4]byte{'L', 'W', 'D', 'B'}

const storedVersion = 2

// StoreKeyPurpose names the store key a service derives from its service
// key (access.Keys.Derive).
const StoreKeyPurpose = "deletes bitmap store v2"

// maxStoredKey bounds the key a payload may declare.
const maxStoredKey = 1 << 20

// errNoStoreKey refuses to seal or trust a payload without a store key.
var errNoStoreKey = errors.New("no store key: persisted bitmaps are neither written nor trusted")

// EncodeStored encodes bitmap b under cache key key, sealed with storeKey.
func EncodeStored(key string, b *roaring64.Bitmap, storeKey []byte) ([]byte, error) {
	if len(storeKey) == 0 {
		return nil, fmt.Errorf("deletes: %w", errNoStoreKey)
	}
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
	out := make([]byte, 0, 4+1+2*binary.MaxVarintLen64+len(key)+bm.Len()+sha256.Size)
	out = append(out, storedMagic[:]...)
	out = append(out, storedVersion)
	out = binary.AppendUvarint(out, uint64(len(key)))
	out = append(out, key...)
	out = binary.AppendUvarint(out, uint64(bm.Len()))
	out = append(out, bm.Bytes()...)
	return append(out, storedMAC(storeKey, out)...), nil
}

func storedMAC(storeKey, body []byte) []byte {
	m := hmac.New(sha256.New, storeKey)
	m.Write(body)
	return m.Sum(nil)
}

// DecodeStored decodes a payload written by EncodeStored for key under
// storeKey. Any mismatch, corruption or forgery reads as absent (ok ==
// false, logged at V(1)).
func DecodeStored(key string, payload []byte, storeKey []byte) (*roaring64.Bitmap, bool) {
	b, err := decodeStored(key, payload, storeKey)
	if err != nil {
		glog.V(1).Infof("pushdown deletes: ignoring persisted bitmap (%d bytes) for %q: %v", len(payload), perr.Truncate(key, 256), err)
		return nil, false
	}
	return b, true
}

func decodeStored(key string, p []byte, storeKey []byte) (*roaring64.Bitmap, error) {
	if len(storeKey) == 0 {
		return nil, errNoStoreKey
	}
	if len(p) < 4+1+1+1+sha256.Size {
		return nil, fmt.Errorf("payload of %d bytes is too short", len(p))
	}
	if !bytes.Equal(p[:4], storedMagic[:]) {
		return nil, fmt.Errorf("bad magic % X", p[:4])
	}
	if p[4] != storedVersion {
		return nil, fmt.Errorf("version %d, want %d", p[4], storedVersion)
	}
	body, mac := p[:len(p)-sha256.Size], p[len(p)-sha256.Size:]
	if !hmac.Equal(mac, storedMAC(storeKey, body)) {
		return nil, errors.New("HMAC mismatch: not written by a service of this cluster, or damaged")
	}
	rest := body[5:]
	klen, n := binary.Uvarint(rest)
	if n <= 0 || klen > maxStoredKey || klen > uint64(len(rest)-n) {
		return nil, fmt.Errorf("bad key length")
	}
	rest = rest[n:]
	if string(rest[:klen]) != key {
		return nil, fmt.Errorf("written for another key %q", perr.Truncate(string(rest[:klen]), 256))
	}
	rest = rest[klen:]
	blen, n := binary.Uvarint(rest)
	if n <= 0 || blen > math.MaxInt32 || blen != uint64(len(rest)-n) {
		return nil, fmt.Errorf("bad bitmap length")
	}
	return DecodePortableRoaring64(rest[n:])
}
