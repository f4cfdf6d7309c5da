package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// The deployment examples in deploy/ (README, "Run several replicas") are
// checked here, as far as this machine can without Docker or Kubernetes:
// every YAML file parses, every `lookout serve` argument they pass is a
// flag of this binary's serve, the probes and the proxy's health checks
// ask the server's real endpoints, the proxy's upstreams are the replicas,
// and the replicas' pools fit under the max_connections the files set.

const deployDir = "../../deploy"

// reservedConns is PostgreSQL's superuser_reserved_connections default.
const reservedConns = 3

// cliHeadroom is the connections left for one-off commands (a lookout
// user create or reindex opens a pool of its own) and psql.
const cliHeadroom = 10

// checkServeArgs parses args (serve and its flags) with serve's own flag
// set and returns the values given.
func checkServeArgs(args []string) (map[string][]string, error) {
	if len(args) == 0 || args[0] != "serve" {
		return nil, fmt.Errorf("the command is %q, not serve", args)
	}
	cmd := newServeCmd()
	if err := cmd.ParseFlags(args[1:]); err != nil {
		return nil, err
	}
	if rest := cmd.Flags().Args(); len(rest) > 0 {
		return nil, fmt.Errorf("arguments that are not flags: %q", rest)
	}
	vals := map[string][]string{}
	// Visit only the flags set; slices (--trusted-proxy) as given.
	for i := 1; i < len(args); i++ {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
		f := cmd.Flags().Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("%s: no such flag", args[i])
		}
		if !hasVal && f.Value.Type() != "bool" {
			i++
			val = args[i]
		}
		vals[name] = append(vals[name], val)
	}
	return vals, nil
}

