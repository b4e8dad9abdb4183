package app

import (
	"testing"

	"github.com/apichain/apichain/pkg/apiregistration"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The aggregator registers an APIService for each built-in group/version from
// apiregistration.Builtin: core serves each of them but extensions' one, and no other.
func TestBuiltinAPIServicesAreWhatCoreServes(t *testing.T) {
	want := map[schema.GroupVersion]bool{}
	for gv := range apiregistration.Builtin {
		if gv.Group != "apiextensions.k8s.io" {
			want[gv] = true
		}
	}
	for _, gv := range Served() {
		key := schema.GroupVersion{Group: gv.GetGroup(), Version: gv.GetVersion()}
		if !want[key] {
			t.Errorf("core serves %v, which has no built-in APIService", key)
		}
		delete(want, key)
	}
	for gv := range want {
		t.Errorf("%v has a built-in APIService but core does not serve it", gv)
	}
}
