package e2e

import "testing"

// The built-in API suite: kubectl cases on the built-in kinds beyond the core ones (defaults
// read back, columns, validation with kube's field paths and messages, immutable fields), run
// in order; every expectation was checked against kube-apiserver 1.37.2 (APICHAIN_SUITE_KUBE
// runs them there too). It grows with the kinds core serves.
func TestBuiltinSuite(t *testing.T) {
	runSuiteOnBoth(t, builtinSuiteCases(), 20)
}

func builtinSuiteCases() []suiteCase {
	apply := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: content, want: want}
	}
	invalid := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"create", "-f", "{file}"}, file: content, fail: true, want: want}
	}
	return []suiteCase{
		// apiregistration.k8s.io APIServices: one per local group/version, kube's priorities.
		{name: "the built-in APIServices", who: "admin", kubectl: []string{"get", "apiservices", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels} {.status.conditions[0].reason}{"\n"}{end}`},
			want: builtinAPIServices},
		{name: "apiservice columns", who: "admin", kubectl: []string{"get", "apiservice", "v1.apps", "v2.autoscaling"},
			want: "re:(?m)^NAME\\s+SERVICE\\s+AVAILABLE\\s+AGE\nv1.apps\\s+Local\\s+True\\s+\\S+\nv2.autoscaling\\s+Local\\s+True\\s+\\S+$"},
		apply("a CRD with three versions", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.apis.example.com}
spec:
  group: apis.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v2alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
`, "customresourcedefinition.apiextensions.k8s.io/gadgets.apis.example.com created"),
		{name: "its served versions get APIServices", who: "admin", eventually: true, kubectl: []string{"get", "apiservices", "-o",
			`jsonpath={range .items[?(@.spec.group=="apis.example.com")]}{.metadata.name} {.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels} {.status.conditions[0].message}{"\n"}{end}`},
			want: "v1.apis.example.com 1000 100 {\"kube-aggregator.kubernetes.io/automanaged\":\"true\"} Local APIServices are always available\n" +
				"v1beta1.apis.example.com 1000 100 {\"kube-aggregator.kubernetes.io/automanaged\":\"true\"} Local APIServices are always available"},
		{name: "a CRD's deleted APIService comes back", who: "admin", kubectl: []string{"delete", "apiservice", "v1beta1.apis.example.com"},
			want: `apiservice.apiregistration.k8s.io "v1beta1.apis.example.com" deleted`},
		{name: "it is back", who: "admin", eventually: true, kubectl: []string{"get", "apiservice", "v1beta1.apis.example.com", "-o", "jsonpath={.spec.groupPriorityMinimum} {.status.conditions[0].status}"},
			want: "1000 True"},
		{name: "delete the CRD", who: "admin", kubectl: []string{"delete", "crd", "gadgets.apis.example.com"},
			want: `customresourcedefinition.apiextensions.k8s.io "gadgets.apis.example.com" deleted`},
		{name: "its APIServices go", who: "admin", eventually: true, kubectl: []string{"get", "apiservices", "-o",
			`jsonpath={range .items[?(@.spec.group=="apis.example.com")]}{.metadata.name}{end}`}, want: "re:^$"},
		invalid("apiservice name and priorities", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.wrong.example.com}\nspec: {group: right.example.com, version: v1, groupPriorityMinimum: 0, versionPriority: 1001, caBundle: Zm9v}\n",
			`The APIService "v1.wrong.example.com" is invalid: 
* metadata.name: Invalid value: "v1.wrong.example.com": must be `+"`"+`spec.version+"."+spec.group`+"`"+`: "v1.right.example.com"
* spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000
* spec.versionPriority: Invalid value: 1001: must be positive and less than 1000
* spec.caBundle: Invalid value: "3 bytes": local APIServices may not have a caBundle`),
		invalid("apiservice group and version", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: V1.}\nspec: {version: V1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, service: {namespace: \"\", name: x, port: 70000}}\n",
			`The APIService "V1." is invalid: 
* spec.group: Required value: only v1 may have an empty group and it better be legacy kube
* spec.version: Invalid value: "V1": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')
* spec.service.namespace: Required value
* spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive`),

		// node.k8s.io RuntimeClass.
		apply("runtime class", `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead: {podFixed: {cpu: 100m, memory: 64Mi}}
scheduling: {nodeSelector: {sandbox: "true"}, tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]}
`, "runtimeclass.node.k8s.io/gvisor created"),
		{name: "runtime class columns", who: "admin", kubectl: []string{"get", "runtimeclass"}, want: `re:(?m)^NAME\s+HANDLER\s+AGE\ngvisor\s+runsc\s+\S+$`},
		{name: "runtime class read back", who: "admin", kubectl: []string{"get", "runtimeclass", "gvisor", "-o", "jsonpath={.overhead.podFixed} {.scheduling.tolerations[0].operator} {.metadata.generation}"},
			want: `{"cpu":"100m","memory":"64Mi"} Exists `},
		{name: "re-apply changes nothing", who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead: {podFixed: {cpu: 100m, memory: 64Mi}}
scheduling: {nodeSelector: {sandbox: "true"}, tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]}
`, want: "runtimeclass.node.k8s.io/gvisor unchanged"},
		invalid("handler is a label", "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad1}\nhandler: Bad_Handler\n",
			`The RuntimeClass "bad1" is invalid: handler: Invalid value: "Bad_Handler": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`),
		invalid("handler is required", "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad2}\n", `The RuntimeClass "bad2" is invalid: handler: Required value`),
		{name: "handler is immutable", who: "admin", kubectl: []string{"patch", "runtimeclass", "gvisor", "--type=merge", "-p", `{"handler":"other"}`}, fail: true,
			want: `The RuntimeClass "gvisor" is invalid: handler: Invalid value: null: field is immutable`},

		// networking.k8s.io IngressClass.
		apply("default ingress class", `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
spec: {controller: k8s.io/ingress-nginx, parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb, scope: Namespace, namespace: default}}
`, "ingressclass.networking.k8s.io/nginx created"),
		apply("ingress class with cluster parameters", `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: other}
