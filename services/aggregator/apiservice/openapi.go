package apiservice

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/openapi"
	"github.com/apichain/apichain/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// FetchDocument reads a JSON document from a remote APIService's server; with an etag, a
// server that still has it answers no data (and no error).
type FetchDocument func(ctx context.Context, a *apiregistration.APIService, path, etag string) ([]byte, string, error)

// remoteSpec is what was read last of one remote APIService's OpenAPI.
type remoteSpec struct {
	v3URL  string // the document's URL in its server's /openapi/v3 index (with its hash)
	v3     []byte
	v2     []byte
	v2ETag string
	v2Hash string // v2's, so the same document served for several APIServices is merged once
}

// RunRemoteOpenAPI keeps the OpenAPI documents of the remote APIServices, as kube's aggregator
// does: of each, its server's v3 document of the APIService's group/version (listed in the
// merged /openapi/v3 index) and its server's v2 document (merged into /openapi/v2), read again
// on every change to APIServices and every resync (unchanged ones are not downloaded again:
// the v3 index names each document's hash, and v2 is asked with its ETag). An APIService
// that is not available, or whose server does not answer, keeps what was read last until it
// is deleted. set gets the documents whenever they change; v2 documents come in kube's order
// of APIService priority, the same document once.
func RunRemoteOpenAPI(ctx context.Context, c *registry.Client, fetch FetchDocument,
	set func(v3 map[schema.GroupVersion][]byte, v2 [][]byte) error, log *slog.Logger, resync time.Duration) {
	r, _ := c.Lookup(apiregistration.SchemeGroupVersion.WithResource("apiservices"))
	specs := map[string]*remoteSpec{}
	var lastKey string
	registry.Reconcile(ctx, c, r, resync, func(ctx context.Context) error {
		list, err := c.ListShared(ctx, r, "", "") // read only
		if err != nil {
			return err
		}
		var remote []*apiregistration.APIService
		for _, o := range list {
			if a := o.(*apiregistration.APIService); a.Spec.Service != nil {
				remote = append(remote, a)
			}
		}
		slices.SortFunc(remote, byPriority)
		present := map[string]bool{}
		for _, a := range remote {
			present[a.Name] = true
			s := specs[a.Name]
			if s == nil {
				s = &remoteSpec{}
				specs[a.Name] = s
			}
			if cond := a.Status.AvailableCondition(); cond == nil || cond.Status != apiregistration.ConditionTrue {
				continue
			}
			if err := s.refresh(ctx, a, fetch); err != nil && ctx.Err() == nil {
				log.Warn("OpenAPI of an APIService", "apiservice", a.Name, "err", err)
			}
		}
		for name := range specs {
			if !present[name] {
				delete(specs, name)
			}
		}
		v3 := map[schema.GroupVersion][]byte{}
		var v2 [][]byte
		var key strings.Builder
		seen := map[string]bool{}
		for _, a := range remote {
			s := specs[a.Name]
			if s.v3 != nil {
				v3[schema.GroupVersion{Group: a.Spec.Group, Version: a.Spec.Version}] = s.v3
				key.WriteString(a.Name + "=" + s.v3URL + ";")
			}
			if s.v2 != nil && !seen[s.v2Hash] {
				seen[s.v2Hash] = true
				v2 = append(v2, s.v2)
				key.WriteString(s.v2Hash + ";")
			}
		}
		if key.String() == lastKey {
			return nil
		}
		if err := set(v3, v2); err != nil {
			return err
		}
		lastKey = key.String()
		return nil
	})
}

// refresh reads again what changed of a's documents.
func (s *remoteSpec) refresh(ctx context.Context, a *apiregistration.APIService, fetch FetchDocument) error {
	var errs []error
	index, _, err := fetch(ctx, a, "/openapi/v3", "")
	switch {
	case apierrors.IsNotFound(err): // a server without v3 (kube converts its v2; apichain serves it in v2 only)
		s.v3URL, s.v3 = "", nil
	case err != nil:
		errs = append(errs, err)
	default:
		var idx struct {
			Paths map[string]struct {
				ServerRelativeURL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(index, &idx); err != nil {
			errs = append(errs, err)
			break
		}
		url := idx.Paths[strings.TrimPrefix(openapi.V3DocumentPath(schema.GroupVersion{Group: a.Spec.Group, Version: a.Spec.Version}), "/openapi/v3/")].ServerRelativeURL
		switch {
		case url == "":
			s.v3URL, s.v3 = "", nil
		case url != s.v3URL:
			doc, _, err := fetch(ctx, a, url, "")
			if err == nil && !json.Valid(doc) {
				err = errors.New(url + ": not JSON")
			}
			if err != nil {
				errs = append(errs, err)
				break
			}
			s.v3URL, s.v3 = url, doc
		}
	}
	doc, etag, err := fetch(ctx, a, "/openapi/v2", s.v2ETag)
	switch {
	case apierrors.IsNotFound(err):
		s.v2, s.v2ETag, s.v2Hash = nil, "", ""
	case err != nil:
		errs = append(errs, err)
	case doc == nil: // not modified
	default:
		if err := json.Unmarshal(doc, &spec.Swagger{}); err != nil {
			errs = append(errs, err)
			break
		}
		s.v2, s.v2ETag, s.v2Hash = doc, etag, openapi.Hash(doc)
	}
	return errors.Join(errs...)
}

// byPriority is kube's order of APIServices: by group priority (highest first), then by
// version priority, then by name.
func byPriority(a, b *apiregistration.APIService) int {
	if a.Spec.GroupPriorityMinimum != b.Spec.GroupPriorityMinimum {
		return int(b.Spec.GroupPriorityMinimum - a.Spec.GroupPriorityMinimum)
	}
	if a.Spec.VersionPriority != b.Spec.VersionPriority {
		return int(b.Spec.VersionPriority - a.Spec.VersionPriority)
	}
	return strings.Compare(a.Name, b.Name)
}