// The checker itself refuses what the files must not hold.
func TestDeployServeArgsChecker(t *testing.T) {
	if _, err := checkServeArgs([]string{"serve", "--addr", "0.0.0.0:8000", "--trusted-proxy", "10.0.0.1", "--quiet"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{
		{"serve", "--adr", "0.0.0.0:8000"},
		{"serve", "--trusted-proxies", "10.0.0.1"},
		{"serve", "--addr", "0.0.0.0:8000", "extra"},
		{"server", "--addr", "0.0.0.0:8000"},
	} {
		if _, err := checkServeArgs(bad); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}

// serverPaths answers whether the server serves 200 at each path, over a
// fresh SQLite store.
func serverPaths(t *testing.T, paths ...string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := server.New(server.Config{Store: st})
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	for _, p := range paths {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200 (a probe of the deployment files)", p, resp.StatusCode)
		}
	}
}

// yamlDocs parses every YAML document of every .yaml file under dir.
func yamlDocs(t *testing.T, dir string) map[string][]*yaml.Node {
	t.Helper()
	docs := map[string][]*yaml.Node{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			rel, _ := filepath.Rel(dir, p)
			docs[filepath.ToSlash(rel)] = append(docs[filepath.ToSlash(rel)], &n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func decodeNode[T any](t *testing.T, n *yaml.Node) T {
	t.Helper()
	var v T
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// poolConns is a database URL's pool_max_conns, required: without it the
// pool size follows the cores a replica is given.
func poolConns(t *testing.T, where, db string) int {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatalf("%s: --db %q: %v", where, db, err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("%s: --db %q is not a PostgreSQL URL", where, db)
	}
	n, err := strconv.Atoi(u.Query().Get("pool_max_conns"))
	if err != nil || n < 1 {
		t.Fatalf("%s: --db %q sets no pool_max_conns", where, db)
	}
	return n
}

func addrPort(t *testing.T, where, addr string) int {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "0.0.0.0" {
		t.Fatalf("%s: --addr %q: a replica must listen on 0.0.0.0 to be reached (%v)", where, addr, err)
	}
	p, _ := strconv.Atoi(port)
	return p
}

type composeFile struct {
	Services map[string]struct {
		Image       string   `yaml:"image"`
		Command     []string `yaml:"command"`
		Build       any      `yaml:"build"`
		Environment any      `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Volumes  []string `yaml:"volumes"`
		Networks any      `yaml:"networks"`
	} `yaml:"services"`
	Networks map[string]any `yaml:"networks"`
	Volumes  map[string]any `yaml:"volumes"`
}

func TestDeployCompose(t *testing.T) {
	docs := yamlDocs(t, deployDir)
	if len(docs["compose.yaml"]) != 1 {
		t.Fatalf("deploy/compose.yaml: %d documents", len(docs["compose.yaml"]))
	}
	c := decodeNode[composeFile](t, docs["compose.yaml"][0])

	// PostgreSQL: the official image, a named volume, max_connections.
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:") {
		t.Fatalf("no postgres service of the official image: %+v", pg)
	}
	maxConns := 0
	for i, a := range pg.Command {
		if v, ok := strings.CutPrefix(a, "max_connections="); ok && i > 0 && pg.Command[i-1] == "-c" {
			maxConns, _ = strconv.Atoi(v)
		}
	}
	if maxConns == 0 {
		t.Fatalf("postgres's command sets no max_connections: %q", pg.Command)
	}
	if len(pg.Volumes) == 0 {
		t.Errorf("postgres's data is in no volume")
	} else if _, ok := c.Volumes[strings.Split(pg.Volumes[0], ":")[0]]; !ok {
		t.Errorf("postgres's data is not in a named volume: %q", pg.Volumes)
	}
	if pg.Healthcheck == nil || !slices.Contains(pg.Healthcheck.Test, "pg_isready") {
		t.Errorf("postgres has no pg_isready healthcheck")
	}

	// The replicas: serve with real flags, on PostgreSQL after it is
	// healthy, believing the proxy's address only.
	var replicas []string
	var pool, port int
	var trusted []string
	for name, s := range c.Services {
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			continue
		}
		replicas = append(replicas, name)
		vals, err := checkServeArgs(s.Command)
		if err != nil {
			t.Fatalf("compose service %s: %v", name, err)
		}
		if s.Build == nil {
			t.Errorf("compose service %s is not built from the Dockerfile", name)
		}
		pool = poolConns(t, name, vals["db"][0])
		port = addrPort(t, name, vals["addr"][0])
		trusted = vals["trusted-proxy"]
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("compose service %s does not wait for postgres to be healthy", name)
		}
	}
	slices.Sort(replicas)
	if len(replicas) != 2 {
		t.Fatalf("%d replicas (%q), want 2", len(replicas), replicas)
	}

	// The proxy: Caddy at a fixed address (the one the replicas trust),
	// sending to the replicas in turn and probing their /readyz.
	proxy := c.Services["proxy"]
	var proxyNet struct {
		Networks map[string]struct {
			IPv4 string `yaml:"ipv4_address"`
		} `yaml:"networks"`
	}
	services := decodeNode[map[string]yaml.Node](t, mapValue(t, docs["compose.yaml"][0], "services"))
	p := services["proxy"]
	if err := p.Decode(&proxyNet); err != nil {
		t.Fatal(err)
	}
	var proxyIPs []string
	for _, n := range proxyNet.Networks {
		proxyIPs = append(proxyIPs, n.IPv4)
	}
	if len(trusted) == 0 || !slices.Equal(trusted, proxyIPs) {
		t.Errorf("the replicas trust %q, the proxy's addresses are %q", trusted, proxyIPs)
	}
	for _, r := range replicas {
		if _, ok := proxy.DependsOn[r]; !ok {
			t.Errorf("the proxy does not depend on %s", r)
		}
	}
	caddy, err := os.ReadFile(filepath.Join(deployDir, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(proxy.Volumes, "./Caddyfile:/etc/caddy/Caddyfile:ro") {
		t.Errorf("the proxy does not mount deploy/Caddyfile: %q", proxy.Volumes)
	}
	m := regexp.MustCompile(`(?m)^\s*reverse_proxy\s+(.+?)\s*\{`).FindSubmatch(caddy)
	if m == nil {
		t.Fatal("Caddyfile: no reverse_proxy block")
	}
	var want []string
	for _, r := range replicas {
		want = append(want, fmt.Sprintf("%s:%d", r, port))
	}
	if got := strings.Fields(string(m[1])); !slices.Equal(got, want) {
		t.Errorf("Caddyfile's upstreams are %q, the replicas %q", got, want)
	}
	for _, directive := range []string{"lb_policy round_robin", "health_uri /readyz"} {
		if !regexp.MustCompile(`(?m)^\s*` + directive + `\s*$`).Match(caddy) {
			t.Errorf("Caddyfile lacks %q", directive)
		}
	}
	if proxy.Healthcheck == nil || !slices.ContainsFunc(proxy.Healthcheck.Test, func(s string) bool { return strings.HasSuffix(s, "/readyz") }) {
		t.Errorf("the proxy's healthcheck does not ask /readyz")
	}
	serverPaths(t, "/readyz", "/healthz")

	// Connections: the replicas, one more while one is replaced, and the
	// headroom fit under max_connections.
	need := (len(replicas)+1)*(pool+1) + cliHeadroom
	if need > maxConns-reservedConns {
		t.Errorf("(%d replicas + 1) × (pool_max_conns %d + 1) + %d = %d connections, max_connections %d − %d reserved leaves %d",
			len(replicas), pool, cliHeadroom, need, maxConns, reservedConns, maxConns-reservedConns)
	}
	t.Logf("compose: %d replicas, pool %d, %d of %d connections", len(replicas), pool, need, maxConns-reservedConns)
}

// mapValue is the value of key in a document's top mapping.
func mapValue(t *testing.T, doc *yaml.Node, key string) *yaml.Node {
	t.Helper()
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	t.Fatalf("no %s in the document", key)
	return nil
}

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sDeployment struct {
	Spec struct {
		Replicas int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Strategy struct {
			RollingUpdate struct {
				MaxSurge int `yaml:"maxSurge"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name      string `yaml:"name"`
						ValueFrom struct {
							SecretKeyRef struct {
								Name string `yaml:"name"`
								Key  string `yaml:"key"`
							} `yaml:"secretKeyRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
					Ports []struct {
						Name          string `yaml:"name"`
						ContainerPort int    `yaml:"containerPort"`
					} `yaml:"ports"`
					StartupProbe   *k8sProbe `yaml:"startupProbe"`
					LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
					ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
					Resources      struct {
						Requests map[string]string `yaml:"requests"`
						Limits   map[string]string `yaml:"limits"`
					} `yaml:"resources"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func TestDeployKubernetes(t *testing.T) {
	docs := yamlDocs(t, filepath.Join(deployDir, "k8s"))
	byKind := map[string]*yaml.Node{}
	objs := map[string]k8sObject{}
	for file, ds := range docs {
		for _, d := range ds {
			o := decodeNode[k8sObject](t, d)
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Fatalf("k8s/%s: a document without apiVersion, kind or name", file)
			}
			if byKind[o.Kind] != nil {
				t.Fatalf("two %s objects", o.Kind)
			}
			byKind[o.Kind], objs[o.Kind] = d, o
		}
	}
	for _, k := range []string{"Deployment", "Service", "Secret", "PodDisruptionBudget"} {
		if byKind[k] == nil {
			t.Fatalf("deploy/k8s has no %s", k)
		}
	}
	d := decodeNode[k8sDeployment](t, byKind["Deployment"])
	if d.Spec.Replicas < 2 {
		t.Errorf("the Deployment runs %d replicas", d.Spec.Replicas)
	}
	sel := d.Spec.Selector.MatchLabels
	for k, v := range sel {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the pods' labels do not match the Deployment's selector %s=%s", k, v)
		}
	}
	var svc struct {
		Spec struct {
			Selector map[string]string `yaml:"selector"`
			Ports    []struct {
				TargetPort any `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	if err := byKind["Service"].Decode(&svc); err != nil {
		t.Fatal(err)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("the Service's selector %s=%s does not pick the pods", k, v)
		}
	}
	var secret struct {
		StringData map[string]string `yaml:"stringData"`
	}
	if err := byKind["Secret"].Decode(&secret); err != nil {
		t.Fatal(err)
	}

	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	// $(VAR) in args is the env var's value: the database URL from the
	// Secret.
	env := map[string]string{}
	for _, e := range c.Env {
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != objs["Secret"].Metadata.Name {
			t.Fatalf("env %s comes from secret %q, not %q", e.Name, ref.Name, objs["Secret"].Metadata.Name)
		}
		v, ok := secret.StringData[ref.Key]
		if !ok {
			t.Fatalf("env %s: the Secret has no key %q", e.Name, ref.Key)
		}
		env[e.Name] = v
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(a, func(m string) string {
			v, ok := env[m[2:len(m)-1]]
			if !ok {
				t.Fatalf("args use %s, which no env var defines", m)
			}
			return v
		}))
	}
	vals, err := checkServeArgs(args)
	if err != nil {
		t.Fatalf("the Deployment's args: %v", err)
	}
	if len(vals["db"]) != 1 {
		t.Fatalf("the Deployment passes no --db")
	}
	pool := poolConns(t, "the Deployment", vals["db"][0])
	port := addrPort(t, "the Deployment", vals["addr"][0])
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != port {
		t.Fatalf("the container's ports %+v are not --addr's %d", c.Ports, port)
	}
	portName := c.Ports[0].Name
	if len(svc.Spec.Ports) != 1 || (svc.Spec.Ports[0].TargetPort != portName && svc.Spec.Ports[0].TargetPort != port) {
		t.Errorf("the Service's targetPort %v is not the container's port", svc.Spec.Ports)
	}
	probe := func(what string, p *k8sProbe, path string) {
		if p == nil {
			t.Errorf("no %s", what)
			return
		}
		if p.HTTPGet.Path != path {
			t.Errorf("%s asks %q, want %q", what, p.HTTPGet.Path, path)
		}
		if p.HTTPGet.Port != portName && p.HTTPGet.Port != port {
			t.Errorf("%s asks port %v, not the server's", what, p.HTTPGet.Port)
		}
	}
	probe("readinessProbe", c.ReadinessProbe, "/readyz")
	probe("livenessProbe", c.LivenessProbe, "/healthz")
	probe("startupProbe", c.StartupProbe, "/healthz")
	serverPaths(t, "/readyz", "/healthz")
	if c.Resources.Requests["cpu"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("resources: %+v", c.Resources)
	}

	// Connections: every pod of a rolling update, and the headroom, fit
	// under the max_connections the Deployment was sized for.
	maxConns, err := strconv.Atoi(objs["Deployment"].Metadata.Annotations["lookout-dev/postgres-max-connections"])
	if err != nil {
		t.Fatalf("the Deployment does not record the max_connections it was sized for: %v", err)
	}
	pods := d.Spec.Replicas + d.Spec.Strategy.RollingUpdate.MaxSurge
	need := pods*(pool+1) + cliHeadroom
	if need > maxConns-reservedConns {
		t.Errorf("%d pods × (pool_max_conns %d + 1) + %d = %d connections, max_connections %d − %d reserved leaves %d",
			pods, pool, cliHeadroom, need, maxConns, reservedConns, maxConns-reservedConns)
	}
	t.Logf("k8s: %d pods at most, pool %d, %d of %d connections", pods, pool, need, maxConns-reservedConns)
}
