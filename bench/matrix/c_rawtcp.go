package matrix

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

// rawTCP is the stream baseline: each message a 4-byte length and its
// payload, written through a 64 KiB buffer to one connection per
// subscriber (flushed when the publisher is ahead of its schedule).
type rawTCP struct{}

func (rawTCP) Name() string     { return "raw-tcp" }
func (rawTCP) Baseline() string { return "" }
func (rawTCP) Peer() string     { return "" }

func (rawTCP) Can(o Options) error {
	if o.Loss > 0 {
		return errTCPLoss
	}
	return nil
}

var errTCPLoss = fmt.Errorf("%w: TCP repairs loss below the application", ErrNotApplicable)

type rawTCPLink struct {
	ws    []*bufio.Writer
	conns []net.Conn
	subs  []Sub
	head  [4]byte
}

func (rawTCP) Open(ctx context.Context, o Options) (Link, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	l := &rawTCPLink{}
	var d net.Dialer
	for range o.Subscribers {
		c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
		if err != nil {
			l.Close()
			return nil, err
		}
		s, err := ln.Accept()
		if err != nil {
			c.Close()
			l.Close()
			return nil, err
		}
		l.conns = append(l.conns, c, s)
		l.ws = append(l.ws, bufio.NewWriterSize(s, 64<<10))
		l.subs = append(l.subs, &tcpSub{c: c})
	}
	return l, nil
}

func (l *rawTCPLink) Send(p []byte) error {
	binary.LittleEndian.PutUint32(l.head[:], uint32(len(p)))
	for _, w := range l.ws {
		w.Write(l.head[:])
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func (l *rawTCPLink) Flush() error {
	for _, w := range l.ws {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func (l *rawTCPLink) Subs() []Sub { return l.subs }

func (l *rawTCPLink) Close() error {
	for _, c := range l.conns {
		c.Close()
	}
	return nil
}

type tcpSub struct{ c net.Conn }

func (s *tcpSub) Run(ctx context.Context, fn func([]byte)) error {
	stop := context.AfterFunc(ctx, func() { s.c.Close() })
	defer stop()
	r := bufio.NewReaderSize(s.c, 64<<10)
	var head [4]byte
	buf := make([]byte, 0, 1024)
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		n := int(binary.LittleEndian.Uint32(head[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		fn(buf[:n])
	}
}

func (s *tcpSub) Counts() Counts { return Counts{} }
