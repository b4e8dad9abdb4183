package encryption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2"
	kmstypes "k8s.io/apiserver/pkg/storage/value/encrypt/envelope/kmsv2/v2"
	"k8s.io/apiserver/pkg/storage/value/encrypt/envelope/metrics"
	kmsservice "k8s.io/kms/pkg/service"
)

// KMS v2's timings, kube's (encryptionconfig): the plugin's status is polled every minute
// while healthy and every 10 s while not; a data encryption key (here a seed, KDF on, as kube
// has it locked) is used for writes for at most 3 minutes after the last healthy status with
// the same key ID, so a key rotated in the KMS is in use for every write within 3 minutes plus
// the plugin's own delay. Reads never expire.
const (
	kmsPositiveInterval = time.Minute
	kmsNegativeInterval = 10 * time.Second
	kmsWriteDEKMaxTTL   = 3 * time.Minute
	kmsNegativeTTL      = 3 * time.Second
	kmsPositiveTTL      = 20 * time.Second
)

// kmsProvider is a KMS v2 plugin: its gRPC service, the state its envelope transformer
// encrypts with, and the probe keeping that state current.
type kmsProvider struct {
	name    string
	service kmsservice.Service
	state   atomic.Pointer[kmsv2.State]

	mu      sync.Mutex
	version string
	last    error
	lastAt  time.Time
	lastTTL time.Duration
}

func (c *Config) kmsProvider(ctx context.Context, config *apiserver.KMSConfiguration) (value.PrefixTransformer, error) {
	if config.APIVersion != "v2" {
		return value.PrefixTransformer{}, fmt.Errorf("could not configure KMS plugin %q, unsupported KMS API version %q (KMS v1 is deprecated in kube and not supported here)", config.Name, config.APIVersion)
	}
	svc, err := kmsv2.NewGRPCService(ctx, config.Endpoint, config.Name, config.Timeout.Duration)
	if err != nil {
		return value.PrefixTransformer{}, fmt.Errorf("could not configure KMSv2-Plugin's probe %q, error: %w", config.Name, err)
	}
	p := &kmsProvider{name: config.Name, service: svc}
	p.state.Store(&kmsv2.State{KMSProviderName: config.Name})
	c.kms = append(c.kms, p)
	p.prime(ctx)
	return value.PrefixTransformer{
		Transformer: kmsv2.NewEnvelopeTransformer(svc, config.Name, p.currentState, ""),
		Prefix:      []byte(kmsV2Prefix + config.Name + ":"),
	}, nil
}

// prime probes the plugin once inline (a healthy plugin at start means the first write
// works), then keeps probing in the background: every minute while it is healthy, every
// 10 s while not.
func (p *kmsProvider) prime(ctx context.Context) {
	err := p.check(ctx)
	go func() {
		for {
			wait := kmsPositiveInterval
			if err != nil {
				wait = kmsNegativeInterval
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			err = p.check(ctx)
		}
	}()
}

// check asks the plugin's status (remembered for 20 s when healthy, 3 s when not) and
// rotates the data key when the plugin's key ID changed.
func (p *kmsProvider) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.lastAt) < p.lastTTL {
		return p.last
	}
	err := p.status(ctx)
	p.last, p.lastAt, p.lastTTL = err, time.Now(), kmsPositiveTTL
	if err != nil {
		p.lastTTL = kmsNegativeTTL
	}
	return err
}

func (p *kmsProvider) status(ctx context.Context) error {
	resp, err := p.service.Status(ctx)
	if err != nil {
		return fmt.Errorf("failed to perform status section of the healthz check for KMS Provider %s, error: %w", p.name, err)
	}
	var errs []error
	if resp.Healthz != "ok" {
		errs = append(errs, fmt.Errorf("got unexpected healthz status: %s", resp.Healthz))
	}
	if resp.Version != kmsv2.KMSAPIVersionv2 && resp.Version != kmsv2.KMSAPIVersionv2beta1 {
		errs = append(errs, fmt.Errorf("expected KMSv2 API version %s, got %s", kmsv2.KMSAPIVersionv2, resp.Version))
	} else {
		if p.version == "" {
			p.version = resp.Version
		}
		if p.version != resp.Version {
			errs = append(errs, fmt.Errorf("KMSv2 API version should not change after the initial status response version %s, got %s", p.version, resp.Version))
		}
	}
	if code, err := kmsv2.ValidateKeyID(resp.KeyID); err != nil {
		metrics.RecordInvalidKeyIDFromStatus(p.name, string(code))
		errs = append(errs, fmt.Errorf("got invalid KMSv2 KeyID hash %q: %w", kmsv2.GetHashIfNotEmpty(resp.KeyID), err))
	} else {
		metrics.RecordKeyIDFromStatus(p.name, resp.KeyID, "")
		errs = append(errs, p.rotate(ctx, resp.KeyID))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kmsv2 Provider %s is not healthy, error: %w", p.name, err)
	}
	return nil
}

