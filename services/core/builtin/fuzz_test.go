package builtin

import (
	"context"
	"encoding/json"
	"testing"
)

// FuzzDefaultAndValidate: whatever a client sends that decodes, defaulting, the create
// strategy and validation of the built-in kinds neither panic nor loop (go test -fuzz
// FuzzDefaultAndValidate ./services/core/builtin).
func FuzzDefaultAndValidate(f *testing.F) {
	for _, seed := range []string{
		`{"spec":{"containers":[{"name":"c","image":"x","ports":[{"containerPort":80}]}]}}`,
		`{"spec":{"volumes":[{"name":"v","rbd":{}},{"name":"w"}],"containers":[{"resources":{"limits":{"cpu":"-1"}}}],"hostNetwork":true}}`,
		`{"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":"x"}}}]}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"x%"}}}}`,
		`{"spec":{"type":"LoadBalancer","ports":[{"port":0,"targetPort":"a b"}],"sessionAffinity":"ClientIP"}}`,
	} {
		f.Add([]byte(seed))
	}
	r := Resources(Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, res := range r {
			if res.New == nil || res.Default == nil {
				continue
			}
			obj := res.New()
			if json.Unmarshal(data, obj) != nil {
				continue
			}
			old := obj.DeepCopyObject()
			res.Default(obj)
			if res.PrepareForCreate != nil {
				res.PrepareForCreate(context.Background(), obj)
			}
			if res.Validate != nil {
				_ = res.Validate(obj)
			}
			if res.ValidateUpdate != nil {
				res.Default(old)
				_ = res.ValidateUpdate(obj, old)
			}
			if res.Cells != nil {
				_ = res.Cells(obj)
			}
		}
	})
}