spec: {controller: k8s.io/x, parameters: {kind: K, name: "p"}}
`, "ingressclass.networking.k8s.io/other created"),
		{name: "ingress class columns", who: "admin", kubectl: []string{"get", "ingressclass"},
			want: `re:(?m)^NAME\s+CONTROLLER\s+PARAMETERS\s+AGE\nnginx \(default\)\s+k8s.io/ingress-nginx\s+IngressParameters.k8s.example.com/external-lb\s+\S+\nother\s+k8s.io/x\s+K/p\s+\S+$`},
		{name: "parameters scope defaults to Cluster", who: "admin", kubectl: []string{"get", "ingressclass", "other", "-o", "jsonpath={.spec.parameters} {.metadata.generation}"},
			want: `{"kind":"K","name":"p","scope":"Cluster"} 1`},
		invalid("controller is a domain-prefixed path", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad3}\nspec: {controller: nope}\n",
			`The IngressClass "bad3" is invalid: spec.controller: Invalid value: "nope": must be a domain-prefixed path (such as "acme.io/foo")`),
		invalid("controller is required", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad6}\nspec: {}\n",
			`The IngressClass "bad6" is invalid: spec.controller: Required value`),
		invalid("cluster parameters have no namespace", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad4}\nspec: {controller: k8s.io/x, parameters: {kind: K, name: \"p\", scope: Cluster, namespace: default}}\n",
			"The IngressClass \"bad4\" is invalid: spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"),
		invalid("namespace parameters need one", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad5}\nspec: {controller: k8s.io/x, parameters: {kind: K, name: \"p\", scope: Namespace}}\n",
			"The IngressClass \"bad5\" is invalid: spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"),
		invalid("unknown scope", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad7}\nspec: {controller: k8s.io/x, parameters: {kind: K, name: \"p\", scope: Other}}\n",
			`The IngressClass "bad7" is invalid: spec.parameters.scope: Unsupported value: "Other": supported values: "Cluster", "Namespace"`),
		{name: "controller is immutable", who: "admin", kubectl: []string{"patch", "ingressclass", "nginx", "--type=merge", "-p", `{"spec":{"controller":"k8s.io/other"}}`}, fail: true,
			want: `The IngressClass "nginx" is invalid: spec.controller: Invalid value: "k8s.io/other": field is immutable`},
		{name: "server-side apply", who: "admin", kubectl: []string{"apply", "--server-side", "-f", "{file}"}, file: `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ssa}
