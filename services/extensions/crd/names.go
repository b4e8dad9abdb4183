package crd

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RunController is kube's naming, establishing and finalizing controllers in one: after every
// change to CRDs it accepts each CRD's names that no other CRD of its group holds
// (NamesAccepted, or kube's conflict reason and message), establishes a CRD once its names
// are accepted, and lets a CRD being deleted go; after every pass, established gets the CRDs
// as they are now. Every replica may run it: the outcome is a function of the CRDs.
func RunController(ctx context.Context, client *registry.Client, log *slog.Logger, resync time.Duration,
	established func([]*apiextensionsv1.CustomResourceDefinition)) {
	r, ok := client.Lookup(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if !ok {
		return
	}
	registry.Reconcile(ctx, client, r, resync, func(ctx context.Context) error {
		crds, err := reconcile(ctx, client, r)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("CRD controller", "err", err)
			}
			return err
		}
		established(crds)
		return nil
	})
}

func reconcile(ctx context.Context, client *registry.Client, r *registry.Resource) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := client.List(ctx, r, "", "")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, o := range objs {
		crds = append(crds, o.(*apiextensionsv1.CustomResourceDefinition))
	}
	// Oldest first, as kube's informer order settles who had a name first.
	sort.Slice(crds, func(i, j int) bool {
		a, b := crds[i].CreationTimestamp, crds[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return crds[i].Name < crds[j].Name
	})
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			if err := finalize(ctx, client, r, crd); err != nil {
				return nil, err
			}
			continue
		}
		want := namesAndConditions(crd, crds)
		if equality.Semantic.DeepEqual(want, crd.Status) {
			continue
		}
		err := client.Update(ctx, r, "", crd.Name, "status", func(o runtime.Object) {
			o.(*apiextensionsv1.CustomResourceDefinition).Status = *want.DeepCopy()
		})
		if err != nil {
			return nil, err
		}
		crd.Status = want // later CRDs of the group see the names as accepted now
	}
	return crds, nil
}

// namesAndConditions is the status kube's controllers give crd among all: accepted names and
// the NamesAccepted and Established conditions.
func namesAndConditions(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionStatus {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, other := range all {
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		n := other.Status.AcceptedNames
		resources[n.Plural], resources[n.Singular] = true, true
		for _, s := range n.ShortNames {
			resources[s] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	delete(resources, "")
	delete(kinds, "")
	free := func(requested, accepted string, used map[string]bool) error {
		if requested == accepted || !used[requested] {
			return nil
		}
		return fmt.Errorf("%q is already in use", requested)
	}

	status := *crd.Status.DeepCopy()
	requested, accepted := crd.Spec.Names, crd.Status.AcceptedNames
	names := accepted
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := free(requested.Plural, accepted.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		names.Plural = requested.Plural
	}
	if err := free(requested.Singular, accepted.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		names.Singular = requested.Singular
	}
	if !reflect.DeepEqual(requested.ShortNames, accepted.ShortNames) {
		var msgs []string
		for _, s := range requested.ShortNames {
			if slices.Contains(accepted.ShortNames, s) {
				continue
			}
			if err := free(s, "", resources); err != nil {
				msgs = append(msgs, err.Error())
			}
		}
		switch len(msgs) {
		case 0:
			names.ShortNames = requested.ShortNames
		case 1:
			conflict("ShortNamesConflict", fmt.Errorf("%s", msgs[0]))
		default:
			conflict("ShortNamesConflict", fmt.Errorf("[%s]", strings.Join(msgs, ", ")))
		}
	}
	if err := free(requested.Kind, accepted.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		names.Kind = requested.Kind
	}
	if err := free(requested.ListKind, accepted.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		names.ListKind = requested.ListKind
	}
	names.Categories = requested.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}

	established := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
		Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}
	if old := findCondition(&status, apiextensionsv1.Established); old != nil {
		established = *old
	}
	// Accepted names establish the CRD (kube's establishing controller, which apichain runs
	// in the same pass: every extensions replica serves a CRD from its stored state).
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	}
	status.AcceptedNames = names
	setCondition(&status, cond)
	setCondition(&status, established)
	return status
}

func findCondition(s *apiextensionsv1.CustomResourceDefinitionStatus, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces or adds c; the transition time moves only when the status changes,
// as kube's SetCRDCondition.
func setCondition(s *apiextensionsv1.CustomResourceDefinitionStatus, c apiextensionsv1.CustomResourceDefinitionCondition) {
	old := findCondition(s, c.Type)
	if old == nil {
		c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
		s.Conditions = append(s.Conditions, c)
		return
	}
	if old.Status != c.Status {
		c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	} else {
		c.LastTransitionTime = old.LastTransitionTime
	}
	*old = c
}
