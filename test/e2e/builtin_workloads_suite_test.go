package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A CSR for "jane" in "devs" (an EC key made for this test; nothing trusts it).
const janeCSR = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIYU1JR0FBZ0VBTUI0eERUQUxCZ05WQkFNTUJHcGhibVV4RFRBTEJnTlZCQW9NQkdSbGRuTXdXVEFUQmdjcQpoa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVJ5QXBOT0VKbm1BZlVjbThrMyswbmZtMGlWZEZCQlJYYUs5YmRICk1WblJ6QVkvemViNHEwTFE1NnJwTXh0MUtxVWRWUktkQis3d2dybkY1d3ZKN09iUm9BQXdDZ1lJS29aSXpqMEUKQXdJRFNRQXdSZ0loQU9sMzFRMWNhcXNkYnIvSDBndWJSS2tHRURCa2ZrTGtnek9ZdXdxblZpM3BBaUVBbURNcgpSWGFiaXdkR1BqTFZ4WTZ5U05zamtVS05rbVQ4TjA2V3FWbVlQSTg9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo="

// webBundle is a Helm-chart-like application: config, workload, service, ingress, budget,
// autoscaler, network policy, storage and a nightly job, as one file.
const webBundle = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: shop}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, namespace: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: http, containerPort: 80}]
        envFrom: [{configMapRef: {name: web-config}}]
        readinessProbe: {httpGet: {path: /healthz, port: http}}
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
        volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: web-data}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  ingressClassName: nginx
  tls: [{hosts: [shop.example.com], secretName: web-tls}]
  rules:
  - host: shop.example.com
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}]}]
  egress: [{to: [{namespaceSelector: {}}], ports: [{port: 53, protocol: UDP}]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: web-data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, storageClassName: standard}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cleanup, namespace: shop}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: cleanup, image: busybox:1.36, command: [sh, -c, "echo done"]}]
