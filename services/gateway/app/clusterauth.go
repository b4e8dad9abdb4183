package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"time"

	resourcev1 "github.com/apichain/apichain/gen/apichain/resource/v1"
	"github.com/apichain/apichain/pkg/routing"
	"github.com/apichain/apichain/pkg/rpcstatus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// authenticationInfoName is the ConfigMap in kube-system where aggregated API servers read
// how to authenticate the requests the aggregator forwards, and its clients' certificates.
const authenticationInfoName = "extension-apiserver-authentication"

// authenticationInfo is the ConfigMap's data, kube's keys and encodings: the client CA, and
// the requestheader CA and settings (lists as JSON).
func (g *Gateway) authenticationInfo() (map[string]string, error) {
	data := map[string]string{}
	clientCA, err := os.ReadFile(g.servingOptions().ClientCAFile)
	if err != nil {
		return nil, err
	}
	data["client-ca-file"] = string(clientCA)
	rh := g.opts.RequestHeader
	if rh.ClientCAFile == "" {
		return data, nil
	}
	ca, err := os.ReadFile(rh.ClientCAFile)
	if err != nil {
		return nil, err
	}
	data["requestheader-client-ca-file"] = string(ca)
	for key, list := range map[string][]string{"requestheader-username-headers": rh.UsernameHeaders, "requestheader-group-headers": rh.GroupHeaders,
		"requestheader-extra-headers-prefix": rh.ExtraHeaderPrefixes, "requestheader-allowed-names": rh.AllowedNames} {
		b, _ := json.Marshal(list)
		data[key] = string(b)
	}
	if len(rh.UIDHeaders) > 0 {
		b, _ := json.Marshal(rh.UIDHeaders)
		data["requestheader-uid-headers"] = string(b)
	}
	return data, nil
}

// publishAuthenticationInfo keeps kube-system/extension-apiserver-authentication as kube's
// cluster-authentication-trust controller does: written through the chain, retried every
// second until it is, then checked every minute.
func (g *Gateway) publishAuthenticationInfo(ctx context.Context, objects *routing.Client) {
	wait := time.Second
	for {
		err := g.publishAuthenticationInfoOnce(ctx, objects)
		if err == nil {
			wait = time.Minute
		} else if ctx.Err() == nil {
			g.Log.Debug("publishing the authentication info", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (g *Gateway) publishAuthenticationInfoOnce(ctx context.Context, objects *routing.Client) error {
	data, err := g.authenticationInfo()
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: authenticationInfoName, Namespace: metav1.NamespaceSystem}, Data: data}
	ref := &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: metav1.NamespaceSystem, Name: authenticationInfoName}
	enc := &resourcev1.Encoding{Accept: "application/json"}
	got, err := objects.Get(ctx, &resourcev1.GetRequest{Ref: ref, Encoding: enc})
	if apierrors.IsNotFound(kubeError(err)) {
		body, err := json.Marshal(cm)
		if err != nil {
			return err
		}
		collection := &resourcev1.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: metav1.NamespaceSystem}
		_, err = objects.Create(ctx, &resourcev1.CreateRequest{Ref: collection, Encoding: enc, Body: &resourcev1.Body{ContentType: "application/json", Data: body}})
		if apierrors.IsAlreadyExists(kubeError(err)) {
			return nil // another gateway made it: the next pass compares
		}
		return err
	}
	if err != nil {
		return err
	}
	current := &corev1.ConfigMap{}
	if err := json.Unmarshal(got.GetBody().GetData(), current); err != nil {
		return fmt.Errorf("%s: %w", authenticationInfoName, err)
	}
	if maps.Equal(current.Data, data) {
		return nil
	}
	cm.ResourceVersion = current.ResourceVersion
	body, err := json.Marshal(cm)
	if err != nil {
		return err
	}
	_, err = objects.Update(ctx, &resourcev1.UpdateRequest{Ref: ref, Encoding: enc, Body: &resourcev1.Body{ContentType: "application/json", Data: body}})
	return err
}

// kubeError is a chain error as the kube error it carries.
func kubeError(err error) error {
	if err == nil {
		return nil
	}
	if st := rpcstatus.ToKube(err); st != nil {
		return &apierrors.StatusError{ErrStatus: *st}
	}
	return err
}
