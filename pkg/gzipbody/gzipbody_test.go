package gzipbody

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestAccepts(t *testing.T) {
	for in, want := range map[string]bool{
		"gzip": true, "deflate, gzip": true, " gzip ,br": true,
		"": false, "gzip;q=1": false, "gzipx": false, "br": false, "x-gzip": false,
	} {
		if got := Accepts(in); got != want {
			t.Errorf("Accepts(%q) = %v, want %v", in, got, want)
		}
	}
}

// A writer taken again from the pool starts a new stream: each output decodes to its own input.
func TestWriterReuse(t *testing.T) {
	for _, in := range []string{"first body", "second, longer body " + string(bytes.Repeat([]byte("x"), 1<<20))} {
		var out bytes.Buffer
		w := NewWriter(&out)
		if _, err := io.WriteString(w, in); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || string(got) != in {
			t.Fatalf("decoded %d bytes (err %v), want %d", len(got), err, len(in))
		}
	}
}
