package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// blockedForms is every address form the default policy refuses, with
// a word its range's name must contain.
var blockedForms = []struct{ addr, want string }{
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "this network"},
	{"10.1.2.3", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"192.168.1.1", "private"},
	{"100.64.0.1", "CGNAT"},
	{"100.127.255.254", "CGNAT"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"169.254.169.254", "link-local"},
	{"192.0.0.8", "IETF"},
	{"192.0.2.1", "documentation"},
	{"198.51.100.7", "documentation"},
	{"203.0.113.9", "documentation"},
	{"192.88.99.1", "6to4 relay"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.1", "benchmarking"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::127.0.0.1", "IPv4-compatible"},
	{"::ffff:127.0.0.1", "IPv4-mapped IPv6 of loopback"},
	{"::ffff:10.0.0.1", "IPv4-mapped IPv6 of private"},
	{"::ffff:169.254.169.254", "IPv4-mapped IPv6 of link-local"},
	{"::ffff:0.0.0.0", "IPv4-mapped IPv6 of unspecified"},
	{"::ffff:0:10.0.0.1", "reserved"}, // SIIT IPv4-translated
	{"64:ff9b::127.0.0.1", "NAT64 (64:ff9b::/96) of loopback"},
	{"64:ff9b::a00:1", "NAT64 (64:ff9b::/96) of private"},
	{"64:ff9b::c0a8:101", "NAT64 (64:ff9b::/96) of private"},
	{"64:ff9b:1::8.8.8.8", "NAT64 local-use"},
	{"2002:7f00:1::", "6to4 (2002::/16) of loopback"},
	{"2002:a00:1::1", "6to4 (2002::/16) of private"},
	{"2002:a9fe:a9fe::1", "6to4 (2002::/16) of link-local"},
	{"2001::1", "Teredo"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
	{"2001:2::1", "IETF"},
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"100::1", "discard"},
	{"fc00::1", "unique local"},
	{"fd12:3456::1", "unique local"},
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"fec0::1", "site-local"},
	{"ff02::1", "multicast"},
	{"ff0e::1", "multicast"},
}

// allowedForms are ordinary global unicast addresses (never dialed).
var allowedForms = []string{
	"8.8.8.8", "1.1.1.1", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
	"192.167.255.255", "198.17.255.255", "198.20.0.0", "223.255.255.255",
	"2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
}

func TestBlockedRanges(t *testing.T) {
	var p AddressPolicy
	for _, c := range blockedForms {
		a := netip.MustParseAddr(c.addr)
		r := BlockedRange(a)
		if !strings.Contains(r, c.want) {
			t.Errorf("BlockedRange(%s) = %q, want it to name %q", c.addr, r, c.want)
		}
		var be *BlockedAddressError
		if err := p.CheckAddr(a); !errors.As(err, &be) || !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("CheckAddr(%s) = %v, want a BlockedAddressError", c.addr, err)
		}
		if err := p.Control("tcp", netip.AddrPortFrom(a, 443).String(), nil); !errors.As(err, &be) {
			t.Errorf("Control(%s) = %v, want a BlockedAddressError", c.addr, err)
		}
		host := c.addr
		if a.Is6() {
			host = "[" + strings.Replace(host, "%", "%25", 1) + "]"
		}
		u, err := url.Parse("https://" + host + ":8443/hook")
		if err != nil {
			t.Fatalf("url %s: %v", host, err)
		}
		if err := p.CheckURL(u); !errors.As(err, &be) {
			t.Errorf("CheckURL(%s) = %v, want a BlockedAddressError", u, err)
		}
	}
	for _, s := range allowedForms {
		a := netip.MustParseAddr(s)
		if r := BlockedRange(a); r != "" {
			t.Errorf("BlockedRange(%s) = %q, want allowed", s, r)
		}
		if err := p.Control("tcp4", netip.AddrPortFrom(a, 443).String(), nil); err != nil {
			t.Errorf("Control(%s) = %v", s, err)
		}
	}
}

