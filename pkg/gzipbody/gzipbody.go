// Package gzipbody compresses response bodies as kube-apiserver does (its
// APIResponseCompression, on by default): gzip at level 1, for a client whose Accept-Encoding
// has the token gzip, when the answer's first write is larger than 128 KiB.
package gzipbody

import (
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Threshold is kube's: an answer whose first write is larger is compressed.
const Threshold = 128 << 10

// Accepts reports whether an Accept-Encoding header value has the token gzip, as kube reads
// it (a token with parameters, gzip;q=1, is not it).
func Accepts(acceptEncoding string) bool {
	for token := range strings.SplitSeq(acceptEncoding, ",") {
		if strings.TrimSpace(token) == "gzip" {
			return true
		}
	}
	return false
}

// Writer is a gzip writer at kube's level; Close it when done, which returns it for reuse.
type Writer struct{ *gzip.Writer }

var writers = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// NewWriter compresses into w.
func NewWriter(w io.Writer) Writer {
	gz := writers.Get().(*gzip.Writer)
	gz.Reset(w)
	return Writer{gz}
}

// Close writes the stream's end; the writer is reused only if that succeeded.
func (w Writer) Close() error {
	err := w.Writer.Close()
	if err == nil {
		writers.Put(w.Writer)
	}
	return err
}
