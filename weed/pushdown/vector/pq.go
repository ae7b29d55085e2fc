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
	tOnce     sync.Once
	cbT       []float32 // transposed codebooks (ipTable)
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

// MaxDefaultSubspaces bounds the subspaces of DefaultSubspaces: a PQ
// distance is one table lookup per subspace, and the table (subspaces ×
// 256 floats) stays within 64 KB.
const MaxDefaultSubspaces = 64

// DefaultSubspaces is the subspace count used when none is asked for: the
// most subspaces of at least 4 dimensions that divide the dimension, at
// most MaxDefaultSubspaces (64-d: 16 of 4 dimensions; 784-d: 56 of 14).
// Dim/4 subspaces for 784-d vectors (196 lookups a row, a 200 KB table)
// made the ADC pass no faster than ivf's exact SIMD scan on Fashion-MNIST;
// 49 or 98 kept recall@10 at 1.000 there with the exact re-rank. A
// dimension with no such divisor gets subspaces of 4, 2 or 1 dimensions.
func DefaultSubspaces(dim int) int {
	for m := min(dim/4, MaxDefaultSubspaces); m > 1; m-- {
		if dim%m == 0 {
			return m
		}
	}
	for _, dsub := range []int{4, 2} {
		if dim%dsub == 0 && dim >= dsub {
			return dim / dsub
		}
	}
	return max(1, dim)
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

// ipTable writes, for each subspace j and code c, the inner product of the
// query's subspace j with codeword c into out[j·256 + c]: one table per
// query and index (256 × Dim multiply-adds, one SIMD product of the
// subspace's query values with its transposed codebook), from which the
// inner product of the query with any row's residual is M lookups.
func (p *PQ) ipTable(q []float32, out []float32) {
	cbT := p.transposed()
	per := PQCentroids * p.Dsub
	for j := range p.M {
		vek32.MatMul_Into(out[j*PQCentroids:(j+1)*PQCentroids], q[j*p.Dsub:(j+1)*p.Dsub], cbT[j*per:(j+1)*per], p.Dsub)
	}
}

// transposed is the codebooks subspace by subspace as Dsub × 256 matrices
// (built once).
func (p *PQ) transposed() []float32 {
	p.tOnce.Do(func() {
		per := PQCentroids * p.Dsub
		p.cbT = make([]float32, len(p.Codebooks))
		for j := range p.M {
			for c := range PQCentroids {
				for d := range p.Dsub {
					p.cbT[j*per+d*PQCentroids+c] = p.Codebooks[j*per+c*p.Dsub+d]
				}
			}
		}
	})
	return p.cbT
}

// adcRows adds to out[r] the table entries the codes of row rows[r] of a
// list select (codes holds the list's rows × m codes): the query's inner
// product with each row's quantized residual. Row by row with four
// independent sums: subspace-major passes (a 4 KB slice of the table hot
// in L1 while the rows go by) measured slower, the sums of every row
// going through memory once per pass.
func adcRows(table []float32, codes []byte, m int, rows []int32, out []float32) {
	out = out[:len(rows)]
	for r, i := range rows {
		code := codes[int(i)*m : (int(i)+1)*m]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= len(code); j += 4 {
			t := table[j*PQCentroids : (j+4)*PQCentroids]
			s0 += (*[PQCentroids]float32)(t[0:])[code[j]]
			s1 += (*[PQCentroids]float32)(t[PQCentroids:])[code[j+1]]
			s2 += (*[PQCentroids]float32)(t[2*PQCentroids:])[code[j+2]]
			s3 += (*[PQCentroids]float32)(t[3*PQCentroids:])[code[j+3]]
		}
		for ; j < len(code); j++ {
			s0 += (*[PQCentroids]float32)(table[j*PQCentroids:])[code[j]]
		}
		out[r] += (s0 + s1) + (s2 + s3)
	}
}
