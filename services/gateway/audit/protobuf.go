package audit

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
)

// protobufMagic starts kube's protobuf encoding: a runtime.Unknown envelope follows.
var protobufMagic = []byte("k8s\x00")

// objectMeta is what an event's object reference takes from a request object.
type objectMeta struct {
	Name, Namespace, UID, ResourceVersion string
}

// protobufMeta reads the metadata of a kube protobuf object without its Go type: the
// envelope's raw object (field 2) holds ObjectMeta as field 1, which holds name (1),
// namespace (3), uid (5) and resourceVersion (6). The gateway keeps no scheme of every kind,
// so a protobuf body names its object in the event but is not recorded itself.
func protobufMeta(body []byte) (objectMeta, bool) {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return objectMeta{}, false
	}
	raw, ok := field(rest, 2)
	if !ok {
		return objectMeta{}, false
	}
	meta, ok := field(raw, 1)
	if !ok {
		return objectMeta{}, false
	}
	var m objectMeta
	for num, dst := range map[protowire.Number]*string{1: &m.Name, 3: &m.Namespace, 5: &m.UID, 6: &m.ResourceVersion} {
		if v, ok := field(meta, num); ok {
			*dst = string(v)
		}
	}
	return m, true
}

// field returns the bytes of the first length-delimited field num in msg.
func field(msg []byte, num protowire.Number) ([]byte, bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
		if typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			if l < 0 {
				return nil, false
			}
			if n == num {
				return v, true
			}
			msg = msg[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
	}
	return nil, false
}
