package multicast

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// iface resolves the interface to use and its first IPv4 address.
func iface(name string) (*net.Interface, netip.Addr, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, netip.Addr{}, badConfig("Interface", name, "no such network interface")
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("multicast: interface %q: %w", name, err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && ip.Unmap().Is4() {
				return ifi, ip.Unmap(), nil
			}
		}
	}
	return nil, netip.Addr{}, badConfig("Interface", name, "has no IPv4 address to send and join on")
}

// listenUDP opens a UDP socket on addr, with control (nil: none) run on
// it before it binds: reuseAddr lets several subscribers of a group
// share its port, reusePort joins the port's reuseport group
// (sendsock_linux.go).
func listenUDP(ctx context.Context, addr netip.AddrPort, control func(network, address string, c syscall.RawConn) error) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: control}
	pc, err := lc.ListenPacket(ctx, "udp4", addr.String())
	if err != nil {
		return nil, fmt.Errorf("multicast: listen %v: %w", addr, err)
	}
	return pc.(*net.UDPConn), nil
}

// reuseAddr sets SO_REUSEADDR.
var reuseAddr = socketOption(unix.SO_REUSEADDR)

// socketOption is a listenUDP control that turns on the SOL_SOCKET
// option opt.
func socketOption(opt int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, 1)
		}); err != nil {
			return err
		}
		return serr
	}
}

// bufferSizes sets SO_RCVBUF and SO_SNDBUF, reads back what the kernel
// granted, and warns when it clamped the request.
func bufferSizes(c *net.UDPConn, recv, send int, log *slog.Logger) (gotRecv, gotSend int) {
	if recv > 0 {
		_ = c.SetReadBuffer(recv)
	}
	if send > 0 {
		_ = c.SetWriteBuffer(send)
	}
	gotRecv, gotSend = sockBuf(c, unix.SO_RCVBUF), sockBuf(c, unix.SO_SNDBUF)
	if recv > 0 && gotRecv < recv {
		log.Warn("multicast: kernel clamped the receive buffer; raise net.core.rmem_max", "requested", recv, "granted", gotRecv)
	}
	if send > 0 && gotSend < send {
		log.Warn("multicast: kernel clamped the send buffer; raise net.core.wmem_max", "requested", send, "granted", gotSend)
	}
	return gotRecv, gotSend
}

// sockBuf reads a socket buffer size. Linux reports twice the usable
// size (it counts its bookkeeping); we report the usable size.
func sockBuf(c *net.UDPConn, opt int) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var v int
	_ = rc.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) })
	return v / 2
}

// setupSender makes c send multicast on ifi.
func setupSender(c *net.UDPConn, ifi *net.Interface, cfg *Config) error {
	p := ipv4.NewPacketConn(c)
	if err := p.SetMulticastInterface(ifi); err != nil {
		return fmt.Errorf("multicast: IP_MULTICAST_IF %s: %w", ifi.Name, err)
	}
	if err := p.SetMulticastTTL(cfg.TTL); err != nil {
		return fmt.Errorf("multicast: IP_MULTICAST_TTL: %w", err)
	}
	if err := p.SetMulticastLoopback(!cfg.NoLoopback); err != nil {
		return fmt.Errorf("multicast: IP_MULTICAST_LOOP: %w", err)
	}
	return nil
}

// join subscribes c to the group on ifi.
func join(c *net.UDPConn, ifi *net.Interface, group netip.Addr) error {
	p := ipv4.NewPacketConn(c)
	if err := p.JoinGroup(ifi, &net.UDPAddr{IP: group.AsSlice()}); err != nil {
		return fmt.Errorf("multicast: join %v on %s: %w", group, ifi.Name, err)
	}
	return nil
}
