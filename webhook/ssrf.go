package webhook

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// AddressPolicy says which addresses a dispatcher may connect to. The
// zero policy refuses every address that is not global unicast (see
// BlockedRange) and allows http and https.
//
// The check that matters is Control, run by the dialer on the address
// the connection is about to use, after DNS resolution: a hostname that
// resolves (or re-resolves, DNS rebinding) to a blocked address is
// refused before any packet is sent to it. CheckURL is the early check
// made when an endpoint is created, for a clear error at that time.
type AddressPolicy struct {
	// Allow lists prefixes that are allowed even though they are in a
	// blocked range (127.0.0.0/8 for tests and demos, an internal
	// network for a private deployment). An IPv4-mapped IPv6 address is
	// allowed when its IPv4 address is.
	Allow []netip.Prefix
	// HTTPSOnly refuses http:// URLs in CheckURL.
	HTTPSOnly bool
	// Resolver resolves host names for Transport and Client; nil means
	// net.DefaultResolver.
	Resolver *net.Resolver
}

// blockedRange is one range refused by default, with its name.
type blockedRange struct {
	prefix netip.Prefix
	name   string
}

func mustRanges(pairs ...string) []blockedRange {
	out := make([]blockedRange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, blockedRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// blocked4 and blocked6 are the special-purpose ranges of the IANA IPv4
// and IPv6 registries that are not reachable, globally routed unicast.
// The first match names the range, so narrower ranges come first.
var (
	blocked4 = mustRanges(
		"0.0.0.0/32", "unspecified",
		"0.0.0.0/8", "this network (0.0.0.0/8)",
		"10.0.0.0/8", "private (10.0.0.0/8)",
		"100.64.0.0/10", "CGNAT shared (100.64.0.0/10)",
		"127.0.0.0/8", "loopback",
		"169.254.0.0/16", "link-local",
		"172.16.0.0/12", "private (172.16.0.0/12)",
		"192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)",
		"192.0.2.0/24", "documentation (192.0.2.0/24)",
		"192.88.99.0/24", "6to4 relay anycast (192.88.99.0/24)",
		"192.168.0.0/16", "private (192.168.0.0/16)",
		"198.18.0.0/15", "benchmarking (198.18.0.0/15)",
		"198.51.100.0/24", "documentation (198.51.100.0/24)",
		"203.0.113.0/24", "documentation (203.0.113.0/24)",
		"224.0.0.0/4", "multicast",
		"255.255.255.255/32", "broadcast",
		"240.0.0.0/4", "reserved (240.0.0.0/4)",
	)
	blocked6 = mustRanges(
		"::/128", "unspecified",
		"::1/128", "loopback",
		"::/96", "IPv4-compatible (::/96, deprecated)",
		"64:ff9b:1::/48", "NAT64 local-use (64:ff9b:1::/48)",
		"::/8", "reserved (::/8)",
		"100::/64", "discard-only (100::/64)",
		"2001::/32", "Teredo (2001::/32)",
		"2001::/23", "IETF protocol assignments (2001::/23)",
		"2001:db8::/32", "documentation (2001:db8::/32)",
		"3fff::/20", "documentation (3fff::/20)",
		"fc00::/7", "unique local (fc00::/7)",
		"fe80::/10", "link-local",
		"fec0::/10", "site-local (fec0::/10, deprecated)",
		"ff00::/8", "multicast",
	)
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// BlockedRange names the blocked range addr falls in, or returns "" when
// addr is an ordinary global unicast address. IPv6 forms that carry an
// IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d, 6to4
// 2002:AABB:CCDD::) are judged by that IPv4 address. The allowlist of a
// policy is not consulted: see AddressPolicy.CheckAddr.
func BlockedRange(addr netip.Addr) string {
	addr = addr.WithZone("")
	if !addr.IsValid() {
		return "invalid"
	}
	if addr.Is4In6() {
		if r := BlockedRange(addr.Unmap()); r != "" {
			return "IPv4-mapped IPv6 of " + r
		}
		return ""
	}
	if addr.Is4() {
		return find(blocked4, addr)
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		if r := BlockedRange(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return "NAT64 (64:ff9b::/96) of " + r
		}
		return ""
	}
	if sixTo4.Contains(addr) {
		b := addr.As16()
		if r := BlockedRange(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return "6to4 (2002::/16) of " + r
		}
		return ""
	}
	if r := find(blocked6, addr); r != "" {
		return r
	}
	if !addr.IsGlobalUnicast() {
		return "not global unicast"
	}
	return ""
}

func find(ranges []blockedRange, addr netip.Addr) string {
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.name
		}
	}
	if !addr.IsGlobalUnicast() {
		return "not global unicast"
	}
	return ""
}

// allowed reports whether addr (or, for an IPv4-mapped address, its IPv4
// address) is in p.Allow.
func (p AddressPolicy) allowed(addr netip.Addr) bool {
	for _, pre := range p.Allow {
		if pre.Contains(addr) || (addr.Is4In6() && pre.Contains(addr.Unmap())) {
			return true
		}
	}
	return false
}

// CheckAddr returns nil when p allows connecting to addr, or a
// *BlockedAddressError naming the range that refuses it.
func (p AddressPolicy) CheckAddr(addr netip.Addr) error {
	addr = addr.WithZone("")
	if p.allowed(addr) {
		return nil
	}
	if r := BlockedRange(addr); r != "" {
		return &BlockedAddressError{Addr: addr, Range: r}
	}
	return nil
}

// CheckURL checks an endpoint URL before it is stored: an absolute http
// or https URL (https only when HTTPSOnly is set) with a host; a host
// that is an IP literal must be allowed (CheckAddr); a host whose last
// label is numeric or hexadecimal ("2130706433", "0x7f.1", "127.1") is
// refused, since resolvers differ on whether such names are addresses. A
// host name is not resolved here: Control checks what it resolves to at
// each connection. Errors wrap ErrBadURL or ErrBlockedAddress.
func (p AddressPolicy) CheckURL(u *url.URL) error {
	if u == nil {
		return fmt.Errorf("%w: no URL", ErrBadURL)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && !p.HTTPSOnly:
	case scheme == "http":
		return fmt.Errorf("%w: %s: only https is allowed", ErrBadURL, u.Redacted())
	default:
		return fmt.Errorf("%w: %s: scheme must be http or https", ErrBadURL, u.Redacted())
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: %s: no host", ErrBadURL, u.Redacted())
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(addr); err != nil {
			e := err.(*BlockedAddressError)
			e.Host = host
			return e
		}
		return nil
	}
	if strings.Contains(host, "%") {
		return fmt.Errorf("%w: %s: bad host %q", ErrBadURL, u.Redacted(), host)
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if numericLabel(labels[len(labels)-1]) {
		return fmt.Errorf("%w: %s: host %q looks like a non-standard IPv4 address", ErrBadURL, u.Redacted(), host)
	}
	return nil
}

// numericLabel reports whether a DNS label is all decimal digits or a
// 0x-prefixed hexadecimal number, which inet_aton reads as part of an
// IPv4 address and no top-level domain can be.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	digits := l
	hex := false
	if len(l) > 2 && (l[:2] == "0x" || l[:2] == "0X") {
		digits, hex = l[2:], true
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// Control is a net.Dialer Control function: it refuses, before the
// connection is made, a TCP connection to an address p does not allow.
// The dialer calls it with the resolved address, for every address it
// tries, so DNS rebinding cannot slip a blocked address past it. The
// error is a *BlockedAddressError (wrapped by net.OpError and url.Error
// on its way out of an http.Client).
func (p AddressPolicy) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return &BlockedAddressError{Host: address, Range: "network " + network}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedAddressError{Host: address, Range: "unparseable address"}
	}
	if err := p.CheckAddr(ap.Addr()); err != nil {
		return err
	}
	return nil
}

// Dialer is a net.Dialer whose connections p checks (Control), using
// p.Resolver.
func (p AddressPolicy) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Resolver:  p.Resolver,
		Control:   p.Control,
	}
}

// MaxResponseHeaderBytes caps the response headers Transport reads (a
// receiver is an untrusted party; net/http's default is 10 MB): a
// response with more fails the request.
const MaxResponseHeaderBytes = 64 << 10

// Transport is an http.Transport that dials through Dialer (so every
// connection is checked after resolution), uses no proxy (a proxy from
// the environment would connect on the dispatcher's behalf, unchecked),
// reads at most MaxResponseHeaderBytes of response headers, and speaks
// HTTP/1.1 and HTTP/2.
func (p AddressPolicy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		DialContext:            p.Dialer().DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
	}
}

// Client is an http.Client on Transport with the given overall timeout
// per request (0: none) that never follows a redirect: a 3xx response is
// returned as it is (a redirect could lead anywhere, and Standard
// Webhooks counts 3xx as a failed delivery).
func (p AddressPolicy) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     p.Transport(),
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
