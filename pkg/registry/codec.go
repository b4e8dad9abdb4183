package registry

import (
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types apichain serves.
const (
	MediaJSON     = "application/json"
	MediaYAML     = "application/yaml"
	MediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// outputKind is what the client asked the object to be turned into.
type outputKind int

const (
	asObject outputKind = iota
	asTable
	asPartialMetadata
	asListItem // not asked for: a cached encoding of an object as a list's item
)

// output is the negotiated response encoding.
type output struct {
	mediaType string
	kind      outputKind
	pretty    bool
}

// negotiate picks the response encoding from an Accept header as kube does: the first
// acceptable clause wins; "as=Table;g=meta.k8s.io;v=v1" asks for a Table and
// "as=PartialObjectMetadata[List]" for metadata only.
// Custom resources (noProtobuf) have no protobuf form: a client that accepts only protobuf
// gets kube's 406, one that accepts JSON too gets JSON.
func negotiate(accept string, pretty, noProtobuf bool) (output, error) {
	if strings.TrimSpace(accept) == "" {
		return output{mediaType: MediaJSON, pretty: pretty}, nil
	}
	for _, clause := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		var media string
		switch mt {
		case MediaJSON, "*/*", "application/*":
			media = MediaJSON
		case MediaYAML:
			media = MediaYAML
		case MediaProtobuf:
			if noProtobuf {
				continue
			}
			media = MediaProtobuf
		default:
			continue
		}
		kind := asObject
		if as := params["as"]; as != "" {
			if params["g"] != "meta.k8s.io" || params["v"] != "v1" {
				continue // kube serves these conversions only at meta.k8s.io/v1
			}
			switch as {
			case "Table":
				if media == MediaProtobuf {
					continue // kube serves Tables as JSON or YAML only; Table has no protobuf form
				}
				kind = asTable
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				kind = asPartialMetadata
			default:
				continue
			}
		}
		return output{mediaType: media, kind: kind, pretty: pretty}, nil
	}
	return output{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "", "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", 0, false)
}

// contentType is the response Content-Type for o.
func (o output) contentType() string {
	return o.mediaType
}

// encode writes obj (already converted for o.kind) in o's media type, versioned to gv.
func (s *Scheme) encode(obj runtime.Object, gv schema.GroupVersion, o output) ([]byte, error) {
	info, ok := runtime.SerializerInfoForMediaType(s.Codecs.SupportedMediaTypes(), o.mediaType)
	if !ok {
		return nil, fmt.Errorf("no serializer for %s", o.mediaType)
	}
	ser := info.Serializer
	if o.pretty && info.PrettySerializer != nil {
		ser = info.PrettySerializer
	}
	// A custom resource (and its list) is written as it is: it is already in its version, and
	// the scheme knows no type for it.
	if _, ok := obj.(runtime.Unstructured); ok {
		return encodeAppending(ser, obj)
	}
	// Encode in the object's own group/version: the resource's, or meta.k8s.io/v1 for Tables
	// and metadata, autoscaling/v1 for Scale.
	if kinds, _, err := s.ObjectKinds(obj); err == nil && len(kinds) > 0 {
		own := false
		for _, k := range kinds {
			own = own || k.GroupVersion() == gv
		}
		if !own {
			gv = kinds[0].GroupVersion()
		}
	}
	return encodeAppending(s.Codecs.EncoderForVersion(ser, gv), obj)
}

// encodeAppending is runtime.Encode into a slice that is appended to: a bytes.Buffer zeroes
// the room it grows before copying into it, which for a list of thousands of objects was a
// tenth of the CPU.
func encodeAppending(e runtime.Encoder, obj runtime.Object) ([]byte, error) {
	var out appendWriter
	if err := e.Encode(obj, &out); err != nil {
		return nil, err
	}
	return out, nil
}

type appendWriter []byte

func (w *appendWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}

// noProtobuf reports whether obj's kind has no protobuf form: a custom resource's, or a Go
// type without kube's generated protobuf code (apichain's APIService).
func noProtobuf(obj runtime.Object) bool {
	if _, ok := obj.(runtime.Unstructured); ok {
		return true
	}
	_, ok := obj.(interface{ Marshal() ([]byte, error) })
	return !ok
}

// decode reads a request body of contentType into into, checking its apiVersion and kind.
// strict (fieldValidation=Strict) fails on unknown or duplicate fields.
func (s *Scheme) decode(data []byte, contentType string, into runtime.Object, gvk schema.GroupVersionKind, strict bool) error {
	mt := MediaJSON // kube reads a body without a Content-Type as JSON
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return unsupportedMediaType(MediaJSON, MediaYAML, MediaProtobuf)
		}
	}
	if mt == MediaProtobuf && noProtobuf(into) { // custom resources have no protobuf form
		return unsupportedMediaType(MediaJSON, MediaYAML)
	}
	info, ok := runtime.SerializerInfoForMediaType(s.Codecs.SupportedMediaTypes(), mt)
	if !ok {
		return unsupportedMediaType(MediaJSON, MediaYAML, MediaProtobuf)
	}
	ser := info.Serializer
	if strict && info.StrictSerializer != nil { // protobuf has no unknown fields to report
		ser = info.StrictSerializer
	}
	out, got, err := s.Codecs.DecoderToVersion(ser, gvk.GroupVersion()).Decode(data, &gvk, into)
	if err != nil {
		return &decodeError{StatusError: decodeFailure(err, got, gvk.Kind, data), cause: err}
	}
	if got != nil && (got.Kind != gvk.Kind || got.GroupVersion() != gvk.GroupVersion()) {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion(), gvk.GroupVersion()))
	}
	if out != into {
		return apierrors.NewBadRequest("decoded into an unexpected type")
	}
	return nil
}

// decodeFailure is kube's 400 for a body that does not decode as kind (its handlers'
// transformDecodeError): the kind and version the body names when it names them, else the start
// of the body.
func decodeFailure(err error, got *schema.GroupVersionKind, kind string, data []byte) *apierrors.StatusError {
	if got != nil && got.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, kind, err))
	}
	const most = 30
	summary := "<empty>"
	switch {
	case len(data) > 0 && data[0] == '{' && len(data) > most:
		summary = string(data[:most]) + " ..."
	case len(data) > 0 && data[0] == '{':
		summary = string(data)
	case len(data) > most:
		summary = hex.EncodeToString(data[:most]) + " ..."
	case len(data) > 0:
		summary = hex.EncodeToString(data)
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summary))
}

// unsupportedMediaType is kube's 415 for a body it cannot read.
func unsupportedMediaType(accepted ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
	}}
}

// decodeError is a 400 that keeps the decoder's error, so strict-decoding findings can become
// warnings.
type decodeError struct {
	*apierrors.StatusError
	cause error
}

func (e *decodeError) Unwrap() error { return e.cause }

// strictWarnings lists the unknown and duplicate fields a strict decode found; empty for any
// other error.
func strictWarnings(err error) []string {
	var de *decodeError
	if !errors.As(err, &de) {
		return nil
	}
	sde, ok := runtime.AsStrictDecodingError(de.cause)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range sde.Errors() {
		out = append(out, e.Error())
	}
	return out
}
