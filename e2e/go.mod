module etcdx/e2e

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/nix-community/go-nix v0.0.0-20250101154619-4bdde671e0a1
	github.com/soheilhy/cmux v0.1.5
	go.etcd.io/bbolt v1.4.3
	go.etcd.io/etcd/api/v3 v3.6.16
	go.etcd.io/etcd/client/v3 v3.6.16
	go.etcd.io/etcd/server/v3 v3.6.16
	go.opentelemetry.io/proto/otlp v1.11.0
	go.uber.org/zap v1.28.0
	golang.org/x/net v0.61.0
	golang.org/x/sys v0.50.0
	gonum.org/v1/gonum v0.17.0
	gonum.org/v1/plot v0.17.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.5.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.32.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.etcd.io/etcd/client/pkg/v3 v3.6.16 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/image v0.48.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261012220534-4341edf3f941 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261005182115-fad411399dd8 // indirect
)
