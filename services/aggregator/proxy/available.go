package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apichain/apichain/pkg/apiregistration"
	"github.com/apichain/apichain/pkg/user"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// discoveryAttempts are the concurrent discovery requests of one check (kube's five: one
// answer is enough).
const discoveryAttempts = 5

// Check is kube's availability check of a remote APIService, with its reasons and messages:
// its Service exists and has the port; with --enable-aggregator-routing, ready endpoints on
// that port; and its server answers the group/version's discovery within 5 s, asked as
// system:kube-aggregator.
func (s *Server) Check(ctx context.Context, a *apiregistration.APIService) apiregistration.APIServiceCondition {
	ref := a.Spec.Service
	where := fmt.Sprintf("service/%s in %q", ref.Name, ref.Namespace)
	e := s.endpoints
	o, err := e.client.Get(ctx, e.services, ref.Namespace, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		return available(apiregistration.ConditionFalse, "ServiceNotFound", where+" is not present")
	case err != nil:
		return available(apiregistration.ConditionUnknown, "ServiceAccessError", fmt.Sprintf("%s cannot be checked due to: %v", where, err))
	}
	svc := o.(*corev1.Service)
	if svc.Spec.Type == corev1.ServiceTypeClusterIP || svc.Spec.Type == "" {
		port := ptr.Deref(ref.Port, 443)
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
		if i < 0 {
			return available(apiregistration.ConditionFalse, "ServicePortError", fmt.Sprintf("%s is not listening on port %d", where, port))
		}
		if s.routed {
			list, err := e.client.ListCached(ctx, e.slicesOfSvc, ref.Namespace)
			if err != nil {
				return available(apiregistration.ConditionUnknown, "EndpointsAccessError", fmt.Sprintf("%s cannot be checked due to: %v", where, err))
			}
			slicesOf := ofService(list, ref.Name)
			if len(slicesOf) == 0 {
				return available(apiregistration.ConditionFalse, "EndpointsNotFound", "cannot find endpointslices for "+where)
			}
			if !hasReadyEndpoint(slicesOf, svc.Spec.Ports[i].Name) {
				return available(apiregistration.ConditionFalse, "MissingEndpoints",
					fmt.Sprintf("endpointslices for %s have no addresses with port name %q", where, svc.Spec.Ports[i].Name))
			}
		}
	}
	if err := s.discoveryCheck(ctx, a); err != nil {
		return available(apiregistration.ConditionFalse, "FailedDiscoveryCheck", err.Error())
	}
	return available(apiregistration.ConditionTrue, "Passed", "all checks passed")
}

func available(status apiregistration.ConditionStatus, reason, message string) apiregistration.APIServiceCondition {
	return apiregistration.APIServiceCondition{Type: apiregistration.Available, Status: status, Reason: reason, Message: message}
}

func hasReadyEndpoint(list []*discoveryv1.EndpointSlice, portName string) bool {
	for _, s := range list {
		if !slices.ContainsFunc(s.Ports, func(p discoveryv1.EndpointPort) bool { return ptr.Deref(p.Name, "") == portName }) {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				return true
			}
		}
	}
	return false
}

// discoveryCheck asks the server for the group/version's discovery, five times at once; one
// success is enough.
func (s *Server) discoveryCheck(ctx context.Context, a *apiregistration.APIService) error {
	transport, err := s.transport(a)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	path := "/apis/" + a.Spec.Group + "/" + a.Spec.Version
	if a.Spec.Group == "" {
		path = "/api/" + a.Spec.Version
	}
	results := make(chan error, discoveryAttempts)
	for range discoveryAttempts {
		go func() {
			host, err := s.resolve.Resolve(ctx, a.Spec.Service)
			if err != nil {
				results <- err
				return
			}
			url := "https://" + host + path
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				results <- err
				return
			}
			setFrontProxyHeaders(req.Header, &user.User{Name: "system:kube-aggregator", Groups: []string{user.SystemPrivilegedGroup}})
			resp, err := client.Do(req)
			if err != nil {
				results <- fmt.Errorf("failing or missing response from %s: %w", url, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
				results <- fmt.Errorf("failing or missing response from %s: bad status from %s: %d", url, url, resp.StatusCode)
				return
			}
			results <- nil
		}()
	}
	var last error
	for range discoveryAttempts {
		if last = <-results; last == nil {
			return nil
		}
	}
	return last
}

// unavailable is the fast answer for an APIService that is not available: a 503 naming it and
// why, rather than a request that waits on a dead server.
func unavailable(a *apiregistration.APIService) error {
	msg := "service unavailable: APIService " + a.Name + " is not available"
	if c := a.Status.AvailableCondition(); c != nil && c.Reason != "" {
		msg += " (" + c.Reason + ": " + strings.TrimSpace(c.Message) + ")"
	}
	return apierrors.NewServiceUnavailable(msg)
}

// Resources reads the group/version's discovery document from a's server (as
// system:kube-aggregator, within 5 s): what the aggregator lists of it in /apis.
func (s *Server) Resources(ctx context.Context, a *apiregistration.APIService) (*metav1.APIResourceList, error) {
	path := "/apis/" + a.Spec.Group + "/" + a.Spec.Version
	if a.Spec.Group == "" {
		path = "/api/" + a.Spec.Version
	}
	data, _, err := s.Document(ctx, a, path, "")
	if err != nil {
		return nil, err
	}
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(data, list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return list, nil
}

// Document reads a JSON document (discovery, OpenAPI) from a's server, as the aggregator reads
// them: as system:kube-aggregator, within 5 s, at most 32 MiB. With an etag, a server that has
// that document still answers no data and no error; the ETag of what it answered is returned.
// A status other than 200 or 304 is an error naming it (apierrors' for 404).
func (s *Server) Document(ctx context.Context, a *apiregistration.APIService, path, etag string) ([]byte, string, error) {
	transport, err := s.transport(a)
	if err != nil {
		return nil, "", err
	}
	host, err := s.resolve.Resolve(ctx, a.Spec.Service)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+path, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	setFrontProxyHeaders(req.Header, &user.User{Name: "system:kube-aggregator", Groups: []string{user.SystemPrivilegedGroup}})
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotModified:
		return nil, etag, nil
	case http.StatusNotFound:
		return nil, "", apierrors.NewNotFound(schema.GroupResource{}, path)
	default:
		return nil, "", fmt.Errorf("%s: status %d", path, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return data, resp.Header.Get("ETag"), nil
}
