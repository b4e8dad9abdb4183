package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// framer writes watch events in kube's wire format for a media type: JSON objects one per
// line, or protobuf WatchEvents each behind a 4-byte big-endian length.
type framer struct {
	contentType string
	encode      func(ev *resourcev1.WatchResponse) ([]byte, error)
}

func watchFramer(objectContentType string) framer {
	if strings.HasPrefix(objectContentType, "application/vnd.kubernetes.protobuf") {
		return framer{contentType: "application/vnd.kubernetes.protobuf;stream=watch", encode: protobufEvent}
	}
	return framer{contentType: "application/json", encode: jsonEvent}
}

// jsonEvent is {"type":...,"object":...} on a line. The object is the backend's JSON as it is
// (json.Marshal would check and compact it again for every watcher of the event); a type
// that is not one upper-case word goes through json.Marshal.
func jsonEvent(ev *resourcev1.WatchResponse) ([]byte, error) {
	typ, obj := ev.GetType(), bytes.TrimRight(ev.GetObject().GetData(), " \t\r\n")
	if !upperWord(typ) || len(obj) == 0 {
		line, err := json.Marshal(struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}{typ, obj})
		return append(line, '\n'), err
	}
	out := make([]byte, 0, len(`{"type":"","object":}`)+len(typ)+len(obj)+1)
	out = append(out, `{"type":"`...)
	out = append(out, typ...)
	out = append(out, `","object":`...)
	out = append(out, obj...)
	return append(out, '}', '\n'), nil
}

func upperWord(s string) bool {
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return s != ""
}

// protobufEvent is a WatchEvent behind its 4-byte big-endian length, marshalled in place.
func protobufEvent(ev *resourcev1.WatchResponse) ([]byte, error) {
	we := metav1.WatchEvent{Type: ev.GetType(), Object: runtime.RawExtension{Raw: ev.GetObject().GetData()}}
	size := we.Size()
	out := make([]byte, 4+size)
	binary.BigEndian.PutUint32(out, uint32(size))
	if _, err := we.MarshalToSizedBuffer(out[4:]); err != nil {
		return nil, err
	}
	return out, nil
}
