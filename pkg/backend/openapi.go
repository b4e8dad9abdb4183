package backend

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/apichain/apichain/pkg/openapi"
	"github.com/klauspost/compress/gzip"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// openAPIDocs are a backend's OpenAPI documents, built once: v3 per group/version (the
// bytes whose hash the index names), the v3 index, and v2 as JSON and protobuf. The large
// ones are kept packed.
type openAPIDocs struct {
	v3      map[string]packed // by document path (/openapi/v3/apis/<g>/<v>)
	index   []byte
	v2      packed
	v2Proto packed
	v2Hash  string
}

// packed is a document kept gzip-compressed. A backend's documents are megabytes (core's
// about 18 MB, a tenth of the heap of an all-in-one holding 20,000 ConfigMaps) and rarely
// read, as clients keep them by hash: a read unpacks one (a few milliseconds) and the rest
// of the time they take a tenth of that.
type packed []byte

func pack(doc []byte) packed {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
	_, _ = zw.Write(doc) // into memory: no error
	_ = zw.Close()
	return bytes.Clone(b.Bytes())
}

func (p packed) unpack() []byte {
	zr, err := gzip.NewReader(bytes.NewReader(p))
	if err != nil {
		panic(fmt.Sprintf("openapi: a packed document does not read back: %v", err)) // pack wrote it
	}
	doc, err := io.ReadAll(zr)
	if err != nil {
		panic(fmt.Sprintf("openapi: a packed document does not read back: %v", err))
	}
	return doc
}

// OpenAPISource describes a backend's kinds and builds its v2 document.
type OpenAPISource interface {
	OpenAPIKinds() []openapi.Kind
	OpenAPIV2() ([]byte, error)
}

func buildOpenAPI(src OpenAPISource) (*openAPIDocs, error) {
	kinds := src.OpenAPIKinds()
	d := &openAPIDocs{v3: map[string]packed{}}
	byGV := map[schema.GroupVersion][]byte{}
	seen := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		if seen[k.GroupVersion] {
			continue
		}
		seen[k.GroupVersion] = true
		doc, err := openapi.V3(k.GroupVersion, kinds)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 %s: %w", k.GroupVersion, err)
		}
		byGV[k.GroupVersion] = doc
		d.v3[openapi.V3DocumentPath(k.GroupVersion)] = pack(doc)
	}
	var err error
	if d.index, err = openapi.V3Index(byGV); err != nil {
		return nil, err
	}
	v2, err := src.OpenAPIV2()
	if err != nil {
		return nil, err
	}
	v2Proto, err := openapi.V2Protobuf(v2)
	if err != nil {
		return nil, err
	}
	d.v2, d.v2Proto, d.v2Hash = pack(v2), pack(v2Proto), openapi.Hash(v2)
	return d, nil
}

// lazyOpenAPI builds the documents in the background a while after the backend is ready
// (start), so building them (reflection over every kind, about half a second of CPU for
// core) neither delays readiness nor competes with the rest of the cluster coming up; a
// request for one before that builds them at once, and later ones wait for the same build.
// openAPIBuildDelay is how long after readiness the documents are built unasked.
const openAPIBuildDelay = 2 * time.Second

type lazyOpenAPI struct {
	once sync.Once
	src  OpenAPISource
	docs *openAPIDocs
	err  error
}

func newLazyOpenAPI(src OpenAPISource, start, stop <-chan struct{}) *lazyOpenAPI {
	l := &lazyOpenAPI{src: src}
	go func() {
		select {
		case <-start:
		case <-stop:
			return
		}
		select {
		case <-time.After(openAPIBuildDelay):
			_, _ = l.get()
		case <-stop: // a backend that stops so soon needs no documents
		}
	}()
	return l
}

func (l *lazyOpenAPI) get() (*openAPIDocs, error) {
	if l == nil {
		return nil, nil
	}
	l.once.Do(func() { l.docs, l.err = buildOpenAPI(l.src) })
	return l.docs, l.err
}

