package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// webhookClient calls the API of a running 'webhook serve'.
type webhookClient struct {
	server, token string
	http          *http.Client
}

// webhookClientFlags adds --server and --token to fs.
func webhookClientFlags(fs *pflag.FlagSet) *webhookClient {
	c := &webhookClient{}
	server := os.Getenv("BROKERLESS_WEBHOOK_URL")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	fs.StringVar(&c.server, "server", server, "URL of 'brokerless webhook serve' ($BROKERLESS_WEBHOOK_URL if set)")
	fs.StringVar(&c.token, "token", "", "API bearer token (default $BROKERLESS_WEBHOOK_TOKEN)")
	return c
}

// check checks the flags once parsed.
func (c *webhookClient) check() error {
	if c.token == "" {
		c.token = os.Getenv("BROKERLESS_WEBHOOK_TOKEN")
	}
	if c.token == "" {
		return usagef("--token is required (or set BROKERLESS_WEBHOOK_TOKEN): 'webhook serve' prints the admin token at first start")
	}
	u, err := url.Parse(c.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--server %s: want http://HOST:PORT or https://HOST:PORT", c.server)
	}
	c.server = strings.TrimSuffix(c.server, "/")
	c.http = &http.Client{Timeout: 30 * time.Second}
	return nil
}

// call sends a request with a JSON body (nil: none) and decodes a JSON
// answer into out (nil: ignored). A 4xx or 5xx is an error with the
// API's message.
func (c *webhookClient) call(ctx context.Context, method, path string, body, out any, header ...string) (int, error) {
	defer c.http.CloseIdleConnections()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 400 {
		var e struct{ Error string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return resp.StatusCode, fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, e.Error)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
