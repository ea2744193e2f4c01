package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

var webhookEndpointsAddCmd = command{
	name:     "webhook endpoints add",
	summary:  "add an endpoint to a running webhook dispatcher",
	synopsis: "--url URL [--event-type TYPE]... [--rate-limit N] [--description TEXT] [--server URL] [--token TOKEN]",
	about: `
Creates an endpoint (POST /v1/endpoints) and prints its id and its
signing secret, which the receiver verifies deliveries with (for example
'brokerless webhook listen --secret whsec_…'). Without --event-type the
endpoint gets every event; "invoice.*" matches every type that starts
with "invoice.".`,
	examples: `
# Every invoice event to a receiver, at most 50 deliveries a second.
brokerless webhook endpoints add --url https://billing.example.com/hooks --event-type 'invoice.*' --rate-limit 50

# A local receiver (the dispatcher needs --allow-private 127.0.0.0/8).
brokerless webhook endpoints add --url http://127.0.0.1:9000/hooks`,
	run: runWebhookEndpointsAdd,
}

var webhookEndpointsListCmd = command{
	name:     "webhook endpoints list",
	summary:  "list the endpoints of a running webhook dispatcher",
	synopsis: "[--server URL] [--token TOKEN]",
	about: `
Lists the endpoints (GET /v1/endpoints): id, whether enabled, URL, event
types, and why an endpoint is disabled or since when it is failing.`,
	examples: `
brokerless webhook endpoints list --token "$BROKERLESS_WEBHOOK_TOKEN"`,
	run: runWebhookEndpointsList,
}

var webhookEndpointsRemoveCmd = command{
	name:     "webhook endpoints rm",
	summary:  "remove an endpoint (and its deliveries) from a running webhook dispatcher",
	synopsis: "ID [--server URL] [--token TOKEN]",
	about: `
Deletes an endpoint with its pending and past deliveries
(DELETE /v1/endpoints/ID). To stop deliveries but keep the history,
disable it instead: PATCH /v1/endpoints/ID {"enabled": false}.`,
	examples: `
brokerless webhook endpoints rm ep_01JDX8ZQ3M4V6W8Y0A2C4E6G8J`,
	run: runWebhookEndpointsRemove,
}

type endpointJSON struct {
	ID             string     `json:"id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	EventTypes     []string   `json:"event_types"`
	RateLimit      int        `json:"rate_limit"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabled_reason"`
	FailingSince   *time.Time `json:"failing_since"`
	Secret         string     `json:"secret"`
}

func runWebhookEndpointsAdd(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	u := fs.String("url", "", "URL deliveries are POSTed to (required)")
	types := fs.StringArray("event-type", nil, "event type to deliver (TYPE or PREFIX.*); repeatable; none: every type")
	rate := fs.Int("rate-limit", 0, "most deliveries a second (0: no limit)")
	desc := fs.String("description", "", "what the endpoint is for")
	c := webhookClientFlags(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	if *u == "" {
		return usagef("--url is required")
	}
	if p, err := url.Parse(*u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return usagef("--url %s: want an http:// or https:// URL", *u)
	}
	if *rate < 0 {
		return usagef("--rate-limit %d: must be >= 0", *rate)
	}
	if err := c.check(); err != nil {
		return err
	}
	in := map[string]any{"url": *u, "rate_limit": *rate, "description": *desc}
	if len(*types) > 0 {
		in["event_types"] = *types
	}
	var ep endpointJSON
	if _, err := c.call(ctx, "POST", "/v1/endpoints", in, &ep); err != nil {
		return err
	}
	fmt.Fprintf(inv.out, "id      %s\nsecret  %s\n", ep.ID, ep.Secret)
	return nil
}

func runWebhookEndpointsList(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	c := webhookClientFlags(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	var list struct{ Data []endpointJSON }
	if _, err := c.call(ctx, "GET", "/v1/endpoints", nil, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(inv.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENABLED\tURL\tEVENT TYPES\tSTATE")
	for _, e := range list.Data {
		types := "*"
		if len(e.EventTypes) > 0 {
			types = strings.Join(e.EventTypes, ",")
		}
		state := "ok"
		switch {
		case !e.Enabled:
			state = "disabled: " + e.DisabledReason
		case e.FailingSince != nil:
			state = "failing since " + e.FailingSince.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", e.ID, e.Enabled, e.URL, types, state)
	}
	return tw.Flush()
}

func runWebhookEndpointsRemove(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	c := webhookClientFlags(fs)
	args, err := inv.parseArgs(fs, "ID")
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if _, err := c.call(ctx, "DELETE", "/v1/endpoints/"+url.PathEscape(args[0]), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(inv.out, "removed %s\n", args[0])
	return nil
}
