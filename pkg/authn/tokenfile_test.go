package authn

import (
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apichain/apichain/pkg/user"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTokenFile(t *testing.T) {
	cases := []struct {
		name      string
		input     string
		want      map[string]user.User
		wantErr   string
		wantErrIs error
	}{
		{name: "empty file", input: "", want: map[string]user.User{}},
		{name: "minimal line", input: "t1,alice,u1\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1"}}},
		{name: "no trailing newline", input: "t1,alice,u1",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1"}}},
		{name: "CRLF", input: "t1,alice,u1\r\nt2,bob,u2\r\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1"}, "t2": {Name: "bob", UID: "u2"}}},
		{name: "quoted groups", input: `t1,alice,u1,"system:masters,dev"` + "\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1", Groups: []string{"system:masters", "dev"}}}},
		{name: "one unquoted group", input: "t1,alice,u1,dev\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}},
		{name: "groups trimmed, empty ones dropped", input: `t1,alice,u1,"dev, ops ,,"` + "\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev", "ops"}}}},
		{name: "empty groups column", input: "t1,alice,u1,\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1"}}},
		{name: "extra columns ignored", input: "t1,alice,u1,dev,extra,more\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}},
		{name: "leading spaces trimmed", input: "t1, alice, u1, \"dev\"\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1", Groups: []string{"dev"}}}},
		{name: "comments and blank lines", input: "# tokens\n\nt1,alice,u1\n# t2,bob,u2\n\n",
			want: map[string]user.User{"t1": {Name: "alice", UID: "u1"}}},
		{name: "quoted token and user", input: `"t,1","al ice",u1` + "\n",
			want: map[string]user.User{"t,1": {Name: "al ice", UID: "u1"}}},
		{name: "duplicate token: last wins", input: "t1,alice,u1\nt1,bob,u2\n",
			want: map[string]user.User{"t1": {Name: "bob", UID: "u2"}}},
		{name: "empty user and uid allowed", input: "t1,,\n",
			want: map[string]user.User{"t1": {}}},

		{name: "too few fields", input: "t1,alice\n", wantErr: "token file line 1: need at least token,user,uid"},
		{name: "one field", input: "t1\n", wantErr: "token file line 1: need at least token,user,uid"},
		{name: "empty token", input: ",alice,u1\n", wantErr: "token file line 1: empty token"},
		{name: "empty quoted token", input: `"",alice,u1` + "\n", wantErr: "token file line 1: empty token"},
		{name: "bad line after good ones", input: "t1,alice,u1\nt2,bob,u2\nt3\n",
			wantErr: "token file line 3: need at least token,user,uid"},
		{name: "line numbers count comments and blank lines", input: "# tokens\n\nt1,alice,u1\n# next\nt2\n",
			wantErr: "token file line 5: need at least token,user,uid"},
		{name: "unterminated quote", input: "t1,alice,u1\n" + `t2,bob,u2,"dev` + "\n",
			wantErr: "token file: parse error on line 2, column 16", wantErrIs: csv.ErrQuote},
		{name: "bare quote", input: "# c\n" + `t"1,alice,u1` + "\n",
			wantErr: "token file: parse error on line 2, column 2", wantErrIs: csv.ErrBareQuote},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := ParseTokenFile(strings.NewReader(tc.input))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				if tc.wantErrIs != nil {
					assert.ErrorIs(t, err, tc.wantErrIs)
				}
				assert.Nil(t, tf)
				return
			}
			require.NoError(t, err)
			got := map[string]user.User{}
			for tok, u := range tf.tokens {
				got[tok] = *u
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.csv")
	require.NoError(t, os.WriteFile(path, []byte("t1,alice,u1,\"dev\"\n"), 0o600))
	tf, err := LoadTokenFile(path)
	require.NoError(t, err)
	assert.Equal(t, &user.User{Name: "alice", UID: "u1", Groups: []string{"dev"}}, tf.tokens["t1"])

	_, err = LoadTokenFile(filepath.Join(dir, "missing.csv"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(path, []byte("t1\n"), 0o600))
	_, err = LoadTokenFile(path)
	assert.ErrorContains(t, err, "need at least token,user,uid")
}

func TestTokenFileAuthenticateRequest(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("t1,alice,u1,\"dev,ops\"\nt2,bob,u2\n"))
	require.NoError(t, err)
	alice := &user.User{Name: "alice", UID: "u1", Groups: []string{"dev", "ops"}}
	cases := []struct {
		name    string
		header  []string // Authorization values
		want    *user.User
		wantErr bool
	}{
		{name: "no header"},
		{name: "empty header", header: []string{""}},
		{name: "basic", header: []string{"Basic dDE6"}},
		{name: "scheme only", header: []string{"Bearer"}},
		{name: "scheme and space", header: []string{"Bearer "}},
		{name: "two spaces: empty token", header: []string{"Bearer  t1"}},
		{name: "tab is not the separator", header: []string{"Bearer\tt1"}},
		{name: "bearer prefix of another scheme", header: []string{"Bearerx t1"}},
		{name: "valid", header: []string{"Bearer t1"}, want: alice},
		{name: "lower case scheme", header: []string{"bearer t1"}, want: alice},
		{name: "upper case scheme", header: []string{"BEARER t1"}, want: alice},
		{name: "surrounding space", header: []string{"  Bearer t1  "}, want: alice},
		{name: "trailing words ignored", header: []string{"Bearer t1 extra"}, want: alice},
		{name: "first header counts", header: []string{"Bearer t1", "Bearer t2"}, want: alice},
		{name: "other user", header: []string{"Bearer t2"}, want: &user.User{Name: "bob", UID: "u2"}},
		{name: "unknown token", header: []string{"Bearer nope"}, wantErr: true},
		{name: "prefix of a token", header: []string{"Bearer t"}, wantErr: true},
		{name: "token case matters", header: []string{"Bearer T1"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			for _, v := range tc.header {
				r.Header.Add("Authorization", v)
			}
			u, ok, err := NewBearer(nil, tf).AuthenticateRequest(r)
			if tc.wantErr {
				assert.EqualError(t, err, "invalid bearer token")
				assert.False(t, ok)
				assert.Nil(t, u)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want != nil, ok)
			assert.Equal(t, tc.want, u)
		})
	}
}

