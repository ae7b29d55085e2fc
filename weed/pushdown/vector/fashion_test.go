package vector

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist installs the
// data set (60,000 + 10,000 images of 28 × 28 bytes).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// LoadFashionMNIST reads an idx3 image file as a matrix of 784-d vectors
// (pixel values 0-255), at most limit rows (0: all).
func LoadFashionMNIST(name string, limit int) (*Matrix, error) {
	f, err := os.Open(filepath.Join(FashionMNISTDir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var hdr [4]uint32
	if err := binary.Read(z, binary.BigEndian, &hdr); err != nil {
		return nil, err
	}
	if hdr[0] != 0x803 {
		return nil, fmt.Errorf("%s: magic %#x is not an idx3 image file", name, hdr[0])
	}
	n, dim := int(hdr[1]), int(hdr[2]*hdr[3])
	if limit > 0 {
		n = min(n, limit)
	}
	buf := make([]byte, n*dim)
	if _, err := io.ReadFull(z, buf); err != nil {
		return nil, err
	}
	m := &Matrix{Dim: dim, Data: make([]float32, n*dim), Valid: make([]bool, n)}
	for i, b := range buf {
		m.Data[i] = float32(b)
	}
	for i := range m.Valid {
		m.Valid[i] = true
	}
	return m, nil
}

func fashion(t *testing.T) (train, test *Matrix) {
	t.Helper()
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST is not installed at %s (apt-get install dataset-fashion-mnist): %v", FashionMNISTDir, err)
	}
	train, err := LoadFashionMNIST("train-images-idx3-ubyte.gz", 0)
	if err != nil {
		t.Fatal(err)
	}
	test, err = LoadFashionMNIST("t10k-images-idx3-ubyte.gz", 100)
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

func TestIVFOnFashionMNISTReachesRecallAtTenOfNinetyFivePercent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds indexes over 60,000 × 784 vectors")
	}
	train, test := fashion(t)
	for _, pq := range []bool{false, true} {
		t0 := time.Now()
		ix, err := Build(train, BuildOptions{PQ: pq, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		build := time.Since(t0)
		var r float64
		var scored, approx int64
		var search, brute time.Duration
		for i := range test.Rows() {
			q := Query{Vector: test.Row(i), K: 10, Metric: L2}
			t1 := time.Now()
			got, st, err := ix.Search(train, q)
			if err != nil {
				t.Fatal(err)
			}
			search += time.Since(t1)
			t1 = time.Now()
			want, _, _ := Exact(train, q)
			brute += time.Since(t1)
			r += recall(got, want)
			scored += st.Scored
			approx += st.Approx
		}
		n := test.Rows()
		r /= float64(n)
		t.Logf("fashion-mnist pq=%v: nlist %d, build %v, recall@10 %.3f, search %v/query (exact %v/query), %d exact + %d PQ distances/query",
			pq, ix.NList(), build.Round(time.Millisecond), r, (search / time.Duration(n)).Round(time.Microsecond),
			(brute / time.Duration(n)).Round(time.Microsecond), scored/n, approx/n)
		if r < 0.95 {
			t.Errorf("pq=%v: recall@10 %.3f on Fashion-MNIST, want ≥ 0.95", pq, r)
		}
	}
}
