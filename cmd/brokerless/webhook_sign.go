package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook"
)

var webhookSignCmd = command{
	name:     "webhook sign",
	summary:  "sign a body as Standard Webhooks does: print the headers, or POST it to a receiver",
	synopsis: "--secret whsec_… --data DATA|@FILE|@- [--id ID] [--url URL]",
	about: `
Signs one message with each --secret (whsec_… gives a v1 entry, whsk_… a
v1a entry) and prints the three headers, webhook-id, webhook-timestamp
and webhook-signature, one per line. With --url it POSTs the body with
them instead (Content-Type: application/json, no redirect followed) and
prints the answer's status line and the start of its body; an answer
other than 2xx exits 1. For checking a receiver by hand; deliveries with
retries are the dispatcher's job.`,
	examples: `
# The headers for curl.
brokerless webhook sign --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw --id msg_1 --data '{"type":"ping"}'

# POST a file's content, signed, to a receiver (brokerless webhook listen).
brokerless webhook sign --secret whsec_… --data @event.json --url http://127.0.0.1:9000/hooks

# The specification's test vector.
brokerless webhook sign --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw \
  --id msg_p5jXN8AQM9LWM0D4loKWxJek --timestamp 1614265330 --data '{"test": 2432232314}'`,
	run: runWebhookSign,
}

func runWebhookSign(ctx context.Context, inv *invocation) error {
	fs := inv.flags()
	secrets := fs.StringArray("secret", nil, "whsec_… secret or whsk_… key to sign with (required; repeat it for one entry per secret)")
	data := fs.String("data", "", "the body: text, @FILE for a file's content, @- for stdin (required)")
	id := fs.String("id", "", "webhook-id (default: msg_ and 24 random hex digits)")
	ts := fs.Int64("timestamp", 0, "webhook-timestamp, Unix seconds (default: now)")
	target := fs.String("url", "", "POST the signed body to this http:// or https:// URL")
	if err := inv.parse(fs); err != nil {
		return err
	}
	if len(*secrets) == 0 {
		return usagef("--secret is required")
	}
	var keys []webhook.Secret
	for i, s := range *secrets {
		k, err := webhook.ParseSecret(s)
		if err != nil {
			return usagef("--secret (#%d): %v", i+1, err)
		}
		keys = append(keys, k)
	}
	if !fs.Changed("data") {
		return usagef("--data is required")
	}
	if *ts < 0 {
		return usagef("--timestamp %d: must be >= 0", *ts)
	}
	var u *url.URL
	if *target != "" {
		var err error
		u, err = url.Parse(*target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url %s: must be an http:// or https:// URL", *target)
		}
	}
	body, err := readData(*data, inv.in)
	if err != nil {
		return usagef("--data %s: %v", *data, err)
	}
	if *id == "" {
		var b [12]byte
		rand.Read(b[:])
		*id = "msg_" + hex.EncodeToString(b[:])
	}
	at := time.Now()
	if fs.Changed("timestamp") {
		at = time.Unix(*ts, 0)
	}
	h := http.Header{}
	webhook.SetHeaders(h, *id, at, body, keys...)
	if u == nil {
		for _, k := range []string{webhook.HeaderID, webhook.HeaderTimestamp, webhook.HeaderSignature} {
			fmt.Fprintf(inv.out, "%s: %s\n", k, h.Get(k))
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	fmt.Fprintf(inv.out, "%s %s\n", resp.Proto, resp.Status)
	if s := strings.TrimSpace(string(answer)); s != "" {
		fmt.Fprintln(inv.out, oneLine(s, 512))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", u.Redacted(), resp.Status)
	}
	return nil
}

// readData is a --data value: the text itself, a file's content for
// @FILE, stdin for @-.
func readData(v string, stdin io.Reader) ([]byte, error) {
	switch {
	case v == "@-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(v, "@"):
		b, err := os.ReadFile(v[1:])
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return b, err
	default:
		return []byte(v), nil
	}
}