func TestTokenFileReturnsCopies(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("t1,alice,u1,\"dev\"\n"))
	require.NoError(t, err)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer t1")
	u, ok, err := NewBearer(nil, tf).AuthenticateRequest(r)
	require.NoError(t, err)
	require.True(t, ok)
	u.Name = "mallory"
	u.Groups[0] = "system:masters"

	u2, _, _ := NewBearer(nil, tf).AuthenticateRequest(r)
	assert.Equal(t, &user.User{Name: "alice", UID: "u1", Groups: []string{"dev"}}, u2)
}

func FuzzParseTokenFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"t1,alice,u1\n",
		"t1,alice,u1,\"g1,g2\"\n",
		"# comment\nt1, alice , u1,\" g1 ,,g2\"\r\n",
		"t1,alice\n",
		",alice,u1\n",
		"\"t,1\",\"a\"\"b\",u\n",
		"t1,alice,u1,\"unterminated\n",
		"t\"1,a,u\n",
		"a,b,c,d,e,f,g\n\n\n#\n",
		"\xff\xfe,\x00,\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		tf, err := ParseTokenFile(strings.NewReader(data))
		if err != nil {
			if tf != nil {
				t.Fatalf("error %v with a non-nil token file", err)
			}
			if !strings.HasPrefix(err.Error(), "token file") {
				t.Fatalf("error without a line number: %v", err)
			}
			return
		}
		for tok, u := range tf.tokens {
			if tok == "" {
				t.Fatal("empty token accepted")
			}
			if u == nil {
				t.Fatalf("nil user for token %q", tok)
			}
			for _, g := range u.Groups {
				if g == "" || g != strings.TrimSpace(g) {
					t.Fatalf("untrimmed or empty group %q", g)
				}
			}
			// A token a client can send must authenticate as its user.
			if strings.ContainsAny(tok, " \r\n") || tok != strings.TrimSpace(tok) {
				continue
			}
			r := &http.Request{Header: http.Header{"Authorization": {"Bearer " + tok}}}
			got, ok, err := NewBearer(nil, tf).AuthenticateRequest(r)
			if err != nil || !ok || got.Name != u.Name || got.UID != u.UID {
				t.Fatalf("token %q: got %+v, %v, %v; want %+v", tok, got, ok, err, u)
			}
		}
	})
}

// FuzzTokenFile: any token file either loads or is refused, and any Authorization header
// against it authenticates, is no credential, or is an error; never a panic, and a user only
// for a token the file holds.
func FuzzTokenFile(f *testing.F) {
	f.Add("tok,alice,1,\"a,b\"\n# c\ntok2,bob,2\n", "Bearer tok")
	f.Add("tok,alice,1\n", "bearer  tok")
	f.Add("\"unterminated,x,y\n", "Bearer")
	f.Add(",,,\n", "Basic Zm9v")
	f.Fuzz(func(t *testing.T, file, header string) {
		tf, err := ParseTokenFile(strings.NewReader(file))
		if err != nil {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", header)
		u, ok, err := NewBearer(nil, tf).AuthenticateRequest(req)
		if !ok {
			return
		}
		if err != nil || u == nil {
			t.Fatalf("ok with err=%v user=%v", err, u)
		}
		// The token as the header carries it: "Bearer", one space, up to the next space.
		parts := strings.SplitN(strings.TrimSpace(req.Header.Get("Authorization")), " ", 3)
		if held, found := tf.tokens[parts[1]]; !found || held.Name != u.Name {
			t.Fatalf("authenticated %q as %v, which the file does not hold", header, u)
		}
	})
}
