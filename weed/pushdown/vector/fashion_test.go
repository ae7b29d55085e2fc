package vector

import (
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist installs the
// data set (60,000 + 10,000 images of 28 × 28 bytes).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// readIdx opens a gzipped idx file of the data set, checks its magic and
// reads the header's dimension sizes (the rest of z is the data).
func readIdx(name string, magic uint32, dims int, read func(z io.Reader, sizes []uint32) error) error {
	f, err := os.Open(filepath.Join(FashionMNISTDir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	hdr := make([]uint32, 1+dims)
	if err := binary.Read(z, binary.BigEndian, hdr); err != nil {
		return err
	}
	if hdr[0] != magic {
		return fmt.Errorf("%s: magic %#x is not %#x", name, hdr[0], magic)
	}
	return read(z, hdr[1:])
}

// LoadFashionMNIST reads an idx3 image file as a matrix of 784-d vectors
// (pixel values 0-255), at most limit rows (0: all).
func LoadFashionMNIST(name string, limit int) (m *Matrix, err error) {
	err = readIdx(name, 0x803, 3, func(z io.Reader, hdr []uint32) error {
		m, err = readImages(z, hdr, limit)
		return err
	})
	return m, err
}

func readImages(z io.Reader, hdr []uint32, limit int) (*Matrix, error) {
	n, dim := int(hdr[0]), int(hdr[1]*hdr[2])
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

// LoadFashionMNISTLabels reads an idx1 label file, at most limit labels.
func LoadFashionMNISTLabels(name string, limit int) (labels []byte, err error) {
	err = readIdx(name, 0x801, 1, func(z io.Reader, hdr []uint32) error {
		labels = make([]byte, min(int(hdr[0]), limit))
		_, err := io.ReadFull(z, labels)
		return err
	})
	return labels, err
}

// The benchmark's filters on one file's worth of Fashion-MNIST (15,000
// images): a label (the class, strongly correlated with the pixels) at
// 50%, 10%, 1% and 0.1%.
func TestFilteredIVFOnFashionMNISTLabelsKeepsRecallAtEverySelectivity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index over 15,000 × 784 vectors")
	}
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST is not installed at %s (apt-get install dataset-fashion-mnist): %v", FashionMNISTDir, err)
	}
	const n = 15000
	train, err := LoadFashionMNIST("train-images-idx3-ubyte.gz", n)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := LoadFashionMNISTLabels("train-labels-idx1-ubyte.gz", n)
	if err != nil {
		t.Fatal(err)
	}
	test, err := LoadFashionMNIST("t10k-images-idx3-ubyte.gz", 50)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]func(p int) bool{
		"label < 5 (50%)":               func(p int) bool { return labels[p] < 5 },
		"label = 3 (10%)":               func(p int) bool { return labels[p] == 3 },
		"label = 3 AND id < 1500 (1%)":  func(p int) bool { return labels[p] == 3 && p < n/10 },
		"label = 3 AND id < 150 (0.1%)": func(p int) bool { return labels[p] == 3 && p < n/100 },
	}
	masks := map[string]*roaring64.Bitmap{}
	for name, k := range keep {
		masks[name] = roaring64.New()
		for p := range n {
			if k(p) {
				masks[name].Add(uint64(p))
			}
		}
	}
	var qs [][]float32
	for i := range test.Rows() {
		qs = append(qs, test.Row(i))
	}
	ix, err := Build(train, BuildOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkFilteredRecall(t, "fashion-mnist ivf", train, ix, qs, masks)
}

// The label-partitioned benchmark's σ = 0.2 query (label IN (3, 7): two
// files of 6,000 images, one per label) at the default nprobe: recall@10
// of the merged top-10 against the exact one stays ≥ 0.95 while each file
// scores well under the floor's DefaultMinScored rows (probing stops at
// lists farther than the neighbours found; the floor scanned 70% of them).
func TestPartitionedFashionMNISTSearchesScoreAFractionOfTheFilesAtTheDefaultNProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds indexes over 12,000 × 784 vectors")
	}
	train, _ := fashion(t)
	labels, err := LoadFashionMNISTLabels("train-labels-idx1-ubyte.gz", int(train.Rows()))
	if err != nil {
		t.Fatal(err)
	}
	test, err := LoadFashionMNIST("t10k-images-idx3-ubyte.gz", 100)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		m  *Matrix
		ix *Index
		pk *Packed
	}
	var files []file
	for _, label := range []byte{3, 7} {
		f := file{m: &Matrix{Dim: train.Dim}}
		for p := range train.Rows() {
			if labels[p] == label {
				f.m.Data = append(f.m.Data, train.Row(p)...)
				f.m.Valid = append(f.m.Valid, true)
			}
		}
		if f.ix, err = Build(f.m, BuildOptions{Seed: 1}); err != nil {
			t.Fatal(err)
		}
		if f.pk, err = f.ix.Pack(f.m); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	type hit struct {
		file int
		h    Hit
	}
	top := func(hs []hit) []hit {
		slices.SortFunc(hs, func(a, b hit) int {
			return cmp.Or(cmp.Compare(a.h.Dist, b.h.Dist), cmp.Compare(a.file, b.file), cmp.Compare(a.h.Pos, b.h.Pos))
		})
		return hs[:min(10, len(hs))]
	}
	var r float64
	var scored int64
	for i := range test.Rows() {
		q := Query{Vector: test.Row(i), K: 10, Metric: L2}
		var got, want []hit
		for fi, f := range files {
			hs, st, err := f.ix.SearchPacked(f.m, f.pk, q)
			if err != nil {
				t.Fatal(err)
			}
			scored += st.Scored
			for _, h := range hs {
				got = append(got, hit{fi, h})
			}
			ex, _, _ := Exact(f.m, q)
			for _, h := range ex {
				want = append(want, hit{fi, h})
			}
		}
		got, want = top(got), top(want)
		n := 0
		for _, g := range got {
			if slices.ContainsFunc(want, func(w hit) bool { return w.file == g.file && w.h.Pos == g.h.Pos }) {
				n++
			}
		}
		r += float64(n) / float64(len(want))
	}
	r /= float64(test.Rows())
	perFile := scored / test.Rows() / int64(len(files))
	t.Logf("label IN (3, 7): %d lists a file, recall@10 %.3f, %d rows of %d scored a file", files[0].ix.NList(), r, perFile, files[0].m.Rows())
	if r < 0.95 {
		t.Errorf("recall@10 %.3f, want ≥ 0.95", r)
	}
	if perFile > files[0].m.Rows()/3 {
		t.Errorf("%d rows of %d scored a file, want at most a third", perFile, files[0].m.Rows())
	}
}