// rotate keeps the current data key while the plugin's key ID is the one it was made with
// (moving its expiry on), and makes a new one, encrypted by the plugin, when it changed. On
// failure the current key stays usable for writes until it expires.
func (p *kmsProvider) rotate(ctx context.Context, keyID string) error {
	state, errState := p.currentState()
	expires := time.Now().Add(kmsWriteDEKMaxTTL)
	if errState == nil && state.EncryptedObjectKeyID == keyID &&
		state.EncryptedObjectEncryptedDEKSourceType == kmstypes.EncryptedDEKSourceType_HKDF_SHA256_XNONCE_AES_GCM_SEED {
		state.ExpirationTimestamp = expires
		p.state.Store(&state)
		return nil
	}
	uid := string(uuid.NewUUID())
	transformer, enc, cacheKey, err := kmsv2.GenerateTransformer(ctx, uid, p.service, true)
	if err == nil && enc != nil && enc.KeyID == keyID {
		p.state.Store(&kmsv2.State{
			Transformer:                           transformer,
			EncryptedObjectKeyID:                  enc.KeyID,
			EncryptedObjectEncryptedDEKSource:     enc.EncryptedDEKSource,
			EncryptedObjectAnnotations:            enc.Annotations,
			EncryptedObjectEncryptedDEKSourceType: enc.EncryptedDEKSourceType,
			UID:                                   uid,
			ExpirationTimestamp:                   expires,
			CacheKey:                              cacheKey,
			KMSProviderName:                       p.name,
		})
		if _, err = p.currentState(); err == nil {
			return nil
		}
	}
	encKeyID := ""
	if enc != nil {
		encKeyID = enc.KeyID
	}
	return fmt.Errorf("failed to rotate DEK uid=%q, errState=%v, errGen=%v, statusKeyIDHash=%q, encryptKeyIDHash=%q, stateKeyIDHash=%q",
		uid, errState, err, kmsv2.GetHashIfNotEmpty(keyID), kmsv2.GetHashIfNotEmpty(encKeyID), kmsv2.GetHashIfNotEmpty(state.EncryptedObjectKeyID))
}

// currentState is the state the envelope transformer encrypts with; an error when there is
// none yet (the plugin never answered) or it is malformed.
func (p *kmsProvider) currentState() (kmsv2.State, error) {
	state := *p.state.Load()
	if state.Transformer == nil {
		return kmsv2.State{}, errors.New("got unexpected nil transformer")
	}
	enc := kmstypes.EncryptedObject{
		KeyID: state.EncryptedObjectKeyID, EncryptedDEKSource: state.EncryptedObjectEncryptedDEKSource,
		Annotations: state.EncryptedObjectAnnotations, EncryptedDEKSourceType: state.EncryptedObjectEncryptedDEKSourceType,
		EncryptedData: []byte{0},
	}
	if err := kmsv2.ValidateEncryptedObject(&enc); err != nil {
		return kmsv2.State{}, fmt.Errorf("got invalid EncryptedObject: %w", err)
	}
	if state.ExpirationTimestamp.IsZero() {
		return kmsv2.State{}, errors.New("got unexpected zero expirationTimestamp")
	}
	if len(state.CacheKey) == 0 {
		return kmsv2.State{}, errors.New("got unexpected empty cacheKey")
	}
	return state, nil
}

// Check probes every KMS plugin of the configuration: kube's "kms-providers" health check.
func (c *Config) Check(ctx context.Context) error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, p := range c.kms {
		errs = append(errs, p.check(ctx))
	}
	return errors.Join(errs...)
}
