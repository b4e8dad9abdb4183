package proxy

import (
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

func jsonEvent(ev *resourcev1.WatchResponse) ([]byte, error) {
	line, err := json.Marshal(struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}{ev.GetType(), ev.GetObject().GetData()})
	return append(line, '\n'), err
}

func protobufEvent(ev *resourcev1.WatchResponse) ([]byte, error) {
	we := metav1.WatchEvent{Type: ev.GetType(), Object: runtime.RawExtension{Raw: ev.GetObject().GetData()}}
	data, err := we.Marshal()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4, 4+len(data))
	binary.BigEndian.PutUint32(out, uint32(len(data)))
	return append(out, data...), nil
}