spec: {controller: k8s.io/ssa}
`, want: "ingressclass.networking.k8s.io/ssa serverside-applied"},
		{name: "server-side apply owner", who: "admin", kubectl: []string{"get", "ingressclass", "ssa", "-o", "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}"},
			want: "kubectl Apply"},
		// storage.k8s.io StorageClass.
		apply("storage classes", `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: standard, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: kubernetes.io/no-provisioner
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ebs.csi.aws.com
parameters: {type: gp3}
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
mountOptions: [debug]
allowedTopologies: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [a, b]}]}]
`, "storageclass.storage.k8s.io/fast created"),
		{name: "storage class columns", who: "admin", kubectl: []string{"get", "storageclass"},
			want: `re:(?m)^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE\nfast\s+ebs.csi.aws.com\s+Retain\s+WaitForFirstConsumer\s+true\s+\S+\nstandard \(default\)\s+kubernetes.io/no-provisioner\s+Delete\s+Immediate\s+false\s+\S+$`},
		{name: "storage class defaults", who: "admin", kubectl: []string{"get", "sc", "standard", "-o", "jsonpath={.reclaimPolicy} {.volumeBindingMode} {.allowVolumeExpansion} {.metadata.generation}"},
			want: "Delete Immediate  "},
		invalid("provisioner is required", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: bad1}\n", `The StorageClass "bad1" is invalid: provisioner: Required value`),
		invalid("provisioner is a qualified name", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: bad2}\nprovisioner: \"not a name\"\n",
			`The StorageClass "bad2" is invalid: provisioner: Invalid value: "not a name": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`),
		invalid("policies are enumerations", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: bad3}\nprovisioner: x.io/y\nreclaimPolicy: Maybe\nvolumeBindingMode: Later\n",
			"* reclaimPolicy: Unsupported value: \"Maybe\": supported values: \"Delete\", \"Retain\"\n* volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\""),
		{name: "parameters are immutable", who: "admin", kubectl: []string{"patch", "sc", "fast", "--type=merge", "-p", `{"parameters":{"type":"io2"}}`}, fail: true,
			want: `The StorageClass "fast" is invalid: parameters: Invalid value: null: field is immutable`},
		{name: "reclaim policy is immutable", who: "admin", kubectl: []string{"patch", "sc", "fast", "--type=merge", "-p", `{"reclaimPolicy":"Delete"}`}, fail: true,
			want: `The StorageClass "fast" is invalid: reclaimPolicy: Invalid value: null: field is immutable`},
		{name: "expansion may change", who: "admin", kubectl: []string{"patch", "sc", "fast", "--type=merge", "-p", `{"allowVolumeExpansion":false}`},
			want: "storageclass.storage.k8s.io/fast patched"},

		// storage.k8s.io CSIDriver.
		apply("csi driver", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: ebs.csi.aws.com}\nspec: {}\n", "csidriver.storage.k8s.io/ebs.csi.aws.com created"),
		{name: "csi driver defaults", who: "admin", kubectl: []string{"get", "csidriver", "ebs.csi.aws.com", "-o", "jsonpath={.spec}"},
			want: `{"attachRequired":true,"fsGroupPolicy":"ReadWriteOnceWithFSType","podInfoOnMount":false,"preventPodSchedulingIfMissing":false,"requiresRepublish":false,"seLinuxMount":false,"storageCapacity":false,"volumeLifecycleModes":["Persistent"]}`},
		{name: "csi driver columns", who: "admin", kubectl: []string{"get", "csidriver"},
			want: `re:(?m)^NAME\s+ATTACHREQUIRED\s+PODINFOONMOUNT\s+STORAGECAPACITY\s+TOKENREQUESTS\s+REQUIRESREPUBLISH\s+MODES\s+AGE\nebs.csi.aws.com\s+true\s+false\s+false\s+<unset>\s+false\s+Persistent\s+\S+$`},
		{name: "attach required is immutable", who: "admin", kubectl: []string{"patch", "csidriver", "ebs.csi.aws.com", "--type=merge", "-p", `{"spec":{"attachRequired":false}}`}, fail: true,
			want: `The CSIDriver "ebs.csi.aws.com" is invalid: spec.attachedRequired: Invalid value: false: field is immutable`},
		invalid("token requests", "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: bad.csi.example.com}\nspec: {tokenRequests: [{audience: a, expirationSeconds: 60}, {audience: a}], volumeLifecycleModes: [Sometimes]}\n",
			"* spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes\n* spec.tokenRequests[1].audience: Duplicate value: \"a\"\n* spec.volumeLifecycleModes: Unsupported value: \"Sometimes\": supported values: \"Persistent\", \"Ephemeral\""),

		// storage.k8s.io VolumeAttributesClass and CSIStorageCapacity.
		apply("volume attributes class", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: gold}\ndriverName: ebs.csi.aws.com\nparameters: {iops: \"3000\"}\n",
			"volumeattributesclass.storage.k8s.io/gold created"),
		{name: "volume attributes class columns", who: "admin", kubectl: []string{"get", "volumeattributesclass"}, want: `re:(?m)^NAME\s+DRIVERNAME\s+AGE\ngold\s+ebs.csi.aws.com\s+\S+$`},
		{name: "parameters are forbidden to change", who: "admin", kubectl: []string{"patch", "volumeattributesclass", "gold", "--type=merge", "-p", `{"parameters":{"iops":"1"}}`}, fail: true,
			want: `The VolumeAttributesClass "gold" is invalid: parameters: Forbidden: updates to parameters are forbidden.`},
		invalid("driver and parameters are required", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: bad}\n",
			"* driverName: Required value\n* parameters: Required value: must contain at least one key/value pair"),
		invalid("driver name is checked lower-cased", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttributesClass\nmetadata: {name: bad2}\ndriverName: \"Not Valid\"\nparameters: {\"\": x}\n",
			"* driverName: Invalid value: \"not valid\": name part must consist of alphanumeric characters"),
		invalid("storage class name is checked lower-cased", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: bad4}\nprovisioner: \"Not Valid\"\n",
			`provisioner: Invalid value: "not valid": name part must consist of alphanumeric characters`),
		apply("storage capacity", "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap1, namespace: default}\nstorageClassName: fast\ncapacity: 10Gi\nmaximumVolumeSize: 5Gi\nnodeTopology: {matchLabels: {zone: a}}\n",
			"csistoragecapacity.storage.k8s.io/cap1 created"),
		{name: "storage capacity columns", who: "admin", kubectl: []string{"get", "csistoragecapacities", "-n", "default"}, want: `re:(?m)^NAME\s+CREATED AT\ncap1\s+\d{4}-`},
		invalid("storage capacity validation", "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: bad3, namespace: default}\ncapacity: -1Gi\n",
			"* storageClassName: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"),
		{name: "storage class name is immutable", who: "admin", kubectl: []string{"patch", "csistoragecapacity", "cap1", "-n", "default", "--type=merge", "-p", `{"storageClassName":"other"}`}, fail: true,
			want: `The CSIStorageCapacity "cap1" is invalid: storageClassName: Invalid value: "other": field is immutable`},

		// discovery.k8s.io EndpointSlice.
		apply("endpoint slice", `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: default, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{port: 80}, {name: https, port: 443, protocol: TCP, appProtocol: https}]