`

// builtinWorkloadCases cover the workload, networking, policy, autoscaling, storage,
// certificates and resource kinds and the objects a bare kube-apiserver makes itself.
func builtinWorkloadCases() []suiteCase {
	apply := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: content, want: want}
	}
	invalid := func(name, content, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: []string{"create", "-f", "{file}"}, file: content, fail: true, want: want}
	}
	get := func(name string, args []string, want string) suiteCase {
		return suiteCase{name: name, who: "admin", kubectl: append([]string{"get"}, args...), want: want}
	}
	return []suiteCase{
		{name: "namespace for the bundle", who: "admin", kubectl: []string{"create", "namespace", "shop"}, want: "namespace/shop created"},
		apply("kube's default service account (kube-controller-manager's, or apichain's core)", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: shop}\n", "serviceaccount/default"),
		apply("bundle applies", webBundle, "cronjob.batch/cleanup created"),
		{name: "bundle re-applied changes nothing", who: "admin", kubectl: []string{"apply", "-f", "{file}"}, file: webBundle,
			want: "re:(?s)deployment.apps/web unchanged.*horizontalpodautoscaler.autoscaling/web unchanged.*cronjob.batch/cleanup unchanged"},
		{name: "bundle server-side applied", who: "admin", kubectl: []string{"apply", "--server-side", "--field-manager=helm", "--force-conflicts", "-f", "{file}"},
			file: webBundle, want: "re:(?s)deployment.apps/web serverside-applied.*networkpolicy.networking.k8s.io/web serverside-applied"},
		get("deployment defaults read back", []string{"deploy", "web", "-n", "shop", "-o",
			"jsonpath={.spec.strategy.rollingUpdate.maxSurge} {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} {.spec.template.spec.containers[0].imagePullPolicy} {.spec.template.spec.containers[0].terminationMessagePath} {.spec.template.spec.containers[0].readinessProbe.periodSeconds} {.spec.template.spec.schedulerName} {.spec.template.spec.volumes[0].persistentVolumeClaim}"},
			`25% 10 600 IfNotPresent /dev/termination-log 10 default-scheduler {"claimName":"web-data"}`),
		get("deployment wide columns", []string{"deploy", "web", "-n", "shop", "-o", "wide"},
			`re:(?m)^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR\nweb\s+0/2\s+0\s+0\s+\S+\s+web\s+nginx:1.27\s+app=web$`),
		get("secret stringData became data", []string{"secret", "web-secret", "-n", "shop", "-o", "jsonpath={.data.password} {.type}"}, "aHVudGVyMg== Opaque"),
		get("service got a cluster IP", []string{"svc", "web", "-n", "shop", "-o", "wide"},
			`re:(?m)^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR\nweb\s+ClusterIP\s+10\.0\.0\.\d+\s+<none>\s+80/TCP\s+\S+\s+app=web$`),
		get("service address fields", []string{"svc", "web", "-n", "shop", "-o", "jsonpath={.spec.ipFamilyPolicy} {.spec.ipFamilies} {.spec.internalTrafficPolicy} {.spec.ports[0].targetPort}"},
			`SingleStack ["IPv4"] Cluster http`),
		get("the cluster IP is an IPAddress", []string{"ipaddresses", "-o", "custom-columns=PARENT:.spec.parentRef.name,NS:.spec.parentRef.namespace,FAMILY:.metadata.labels.ipaddress\\.kubernetes\\.io/ip-family"},
			`re:(?m)^web\s+shop\s+IPv4$`),
		get("ingress columns", []string{"ingress", "-n", "shop"},
			`re:(?m)^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nweb\s+nginx\s+shop.example.com\s+80, 443\s+\S+$`),
		get("pdb columns", []string{"pdb", "-n", "shop"},
			`re:(?m)^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\nweb\s+1\s+N/A\s+0\s+\S+$`),
		get("hpa columns", []string{"hpa", "-n", "shop"},
			`re:(?m)^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\nweb\s+Deployment/web\s+cpu: <unknown>/70%\s+2\s+10\s+0\s+\S+$`),
		{name: "the autoscaler in autoscaling/v1", who: "admin", kubectl: []string{"get", "--raw", "/apis/autoscaling/v1/namespaces/shop/horizontalpodautoscalers/web"},
			want: `"targetCPUUtilizationPercentage":70`},
		apply("a v1 autoscaler", "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: legacy, namespace: shop}\n"+
			"spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, maxReplicas: 4}\n", "horizontalpodautoscaler.autoscaling/legacy created"),
		{name: "read as v2 it targets 80% CPU", who: "admin", kubectl: []string{"get", "--raw", "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/legacy"},
			want: `"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}}]`},
		get("network policy defaults", []string{"netpol", "web", "-n", "shop", "-o", "jsonpath={.spec.policyTypes} {.spec.ingress[0].ports[0].protocol}"},
			`["Ingress","Egress"] TCP`),
		get("network policy columns", []string{"netpol", "-n", "shop"}, `re:(?m)^NAME\s+POD-SELECTOR\s+AGE\nweb\s+app=web\s+\S+$`),
		get("pvc columns", []string{"pvc", "-n", "shop"},
			`re:(?m)^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE\nweb-data\s+Pending\s+standard\s+<unset>\s+\S+$`),
		get("pvc defaults", []string{"pvc", "web-data", "-n", "shop", "-o", "jsonpath={.spec.volumeMode} {.status.phase} {.metadata.finalizers}"},
			`Filesystem Pending ["kubernetes.io/pvc-protection"]`),
		get("cronjob columns", []string{"cronjob", "-n", "shop"},
			`re:(?m)^NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE\ncleanup\s+0 3 \* \* \*\s+<none>\s+False\s+0\s+<none>\s+\S+$`),
		get("cronjob defaults", []string{"cronjob", "cleanup", "-n", "shop", "-o",
			"jsonpath={.spec.concurrencyPolicy} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit} {.spec.suspend} {.spec.jobTemplate.spec.template.spec.terminationGracePeriodSeconds}"},
			"Allow 3 1 false 30"),
		{name: "job from the cronjob", who: "admin", kubectl: []string{"create", "job", "cleanup-now", "-n", "shop", "--from=cronjob/cleanup"}, want: "job.batch/cleanup-now created"},
		get("job selector is generated", []string{"job", "cleanup-now", "-n", "shop", "-o",
			"jsonpath={.spec.selector.matchLabels} {.spec.template.metadata.labels.batch\\.kubernetes\\.io/job-name} {.spec.completionMode} {.spec.backoffLimit} {.spec.podReplacementPolicy}"},
			`re:^\{"batch.kubernetes.io/controller-uid":"[0-9a-f-]{36}"\} cleanup-now NonIndexed 6 TerminatingOrFailed$`),
		get("job columns", []string{"jobs", "-n", "shop"}, `re:(?m)^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\ncleanup-now\s+Running\s+0/1\s+\S+$`),
		{name: "a job's template is immutable", who: "admin", kubectl: []string{"patch", "job", "cleanup-now", "-n", "shop", "--type=json",
			"-p", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"busybox:1.37"}]`}, fail: true,
			want: `The Job "cleanup-now" is invalid: spec.template: Invalid value:`},
		{name: "scale the deployment", who: "admin", kubectl: []string{"scale", "deploy", "web", "-n", "shop", "--replicas=3"}, want: "deployment.apps/web scaled"},
		get("scaled", []string{"deploy", "web", "-n", "shop", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"}, "3 3"),
		get("the scale's manager owns the replicas", []string{"deploy", "web", "-n", "shop", "-o", `jsonpath={range .metadata.managedFields[?(@.subresource=="scale")]}{.manager}:{.operation}:{.apiVersion}:{.fieldsV1} {end}`}, "kubectl:Update:apps/v1:{\"f:spec\":{\"f:replicas\":{}}} "),
		{name: "server-side apply to the scale", who: "admin", curl: []string{"PATCH", "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=autoscaler&force=true",
			"-H", "Content-Type: application/apply-patch+yaml", "-d", `{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":4}}`},
			code: 200, want: `re:(?s)"kind": "Scale",.*"spec": \{\s+"replicas": 4\s+\},\s+"status": \{\s+"replicas": \d+,\s+"selector": "app=web"`},
		get("applied through the scale", []string{"deploy", "web", "-n", "shop", "-o", `jsonpath={range .metadata.managedFields[?(@.subresource=="scale")]}{.manager}:{.operation}:{.apiVersion}:{.fieldsV1} {end}`}, "autoscaler:Apply:apps/v1:{\"f:spec\":{\"f:replicas\":{}}} "),
		{name: "the scale's replicas owned", who: "admin", curl: []string{"PATCH", "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=other",
			"-H", "Content-Type: application/apply-patch+yaml", "-d", `{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":2}}`},
			code: 409, want: `Apply failed with 1 conflict: conflict with \"autoscaler\" with subresource \"scale\": .spec.replicas`},
		{name: "apply to the scale refuses another kind", who: "admin", curl: []string{"PATCH", "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=other",
			"-H", "Content-Type: application/apply-patch+yaml", "-d", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2}}`},
			code: 400, want: `"message": "invalid object type: apps/v1, Kind=Deployment"`},
		{name: "scale back", who: "admin", kubectl: []string{"scale", "deploy", "web", "-n", "shop", "--replicas=3"}, want: "deployment.apps/web scaled"},
		{name: "metadata through the status", who: "admin", kubectl: []string{"patch", "deploy", "web", "-n", "shop", "--subresource=status", "--type=merge",
			"-p", `{"metadata":{"annotations":{"via":"status"},"labels":{"via":"status"}}}`}, want: "deployment.apps/web patched"},
		get("a deployment's status write keeps its labels", []string{"deploy", "web", "-n", "shop", "-o", "jsonpath=annotation={.metadata.annotations.via} label={.metadata.labels.via}"},
			"annotation=status label="),
		{name: "a deployment's selector is immutable", who: "admin", kubectl: []string{"patch", "deploy", "web", "-n", "shop", "--type=merge",
			"-p", `{"spec":{"selector":{"matchLabels":{"app":"other"}},"template":{"metadata":{"labels":{"app":"other"}}}}}`}, fail: true,
			want: `The Deployment "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"other"}}: field is immutable`},

		// Validation with kube's field paths and messages.
		invalid("pod spec errors", `apiVersion: v1
kind: Pod
metadata: {name: bad1, namespace: shop}
spec:
  restartPolicy: Sometimes
  volumes: [{name: v, emptyDir: {}}, {name: v, emptyDir: {}}, {name: Bad_Name, configMap: {name: x}, secret: {secretName: "yy"}}]
  containers:
  - name: c
    image: ""
    ports: [{containerPort: 0}, {containerPort: 70000, protocol: XTP}]
    env: [{name: "1bad=x"}]
    volumeMounts: [{name: missing, mountPath: /x}, {name: v, mountPath: ""}]
    resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}
    imagePullPolicy: Sometimes
  - {name: c, image: nginx}
  - {name: Bad_Name, image: nginx}
`, "* spec.volumes[1].name: Duplicate value: \"v\"\n* spec.volumes[2].configMap: Forbidden: may not specify more than 1 volume type\n"+
			"* spec.volumes[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n"+
			"* spec.containers[0].image: Required value\n* spec.containers[0].ports[0].containerPort: Required value\n"+
			"* spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive\n"+
			"* spec.containers[0].ports[1].protocol: Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"\n"+
			"* spec.containers[0].env[0].name: Invalid value: \"1bad=x\": a valid environment variable name must consist only of printable ASCII characters other than '='\n"+
			"* spec.containers[0].volumeMounts[0].name: Not found: \"missing\"\n* spec.containers[0].volumeMounts[1].mountPath: Required value\n"+
			"* spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"\n"+
			"* spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1\n"+
			"* spec.containers[1].name: Duplicate value: \"c\"\n"),
		invalid("privileged containers need --allow-privileged", "apiVersion: v1\nkind: Pod\nmetadata: {name: priv, namespace: shop}\nspec: {containers: [{name: c, image: x, securityContext: {privileged: true}}]}\n",
			`The Pod "priv" is invalid: spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy`),
		invalid("pod needs containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad2, namespace: shop}\nspec: {}\n", `The Pod "bad2" is invalid: spec.containers: Required value`),
		invalid("deployment selector must match", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad3, namespace: shop}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: yy}}\n    spec: {containers: [{name: c}]}\n",
			"* spec.template.metadata.labels: Invalid value: {\"app\":\"yy\"}: `selector` does not match template `labels`\n* spec.template.spec.containers[0].image: Required value"),
		invalid("deployment needs a selector", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad4, namespace: shop}\nspec:\n  template: {spec: {containers: [{name: c, image: x}]}}\n",
			"* spec.selector: Required value\n* spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"),
		invalid("job restart policy", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad5, namespace: shop}\nspec: {template: {spec: {containers: [{name: c, image: busybox}]}}}\n",
			`The Job "bad5" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`),
		invalid("cronjob schedule", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: bad6, namespace: shop}\nspec: {schedule: \"61 * * * *\", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}}\n",
			`The CronJob "bad6" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`),
		invalid("cronjob time zone", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: bad7, namespace: shop}\nspec: {schedule: \"@daily\", timeZone: Mars/Olympus, jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}}\n",
			`The CronJob "bad7" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`),
		invalid("ingress path type", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: bad8, namespace: shop}\nspec: {rules: [{host: 1.2.3.4, http: {paths: [{path: x, backend: {service: {name: s}}}]}}]}\n",
			"* spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address\n* spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"),
		invalid("ingress backend port", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: bad9, namespace: shop}\nspec: {defaultBackend: {service: {name: s}}}\n",
			`The Ingress "bad9" is invalid: spec.defaultBackend: Required value: port name or number is required`),
		invalid("pdb min and max", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad10, namespace: shop}\nspec: {minAvailable: 1, maxUnavailable: \"120%\"}\n",
			`* spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%`),
		invalid("hpa target reference", "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: bad11, namespace: shop}\nspec: {scaleTargetRef: {kind: Deployment, name: x}, maxReplicas: 3}\n",
			`The HorizontalPodAutoscaler "bad11" is invalid: spec.scaleTargetRef.apiVersion: Invalid value: "": apiVersion must specify API group`),
		invalid("pvc needs modes and storage", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bad12, namespace: shop}\nspec: {}\n",
			"* spec.accessModes: Required value: at least 1 access mode is required\n* spec.resources[storage]: Required value"),
		invalid("pv needs a source", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: bad13}\nspec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /x}, nfs: {server: a, path: /b}, persistentVolumeReclaimPolicy: Keep}\n",
			"* spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"\n* spec.nfs: Forbidden: may not specify more than 1 volume type"),
		invalid("network policy port", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: bad14, namespace: shop}\nspec: {podSelector: {}, ingress: [{ports: [{port: 80, endPort: 70}], from: [{}]}]}\n",
			"* spec.ingress[0].ports[0].endPort: Invalid value: 70: must be greater than or equal to `port`\n* spec.ingress[0].from[0]: Required value: must specify a peer"),

		// Services: cluster IPs and node ports, allocated in etcd.
		apply("node port service", "apiVersion: v1\nkind: Service\nmetadata: {name: np, namespace: shop}\nspec: {type: NodePort, selector: {app: web}, ports: [{port: 80, nodePort: 30080}]}\n",
			"service/np created"),
		get("node port column", []string{"svc", "np", "-n", "shop"}, `re:(?m)^np\s+NodePort\s+10\.0\.0\.\d+\s+<none>\s+80:30080/TCP\s+\S+$`),
		invalid("node port taken", "apiVersion: v1\nkind: Service\nmetadata: {name: np2, namespace: shop}\nspec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}\n",
			`The Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`),
		invalid("node port out of range", "apiVersion: v1\nkind: Service\nmetadata: {name: np3, namespace: shop}\nspec: {type: NodePort, ports: [{port: 80, nodePort: 40000}]}\n",
			`The Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767`),
		apply("service on a chosen IP", "apiVersion: v1\nkind: Service\nmetadata: {name: fixed, namespace: shop}\nspec: {clusterIP: 10.0.0.200, ports: [{port: 80}]}\n", "service/fixed created"),
		invalid("the IP is taken", "apiVersion: v1\nkind: Service\nmetadata: {name: fixed2, namespace: shop}\nspec: {clusterIP: 10.0.0.200, ports: [{port: 80}]}\n",
			`The Service "fixed2" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.200"]: failed to allocate IP 10.0.0.200: provided IP is already allocated`),
		invalid("the IP is outside the range", "apiVersion: v1\nkind: Service\nmetadata: {name: fixed3, namespace: shop}\nspec: {clusterIP: 10.1.0.10, ports: [{port: 80}]}\n",
			`The Service "fixed3" is invalid: spec.clusterIPs: Invalid value: ["10.1.0.10"]: failed to allocate IP 10.1.0.10: the provided network does not match the current range`),
		invalid("dual stack on a single-stack cluster", "apiVersion: v1\nkind: Service\nmetadata: {name: ds, namespace: shop}\nspec: {ipFamilyPolicy: RequireDualStack, ports: [{port: 80}]}\n",
			`The Service "ds" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`),
		{name: "a cluster IP may not change", who: "admin", kubectl: []string{"patch", "svc", "fixed", "-n", "shop", "-p", `{"spec":{"clusterIP":"10.0.0.201"}}`}, fail: true,
			want: `The Service "fixed" is invalid: spec.clusterIPs[0]: Invalid value: ["10.0.0.201"]: may not change once set`},
		{name: "deleting a service frees its IP", who: "admin", kubectl: []string{"delete", "svc", "fixed", "-n", "shop"}, want: `service "fixed" deleted`},
		apply("so another may take it", "apiVersion: v1\nkind: Service\nmetadata: {name: fixed2, namespace: shop}\nspec: {clusterIP: 10.0.0.200, ports: [{port: 80}]}\n", "service/fixed2 created"),
		apply("headless service", "apiVersion: v1\nkind: Service\nmetadata: {name: headless, namespace: shop}\nspec: {clusterIP: None, selector: {app: web}, ports: [{port: 80}]}\n", "service/headless created"),
		get("headless families", []string{"svc", "headless", "-n", "shop", "-o", "jsonpath={.spec.clusterIPs} {.spec.ipFamilyPolicy} {.spec.ipFamilies}"},
			`["None"] SingleStack ["IPv4"]`),
		apply("external name service", "apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: shop}\nspec: {type: ExternalName, externalName: db.example.com}\n", "service/ext created"),
		get("external name columns", []string{"svc", "ext", "-n", "shop"}, `re:(?m)^ext\s+ExternalName\s+<none>\s+db.example.com\s+<none>\s+\S+$`),
		apply("load balancer service", "apiVersion: v1\nkind: Service\nmetadata: {name: lb, namespace: shop}\nspec: {type: LoadBalancer, ports: [{port: 443}]}\n", "service/lb created"),
		get("load balancer is pending", []string{"svc", "lb", "-n", "shop", "-o", "jsonpath={.spec.allocateLoadBalancerNodePorts} {.spec.externalTrafficPolicy}"}, "true Cluster"),
		get("load balancer columns", []string{"svc", "lb", "-n", "shop"}, `re:(?m)^lb\s+LoadBalancer\s+10\.0\.0\.\d+\s+<pending>\s+443:3\d{4}/TCP\s+\S+$`),

		// What kube-apiserver makes itself.
		get("the kubernetes service", []string{"svc", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].name} {.spec.ports[0].port} {.metadata.labels}"},
			`10.0.0.1 https 443 {"component":"apiserver","provider":"kubernetes"}`),
		// The gateways are the API servers: the endpoints list their advertised addresses, as
		// kube's lease reconciler lists its API servers' (recorded in
		// testdata/kube-1.37/kubernetes-endpoints.yaml; the reference kube-apiserver the suite
		// runs against listens on loopback, where kube needs --endpoint-reconciler-type=none).
		{name: "the kubernetes endpoint slice", who: "admin", apichainOnly: true, eventually: true,
			kubectl: []string{"get", "endpointslice", "kubernetes", "-n", "default", "-o",
				"jsonpath={.addressType} {.endpoints[*].addresses} {.endpoints[*].conditions} {.ports[*].name} {.ports[*].protocol} {.metadata.labels}"},
			want: `IPv4 ["` + suiteAdvertiseAddress + `"] {"ready":true} https TCP {"kubernetes.io/service-name":"kubernetes"}`},
		{name: "the kubernetes endpoints", who: "admin", apichainOnly: true, eventually: true,
			kubectl: []string{"get", "endpoints", "kubernetes", "-n", "default", "-o", "jsonpath={.subsets} {.metadata.labels}"},
			want:    `re:\[\{"addresses":\[\{"ip":"192\.0\.2\.10"\}\],"ports":\[\{"name":"https","port":\d+,"protocol":"TCP"\}\]\}\] \{"endpointslice.kubernetes.io/skip-mirror":"true"\}`},
		get("the default service CIDR", []string{"servicecidr", "kubernetes", "-o", "jsonpath={.spec.cidrs} {.status.conditions[0].type} {.status.conditions[0].status}"},
			`["10.0.0.0/24"] Ready True`),
		get("component statuses", []string{"componentstatuses"}, `re:(?m)^etcd-0\s+Healthy\s+ok\s*$`),
		get("system priority classes", []string{"priorityclasses"}, `re:(?m)^system-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority$`),
		{name: "namespaces have no deletecollection", who: "admin", curl: []string{"DELETE", "/api/v1/namespaces"}, code: 405,
			want: `"message": "the server does not allow this method on the requested resource"`},

		// Pods without a node: binding, the connecting subresources, eviction.
		apply("a pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: shop}\nspec: {containers: [{name: c, image: nginx}]}\n", "pod/p1 created"),
		get("pod defaults", []string{"pod", "p1", "-n", "shop", "-o", "jsonpath={.spec.enableServiceLinks} {.spec.priority} {.status.phase} {.status.qosClass} {.spec.tolerations[0].key}"},
			"true 0 Pending BestEffort node.kubernetes.io/not-ready"),
		{name: "a pod's image may change", who: "admin", kubectl: []string{"set", "image", "pod/p1", "-n", "shop", "c=nginx:1.27"}, want: "pod/p1 image updated"},
		{name: "its restart policy may not", who: "admin", kubectl: []string{"patch", "pod", "p1", "-n", "shop", "-p", `{"spec":{"restartPolicy":"Never"}}`}, fail: true,
			want: "The Pod \"p1\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n@@ "},
		{name: "logs of a pod that never ran", who: "admin", kubectl: []string{"logs", "p1", "-n", "shop"}, want: ""},
		{name: "exec needs a node", who: "admin", kubectl: []string{"exec", "p1", "-n", "shop", "--", "ls"}, fail: true,
			want: "Error from server (BadRequest): pod p1 does not have a host assigned"},
		{name: "proxy needs an address", who: "admin", kubectl: []string{"get", "--raw", "/api/v1/namespaces/shop/pods/p1/proxy/"}, fail: true,
			want: "Error from server (BadRequest): address not allowed"},
		{name: "bind the pod", who: "admin", kubectl: []string{"create", "--raw", "/api/v1/namespaces/shop/pods/p1/binding", "-f", "{file}"},
			file: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"name":"node-1"}}`, want: `"status":"Success"`},
		{name: "bound once", who: "admin", kubectl: []string{"create", "--raw", "/api/v1/namespaces/shop/pods/p1/binding", "-f", "{file}"},
			file: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"name":"node-2"}}`, fail: true,
			want: `Error from server (Conflict): Operation cannot be fulfilled on pods/binding "p1": pod p1 is already assigned to node "node-1"`},
		get("bound", []string{"pod", "p1", "-n", "shop", "-o", "jsonpath={.spec.nodeName} {.status.conditions[0].type} {.status.conditions[0].status}"}, "node-1 PodScheduled True"),
		get("pod wide columns", []string{"pod", "p1", "-n", "shop", "-o", "wide"},
			`re:(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\np1\s+0/1\s+Pending\s+0\s+\S+\s+<none>\s+node-1\s+<none>\s+<none>$`),
		{name: "logs of a pod on a node that does not exist", who: "admin", kubectl: []string{"logs", "p1", "-n", "shop"}, fail: true,
			want: `Error from server (NotFound): pods "node-1" not found`},
		// Graceful deletion: a pod on a node waits for its kubelet (here, none) for its grace
		// period, until a forced delete.
		{name: "delete a pod on a node", who: "admin", kubectl: []string{"delete", "pod", "p1", "-n", "shop", "--wait=false"}, want: `pod "p1" deleted`},
		get("it is terminating", []string{"pod", "p1", "-n", "shop", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds} {.metadata.generation} {.metadata.deletionTimestamp}"},
			`re:^30 3 \d{4}-\d\d-\d\dT`),
		get("terminating column", []string{"pod", "p1", "-n", "shop"}, `re:(?m)^p1\s+0/1\s+Terminating\s+0\s+\S+$`),
		{name: "a longer grace period changes nothing", who: "admin", kubectl: []string{"delete", "pod", "p1", "-n", "shop", "--wait=false", "--grace-period=60"},
			want: `pod "p1" deleted`},
		get("still 30", []string{"pod", "p1", "-n", "shop", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"}, "30"),
		{name: "force it", who: "admin", kubectl: []string{"delete", "pod", "p1", "-n", "shop", "--grace-period=0", "--force"},
			want: "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.\npod \"p1\" force deleted"},
		{name: "gone", who: "admin", kubectl: []string{"get", "pod", "p1", "-n", "shop"}, fail: true, want: `pods "p1" not found`},
		apply("an unscheduled pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p2, namespace: shop}\nspec: {containers: [{name: c, image: nginx}]}\n", "pod/p2 created"),
		{name: "evict it", who: "admin", kubectl: []string{"create", "--raw", "/api/v1/namespaces/shop/pods/p2/eviction", "-f", "{file}"},
			file: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p2"}}`, want: `"status":"Success"`},
		{name: "evicted", who: "admin", kubectl: []string{"get", "pod", "p2", "-n", "shop"}, fail: true, want: `pods "p2" not found`},

		// Pod spec validation beyond the basics, compared with kube's answer
		// (testdata/kube-1.37/invalid-*.txt).
		invalid("probes, security contexts, affinity and spreading", testdataFile("invalid-pod.yaml"), testdataFile("kube-1.37/invalid-pod.txt")),
		invalid("the same in a template, with sidecars and lifecycle hooks", testdataFile("invalid-deployment.yaml"), testdataFile("kube-1.37/invalid-deployment.txt")),

		// Certificates.
		{name: "certificate signing request", who: "admin", kubectl: []string{"apply", "-f", "{file}"},
			file: "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: jane}\nspec:\n  request: " + janeCSR +
				"\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages: [client auth]\n",
			want: "certificatesigningrequest.certificates.k8s.io/jane created"},
		get("csr columns", []string{"csr", "jane"}, `re:(?m)^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION\njane\s+\S+\s+kubernetes.io/kube-apiserver-client\s+\S+\s+24h\s+Pending$`),
		{name: "approve it", who: "admin", kubectl: []string{"certificate", "approve", "jane"}, want: "certificatesigningrequest.certificates.k8s.io/jane approved"},
		get("approved", []string{"csr", "jane", "-o", "jsonpath={.status.conditions[0].type} {.status.conditions[0].status} {.status.conditions[0].reason}"},
			"Approved True KubectlApprove"),
		invalid("csr needs usages and a real request", "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {name: bad15}\nspec: {request: \"\", signerName: example}\n",
			"* spec.request: Invalid value: \"\": PEM block type must be CERTIFICATE REQUEST\n* spec.usages: Required value\n* spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form 'example.com/signer-name'"),

		// Storage and resource kinds.
		apply("persistent volume", "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec: {capacity: {storage: 10Gi}, accessModes: [ReadWriteOnce, ReadOnlyMany], hostPath: {path: /data}, storageClassName: standard}\n",
			"persistentvolume/pv1 created"),
		get("pv columns", []string{"pv", "pv1"},
			`re:(?m)^NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+REASON\s+AGE\npv1\s+10Gi\s+RWO,ROX\s+Retain\s+Pending\s+standard\s+<unset>\s+\S+$`),
		get("pv defaults", []string{"pv", "pv1", "-o", "jsonpath={.spec.volumeMode} {.spec.hostPath.type}|{.metadata.finalizers}"},
			`Filesystem |["kubernetes.io/pv-protection"]`),
		{name: "delete a claim", who: "admin", kubectl: []string{"delete", "pvc", "web-data", "-n", "shop", "--wait=false"}, want: `persistentvolumeclaim "web-data" deleted`},
		// kube-controller-manager's pvc-protection controller, which apichain runs in core,
		// lets an unused claim go.
		{name: "an unused claim goes", who: "admin", kubectl: []string{"get", "pvc", "web-data", "-n", "shop"}, fail: true, eventually: true,
			apichainOnly: true, want: `persistentvolumeclaims "web-data" not found`},
		apply("replication controller", "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc1, namespace: shop}\nspec: {template: {metadata: {labels: {app: rc1}}, spec: {containers: [{name: c, image: nginx}]}}}\n",
			"replicationcontroller/rc1 created"),
		{name: "scale it", who: "admin", kubectl: []string{"scale", "rc", "rc1", "-n", "shop", "--replicas=3"}, want: "replicationcontroller/rc1 scaled"},
		get("rc columns", []string{"rc", "rc1", "-n", "shop"}, `re:(?m)^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\nrc1\s+3\s+0\s+0\s+\S+$`),
		get("rc selector defaulted", []string{"rc", "rc1", "-n", "shop", "-o", "jsonpath={.spec.selector} {.metadata.labels}"}, `{"app":"rc1"} {"app":"rc1"}`),
		apply("pod template", "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: pt1, namespace: shop}\ntemplate: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: nginx}]}}\n",
			"podtemplate/pt1 created"),
		get("pod template columns", []string{"podtemplates", "-n", "shop"}, `re:(?m)^NAME\s+CONTAINERS\s+IMAGES\s+POD LABELS\npt1\s+c\s+nginx\s+a=b$`),
		apply("device class and claim", "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.example.com}\nspec: {selectors: [{cel: {expression: \"device.driver == 'gpu.example.com'\"}}]}\n---\n"+
			"apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: claim1, namespace: shop}\nspec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}\n",
			"resourceclaim.resource.k8s.io/claim1 created"),
		get("claim defaults", []string{"resourceclaim", "claim1", "-n", "shop", "-o", "jsonpath={.spec.devices.requests[0].exactly.allocationMode} {.spec.devices.requests[0].exactly.count}"},
			"ExactCount 1"),
		get("claim columns", []string{"resourceclaims", "-n", "shop"}, `re:(?m)^NAME\s+STATE\s+AGE\nclaim1\s+pending\s+\S+$`),
		apply("volume attachment", "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va1}\nspec: {attacher: ebs.csi.aws.com, nodeName: node-1, source: {persistentVolumeName: pv1}}\n",
			"volumeattachment.storage.k8s.io/va1 created"),
		get("volume attachment columns", []string{"volumeattachments"}, `re:(?m)^NAME\s+ATTACHER\s+PV\s+NODE\s+ATTACHED\s+AGE\nva1\s+ebs.csi.aws.com\s+pv1\s+node-1\s+false\s+\S+$`),

		{name: "every built-in resource is discovered", who: "admin", kubectl: []string{"api-resources", "-o", "name"},
			want: "re:(?s)bindings\n.*componentstatuses\n.*podtemplates\n.*replicationcontrollers\n.*horizontalpodautoscalers.autoscaling\n.*cronjobs.batch\n.*jobs.batch\n" +
				".*certificatesigningrequests.certificates.k8s.io\n.*clustertrustbundles.certificates.k8s.io\n.*ingresses.networking.k8s.io\n.*ipaddresses.networking.k8s.io\n" +
				".*networkpolicies.networking.k8s.io\n.*servicecidrs.networking.k8s.io\n.*poddisruptionbudgets.policy\n.*deviceclasses.resource.k8s.io\n.*resourceslices.resource.k8s.io\n" +
				".*csinodes.storage.k8s.io\n.*volumeattachments.storage.k8s.io\n.*storageversionmigrations.storagemigration.k8s.io"},
	}
}

// TestBuiltinWorkloadsSuite: an application bundle applied and read back, then the workload,
// networking, policy, autoscaling, storage, certificates and resource kinds with kube's
// defaults, columns and validation, and the service network; checked against kube-apiserver
// 1.37.2 (APICHAIN_SUITE_KUBE runs them there too).
func TestBuiltinWorkloadsSuite(t *testing.T) {
	runSuiteOnBoth(t, builtinWorkloadCases(), 20)
}

// testdataFile is a file of testdata/, without its final newline.
func testdataFile(name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(data), "\n")
}
