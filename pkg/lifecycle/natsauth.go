package lifecycle

import (
	"fmt"
	"strconv"
	"strings"
)

// NATSUser is one service's identity on NATS: its nkey, and what it may publish beyond its
// lifecycle states (the gateway's audit stream).
type NATSUser struct {
	Service   string
	PublicKey string
	Publish   []string
}

// stream is the JetStream stream behind the lifecycle bucket.
const stream = "KV_" + Bucket

// Permissions are what a service's NATS user may publish and subscribe to: the lifecycle
// bucket's JetStream API (open it, watch it, read it), writes to its own service's keys
// only (no service can forge or delete another's state), the extra subjects, and replies.
func (u NATSUser) Permissions() (publish, subscribe []string) {
	publish = []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + stream, "$JS.API.STREAM.CREATE." + stream, "$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.CONSUMER.CREATE." + stream, "$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.DELETE." + stream + ".>", "$JS.API.CONSUMER.INFO." + stream + ".>",
		"$JS.API.DIRECT.GET." + stream + ".>", "$JS.API.STREAM.MSG.GET." + stream,
		"$JS.FC." + stream + ".>",
		"$KV." + Bucket + "." + u.Service + ".>",
	}
	return append(publish, u.Publish...), []string{"_INBOX.>"}
}

// NATSServer is where a NATS server finds its TLS files and JetStream store, and the host
// names of its cluster's nodes (none or one: a single server).
type NATSServer struct {
	CertFile, KeyFile string
	// CAFile verifies the other nodes' certificates on the cluster's routes.
	CAFile   string
	StoreDir string
	Nodes    []string
}

// NATSServerConfig is a NATS server configuration serving clients over TLS on port 4222, with
// JetStream storing under StoreDir, its monitor on loopback only, and the users' nkeys as the
// only way in. With more than one node it joins them in one JetStream cluster: routes on port
// 6222, TLS both ways with the same certificate, and a route let in only with a certificate
// naming one of the nodes (no other certificate of the cluster CA). A node stops in lame duck
// mode: it hands its JetStream leaderships over, waits 2 s, then closes its clients one by
// one, at most a second apart (30 s, NATS's minimum lame duck duration, bounds the whole).
// Each node is started with --name set to its host name.
func NATSServerConfig(s NATSServer, users []NATSUser) []byte {
	q := strconv.Quote // ASCII names and paths: quotes and backslashes are all it escapes
	list := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = q(s)
		}
		return "[" + strings.Join(out, ", ") + "]"
	}
	var b strings.Builder
	b.WriteString("# Made by apichain's pki step: TLS, and each service's nkey with its permissions.\n")
	fmt.Fprintf(&b, "port: 4222\nhttp: %s\n", q("127.0.0.1:8222"))
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %s\n}\n", q(s.StoreDir))
	fmt.Fprintf(&b, "tls {\n  cert_file: %s\n  key_file: %s\n  timeout: 5\n}\n", q(s.CertFile), q(s.KeyFile))
	if len(s.Nodes) > 1 {
		routes := make([]string, len(s.Nodes))
		for i, n := range s.Nodes {
			routes[i] = "nats-route://" + n + ":6222"
		}
		fmt.Fprintf(&b, "lame_duck_duration: %s\nlame_duck_grace_period: %s\n", q("30s"), q("2s"))
		fmt.Fprintf(&b, "cluster {\n  name: %s\n  port: 6222\n  no_advertise: true\n  routes: %s\n", q("apichain"), list(routes))
		fmt.Fprintf(&b, "  tls {\n    cert_file: %s\n    key_file: %s\n    ca_file: %s\n    verify_cert_and_check_known_urls: true\n    timeout: 5\n  }\n}\n",
			q(s.CertFile), q(s.KeyFile), q(s.CAFile))
	}
	b.WriteString("authorization {\n  users: [\n")
	for _, u := range users {
		pub, sub := u.Permissions()
		fmt.Fprintf(&b, "    # %s\n    {nkey: %s, permissions: {publish: {allow: %s}, subscribe: {allow: %s}}}\n",
			u.Service, q(u.PublicKey), list(pub), list(sub))
	}
	b.WriteString("  ]\n}\n")
	return []byte(b.String())
}
