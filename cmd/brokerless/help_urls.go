package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/brokerless/brokerless/transport"
)

var helpURLsCmd = command{
	name:     "help urls",
	summary:  "every transport URL scheme, with its parameters and what it guarantees",
	synopsis: "",
	about: `
Lists every URL scheme that pub, sub and pipe take: the shape of its URLs,
what the transport guarantees (its semantics flags, then in words), every
parameter with its values and default, and examples. A URL with a
parameter its scheme does not list is refused.`,
	examples: `
brokerless help urls
brokerless help urls | less`,
	run: runHelpURLs,
}

func runHelpURLs(_ context.Context, inv *invocation) error {
	if err := inv.parse(inv.flags()); err != nil {
		return err
	}
	fmt.Fprint(inv.out, "Transport URLs, for brokerless pub, sub and pipe.\n\n"+
		"One URL names both ends of a feed, so the same URL serves pub and sub:\n"+
		"a parameter only one end uses (a publisher's linger, a subscriber's join,\n"+
		"group or loss) is accepted and ignored by the other end.\n")
	for _, name := range transport.Schemes() {
		s, _ := transport.Describe(name)
		writeScheme(inv.out, &s)
	}
	return nil
}

// writeScheme prints what a scheme registered.
func writeScheme(w io.Writer, s *transport.Scheme) {
	fmt.Fprintf(w, "\n%s:// — %s\n  %s\n", s.Name, s.Summary, s.Form)
	fmt.Fprintf(w, "\n  Semantics: %v\n%s\n", s.Semantics, indent(strings.TrimSpace(s.Notes), "  "))
	if len(s.Params) > 0 {
		fmt.Fprint(w, "\n  Parameters:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, p := range s.Params {
			fmt.Fprintf(tw, "    %s=%s\t%s\n", p.Name, p.Value, p.Doc)
		}
		tw.Flush()
	}
	if len(s.SourceDefaults) > 0 {
		var kv []string
		for _, p := range s.Params {
			if v, ok := s.SourceDefaults[p.Name]; ok {
				kv = append(kv, p.Name+"="+v)
			}
		}
		fmt.Fprintf(w, "\n  As the FROM of a pipe, unless the URL says otherwise: %s\n", strings.Join(kv, "&"))
	}
	if len(s.Examples) > 0 {
		fmt.Fprint(w, "\n  Examples:\n")
		for _, e := range s.Examples {
			fmt.Fprintf(w, "    %s\n        %s\n", e.URL, e.Doc)
		}
	}
}