endpoints:
- {addresses: [10.1.0.1], conditions: {ready: true}, nodeName: node-1, zone: a}
- {addresses: [10.1.0.2], conditions: {ready: false}}
- {addresses: [10.1.0.3]}
- {addresses: [10.1.0.4]}
`, "endpointslice.discovery.k8s.io/web-abc created"),
		{name: "endpoint slice columns", who: "admin", kubectl: []string{"get", "endpointslices", "web-abc", "-n", "default"},
			want: `re:(?m)^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE\nweb-abc\s+IPv4\s+80,443\s+10.1.0.1,10.1.0.2,10.1.0.3 \+ 1 more...\s+\S+$`},
		{name: "endpoint port defaults", who: "admin", kubectl: []string{"get", "endpointslice", "web-abc", "-n", "default", "-o", "jsonpath={.ports[0]}"},
			want: `{"name":"","port":80,"protocol":"TCP"}`},
		invalid("endpoint addresses", `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: bad, namespace: default}
addressType: IPv4
ports: [{name: a, port: 1}, {name: a, port: 2, protocol: HTTP}]
endpoints: [{addresses: [127.0.0.1, "::1", nope]}, {addresses: []}]
`, "* ports[1].name: Duplicate value: \"a\"\n* ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"\n* endpoints[0].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)\n* endpoints[0].addresses: Invalid value: \"::1\": must be an IPv4 address"),
		invalid("address type", "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: bad2, namespace: default}\naddressType: IPv5\n",
			`The EndpointSlice "bad2" is invalid: addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"`),
		{name: "address type is immutable", who: "admin", kubectl: []string{"patch", "endpointslice", "web-abc", "-n", "default", "--type=merge", "-p", `{"addressType":"IPv6","endpoints":[]}`}, fail: true,
			want: `The EndpointSlice "web-abc" is invalid: addressType: Invalid value: null: field is immutable`},

		// apps ControllerRevision.
		apply("controller revision", `apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: web-1, namespace: default, ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: 0b8d6a1c-2d3f-4a5b-9c7d-1e2f3a4b5c6d, controller: true}]}
revision: 1
data: {spec: {template: {metadata: {labels: {app: web}}}}}
`, "controllerrevision.apps/web-1 created"),
		{name: "controller revision columns", who: "admin", kubectl: []string{"get", "controllerrevisions"},
			want: `re:(?m)^NAME\s+CONTROLLER\s+REVISION\s+AGE\nweb-1\s+statefulset.apps/web\s+1\s+\S+$`},
		invalid("revision data is mandatory", "apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: bad, namespace: default}\nrevision: -1\n",
			"The ControllerRevision \"bad\" is invalid: \n* revision: Invalid value: -1: must be greater than or equal to 0\n* data: Required value: data is mandatory"),
		{name: "revision data is immutable", who: "admin", kubectl: []string{"patch", "controllerrevision", "web-1", "--type=merge", "-p", `{"data":{"x":1}}`}, fail: true,
			want: `The ControllerRevision "web-1" is invalid: data: Invalid value: {"spec":{"template":{"metadata":{"labels":{"app":"web"}}}},"x":1}: field is immutable`},
		{name: "revision number may change", who: "admin", kubectl: []string{"patch", "controllerrevision", "web-1", "--type=merge", "-p", `{"revision":2}`},
			want: "controllerrevision.apps/web-1 patched"},

		// Secrets of a well-known type carry its keys; a service's name is a DNS label (kube 1.37
		// takes RFC 1123 labels, which may start with a digit).
		invalid("a docker config that is not JSON", "apiVersion: v1\nkind: Secret\nmetadata: {name: regcred, namespace: default}\n"+
			"type: kubernetes.io/dockerconfigjson\ndata: {.dockerconfigjson: bm90IGpzb24=}\n",
			`The Secret "regcred" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'o' in literal null (expecting 'u')`),
		invalid("a TLS secret without its keys", "apiVersion: v1\nkind: Secret\nmetadata: {name: tls, namespace: default}\ntype: kubernetes.io/tls\n",
			"The Secret \"tls\" is invalid: \n* data[tls.crt]: Required value\n* data[tls.key]: Required value"),
		invalid("a service named as a subdomain", "apiVersion: v1\nkind: Service\nmetadata: {name: my.svc, namespace: default}\nspec: {ports: [{port: 80}]}\n",
			`The Service "my.svc" is invalid: metadata.name: Invalid value: "my.svc": must not contain dots`),

		{name: "discovery", who: "admin", kubectl: []string{"api-resources", "--api-group=node.k8s.io"},
			want: `re:(?m)^runtimeclasses\s+node.k8s.io/v1\s+false\s+RuntimeClass$`},
		{name: "discovery of ingress classes", who: "admin", kubectl: []string{"api-resources", "--api-group=networking.k8s.io", "-o", "name"},
			want: "ingressclasses.networking.k8s.io"},
	}
}

// builtinAPIServices are a bare kube-apiserver 1.37's own APIServices as the suite prints
// them; apichain serves the same group/versions.
const builtinAPIServices = `v1. 18000 1 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.admissionregistration.k8s.io 16700 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.apiextensions.k8s.io 16700 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.apps 17800 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.authentication.k8s.io 17700 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.authorization.k8s.io 17600 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.autoscaling 17500 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.batch 17400 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.certificates.k8s.io 17300 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.coordination.k8s.io 16500 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.discovery.k8s.io 16200 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.events.k8s.io 17750 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.flowcontrol.apiserver.k8s.io 16100 21 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.networking.k8s.io 17200 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.node.k8s.io 16300 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.policy 17100 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.rbac.authorization.k8s.io 17000 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.resource.k8s.io 16200 21 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.scheduling.k8s.io 16600 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.storage.k8s.io 16800 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v1.storagemigration.k8s.io 15800 15 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local
v2.autoscaling 17500 30 {"kube-aggregator.kubernetes.io/automanaged":"onstart"} Local`
