// Package filters is the gateway's HTTP filter chain, one filter per file, assembled in
// chain.go in the order of kube-apiserver's DefaultBuildHandlerChain.
package filters

import (
	"bytes"
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apichain/apichain/pkg/rpcstatus"
)

// WriteStatus writes a kube Status as JSON with its code, as kind Status of v1 whatever the
// given one says (apierrors leave the type empty).
func WriteStatus(w http.ResponseWriter, s *metav1.Status) {
	out := *s
	out.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	data, err := json.Marshal(&out)
	if err != nil {
		http.Error(w, s.Message, int(s.Code))
		return
	}
	WriteStatusJSON(w, int(s.Code), data)
}

// WriteStatusJSON writes a kube Status already encoded as JSON (by a backend) with its code,
// indented for a client that reads it itself.
func WriteStatusJSON(w http.ResponseWriter, code int, data []byte) {
	if IsPretty(w) {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			data = append(buf.Bytes(), '\n')
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// WriteError writes a failure Status.
func WriteError(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	WriteStatus(w, rpcstatus.NewStatus(code, reason, message))
}
