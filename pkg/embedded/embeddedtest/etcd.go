// Package embeddedtest starts an embedded etcd for a test binary, as net/http/httptest starts
// servers: in a temporary directory that goes away with it. One per test package (TestMain),
// since starting etcd is the slow part.
package embeddedtest

import (
	"context"
	"os"

	"github.com/apichain/apichain/pkg/embedded"
)

// Etcd starts etcd in a new temporary directory; stop stops it and removes the directory.
func Etcd() (endpoints []string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "apichain-etcd-")
	if err != nil {
		return nil, nil, err
	}
	e, err := embedded.StartEtcd(context.Background(), dir, 0, 0)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return e.Endpoints(), func() {
		e.Stop()
		_ = os.RemoveAll(dir)
	}, nil
}