// document answers an /openapi path, or false when this backend has no such document.
// "/openapi/v2" with the query "hash" is the v2 document's hash, for the gateway's merge.
func (d *openAPIDocs) document(path, accept, query string) (*httpbody.HttpBody, bool) {
	switch {
	case d == nil:
		return nil, false
	case path == "/openapi/v3":
		return &httpbody.HttpBody{ContentType: "application/json", Data: d.index}, true
	case path == "/openapi/v2":
		return v2Document(d.v2, d.v2Proto, d.v2Hash, accept, query), true
	}
	if doc, ok := d.v3[path]; ok {
		return &httpbody.HttpBody{ContentType: "application/json", Data: doc.unpack()}, true
	}
	return nil, false
}

func v2Document(v2, v2Proto packed, hash, accept, query string) *httpbody.HttpBody {
	switch {
	case query == "hash":
		return &httpbody.HttpBody{ContentType: "text/plain", Data: []byte(hash)}
	case strings.Contains(accept, "protobuf"):
		return &httpbody.HttpBody{ContentType: openapi.V2ProtobufContentType, Data: v2Proto.unpack()}
	}
	return &httpbody.HttpBody{ContentType: "application/json", Data: v2.unpack()}
}

// customOpenAPI are OpenAPI documents of kinds that come and go (extensions' custom
// resources, the aggregator's remote APIServices): v3 documents served next to the built ones
// and listed in the same index, and the built v2 document with the kinds and other v2
// documents added, made on first request.
type customOpenAPI struct {
	v3     map[string][]byte
	index  []byte
	kinds  []openapi.CustomKind
	v2Docs [][]byte

	v2Once      sync.Once
	v2, v2Proto packed
	v2Hash      string
	v2Err       error
}

// SetCustomOpenAPI replaces the documents of the kinds that come and go: v3 documents by
// group/version, the kinds for v2, and whole v2 documents merged into it (the built one's
// definitions and paths win).
func (b *Backend) SetCustomOpenAPI(byGV map[schema.GroupVersion][]byte, kinds []openapi.CustomKind, v2Docs [][]byte) error {
	c := &customOpenAPI{v3: map[string][]byte{}, kinds: kinds, v2Docs: v2Docs}
	for gv, doc := range byGV {
		c.v3[openapi.V3DocumentPath(gv)] = doc
	}
	var err error
	if c.index, err = openapi.V3Index(byGV); err != nil {
		return err
	}
	b.discovery.custom.Store(c)
	return nil
}

// document answers a custom document, the index merged with the built one's, or v2 with the
// custom kinds and documents added.
func (c *customOpenAPI) document(built *openAPIDocs, path, accept, query string) (*httpbody.HttpBody, bool) {
	if path == "/openapi/v2" && len(c.kinds)+len(c.v2Docs) > 0 && built != nil {
		c.v2Once.Do(func() {
			v2, v2Proto := built.v2.unpack(), []byte(nil)
			if len(c.kinds) > 0 {
				v2, c.v2Err = openapi.AddCustomToV2(v2, c.kinds)
			}
			if c.v2Err == nil && len(c.v2Docs) > 0 {
				v2, c.v2Err = openapi.MergeV2(append([][]byte{v2}, c.v2Docs...))
			}
			if c.v2Err == nil {
				v2Proto, c.v2Err = openapi.V2Protobuf(v2)
				c.v2, c.v2Proto, c.v2Hash = pack(v2), pack(v2Proto), openapi.Hash(v2)
			}
		})
		if c.v2Err != nil {
			return nil, false
		}
		return v2Document(c.v2, c.v2Proto, c.v2Hash, accept, query), true
	}
	if path == "/openapi/v3" && len(c.v3) > 0 {
		indexes := [][]byte{c.index}
		if built != nil {
			indexes = append(indexes, built.index)
		}
		merged, err := openapi.MergeV3Index(indexes)
		if err != nil {
			return nil, false
		}
		return &httpbody.HttpBody{ContentType: "application/json", Data: merged}, true
	}
	if doc, ok := c.v3[path]; ok {
		return &httpbody.HttpBody{ContentType: "application/json", Data: doc}, true
	}
	return nil, false
}
