package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brokerless/brokerless/transport/peertest"
)

// standardWebhooks returns node's path and the directory of the npm
// standardwebhooks package installed by .ci/install.d/70-webhook.sh, or
// skips the test (fails it under BROKERLESS_INTEROP=1) when either is
// missing.
func standardWebhooks(t *testing.T) (node, module string) {
	t.Helper()
	node = peertest.LookPath(t, "node", "apt-get install nodejs npm (.ci/install.d/10-node.sh)")
	module = filepath.Join(peertest.Dir(), "webhook", "node_modules", "standardwebhooks")
	peertest.File(t, "npm standardwebhooks", filepath.Join(module, "package.json"), peertest.Script("70-webhook.sh"))
	return node, module
}

// jsCase is one case for testdata/standardwebhooks.js.
type jsCase struct {
	Op      string            `json:"op"`
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers,omitempty"`
	ID      string            `json:"id,omitempty"`
	TS      int64             `json:"ts,omitempty"`
	Body    string            `json:"body_b64"`
}

type jsResult struct {
	OK        bool   `json:"ok"`
	Error     string `json:"error"`
	Signature string `json:"signature"`
}

func runJS(t *testing.T, cases []jsCase) []jsResult {
	t.Helper()
	node, module := standardWebhooks(t)
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "standardwebhooks.js"), module)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res []jsResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("node answered %q: %v", out, err)
	}
	return res
}

// interopBodies are bodies both sides must agree on (valid UTF-8: the
// JavaScript library hashes the body as a UTF-8 string).
var interopBodies = []string{
	`{"test": 2432232314}`,
	`{"type":"invoice.paid","data":{"id":"in_1","amount":1200}}`,
	`{"name":"Zoë","city":"Zürich","greeting":"こんにちは","emoji":"🎉🚀","rtl":"مرحبا"}`,
	"",
	"not json at all\nwith lines\ttabs and \"quotes\"",
	`{"big":"` + strings.Repeat("ab€", 20000) + `"}`,
}

// TestInteropNodeVerifiesOurs: npm standardwebhooks accepts headers and
// bodies signed by SetHeaders, with one secret, with two (rotation: each
// secret alone verifies), and with a v1a entry beside the v1 one (which
// it ignores); it rejects a tampered body, a wrong secret and a header
// holding only a v1a entry.
func TestInteropNodeVerifiesOurs(t *testing.T) {
	standardWebhooks(t)
	old, cur := newSecret(t, 11), newSecret(t, 12)
	ed, _, err := NewAsymmetricSecret(seeded(13))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	type want struct {
		name string
		ok   bool
	}
	var cases []jsCase
	var wants []want
	add := func(name string, ok bool, secret Secret, h http.Header, body string) {
		cases = append(cases, jsCase{Op: "verify", Secret: secret.String(), Body: base64.StdEncoding.EncodeToString([]byte(body)),
			Headers: map[string]string{HeaderID: h.Get(HeaderID), HeaderTimestamp: h.Get(HeaderTimestamp), HeaderSignature: h.Get(HeaderSignature)}})
		wants = append(wants, want{name, ok})
	}
	for i, body := range interopBodies {
		id := "msg_interop_" + string(rune('a'+i))
		add("one secret, body "+id, true, cur, headers(id, now, []byte(body), cur), body)
		rot := headers(id, now, []byte(body), old, cur)
		add("rotation, old secret, body "+id, true, old, rot, body)
		add("rotation, new secret, body "+id, true, cur, rot, body)
		add("v1a beside v1, body "+id, true, cur, headers(id, now, []byte(body), ed, cur), body)
		add("tampered, body "+id, false, cur, headers(id, now, []byte(body), cur), body+" ")
		add("wrong secret, body "+id, false, newSecret(t, 14), headers(id, now, []byte(body), cur), body)
		add("v1a only, body "+id, false, cur, headers(id, now, []byte(body), ed), body)
	}
	old10 := now.Add(-10 * time.Minute)
	add("ten minutes old", false, cur, headers("msg_old", old10, []byte("{}"), cur), "{}")
	// The specification's vector, within the library's tolerance.
	vec := mustSecret(t, vectorSecret)
	add("spec secret", true, vec, headers(vectorID, now, []byte(vectorBody), vec), vectorBody)
	// Not valid UTF-8: the library hashes U+FFFD instead of the bytes, so
	// no signature of the raw bytes can match (why bodies must be UTF-8).
	add("invalid UTF-8", false, cur, headers("msg_latin1", now, []byte("caf\xe9"), cur), "caf\xe9")

	res := runJS(t, cases)
	for i, r := range res {
		if r.OK != wants[i].ok {
			t.Errorf("%s: npm standardwebhooks ok=%v (%s), want %v", wants[i].name, r.OK, r.Error, wants[i].ok)
		}
	}
}

// TestInteropWeVerifyNode: our Verifier accepts what npm
// standardwebhooks signs, and only under the right secret.
func TestInteropWeVerifyNode(t *testing.T) {
	standardWebhooks(t)
	cur, other := newSecret(t, 21), newSecret(t, 22)
	vec := mustSecret(t, vectorSecret)
	ts := time.Unix(1_700_000_000, 0)
	var cases []jsCase
	for i, body := range interopBodies {
		cases = append(cases, jsCase{Op: "sign", Secret: cur.String(), ID: "msg_js_" + string(rune('a'+i)), TS: ts.Unix(), Body: base64.StdEncoding.EncodeToString([]byte(body))})
	}
	cases = append(cases, jsCase{Op: "sign", Secret: vectorSecret, ID: vectorID, TS: vectorTS, Body: base64.StdEncoding.EncodeToString([]byte(vectorBody))})
	res := runJS(t, cases)
	if got := res[len(res)-1].Signature; got != vectorSig {
		t.Fatalf("npm signs the spec vector as %q, want %q", got, vectorSig)
	}
	for i, c := range cases {
		body, _ := base64.StdEncoding.DecodeString(c.Body)
		secret, at := cur, ts
		if c.ID == vectorID {
			secret, at = vec, time.Unix(vectorTS, 0)
		}
		if got := secret.Sign(c.ID, at, body); got != res[i].Signature {
			t.Errorf("%s: npm signed %q, we sign %q", c.ID, res[i].Signature, got)
		}
		v := &Verifier{Secrets: []Secret{other, secret}, Now: func() time.Time { return at.Add(time.Minute) }}
		if err := v.VerifyValues(c.ID, Timestamp(at), res[i].Signature, body); err != nil {
			t.Errorf("%s: Verify(npm signature) = %v", c.ID, err)
		}
		v.Secrets = []Secret{other}
		if err := v.VerifyValues(c.ID, Timestamp(at), res[i].Signature, body); err == nil {
			t.Errorf("%s: npm signature verified under another secret", c.ID)
		}
	}
}
