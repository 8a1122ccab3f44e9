package runtimes

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnet "github.com/testcontainers/testcontainers-go/network"

	"etcdx/upgradelab/cluster"
	"etcdx/upgradelab/plan"
)

// Container paths and ports: every member is alone in its container, so all use the same.
const (
	dataMount  = "/var/lib/etcd"
	clientPort = 2379
	peerPort   = 2380
	imageRepo  = "etcdx-upgradelab/etcd"
)

// Labels on everything the container runtime creates. owner names the lab process (host,
// pid, start time), so a later run can tell a dead run's leftovers from a live one's.
const (
	labelOwner = "etcdx.upgradelab.owner"
	labelRun   = "etcdx.upgradelab.run"
	labelImage = "etcdx.upgradelab.image"
)

// Docker runs each member as a container of a FROM-scratch image of its binary, on a private
// network of the run with a fixed address per member, its data on a volume of its own so it
// survives a binary swap.
type Docker struct {
	dir      string
	provider *tc.DockerProvider
	cli      client.APIClient
	logger   tclog.Logger
	run      string
	owner    string
	network  *tc.DockerNetwork
	subnet   netip.Prefix

	mu      sync.Mutex
	members []*dockerMember
	images  map[string]string // binary sha256 -> image tag
}

// NewDocker connects to the engine (ErrNoEngine when none answers), removes what killed runs
// left behind, and creates the run's network.
func NewDocker(ctx context.Context, dir string) (*Docker, error) {
	provider, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	cli := provider.Client()
	owner, err := ownerID()
	if err != nil {
		return nil, err
	}
	d := &Docker{dir: dir, provider: provider, cli: cli, logger: quiet, owner: owner,
		run: fmt.Sprintf("%x", rand.Uint64()&0xffffffff), images: map[string]string{}}
	if _, err := RemoveLeftovers(ctx, cli, false); err != nil {
		return nil, fmt.Errorf("remove leftovers of earlier runs: %w", err)
	}
	if err := d.createNetwork(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// quiet keeps testcontainers-go's own chatter out of the lab's output.
var quiet = tclog.NewNoopLogger()

// connect reaches the Docker engine and checks that it speaks an API version the client
// library supports.
func connect(ctx context.Context) (*tc.DockerProvider, error) {
	provider, err := tc.NewDockerProvider(tc.WithLogger(quiet))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ping, err := provider.Client().Ping(pctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	if lessVersion(ping.APIVersion, client.MinAPIVersion) {
		return nil, fmt.Errorf("%w: the engine speaks API %s, testcontainers-go needs %s or later", ErrNoEngine, ping.APIVersion, client.MinAPIVersion)
	}
	return provider, nil
}

func (d *Docker) labels() map[string]string {
	return map[string]string{labelOwner: d.owner, labelRun: d.run}
}

// createNetwork makes a bridge network with a /24 of its own (so members keep their
// addresses when reconnected after a partition), trying other subnets when one is taken.
func (d *Docker) createNetwork(ctx context.Context) error {
	var last error
	for i := 0; i < 10; i++ {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + rand.IntN(50)), byte(rand.IntN(256)), 0}), 24)
		nw, err := tcnet.New(ctx, tcnet.WithLabels(d.labels()),
			tcnet.WithIPAM(&network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet, Gateway: subnet.Addr().Next()}}}))
		if err == nil {
			d.network, d.subnet = nw, subnet
			return nil
		}
		last = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return fmt.Errorf("create the run's network: %w", last)
}

// Name implements Runtime.
func (d *Docker) Name() string { return "container" }

// HostIP implements Runtime: the network's gateway, which is the host's side of its bridge.
func (d *Docker) HostIP() netip.Addr { return d.subnet.Addr().Next() }

// Supports implements Runtime: containers can do every step.
func (d *Docker) Supports(k plan.StepKind) error {
	if k == plan.KindCrash {
		return errors.New("crash steps set a member's failpoints over its GOFAIL_HTTP port, which containers do not publish yet; run with --runtime process or netns")
	}
	return nil
}

