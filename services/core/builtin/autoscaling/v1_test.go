package autoscaling

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/apichain/apichain/services/core/builtin/defaulting"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"
)

// The v1 view of a v2 autoscaler, and the v2 view of a v1 one, are kube's (recorded from
// kube-apiserver 1.37.2 in testdata/hpa: the manifest created, then read in the other version).
func TestHPAConversionMatchesKube(t *testing.T) {
	specOf := func(t *testing.T, o any) map[string]any {
		t.Helper()
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		md, _ := m["metadata"].(map[string]any)
		return map[string]any{"annotations": md["annotations"], "spec": m["spec"], "status": m["status"]}
	}
	read := func(t *testing.T, path string, into any) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("v2 read as v1", func(t *testing.T) {
		v2 := &autoscalingv2.HorizontalPodAutoscaler{}
		read(t, "testdata/hpa/h2.v2.yaml", v2)
		defaulting.Set(v2)
		var kube map[string]any
		read(t, "testdata/hpa/h2.v1.kube.json", &kube)
		got, want := specOf(t, hpaToV1(v2)), specOf(t, kube)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("v1 view:\n got %v\nkube %v", got, want)
		}
		// and back: v1 with its annotations is the v2 it came from (other metrics first)
		back := hpaToV2(hpaToV1(v2))
		if len(back.Spec.Metrics) != 3 || back.Spec.Metrics[2].Resource.Name != "cpu" || back.Spec.Behavior == nil ||
			*back.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 60 || back.Annotations != nil {
			t.Errorf("round trip: %+v", back.Spec)
		}
	})
	t.Run("v1 read as v2", func(t *testing.T) {
		v1 := &autoscalingv1.HorizontalPodAutoscaler{}
		read(t, "testdata/hpa/h1.v1.yaml", v1)
		defaulting.Set(v1)
		v2 := hpaToV2(v1)
		defaulting.Set(v2)
		var kube map[string]any
		read(t, "testdata/hpa/h1.v2.kube.json", &kube)
		got, want := specOf(t, v2), specOf(t, kube)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("v2 view:\n got %v\nkube %v", got, want)
		}
		if p := hpaToV1(v2).Spec.TargetCPUUtilizationPercentage; p == nil || *p != 80 {
			t.Errorf("v1 target %v, want kube's implicit 80", p)
		}
	})
}
