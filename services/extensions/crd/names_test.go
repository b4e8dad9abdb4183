package crd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newCRD(name, group, plural, kind string, shortNames ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: plural, Singular: kindLower(kind), Kind: kind, ListKind: kind + "List", ShortNames: shortNames}}}
	return c
}

func kindLower(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func condition(s apiextensionsv1.CustomResourceDefinitionStatus, t apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.CustomResourceDefinitionCondition {
	c := findCondition(&s, t)
	if c == nil {
		return apiextensionsv1.CustomResourceDefinitionCondition{}
	}
	out := *c
	out.LastTransitionTime = metav1.Time{}
	return out
}

// kube's naming controller: names no other CRD of the group has accepted are accepted, a
// taken one is kube's conflict, and accepted names establish the CRD.
func TestNamesAndConditions(t *testing.T) {
	widgets := newCRD("widgets.example.com", "example.com", "widgets", "Widget", "wd")
	st := namesAndConditions(widgets, nil)
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
		ShortNames: []string{"wd"}}, st.AcceptedNames)
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		Reason: "NoConflicts", Message: "no conflicts found"}, condition(st, apiextensionsv1.NamesAccepted))
	assert.Equal(t, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
		Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, condition(st, apiextensionsv1.Established))
	widgets.Status = st

	cases := []struct {
		crd             *apiextensionsv1.CustomResourceDefinition
		reason, reason2 string
		message         string
	}{
		{newCRD("gadgets.example.com", "example.com", "gadgets", "Widget"), "ListKindConflict", "", `"WidgetList" is already in use`},
		{newCRD("widgets2.example.com", "example.com", "widgets", "Widget2"), "PluralConflict", "", `"widgets" is already in use`},
		{newCRD("tools.example.com", "example.com", "tools", "Tool", "wd", "widget"), "ShortNamesConflict", "",
			`["wd" is already in use, "widget" is already in use]`},
		{newCRD("widgets.other.com", "other.com", "widgets", "Widget", "wd"), "NoConflicts", "", "no conflicts found"},
	}
	for _, tc := range cases {
		st := namesAndConditions(tc.crd, []*apiextensionsv1.CustomResourceDefinition{widgets, tc.crd})
		c := condition(st, apiextensionsv1.NamesAccepted)
		assert.Equal(t, tc.reason, c.Reason, tc.crd.Name)
		assert.Equal(t, tc.message, c.Message, tc.crd.Name)
		est := condition(st, apiextensionsv1.Established)
		if tc.reason == "NoConflicts" {
			assert.Equal(t, apiextensionsv1.ConditionTrue, est.Status)
		} else {
			assert.Equal(t, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
				Reason: "NotAccepted", Message: "not all names are accepted"}, est, tc.crd.Name)
		}
	}

	// An established CRD stays established when a later spec change conflicts; its accepted
	// names stay the old ones, and the transition time moves only with the status.
	before := findCondition(&widgets.Status, apiextensionsv1.Established).LastTransitionTime
	other := newCRD("things.example.com", "example.com", "things", "Thing", "th")
	other.Status = namesAndConditions(other, nil)
	widgets.Spec.Names.ShortNames = []string{"wd", "th"}
	time.Sleep(time.Millisecond)
	st = namesAndConditions(widgets, []*apiextensionsv1.CustomResourceDefinition{widgets, other})
	assert.Equal(t, "ShortNamesConflict", condition(st, apiextensionsv1.NamesAccepted).Reason)
	assert.Equal(t, []string{"wd"}, st.AcceptedNames.ShortNames)
	assert.Equal(t, apiextensionsv1.ConditionTrue, condition(st, apiextensionsv1.Established).Status)
	assert.Equal(t, before, findCondition(&st, apiextensionsv1.Established).LastTransitionTime)
}
