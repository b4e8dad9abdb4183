package authn

import (
	"context"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apichain/apichain/pkg/user"
)

// TokenFile is kube's static token file: CSV lines "token,user,uid[,\"group1,group2\"]".
type TokenFile struct {
	tokens map[string]*user.User
}

// LoadTokenFile reads path.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTokenFile(f)
}

// ParseTokenFile parses the CSV content.
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	tf := &TokenFile{tokens: map[string]*user.User{}}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return tf, nil
		}
		if err != nil {
			// A *csv.ParseError names its own line.
			return nil, fmt.Errorf("token file: %w", err)
		}
		// The file's line, not the record's number: comments and blank lines count too.
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("token file line %d: need at least token,user,uid", line)
		}
		if rec[0] == "" {
			return nil, fmt.Errorf("token file line %d: empty token", line)
		}
		u := &user.User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tf.tokens[rec[0]] = u
	}
}

// AuthenticateToken finds the token's user; an unknown token is not the file's.
func (tf *TokenFile) AuthenticateToken(_ context.Context, token string) (*Response, bool, error) {
	for t, u := range tf.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			cp := *u
			cp.Groups = append([]string(nil), u.Groups...)
			return &Response{User: &cp}, true, nil
		}
	}
	return nil, false, nil
}
