package bootstrap

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apichain/apichain/pkg/registry"
	"golang.org/x/sync/errgroup"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fcbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// The API Priority and Fairness configuration kube-apiserver keeps (its post-start hook
// priority-and-fairness-config-producer): kube's mandatory and suggested FlowSchemas and
// PriorityLevelConfigurations (the bootstrap data of k8s.io/apiserver), created when missing
// and kept as kube keeps them (see reviseSpec), and bootstrap objects kube no longer suggests
// deleted unless an operator took them over.

const fcFieldManager = "api-priority-and-fairness-config-producer-v1"

// EnsureFlowControl makes the configuration right once, retrying every second until it
// succeeds (or ctx ends); then, until ctx ends, it does so again every minute.
func EnsureFlowControl(ctx context.Context, client *registry.Client, log *slog.Logger, defaults func(runtime.Object)) error {
	ctx = registry.WithFieldManager(ctx, fcFieldManager)
	for {
		err := ensureFlowControl(ctx, client, defaults)
		if err == nil {
			break
		}
		log.Warn("APF bootstrap configuration, will retry", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("unable to initialize APF bootstrap configuration: %w", err)
		case <-time.After(time.Second):
		}
	}
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := ensureFlowControl(ctx, client, defaults); err != nil && ctx.Err() == nil {
					log.Warn("APF bootstrap configuration", "err", err)
				}
			}
		}
	}()
	return nil
}

type fcKind struct {
	r *registry.Resource
	// existing objects by name
	existing map[string]runtime.Object
}

func ensureFlowControl(ctx context.Context, client *registry.Client, defaults func(runtime.Object)) error {
	kinds := map[string]*fcKind{}
	for _, name := range []string{"prioritylevelconfigurations", "flowschemas"} {
		r, ok := client.Lookup(flowcontrolv1.SchemeGroupVersion.WithResource(name))
		if !ok {
			return fmt.Errorf("%s are not served here", name)
		}
		objs, err := client.List(ctx, r, "", "")
		if err != nil {
			return err
		}
		k := &fcKind{r: r, existing: map[string]runtime.Object{}}
		for _, o := range objs {
			k.existing[o.(metav1.Object).GetName()] = o
		}
		kinds[name] = k
	}
	pls, fss := kinds["prioritylevelconfigurations"], kinds["flowschemas"]
	steps := []struct {
		what    string
		kind    *fcKind
		objects []runtime.Object
		always  bool // mandatory: the spec is always kept
	}{
		{"suggested", pls, objects(fcbootstrap.SuggestedPriorityLevelConfigurations), false},
		{"suggested", fss, objects(fcbootstrap.SuggestedFlowSchemas), false},
		{"mandatory", pls, objects(fcbootstrap.MandatoryPriorityLevelConfigurations), true},
		{"mandatory", fss, objects(fcbootstrap.MandatoryFlowSchemas), true},
	}
	// The objects are independent: written together, etcd batches them (startup waits on this).
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range steps {
		for _, def := range s.objects {
			g.Go(func() error {
				if err := ensureFlowControlObject(gctx, client, s.kind, def, s.always, defaults); err != nil {
					return fmt.Errorf("failed ensuring %s settings - %w", s.what, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	wanted := map[string]bool{}
	for _, list := range [][]runtime.Object{objects(fcbootstrap.SuggestedPriorityLevelConfigurations), objects(fcbootstrap.SuggestedFlowSchemas),
		objects(fcbootstrap.MandatoryPriorityLevelConfigurations), objects(fcbootstrap.MandatoryFlowSchemas)} {
		for _, o := range list {
			wanted[fmt.Sprintf("%T/%s", o, o.(metav1.Object).GetName())] = true
		}
	}
	for _, k := range []*fcKind{fss, pls} {
		for name, o := range k.existing {
			if wanted[fmt.Sprintf("%T/%s", o, name)] {
				continue
			}
			// Only objects the bootstrap made and nobody took over (autoupdate-spec true).
			if v, ok := o.(metav1.Object).GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]; !ok {
				continue
			} else if auto, err := strconv.ParseBool(v); err != nil || !auto {
				continue
			}
			if _, err := client.Delete(ctx, k.r, "", name, nil); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("failed to delete removed settings - failed to delete unwatned APF object %q - %w", name, err)
			}
		}
	}
	return nil
}

// ensureFlowControlObject creates def when missing; otherwise it revises the existing object
// as kube does: a mandatory object's spec is always kept as the bootstrap's; a suggested one's
// only while its autoupdate-spec annotation says true (or, without a readable annotation, while
// nobody changed it: generation 1); the annotation records the decision.
func ensureFlowControlObject(ctx context.Context, client *registry.Client, k *fcKind, def runtime.Object, always bool, defaults func(runtime.Object)) error {
	name := def.(metav1.Object).GetName()
	cur, ok := k.existing[name]
	if !ok {
		err := client.Create(ctx, k.r, "", def.DeepCopyObject())
		if apierrors.IsAlreadyExists(err) {
			return nil // another core replica was first; the next pass revises it
		}
		return err
	}
	meta := cur.(metav1.Object)
	auto := always
	if !always {
		if v, err := strconv.ParseBool(meta.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]); err == nil {
			auto = v
		} else {
			auto = meta.GetGeneration() == 1
		}
	}
	annotation, present := meta.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	v, err := strconv.ParseBool(annotation)
	updateAnnotation := !present || err != nil || v != auto
	want := def.DeepCopyObject()
	defaults(want)
	specChanged := auto && !specEqualish(want, cur)
	if !updateAnnotation && !specChanged {
		return nil
	}
	err = client.Update(ctx, k.r, "", name, "", func(o runtime.Object) {
		if specChanged {
			setSpec(o, want)
		}
		if updateAnnotation {
			m := o.(metav1.Object)
			a := m.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[flowcontrolv1.AutoUpdateAnnotationKey] = strconv.FormatBool(auto)
			m.SetAnnotations(a)
		}
	})
	if apierrors.IsConflict(err) {
		return nil // changed meanwhile: the next pass looks again
	}
	return err
}

// specEqualish compares a defaulted bootstrap spec with the stored one; the exempt level's
// nominalConcurrencyShares and lendablePercent are the operator's.
func specEqualish(want, cur runtime.Object) bool {
	switch w := want.(type) {
	case *flowcontrolv1.FlowSchema:
		return equality.Semantic.DeepEqual(w.Spec, cur.(*flowcontrolv1.FlowSchema).Spec)
	case *flowcontrolv1.PriorityLevelConfiguration:
		c := cur.(*flowcontrolv1.PriorityLevelConfiguration)
		ws := w.Spec.DeepCopy()
		if w.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			if c.Spec.Exempt == nil {
				return false
			}
			ws.Exempt.NominalConcurrencyShares = c.Spec.Exempt.NominalConcurrencyShares
			ws.Exempt.LendablePercent = c.Spec.Exempt.LendablePercent
		}
		return equality.Semantic.DeepEqual(*ws, c.Spec)
	}
	return false
}

func setSpec(o, want runtime.Object) {
	switch w := want.(type) {
	case *flowcontrolv1.FlowSchema:
		o.(*flowcontrolv1.FlowSchema).Spec = w.Spec
	case *flowcontrolv1.PriorityLevelConfiguration:
		c := o.(*flowcontrolv1.PriorityLevelConfiguration)
		spec := w.Spec
		if w.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt && c.Spec.Exempt != nil {
			spec.Exempt = c.Spec.Exempt
		}
		c.Spec = spec
	}
}