// NewMember implements Runtime: the member gets the next address of the network and a volume.
func (d *Docker) NewMember(ctx context.Context, spec Spec) (Member, error) {
	d.mu.Lock()
	host := 10 + len(d.members)
	d.mu.Unlock()
	a := d.subnet.Addr().As4()
	a[3] = byte(host)
	ip := netip.AddrFrom4(a)
	name := fmt.Sprintf("upgradelab-%s-%s", d.run, spec.Name)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: d.labels()}); err != nil {
		return nil, fmt.Errorf("volume for %s: %w", spec.Name, err)
	}
	m := &dockerMember{d: d, spec: spec, ip: ip, resource: name}
	d.mu.Lock()
	d.members = append(d.members, m)
	d.mu.Unlock()
	return m, nil
}

// Close implements Runtime: every container (its log kept), volume and the network go.
func (d *Docker) Close(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx) // Ctrl-C must not stop the clean-up
	var errs []error
	d.mu.Lock()
	members := d.members
	d.mu.Unlock()
	for _, m := range members {
		// A graceful stop first lets the member send the spans it still holds; kill after a
		// short wait (a partitioned or wedged member need not hold the clean-up up).
		stopped := false
		if m.current() != nil {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if m.frozen {
				m.Thaw(sctx)
			}
			timeout := 5 * time.Second
			stopped = m.current().Stop(sctx, &timeout) == nil
			cancel()
		}
		if err := m.remove(ctx, !stopped); err != nil {
			errs = append(errs, err)
		}
		if _, err := d.cli.VolumeRemove(ctx, m.resource, client.VolumeRemoveOptions{Force: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", m.resource, err))
		}
		if staged := m.takeSeed(); staged != "" { // seeded, never started
			os.RemoveAll(staged)
		}
	}
	if d.network != nil {
		if err := d.network.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove network: %w", err))
		}
	}
	return errors.Join(errs...)
}

// image returns the image of bin, building it the first time (images are kept and found
// again by the binary's checksum, so a binary is built into an image once per machine).
func (d *Docker) image(ctx context.Context, bin cluster.Binary) (string, error) {
	d.mu.Lock()
	tag, ok := d.images[bin.SHA256]
	d.mu.Unlock()
	if ok {
		return tag, nil
	}
	tag = imageRepo + ":" + bin.SHA256[:20]
	if _, err := d.cli.ImageInspect(ctx, tag); err != nil {
		if err := d.buildImage(ctx, bin, tag); err != nil {
			return "", err
		}
	}
	d.mu.Lock()
	d.images[bin.SHA256] = tag
	d.mu.Unlock()
	return tag, nil
}

func (d *Docker) buildImage(ctx context.Context, bin cluster.Binary, tag string) error {
	files, err := imageFiles(bin.Path)
	if err != nil {
		return err
	}
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nENTRYPOINT [\"/usr/local/bin/etcd\"]\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []imageFile{{path: "Dockerfile", mode: 0o644, data: []byte(dockerfile)}}
	for _, f := range files {
		entries = append(entries, imageFile{path: "rootfs/" + f.path, mode: f.mode, data: f.data})
	}
	for _, f := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: f.path, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	repo, version, _ := strings.Cut(tag, ":")
	_, err = d.provider.BuildImage(ctx, &tc.ContainerRequest{FromDockerfile: tc.FromDockerfile{
		ContextArchive: bytes.NewReader(buf.Bytes()), Repo: repo, Tag: version, KeepImage: true,
		BuildLogWriter: io.Discard,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) {
			o.Labels = map[string]string{labelImage: bin.Version}
		},
	}})
	if err != nil {
		return fmt.Errorf("build the image of %s: %w", bin.Path, err)
	}
	return nil
}

