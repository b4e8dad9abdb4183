package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/gzipbody"
	"github.com/apichain/apichain/pkg/storage"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// selector is a parsed label and field selector.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func (s selector) empty() bool { return s.labels.Empty() && s.fields.Empty() }

// parseSelector parses and checks selectors against the fields the kind supports.
func parseSelector(r *Resource, opts *resourcev1.ListOptions) (selector, error) {
	ls, err := labels.Parse(opts.GetLabelSelector())
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requested label selector: %v", err))
	}
	fs, err := fields.ParseSelector(opts.GetFieldSelector())
	if err != nil {
		return selector{}, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requested field selector: %v", err))
	}
	convert := r.FieldLabelConversion
	if convert == nil {
		convert = runtime.DefaultMetaV1FieldSelectorConversion
	}
	if fs, err = fs.Transform(fields.TransformFunc(convert)); err != nil {
		return selector{}, apierrors.NewBadRequest(err.Error())
	}
	return selector{labels: ls, fields: fs}, nil
}

// fieldSet is the field selector values of obj: metadata.name, metadata.namespace and the kind's own.
func fieldSet(r *Resource, obj runtime.Object) fields.Set {
	set := fields.Set{}
	if acc, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = acc.GetName()
		if r.Namespaced {
			set["metadata.namespace"] = acc.GetNamespace()
		}
	}
	if r.FieldLabels != nil {
		for k, v := range r.FieldLabels(obj) {
			set[k] = v
		}
	}
	return set
}

// matches reports whether obj is selected; the object's field set is made only for a field
// selector (a list without one does not build a map per object).
func (s selector) matches(r *Resource, obj runtime.Object) bool {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return s.labels.Matches(labels.Set(acc.GetLabels())) && (s.fields.Empty() || s.fields.Matches(fieldSet(r, obj)))
}

// continueToken is kube's continue token shape: the list's revision and the key to resume after.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	StartKey   string `json:"start"`
}

func encodeContinue(rev int64, lastKey, keyPrefix string) string {
	data, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", Revision: rev, StartKey: strings.TrimPrefix(lastKey, keyPrefix)})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(token, keyPrefix string) (rev int64, startKey string, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", apierrors.NewBadRequest("continue key is not valid: " + err.Error())
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil || t.APIVersion != "meta.k8s.io/v1" || t.Revision <= 0 || t.StartKey == "" ||
		strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return 0, "", apierrors.NewBadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	return t.Revision, keyPrefix + t.StartKey, nil
}

// parseRV parses a resourceVersion parameter ("" and "0" mean 0).
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", s))
	}
	return v, nil
}

// parseMinimumRV parses a get's resourceVersion as kube's APIObjectVersioner does ("" and
// "0" are 0); the error's text is that of kube's storage.InvalidError.
func parseMinimumRV(s string) (uint64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, field.Invalid(field.NewPath("resourceVersion"), s, err.Error())
	}
	return v, nil
}

// listResult is a page of matching objects.
type listResult struct {
	items     []runtime.Object
	revision  int64
	cont      string
	remaining *int64
	// shared: the items are the watch cache's, to be read and not changed; encoded holds
	// each one's encodings.
	shared  bool
	encoded []*encodings
}

// owned is the items, copied if they are the cache's.
func (res *listResult) owned() []runtime.Object {
	if !res.shared {
		return res.items
	}
	out := make([]runtime.Object, len(res.items))
	for i, obj := range res.items {
		out[i] = obj.DeepCopyObject()
	}
	return out
}

