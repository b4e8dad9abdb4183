package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// kube-apiserver's storage layout: where each kind is kept in etcd and how it is encoded, so
// that either server reads the other's data (kube 1.37's storage factory and registries, and
// its test/integration/etcd data that pins them).

// specialPrefixes are the prefixes kube compiles in (its SpecialDefaultResourcePrefixes);
// every other built-in resource is kept under its name, and custom resources, CRDs and
// APIServices under <group>/<resource> (Resource.StoragePrefix).
var specialPrefixes = map[schema.GroupResource]string{
	{Resource: "replicationcontrollers"}:                "controllers",
	{Resource: "endpoints"}:                             "services/endpoints",
	{Resource: "nodes"}:                                 "minions",
	{Resource: "services"}:                              "services/specs",
	{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
}

// keyRoot is the start of every key; the store adds the etcd prefix ("/registry") before it.
const keyRoot = "/"

// StoredGroupResource is the resource whose keys keep r's objects: its own, or the one it is
// stored as (events.k8s.io's Events are core's, as kube's cohabiting resources).
func (r *Resource) StoredGroupResource() schema.GroupResource {
	gr := r.GroupResource()
	if r.Convert != nil {
		gr.Group = r.Convert.Stored.Group
	}
	return gr
}

// storagePrefix is r's key prefix under the etcd prefix, without slashes ("configmaps",
// "services/specs", "example.com/widgets").
func (r *Resource) storagePrefix() string {
	if r.StoragePrefix != "" {
		return r.StoragePrefix
	}
	gr := r.StoredGroupResource()
	if p, ok := specialPrefixes[gr]; ok {
		return p
	}
	return gr.Resource
}

// key is the etcd key of an object (under the etcd prefix): /<prefix>/[<namespace>/]<name>.
func key(r *Resource, namespace, name string) string {
	return prefix(r, namespace) + name
}

// prefix is the key prefix of a resource's objects, in one namespace when given.
func prefix(r *Resource, namespace string) string {
	k := resourcePrefix(r)
	if r.Namespaced && namespace != "" {
		k += namespace + "/"
	}
	return k
}

// resourcePrefix is the key prefix of all of a resource's objects.
func resourcePrefix(r *Resource) string { return keyRoot + r.storagePrefix() + "/" }

// resourceOf finds the stored resource key (or a key prefix) belongs to among prefixes (a
// resource prefix has one or two segments, none of them a prefix of another's).
func resourceOf(prefixes map[string]schema.GroupResource, key string) (schema.GroupResource, bool) {
	if !strings.HasPrefix(key, keyRoot) {
		return schema.GroupResource{}, false
	}
	end := len(keyRoot)
	for range 2 {
		i := strings.IndexByte(key[end:], '/')
		if i < 0 {
			if gr, ok := prefixes[key+"/"]; ok && end < len(key) { // the prefix without its slash
				return gr, true
			}
			return schema.GroupResource{}, false
		}
		end += i + 1
		if gr, ok := prefixes[key[:end]]; ok {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}

// protobufPrefix starts every protobuf-encoded stored object: kube's envelope (a
// runtime.Unknown naming the object's apiVersion and kind, its raw bytes the object).
var protobufPrefix = []byte{'k', '8', 's', 0}

type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// marshalStored encodes a stored object of kind gvk in media (kube's encoding: protobuf in
// kube's envelope for kinds that have a protobuf form, YAML when asked, JSON followed by a
// newline otherwise).
func marshalStored(obj runtime.Object, gvk schema.GroupVersionKind, media string) ([]byte, error) {
	if m, ok := obj.(protoMessage); ok && media == MediaProtobuf {
		raw, err := m.Marshal()
		if err != nil {
			return nil, err
		}
		u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, Raw: raw}
		out := make([]byte, len(protobufPrefix)+u.Size())
		copy(out, protobufPrefix)
		if _, err := u.MarshalToSizedBuffer(out[len(protobufPrefix):]); err != nil {
			return nil, err
		}
		return out, nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if media == MediaYAML {
		return yaml.JSONToYAML(b)
	}
	return append(b, '\n'), nil
}

// storedJSON is a stored object's JSON: itself, or its YAML (--storage-media-type
// application/yaml) turned into JSON. Protobuf is read before.
func storedJSON(data []byte) ([]byte, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return data, nil
	}
	return yaml.YAMLToJSON(data)
}

// unmarshalProtobuf decodes a protobuf-encoded stored object into a new object of r's kind in
// the version the envelope names: r's own (conv false) or the one r is stored as (conv true).
func unmarshalProtobuf(r *Resource, data []byte) (obj runtime.Object, conv bool, err error) {
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufPrefix):]); err != nil {
		return nil, false, err
	}
	switch {
	case u.APIVersion == r.GroupVersion.String():
		obj = r.New()
	case r.Convert != nil && u.APIVersion == r.Convert.Stored.String():
		obj, conv = r.Convert.NewStored(), true
	default:
		return nil, false, fmt.Errorf("stored as %s %s, a version %s is not read from", u.APIVersion, u.Kind, r.GroupVersionResource())
	}
	m, ok := obj.(protoMessage)
	if !ok {
		return nil, false, fmt.Errorf("%s %s has no protobuf form", u.APIVersion, u.Kind)
	}
	return obj, conv, m.Unmarshal(u.Raw)
}

// markedForDeletion reports whether a stored object has a deletion timestamp, without decoding
// it (a controller's watch asks it of every change): in protobuf, kube's envelope's raw
// object's metadata (field 1 of every kind) holds deletionTimestamp (field 9 of ObjectMeta);
// in JSON the key is there once it is set.
func markedForDeletion(data []byte) bool {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return bytes.Contains(data, []byte("deletionTimestamp"))
	}
	raw, ok := protoField(data[len(protobufPrefix):], 2) // runtime.Unknown's raw
	if !ok {
		return false
	}
	meta, ok := protoField(raw, 1)
	if !ok {
		return false
	}
	_, ok = protoField(meta, 9)
	return ok
}

// protoField is the first length-delimited field num of a protobuf message.
func protoField(msg []byte, num protowire.Number) ([]byte, bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg)
			return v, l >= 0
		}
		l = protowire.ConsumeFieldValue(n, typ, msg)
		if l < 0 {
			return nil, false
		}
		msg = msg[l:]
	}
	return nil, false
}
