package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEnabled(t *testing.T) {
	var none *Options
	assert.True(t, none.Enabled(ServiceAccount), "kube's defaults without flags")
	assert.False(t, none.Enabled("AlwaysPullImages"))
	o := &Options{Disable: []string{ServiceAccount}}
	assert.False(t, o.Enabled(ServiceAccount))
	assert.True(t, o.Enabled(NamespaceLifecycle))
	o = &Options{Enable: []string{"PodNodeSelector"}}
	assert.True(t, o.Enabled("PodNodeSelector"))
}

// The flags are checked as kube checks them, in its words.
func TestValidate(t *testing.T) {
	assert.NoError(t, (&Options{Enable: []string{ResourceQuota}, Disable: []string{ServiceAccount, "TaintNodesByCondition"}}).Validate())
	assert.EqualError(t, (&Options{Enable: []string{"Nope"}}).Validate(), `enable-admission-plugins plugin "Nope" is unknown`)
	assert.EqualError(t, (&Options{Disable: []string{"Nope"}}).Validate(), `disable-admission-plugins plugin "Nope" is unknown`)
	assert.EqualError(t, (&Options{Enable: []string{LimitRanger}, Disable: []string{LimitRanger}}).Validate(),
		"[LimitRanger] in enable-admission-plugins and disable-admission-plugins overlapped")
	assert.EqualError(t, (&Options{Enable: []string{"AlwaysPullImages"}}).Validate(),
		`enable-admission-plugins plugin "AlwaysPullImages" is not implemented by apichain`)
}
