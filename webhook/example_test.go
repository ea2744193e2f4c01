package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/brokerless/brokerless/webhook"
)

// Signing the specification's test vector.
func ExampleSecret_Sign() {
	secret, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	fmt.Println(secret.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// A receiver: verified deliveries reach the handler, the rest are
// answered 400, 401 or 413, and a webhook-id already handled is not
// handed on twice.
func ExampleNewReceiver() {
	secret, _ := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	rc, err := webhook.NewReceiver(webhook.ReceiverConfig{
		Verifier: &webhook.Verifier{Secrets: []webhook.Secret{secret}},
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := webhook.DeliveryFrom(r)
		fmt.Printf("delivered %s: %s\n", d.ID, d.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		panic(err)
	}
	send := func(id, body string, secrets ...webhook.Secret) {
		req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
		webhook.SetHeaders(req.Header, id, time.Now(), []byte(body), secrets...)
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		fmt.Println(strings.TrimSpace(fmt.Sprint(w.Code, " ", w.Body.String())))
	}
	other, _ := webhook.ParseSecret("whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQQ==")
	send("msg_1", `{"type":"invoice.paid"}`, secret)
	send("msg_1", `{"type":"invoice.paid"}`, secret)
	send("msg_2", `{"type":"invoice.paid"}`, other)
	// Output:
	// delivered msg_1: {"type":"invoice.paid"}
	// 204
	// 200 webhook: duplicate webhook-id, already handled
	// 401 webhook: no matching signature
}

// An endpoint URL is checked when it is stored, and every connection
// again after DNS resolution (Control, used by Client).
func ExampleAddressPolicy_CheckURL() {
	var p webhook.AddressPolicy
	for _, s := range []string{"https://hooks.example.com/in", "http://169.254.169.254/latest/meta-data/", "http://[::ffff:10.0.0.1]/", "http://2130706433/"} {
		u, _ := url.Parse(s)
		fmt.Println(p.CheckURL(u))
	}
	p.Allow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	u, _ := url.Parse("http://127.0.0.1:9000/")
	fmt.Println(p.CheckURL(u))
	// Output:
	// <nil>
	// webhook: address not allowed: 169.254.169.254 is link-local
	// webhook: address not allowed: ::ffff:10.0.0.1 is IPv4-mapped IPv6 of private (10.0.0.0/8)
	// webhook: bad endpoint URL: http://2130706433/: host "2130706433" looks like a non-standard IPv4 address
	// <nil>
}