// list reads matching objects under one namespace (or all) as one consistent snapshot page.
func (h *Handler) list(ctx context.Context, r *Resource, namespace string, opts *resourcev1.ListOptions, limit int64, cont string) (_ *listResult, err error) {
	if r.Computed != nil {
		items, err := r.Computed(ctx)
		return &listResult{items: items}, err
	}
	sel, err := parseSelector(r, opts)
	if err != nil {
		return nil, err
	}
	rv, err := parseRV(opts.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	keyPrefix := prefix(r, namespace)
	res, ok, consistent := h.listFromCache(ctx, r, keyPrefix, sel, opts, rv, limit, cont)
	if consistent {
		defer func() { recordConsistentRead(r.GroupResource(), err == nil, !ok) }()
	}
	if ok {
		return res, nil
	}
	res, err = h.listEtcd(ctx, r, keyPrefix, sel, opts, rv, limit, cont)
	return res, err
}

// listEtcd reads a list page from etcd.
func (h *Handler) listEtcd(ctx context.Context, r *Resource, keyPrefix string, sel selector, opts *resourcev1.ListOptions, rv, limit int64, cont string) (*listResult, error) {
	var err error
	var atRev int64
	startKey := ""
	switch {
	case cont != "":
		if opts.GetResourceVersion() != "" && opts.GetResourceVersion() != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		if atRev, startKey, err = decodeContinue(cont, keyPrefix); err != nil {
			return nil, err
		}
	case opts.GetResourceVersionMatch() == string(metav1.ResourceVersionMatchExact):
		if rv == 0 {
			return nil, apierrors.NewBadRequest("resourceVersionMatch=Exact requires a non-zero resourceVersion")
		}
		atRev = rv
	case opts.GetResourceVersionMatch() != "" && opts.GetResourceVersionMatch() != string(metav1.ResourceVersionMatchNotOlderThan):
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q", opts.GetResourceVersionMatch()))
	}
	res := &listResult{items: []runtime.Object{}}
	var corruptKeys, corrupt []string // kube reads on past undecodable objects, then reports them
	fetched, evaluated := 0, 0
	defer func() { recordList(r.GroupResource(), fromEtcd, fetched, evaluated, len(res.items)) }()
	for {
		want := int64(0)
		if limit > 0 {
			want = limit - int64(len(res.items))
		}
		page, err := h.store.List(ctx, keyPrefix, atRev, startKey, want)
		if err != nil {
			if cont != "" && err == storage.ErrCompacted {
				return nil, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
			}
			return nil, storeError(err, r.GroupResource(), "")
		}
		if atRev == 0 {
			atRev = page.Revision
			if rv > atRev {
				return nil, tooLargeResourceVersion(uint64(rv), uint64(atRev), resourceVersionTooHighRetrySeconds)
			}
		}
		fetched += len(page.KVs)
		for _, kv := range page.KVs {
			startKey = kv.Key
			obj, err := h.decodeStored(r, kv.Value, kv.ModRevision)
			if err != nil {
				full := h.store.Prefix() + kv.Key // kube names a list's corrupt objects by their keys in etcd
				corruptKeys, corrupt = append(corruptKeys, full), append(corrupt, corruptObject(full, kv.ModRevision, err))
				if len(corrupt) >= maxCorruptInList {
					return nil, corruptList(r.GroupResource(), corruptKeys, corrupt, true)
				}
				continue
			}
			evaluated++
			if sel.matches(r, obj) {
				res.items = append(res.items, obj)
			}
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		if limit > 0 && int64(len(res.items)) >= limit {
			res.cont = encodeContinue(atRev, startKey, keyPrefix)
			if sel.empty() {
				n := page.Remaining
				res.remaining = &n
			}
			break
		}
	}
	if len(corrupt) > 0 {
		return nil, corruptList(r.GroupResource(), corruptKeys, corrupt, false)
	}
	res.revision = atRev
	return res, nil
}

// List reads a collection.
func (h *Handler) List(ctx context.Context, req *resourcev1.ListRequest) (*resourcev1.ListResponse, error) {
	body, cont, err := h.listBody(ctx, req)
	if err != nil {
		return nil, toGRPC(err)
	}
	data, err := body.bytes()
	if err != nil {
		return nil, toGRPC(err)
	}
	return &resourcev1.ListResponse{Body: &resourcev1.Body{ContentType: body.contentType, Data: data}, NextPageToken: cont}, nil
}

// listChunk is about how many bytes of a list each StreamList message carries.
const listChunk = 256 << 10

// StreamList reads a collection as List does and sends its body in pieces as it is put
// together: a large list is never whole in memory, in the backend or in the gateway, and the
// gateway writes its first bytes while the rest is being encoded. With accept_gzip, a list
// over kube's threshold is compressed here, as one gzip stream across the pieces.
func (h *Handler) StreamList(req *resourcev1.StreamListRequest, stream grpc.ServerStreamingServer[resourcev1.StreamListResponse]) error {
	body, cont, err := h.listBody(stream.Context(), req.GetList())
	if err != nil {
		return toGRPC(err)
	}
	first := &resourcev1.StreamListResponse{Body: &resourcev1.Body{ContentType: body.contentType}, NextPageToken: cont}
	send := func(data []byte) error {
		msg := &resourcev1.StreamListResponse{Body: &resourcev1.Body{Data: data}}
		if first != nil {
			msg, first = first, nil
			msg.Body.Data = data
		}
		return stream.Send(msg)
	}
	if !req.GetAcceptGzip() {
		return body.write(listChunk, false, send)
	}
	var gz *gzipPieces
	err = body.write(listChunk, true, func(data []byte) error { // the compressor copies what it takes
		if gz == nil {
			if len(data) <= gzipbody.Threshold {
				return send(data) // the whole list (a first piece is at least listChunk): the last send
			}
			first.ContentEncoding = "gzip"
			gz = newGzipPieces(send)
		}
		_, err := gz.Write(data)
		return err
	})
	if gz != nil && err == nil {
		err = gz.Close()
	}
	return err
}

// gzipPieces compresses a list's pieces into pieces of about gzipChunk bytes for send, so the
// hop to the gateway carries the compressed bytes (a twentieth to a thirtieth of a list of
// ConfigMaps) rather than the list.
type gzipPieces struct {
	gzipbody.Writer // takes the list's plain pieces
	buf             []byte
	send            func([]byte) error
}

// gzipChunk is about how many compressed bytes each StreamList message carries: a smaller
// piece than listChunk, so the client's first bytes are not held back for long.
const gzipChunk = 64 << 10

func newGzipPieces(send func([]byte) error) *gzipPieces {
	g := &gzipPieces{send: send}
	g.Writer = gzipbody.NewWriter(writerFunc(g.collect))
	return g
}

// collect takes the compressor's output, sending a piece once one is full.
func (g *gzipPieces) collect(p []byte) (int, error) {
	if g.buf == nil {
		g.buf = make([]byte, 0, gzipChunk+gzipChunk/4)
	}
	g.buf = append(g.buf, p...)
	if len(g.buf) >= gzipChunk {
		buf := g.buf
		g.buf = nil // sent pieces are not changed: send may keep them
		if err := g.send(buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close ends the stream and sends what is left of it.
func (g *gzipPieces) Close() error {
	if err := g.Writer.Close(); err != nil {
		return err
	}
	if len(g.buf) == 0 {
		return nil
	}
	return g.send(g.buf)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// listBody reads the page a list request asks for and encodes it.
func (h *Handler) listBody(ctx context.Context, req *resourcev1.ListRequest) (*listBody, string, error) {
	r, err := h.lookup(ctx, req.GetRef(), "list")
	if err != nil {
		return nil, "", err
	}
	if req.GetPageSize() < 0 {
		return nil, "", apierrors.NewBadRequest("limit must be non-negative")
	}
	res, err := h.list(ctx, r, req.GetRef().GetNamespace(), req.GetOptions(), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, "", err
	}
	body, err := h.encodeList(r, res, req.GetEncoding(), true)
	return body, res.cont, err
}

// listBody is an encoded list: head, then its items framed as the media type frames a list's
// items, then tail. An item is encoded when it is written, straight into the piece being
// written, unless the watch cache keeps its encoding with the object (and it keeps one, as
// far as the process's budget allows): a list's items are never all in memory at once unless
// the cache keeps them. A list encoded whole is all head.
type listBody struct {
	contentType string
	head, tail  []byte
	// items are the list's items and the encodings the cache keeps with each (nil: none).
	items *listResult
	// protobuf: items are protobuf fields 2 of the list's message, not JSON array elements;
	// sizes are their encodings' sizes, which the list's envelope holds before them.
	protobuf bool
	sizes    []int
	// json encodes JSON items into w.
	w    appendWriter
	json *json.Encoder
}

func (b *listBody) len() int {
	if b.items == nil {
		return 0
	}
	return len(b.items.items)
}

// appendItem appends item i, framed: its kept encoding, or one made now (which the cache
// keeps if the budget allows).
func (b *listBody) appendItem(out []byte, i int) ([]byte, error) {
	o := listItemJSON
	if b.protobuf {
		o = listItemProtobuf
		out = protowire.AppendTag(out, 2, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(b.sizes[i]))
	} else if i > 0 {
		out = append(out, ',')
	}
	start := len(out)
	out, err := b.items.encoded[i].appendTo(o, out, func(out []byte) ([]byte, error) { return b.encode(out, i) })
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if b.protobuf && len(out)-start != b.sizes[i] {
		return nil, apierrors.NewInternalError(fmt.Errorf("item %d of a list is %d bytes, not the %d its envelope counted", i, len(out)-start, b.sizes[i]))
	}
	return out, nil
}

// encode appends item i's encoding: the protobuf generated code's, written into out at the
// size counted, or JSON as json.Marshal writes it (an Encoder adds a newline).
func (b *listBody) encode(out []byte, i int) ([]byte, error) {
	obj := b.items.items[i]
	if b.protobuf {
		m, ok := obj.(interface {
			MarshalToSizedBuffer([]byte) (int, error)
		})
		if !ok {
			return nil, fmt.Errorf("%T has no protobuf form", obj)
		}
		start, size := len(out), b.sizes[i]
		out = slices.Grow(out, size)[:start+size]
		n, err := m.MarshalToSizedBuffer(out[start:])
		if err != nil {
			return nil, err
		}
		if n != size {
			return nil, fmt.Errorf("%T encoded to %d bytes, not its size %d", obj, n, size)
		}
		return out, nil
	}
	if b.json == nil {
		b.json = json.NewEncoder(&b.w)
	}
	b.w = out
	if err := b.json.Encode(withoutKind(obj)); err != nil {
		return nil, err
	}
	out, b.w = b.w[:len(b.w)-1], nil // without the Encoder's newline
	return out, nil
}

// withoutKind is obj as kube writes a typed list's item: without kind and apiVersion (kube
// converts a list from its internal types, whose items have none; a custom resource's items,
// unstructured, keep theirs). A shallow copy when obj has them: the cache's object is shared.
func withoutKind(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if obj.GetObjectKind().GroupVersionKind().Empty() || v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	item := c.Interface().(runtime.Object)
	item.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return item
}

// bytes is the whole body.
func (b *listBody) bytes() ([]byte, error) {
	if b.len() == 0 && len(b.tail) == 0 {
		return b.head, nil
	}
	out := append(make([]byte, 0, b.sizeHint()), b.head...)
	for i := range b.len() {
		var err error
		if out, err = b.appendItem(out, i); err != nil {
			return nil, err
		}
	}
	return append(out, b.tail...), nil
}

// sizeHint is the body's size as far as it is known before its items are encoded: all of it
// for protobuf, the kept items' for JSON.
func (b *listBody) sizeHint() int {
	n := len(b.head) + len(b.tail)
	for i := range b.len() {
		if b.protobuf {
			n += protowire.SizeTag(2) + protowire.SizeBytes(b.sizes[i])
		} else if data, ok := b.items.encoded[i].kept(listItemJSON); ok {
			n += len(data) + 1
		}
	}
	return n
}

// write hands the body to send in pieces of about chunk bytes (at least one piece). A piece
// is not changed after send returns, so send may keep it, unless reuse: then send is done
// with a piece when it returns, and one buffer serves them all.
func (b *listBody) write(chunk int, reuse bool, send func([]byte) error) error {
	head := b.head
	for len(head) > chunk { // a list encoded whole
		if err := send(head[:chunk]); err != nil {
			return err
		}
		head = head[chunk:]
	}
	buf := append(make([]byte, 0, chunk+chunk/4), head...)
	for i := range b.len() {
		if len(buf) >= chunk {
			if err := send(buf); err != nil {
				return err
			}
			if reuse {
				buf = buf[:0]
			} else {
				buf = make([]byte, 0, chunk+chunk/4)
			}
		}
		var err error
		if buf, err = b.appendItem(buf, i); err != nil {
			return err
		}
	}
	return send(append(buf, b.tail...))
}

// encodeList answers res as r's list. A typed list holds copies of its items' structs
// (meta.SetList), so encoding it, which sets kinds, leaves the cache's objects alone, and
// their maps and slices are only read: the cache's items go in as they are, sparing a deep
// copy of every object. An unstructured item shares its map with the cache, so custom
// resources get copies. With maySplice, the plain JSON or protobuf of the cache's typed items
// is spliced into the list's.
func (h *Handler) encodeList(r *Resource, res *listResult, enc *resourcev1.Encoding, maySplice bool) (*listBody, error) {
	out, err := negotiate(enc.GetAccept(), enc.GetPretty(), noProtobuf(r.New()))
	if err != nil {
		return nil, err
	}
	splice := maySplice && res.shared && !r.isUnstructured() &&
		(out == output{mediaType: MediaJSON} || out == output{mediaType: MediaProtobuf})
	items := res.items
	switch {
	case splice:
		items = []runtime.Object{}
	case r.isUnstructured():
		items = res.owned()
	}
	list := r.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if out.kind == asObject && !r.isUnstructured() {
		// Copies of the items' structs (SetList): clearing their kinds leaves the cache's alone.
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			return nil
		})
	}
	lacc, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if res.revision != 0 { // a computed list has none
		lacc.SetResourceVersion(strconv.FormatInt(res.revision, 10))
	}
	lacc.SetContinue(res.cont)
	lacc.SetRemainingItemCount(res.remaining)
	list.GetObjectKind().SetGroupVersionKind(r.GroupVersion.WithKind(r.Kind + "List"))
	body, err := h.respondAs(r, list, out)
	if err != nil {
		return nil, err
	}
	if !splice {
		return &listBody{contentType: body.GetContentType(), head: body.GetData()}, nil
	}
	if out.mediaType == MediaProtobuf {
		return spliceItemsProtobuf(body, res)
	}
	return spliceItems(body, res)
}

// The keys of an object's encodings as an item of a JSON and of a protobuf list.
var (
	listItemJSON     = output{mediaType: MediaJSON, kind: asListItem}
	listItemProtobuf = output{mediaType: MediaProtobuf, kind: asListItem}
)

// spliceItems puts the items of res into the JSON of their list encoded without them (ending
// in "items":[]}), for the same bytes as encoding the whole list: encoding/json writes a
// typed list's item as json.Marshal writes the object. Most of a list's CPU had been the JSON
// of its items, encoded again for every list.
func spliceItems(empty *resourcev1.Body, res *listResult) (*listBody, error) {
	const tail = "]}\n"
	data := empty.GetData()
	if !bytes.HasSuffix(data, []byte(`"items":[`+tail)) {
		return nil, apierrors.NewInternalError(fmt.Errorf("a list's JSON ends in %q", data[max(0, len(data)-20):]))
	}
	return &listBody{contentType: empty.GetContentType(), head: data[:len(data)-len(tail)], tail: []byte(tail),
		items: res}, nil
}

// spliceItemsProtobuf puts the items of res into kube's protobuf of their list encoded
// without them: the "k8s\x00" prefix, then a runtime.Unknown whose field 1 is the type, 2
// the list's own message (its field 1, the list's metadata; its items are each a field 2,
// the object's message), 3 and 4 the content encoding and type. The Unknown's field 2 grows
// by the items, written after the metadata as the generated code writes them.
func spliceItemsProtobuf(empty *resourcev1.Body, res *listResult) (*listBody, error) {
	malformed := func(what string) error {
		return apierrors.NewInternalError(fmt.Errorf("a list's protobuf envelope has no %s", what))
	}
	prefix := []byte("k8s\x00")
	if !bytes.HasPrefix(empty.GetData(), prefix) {
		return nil, malformed("prefix")
	}
	b := empty.GetData()[len(prefix):]
	field := func(want protowire.Number) (whole, value []byte, err error) {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != want || typ != protowire.BytesType {
			return nil, nil, malformed(fmt.Sprintf("field %d", want))
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return nil, nil, malformed(fmt.Sprintf("field %d", want))
		}
		whole, b = b[:n+m], b[n+m:]
		return whole, v, nil
	}
	typeMeta, _, err := field(1)
	if err != nil {
		return nil, err
	}
	_, list, err := field(2)
	if err != nil {
		return nil, err
	}
	// The envelope counts the items' bytes before them: an item's size is its kept encoding's,
	// or what encoding it will make (the generated Size, as Marshal sizes its buffer).
	sizes, itemsSize := make([]int, len(res.items)), 0
	for i, obj := range res.items {
		if data, ok := res.encoded[i].kept(listItemProtobuf); ok {
			sizes[i] = len(data)
		} else if m, ok := obj.(interface{ Size() int }); ok {
			sizes[i] = m.Size()
		} else {
			return nil, apierrors.NewInternalError(fmt.Errorf("%T has no protobuf form", obj))
		}
		itemsSize += protowire.SizeTag(2) + protowire.SizeBytes(sizes[i])
	}
	out := &listBody{contentType: empty.GetContentType(), tail: b, // tail: the content encoding and type
		items: res, protobuf: true, sizes: sizes}
	head := make([]byte, 0, len(prefix)+len(typeMeta)+2*binary.MaxVarintLen64+len(list))
	head = append(head, prefix...)
	head = append(head, typeMeta...)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(len(list)+itemsSize))
	out.head = append(head, list...)
	return out, nil
}

// listFromCache serves a list from the watch cache when kube would: resourceVersion "0"
// (any version; the limit is ignored, as kube does), a minimum version, or a consistent read
// ("") once the cache caught up with etcd's current revision. A limited list's pages all come
// from the cache, as in kube 1.34+: the first page's snapshot of the cache is kept, and its
// continue token names that revision, so the next pages read the same snapshot while the
// cache moves on. A continuation whose snapshot is gone (or that etcd's first page began)
// reads etcd at its revision, and Exact lists go to etcd. consistent says the list was a
// consistent read the cache was asked for (kube counts those, and whether etcd served them).
func (h *Handler) listFromCache(ctx context.Context, r *Resource, keyPrefix string, sel selector, opts *resourcev1.ListOptions, rv, limit int64, cont string) (res *listResult, ok, consistent bool) {
	c := h.cache(r)
	if c == nil || opts.GetResourceVersionMatch() == string(metav1.ResourceVersionMatchExact) {
		return nil, false, false
	}
	if cont != "" {
		if opts.GetResourceVersion() != "" && opts.GetResourceVersion() != "0" {
			return nil, false, false // etcd's path refuses it
		}
		rev, startKey, err := decodeContinue(cont, keyPrefix)
		if err != nil {
			return nil, false, false
		}
		t, ok := c.snapshotAt(rev)
		if !ok {
			return nil, false, false
		}
		return page(r, t, rev, keyPrefix, startKey, sel, limit), true, false
	}
	switch {
	case opts.GetResourceVersion() == "0":
		limit = 0
	case rv > 0:
		if c.waitFresh(ctx, uint64(rv), blockTimeout) != nil {
			return nil, false, false
		}
	default:
		consistent = true
		current, err := h.store.CurrentRevision(ctx)
		if err != nil || c.waitFresh(ctx, uint64(current), consistentReadTimeout) != nil {
			return nil, false, true
		}
	}
	t, rev, err := c.snapshot()
	if err != nil {
		return nil, false, consistent
	}
	res = page(r, t, rev, keyPrefix, "", sel, limit)
	if res.cont != "" {
		c.keepSnapshot(rev, t)
	}
	return res, true, consistent
}

// page reads, as the list at revision rev, up to limit objects of t (0: all) under keyPrefix
// that match sel, after the key startAfter ("": from the first). Objects remaining after the
// page give it a continue token (and, unfiltered, their count). The items are the cache's,
// shared: read them; whoever hands them on copies them (listResult.owned).
func page(r *Resource, t *objectTree, rev int64, keyPrefix, startAfter string, sel selector, limit int64) *listResult {
	res := &listResult{items: []runtime.Object{}, revision: rev, shared: true}
	from := keyPrefix
	if startAfter != "" {
		from = startAfter + "\x00"
	}
	var lastKey string
	var remaining int64
	fetched := 0
	t.AscendGreaterOrEqual(cacheEntry{key: from}, func(e cacheEntry) bool {
		if !strings.HasPrefix(e.key, keyPrefix) {
			return false
		}
		if limit > 0 && int64(len(res.items)) == limit {
			remaining++
			return sel.empty() // only an unfiltered list counts the rest
		}
		fetched++
		if sel.matches(r, e.obj) {
			res.items = append(res.items, e.obj)
			res.encoded = append(res.encoded, e.enc)
			lastKey = e.key
		}
		return true
	})
	recordList(r.GroupResource(), fromWatchCache, fetched, 0, len(res.items))
	if remaining > 0 {
		res.cont = encodeContinue(rev, lastKey, keyPrefix)
		if sel.empty() {
			res.remaining = &remaining
		}
	}
	return res
}
