package sideindex

import (
	"context"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// pageHeader is what the page_index kind reads of a Thrift PageHeader.
type pageHeader struct {
	typ            int32 // 0 DATA_PAGE, 1 INDEX_PAGE, 2 DICTIONARY_PAGE, 3 DATA_PAGE_V2
	compressedSize int32
	headerSize     int
	numValues      int32
	numRows        int32 // V2 only
	stats          *pageStats
}

type pageStats struct {
	min, max, minValue, maxValue []byte
	hasMin, hasMax               bool
	hasMinValue, hasMaxValue     bool
	nullCount                    int64
	hasNullCount                 bool
}

const maxPageHeaderBytes = 16 << 20

// readPageHeaderAt decodes the page header at byte pos of chunk, reading
// a window of the bytes that grows until the header fits (a header is a
// few dozen bytes; copying the rest of the chunk for each would cost the
// square of the pages).
func readPageHeaderAt(chunk []byte, pos int64) (pageHeader, error) {
	rest := chunk[pos:]
	for w := 4 << 10; ; w *= 2 {
		if w >= len(rest) || w >= maxPageHeaderBytes {
			return readPageHeader(rest)
		}
		if h, err := readPageHeader(rest[:w]); err == nil {
			return h, nil
		}
	}
}

// readPageHeader decodes the Thrift-compact PageHeader at the start of b.
func readPageHeader(b []byte) (h pageHeader, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed page header: %v", p)
		}
	}()
	if len(b) > maxPageHeaderBytes {
		b = b[:maxPageHeaderBytes]
	}
	buf := thrift.NewTMemoryBufferLen(len(b))
	buf.Write(b)
	p := thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{MaxMessageSize: maxPageHeaderBytes})
	ctx := context.Background()
	err = readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && t == thrift.I32:
			h.typ, err = p.ReadI32(ctx)
		case id == 3 && t == thrift.I32:
			h.compressedSize, err = p.ReadI32(ctx)
		case (id == 5 || id == 8) && t == thrift.STRUCT:
			v2 := id == 8
			err = readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
				var err error
				switch {
				case id == 1 && t == thrift.I32:
					h.numValues, err = p.ReadI32(ctx)
				case v2 && id == 3 && t == thrift.I32:
					h.numRows, err = p.ReadI32(ctx)
				case id == 5 && !v2 && t == thrift.STRUCT, id == 8 && v2 && t == thrift.STRUCT:
					h.stats, err = readStats(ctx, p)
				default:
					return false, nil
				}
				return true, err
			})
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return h, fmt.Errorf("malformed page header: %w", err)
	}
	h.headerSize = len(b) - buf.Len()
	if h.compressedSize < 0 {
		return h, fmt.Errorf("page header gives a compressed size of %d", h.compressedSize)
	}
	return h, nil
}

func readStats(ctx context.Context, p thrift.TProtocol) (*pageStats, error) {
	s := &pageStats{}
	err := readStruct(ctx, p, func(id int16, t thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && t == thrift.STRING:
			s.max, err = p.ReadBinary(ctx)
			s.hasMax = true
		case id == 2 && t == thrift.STRING:
			s.min, err = p.ReadBinary(ctx)
			s.hasMin = true
		case id == 3 && t == thrift.I64:
			s.nullCount, err = p.ReadI64(ctx)
			s.hasNullCount = true
		case id == 5 && t == thrift.STRING:
			s.maxValue, err = p.ReadBinary(ctx)
			s.hasMaxValue = true
		case id == 6 && t == thrift.STRING:
			s.minValue, err = p.ReadBinary(ctx)
			s.hasMinValue = true
		default:
			return false, nil
		}
		return true, err
	})
	return s, err
}

// readStruct reads one struct, handing each field to fn; fields fn does
// not take (false) are skipped.
func readStruct(ctx context.Context, p thrift.TProtocol, fn func(id int16, t thrift.TType) (bool, error)) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, t, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if t == thrift.STOP {
			break
		}
		took, err := fn(id, t)
		if err != nil {
			return err
		}
		if !took {
			if err := p.Skip(ctx, t); err != nil {
				return err
			}
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}
