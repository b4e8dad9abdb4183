package lifecycle

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	lifecyclev1 "github.com/apichain/apichain/gen/apichain/lifecycle/v1"
	"github.com/apichain/apichain/pkg/certs"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A NATS server run from the configuration the pki step writes: over TLS, with each
// service's nkey. Services publish and watch lifecycle state with their own credentials;
// none may write another's state; only the gateway writes its audit stream; nobody gets in
// without TLS or a known nkey.
func TestNATSServerConfig(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("ca", time.Hour)
	require.NoError(t, err)
	crt, key, err := ca.IssueServing("nats", []string{"127.0.0.1"}, time.Hour)
	require.NoError(t, err)
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	caFile, crtFile, keyFile := file("ca.crt", ca.CertPEM), file("nats.crt", crt), file("nats.key", key)
	seed := map[string]string{}
	var users []NATSUser
	for _, svc := range []string{"gateway", "core"} {
		seed[svc] = filepath.Join(dir, svc+".nk")
		pub, err := certs.EnsureNkey(seed[svc])
		require.NoError(t, err)
		again, err := certs.EnsureNkey(seed[svc])
		require.NoError(t, err)
		require.Equal(t, pub, again, "the seed is kept")
		u := NATSUser{Service: svc, PublicKey: pub}
		if svc == "gateway" {
			u.Publish = []string{"$JS.API.STREAM.CREATE.AUDIT", "audit.>"}
		}
		users = append(users, u)
	}
	conf := file("nats.conf", NATSServerConfig(NATSServer{CertFile: crtFile, KeyFile: keyFile, StoreDir: filepath.Join(dir, "js")}, users))
	opts, err := natsserver.ProcessConfigFile(conf)
	require.NoError(t, err, "%s", conf)
	opts.Host, opts.Port, opts.HTTPPort, opts.NoSigs, opts.NoLog = "127.0.0.1", natsserver.RANDOM_PORT, 0, true, true
	srv, err := natsserver.NewServer(opts)
	require.NoError(t, err)
	go srv.Start()
	require.True(t, srv.ReadyForConnections(10*time.Second))
	t.Cleanup(srv.Shutdown)
	url := "tls://" + srv.Addr().String()

	connect := func(svc string) *nats.Conn {
		n := &NATS{CAFile: caFile, NkeyFile: seed[svc]}
		creds, err := n.credentials()
		require.NoError(t, err)
		nc, err := nats.Connect(url, creds...)
		require.NoError(t, err, svc)
		t.Cleanup(nc.Close)
		return nc
	}
	gateway, core := connect("gateway"), connect("core")

	// core publishes its state and the gateway sees it, each with its own credentials.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := NewRegistry(time.Minute)
	go WatchNATS(ctx, gateway, KV{TTL: time.Minute}, reg, quiet)
	pub := NewPublisher(core, Key("core", "c1"), KV{TTL: time.Minute}, func() *lifecyclev1.InstanceState {
		return &lifecyclev1.InstanceState{Service: "core", InstanceId: "c1", Ready: true}
	}, quiet)
	go pub.Run(ctx)
	pub.Notify()
	require.Eventually(t, func() bool { return len(reg.Instances()) == 1 }, 15*time.Second, 20*time.Millisecond, "the gateway sees core's state")

	// No service writes another's state.
	js, err := jetstream.New(core)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, Bucket)
	require.NoError(t, err)
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	_, err = kv.Put(short, Key("gateway", "forged"), []byte("x"))
	assert.Error(t, err, "core may not write the gateway's state")
	assert.Error(t, kv.Delete(short, Key("gateway", "g1")), "nor delete it")

	// Only the gateway creates and writes its audit stream.
	for svc, nc := range map[string]*nats.Conn{"gateway": gateway, "core": core} {
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = js.CreateStream(sctx, jetstream.StreamConfig{Name: "AUDIT", Subjects: []string{"audit.>"}})
		if svc == "gateway" {
			assert.NoError(t, err)
			_, err = js.Publish(sctx, "audit.events", []byte("{}"))
			assert.NoError(t, err)
		} else {
			assert.Error(t, err, "core may not create the audit stream")
		}
		cancel()
	}

	// Nobody gets in without TLS, or without a known nkey.
	_, err = nats.Connect("nats://"+srv.Addr().String(), nats.Timeout(2*time.Second))
	assert.Error(t, err, "no plain connection")
	_, err = nats.Connect(url, nats.RootCAs(caFile), nats.Timeout(2*time.Second))
	assert.Error(t, err, "no connection without an nkey")
	stranger := filepath.Join(dir, "stranger.nk")
	_, err = certs.EnsureNkey(stranger)
	require.NoError(t, err)
	opt, err := nats.NkeyOptionFromSeed(stranger)
	require.NoError(t, err)
	_, err = nats.Connect(url, nats.RootCAs(caFile), opt, nats.Timeout(2*time.Second))
	assert.Error(t, err, "no connection with an unknown nkey")
}

