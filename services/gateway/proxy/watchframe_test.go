package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The hand-built JSON line is what json.Marshal makes of the event, for every type and object.
func TestJSONEventMatchesMarshal(t *testing.T) {
	for _, tc := range []struct{ typ, obj string }{
		{"ADDED", `{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v \u003c\"x\""}}`},
		{"DELETED", "{\"kind\":\"ConfigMap\"}\n"}, // a backend encoder's trailing newline
		{"BOOKMARK", `{"metadata":{"resourceVersion":"12"}}`},
		{"weird \"type\"", `{"a":1}`},
		{"ERROR", `{ "kind" : "Status" }`},
	} {
		got, err := jsonEvent(&resourcev1.WatchResponse{Type: tc.typ, Object: &resourcev1.Body{Data: []byte(tc.obj)}})
		require.NoError(t, err)
		want, err := json.Marshal(struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}{tc.typ, json.RawMessage(tc.obj)})
		require.NoError(t, err)
		var g, w any
		require.NoError(t, json.Unmarshal(got, &g), string(got))
		require.NoError(t, json.Unmarshal(want, &w))
		assert.Equal(t, w, g, tc.typ)
		assert.Equal(t, 1, bytes.Count(got, []byte("\n")), "one event, one line: %q", got)
		assert.True(t, bytes.HasSuffix(got, []byte("\n")))
	}
}

func FuzzJSONEvent(f *testing.F) {
	f.Add("ADDED", []byte(`{"kind":"ConfigMap"}`))
	f.Add("MODIFIED", []byte("{\"a\":[1,2]}\n"))
	f.Fuzz(func(t *testing.T, typ string, obj []byte) {
		if !json.Valid(obj) {
			return // backends send valid JSON
		}
		line, err := jsonEvent(&resourcev1.WatchResponse{Type: typ, Object: &resourcev1.Body{Data: obj}})
		if err != nil {
			return
		}
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev.Type != typ && json.Valid([]byte(`"`+typ+`"`)) && upperWord(typ) {
			t.Fatalf("type %q came back as %q", typ, ev.Type)
		}
		var a, b any
		_ = json.Unmarshal(obj, &a)
		_ = json.Unmarshal(ev.Object, &b)
		assert.Equal(t, a, b)
	})
}

func TestProtobufEventRoundTrip(t *testing.T) {
	raw := []byte("\x6b\x38\x73\x00object")
	out, err := protobufEvent(&resourcev1.WatchResponse{Type: "MODIFIED", Object: &resourcev1.Body{Data: raw}})
	require.NoError(t, err)
	require.Equal(t, int(binary.BigEndian.Uint32(out)), len(out)-4)
	var we metav1.WatchEvent
	require.NoError(t, we.Unmarshal(out[4:]))
	assert.Equal(t, "MODIFIED", we.Type)
	assert.Equal(t, raw, we.Object.Raw)
}
