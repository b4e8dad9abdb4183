package certs

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
)

// EnsureNkey keeps the NATS user nkey seed in path, creating it if missing, and returns its
// public key (what the NATS server's configuration names).
func EnsureNkey(path string) (string, error) {
	seed, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return "", fmt.Errorf("certs: nkey: %w", err)
		}
		if seed, err = kp.Seed(); err != nil {
			return "", fmt.Errorf("certs: nkey: %w", err)
		}
		if err := writeFileAtomic(path, append(seed, '\n'), keyFileMode); err != nil {
			return "", fmt.Errorf("certs: nkey: %w", err)
		}
	} else if err != nil {
		return "", fmt.Errorf("certs: nkey: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return "", fmt.Errorf("certs: nkey %s: %w", path, err)
	}
	return kp.PublicKey()
}