// With several nodes the configuration makes them one JetStream cluster: routes to every
// node over TLS verified both ways, and a lame duck stop that hands clients to the others.
func TestNATSServerConfigCluster(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("ca", time.Hour)
	require.NoError(t, err)
	crt, key, err := ca.IssueServing("nats", []string{"nats1", "nats2"}, time.Hour)
	require.NoError(t, err)
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	s := NATSServer{CertFile: file("nats.crt", crt), KeyFile: file("nats.key", key), CAFile: file("ca.crt", ca.CertPEM),
		StoreDir: filepath.Join(dir, "js"), Nodes: []string{"nats", "nats1", "nats2"}}
	pub, err := certs.EnsureNkey(filepath.Join(dir, "core.nk"))
	require.NoError(t, err)
	conf := file("nats.conf", NATSServerConfig(s, []NATSUser{{Service: "core", PublicKey: pub}}))
	opts, err := natsserver.ProcessConfigFile(conf)
	require.NoError(t, err)
	assert.Equal(t, "apichain", opts.Cluster.Name)
	assert.Equal(t, 6222, opts.Cluster.Port)
	assert.True(t, opts.Cluster.NoAdvertise)
	var routes []string
	for _, r := range opts.Routes {
		routes = append(routes, r.String())
	}
	assert.Equal(t, []string{"nats-route://nats:6222", "nats-route://nats1:6222", "nats-route://nats2:6222"}, routes)
	require.NotNil(t, opts.Cluster.TLSConfig)
	assert.Equal(t, tls.RequireAndVerifyClientCert, opts.Cluster.TLSConfig.ClientAuth, "routes verify each other's certificate")
	assert.NotNil(t, opts.Cluster.TLSConfig.ClientCAs)
	assert.True(t, opts.Cluster.TLSCheckKnownURLs, "a route's certificate must name a node: other certificates of the CA are not routes")
	assert.Equal(t, 30*time.Second, opts.LameDuckDuration)
	assert.True(t, opts.JetStream)

	// A single node has no cluster.
	s.Nodes = []string{"nats"}
	conf = file("single.conf", NATSServerConfig(s, nil))
	opts, err = natsserver.ProcessConfigFile(conf)
	require.NoError(t, err)
	assert.Empty(t, opts.Routes)
	assert.Zero(t, opts.Cluster.Port)
}

// Two nodes run from the cluster configuration join as routes over TLS; a server holding
// another certificate of the same CA, one that names no node, is refused as a route.
func TestNATSClusterRoutes(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.NewCA("ca", time.Hour)
	require.NoError(t, err)
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.CertPEM, 0o600))
	// The first node's route port, known before it starts: every node's routes name it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	firstPort := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	start := func(name string, hosts []string, port int) *natsserver.Server {
		crt, key, err := ca.IssuePeer(name, hosts, time.Hour)
		require.NoError(t, err)
		s := NATSServer{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"), CAFile: caFile,
			StoreDir: filepath.Join(dir, name), Nodes: []string{"localhost", "localhost"}}
		require.NoError(t, os.WriteFile(s.CertFile, crt, 0o600))
		require.NoError(t, os.WriteFile(s.KeyFile, key, 0o600))
		conf := filepath.Join(dir, name+".conf")
		require.NoError(t, os.WriteFile(conf, NATSServerConfig(s, nil), 0o600))
		opts, err := natsserver.ProcessConfigFile(conf)
		require.NoError(t, err)
		opts.ServerName, opts.JetStream = name, false
		opts.Host, opts.Port, opts.HTTPPort, opts.NoSigs, opts.NoLog = "127.0.0.1", natsserver.RANDOM_PORT, 0, true, true
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", port
		opts.Routes = natsserver.RoutesFromStr(fmt.Sprintf("nats-route://localhost:%d", firstPort))
		srv, err := natsserver.NewServer(opts)
		require.NoError(t, err)
		go srv.Start()
		require.True(t, srv.ReadyForConnections(10*time.Second))
		t.Cleanup(srv.Shutdown)
		return srv
	}
	first := start("first", []string{"localhost"}, firstPort)
	second := start("second", []string{"localhost"}, natsserver.RANDOM_PORT)
	require.Eventually(t, func() bool { return first.NumRoutes() > 0 && second.NumRoutes() > 0 }, 20*time.Second, 50*time.Millisecond,
		"two nodes whose certificate names a route's host join")
	routes := first.NumRoutes()

	rogue := start("rogue", []string{"rogue"}, natsserver.RANDOM_PORT)
	assert.Never(t, func() bool { return rogue.NumRoutes() > 0 || first.NumRoutes() > routes }, 3*time.Second, 100*time.Millisecond,
		"a certificate of the same CA naming no node is not let in as a route")
}
