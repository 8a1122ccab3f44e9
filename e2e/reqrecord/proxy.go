package reqrecord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// frame is one gRPC message, kept as the bytes on the wire so nothing is re-encoded.
type frame struct{ b []byte }

// rawCodec passes frames through; it is named "proto" so both sides see the usual content type.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("reqrecord: cannot marshal %T", v)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("reqrecord: cannot unmarshal into %T", v)
	}
	f.b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// Proxy listens on a loopback port and forwards to one member's client URL.
type Proxy struct {
	lis     net.Listener
	srv     *grpc.Server
	backend *grpc.ClientConn
	rec     *Recorder
}

// Start serves on a free loopback port, forwarding to target ("127.0.0.1:2379"); every call is
// recorded into rec.
func Start(target string, rec *Recorder) (*Proxy, error) {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		return nil, fmt.Errorf("reqrecord: dial %s: %w", target, err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("reqrecord: listen: %w", err)
	}
	p := &Proxy{lis: lis, backend: conn, rec: rec}
	p.srv = grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(p.forward),
		grpc.MaxRecvMsgSize(1<<30), grpc.MaxSendMsgSize(1<<30))
	go p.srv.Serve(lis)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// Close stops serving (open streams end) and closes the connection to the member.
func (p *Proxy) Close() {
	p.srv.Stop()
	p.backend.Close()
}

// forwarded metadata: what etcd's clients send that the member reads (auth token, the
// require-leader flag of watches); gRPC's own headers are set again by the outgoing stream.
func forwardedMetadata(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || k == "content-type" || k == "user-agent" || k == "te" || strings.HasPrefix(k, "grpc-") {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

// forward pumps one call's messages both ways, recording each.
func (p *Proxy) forward(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return status.Error(codes.Internal, "reqrecord: no method")
	}
	md, _ := metadata.FromIncomingContext(ss.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), forwardedMetadata(md)))
	defer cancel()
	cs, err := p.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return err
	}
	call := p.rec.begin(method)
	// Requests flow up until the client ends its side or the stream fails; the answer loop
	// below reports how the call ended.
	go func() {
		for {
			f := &frame{}
			if err := ss.RecvMsg(f); err != nil {
				cs.CloseSend()
				return
			}
			call.request(f.b)
			if err := cs.SendMsg(f); err != nil {
				return
			}
		}
	}()
	headerSent := false
	for {
		f := &frame{}
		err := cs.RecvMsg(f)
		if !headerSent {
			if h, herr := cs.Header(); herr == nil {
				ss.SendHeader(h)
			}
			headerSent = true
		}
		if err != nil {
			ss.SetTrailer(cs.Trailer())
			if errors.Is(err, io.EOF) {
				call.end(nil)
				return nil
			}
			call.end(err)
			return err
		}
		call.answer(f.b)
		if err := ss.SendMsg(f); err != nil {
			call.end(err)
			return err
		}
	}
}

// Recorder keeps every call the proxies it serves forwarded, in order of their start.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	calls []*Call
}

// NewRecorder starts the clock the calls' times count from.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Mark notes the time a phase of the recorded run starts (e.g. "steady"); calls that start at
// or after it belong to it.
func (r *Recorder) Mark(phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, &Call{At: time.Since(r.start), Method: "phase", Phase: phase})
}

// Elapsed is the time since the recorder started.
func (r *Recorder) Elapsed() time.Duration { return time.Since(r.start) }

// Calls returns what was recorded so far (each call's fields are final once it ended).
func (r *Recorder) Calls() []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Call(nil), r.calls...)
}

func (r *Recorder) begin(fullMethod string) *call {
	c := &Call{At: time.Since(r.start), Method: fullMethod[strings.LastIndex(fullMethod, "/")+1:]}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return &call{r: r, c: c, began: time.Now()}
}

// call is one forwarded call while it runs; streams (Watch, LeaseKeepAlive) record every
// message of theirs as its own Message.
type call struct {
	r     *Recorder
	c     *Call
	began time.Time
	mu    sync.Mutex
}

func (c *call) request(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Requests = append(c.c.Requests, describeRequest(c.c.Method, b, time.Since(c.r.start)))
}

func (c *call) answer(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Answers = append(c.c.Answers, describeAnswer(c.c.Method, b, time.Since(c.r.start)))
}

func (c *call) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Took = time.Since(c.began)
	if err != nil {
		c.c.Err = status.Code(err).String()
	}
}