// lessVersion compares API versions like 1.41 and 1.40.
func lessVersion(a, b string) bool {
	var a1, a2, b1, b2 int
	fmt.Sscanf(a, "%d.%d", &a1, &a2)
	fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// dockerMember is one member's container (re-created at each start), address and volume.
type dockerMember struct {
	life
	d        *Docker
	spec     Spec
	ip       netip.Addr
	resource string // the container's and the volume's name

	mu        sync.Mutex
	container tc.Container
	// seed is a staged data dir the next start copies into the volume (Seed; "" when none).
	seed string
}

func (m *dockerMember) Name() string       { return m.spec.Name }
func (m *dockerMember) Failpoints() string { return "" }

func (m *dockerMember) ClientURL() string { return fmt.Sprintf("http://%s:%d", m.ip, clientPort) }
func (m *dockerMember) PeerURL() string   { return fmt.Sprintf("http://%s:%d", m.ip, peerPort) }

func (m *dockerMember) current() tc.Container {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.container
}

func (m *dockerMember) args() []string {
	cm := cluster.Member{Name: m.spec.Name, DataDir: dataMount + "/data", Token: m.spec.Token,
		ClientURL: m.ClientURL(), PeerURL: m.PeerURL(),
		ListenClientURL: fmt.Sprintf("http://0.0.0.0:%d", clientPort), ListenPeerURL: fmt.Sprintf("http://0.0.0.0:%d", peerPort),
		InitialCluster: m.initialCluster, State: m.state, Extra: m.spec.extra(m.bin)}
	return cm.Args()
}

func (m *dockerMember) endpoint() map[string]*network.EndpointSettings {
	return map[string]*network.EndpointSettings{m.d.network.Name: {IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: m.ip}}}
}

// Start implements Member: a new container of bin's image on the member's volume and address.
func (m *dockerMember) Start(ctx context.Context, bin cluster.Binary) error {
	if err := m.remove(ctx, false); err != nil {
		return err
	}
	tag, err := m.d.image(ctx, bin)
	if err != nil {
		return err
	}
	m.bin, m.frozen, m.partitioned = bin, false, false
	m.note(fmt.Sprintf("=== %s: starting %s (%s) in image %s\n", time.Now().Format(time.RFC3339Nano), bin.Path, bin.Version, tag))
	req := tc.ContainerRequest{
		Image: tag, Name: m.resource, Cmd: m.args(), Labels: m.d.labels(),
		Networks: []string{m.d.network.Name},
		Mounts:   tc.ContainerMounts{{Source: tc.GenericVolumeMountSource{Name: m.resource}, Target: dataMount}},
		EndpointSettingsModifier: func(eps map[string]*network.EndpointSettings) {
			for k, v := range m.endpoint() {
				if eps[k] == nil {
					eps[k] = v
				} else {
					eps[k].IPAMConfig = v.IPAMConfig
				}
			}
		},
	}
	seed := m.takeSeed()
	c, err := tc.GenericContainer(ctx, tc.GenericContainerRequest{ContainerRequest: req, Started: seed == "", Logger: m.d.logger})
	if c != nil {
		m.mu.Lock()
		m.container = c
		m.mu.Unlock()
	}
	if err == nil && seed != "" {
		if err = m.copySeed(ctx, c.GetContainerID(), seed); err == nil {
			err = c.Start(ctx)
		}
	}
	if err != nil {
		return fmt.Errorf("start container of %s: %w", m.spec.Name, err)
	}
	return nil
}

// note appends a line of the lab's own to the member's log.
func (m *dockerMember) note(s string) {
	if err := os.MkdirAll(filepath.Dir(m.spec.LogPath), 0o755); err != nil {
		return
	}
	if f, err := os.OpenFile(m.spec.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		f.WriteString(s)
		f.Close()
	}
}

// containerLog is the output of the member's current container.
func (m *dockerMember) containerLog(ctx context.Context) string {
	c := m.current()
	if c == nil {
		return ""
	}
	rc, err := c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// remove ends the current container (killing it when kill is set and it still runs), keeps
// its output in the member's log and removes it.
func (m *dockerMember) remove(ctx context.Context, kill bool) error {
	c := m.current()
	if c == nil {
		return nil
	}
	id := c.GetContainerID()
	if kill {
		m.d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		m.d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	}
	m.note(m.containerLog(ctx))
	if _, err := m.d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil && !strings.Contains(err.Error(), "No such container") {
		return fmt.Errorf("remove container of %s: %w", m.spec.Name, err)
	}
	m.mu.Lock()
	m.container = nil
	m.mu.Unlock()
	return nil
}

// Stop implements Member.
func (m *dockerMember) Stop(ctx context.Context) error {
	c := m.current()
	if c == nil {
		return nil
	}
	if m.frozen {
		if err := m.Thaw(ctx); err != nil {
			return err
		}
	}
	timeout := 30 * time.Second
	if err := c.Stop(ctx, &timeout); err != nil {
		return fmt.Errorf("stop %s: %w", m.spec.Name, err)
	}
	return m.remove(ctx, false)
}

// Kill implements Member.
func (m *dockerMember) Kill(ctx context.Context) error {
	m.frozen = false
	return m.remove(ctx, true)
}

func (m *dockerMember) id() (string, error) {
	c := m.current()
	if c == nil {
		return "", fmt.Errorf("member %s is not running", m.spec.Name)
	}
	return c.GetContainerID(), nil
}

// onContainer runs call with the member's container ID, naming the action in its error.
func (m *dockerMember) onContainer(action string, call func(id string) error) error {
	id, err := m.id()
	if err == nil {
		err = call(id)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, m.spec.Name, err)
	}
	return nil
}