func TestAllowList(t *testing.T) {
	p := AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("fd00:1::/64")}}
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "::ffff:127.0.0.1", "fd00:1::5"} {
		if err := p.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("allowed %s: %v", s, err)
		}
	}
	for _, s := range []string{"::1", "10.0.0.1", "fd00:2::5", "64:ff9b::127.0.0.1"} {
		if err := p.CheckAddr(netip.MustParseAddr(s)); err == nil {
			t.Errorf("%s allowed by %v", s, p.Allow)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, c := range []struct {
		url       string
		httpsOnly bool
		want      error
	}{
		{"https://example.com/hook", false, nil},
		{"http://example.com/hook", false, nil},
		{"http://example.com/hook", true, ErrBadURL},
		{"HTTPS://example.com/hook", true, nil},
		{"ftp://example.com/", false, ErrBadURL},
		{"file:///etc/passwd", false, ErrBadURL},
		{"gopher://127.0.0.1:25/", false, ErrBadURL},
		{"/relative", false, ErrBadURL},
		{"https:///nohost", false, ErrBadURL},
		{"http://2130706433/", false, ErrBadURL},
		{"http://0x7f000001/", false, ErrBadURL},
		{"http://127.1/", false, ErrBadURL},
		{"http://0177.0.0.1/", false, ErrBadURL},
		{"http://10.0.0.1./", false, ErrBadURL},
		{"http://8.8.8.8/", false, nil},
		{"http://[::ffff:127.0.0.1]/", false, ErrBlockedAddress},
		{"http://169.254.169.254/latest/meta-data/", false, ErrBlockedAddress},
		{"https://api.2024.example/", false, nil},
		{"https://deadbeef.example/", false, nil},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		p := AddressPolicy{HTTPSOnly: c.httpsOnly}
		if err := p.CheckURL(u); !errors.Is(err, c.want) {
			t.Errorf("CheckURL(%s, httpsOnly=%v) = %v, want %v", c.url, c.httpsOnly, err, c.want)
		}
	}
}

// fakeDNS answers every A query with a4 and every AAAA query with a6
// (none when invalid), on a UDP socket of 127.0.0.1. It returns a
// resolver that asks it and nothing else.
func fakeDNS(t *testing.T, a4, a6 netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RecursionAvailable: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
			switch {
			case q.Type == dnsmessage.TypeA && a4.IsValid():
				b.AResource(rh, dnsmessage.AResource{A: a4.As4()})
			case q.Type == dnsmessage.TypeAAAA && a6.IsValid():
				b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a6.As16()})
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// TestClientRefusesResolvedAddress: a host name that resolves to a
// blocked address is refused at connect time, before any request is
// sent, and the error says which address and range. The names resolve
// only to loopback forms (Linux routes 0.0.0.0 to loopback too), so a
// broken policy would reach the local test server, never the network.
func TestClientRefusesResolvedAddress(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name   string
		a4, a6 netip.Addr
		want   string
	}{
		{"A 127.0.0.1", netip.MustParseAddr("127.0.0.1"), netip.Addr{}, "loopback"},
		{"A 127.0.0.2", netip.MustParseAddr("127.0.0.2"), netip.Addr{}, "loopback"},
		{"A 0.0.0.0", netip.MustParseAddr("0.0.0.0"), netip.Addr{}, "unspecified"},
		{"AAAA ::ffff:127.0.0.1", netip.Addr{}, netip.MustParseAddr("::ffff:127.0.0.1"), "loopback"}, // Go's resolver unmaps it
	} {
		p := AddressPolicy{Resolver: fakeDNS(t, c.a4, c.a6)}
		client := p.Client(5 * time.Second)
		_, err := client.Get("http://rebind.test:" + strconv.Itoa(port) + "/")
		var be *BlockedAddressError
		if !errors.As(err, &be) || !strings.Contains(be.Range, c.want) {
			t.Errorf("%s: Get = %v, want a BlockedAddressError naming %q", c.name, err, c.want)
		}
		client.CloseIdleConnections()
	}
	// localhost, through the system's resolver.
	_, err := AddressPolicy{}.Client(5 * time.Second).Get("http://localhost:" + strconv.Itoa(port) + "/")
	if !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("Get localhost = %v, want ErrBlockedAddress", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("blocked requests reached the server %d times", hits.Load())
	}
}

// TestClientAllowListAndRedirects: an allowlisted 127.0.0.1 is reached,
// through a host name too, and a redirect is returned, not followed.
func TestClientAllowListAndRedirects(t *testing.T) {
	var followed atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { followed.Store(true) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	p := AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Resolver: fakeDNS(t, netip.MustParseAddr("127.0.0.1"), netip.Addr{})}
	client := p.Client(5 * time.Second)
	defer client.CloseIdleConnections()
	for _, u := range []string{srv.URL + "/ok", "http://hooks.test:" + port + "/ok"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("Get %s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("Get %s = %q", u, b)
		}
	}
	resp, err := client.Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || followed.Load() {
		t.Fatalf("redirect: status %d, followed %v; want 302 returned and not followed", resp.StatusCode, followed.Load())
	}
	if tr := p.Transport(); tr.Proxy != nil {
		t.Fatal("Transport uses a proxy")
	}
}

// TestClientCapsResponseHeaders: Client reads at most
// MaxResponseHeaderBytes of response headers, over HTTP/1.1 and HTTP/2: a
// receiver sending more makes the request fail; one just under is read.
func TestClientCapsResponseHeaders(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("X-Big", strings.Repeat("a", n))
	})
	for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
		srv := httptest.NewUnstartedServer(h)
		if proto == "HTTP/2.0" {
			srv.EnableHTTP2 = true
			srv.StartTLS()
		} else {
			srv.Start()
		}
		p := AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
		c := p.Client(5 * time.Second)
		if proto == "HTTP/2.0" {
			tr := c.Transport.(*http.Transport)
			tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
		}
		resp, err := c.Get(srv.URL + "?n=" + strconv.Itoa(MaxResponseHeaderBytes/2))
		if err != nil || resp.Proto != proto || len(resp.Header.Get("X-Big")) != MaxResponseHeaderBytes/2 {
			t.Errorf("%s: headers of %d bytes: %v, %+v", proto, MaxResponseHeaderBytes/2, err, resp)
		}
		if err == nil {
			resp.Body.Close()
		}
		resp, err = c.Get(srv.URL + "?n=" + strconv.Itoa(2*MaxResponseHeaderBytes))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: headers of %d bytes read, want the request to fail", proto, 2*MaxResponseHeaderBytes)
		}
		srv.Close()
	}
}
