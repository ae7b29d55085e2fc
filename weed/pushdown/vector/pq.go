package vector

import (
	"fmt"
	"sync"

	"github.com/viterin/vek/vek32"
)

// PQCentroids is the codebook size of every subspace (one byte per code).
const PQCentroids = 256

// PQ is a product quantizer: the vector is cut into M subspaces of Dsub
// dimensions, each coded by the nearest of 256 centroids.
type PQ struct {
	M, Dsub   int
	Codebooks []float32 // M × 256 × Dsub
	once      sync.Once
	sub       []*assigner
}

// assigners are the subspaces' nearest-codeword finders (built once).
func (p *PQ) assigners() []*assigner {
	p.once.Do(func() {
		p.sub = make([]*assigner, p.M)
		for j := range p.M {
			p.sub[j] = newAssigner(p.Codebooks[j*PQCentroids*p.Dsub:(j+1)*PQCentroids*p.Dsub], p.Dsub)
		}
	})
	return p.sub
}

// DefaultSubspaces is the subspace count used when none is asked for: 4
// dimensions per subspace where the dimension allows it.
func DefaultSubspaces(dim int) int {
	for _, dsub := range []int{4, 2} {
		if dim%dsub == 0 && dim/dsub >= 1 {
			return dim / dsub
		}
	}
	return dim
}

// TrainPQ trains the codebooks of m subspaces on n = len(points)/dim
// points (residuals), each subspace's k-means on its own goroutine of the
// pool.
func TrainPQ(points []float32, dim, m int, opt KMeansOptions) (*PQ, error) {
	if m <= 0 || dim%m != 0 {
		return nil, fmt.Errorf("%d subspaces do not divide %d dimensions", m, dim)
	}
	n := len(points) / dim
	dsub := dim / m
	p := &PQ{M: m, Dsub: dsub, Codebooks: make([]float32, m*PQCentroids*dsub)}
	parallelFor(workers(opt.Workers), m, 1, func(lo, hi int) {
		sub := make([]float32, n*dsub)
		for j := lo; j < hi; j++ {
			for i := range n {
				copy(sub[i*dsub:(i+1)*dsub], points[i*dim+j*dsub:i*dim+(j+1)*dsub])
			}
			o := opt
			o.K, o.Workers, o.Seed = PQCentroids, 1, opt.Seed+int64(j)+1
			copy(p.Codebooks[j*PQCentroids*dsub:(j+1)*PQCentroids*dsub], KMeans(sub, dsub, o))
		}
	})
	return p, nil
}

func (p *PQ) codeword(j, c int) []float32 {
	o := (j*PQCentroids + c) * p.Dsub
	return p.Codebooks[o : o+p.Dsub]
}

// Encode writes the M codes of x (a residual) into code.
func (p *PQ) Encode(x []float32, code []byte) {
	p.encode(x, code, make([]float32, PQCentroids))
}

func (p *PQ) encode(x []float32, code []byte, buf []float32) {
	for j, a := range p.assigners() {
		c, _ := a.nearest(x[j*p.Dsub:(j+1)*p.Dsub], buf)
		code[j] = byte(c)
	}
}

// Decode writes the reconstruction of code into x.
func (p *PQ) Decode(code []byte, x []float32) {
	for j := range p.M {
		copy(x[j*p.Dsub:(j+1)*p.Dsub], p.codeword(j, int(code[j])))
	}
}

// l2Table is, for each subspace and code, the squared distance between
// the query residual's subspace and the codeword.
func (p *PQ) l2Table(qr []float32, out []float32) {
	for j, a := range p.assigners() {
		qs := qr[j*p.Dsub : (j+1)*p.Dsub]
		t := out[j*PQCentroids : (j+1)*PQCentroids]
		a.scores(qs, t)
		vek32.AddNumber_Inplace(t, vek32.Dot(qs, qs))
	}
}

func (p *PQ) lookup(table []float32, code []byte) float32 {
	var s float32
	for j, c := range code {
		s += table[j*PQCentroids+int(c)]
	}
	return s
}
