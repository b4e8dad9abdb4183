package authn

import (
	"testing"

	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
)

func TestWithAuthenticatedGroup(t *testing.T) {
	shared := make([]string, 1, 4) // spare capacity an append could scribble over
	shared[0] = "g"
	cases := []struct {
		name string
		in   *user.User
		want []string
		same bool // returned as is
	}{
		{"added", &user.User{Name: "u", Groups: []string{"g"}}, []string{"g", user.AllAuthenticated}, false},
		{"no groups", &user.User{Name: "u"}, []string{user.AllAuthenticated}, false},
		{"already there", &user.User{Name: "u", Groups: []string{user.AllAuthenticated, "g"}}, []string{user.AllAuthenticated, "g"}, true},
		{"unauthenticated group", &user.User{Name: "u", Groups: []string{user.AllUnauthenticated}}, []string{user.AllUnauthenticated}, true},
		{"anonymous user", &user.User{Name: user.Anonymous}, nil, true},
		{"spare capacity", &user.User{Name: "u", Groups: shared}, []string{"g", user.AllAuthenticated}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]string(nil), tc.in.Groups...)
			got := WithAuthenticatedGroup(tc.in)
			assert.Equal(t, tc.want, got.Groups)
			assert.Equal(t, tc.same, got == tc.in)
			assert.Equal(t, before, tc.in.Groups, "the input user is not modified")
		})
	}
	assert.Equal(t, []string{"g", ""}, shared[:2], "the shared backing array is untouched")
}
