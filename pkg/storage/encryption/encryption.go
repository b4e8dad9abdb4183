// Package encryption is encryption at rest as kube-apiserver has it: an
// apiserver.config.k8s.io/v1 EncryptionConfiguration (--encryption-provider-config) names, per
// resource, the providers that may read its values and the one that writes them (the first).
// The ciphers are kube's own leaf code (k8s.io/apiserver/pkg/storage/value: identity, aescbc,
// aesgcm, secretbox, KMS v2's envelope), so values are byte-compatible with kube's
// (k8s:enc:<provider>:v1:<key>: prefixes); reading the file, choosing per resource, reloading
// and the KMS v2 key state are apichain's, after kube's encryptionconfig package.
package encryption

import (
	"context"
	"crypto/aes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
)

// kube's value prefixes (encryptionconfig's).
const (
	aesCBCPrefix    = "k8s:enc:aescbc:v1:"
	aesGCMPrefix    = "k8s:enc:aesgcm:v1:"
	secretboxPrefix = "k8s:enc:secretbox:v1:"
	kmsV2Prefix     = "k8s:enc:kms:v2:"
)

var codecs = sync.OnceValue(func() serializer.CodecFactory {
	s := runtime.NewScheme()
	install.Install(s)
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
})

var anyGroupAnyResource = schema.GroupResource{Group: "*", Resource: "*"}

// Config is a loaded configuration: a transformer for every resource it names, and the KMS
// plugins it talks to.
type Config struct {
	// Hash is the file's sha256 ("sha256:<hex>"), which says whether it changed (kube keeps a
	// hash, not the file, so no key stays in memory outside its transformer).
	Hash      string
	resources map[schema.GroupResource]value.Transformer
	wrapped   sync.Map // schema.GroupResource -> value.Transformer: For's answers
	kms       []*kmsProvider
	cancel    context.CancelFunc
}

// Load reads, decodes and validates an EncryptionConfiguration file and builds its
// transformers; KMS plugins are dialled and probed under ctx until Close. reload is whether
// the file will be reloaded (kube validates KMS v1 differently then).
func Load(ctx context.Context, file string, reload bool) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("error reading encryption provider configuration file %q: %w", file, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("encryption provider configuration file %q is empty", file)
	}
	obj, gvk, err := codecs().UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration file %q: %w", file, err)
	}
	config, ok := obj.(*apiserver.EncryptionConfiguration)
	if !ok {
		return nil, fmt.Errorf("got unexpected config type: %v", gvk)
	}
	if err := validation.ValidateEncryptionConfiguration(config, reload).ToAggregate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Config{Hash: Hash(data), resources: map[schema.GroupResource]value.Transformer{}, cancel: cancel}
	if err := c.build(ctx, config); err != nil {
		cancel()
		return nil, err
	}
	return c, nil
}

// Hash is kube's hash of a configuration file's bytes.
func Hash(data []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(data)) }

// Close stops the configuration's KMS probes and connections.
func (c *Config) Close() {
	if c != nil {
		c.cancel()
	}
}

// build makes a prefix transformer per resource: the providers of every rule naming it, in
// order. A rule masked by an earlier group or global wildcard is an error, as in kube.
func (c *Config) build(ctx context.Context, config *apiserver.EncryptionConfiguration) error {
	prefixes := map[schema.GroupResource][]value.PrefixTransformer{}
	for _, rule := range config.Resources {
		var providers []value.PrefixTransformer
		for _, p := range rule.Providers {
			t, err := c.provider(ctx, p)
			if err != nil {
				return err
			}
			providers = append(providers, t)
		}
		for _, r := range rule.Resources {
			gr := schema.ParseGroupResource(r)
			for _, mask := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, anyGroupAnyResource} {
				if _, masked := prefixes[mask]; masked {
					return fmt.Errorf("resource %q is masked by earlier rule %q", yamlName(gr), yamlName(mask))
				}
			}
			prefixes[gr] = append(prefixes[gr], providers...)
		}
	}
	for gr, list := range prefixes {
		c.resources[gr] = value.NewPrefixTransformers(errors.New("no matching prefix found"), list...)
	}
	return nil
}

func (c *Config) provider(ctx context.Context, p apiserver.ProviderConfiguration) (value.PrefixTransformer, error) {
	switch {
	case p.AESGCM != nil:
		return keyed(p.AESGCM.Keys, aesGCMPrefix, "AES", func(key []byte) (value.Transformer, error) {
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewGCMTransformer(block)
		})
	case p.AESCBC != nil:
		return keyed(p.AESCBC.Keys, aesCBCPrefix, "AES", func(key []byte) (value.Transformer, error) {
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewCBCTransformer(block), nil
		})
	case p.Secretbox != nil:
		return keyed(p.Secretbox.Keys, secretboxPrefix, "Secretbox", func(key []byte) (value.Transformer, error) {
			if len(key) != 32 {
				return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %v", len(key))
			}
			return secretbox.NewSecretboxTransformer([32]byte(key)), nil
		})
	case p.KMS != nil:
		return c.kmsProvider(ctx, p.KMS)
	case p.Identity != nil:
		return value.PrefixTransformer{Transformer: identity.NewEncryptCheckTransformer(), Prefix: []byte{}}, nil
	}
	return value.PrefixTransformer{}, errors.New("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity")
}

// keyed is a provider with named keys: it writes with the first and reads with any, each
// under "<prefix><key name>:".
func keyed(keys []apiserver.Key, prefix, kind string, newTransformer func([]byte) (value.Transformer, error)) (value.PrefixTransformer, error) {
	var list []value.PrefixTransformer
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		t, err := newTransformer(secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("error while creating transformer for named key %s: %w", k.Name, err)
		}
		list = append(list, value.PrefixTransformer{Transformer: t, Prefix: []byte(k.Name + ":")})
	}
	return value.PrefixTransformer{
		Transformer: value.NewPrefixTransformers(fmt.Errorf("no matching key was found for the provided %s transformer", kind), list...),
		Prefix:      []byte(prefix),
	}, nil
}

// For is the transformer of a resource's values: its own rule's, else its group's
// ("*.<group>"), else every resource's ("*.*"); nil when no rule names it, so its values are
// kept as they are at no cost (kube puts an identity transformer there, which refuses a value
// that is encrypted: such a value fails to decode here instead).
func (c *Config) For(gr schema.GroupResource) value.Transformer {
	if c == nil {
		return nil
	}
	if t, ok := c.wrapped.Load(gr); ok {
		return t.(value.Transformer)
	}
	var t value.Transformer
	for _, k := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, anyGroupAnyResource} {
		if r := c.resources[k]; r != nil {
			t = &resourceTransformer{info: &request.RequestInfo{IsResourceRequest: true, APIGroup: gr.Group, Resource: gr.Resource}, t: r}
			break
		}
	}
	if t == nil {
		return nil
	}
	actual, _ := c.wrapped.LoadOrStore(gr, t)
	return actual.(value.Transformer)
}

// resourceTransformer gives kube's transformer the resource its metrics are labelled with.
type resourceTransformer struct {
	info *request.RequestInfo
	t    value.Transformer
}

func (r *resourceTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return r.t.TransformFromStorage(request.WithRequestInfo(ctx, r.info), data, dataCtx)
}

func (r *resourceTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return r.t.TransformToStorage(request.WithRequestInfo(ctx, r.info), data, dataCtx)
}

func yamlName(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
}
