package auth

import (
	"errors"
	"testing"
)

func TestParseGrant(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Grant
	}{
		{"produce:orders.", Grant{Produce, "orders."}},
		{"consume:*", Grant{Consume, AnyName}},
		{"group:billing-", Grant{Group, "billing-"}},
		{"admin:a:b", Grant{Admin, "a:b"}},
	} {
		g, err := ParseGrant(c.in)
		if err != nil || g != c.want || g.String() != c.in {
			t.Errorf("ParseGrant(%q) = %v, %v", c.in, g, err)
		}
	}
	for _, in := range []string{"", "produce", "produce:", "write:x", "Produce:x", ":x"} {
		if _, err := ParseGrant(in); !errors.Is(err, ErrBadGrant) {
			t.Errorf("ParseGrant(%q): %v, want ErrBadGrant", in, err)
		}
	}
}

func TestAllowed(t *testing.T) {
	u := &User{Name: "u", Grants: []Grant{{Produce, "orders."}, {Consume, "orders."}, {Consume, "audit"}, {Group, AnyName}}}
	for _, c := range []struct {
		op   Operation
		name string
		want bool
	}{
		{Produce, "orders.eu", true},
		{Produce, "orders.", true},
		{Produce, "orders", false},
		{Produce, "audit", false},
		{Consume, "audit", true},
		{Consume, "auditor", true},
		{Consume, "aud", false},
		{Group, "anything", true},
		{Admin, "orders.eu", false},
	} {
		if got := u.Allowed(c.op, c.name); got != c.want {
			t.Errorf("Allowed(%v, %q) = %v", c.op, c.name, got)
		}
	}
	if !u.SeesTopic("audit.x") || u.SeesTopic("other") {
		t.Error("SeesTopic")
	}
	if !u.Holds(Produce) || u.Holds(Admin) {
		t.Error("Holds")
	}
}