// Freeze implements Member: docker pause.
func (m *dockerMember) Freeze(ctx context.Context) error {
	err := m.onContainer("freeze", func(id string) error {
		_, err := m.d.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		return err
	})
	if err == nil {
		m.frozen = true
	}
	return err
}

// Thaw implements Member: docker unpause.
func (m *dockerMember) Thaw(ctx context.Context) error {
	err := m.onContainer("thaw", func(id string) error {
		_, err := m.d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		return err
	})
	if err == nil {
		m.frozen = false
	}
	return err
}

// Partition implements Member: the container leaves the run's network (peers and clients
// lose it alike).
func (m *dockerMember) Partition(ctx context.Context) error {
	err := m.onContainer("partition", func(id string) error {
		_, err := m.d.cli.NetworkDisconnect(ctx, m.d.network.ID, client.NetworkDisconnectOptions{Container: id, Force: true})
		return err
	})
	if err == nil {
		m.partitioned = true
	}
	return err
}

// Heal implements Member: back on the network at the same address.
func (m *dockerMember) Heal(ctx context.Context) error {
	err := m.onContainer("heal", func(id string) error {
		_, err := m.d.cli.NetworkConnect(ctx, m.d.network.ID, client.NetworkConnectOptions{Container: id, EndpointConfig: m.endpoint()[m.d.network.Name]})
		return err
	})
	if err == nil {
		m.partitioned = false
	}
	return err
}

// Running implements Member.
func (m *dockerMember) Running(ctx context.Context) bool {
	c := m.current()
	if c == nil {
		return false
	}
	st, err := c.State(ctx)
	return err == nil && (st.Running || st.Paused)
}

// exited reports how the container ended, or nil while it runs.
func (m *dockerMember) exited(ctx context.Context) error {
	c := m.current()
	if c == nil {
		return fmt.Errorf("member %s has no container", m.spec.Name)
	}
	st, err := c.State(ctx)
	if err != nil {
		return nil // the engine did not answer this time; the health probe goes on
	}
	if st.Status == "exited" || st.Status == "dead" {
		return fmt.Errorf("container exited with status %d", st.ExitCode)
	}
	return nil
}

// WaitHealthy implements Member.
func (m *dockerMember) WaitHealthy(ctx context.Context) error {
	return cluster.WaitHealthy(ctx, cluster.PlainHTTP, m.ClientURL(), func() error { return m.exited(ctx) })
}

// WaitExit implements Member.
func (m *dockerMember) WaitExit(ctx context.Context) error {
	for {
		if m.exited(ctx) != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %s still running: %w", m.spec.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Versions implements Member.
func (m *dockerMember) Versions(ctx context.Context) (cluster.Versions, error) {
	return cluster.GetVersions(ctx, cluster.PlainHTTP, m.ClientURL())
}

// Metrics implements Member.
func (m *dockerMember) Metrics(ctx context.Context) (cluster.Metrics, error) {
	return cluster.GetMetrics(ctx, cluster.PlainHTTP, m.ClientURL())
}

// Log implements Member: the output of earlier containers, then the current one's.
func (m *dockerMember) Log(ctx context.Context) string {
	b, _ := os.ReadFile(m.spec.LogPath)
	return string(b) + m.containerLog(ctx)
}
