package connector

import (
	"io"
	"net/http"
	"sync/atomic"
)

// countingTransport counts the response body bytes and requests of an HTTP
// client, so a plain read (iceberg-go's own S3 client) reports what it read.
type countingTransport struct {
	base     http.RoundTripper
	bytes    atomic.Int64
	requests atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	t.requests.Add(1)
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.bytes}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
