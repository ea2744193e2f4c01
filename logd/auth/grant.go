package auth

import (
	"fmt"
	"strings"
)

// Operation is what a grant allows; see the package documentation.
type Operation uint8

// The operations a grant can allow.
const (
	Produce Operation = 1 << iota
	Consume
	Group
	Admin
)

var opNames = []struct {
	op   Operation
	name string
}{{Produce, "produce"}, {Consume, "consume"}, {Group, "group"}, {Admin, "admin"}}

func (o Operation) String() string {
	for _, n := range opNames {
		if n.op == o {
			return n.name
		}
	}
	return fmt.Sprintf("Operation(%d)", uint8(o))
}

// AnyName is the prefix that matches every name.
const AnyName = "*"

// Grant allows one operation on every name that starts with Prefix
// (every name for AnyName).
type Grant struct {
	Op     Operation
	Prefix string
}

// maxPrefix bounds a grant's prefix: Kafka topic names are at most 249
// bytes; group names have no limit, but a longer prefix is a mistake.
const maxPrefix = 1024

// ParseGrant parses OPERATION:PREFIX, e.g. "produce:orders." or
// "consume:*".
func ParseGrant(s string) (Grant, error) {
	opName, prefix, ok := strings.Cut(s, ":")
	if !ok {
		return Grant{}, fmt.Errorf("%w %q: want OPERATION:PREFIX (operation produce, consume, group or admin; prefix * for every name)", ErrBadGrant, s)
	}
	var g Grant
	for _, n := range opNames {
		if n.name == opName {
			g.Op = n.op
		}
	}
	switch {
	case g.Op == 0:
		return Grant{}, fmt.Errorf("%w %q: unknown operation %q (want produce, consume, group or admin)", ErrBadGrant, s, opName)
	case prefix == "":
		return Grant{}, fmt.Errorf("%w %q: empty prefix (write * for every name)", ErrBadGrant, s)
	case len(prefix) > maxPrefix:
		return Grant{}, fmt.Errorf("%w: prefix longer than %d bytes", ErrBadGrant, maxPrefix)
	}
	g.Prefix = prefix
	return g, nil
}

func (g Grant) String() string { return g.Op.String() + ":" + g.Prefix }

func (g Grant) matches(op Operation, name string) bool {
	return g.Op == op && (g.Prefix == AnyName || strings.HasPrefix(name, g.Prefix))
}

// Allowed reports whether one of the user's grants allows op on name (a
// topic, or a group for Group).
func (u *User) Allowed(op Operation, name string) bool {
	for _, g := range u.Grants {
		if g.matches(op, name) {
			return true
		}
	}
	return false
}

// SeesTopic reports whether the user holds any grant on topic, which
// lets them see it in Metadata and read its configs.
func (u *User) SeesTopic(topic string) bool {
	return u.Allowed(Produce, topic) || u.Allowed(Consume, topic) || u.Allowed(Admin, topic)
}

// Holds reports whether the user has any grant of op, on any name.
func (u *User) Holds(op Operation) bool {
	for _, g := range u.Grants {
		if g.Op == op {
			return true
		}
	}
	return false
}
