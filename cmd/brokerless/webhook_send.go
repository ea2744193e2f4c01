package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

var webhookSendCmd = command{
	name:     "webhook send",
	summary:  "send an event through a running webhook dispatcher",
	synopsis: "--type TYPE --data JSON|@FILE|@- [--idempotency-key KEY] [--server URL] [--token TOKEN]",
	about: `
Posts an event to 'brokerless webhook serve' (POST /v1/events). The
dispatcher stores it and delivers it to every enabled endpoint whose
event-type filter accepts TYPE, as the body {"type", "timestamp",
"data"}. --data is JSON text, @FILE for a file's content or @- for
standard input. With --idempotency-key, sending the same key again stores
nothing new and prints the event stored the first time.

Prints the event's id (the webhook-id of every delivery attempt).`,
	examples: `
# Send the contents of a file as an invoice.paid event.
export BROKERLESS_WEBHOOK_TOKEN=bwt_…
brokerless webhook send --type invoice.paid --data @invoice.json

# Safe to retry: the key makes a second send a no-op.
brokerless webhook send --type user.created --data '{"id": 42}' --idempotency-key user-42-created

# From a pipe, to another dispatcher.
jq -c .event order.json | brokerless webhook send --type order.placed --data @- --server http://10.0.0.5:8080`,
	run: runWebhookSend,
}

func runWebhookSend(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	typ := fs.String("type", "", "event type (required), e.g. invoice.paid")
	data := fs.String("data", "", "event data (required): JSON text, @FILE or @- for standard input")
	key := fs.String("idempotency-key", "", "idempotency key: an event with this key is stored once")
	c := webhookClientFlags(fs)
	if err := inv.parse(fs); err != nil {
		return err
	}
	switch {
	case *typ == "":
		return usagef("--type is required")
	case *data == "":
		return usagef("--data is required")
	}
	body, err := eventData(*data, inv.in)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	in := map[string]any{"type": *typ, "data": json.RawMessage(body)}
	if *key != "" {
		in["idempotency_key"] = *key
	}
	code, err := c.call(ctx, "POST", "/v1/events", in, &ev)
	if err != nil {
		return err
	}
	if code == 200 {
		fmt.Fprintf(inv.out, "%s (already stored with idempotency key %q)\n", ev.ID, *key)
		return nil
	}
	fmt.Fprintln(inv.out, ev.ID)
	return nil
}

// eventData reads --data (see readData) and checks it is JSON.
func eventData(arg string, stdin io.Reader) ([]byte, error) {
	b, err := readData(arg, stdin)
	if err != nil {
		return nil, usagef("--data %s: %v", shorten(arg, 40), err)
	}
	if !json.Valid(b) {
		return nil, usagef("--data %s: not valid JSON", shorten(arg, 40))
	}
	return b, nil
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
