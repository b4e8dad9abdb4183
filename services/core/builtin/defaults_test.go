package builtin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apichain/apichain/pkg/registry"
	"github.com/apichain/apichain/services/core/builtin/defaulting"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// TestDefaultsMatchKube defaults each manifest in testdata/defaults as a create would (the
// kind's defaults, then its create strategy) and compares the spec with kube-apiserver 1.37.2's
// answer to the same manifest, recorded next to it (<name>.kube.json, made with
// kubectl create --dry-run=server -o json; APICHAIN_RECORD_KUBECONFIG=<kubeconfig> records anew).
func TestDefaultsMatchKube(t *testing.T) {
	byKind := map[schema.GroupVersionKind]*registry.Resource{}
	for _, r := range Resources(Options{}) {
		byKind[r.GroupVersion.WithKind(r.Kind)] = r
	}
	manifests, _ := filepath.Glob("testdata/defaults/*.yaml")
	if len(manifests) == 0 {
		t.Fatal("no manifests")
	}
	for _, manifest := range manifests {
		name := strings.TrimSuffix(filepath.Base(manifest), ".yaml")
		recorded := strings.TrimSuffix(manifest, ".yaml") + ".kube.json"
		t.Run(name, func(t *testing.T) {
			if kc := os.Getenv("APICHAIN_RECORD_KUBECONFIG"); kc != "" {
				out, err := exec.Command("kubectl", "--kubeconfig", kc, "create", "--dry-run=server", "-o", "json", "-f", manifest).Output()
				if err != nil {
					t.Fatalf("recording: %v", err)
				}
				if err := os.WriteFile(recorded, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(manifest)
			if err != nil {
				t.Fatal(err)
			}
			var kube map[string]any
			if b, err := os.ReadFile(recorded); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &kube); err != nil {
				t.Fatal(err)
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(data, &tm); err != nil {
				t.Fatal(err)
			}
			r := byKind[tm.GroupVersionKind()]
			if r == nil {
				t.Fatalf("core does not serve %s", tm.GroupVersionKind())
			}
			obj := r.New()
			if err := yaml.UnmarshalStrict(data, obj); err != nil {
				t.Fatal(err)
			}
			acc, _ := meta.Accessor(obj)
			acc.SetUID(types.UID(kube["metadata"].(map[string]any)["uid"].(string)))
			r.Default(obj)
			if r.PrepareForCreate != nil {
				r.PrepareForCreate(context.Background(), obj)
			}
			b, _ := json.Marshal(obj)
			var got map[string]any
			_ = json.Unmarshal(b, &got)
			if !reflect.DeepEqual(got["spec"], kube["spec"]) {
				g, _ := json.Marshal(got["spec"])
				w, _ := json.Marshal(kube["spec"])
				t.Errorf("spec differs from kube's:\n got %s\nkube %s", g, w)
			}
		})
	}
}

// The +default markers of k8s.io/api's types are applied where the types appear.
func TestDeclaredDefaults(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{RBDImage: "img"}}}},
		Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9}}}}},
	}}
	defaulting.Set(pod)
	rbd := pod.Spec.Volumes[0].RBD
	if rbd.RBDPool != "rbd" || rbd.RadosUser != "admin" || rbd.Keyring != "/etc/ceph/keyring" {
		t.Errorf("rbd defaults: %+v", rbd)
	}
	if p := pod.Spec.Containers[0].Ports[0].Protocol; p != corev1.ProtocolTCP {
		t.Errorf("container port protocol %q", p)
	}
	if s := pod.Spec.Containers[0].LivenessProbe.GRPC.Service; s == nil || *s != "" {
		t.Errorf("grpc service %v, want a pointer to \"\"", s)
	}
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{}}
	defaulting.Set(rc)
	if rc.Spec.Replicas == nil || *rc.Spec.Replicas != 1 {
		t.Errorf("rc replicas %v", rc.Spec.Replicas)
	}
	other := &corev1.ReplicationController{}
	defaulting.Set(other)
	if other.Spec.Replicas == rc.Spec.Replicas {
		t.Error("two objects share one defaulted pointer")
	}
}
